"""rules/kernel_capability.yaml: kernel libraries that refuse the GPU below SGLang's own checks
(FlashInfer's TRT-LLM-gen runners, DeepGEMM's host assert, an Ascend operator's 8-dimension
limit).  Each test runs the real CLI on a real file: the shipped fixtures, or a log written
to tmp_path from SGLang's own message where the case is a variant of one."""

from __future__ import annotations


from conftest import ROOT, explain_incidents


incidents = explain_incidents


def test_flashinfer_trtllm_gen_runner_refusing_the_gpu_switches_the_attention_backend():
    (inc,) = incidents(ROOT / "fixtures/kernel/trtllm_gen_fmha_arch_sm120.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.trtllm_gen_arch"
    assert inc["category"] == "kernel.unsupported_hw"
    assert "TllmGenFmhaRunner" in inc["title"]
    # the launch set no backend: nothing to remove, the portable backend instead
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}
    assert inc["remediation"]["unset"] == []


def test_the_one_line_paste_of_the_runner_error_is_named_too():
    (inc,) = incidents(ROOT / "fixtures/kernel/trtllm_gen_fmha_arch_one_line.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.trtllm_gen_arch"


def test_a_trtllm_backend_the_launch_chose_is_removed_first(tmp_path):
    text = (ROOT / "fixtures/kernel/trtllm_gen_fmha_arch_sm120.log").read_text()
    log = tmp_path / "trtllm_mla_set.log"
    log.write_text(text.replace("attention_backend=None, prefill", "attention_backend='trtllm_mla', prefill", 1))
    (inc,) = incidents(log, "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.trtllm_gen_arch"
    assert inc["remediation"]["unset"] == ["--attention-backend"]


def test_a_models_unsupported_architecture_is_not_a_kernel_refusing_the_gpu(tmp_path):
    # sglang 0.5.9 srt/configs/internvl.py:327: the InternVL LLM's architecture name
    log = tmp_path / "internvl.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/configs/internvl.py", line 327, in __init__\n'
        "    raise ValueError(\n"
        "ValueError: Unsupported architecture: InternLM3ForCausalLM\n")
    (inc,) = incidents(log)
    assert inc["rule"] not in ("kernel.unsupported_hw.trtllm_gen_arch", "kernel.unsupported_hw.deepgemm_arch")
    assert inc["category"] != "kernel.unsupported_hw"


def test_deepgemm_refusing_the_gpu_in_a_models_own_attention_has_no_switch():
    (inc,) = incidents(ROOT / "fixtures/kernel/deepgemm_arch_dsv4_sm120.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.deepgemm_arch"
    # the indexer calls DeepGEMM directly: turning its JIT GEMMs off is not proposed as the fix
    assert inc["remediation"]["env"] == {} and inc["remediation"]["needs_human"]


def test_deepgemm_refusing_the_gpu_under_sglangs_wrapper_turns_its_jit_off(tmp_path):
    log = tmp_path / "deepgemm_wrapper.log"
    log.write_text(
        "[2026-04-27 23:40:50 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/quantization/fp8_kernel.py", line 1042, in w8a8_block_fp8_matmul_deepgemm\n'
        "    deep_gemm_wrapper.gemm_nt_f8f8bf16((A, As), (B, Bs), C)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/deep_gemm_wrapper/entrypoint.py", line 83, in gemm_nt_f8f8bf16\n'
        "    deep_gemm.fp8_gemm_nt(lhs, rhs, out)\n"
        "RuntimeError: Assertion error (csrc/apis/gemm.hpp:112): Unsupported architecture\n")
    (inc,) = incidents(log, "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.deepgemm_arch"
    assert inc["remediation"]["env"].get("SGLANG_ENABLE_JIT_DEEPGEMM") == "0"


def test_the_npu_eight_dimension_limit_turns_to_the_pil_image_processor_in_each_releases_spelling():
    log = ROOT / "fixtures/kernel/npu_aclnn_8_dims_warmup.log"
    (old,) = incidents(log, "--sglang-version", "0.5.9")
    assert old["rule"] == "kernel.unsupported_hw.npu_aclnn_max_dims"
    assert old["remediation"]["set"] == {"--disable-fast-image-processor": True}
    (new,) = incidents(log, "--sglang-version", "0.5.23")
    assert new["remediation"]["set"] == {"--image-processor-backend": "pil"}


def test_another_npu_operator_error_is_not_the_dimension_limit():
    incs = incidents(ROOT / "fixtures/runtime/npu_kernel_exception_serving.log")
    assert incs and all(i["rule"] != "kernel.unsupported_hw.npu_aclnn_max_dims" for i in incs)


def test_flashinfers_own_no_kernel_image_line_without_a_traceback_switches_to_triton():
    # both of FlashInfer's backends leave it (its sampling kernels come from the same build:
    # remedies.FEATURES["flashinfer"]), the attention backend alone stays an alternative
    (inc,) = incidents(ROOT / "fixtures/kernel/flashinfer_no_kernel_image_line.log", "--sglang-version", "0.5.9")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_no_kernel_image"
    assert inc["remediation"]["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert {"--attention-backend": "triton"} in [alt["set"] for alt in inc["remediation"]["alternatives"]]


def test_torchs_no_kernel_image_outside_flashinfer_keeps_the_general_rule():
    incs = incidents(ROOT / "fixtures/kernel/no_kernel_image_059.log")
    assert [i["rule"] for i in incs] == ["kernel.unsupported_hw.no_kernel_image"]


# --- session 23 (hw23): capability refusals found in free threads ---

def test_pdmux_refusing_a_blackwell_gpu_removes_enable_pdmux():
    # sglang#32933: the paste lost the frames' line numbers, so only the message names it
    (inc,) = incidents(ROOT / "fixtures/kernel/pdmux_arch_sm120.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.pdmux_arch"
    assert inc["category"] == "kernel.unsupported_hw"
    assert "12.0" in inc["title"]
    assert inc["remediation"]["unset"] == ["--enable-pdmux"]


def test_flash_attention_4s_longer_capability_message_is_not_pdmux(tmp_path):
    # sglang 0.5.23 kernels/ops/attention/flash_attn/cute/interface.py:1602
    log = tmp_path / "fa4_cc.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/kernels/ops/attention/flash_attn/cute/interface.py", line 1602, in _flash_attn_fwd\n'
        "    raise ValueError(\n"
        "ValueError: Unsupported compute capability: 12. Supported: 8.x, 9.x, 10.x, 11.x, and architectures registered through the forward-host bridge\n")
    (inc,) = incidents(log, "--sglang-version", "0.5.23")
    assert inc["rule"] != "kernel.unsupported_hw.pdmux_arch"
    assert "--enable-pdmux" not in inc["remediation"]["unset"]


def test_deep_gemm_undefined_names_deepgemm_turned_off_and_asks_which_condition():
    (inc,) = incidents(ROOT / "fixtures/kernel/deepgemm_disabled_nameerror_sm120.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "kernel.unsupported_hw.deepgemm_not_enabled"
    assert inc["category"] == "kernel.unsupported_hw"
    # the log does not say which condition failed: advice with the command, no change
    assert inc["remediation"]["set"] == {} and inc["remediation"]["env"] == {}
    assert "SGLANG_ENABLE_JIT_DEEPGEMM" in inc["remediation"]["note"]


def test_another_undefined_name_is_not_deepgemm(tmp_path):
    log = tmp_path / "other_name.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/deep_gemm_wrapper/entrypoint.py", line 244, in tf32_hc_prenorm_gemm\n'
        "    deep_gemm_ext.tf32_hc_prenorm_gemm(x)\n"
        "NameError: name 'deep_gemm_ext' is not defined\n")
    (inc,) = incidents(log)
    assert inc["rule"] != "kernel.unsupported_hw.deepgemm_not_enabled"


def test_hip_invalid_device_function_is_rocms_no_kernel_image():
    (inc,) = incidents(ROOT / "fixtures/kernel/hip_invalid_device_function_r9700.log")
    assert inc["rule"] == "kernel.unsupported_hw.hip_invalid_device_function"
    assert inc["category"] == "kernel.unsupported_hw"


def test_hip_invalid_device_function_while_serving_is_still_the_gpu_not_a_serving_crash(tmp_path):
    log = tmp_path / "hip_serving.log"
    log.write_text(
        "[2026-01-01 00:00:00] The server is fired up and ready to roll!\n"
        "[2026-01-01 00:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 10, in event_loop_normal\n'
        "    self.run_batch(batch)\n"
        "RuntimeError: HIP error: invalid device function\n")
    (inc,) = incidents(log)
    assert inc["category"] == "kernel.unsupported_hw"


def test_torchs_incompatible_architecture_warning_names_the_crash_that_follows():
    incs = incidents(ROOT / "fixtures/kernel/torch_arch_incompatible_sm120_crash.log")
    assert incs[0]["rule"] == "kernel.unsupported_hw.torch_arch_incompatible"
    assert "sm_120" in incs[0]["title"]
    assert all(i["category"] == "kernel.unsupported_hw" for i in incs)


def test_torchs_incompatible_architecture_warning_before_a_ready_server_is_no_incident(tmp_path):
    text = (ROOT / "fixtures/kernel/torch_arch_incompatible_sm120_crash.log").read_text().splitlines()
    log = tmp_path / "warned_then_ready.log"
    # the warning block as torch prints it, then the same launch getting ready
    log.write_text("\n".join(text[2:8]) + "\n[2026-01-01 00:00:09] The server is fired up and ready to roll!\n")
    assert incidents(log) == []
