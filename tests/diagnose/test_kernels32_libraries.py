"""Session 32 (kernels32): failures worded by the kernel libraries under SGLang, read from their
sources -- FlashInfer's prefill tile configuration and backend_requirement refusals, its
SM12x CUDA check, companion-wheel version check and capture-unsafe refusals; sgl-kernel's
FlashAttention 3 dtype / Hopper-only / head-size checks and its SM75 INT8 GEMM; Triton's
libcuda lookup and driver discovery; CUTLASS's arch-conditional device abort.  Each test runs
the real CLI on a shipped fixture or on a log written to tmp_path from the library's message,
in the shapes a paste leaves (a scheduler traceback, C++ frames only, a bare line)."""

from __future__ import annotations

import pytest

from conftest import ROOT, explain_incidents

KERNEL = ROOT / "fixtures/kernel"


def one(path):
    (inc,) = explain_incidents(path)
    return inc


def test_flashinfer_tile_configuration_after_ready_is_the_gpu_not_a_crash():
    inc = one(KERNEL / "kernels32_flashinfer_invalid_config_first_request.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_no_kernel_config"
    assert inc["category"] == "kernel.unsupported_hw"
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}


@pytest.mark.parametrize("message", [
    "RuntimeError: Error in function 'BatchPrefillWithRaggedKVCacheDispatched' at prefill.cuh:2215: Unsupported max_mma_kv: 0",
    "RuntimeError: Error in function 'SinglePrefillWithKVCacheDispatched' at prefill.cuh:1100: FlashInfer Internal Error: "
    "Invalid configuration : num_frags_x=1 num_frags_y=16 num_frags_z=1 num_warps_x=4 num_warps_z=1 please create an issue",
])
def test_flashinfer_tile_configuration_bare_lines_of_two_releases(tmp_path, message):
    log = tmp_path / "fi.log"
    log.write_text(message + "\n")
    assert one(log)["rule"] == "kernel.unsupported_hw.flashinfer_no_kernel_config"


def test_a_cuda_invalid_configuration_argument_is_not_flashinfers_tile_refusal(tmp_path):
    log = tmp_path / "cuda.log"
    log.write_text("RuntimeError: BatchPrefillWithRaggedKVCache failed with error invalid configuration argument\n")
    assert one(log)["rule"] != "kernel.unsupported_hw.flashinfer_no_kernel_config"


def test_fa3_fp8_kv_cache_on_ada_inside_the_capture_wrapper_switches_to_triton():
    inc = one(KERNEL / "kernels32_fa3_fp8_kv_ada_capture.log")
    assert inc["rule"] == "kernel.unsupported_hw.fa3_dtype_below_sm90"
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}


def test_fa3_dtype_refusal_from_cpp_frames_only():
    inc = one(KERNEL / "kernels32_fa3_fp8_kv_ampere_cpp_frames.log")
    assert inc["rule"] == "kernel.unsupported_hw.fa3_dtype_below_sm90"


@pytest.mark.parametrize("fixture", ["kernels32_fa3_v_headdim_hopper_only.log", "kernels32_fa3_qv_hopper_bare.log"])
def test_fa3_hopper_only_variants(fixture):
    inc = one(KERNEL / fixture)
    assert inc["rule"] == "kernel.unsupported_hw.fa3_hopper_only_variant"
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}


def test_fa_head_size_over_256():
    assert one(KERNEL / "kernels32_fa3_head_dim_over_256.log")["rule"] == "kernel.unsupported_hw.fa_head_size"


def test_int8_gemm_on_turing_runs_the_model_in_float16():
    inc = one(KERNEL / "kernels32_int8_gemm_sm75_bf16.log")
    assert inc["rule"] == "kernel.unsupported_hw.int8_gemm_sm75_half"
    assert inc["remediation"]["set"] == {"--dtype": "float16"}


@pytest.mark.parametrize("fixture", ["kernels32_triton_libcuda_not_found.log", "kernels32_triton_libcuda_bare.log"])
def test_triton_libcuda_lookup_names_the_directory_variable_with_a_placeholder(fixture):
    inc = one(KERNEL / fixture)
    assert inc["rule"] == "kernel.build.triton_libcuda_not_found"
    assert inc["category"] == "kernel.build"
    # the value is the user's: a placeholder, never a path taken from the log
    (value,) = inc["remediation"]["env"].values()
    assert set(inc["remediation"]["env"]) == {"TRITON_LIBCUDA_PATH"} and value.startswith("<")
    assert "/usr/lib/wsl" not in value


def test_triton_with_no_active_driver_is_no_visible_gpu():
    inc = one(KERNEL / "kernels32_triton_no_active_driver.log")
    assert inc["rule"] == "kernel.unsupported_hw.triton_no_active_driver"
    assert inc["remediation"]["set"] == {} and inc["remediation"]["needs_human"]


def test_the_cutlass_device_abort_line_names_the_failure_not_the_cuda_error_after_it():
    inc = one(KERNEL / "kernels32_cutlass_arch_conditional_launch_failure.log")
    assert inc["rule"] == "kernel.unsupported_hw.cutlass_arch_conditional"
    assert inc["category"] == "kernel.unsupported_hw"


