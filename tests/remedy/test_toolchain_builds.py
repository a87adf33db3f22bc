"""Session 26 (build26): JIT build failures that reach the log as toolchain output form an
incident of their own, name the step that failed, and get advice that fits the toolchain and the
failing module.  The CLI runs as a real subprocess on fixtures and tuned corpus files; the
architecture table (remedy/toolchain.py) is checked against the CUDA release notes' figures.

- nvcc's two words for an architecture it does not know (-gencode: "Unsupported gpu
  architecture 'compute_X'"; -arch: "Value 'sm_X' is not defined for option
  'gpu-architecture'"), with the CUDA release that knows it;
- nvcc's own diagnostics and ninja's FAILED line without ninja's last line or a traceback;
- SGLang's own JIT kernels (tvm-ffi) never get an attention-backend change;
- Triton's ptxas failing with its message in a temp file; Python.h missing."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, ROOT, explain_one_incident

from sglang_doctor.remedy.toolchain import first_cuda, toolkit_advice


def _changes(rem):
    return [rem, *rem["alternatives"]]


def _advice(rem) -> str:
    return " ".join(c.get("note") or "" for c in _changes(rem))


@pytest.mark.parametrize("arch, first", [
    ("sm_89", "11.8"), ("compute_90", "11.8"), ("sm_90a", "12.0"), ("compute_120a", "12.8"),
    ("sm_100", "12.8"), ("sm_100f", "12.9"), ("sm_121a", "12.9"), ("sm_103", "12.9"), ("sm_110", "13.0"),
])
def test_the_first_cuda_release_that_compiles_for_an_architecture(arch, first):
    assert first_cuda(arch) == first
    assert toolkit_advice(arch) == f"{arch} needs the nvcc of CUDA {first} or newer"


def test_an_architecture_cuda_13_dropped_asks_for_a_12x_toolkit_not_a_newer_one():
    advice = toolkit_advice("compute_70")
    assert "CUDA 9.0 to 12.9" in advice and "CUDA 13 dropped" in advice
    assert "or newer" not in advice


def test_the_architecture_cuda_13_renamed_is_not_sent_to_a_newer_toolkit():
    advice = toolkit_advice("sm_101")
    assert "12.8 and 12.9 only" in advice and "sm_110" in advice and "or newer" not in advice


@pytest.mark.parametrize("arch", ["sm_999", "gfx942", "compute_", "sm_120 ; rm -rf /"])
def test_an_architecture_the_table_does_not_know_claims_nothing(arch):
    assert first_cuda(arch) is None and toolkit_advice(arch) is None


def test_nvcc_arch_option_form_forms_an_incident_and_names_the_toolkit(tmp_path):
    log = tmp_path / "nvcc_arch.log"
    log.write_text("nvcc fatal   : Value 'sm_120' is not defined for option 'gpu-architecture'\n")
    inc = explain_one_incident(log)
    assert inc["rule"] == "kernel.build.nvcc_unsupported_arch" and "sm_120" in inc["title"]
    assert "sm_120 needs the nvcc of CUDA 12.8 or newer" in _advice(inc["remediation"])


def test_the_gencode_form_names_the_toolkit_after_the_backend_change():
    inc = explain_one_incident(FIXTURES / "kernel" / "nvcc_unsupported_arch_flashinfer_059.log")
    rem = inc["remediation"]
    # a FlashInfer build: both of its backends leave it (the same toolchain builds them)
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert "compute_120a needs the nvcc of CUDA 12.8 or newer" in _advice(rem)


def test_nvcc_errors_in_flashinfer_without_ninja_or_traceback_are_a_build_failure():
    inc = explain_one_incident(FIXTURES / "kernel" / "nvcc_compile_error_flashinfer_cut.log")
    assert inc["rule"] == "kernel.build.nvcc_compile_error" and inc["category"] == "kernel.build"
    assert inc["remediation"]["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}


def test_nvcc_errors_in_sglangs_own_jit_kernel_change_no_attention_backend():
    inc = explain_one_incident(FIXTURES / "kernel" / "nvcc_compile_error_jit_kernel_cut.log")
    assert inc["rule"] == "kernel.build.nvcc_compile_error"
    assert not any("--attention-backend" in c["set"] for c in _changes(inc["remediation"]))
    assert "~/.cache/tvm-ffi" in _advice(inc["remediation"])


def test_tvm_ffi_ninja_127_names_sglangs_jit_and_asks_for_the_toolkit():
    inc = explain_one_incident(FIXTURES / "kernel" / "tvm_ffi_ninja_127_capture_059.log")
    assert inc["rule"] == "kernel.build.tvm_ffi_build_failed" and "127" in inc["title"]
    rem = inc["remediation"]
    assert not any(c["set"] for c in _changes(rem))  # no flag avoids SGLang's own kernels
    (home,) = [c["env"]["CUDA_HOME"] for c in _changes(rem) if "CUDA_HOME" in (c.get("env") or {})]
    assert home.startswith("<") and home.endswith(">")


def test_a_tvm_ffi_link_failure_in_the_corpus_is_not_sent_to_the_triton_attention_backend():
    (log,) = (ROOT / "corpus" / "dev").glob("015-kernel.build-jit-rope-ld-cannot-find-cudart-*.log")
    from conftest import explain_incidents

    incs = explain_incidents(log)
    link = next(i for i in incs if i["rule"] == "kernel.build.jit_link_failed")
    assert not any("--attention-backend" in c["set"] for c in _changes(link["remediation"]))


def test_triton_ptxas_failure_names_the_assembly_step_and_advises_the_newer_ptxas():
    inc = explain_one_incident(FIXTURES / "kernel" / "triton_ptxas_failed_sm120_capture.log")
    assert inc["rule"] == "kernel.build.triton_ptxas_failed" and inc["category"] == "kernel.build"
    rem = inc["remediation"]
    assert rem["env"] == {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}
    assert rem["needs_human"] and not rem["safe"]  # a path the log cannot prove exists: advice
    assert "sm_120 needs the ptxas of CUDA 12.8 or newer" in rem["note"]


def test_triton_ptxas_failure_on_hopper_proposes_no_ptxas_path(tmp_path):
    text = (FIXTURES / "kernel" / "triton_ptxas_failed_sm120_capture.log").read_text()
    assert "--gpu-name=sm_120 " in text
    log = tmp_path / "ptxas_sm90.log"
    log.write_text(text.replace("--gpu-name=sm_120 ", "--gpu-name=sm_90a "))
    inc = explain_one_incident(log)
    assert inc["rule"] == "kernel.build.triton_ptxas_failed"
    assert not any("TRITON_PTXAS_PATH" in (c.get("env") or {}) for c in _changes(inc["remediation"]))


def test_python_h_missing_alone_asks_for_the_development_headers():
    inc = explain_one_incident(FIXTURES / "kernel" / "python_headers_missing_lines.log")
    assert inc["rule"] == "kernel.build.python_headers_missing"
    assert "python3.X-dev" in inc["remediation"]["note"]


def test_triton_compilation_error_is_a_build_failure_not_a_crash_while_serving(tmp_path):
    # the three lines of Triton's error alone (no ready line, no launch): a kernel build failed,
    # which no assumption about a ready server turns into a crash while serving
    log = tmp_path / "triton_compile.log"
    log.write_text("triton.compiler.errors.CompilationError: at 32:24:\n"
                   "    offs_d = tl.arange(0, BLOCK_DMODEL)\n    mask_d = offs_d < Lk\n")
    inc = explain_one_incident(log)
    assert inc["rule"] == "kernel.build.triton_compilation_error" and inc["category"] == "kernel.build"


def test_triton_compilation_error_in_the_triton_attention_backend_leaves_it():
    inc = explain_one_incident(FIXTURES / "kernel" / "triton_compilation_error_decode_attention.log")
    assert inc["rule"] == "kernel.build.triton_compilation_error"
    sets = [c["set"] for c in _changes(inc["remediation"])]
    assert {"--attention-backend": "flashinfer"} in sets
    assert not any(s.get("--attention-backend") == "triton" for s in sets)


def test_nvcc_refusing_the_host_gcc_names_it_and_keeps_its_override_as_advice():
    inc = explain_one_incident(FIXTURES / "kernel" / "nvcc_host_compiler_unsupported_flashinfer.log")
    assert inc["rule"] == "kernel.build.nvcc_host_compiler_unsupported" and "GNU" in inc["title"]
    rem = inc["remediation"]
    assert rem["env"] == {"NVCC_APPEND_FLAGS": "-allow-unsupported-compiler"}
    assert rem["needs_human"] and not rem["safe"]  # an override that may miscompile: never unattended
    assert "-ccbin" in rem["note"]


def test_gcc_without_gpp_asks_for_gpp_and_avoids_the_named_flashinfer_sampling_build():
    inc = explain_one_incident(FIXTURES / "kernel" / "no_cxx_compiler_cc1plus.log")
    assert inc["rule"] == "kernel.build.no_cxx_compiler"
    rem = inc["remediation"]
    assert "g++" in rem["note"] and rem["needs_human"]
    # the sampler's build failed; without g++ FlashInfer's attention build fails the same way:
    # both leave FlashInfer, the sampler alone is the next change
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert {"--sampling-backend": "pytorch"} in [c["set"] for c in rem["alternatives"]]


def test_the_shell_finding_no_cxx_in_a_tvm_ffi_build_changes_no_backend(tmp_path):
    log = tmp_path / "cxx_missing.log"
    log.write_text("FAILED: [code=127] cuda_0.o\n/bin/sh: 1: c++: not found\n")
    inc = explain_one_incident(log)
    assert inc["rule"] == "kernel.build.no_cxx_compiler"
    assert not any(c["set"] for c in _changes(inc["remediation"]))


def test_a_pip_source_build_of_a_kernel_package_is_a_build_failure_asking_for_a_wheel():
    inc = explain_one_incident(FIXTURES / "kernel" / "source_build_failed_pip_wheel.log")
    assert inc["rule"] == "kernel.build.source_build_failed" and inc["category"] == "kernel.build"
    assert "prebuilt wheel" in inc["remediation"]["note"]


def test_setuptools_compiler_line_alone_forms_a_build_incident(tmp_path):
    log = tmp_path / "setuptools.log"
    log.write_text("      error: command '/usr/bin/gcc' failed with exit code 1\n      [end of output]\n")
    assert explain_one_incident(log)["rule"] == "kernel.build.source_build_failed"
