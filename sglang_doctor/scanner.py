"""The fast reader: bytes in, only the lines that can matter out.

A week-long log is gigabytes of ``Decode batch`` lines.  Instead of splitting and
decoding every line, the scanner searches whole blocks for a few trigger literals (the
ones every milestone, signal and traceback start needs) and only turns the lines at a hit,
and every line while the assembler is in the middle of something, into ``Line`` objects.
Skipped lines are counted, so line numbers stay exact.

Why this is safe: when the assembler is not ``active`` a line without any trigger literal
changes nothing but the rank of the current record, so the scanner replays the last
record-start line before a hit that is not itself a record start.  ``reader.LineSplitter``
feeding every line is the reference; the property tests hold the two to the same output.
ANSI escapes and NUL bytes could hide a trigger from a byte search, so lines holding
them are always looked at.
"""

from __future__ import annotations

from typing import Callable, Iterable

from sglang_doctor import records
from sglang_doctor.model import Line
from sglang_doctor.reader import MAX_LINE_BYTES, LineSplitter, clean_text, cut_marker, HEAD_BYTES, TAIL_BYTES

ALWAYS = (b"\x1b", b"\x00")


def make_line(number: int, raw: bytes, keep_raw: bool) -> Line:
    """The same Line the LineSplitter makes for these bytes (terminator removed)."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    dropped = 0
    if len(raw) > MAX_LINE_BYTES:
        dropped = len(raw) - HEAD_BYTES - TAIL_BYTES
        raw = raw[:HEAD_BYTES] + cut_marker(dropped) + raw[-TAIL_BYTES:]
    return Line(number, clean_text(raw), raw if keep_raw else None, dropped)


class Scanner:
    def __init__(
        self,
        sink: Callable[[Line], None],
        is_active: Callable[[], bool],
        literals: Iterable[str],
        *,
        keep_raw: bool = False,
        fast: bool = True,
    ):
        self._sink = sink
        self._is_active = is_active
        self._lits = tuple(sorted({lit.encode() for lit in literals if lit} | set(ALWAYS)))
        self.keep_raw = keep_raw
        self.fast = fast
        self.number = 1  # number of the next line
        self._carry = b""
        self._long: LineSplitter | None = None  # a line longer than MAX_LINE_BYTES in progress
        self._record: tuple[int, bytes] | None = None  # last skipped record-start line

    @property
    def lines_seen(self) -> int:
        return self.number - 1

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if self._long is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._long.feed(data)
                return
            for line in self._long.feed(data[: nl + 1]):
                self._emit_line(line)
            self._long = None
            data = data[nl + 1:]
            if not data:
                return
        if self._carry:
            data = self._carry + data
            self._carry = b""
        last = data.rfind(b"\n")
        if last < 0:
            self._hold(data)
            return
        self._scan(data, last + 1)
        if last + 1 < len(data):
            self._hold(data[last + 1:])

    def finish(self) -> None:
        if self._long is not None:
            for line in self._long.finish():
                self._emit_line(line)
            self._long = None
        if self._carry:
            carry, self._carry = self._carry, b""
            self._record = None
            self._emit(carry)

    # -- internals ---------------------------------------------------------------------

    def _hold(self, partial: bytes) -> None:
        if len(partial) > MAX_LINE_BYTES:
            self._long = LineSplitter(keep_raw=self.keep_raw, first_line=self.number)
            self._long.feed(partial)
        else:
            self._carry = partial

    def _emit_line(self, line: Line) -> None:
        self.number = line.number + 1
        self._sink(line)

    def _emit(self, raw: bytes) -> None:
        line = make_line(self.number, raw, self.keep_raw)
        self.number += 1
        self._sink(line)

    def _scan(self, buf: bytes, end: int) -> None:
        pos = 0
        if not self.fast:
            while pos < end:
                nl = buf.find(b"\n", pos, end)
                self._emit(buf[pos:nl])
                pos = nl + 1
            return
        lits = self._lits
        nexts = [buf.find(lit, 0, end) for lit in lits]
        find = buf.find
        while pos < end:
            if self._is_active():
                nl = find(b"\n", pos, end)
                self._record = None
                self._emit(buf[pos:nl])
                pos = nl + 1
                continue
            hit = -1
            for i, p in enumerate(nexts):
                if 0 <= p < pos:
                    p = nexts[i] = find(lits[i], pos, end)
                if p >= 0 and (hit < 0 or p < hit):
                    hit = p
            if hit < 0:
                self._skip(buf, pos, end)
                return
            start = buf.rfind(b"\n", pos, hit) + 1
            if start < pos:
                start = pos
            if start > pos:
                self._skip(buf, pos, start)
            nl = find(b"\n", start, end)
            raw = buf[start:nl]
            if self._record is not None and not _is_record_start(raw):
                number, rec = self._record
                self._sink(make_line(number, rec, self.keep_raw))
            self._record = None
            self._emit(raw)
            pos = nl + 1

    def _skip(self, buf: bytes, lo: int, hi: int) -> None:
        """Count the lines in buf[lo:hi] (whole lines) and remember the last record start."""
        count = buf.count(b"\n", lo, hi)
        found = _last_record_start(buf, lo, hi)
        if found is not None:
            s, e = found
            self._record = (self.number + buf.count(b"\n", lo, s), buf[s:e])
        self.number += count


def _is_record_start(raw: bytes) -> bool:
    if not raw.startswith(b"["):
        return False
    return records.is_record_start(raw[:64].decode("utf-8", "replace"))


def _last_record_start(buf: bytes, lo: int, hi: int) -> tuple[int, int] | None:
    """(start, end) of the last line in buf[lo:hi] that starts a record, if any."""
    end = hi - 1  # the newline of the last line
    search_hi = end
    for _ in range(64):
        i = buf.rfind(b"\n[", lo, search_hi)
        s = i + 1 if i >= 0 else lo
        if i < 0 and not buf.startswith(b"[", lo):
            return None
        e = buf.find(b"\n", s, hi)
        if _is_record_start(buf[s:e]):
            return s, e
        if i < 0:
            return None
        search_hi = i
    return None
