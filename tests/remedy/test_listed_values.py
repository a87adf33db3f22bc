"""An argument check that lists the values it accepts ("requires one of ['triton', 'trtllm_mha',
...]", "only ['flashinfer', 'fa3', 'triton'] ... are supported") gets its first listed value as
the change and its second as an alternative, after every other reading of the message
(refusals._values): which listed value suits the GPU the text does not say, and a confirmed
fix that is the list's second value is then one of the two places a fix is read in.  A model
bound to a few backends (GptOss, Llama4, ...) has its own rule since session 33.  Real
subprocesses on SGLang 0.5.9's messages (server_args.py:1345 and :2760)."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

ARGS = FIXTURES / "args"


def _first_two(inc: dict) -> list[dict]:
    rem = inc["remediation"]
    return [rem["set"], *(a["set"] for a in rem["alternatives"][:1])]


def test_a_model_bound_to_some_backends_gets_triton_and_loses_per_phase_overrides():
    """GptOss's list is read by its own rule (args.invalid.model_attention_backend, session 33):
    the list's first value (trtllm_mha / fa3 on other lists) may not run on the GPU, triton runs
    everywhere, and a per-phase backend the launch sets would keep the refused one."""
    inc = explain_one_incident(ARGS / "gptoss_backend_list_059.log")
    assert inc["rule"] == "args.invalid.model_attention_backend"
    rem = inc["remediation"]
    assert rem["set"] == {"--attention-backend": "triton"}
    assert [a["unset"] for a in rem["alternatives"][:2]] == [["--prefill-attention-backend"],
                                                             ["--decode-attention-backend"]]


def test_the_refused_backend_is_never_one_of_them():
    inc = explain_one_incident(ARGS / "deterministic_backend_list_059.log")
    assert inc["category"] == "args.invalid"
    first, second = _first_two(inc)
    assert first == {"--attention-backend": "flashinfer"} and second == {"--attention-backend": "fa3"}
    every = [inc["remediation"]["set"], *(a["set"] for a in inc["remediation"]["alternatives"])]
    assert {"--attention-backend": "trtllm_mha"} not in every


def test_a_message_with_one_stated_value_gets_no_second():
    # "Please enable dp attention when setting enable_dp_lm_head": a switch, no list of values
    inc = explain_one_incident(ARGS / "requires_dp_attention_dp_lm_head_059.log")
    sets = [inc["remediation"]["set"], *(a["set"] for a in inc["remediation"]["alternatives"])]
    assert sum("--enable-dp-attention" in s for s in sets) == 1
