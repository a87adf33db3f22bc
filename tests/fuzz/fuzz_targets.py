"""What the fuzzers check: one function per target, bytes in, AssertionError on a broken promise.

Shared by the coverage-guided atheris driver (``fuzz_atheris.py``, run long by
``run_fuzz.sh``) and the hypothesis tests (``test_fuzz_long.py``), so both hold the code to
the same promises:

- ``server_args``: the dump parser never raises anything but ``DumpError``, returns
  string keys, and a dump cut off anywhere yields only fields the whole dump has, with
  the same values (the promise "a dump cut off mid-line still yields the fields before the
  cut").
- ``assembler``: lines of any content through ``Assembler`` never raise; an incident's
  lines are the input's lines, in order, and no line is in two incidents.
- ``traceback builder``: ``TracebackBuilder.offer`` never raises and never claims more
  lines than it was offered.
"""

from __future__ import annotations

from pathlib import Path

from sglang_doctor.incidents import server_args
from sglang_doctor.incidents import tracebacks
from sglang_doctor.incidents.assemble import Assembler
from sglang_doctor.read.reader import LineSplitter
from sglang_doctor.read.records import strip_outer

ROOT = Path(__file__).resolve().parents[2]


def seed_dumps() -> list[bytes]:
    """Every ``server_args=`` dump in the fixtures: real shapes to start mutating from.  A
    traceback's source line (indented under its ``File ...`` frame, such as 0.4.x's
    ``_launch_subprocesses(server_args=server_args)``) is code, not a dump."""
    out = []
    for path in sorted((ROOT / "fixtures").rglob("*.log")):
        for raw in path.read_bytes().split(b"\n"):
            # behind a journald / compose prefix the indentation that marks code is after it
            line = strip_outer(raw.decode("utf-8", "replace")).encode()
            i = line.find(b"server_args=")
            if i >= 0 and not line[:1].isspace():
                out.append(line[i + len(b"server_args="):])
    return out


def seed_logs() -> list[bytes]:
    return [p.read_bytes() for p in sorted((ROOT / "fixtures").rglob("*.log"))]


def check_server_args(data: bytes, cut: int | None = None) -> None:
    text = data.decode("utf-8", "replace")
    try:
        whole, form = server_args.parse_dump(text)
    except server_args.DumpError:
        return
    assert form in ("dataclass", "dict")
    assert all(isinstance(k, str) for k in whole), whole
    if cut is None or form != "dataclass":
        # A dict dump that literal_eval could read whole may differ from the field
        # splitter's view of a prefix (e.g. duplicate keys); only the dataclass form
        # promises the prefix property.
        return
    cut %= len(text) + 1
    try:
        part, _ = server_args.parse_dump(text[:cut])
    except server_args.DumpError:
        return
    for key, value in part.items():
        assert key in whole, (key, text[:cut])
        if text.count(key + "=") > 1:
            continue  # a repeated field: the whole dump keeps the last value (real dumps never repeat)
        assert _same(whole[key], value), (key, whole[key], value)


def _same(a, b) -> bool:
    return a == b or (a != a and b != b)  # NaN equals itself here


def check_assembler(data: bytes) -> None:
    splitter = LineSplitter()
    lines = splitter.feed(data) + splitter.finish()
    texts = {line.number: line.text for line in lines}
    asm = Assembler()
    events = []
    for line in lines:
        events += asm.feed(line)
    events += asm.flush()
    seen: set[int] = set()
    for ev in events:
        if ev.kind != "incident":
            continue
        inc = ev.incident
        numbers = [line.number for line in inc.lines]
        # in input order; one input line may give several (a paste that lost its newlines is
        # split back into its lines, records.split_joined)
        assert numbers == sorted(numbers), numbers
        assert not seen & set(numbers), "a line is in two incidents"
        seen |= set(numbers)
        for line in inc.lines:
            # the line as SGLang wrote it: the input line, less any container / launcher
            # prefix (docker compose, kubectl, ray, ...: records.outer_prefix_end)
            assert line.text in texts[line.number], (line.text, texts[line.number])
        assert inc.first_line == numbers[0] and inc.last_line == numbers[-1]
        inc.traceback  # the text view must build
        for frame in inc.frames:
            assert isinstance(frame.file, str) and isinstance(frame.function, str)


def check_builder(data: bytes) -> None:
    texts = data.decode("utf-8", "replace").split("\n")
    if not texts:
        return
    builder = tracebacks.TracebackBuilder(texts[0], headless=not texts[0].startswith(tracebacks.HEADER))
    offered = 1
    owned = 1
    for text in texts[1:]:
        offered += 1
        taken = builder.offer(text)
        assert 0 <= taken
        if taken:
            owned += taken
        assert owned + builder.held <= offered, (owned, builder.held, offered)
    builder.finish()
    builder.frames, builder.chain
