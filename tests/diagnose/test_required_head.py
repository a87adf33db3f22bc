"""rules_engine.required_head: the text every match of a rule's message pattern holds, which lets
_match skip the search (and the compile) of a message that lacks it."""

from __future__ import annotations

import pytest
import regex

from sglang_doctor.diagnose import rules_engine
from sglang_doctor.diagnose.rules_engine import required_head

from conftest import ROOT


@pytest.mark.parametrize("source, head", [
    (r"H must be 128, but got (?P<heads>\d+)", "H must be 128, but got "),
    (r"^Exit code", "Exit code"),
    (r"hello\.world\(x", "hello.world(x"),
    (r"abcde+x", "abcde"),        # (one e at least: the head keeps it)
    (r"abcde{2}", "abcd"),        # (a quantifier takes the character it repeats)
    (r"abcdef?", "abcde"),
    (r"foo bar\d", "foo bar"),
    (r"abc?def", None),           # (too short once the optional c goes)
    (r"(?i)hello world", None),   # (case-blind: the head is not in every match as written)
    (r"hello (?i:w)orld", None),
    (r"hello world|other", None),
    (r"(?<=x)hello world", None),
    (r"[Hh]ello world", None),
    (r"\bhello world", None),
])
def test_the_head_of_a_pattern(source, head):
    assert required_head(source) == head


def test_every_match_holds_the_head_on_the_packs_examples():
    rules = rules_engine.RuleSet.load(user=False).rules
    checked = 0
    for rule in rules:
        if rule.message_needs is None:
            continue
        source = rule.message._source if isinstance(rule.message, rules_engine._LazyPattern) else rule.message.pattern
        rx = regex.compile(source, regex.MULTILINE)
        for example in rule.examples:
            path = ROOT / example
            if not path.is_file():
                continue
            for m in rx.finditer(path.read_text(encoding="utf-8", errors="replace")):
                assert rule.message_needs in m.group(0), (rule.id, m.group(0))
                checked += 1
    assert checked > 20


def test_a_message_without_the_head_is_not_searched(monkeypatch):
    rule = rules_engine.Rule(id="x.y", category="other", phase="auto", title="t", explanation="e", source="s",
                             line=1, message=rules_engine._LazyPattern(r"H must be 128, but got (?P<h>\d+)"),
                             message_needs=required_head(r"H must be 128, but got (?P<h>\d+)"))
    searched = []
    monkeypatch.setattr(rules_engine, "_search", lambda rx, text: searched.append(text))
    from sglang_doctor.incidents.tracebacks import ExceptionInfo
    from sglang_doctor.model import Incident

    def incident(message: str) -> Incident:
        exc = ExceptionInfo("AssertionError", message)
        return Incident(kind="traceback", first_line=1, last_line=2, lines=[], exception=exc, chain=[exc])

    ruleset = rules_engine.RuleSet([rule])
    assert ruleset.match(rule, incident("H must be 64"), None) is None
    assert searched == []
    ruleset.match(rule, incident("H must be 128, but got 16"), None)
    assert searched == ["H must be 128, but got 16"]
