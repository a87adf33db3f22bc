"""Session 35 (kernel35): the compiler's and loader's own lines of a run-time kernel build
(rules/kernel35_toolchain.yaml) are failures of their own -- a bare pasted line forms an
incident, behind the prefixes a paste carries (kubectl --timestamps, a Ray actor, journald, ANSI
colour) -- while the same tools' warnings never are.  Each test runs the real CLI on a log
written to tmp_path in the tool's own words (nvcc, ptxas, gcc, ninja, the dynamic loader)."""

from __future__ import annotations

import pytest

from conftest import ROOT, explain_incidents

KERNEL = ROOT / "fixtures/kernel"


def answers(tmp_path, text: str) -> list[dict]:
    log = tmp_path / "paste.log"
    log.write_text(text)
    return explain_incidents(log)


@pytest.mark.parametrize("text, rule", [
    ("2025-06-11T08:12:44.123456789Z nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n"
     "2025-06-11T08:12:44.223456789Z ninja: build stopped: subcommand failed.\n",
     "kernel.build.jit_compiler_killed"),
    ("(SGLangEngine pid=48213) ptxas error   : Entry function '_ZN10flashinfer24BatchPrefillKernelILj256EEEvv' "
     "uses too much shared data (0x1c000 bytes, 0x18c00 max)\n(SGLangEngine pid=48213) ninja: build stopped: subcommand failed.\n",
     "kernel.build.ptxas_too_much_shared_data"),
    ("Oct 02 11:04:53 gpu01 python3[2211]: nvcc fatal   : Value 'c++20' is not defined for option 'std'\n",
     "kernel.build.nvcc_cxx_standard_unsupported"),
    ("\x1b[31mptxas /tmp/tmpxft_1_00000000-6_k.ptx, line 88; error   : Feature '.bf16' requires .target sm_80 or higher\x1b[0m\n",
     "kernel.unsupported_hw.ptxas_instruction_needs_newer_gpu"),
    ("ptxas /tmp/tmpxft_2_00000000-6_k.ptx, line 9; error   : Instruction 'setmaxnreg' not supported on .target 'sm_100'\n",
     "kernel.build.ptxas_target_without_arch_suffix"),
    ("ImportError: /opt/conda/lib/libstdc++.so.6: version `CXXABI_1.3.15' not found (required by /opt/conda/lib/python3.11/"
     "site-packages/flashinfer/data/libflashinfer.so)\n",
     "other.native_library_needs_newer_libstdcxx"),
])
def test_a_toolchain_line_alone_is_an_incident_behind_a_paste_prefix(tmp_path, text, rule):
    (inc,) = answers(tmp_path, text)
    assert inc["rule"] == rule


def test_an_older_target_refusal_is_the_gpu_and_a_hopper_target_without_its_suffix_is_the_build(tmp_path):
    old = answers(tmp_path, "ptxas x.ptx, line 1; error   : Instruction 'mma with .e4m3' not supported on .target 'sm_86'\n")
    assert [i["category"] for i in old] == ["kernel.unsupported_hw"]
    hopper = answers(tmp_path, "ptxas x.ptx, line 1; error   : Instruction 'wgmma.fence' not supported on .target 'sm_90'\n")
    assert [i["category"] for i in hopper] == ["kernel.build"]


def test_the_compilers_cause_line_outranks_ninjas_summary_in_a_build_log():
    (inc,) = explain_incidents(KERNEL / "kernel35_ptxas_shared_data_ninja.log")
    assert inc["rule"] == "kernel.build.ptxas_too_much_shared_data"
    (inc,) = explain_incidents(KERNEL / "kernel35_nvcc_std_cxx20_sglang_jit_0523.log")
    assert inc["rule"] == "kernel.build.nvcc_cxx_standard_unsupported"


def test_a_killed_compiler_proposes_fewer_parallel_jobs_not_a_backend():
    (inc,) = explain_incidents(KERNEL / "kernel35_cicc_killed_fused_moe_build.log")
    assert inc["remediation"]["env"] == {"MAX_JOBS": "4"}
    assert inc["remediation"]["set"] == {}


def test_a_signal_other_than_sigkill_is_not_read_as_the_oom_killer(tmp_path):
    incs = answers(tmp_path, "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)\n"
                             "ninja: build stopped: subcommand failed.\n")
    assert "kernel.build.jit_compiler_killed" not in [i["rule"] for i in incs]


def test_toolchain_warnings_of_a_build_that_went_on_are_never_incidents():
    assert explain_incidents(KERNEL / "kernel35_jit_warnings_then_ready.log") == []


@pytest.mark.parametrize("line", [
    "nvcc warning : The 'compute_35', 'compute_37', 'sm_35', and 'sm_37' architectures are deprecated, and may be removed "
    "in a future release (Use -Wno-deprecated-gpu-targets to suppress warning).",
    "ptxas warning : Registers are spilled to local memory in function '_ZN10flashinfer6kernelEv', 8 bytes spill stores, 8 bytes spill loads",
    "ptxas info    : Used 128 registers, 0 bytes smem, 400 bytes cmem[0]",
    "/tmp/x.cu(50): warning #177-D: variable \"x\" was declared but never referenced",
])
def test_a_warning_line_alone_is_not_an_incident(tmp_path, line):
    log = tmp_path / "warn.log"
    log.write_text("[2025-06-11 08:12:44 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=30.12 GB, mem usage=14.32 GB.\n"
                   + line + "\n[2025-06-11 08:13:50] The server is fired up and ready to roll!\n")
    assert explain_incidents(log) == []


@pytest.mark.parametrize("text, rule", [
    ("torch.AcceleratorError: CUDA error: no CUDA-capable device is detected\n", "kernel.unsupported_hw.cuda_no_device_detected"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n", "kernel.unsupported_hw.cuda_devices_busy"),
    ("pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.\n",
     "kernel.unsupported_hw.nvml_driver_library_mismatch"),
    ("sglang-1  | NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.\n", "kernel.unsupported_hw.nvidia_smi_no_driver"),
])
def test_a_gpu_no_process_can_use_is_the_hardware_not_a_crash(tmp_path, text, rule):
    (inc,) = answers(tmp_path, text)
    assert (inc["rule"], inc["category"]) == (rule, "kernel.unsupported_hw")
