"""Matching a pattern against text a paste cut at its start: the pattern run backwards
(``regex``'s REVERSE flag) with partial matching, so that a line which begins inside what
the pattern matches (``of memory. Tried to allocate 2.00 GiB``, ``TP0] ...``) is seen as the
end of such a match.  Shared by the assembler (a paste's first line: incidents/assemble.py)
and the rule engine (a rule's message pattern: diagnose/rules_engine.py).
"""

from __future__ import annotations

import re
from typing import Any

_REVERSED: dict[str, Any] = {}


def greedy(pattern: str) -> str:
    """``pattern`` with its lazy quantifiers (``+?``, ``*?``, ``??``, ``{m,n}?``) made greedy:
    the same texts match, and ``regex``'s reverse partial matching takes a lazy quantifier
    that reaches the text's start for a partial match (``=([0-9.]+?)`` backwards over
    ``abc def 0.85`` "matches" it all)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":  # "[]...]": the first "]" is a member
                out.append("[]")
                i += 2
                continue
        elif c == "?" and out and out[-1] in ("+", "*", "?", "}") and not (len(out) > 1 and out[-2] == "("):
            i += 1  # the lazy mark after a quantifier
            continue
        out.append(c)
        i += 1
    return "".join(out)


def reversed_rx(rx):
    """``rx`` compiled to match backwards (``regex.REVERSE``; its lazy quantifiers greedy, see
    greedy), once per pattern; None for a pattern object that cannot (the stdlib's re)."""
    source = rx.pattern
    got = _REVERSED.get(source)
    if got is None:
        import regex

        try:
            got = _REVERSED[source] = regex.compile(greedy(source), rx.flags | regex.REVERSE)
        except (regex.error, TypeError, ValueError):
            got = _REVERSED[source] = False
    return got or None


def held_words(pattern: str, text: str) -> int:
    """How many characters of the words ``pattern`` spells out ``text`` holds."""
    return sum(len(w) for w in literal_words(pattern) if w in text)


_WORDS: dict[str, frozenset[str]] = {}
_REGEX_SYNTAX = re.compile(r"\(\?P<\w+>|\(\?[:=!<]*|\\[dDsSwWbBAZ]|\[(?:\\.|[^\]])*\]|\{\d*,?\d*\}")


def literal_words(pattern: str) -> frozenset[str]:
    """The words of three letters or more a regex spells out literally."""
    words = _WORDS.get(pattern)
    if words is None:
        text = re.sub(r"\\(.)", r"\1", _REGEX_SYNTAX.sub(" ", pattern))
        words = _WORDS[pattern] = frozenset(re.findall(r"[A-Za-z_]{3,}", text))
    return words


def tail_match(rx, text: str, min_chars: int, *, timeout: float | None = None):
    """A match of ``rx`` that the start of ``text`` cut short, or None: the pattern run
    backwards, partial where the text starts, over ``min_chars`` characters or more, of which
    two thirds are the words the pattern spells out and at least a quarter of the match (not
    mostly what a wildcard took: ``\\((?P<cli>[^)]*)\\)`` run back over a whole server_args
    dump; a partial match sets no group, so the words are weighed instead).  May raise what
    ``rx.search`` raises (``TimeoutError`` after ``timeout`` seconds)."""
    back = reversed_rx(rx)
    if back is None:
        return None
    m = back.search(text, partial=True, timeout=timeout)
    if m is None or not m.partial or m.start() != 0 or len(m.group(0)) < min_chars:
        return None
    held = held_words(rx.pattern, m.group(0))
    return m if held >= min_chars * 2 // 3 and held * 4 >= len(m.group(0)) else None



LITERAL_TAIL_MIN = 16  # characters of a literal a cut first line must start with


def starts_with_literal_tail(text: str, literal: str, min_chars: int = LITERAL_TAIL_MIN) -> bool:
    """Whether ``text`` starts with the end of ``literal`` (``le creating shared memory
    segment`` of ``Error while creating shared memory segment``): the paste began inside
    it; ``min_chars`` or more of it left, the whole literal is a plain substring test."""
    head = text[:min_chars]
    if len(head) < min_chars:
        return False
    k = literal.find(head, 1)  # where the line's first characters sit in the literal
    while 0 < k <= len(literal) - min_chars:
        if text.startswith(literal[k:]):
            return True
        k = literal.find(head, k + 1)
    return False
