"""Capability refusals whose way out is a setting (session 27): a Triton kernel the driver cannot
load (TRITON_PTXAS_PATH to a ptxas of the driver's CUDA), and a FlashInfer build with no kernels
for the GPU (both of FlashInfer's backends left at once: attention and sampling come from the
same build).  Real fixture files through the CLI as real subprocesses."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident


def _changes(rem):
    return [rem, *rem["alternatives"]]


def test_a_triton_kernel_image_the_driver_refuses_is_the_platform_not_the_moe_arguments():
    inc = explain_one_incident(FIXTURES / "kernel" / "triton_kernel_image_invalid_moe_059.log")
    assert inc["rule"] == "kernel.unsupported_hw.triton_kernel_image_invalid"
    assert inc["category"] == "kernel.unsupported_hw"
    rem = inc["remediation"]
    envs = [c["env"] for c in _changes(rem)]
    assert {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"} in envs
    changed = next(c for c in _changes(rem) if c["env"])
    assert "driver" in changed["tradeoff"] and not changed["set"] and not changed["unset"]


def test_the_ptx_toolchain_refusal_keeps_its_own_rule():
    inc = explain_one_incident(FIXTURES / "kernel" / "ptx_unsupported_toolchain.log")
    assert inc["rule"] == "kernel.unsupported_hw.ptx_newer_than_driver"


def test_flashinfer_without_kernels_for_the_gpu_leaves_both_of_its_backends():
    inc = explain_one_incident(FIXTURES / "kernel" / "flashinfer_cuda_error_no_kernel_image.log",
                               "--sglang-version", "0.5.9")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_no_kernel_image"
    rem = inc["remediation"]
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert "sampling" in rem["tradeoff"]
    # the attention switch alone stays an alternative
    assert {"--attention-backend": "triton"} in [c["set"] for c in rem["alternatives"]]


def test_a_launch_already_on_triton_attention_changes_only_the_sampler(tmp_path):
    text = (FIXTURES / "kernel" / "flashinfer_cuda_error_no_kernel_image.log").read_text()
    dump = ("[2026-01-10 10:00:00] server_args=ServerArgs(model_path='/models/Qwen2-7B', tp_size=1, "
            "attention_backend='triton', sampling_backend='flashinfer', kv_cache_dtype='auto')\n")
    log = tmp_path / "triton_attention_flashinfer_sampler.log"
    log.write_text(dump + text)
    rem = explain_one_incident(log, "--sglang-version", "0.5.9")["remediation"]
    sets = [c["set"] for c in _changes(rem)]
    assert {"--sampling-backend": "pytorch"} in sets
    assert not any(s.get("--attention-backend") == "triton" for s in sets)


def test_no_kernel_image_outside_flashinfer_proposes_no_flashinfer_change():
    rem = explain_one_incident(FIXTURES / "kernel" / "no_kernel_image_059.log")["remediation"]
    assert not any("--sampling-backend" in c["set"] for c in _changes(rem))
    assert rem["needs_human"]


def test_flashinfers_arch_check_leaves_flashinfer_and_asks_for_torchs_arch_list():
    inc = explain_one_incident(FIXTURES / "kernel" / "flashinfer_arch_list_below_sm75_capture_046.log")
    # FlashInfer's own refusal, not the capture wrapper's "Capture cuda graph failed"
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_arch_below_sm75"
    rem = inc["remediation"]
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    # FlashInfer 0.2.x's wording ("requires sm75+"): its list is torch's TORCH_CUDA_ARCH_LIST
    envs = [c["env"] for c in _changes(rem) if c["env"]]
    assert [list(e) for e in envs] == [["TORCH_CUDA_ARCH_LIST"]]
    assert envs[0]["TORCH_CUDA_ARCH_LIST"].startswith("<")  # only the user knows the GPU's


def test_the_later_wording_names_flashinfers_own_arch_list_and_keeps_triton_attention():
    inc = explain_one_incident(FIXTURES / "kernel" / "flashinfer_gpus_below_sm75_sampling_059.log")
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_arch_below_sm75"
    rem = inc["remediation"]
    # the launch already runs Triton attention (its dump): only the sampler leaves FlashInfer
    assert rem["set"] == {"--sampling-backend": "pytorch"}
    assert [list(c["env"]) for c in _changes(rem) if c["env"]] == [["FLASHINFER_CUDA_ARCH_LIST"]]
