"""A line the paste cut, matched against what it was.

Only the input's first line can begin inside something (the paste started there) and only its
last line, when it has no line end, can end inside something.  Each side has its own functions,
weighed the same way (a partial match counts when it holds enough of the words the pattern
spells out, not what a wildcard took):

* cut at its start (the first line; used by incidents/assemble.py and diagnose/rules_engine.py):
  ``tail_match``, a pattern run backwards (``regex``'s REVERSE flag) with partial matching, so
  that ``of memory. Tried to allocate 2.00 GiB`` or ``TP0] ...`` is seen as the end of such a
  match; ``starts_with_literal_tail``, the end of a literal (``le creating shared memory
  segment``);
* cut at its end (the last line): ``head_match``, a pattern's match cut short where the text
  ends (``regex``'s partial matching); ``complete_literal``, the line ends inside a signal's own
  words (``... detected by wat``) and is read as going on with them; ``repeats_handled``, a
  record that, up to the cut and numbers aside, is one another rank logged complete just before
  (SGLang's tensor-parallel ranks log the same record one after another: ``[... TP0] Decode
  transfer failed for request rank=0 ... Aborted by AbortReq.``, then TP2's), whose reading
  (handled: a client's abort, not a failure) it takes.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sglang_doctor.incidents import signals as signals_mod
from sglang_doctor.read import records

# -- the words a pattern spells out (both sides) ---------------------------------------------


def held_words(pattern: str, text: str) -> int:
    """How many characters of the words ``pattern`` spells out ``text`` holds."""
    return sum(len(w) for w in literal_words(pattern) if w in text)


_WORDS: dict[str, frozenset[str]] = {}
_REGEX_SYNTAX = re.compile(r"\(\?P<\w+>|\(\?[:=!<]*|\\[dDsSwWbBAZ]|\[(?:\\.|[^\]])*\]|\{\d*,?\d*\}")


def _without_negative_lookarounds(pattern: str) -> str:
    """``pattern`` less its negative lookaheads and lookbehinds (``(?!...)``, ``(?<!...)``):
    the words in them are words the text must NOT hold, never words a match holds."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] in "\\[":  # an escape or a character class: copied as it is
            j = i + 2 if pattern[i] == "\\" else _class_end(pattern, i)
            out.append(pattern[i:j])
            i = j
            continue
        if pattern.startswith(("(?!", "(?<!"), i):
            depth, j = 0, i
            while j < len(pattern):
                c = pattern[j]
                if c == "\\":
                    j += 2
                    continue
                if c == "[":  # a character class: its ``(`` and ``)`` are literal
                    j = _class_end(pattern, j)
                    continue
                depth += c == "("
                depth -= c == ")"
                j += 1
                if depth == 0:
                    break
            out.append(" ")
            i = j
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class that opens at ``start``."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def literal_words(pattern: str) -> frozenset[str]:
    """The words of three letters or more a regex spells out literally (not those of its
    negative lookarounds: words a match must not hold)."""
    words = _WORDS.get(pattern)
    if words is None:
        text = re.sub(r"\\(.)", r"\1", _REGEX_SYNTAX.sub(" ", _without_negative_lookarounds(pattern)))
        words = _WORDS[pattern] = frozenset(re.findall(r"[A-Za-z_]{3,}", text))
    return words


# one run of non-space characters (a path, a dotted class name, a generated kernel's name) that a
# wildcard took counts for at most this many characters when a match is weighed (words_share)
TOKEN_WEIGHT = 16


def weighed_length(text: str) -> int:
    """``text``'s length with each run of non-space characters counted for at most
    TOKEN_WEIGHT: what a wildcard took counts by its words, a path or an identifier as one
    word (``at /mnt/.../fmhaRunner.cuh:30: Unsupported architecture`` is a few words, a
    server_args dump ``model_path='...', tokenizer_path=..., ...`` is many)."""
    tokens = text.split()
    return sum(min(len(t), TOKEN_WEIGHT) for t in tokens) + max(0, len(tokens) - 1)


def words_share(pattern: str, matched: str, held: int) -> bool:
    """Whether the pattern's own words (``held`` characters of them) are at least a quarter of
    the match, not mostly what a wildcard took: of its length, or of its length weighed by
    words (weighed_length) when the match holds the last word the pattern spells out after
    its last alternatives (the end of a match that went through that word holds it,
    a text a final wildcard took whole may not: ``INFO custom_all_reduce.register_graph_buffers:
    Registering ...`` for ``\\S*custom_all_reduce\\w*\\.cuh:\\d+: (?P<e>[^\\n]+)``): the last
    word after its last alternatives (_last_literal_word)."""
    if held * 4 >= len(matched):
        return True
    if held * 4 < weighed_length(matched) or _LOOKAROUND.search(pattern):
        return False  # (a lookaround, a rule's guard, is not what a backwards partial match checks)
    last = _last_literal_word(pattern)
    return last is not None and last in matched


_LOOKAROUND = re.compile(r"\(\?<?[=!]")


def _last_literal_word(pattern: str) -> str | None:
    """The last word of three letters or more ``pattern`` spells out after its last
    alternatives (``(?:cuda|CUDA) graph failed: ...gloo/transport/...``: ``transport``); None
    when there is none, or when the last ``|`` is the pattern's own (which word ends a match
    is then not one)."""
    tail = _after_last_alternatives(pattern)
    if tail is None:
        return None
    words = re.findall(r"[A-Za-z_]{3,}", re.sub(r"\\(.)", r"\1", _REGEX_SYNTAX.sub(" ", tail)))
    return words[-1] if words else None


def _after_last_alternatives(pattern: str) -> str | None:
    """What ``pattern`` holds after the group of its last ``|`` closes (the whole pattern when
    it has none); None when that ``|`` is at the top level."""
    depth, opened, bar_group, i = 0, [], None, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a character class: its "|" and parentheses are members
            j = i + 1 + (pattern[i + 1:i + 2] == "^")
            j += pattern[j:j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            opened.append(i)
        elif c == ")" and opened:
            start = opened.pop()
            if bar_group == start:
                bar_group = ("closed", i)
        elif c == "|":
            if not opened:
                return None
            bar_group = opened[-1]
        i += 1
    if bar_group is None:
        return pattern
    if isinstance(bar_group, tuple):
        return pattern[bar_group[1] + 1:]
    return None


def _holds_words(pattern: str, matched: str, min_chars: int) -> int | None:
    """The characters of the pattern's own words a partial match holds when they are two
    thirds of ``min_chars`` or more (not what a wildcard took), else None."""
    held = held_words(pattern, matched)
    return held if held >= min_chars * 2 // 3 else None


# -- a line cut at its start (the paste's first line) -----------------------------------------

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


def tail_match(rx, text: str, min_chars: int, *, timeout: float | None = None):
    """A match of ``rx`` that the start of ``text`` cut short, or None: the pattern run
    backwards, partial where the text starts, over ``min_chars`` characters or more, of which
    two thirds are the words the pattern spells out and at least a quarter of the match weighed
    by words (words_share: not mostly what a wildcard took, ``\\((?P<cli>[^)]*)\\)`` run back
    over a whole server_args dump; a partial match sets no group, so the words are weighed
    instead).  May raise what
    ``rx.search`` raises (``TimeoutError`` after ``timeout`` seconds)."""
    back = reversed_rx(rx)
    if back is None:
        return None
    m = back.search(text, partial=True, timeout=timeout)
    if m is None or not m.partial or m.start() != 0 or len(m.group(0)) < min_chars:
        return None
    held = _holds_words(rx.pattern, m.group(0), min_chars)
    return m if held is not None and words_share(rx.pattern, m.group(0), held) else None


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


# -- a line cut at its end (the paste's last line, no line end) -------------------------------


def head_match(rx, text: str, min_chars: int, *, timeout: float | None = None):
    """A match of ``rx`` that the end of ``text`` cut short (``regex``'s partial matching), or
    None (a whole match is not one: the caller searches for that): ``min_chars`` characters or
    more, two thirds of them the words the pattern spells out (a start of ``(.+)\\n...cuh`` is
    any text at all); None for a pattern object without partial matching (the stdlib's re).
    May raise ``TimeoutError`` after ``timeout`` seconds."""
    try:
        m = rx.search(text.rstrip(), partial=True, timeout=timeout)
    except TypeError:
        return None
    if m is None or not m.partial or len(m.group(0)) < min_chars:
        return None
    return m if _holds_words(rx.pattern, m.group(0), min_chars) is not None else None


# a cut line shorter than this (after its prefix) says too little to be read as another record
MIN_REPEAT_CHARS = 24
# the words of a literal before the cut: at least this many characters, and this share of it
MIN_LITERAL_CHARS = 8
MIN_LITERAL_SHARE = 0.6
_NUMBER = re.compile(r"\d+")


def normalized(text: str) -> str:
    """A record's message without its prefix, every number the same (ranks, ids, counts)."""
    return _NUMBER.sub("#", records.parse_prefix(text).message.strip())


def repeats_handled(cut_text: str, handled: list[str]) -> bool:
    """The cut line is, up to where it is cut, one of the ``handled`` records (normalized)."""
    cut = normalized(cut_text)
    if len(cut) < MIN_REPEAT_CHARS:
        return False
    return any(full.startswith(cut) and len(full) > len(cut) for full in handled)


def complete_literal(message: str, candidates: tuple[signals_mod.Signal, ...]):
    """``(signal, captures, literal)`` for the first signal one of whose literals the message
    ends inside (most of the literal before the cut, at a word start), and whose pattern
    matches the message completed with the rest of that literal there; else None."""
    for sig in candidates:
        for lit in sig.literals:
            need = max(MIN_LITERAL_CHARS, math.ceil(len(lit) * MIN_LITERAL_SHARE))
            for k in range(len(lit) - 1, need - 1, -1):
                head = lit[:k]
                if not message.endswith(head):
                    continue
                start = len(message) - k
                if start > 0 and lit[0].isalnum() and message[start - 1].isalnum():
                    continue  # the words would start inside another word
                completed = message + lit[k:]
                m = sig.regex.search(completed)
                if m and m.end() > start:  # the completion is what the pattern matched
                    return sig, {key: v for key, v in m.groupdict().items() if v is not None}, lit
                break
    return None
