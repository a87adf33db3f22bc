"""Bytes in, lines out: every byte accounted for, no line ever truncated silently.

The reader splits on ``\\n`` (a ``\\r\\n`` ending loses its ``\\r``), decodes UTF-8 with
replacement characters for invalid bytes, strips ANSI escape sequences and NUL bytes from
the text used for matching, and reduces a ``\\r`` progress-bar rewrite (tqdm) to the last
thing it drew.  The raw bytes can be kept alongside.

A line longer than ``MAX_LINE_BYTES`` (a pathological 50 MB line with no newline) keeps its
first ``HEAD_BYTES`` and last ``TAIL_BYTES`` with an explicit marker in between; memory stays
bounded whatever the input.  SGLang's own longest line, the ``server_args`` dump, is
10-30 KB and is always kept whole.

A line with more than ``DENSE_ESCAPES`` ESC bytes is not a coloured log line but garbage
(or an attack on the reader: removing escape sequences costs a regex match each, about
0.3 s per 4 MB line of them); its ESC bytes are deleted instead, which keeps the text
terminal-safe, leaves the rest of each sequence as visible characters, and costs one pass.
NUL bytes (a line without ESC) are deleted from the bytes before decoding, in one pass.
"""

from __future__ import annotations

import re

from sglang_doctor.model import Line

MAX_LINE_BYTES = 4 << 20
DENSE_ESCAPES = 4096
HEAD_BYTES = 2 << 20
TAIL_BYTES = 1 << 20

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def clean_text(raw: bytes) -> str:
    """The matching text of one line's raw bytes (no terminator)."""
    has_esc = b"\x1b" in raw
    if has_esc and raw.count(b"\x1b") > DENSE_ESCAPES:
        raw = raw.translate(None, b"\x1b\x00")  # garbage, not colour: one pass (module doc)
        has_esc = False
    elif not has_esc and b"\x00" in raw:
        raw = raw.translate(None, b"\x00")  # a NUL-filled gap costs one pass, not one step per NUL
    text = raw.decode("utf-8", errors="replace")
    if has_esc:
        text = _ANSI.sub("", text)
        if "\x00" in text:
            text = text.replace("\x00", "")
    if "\r" in text:
        text = _last_rewrite(text)
    return text


def _last_rewrite(text: str) -> str:
    """What a terminal shows after ``\\r`` rewrites: the last non-empty segment."""
    parts = text.split("\r")
    for part in reversed(parts):
        if part.strip():
            return part
    return ""


def cut_marker(dropped: int) -> bytes:
    return b" <<< sglang-doctor: %d bytes of this line not kept >>> " % dropped


class LineSplitter:
    """Incremental splitter: ``feed`` chunks of any size, get complete lines back.

    ``finish`` returns the last line when the input did not end with a newline.
    Feeding the same bytes in one chunk or byte by byte gives the same lines.
    """

    def __init__(self, *, keep_raw: bool = False, first_line: int = 1):
        self.keep_raw = keep_raw
        self.next_number = first_line
        self._parts: list[bytes] = []  # pieces of the current unfinished line
        self._pending = 0  # bytes in _parts
        self._tail = bytearray()  # tail kept once a line exceeded MAX_LINE_BYTES
        self._dropped = 0  # bytes dropped from the middle of the current line

    @property
    def has_partial(self) -> bool:
        return bool(self._pending or self._dropped)

    def feed(self, data: bytes) -> list[Line]:
        out: list[Line] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._add_partial(data[start:] if start else data)
                break
            if self._pending or self._dropped or nl - start > MAX_LINE_BYTES:
                self._add_partial(data[start:nl])
                out.append(self._take())
            else:
                out.append(self._make(data[start:nl], 0))
            start = nl + 1
        return out

    def finish(self) -> list[Line]:
        if self._pending or self._dropped:
            return [self._take()]
        return []

    # -- internals -------------------------------------------------------------------

    def _add_partial(self, piece: bytes) -> None:
        if not piece:
            return
        if self._dropped == 0 and self._pending + len(piece) <= MAX_LINE_BYTES:
            self._parts.append(piece)
            self._pending += len(piece)
            return
        # Over the limit: keep HEAD_BYTES in _parts, a rolling TAIL_BYTES in _tail.
        if self._dropped == 0 and not self._tail:
            # the piece that crosses the limit may hold the head itself (a first feed of 8 MB)
            head = b"".join(self._parts) + piece
            self._parts = [head[:HEAD_BYTES]]
            self._tail = bytearray(head[HEAD_BYTES:])
            self._pending = len(self._parts[0])
        else:
            self._tail += piece
        excess = len(self._tail) - TAIL_BYTES
        if excess > 0:
            del self._tail[:excess]
            self._dropped += excess

    def _take(self) -> Line:
        raw = b"".join(self._parts)
        dropped = self._dropped
        if self._tail or dropped:
            raw = raw + cut_marker(dropped) + bytes(self._tail)
        self._parts = []
        self._pending = 0
        self._tail = bytearray()
        self._dropped = 0
        return self._make(raw, dropped)

    def _make(self, raw: bytes, dropped: int) -> Line:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        line = Line(self.next_number, clean_text(raw), raw if self.keep_raw else None, dropped)
        self.next_number += 1
        return line
