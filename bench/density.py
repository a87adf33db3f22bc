"""NUL- and ESC-dense lines against a plain log of the same size: ``python bench/density.py``.

Issue 11 item 9: a log whose lines are dense with NUL bytes (what copytruncate leaves a
writer that is not in append mode) or ESC bytes, each line just under the reader's 4 MB
line cap, once cost a match per byte (100 MB -> 1.48 GB RSS, 67 s).  This writes 100 MB
(``--size``) of each kind into ./bench-data, and a 64 KB gzip that expands to 64 MB of NUL
lines, runs ``sglang-doctor explain --format json`` on each, interleaved ``--runs`` times, and
prints the median wall time, the ratio to the plain log of the same size measured in the
same run, and the peak RSS (``/usr/bin/time``).  Targets: peak RSS < 100 MB, ratio <= 2.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from run import DATA, doctor_command, timed  # noqa: E402

LINE = (4 << 20) - 4096  # just under reader.MAX_LINE_BYTES


def dense_line(kind: str, n: int) -> bytes:
    head = b"[2026-05-10 10:00:00 TP0] "
    unit = {
        "nul": b"\x00" * 63 + b"x",
        "esc": b"\x1b[31mab\x1b[0m",          # colour codes, back to back
        "escrun": b"\x1b" * 64,                # bare ESC bytes
        "osc": b"\x1b]0;title\x07",            # the terminal-title escape of issue 11 item 12
    }[kind]
    body = unit * ((LINE - len(head)) // len(unit))
    return head + body + b" %d\n" % n


def write_dense(path: Path, kind: str, size: int) -> None:
    if path.exists() and path.stat().st_size >= size:
        return
    with open(path, "wb") as fh:
        written = n = 0
        while written < size:
            line = dense_line(kind, n)
            fh.write(line)
            written += len(line)
            n += 1


def write_gzip_bomb(path: Path, size: int = 64 << 20) -> None:
    if path.exists():
        return
    with gzip.open(path, "wb", compresslevel=9) as fh:
        line = b"\x00" * (LINE - 1) + b"\n"
        for _ in range(size // len(line)):
            fh.write(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--kinds", default="nul,esc,escrun,osc")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    size = generate.parse_size(args.size)
    DATA.mkdir(exist_ok=True)
    plain = DATA / f"plain-{args.size.lower()}.log"
    if not plain.exists():
        generate.generate(plain, size, seed=1, incidents=20)
    files = {"plain": plain}
    for kind in args.kinds.split(","):
        files[kind] = DATA / f"dense-{kind}-{args.size.lower()}.log"
        write_dense(files[kind], kind, size)
    files["gzip-bomb"] = DATA / "nul-64m.log.gz"
    write_gzip_bomb(files["gzip-bomb"])
    doctor = doctor_command()
    runs: dict[str, list[dict]] = {k: [] for k in files}
    for _ in range(args.runs):  # interleaved: every file sees the same noise
        for name, path in files.items():
            runs[name].append(timed(doctor + ["explain", "--format", "json", str(path)], subprocess.DEVNULL))
    base = statistics.median(r["wall"] for r in runs["plain"])
    out = {}
    for name, path in files.items():
        wall = statistics.median(r["wall"] for r in runs[name])
        rss = max(r["rss_mb"] for r in runs[name])
        out[name] = {"bytes": path.stat().st_size, "wall": wall, "ratio_to_plain": wall / base, "rss_mb": rss}
        print(f"{name:10s} {path.stat().st_size / 1e6:8.1f} MB on disk  wall {wall:6.2f} s  "
              f"x{wall / base:4.2f} of plain  peak RSS {rss:5.0f} MB", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
