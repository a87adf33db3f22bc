"""The literals the block scanner may skip on record-start lines (assemble.weak_literals):
each condition must hold on every message a signal fed by that literal matches, or a
failure line would be skipped."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sglang_doctor.incidents import assemble, signals

# messages of record-start lines (the text after SGLang's header)
FIRES = [
    "launch_server.py: error: unrecognized arguments: --tp-sise 2",
    "sglang serve: error: argument --tp-size: invalid int value: 'x'",
    "/tmp/k.py:12:3: error: 'tt.dot' op operand #0 must be ranked tensor",
    'loc("/tmp/k.py":12:3): error: failed to legalize operation',
    'loc("a b c":1): error: spaces in the location',
]
SKIPPED = [  # warnings: skipped with the rule pack's literal too
    "WARNING io_struct.py:644: tokenizer: error: special token '<|im_end|>' listed twice",
    "grammar.py:12: Warning: schema: error: too deep",
    "custom allreduce: error: disabled. To silence this warning, specify --disable-custom-all-reduce",
]


def head_rx(lit: str, rule_literals=()) -> re.Pattern:
    _bare, heads = assemble.weak_literals(rule_literals)
    return re.compile(heads[lit].encode())


def test_every_signal_of_a_head_literal_fires_only_where_its_head_condition_holds():
    for lit in assemble.HEAD_ONLY_LITERALS:
        sigs = [s for s in signals.SIGNALS if lit in s.literals]
        assert sigs, lit
        for msg in FIRES:
            if any(s.regex.search(msg) for s in sigs):
                assert head_rx(lit).match(msg.encode()), (lit, msg)
    fired = [msg for msg in FIRES if any(s.regex.search(msg) for s in signals.SIGNALS if ": error: " in s.literals)]
    assert len(fired) == len(FIRES)  # the examples are signals indeed


def test_a_warning_that_holds_the_literal_after_other_words_is_skipped():
    for msg in SKIPPED:
        assert not head_rx(": error: ").match(msg.encode())
        assert not head_rx(": error: ", [": error: "]).match(msg.encode())
    # not a warning and not argparse's form: skipped without the rule pack only
    msg = "Tool call failed, Error: Expecting value: error: x"
    assert not head_rx(": error: ").match(msg.encode())
    assert head_rx(": error: ", [": error: "]).match(msg.encode())


def test_a_rule_literal_is_never_bare_only_and_matters_on_every_line_but_warnings():
    bare, heads = assemble.weak_literals(["Error: ", ": error: "])
    assert "Error: " not in bare and "Error: " in heads
    rule_signal = signals.extra_signal("rule_literal:: error: ", (": error: ",), re.escape(": error: "))
    msg = "x y: error: z"  # not a warning, not argparse's form: the rule's signal fires
    assert rule_signal.regex.search(msg)
    assert head_rx(": error: ", [": error: "]).match(msg.encode())
    assert not head_rx(": error: ").match(msg.encode())


PIECES = st.sampled_from(list("aW RNIG:é_1.\u0130\u2003\u00a0") + ["WARNING", "Warning: ", "To silence this warning",
                                                                    "ÉWARNING", "WARNINGé", "_WARNING", "Warning"])


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_what_the_bytes_test_calls_a_warning_the_text_test_does_too(text):
    """signals.WARNING_LINE_BYTES over the UTF-8 bytes is never more eager than
    _WARNING_LINE over the text (else a rule's line would be skipped)."""
    text_says_not_warning = re.match(signals._WARNING_LINE, text) is not None
    bytes_says_not_warning = re.match(signals.WARNING_LINE_BYTES.encode(), text.encode()) is not None
    assert bytes_says_not_warning or not text_says_not_warning


def test_an_extra_signal_compiles_its_regex_on_first_use_and_matches_as_compiled():
    import re

    from sglang_doctor.incidents import signals

    sig = signals.extra_signal("rule_literal:boom", ("boom",), re.escape("boom"))
    assert sig.regex._rx is None  # not compiled at start-up
    want = re.compile(sig.regex.pattern)
    for text in ("boom", "x boom y", "WARNING boom", "To silence this warning boom", "nothing", "Warning: boom"):
        got = sig.regex.search(text)
        exp = want.search(text)
        assert (got is None) == (exp is None) and (got is None or got.span() == exp.span())
    assert sig.regex.match("boom") is not None and sig.regex.flags == want.flags
