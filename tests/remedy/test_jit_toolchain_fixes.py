"""Session 29 (kfix29): the JIT-build and FP8-capability fixes people confirm in threads, from
the libraries' own words.  The CLI runs as a real subprocess on small texts (each one the
library's message as its source spells it):

- DeepGEMM's own compiler failure ("NVCC compilation failed: " + nvcc's output; its
  ``jit/compiler.hpp`` assertion) turns DeepGEMM's JIT off first (both spellings of the switch);
- FlashInfer's "Could not find nvcc" leaves FlashInfer (Triton attention, PyTorch sampling)
  before asking for CUDA_HOME; torch's "CUDA_HOME environment variable is not set" does not;
- a missing ``ninja`` executable is its own kernel.build failure, with the FlashInfer-free
  launch first when FlashInfer's build is the one in the frames and the install advice next;
- Triton's cast assertion for e4m3 on SM<89 is the fp8e4nv failure, as its dtype refusal is."""

from __future__ import annotations

from conftest import explain_one_incident

DEEPGEMM_ENV = {"SGLANG_ENABLE_JIT_DEEPGEMM": "0", "SGL_ENABLE_JIT_DEEPGEMM": "0"}


def _changes(rem):
    return [rem, *rem["alternatives"]]


def _one(tmp_path, text: str) -> dict:
    log = tmp_path / "fragment.log"
    log.write_text(text)
    return explain_one_incident(log)


def test_deepgemm_compiler_assertion_turns_deepgemm_jit_off_first(tmp_path):
    inc = _one(tmp_path, 'RuntimeError: Assertion error (csrc/apis/../jit_kernels/impls/../../jit/compiler.hpp:176): '
                         'false and "NVCC compilation failed"\n')
    assert inc["rule"] == "kernel.build.deep_gemm_jit_failed"
    assert inc["remediation"]["env"] == DEEPGEMM_ENV


def test_deepgemms_nvcc_words_turn_deepgemm_jit_off_before_asking_for_a_toolkit(tmp_path):
    inc = _one(tmp_path, "NVCC compilation failed: nvcc fatal   : Unsupported gpu architecture 'sm_100f'\n")
    assert inc["rule"] == "kernel.build.nvcc_unsupported_arch"
    assert inc["remediation"]["env"] == DEEPGEMM_ENV
    assert "CUDA_HOME" in inc["remediation"]["alternatives"][0]["env"]


def test_nvcc_own_words_alone_do_not_name_deepgemm(tmp_path):
    inc = _one(tmp_path, "nvcc fatal   : Unsupported gpu architecture 'sm_100f'\n")
    assert all(not (c.get("env") or {}).get("SGLANG_ENABLE_JIT_DEEPGEMM") for c in _changes(inc["remediation"]))


def test_flashinfers_could_not_find_nvcc_leaves_flashinfer_before_cuda_home(tmp_path):
    inc = _one(tmp_path, "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist\n")
    assert inc["rule"] == "kernel.build.cuda_toolkit_missing"
    rem = inc["remediation"]
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert "CUDA_HOME" in rem["alternatives"][0]["env"]


def test_torchs_cuda_home_message_does_not_name_flashinfer(tmp_path):
    inc = _one(tmp_path, "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n")
    assert inc["rule"] == "kernel.build.cuda_toolkit_missing"
    assert all("--sampling-backend" not in (c.get("set") or {}) for c in _changes(inc["remediation"]))


def test_a_missing_ninja_is_its_own_build_failure(tmp_path):
    inc = _one(tmp_path, "RuntimeError: Ninja is required to load C++ extensions\n")
    assert inc["rule"] == "kernel.build.ninja_missing" and inc["category"] == "kernel.build"
    assert "pip install ninja" in " ".join(c.get("note") or "" for c in _changes(inc["remediation"]))


def test_tritons_e4m3_cast_assertion_is_the_fp8e4nv_failure(tmp_path):
    inc = _one(tmp_path, "[rank0]: AssertionError: fp8e4nv data type is not supported on CUDA arch < 89\n")
    assert inc["rule"] == "kernel.unsupported_hw.fp8e4nv" and inc["category"] == "kernel.unsupported_hw"
