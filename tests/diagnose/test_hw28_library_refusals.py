"""Session 28 (hw28): refusals worded by the libraries below SGLang -- sgl-kernel's CUTLASS
dispatch ("No implemented <op> for current compute capability"), FlashInfer's JIT
("No supported CUDA architectures found for major versions"), FlashMLA's sparse kernels, ptxas's
own reason inside Triton's PTX codegen error -- and checkpoints SGLang's config/loader refuses
("Unknown quantization method", a not backend-compatible Transformers class, a tokenizer class
the installed Transformers lacks).  Each test runs the real CLI on a real file: a shipped
fixture, or a log written to tmp_path from the library's own message."""

from __future__ import annotations

from conftest import ROOT, explain_incidents

incidents = explain_incidents


def test_block_fp8_in_a_linear_layer_switches_the_fp8_gemm_backend():
    (inc,) = incidents(ROOT / "fixtures/kernel/sgl_kernel_block_fp8_sm120_capture.log")
    assert inc["rule"] == "kernel.unsupported_hw.sgl_kernel_block_fp8_sm"
    assert inc["category"] == "kernel.unsupported_hw"
    assert "SM 120" in inc["title"]
    assert inc["remediation"]["set"] == {"--fp8-gemm-backend": "triton"}


def test_the_same_words_from_the_cutlass_moe_runner_switch_the_moe_runner_instead():
    (inc,) = incidents(ROOT / "fixtures/kernel/sgl_kernel_block_fp8_moe_sm120.log")
    assert inc["rule"] == "kernel.unsupported_hw.sgl_kernel_block_fp8_sm"
    assert inc["remediation"]["set"] == {"--moe-runner-backend": "triton"}


def test_without_frames_the_block_fp8_refusal_is_advice_naming_both_paths():
    (inc,) = incidents(ROOT / "fixtures/kernel/sgl_kernel_block_fp8_one_line.log")
    assert inc["rule"] == "kernel.unsupported_hw.sgl_kernel_block_fp8_sm"
    assert inc["remediation"]["set"] == {}
    assert inc["remediation"]["needs_human"]
    advice = inc["remediation"]["note"]
    assert "--fp8-gemm-backend triton" in advice and "--moe-runner-backend triton" in advice


def test_per_channel_fp8_gemm_takes_the_triton_kernel_switch():
    (inc,) = incidents(ROOT / "fixtures/kernel/sgl_kernel_fp8_scaled_mm_sm120.log")
    assert inc["rule"] == "kernel.unsupported_hw.sgl_kernel_fp8_scaled_mm_sm"
    assert inc["remediation"]["env"] == {"USE_TRITON_W8A8_FP8_KERNEL": "1"}


def test_an_op_with_no_other_kernel_is_named_without_a_flag(tmp_path):
    log = tmp_path / "int8.log"
    log.write_text("NotImplementedError: No implemented int8_scaled_mm for current compute capability.\n")
    (inc,) = incidents(log)
    assert inc["rule"] == "kernel.unsupported_hw.sgl_kernel_no_implemented_sm"
    assert "int8_scaled_mm" in inc["title"]
    assert inc["remediation"]["set"] == {} and inc["remediation"]["needs_human"]


def test_flashinfer_jit_refusal_in_an_fp8_moe_layer_switches_the_moe_runner():
    (inc,) = incidents(ROOT / "fixtures/kernel/flashinfer_jit_no_arch_sm120.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_jit_no_arch"
    assert inc["remediation"]["set"] == {"--moe-runner-backend": "triton"}


def test_flashinfer_jit_refusal_on_its_own_is_advice_only():
    (inc,) = incidents(ROOT / "fixtures/kernel/flashinfer_jit_no_arch_one_line.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_jit_no_arch"
    assert inc["remediation"]["set"] == {} and inc["remediation"]["needs_human"]
    assert "CUDA 12.9" in inc["remediation"]["note"]


def test_flashmla_sparse_refusal_picks_the_nsa_backend_of_the_kernel_that_refused():
    (prefill,) = incidents(ROOT / "fixtures/kernel/flashmla_sparse_fwd_arch_sm120.log")
    assert prefill["rule"] == "kernel.unsupported_hw.flashmla_sparse_arch"
    assert prefill["remediation"]["set"] == {"--nsa-prefill-backend": "tilelang"}
    (decode,) = incidents(ROOT / "fixtures/kernel/flashmla_sparse_decode_arch_one_line.log")
    assert decode["remediation"]["set"] == {"--nsa-decode-backend": "tilelang"}


def test_ptxas_bf16_reason_is_a_gpu_refusal_fixed_by_float16_not_a_build_failure():
    (inc,) = incidents(ROOT / "fixtures/kernel/ptxas_bf16_needs_sm80_t4.log")
    assert inc["rule"] == "kernel.unsupported_hw.ptxas_bf16_needs_sm80"
    assert inc["remediation"]["set"] == {"--dtype": "float16"}


def test_ptxas_fp8_conversion_in_attention_drops_the_fp8_kv_cache():
    (inc,) = incidents(ROOT / "fixtures/kernel/ptxas_feature_needs_sm89.log")
    assert inc["rule"] == "kernel.unsupported_hw.ptxas_feature_needs_newer_sm"
    assert "sm_89" in inc["title"]
    assert inc["remediation"]["set"] == {"--kv-cache-dtype": "auto"}


def test_ptxas_failure_without_its_reason_stays_a_build_failure(tmp_path):
    log = tmp_path / "ptxas.log"
    log.write_text("RuntimeError: Internal Triton PTX codegen error: \nptxas fatal   : Ptx assembly aborted due to errors\n")
    (inc,) = incidents(log)
    assert inc["rule"] == "kernel.build.triton_ptxas_failed"


def test_unknown_quantization_method_is_the_checkpoints_format():
    (inc,) = incidents(ROOT / "fixtures/model/unknown_quantization_method_059.log")
    assert inc["rule"] == "model.unsupported.unknown_quantization_method"
    assert inc["category"] == "model.unsupported"
    assert "hqq" in inc["title"] and "hqq" in inc["remediation"]["note"]


def test_both_wordings_of_the_incompatible_transformers_fallback_name_the_architecture():
    for name in ("transformers_impl_incompatible_059.log", "transformers_impl_incompatible_one_line.log"):
        (inc,) = incidents(ROOT / "fixtures/model" / name)
        assert inc["rule"] == "model.unsupported.transformers_impl_incompatible"
        assert "Step3p5ForCausalLM" in inc["title"]
        assert "Step3p5ForCausalLM" in inc["remediation"]["note"]


def test_a_tokenizer_class_the_installed_transformers_lacks_is_a_load_failure():
    (inc,) = incidents(ROOT / "fixtures/model/tokenizer_class_missing_059.log")
    assert inc["rule"] == "model.load.tokenizer_class_missing"
    assert inc["category"] == "model.load"
    assert "TokenizersBackend" in inc["title"]
