"""Issue #12, layered diagnosis: a class rule whose category follows the phase
(``category_by_phase``: SGLang's own inconsistent state is the start-up step's failure during a
step, a crash while serving after ready) and a text that shows no phase.  The rule's default
answers for a context the log does not give, so the incident carries the honest fallback (what
is missing: the phase), with the rule's answer as the best guess; a text that shows the phase
gets no such block.  Each test runs the real CLI on a real file under fixtures/ (the first
fails on the code before session 21: no fallback block, so no best guess at all)."""

from __future__ import annotations

from test_assumed_answer import incidents


def test_an_internal_state_check_with_no_phase_in_the_text_carries_the_fallback():
    (inc,) = incidents("fixtures/classes/model_forward_tensor_shape_not_weights.log")
    assert inc["rule"] == "class.internal.state" and inc["layer"] == "class"
    assert inc["phase"] == "unknown" and inc["category"] == "other"  # the rule's answer is kept
    fb = inc["fallback"]
    assert "does not show the phase" in fb["missing"] and "class.internal.state" in fb["missing"]
    assert "serving: runtime.crash" in fb["missing"]
    assert fb["best_guess"]["category"] == "other" and fb["best_guess"]["grounds"] == "rule"
    assert fb["next_step"]


def test_an_internal_state_check_in_a_start_up_step_has_no_fallback():
    (inc,) = incidents("fixtures/classes/internal_state_startup.log")
    assert inc["rule"] == "class.internal.state" and inc["phase"] == "startup.cuda_graph"
    assert inc["category"] == "cuda_graph" and not inc.get("fallback")
