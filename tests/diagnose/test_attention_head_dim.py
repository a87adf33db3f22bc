"""FlashInfer's head-size dispatch (field31): DISPATCH_HEAD_DIM's "Unsupported head_dim: N"
(include/flashinfer/utils.cuh), thrown as "Error in function '<kernel>' at <file>:<line>: ..."
(exception.h), names the attention backend lacking kernels for the model's head size, wherever
it surfaces:

- inside the decode graph capture, SGLang's "Capture cuda graph failed: ..." wrapper and its
  generic advice (smaller --cuda-graph-max-bs, lower --mem-fraction-static) do not win: the fix is
  another attention backend (sglang#24714, corpus/field31/001);
- at a served prefill under a scheduler traceback, the same;
- a capture failure with another cause keeps the capture rule and its advice.
Real ``sglang-doctor explain`` subprocesses on fixture files (or files derived from them)."""

from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2] / "fixtures"


def _only(path):
    incidents = explain_incidents(path)
    assert len(incidents) == 1, [i["rule"] for i in incidents]
    return incidents[0]


def test_the_head_size_refused_inside_the_capture_is_the_backend_not_the_graphs():
    inc = _only(ROOT / "kernel" / "flashinfer_unsupported_head_dim_capture.log")
    assert (inc["rule"], inc["category"]) == ("kernel.unsupported_hw.attention_head_dim", "kernel.unsupported_hw")
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}
    assert "106" in inc["title"]


def test_the_head_size_refused_at_a_served_prefill():
    inc = _only(ROOT / "kernel" / "flashinfer_unsupported_head_dim_prefill.log")
    assert (inc["rule"], inc["category"], inc["phase"]) == (
        "kernel.unsupported_hw.attention_head_dim", "kernel.unsupported_hw", "serving")
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}


def test_another_kernel_message_in_the_capture_keeps_the_capture_rule(tmp_path):
    text = (ROOT / "kernel" / "flashinfer_unsupported_head_dim_capture.log").read_text()
    log = tmp_path / "other_cause.log"
    log.write_text(text.replace("Unsupported head_dim: 106", "Unsupported page_size: 3"))
    inc = _only(log)
    assert inc["category"] == "cuda_graph"
    assert "--attention-backend" not in inc["remediation"]["set"]
