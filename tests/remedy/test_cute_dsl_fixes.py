"""A CuTe DSL kernel that does not compile (rules/field22_kernel.yaml): the install is what is
broken, and the launch that does not use the kernel is the change to try (session 24): FA4's
cute attention -> the Triton attention backend; a cute GDN/KDA kernel (only when the launch chose
cutedsl) -> SGLang's default Triton linear-attention kernels.  Real subprocesses on the rules'
fixtures, as a user runs ``explain``."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

KERNEL = FIXTURES / "kernel"


def _all(rem):
    return [rem, *rem["alternatives"]]


def test_fa4s_cute_kernel_failing_to_compile_offers_the_triton_attention_backend():
    inc = explain_one_incident(KERNEL / "cute_dsl_user_code_error_fa4_capture_0523.log")
    assert inc["rule"] == "kernel.build.cute_dsl_exception"
    rem = inc["remediation"]
    assert rem["set"] == {"--attention-backend": "triton"}
    # the reinstall advice leads the note: the change is advice, never applied unattended
    assert rem["needs_human"] and rem["safe"] is False and "nvidia-cutlass-dsl" in rem["note"]
    assert not any("--linear-attn-backend" in o["set"] for o in _all(rem))


def test_a_cute_gdn_kernel_failing_to_compile_offers_the_default_linear_attention_kernels():
    inc = explain_one_incident(KERNEL / "cute_dsl_mlir_object_terminate_in_capture_0523.log")
    assert inc["rule"] == "kernel.build.cute_dsl_compile"
    rem = inc["remediation"]
    # the launch's settings are not in the text: its backend is not assumed to be the default
    assert rem["set"] == {"--linear-attn-backend": "triton"} and rem["needs_human"]
    assert rem["alternatives"][0]["unset"] == ["--linear-attn-decode-backend"]
    assert not any("--attention-backend" in o["set"] for o in _all(rem))
