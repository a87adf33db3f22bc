"""Weights that do not fit (torch's CUDA OOM while the loader fills the GPU): SGLang sizes no
pool before the weights are in, so --mem-fraction-static cannot help; what people confirm is
more GPUs per replica, then host offload (rules/memory.yaml memory.cuda_oom.load_weights, session
24).  Real subprocesses on the rule's fixtures, as a user runs ``explain``."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident


def test_weights_that_do_not_fit_lead_with_twice_the_launchs_tensor_parallel_size():
    inc = explain_one_incident(FIXTURES / "memory" / "cuda_oom_load_weights_059.log")
    assert inc["rule"] == "memory.cuda_oom.load_weights"
    rem = inc["remediation"]
    # the dump says tp_size=2: twice that, as advice (only the user knows the GPU count)
    assert rem["set"] == {"--tp-size": 4} and rem["needs_human"] and rem["safe"] is False
    assert "twice the GPUs" in rem["tradeoff"]
    assert rem["alternatives"][0]["set"] == {"--cpu-offload-gb": 4}
    assert not any("--mem-fraction-static" in o["set"] for o in [rem, *rem["alternatives"]])
