"""cut_match.literal_words: the words a rule's message pattern spells out, which a cut line must
hold to be read as the end of that message. A negative lookaround's words are words the message
must NOT hold: counting them let a rule made only of such conditions
(``^(?![\\s\\S]*(?:not supported|...))[\\s\\S]*\\w``) read nearly any paste's first line as its own."""

from __future__ import annotations

from sglang_doctor.incidents.cut_match import held_words, literal_words


def test_the_words_of_a_negative_lookahead_are_not_the_patterns():
    pattern = r"(?i)^(?![\s\S]*(?:not supported|unsupported|out of memory))[\s\S]*\w"
    assert literal_words(pattern) == frozenset()
    assert held_words(pattern, "is not supported, out of memory") == 0


def test_a_negative_lookbehind_is_left_out_and_the_words_around_it_stay():
    assert literal_words(r"shared (?<!gpu )memory segment") == {"shared", "memory", "segment"}
    assert "gpu" not in literal_words(r"shared (?<!gpu )memory segment")


def test_a_positive_lookahead_keeps_its_words():
    # a positive lookahead says what the message must hold: those are its words
    assert {"bits", "scheme"} <= literal_words(r"(?i)^(?=[\s\S]*(?:bits|scheme))[\s\S]*?not supported")


def test_brackets_and_escapes_do_not_open_a_lookaround():
    # ``(?!`` inside a character class or after a backslash is literal text, not a group
    words = literal_words(r"foo [(?!x] qux(?!alpha(beta)[)]gamma)end \(?!notla")
    assert {"foo", "qux", "end", "notla"} <= words
    assert not words & {"alpha", "beta", "gamma"}  # the lookahead closes after its class's ``)``
