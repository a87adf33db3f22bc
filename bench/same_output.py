"""Is the reading path's output unchanged?  ``python bench/same_output.py record|compare DIR``.

A speed change to the reader or the incident stage must not change a single event.  This
runs what ``explain --format json`` runs (the shipped rule pack, ``whole_log``, capacity
events) in-process over every file under ``fixtures/`` and ``corpus/dev/`` (and any extra
files given with ``--also``), and writes each file's JSON event lines into DIR (``record``)
or compares them with what DIR holds (``compare``, exit 1 on any difference, with a diff of
the first ones).  The wall-clock ``seconds`` of a ``ready`` event is the only field left
out.

Each file is fed four ways, which must all give the same events: in the CLI's 8 MiB
blocks, in 4,096-byte pieces (what a pipe delivers), in pieces of 1 to 300 bytes (seeded),
so block boundaries anywhere in a line are covered, and read and searched ahead in a
thread as ``explain`` does (on 4 KiB blocks, searched ahead whatever their size).  Record with the code
before a change, compare with the code after it.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sglang_doctor import pipeline, report  # noqa: E402
from sglang_doctor.pipeline import InputError, StreamPipeline, open_log  # noqa: E402
from sglang_doctor.read import scanner  # noqa: E402

SOURCES = (ROOT / "fixtures", ROOT / "corpus" / "dev")


def files(also: list[Path]) -> list[Path]:
    out = [p for src in SOURCES for p in sorted(src.rglob("*")) if p.is_file()]
    return out + also


def pieces(blocks, how: str, rng: random.Random):
    if how in ("blocks", "ahead"):
        yield from blocks
        return
    data = b"".join(blocks)
    pos = 0
    while pos < len(data):
        n = 4096 if how == "4k" else rng.randint(1, 300)
        yield data[pos:pos + n]
        pos += n


def events(path: Path, ruleset, how: str) -> list[str]:
    pipe = StreamPipeline(ruleset, whole_log=True, capacity=True)
    out: list[str] = []

    def take(evs) -> None:
        for ev in evs:
            ev = dict(ev)
            if ev.get("event") == "ready":
                ev.pop("seconds", None)
            out.append(report.to_json_line(ev))

    try:
        blocks = open_log(path)
        if how == "ahead":  # as explain reads: searched ahead in a thread, on blocks of any size
            blocks = pipe.read_ahead(blocks)
        elif how != "blocks":
            blocks = [b"".join(blocks)]
        for piece in pieces(blocks, how, random.Random(str(path))):
            take(pipe.feed(piece))
        take(pipe.finish())
    except InputError as exc:
        out.append(f"InputError: {exc}")
    out.append(report.to_json_line(pipe.summary()))
    out += [f"warning: {w}" for w in pipe.warnings]
    return out


@contextlib.contextmanager
def patched(module, name: str, value):
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "compare"))
    ap.add_argument("dir", type=Path)
    ap.add_argument("--also", type=Path, action="append", default=[], help="another log to include (blocks only)")
    args = ap.parse_args()
    from sglang_doctor.cli.app import load_ruleset

    ruleset = load_ruleset(())
    args.dir.mkdir(parents=True, exist_ok=True)
    differ = 0
    checked = 0
    for path in files(args.also):
        ways = ("blocks", "ahead") if path in args.also else ("blocks", "4k", "tiny", "ahead")
        got = {}
        for how in ways:
            if how == "ahead" and path not in args.also:
                # a small file is one small block: search ahead whatever the size, in 4 KiB blocks
                with patched(scanner, "SMALL_BLOCK", 0), patched(pipeline, "BLOCK", 4096):
                    got[how] = events(path, ruleset, how)
            else:
                got[how] = events(path, ruleset, how)
        # named and headed by the path inside the checkout: a recording made by another
        # checkout (``git archive COMMIT | tar -x -C DIR``, the code before) compares with this one
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        name = hashlib.sha1(str(shown).encode()).hexdigest()[:16]
        lines = got["blocks"]
        for how in ways[1:]:
            if got[how] != lines:
                differ += 1
                print(f"DIFFERS ({how} vs blocks): {path}")
        rec = args.dir / f"{name}.jsonl"
        text = f"# {shown}\n" + "\n".join(lines) + "\n"
        checked += 1
        if args.mode == "record":
            rec.write_text(text, encoding="utf-8")
            continue
        before = rec.read_text(encoding="utf-8") if rec.exists() else ""
        if before != text:
            differ += 1
            print(f"DIFFERS (vs recorded): {path}")
            sys.stdout.writelines(list(difflib.unified_diff(before.splitlines(True), text.splitlines(True),
                                                            "recorded", "now", n=1))[:40])
    print(f"{checked} files, {differ} differences" + (" (recorded)" if args.mode == "record" else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
