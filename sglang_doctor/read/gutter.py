"""A gutter a paste put before every line: line numbers or a list marker.

People paste logs through tools that add something of their own before each line:

- line numbers, counting up by one from line to line: a gist's, a pastebin's or an editor's
  view copied with its numbers (``  12 | text``, ``12| text``), ``cat -n`` (``    12\\ttext``),
  ``nl`` / ``grep -n``-style ``12: text``, a numbered column separated by spaces (``12  text``);
- a list marker on every line: a chat tool or a forum that turned the pasted lines into a
  bullet list (``- ``, ``* ``, ``• ``), or a terminal copy where every line followed ``$ ``.

Neither is SGLang's: its lines never count up from line to line, and no output of its has
the same marker before nearly every line.  The gutter is judged once on the text's first
bytes (as the fold width is, records.wrap_width) and taken off every line that has it before
the assembler reads the line, so a traceback or an SGLang record behind it is read as written.
Only a gutter on nearly every line counts (GUTTER_SHARE); a few numbered or bulleted lines
(gcc's ``   12 | #include ...`` source excerpt, a message's own list) are the text's own.
"""

from __future__ import annotations

import re
from collections import Counter

from sglang_doctor.read.reader import clean_text

GUTTER_MIN_LINES = 3  # fewer non-blank lines (a one-line paste): only a gutter no line starts with by itself
GUTTER_SHARE = 0.9  # of the non-blank lines that must carry it (numbers: that count up by one)
GUTTER_LINES = 4000  # lines of the sample looked at

# a line number, then what separates it from the line: " | ", "| ", ": ", a tab, or spaces
# (the spaces' width is the narrowest seen: more is the line's own indentation)
_NUMBERED = re.compile(r"^ *(\d{1,7})( ?\| ?|: |\t| +|$)")
_MARKERS = ("- ", "* ", "• ", "$ ")


def gutter(data: bytes) -> re.Pattern | None:
    """The pattern of the gutter before the lines of ``data`` (whole lines only), or None."""
    lines = [clean_text(raw.rstrip(b"\r")) for raw in data.split(b"\n")[:-1][:GUTTER_LINES]]
    filled = [text for text in lines if text.strip()]
    if not filled:
        return None
    short = len(filled) < GUTTER_MIN_LINES
    return _numbers(filled, short) or _marker(filled, short)


def _numbers(lines: list[str], short: bool) -> re.Pattern | None:
    """Line numbers that count up by one on nearly every line (blank lines numbered too); on a
    short text, only numbers a " | ", ": " or a tab separates (not spaces, which a line's own
    number and text may have between them)."""
    matches = [_NUMBERED.match(text) for text in lines]
    if sum(m is not None for m in matches) < GUTTER_SHARE * len(lines):
        return None
    counting = sum(1 for a, b in zip(matches, matches[1:])
                   if a is not None and b is not None and int(b.group(1)) == int(a.group(1)) + 1)
    if counting < GUTTER_SHARE * (len(lines) - 1):
        return None
    seps = Counter(m.group(2) for m in matches if m is not None and m.group(2))
    if not seps:
        return None
    if all(not sep.strip(" ") for sep in seps):  # spaces only: the narrowest is the separator
        sep = min(seps, key=len)
    else:
        sep = seps.most_common(1)[0][0]
    if short and not sep.strip(" "):
        return None
    return re.compile(r" *\d{1,7}(?:" + re.escape(sep) + r"|\s*$)")


def _marker(lines: list[str], short: bool) -> re.Pattern | None:
    """The same list marker (or prompt) before nearly every line; on a short text not ``$ ``
    (one line after a prompt is a command, not a log's lines)."""
    for mark in _MARKERS[:-1] if short else _MARKERS:
        if sum(text.startswith(mark) for text in lines) >= GUTTER_SHARE * len(lines):
            return re.compile(re.escape(mark))
    return None


def strip(pattern: re.Pattern, text: str) -> str:
    """``text`` without the gutter, when it carries it."""
    m = pattern.match(text)
    return text[m.end():] if m is not None else text
