"""Session 25 (hw25): GPU capability refusals that SGLang's own checks do not word -- one-line
compiler / loader aborts with no Python traceback (Triton's LLVM "Cannot select", HIP's
hipErrorNoBinaryForGpu) and CUDA library / toolchain refusals that name no SM (cuBLAS,
unsupported PTX toolchain, Triton's minimum capability).  Each test runs the real CLI on a real
file: a shipped fixture, or a log written to tmp_path from the library's own message."""

from __future__ import annotations


from conftest import ROOT, explain_incidents


incidents = explain_incidents


def test_triton_fp8_conversion_on_a_pre_sm89_gpu_removes_the_fp8_kv_cache_the_launch_set():
    (inc,) = incidents(ROOT / "fixtures/kernel/triton_llvm_fp8_cvt_sm86.log")
    assert inc["rule"] == "kernel.unsupported_hw.triton_llvm_fp8_cvt"
    assert inc["category"] == "kernel.unsupported_hw"
    assert "e4m3x2" in inc["title"]
    assert inc["remediation"]["unset"] == ["--kv-cache-dtype"]
    # the other readings stay visible: the e5m2 cache and the checkpoint's own FP8
    notes = " ".join(a["note"] for a in inc["remediation"]["alternatives"])
    assert "fp8_e5m2" in notes and "checkpoint" in notes


def test_without_an_fp8_kv_cache_in_the_launch_nothing_is_removed(tmp_path):
    text = (ROOT / "fixtures/kernel/triton_llvm_fp8_cvt_sm86.log").read_text()
    log = tmp_path / "fp8_checkpoint.log"
    log.write_text(text.replace(", kv_cache_dtype='fp8_e4m3'", ", kv_cache_dtype='auto'", 1))
    (inc,) = incidents(log)
    assert inc["rule"] == "kernel.unsupported_hw.triton_llvm_fp8_cvt"
    assert "--kv-cache-dtype" not in inc["remediation"]["unset"]


def test_an_instruction_other_than_fp8_is_a_triton_gpu_mismatch_with_no_flag():
    (inc,) = incidents(ROOT / "fixtures/kernel/triton_llvm_cannot_select_gb300.log")
    assert inc["rule"] == "kernel.unsupported_hw.triton_llvm_cannot_select"
    assert "tcgen05.wait.st" in inc["title"]
    assert inc["remediation"]["set"] == {} and inc["remediation"]["unset"] == []
    assert inc["remediation"]["needs_human"]


def test_the_llvm_line_alone_is_an_incident(tmp_path):
    log = tmp_path / "one_line.log"
    log.write_text("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32\n")
    (inc,) = incidents(log)
    assert inc["rule"] == "kernel.unsupported_hw.triton_llvm_cannot_select"


def test_hip_without_a_code_object_for_the_gpu_is_named_from_its_line():
    incs = incidents(ROOT / "fixtures/kernel/hip_no_binary_for_gpu.log")
    assert incs[0]["rule"] == "kernel.unsupported_hw.hip_no_binary_for_gpu"
    assert incs[0]["remediation"]["needs_human"]


def test_a_bf16_gemm_refused_by_cublas_proposes_float16_as_conditional_advice():
    (inc,) = incidents(ROOT / "fixtures/kernel/cublas_bf16_not_supported.log")
    assert inc["rule"] == "kernel.unsupported_hw.cublas_bf16_not_supported"
    assert inc["remediation"]["set"] == {"--dtype": "float16"}
    # the GPU is not in the text: the change says on which GPUs it holds
    assert "older than Ampere" in inc["remediation"]["note"]


def test_a_float16_gemm_refused_by_cublas_is_not_read_as_bf16_on_an_old_gpu(tmp_path):
    log = tmp_path / "fp16.log"
    log.write_text("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, opa, "
                   "opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, "
                   "CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`\n")
    (inc,) = incidents(log)
    assert inc["rule"] != "kernel.unsupported_hw.cublas_bf16_not_supported"
    assert "--dtype" not in inc["remediation"]["set"]


def test_a_gpu_too_old_for_triton_is_hardware_not_a_compile_error():
    (inc,) = incidents(ROOT / "fixtures/kernel/triton_min_capability_p40.log")
    assert inc["rule"] == "kernel.unsupported_hw.triton_min_capability"
    assert "6.1" in inc["title"] and "7.0" in inc["title"]
    assert inc["remediation"]["unset"] == ["--enable-torch-compile"]


def test_ptx_from_a_newer_toolkit_than_the_driver_is_named():
    (inc,) = incidents(ROOT / "fixtures/kernel/ptx_unsupported_toolchain.log")
    assert inc["rule"] == "kernel.unsupported_hw.ptx_newer_than_driver"
    assert inc["remediation"]["needs_human"]


def test_a_kernel_dispatch_refusing_the_sm_version_is_a_capability_refusal():
    (inc,) = incidents(ROOT / "fixtures/classes/hw_capability_unsupported_sm_version.log")
    assert inc["rule"] == "class.hw.capability"
    assert inc["category"] == "kernel.unsupported_hw"


def test_a_one_line_flashmla_refusal_switches_to_a_portable_mla_backend():
    (inc,) = incidents(ROOT / "fixtures/classes/hw_capability_flashmla_one_line.log")
    assert inc["rule"] == "class.hw.capability"
    assert inc["remediation"]["set"] == {"--attention-backend": "flashinfer"}


def test_a_sparse_flashmla_refusal_is_not_given_the_dense_attention_switch(tmp_path):
    # sglang 0.5.23 srt/layers/attention/deepseek_v4_backend.py: the DSA prefill's own kernel
    log = tmp_path / "sparse.log"
    log.write_text("ValueError: DeepSeek-V4 flashmla_sparse_q8 prefill requires SM90 CUDA GPUs.\n")
    (inc,) = incidents(log)
    assert inc["category"] == "kernel.unsupported_hw"
    assert inc["remediation"] is None or inc["remediation"]["set"].get("--attention-backend") is None


def test_the_older_hip_runtimes_guarantee_wording_is_the_same_refusal(tmp_path):
    # HIP 4.x rocclr hip_code_object.cpp spelled it "Coudn't find binary for current devices"
    log = tmp_path / "hip4.log"
    log.write_text('/build/hip-rocclr/src/HIP-rocm-4.0.0/rocclr/hip_code_object.cpp:120: guarantee(false && '
                   '"hipErrorNoBinaryForGpu: Coudn\'t find binary for current devices!")\n')
    (inc,) = incidents(log)
    assert inc["rule"] == "kernel.unsupported_hw.hip_no_binary_for_gpu"