def test_without_the_device_line_an_unspecified_launch_failure_stays_a_crash(tmp_path):
    log = tmp_path / "lf.log"
    log.write_text("RuntimeError: CUDA error: unspecified launch failure\n")
    assert one(log)["rule"] != "kernel.unsupported_hw.cutlass_arch_conditional"


def test_flashinfer_backend_capability_refusal_for_mm_fp4_takes_marlin():
    inc = one(KERNEL / "kernels32_flashinfer_mm_fp4_backend_capability.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_backend_capability"
    assert inc["remediation"]["set"] == {"--fp4-gemm-backend": "marlin"}


def test_flashinfer_no_auto_backend_without_frames_is_advice():
    inc = one(KERNEL / "kernels32_flashinfer_no_auto_backend_bare.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_backend_capability"
    assert inc["remediation"]["set"] == {} and inc["remediation"]["needs_human"]


def test_flashinfer_sm120_with_an_old_toolkit_is_a_build_failure():
    inc = one(KERNEL / "kernels32_flashinfer_sm120_cuda_too_old.log")
    assert inc["rule"] == "kernel.build.flashinfer_sm12x_cuda_too_old"
    assert inc["category"] == "kernel.build"


@pytest.mark.parametrize("fixture", ["kernels32_flashinfer_cubin_version_mismatch.log",
                                     "kernels32_flashinfer_jit_cache_mismatch_bare.log"])
def test_flashinfer_companion_wheel_mismatch_is_an_install_problem(fixture):
    inc = one(ROOT / "fixtures/other" / fixture)
    assert inc["rule"] == "other.flashinfer_companion_version_mismatch"
    assert inc["category"] == "other"
    assert inc["remediation"]["env"] == {"FLASHINFER_DISABLE_VERSION_CHECK": "1"}


def test_flashinfers_ignored_companion_warning_on_a_healthy_launch_is_no_incident(tmp_path):
    log = tmp_path / "healthy.log"
    log.write_text(
        "[2026-07-02 08:00:12] WARNING env.py:88: Ignoring incompatible flashinfer-cubin package (cubins will be "
        "downloaded on demand to /root/.cache/flashinfer/cubins): flashinfer-cubin version (0.6.13) does not match "
        "flashinfer version (0.7.2). Run `flashinfer download-kernels` to install matching kernel wheels, or set "
        "FLASHINFER_DISABLE_VERSION_CHECK=1 to use the installed version anyway.\n"
        "[2026-07-02 08:00:41] The server is fired up and ready to roll!\n")
    assert explain_incidents(log) == []


def test_flashinfer_capture_unsafe_refusal_is_a_capture_failure():
    inc = one(ROOT / "fixtures/cuda_graph/kernels32_flashinfer_cudnn_plan_in_capture.log")
    assert inc["rule"] == "cuda_graph.flashinfer_capture_unsafe"
    assert inc["category"] == "cuda_graph"
    assert inc["remediation"]["set"] == {"--disable-cuda-graph": True}


@pytest.mark.parametrize("fixture, variable", [("kernels32_triton_cache_permission_denied.log", "TRITON_CACHE_DIR"),
                                               ("kernels32_flashinfer_cache_read_only.log", "FLASHINFER_WORKSPACE_BASE")])
def test_an_unwritable_jit_cache_names_the_cache_variable_not_another_backend(fixture, variable):
    inc = one(KERNEL / fixture)
    assert inc["rule"] == "kernel.build.jit_cache_dir_not_writable"
    assert inc["remediation"]["set"] == {}
    assert set(inc["remediation"]["env"]) == {variable}
    assert inc["remediation"]["env"][variable].startswith("<")  # the user's directory, never a log path


def test_a_permission_error_elsewhere_is_not_the_jit_cache(tmp_path):
    log = tmp_path / "perm.log"
    log.write_text("PermissionError: [Errno 13] Permission denied: '/models/Qwen3-8B/config.json'\n")
    assert one(log)["rule"] != "kernel.build.jit_cache_dir_not_writable"


def test_nvrtc_older_than_the_gpu_is_a_build_toolchain_problem():
    inc = one(KERNEL / "kernels32_nvrtc_unknown_arch.log")
    assert inc["rule"] == "kernel.build.nvrtc_unknown_arch"
    assert inc["category"] == "kernel.build"
    assert inc["remediation"]["set"] == {} and inc["remediation"]["needs_human"]


@pytest.mark.parametrize("fixture", ["kernels32_inductor_lowering_exception_bare.log", "kernels32_inductor_cpp_compile_error.log"])
def test_inductors_own_exception_types_name_torch_compile(fixture):
    inc = one(KERNEL / fixture)
    assert inc["rule"] == "kernel.build.torch_inductor_exception"
    assert inc["category"] == "kernel.build"


def test_backend_compiler_failed_keeps_its_own_rule():
    rules = {inc["rule"] for inc in explain_incidents(KERNEL / "torch_compile_inductor_059.log")}
    assert rules == {"kernel.build.torch_compile"}
