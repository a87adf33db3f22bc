"""Where a size check is the user's argument and where it is a kernel's (session 34, issue 12).

A check in SGLang that names a setting ("... must be divisible by ep_size") is args.invalid; a
kernel library's check on the tensors SGLang hands it ("K must be divisible by blockK" raised in
FlashInfer's fused_moe/core.py) under a valid launch is the kernel having no variant for the
model's shape (kernel.unsupported_hw; while serving, runtime.crash) -- rules/argsfix34_kernel_shape.yaml."""

from __future__ import annotations

from pathlib import Path

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "argsfix34"


def _primary(text: str, remediate: bool = False) -> dict:
    pipe = StreamPipeline(RuleSet.load(builtin=True, user=False), remediate=remediate)
    events = pipe.feed(text.encode()) + pipe.finish()
    incidents = [ev for ev in events if ev["event"] == "incident"]
    assert incidents, text
    return max(incidents, key=lambda ev: ev.get("confidence") or 0)


def _frames(message: str, exc: str = "ValueError", ready: bool = False) -> str:
    head = "[2026-05-02 10:00:00] The server is fired up and ready to roll!\n" if ready else ""
    return (head + "[2026-05-02 10:15:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/sglang/srt/layers/quantization/fp8_utils.py", line 1367, in apply\n'
            "    output = fp8_blockscale_gemm_sm90(\n"
            '  File "/usr/lib/python3.12/site-packages/flashinfer/gemm/gemm_base.py", line 11672, in fp8_blockscale_gemm_sm90\n'
            "    raise ValueError(\n"
            f"{exc}: {message}\n")


def test_a_kernel_librarys_tile_check_is_the_kernel_not_an_argument():
    inc = _primary((FIX / "flashinfer_moe_block_k_not_divisible_0523.log").read_text())
    assert (inc["rule"], inc["category"]) == ("class.kernel.library_shape_check", "kernel.unsupported_hw")
    inc = _primary(_frames("K dimension must be divisible by block size (128), got K=2880"))
    assert inc["category"] == "kernel.unsupported_hw"


def test_while_serving_the_same_check_is_a_crash():
    inc = _primary(_frames("N dimension must be divisible by 64, got N=2880", ready=True))
    assert (inc["rule"], inc["category"]) == ("class.kernel.library_shape_check", "runtime.crash")


def test_a_librarys_check_that_names_a_setting_stays_the_argument():
    inc = _primary((FIX / "flashinfer_moe_experts_ep_size_names_setting_0523.log").read_text())
    assert inc["category"] == "args.invalid"


def test_sglangs_own_size_check_stays_the_argument():
    text = ("ValueError: Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128.\n")
    assert _primary(text)["category"] == "args.invalid"
    sglang_only = _frames("Weight output_partition_size = 320 is not divisible by weight quantization block_n = 128.")
    sglang_only = sglang_only.replace("flashinfer/gemm/gemm_base.py", "sglang/srt/layers/quantization/fp8.py")
    assert _primary(sglang_only)["category"] == "args.invalid"


def test_a_bare_gemm_dimension_check_is_the_kernel():
    for line in ("ValueError: K must be divisible by 32, got 2880", "AssertionError: K must be divisible by blockK",
                 "ValueError: N=2880 must be divisible by outputs_per_block=64"):
        inc = _primary(line + "\n")
        assert (inc["rule"], inc["category"]) == ("class.kernel.gemm_dimension_check", "kernel.unsupported_hw"), line


def test_the_fix_is_another_backend_for_the_path_then_the_tp_split():
    inc = _primary((FIX / "flashinfer_moe_block_k_not_divisible_0523.log").read_text(), remediate=True)
    rem = inc["remediation"]
    assert rem["set"] == {"--moe-runner-backend": "triton"}
    assert rem["alternatives"][0]["set"] == {"--tp-size": 2}
    inc = _primary((FIX / "flashinfer_gdn_tile_v_not_divisible_0523.log").read_text(), remediate=True)
    assert inc["remediation"]["set"] == {"--linear-attn-decode-backend": "triton"}
