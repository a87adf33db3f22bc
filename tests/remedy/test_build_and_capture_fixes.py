"""Issue 12 (session 22): kernel builds and CUDA graph captures get the fix their cause calls
for, through the CLI on real fixtures (real subprocesses).

- a JIT build that found no CUDA toolkit avoids the kernel whose build failed (the module in
  its frames picks the switch) and otherwise asks for the toolkit's root, never the
  /usr/local/cuda that torch had already looked in;
- DeepGEMM's failed nvcc build turns DeepGEMM's JIT off;
- a failed decode-graph capture offers more headroom before disabling the graphs only when
  its cause is a lack of memory."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident


def _changes(rem):
    return [rem, *rem["alternatives"]]


def test_no_toolkit_in_flashinfer_sampling_switches_the_sampler_then_asks_for_the_toolkit():
    inc = explain_one_incident(FIXTURES / "kernel" / "cuda_toolkit_missing_sampling_059.log")
    rem = inc["remediation"]
    assert inc["rule"] == "kernel.build.cuda_toolkit_missing" and inc["category"] == "kernel.build"
    # no toolkit builds FlashInfer's attention either: both leave it, the sampler alone next
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert rem["alternatives"][0]["set"] == {"--sampling-backend": "pytorch"}
    (home,) = [c["env"]["CUDA_HOME"] for c in _changes(rem) if "CUDA_HOME" in (c.get("env") or {})]
    assert home.startswith("<") and home.endswith(">")  # only the user knows where a toolkit is
    assert not any("/usr/local/cuda" == (c.get("env") or {}).get("CUDA_HOME") for c in _changes(rem))


def test_cuda_home_unset_inside_the_capture_switches_the_attention_backend():
    inc = explain_one_incident(FIXTURES / "kernel" / "cuda_home_not_set_capture_046.log")
    rem = inc["remediation"]
    # the wrapping "Capture cuda graph failed" is not the cause: the build is
    assert inc["rule"] == "kernel.build.cuda_toolkit_missing"
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert any("CUDA_HOME" in (c.get("env") or {}) for c in rem["alternatives"])
    assert not any("--disable-cuda-graph" in c["set"] for c in _changes(rem))


def test_deep_gemm_nvcc_failure_turns_deep_gemm_jit_off_in_both_spellings():
    inc = explain_one_incident(FIXTURES / "kernel" / "deep_gemm_nvcc_failed_059.log")
    rem = inc["remediation"]
    assert inc["rule"] == "kernel.build.deep_gemm_jit_failed"
    assert rem["env"] == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0", "SGL_ENABLE_JIT_DEEPGEMM": "0"}
    assert rem["tradeoff"]


def test_a_missing_cuda_header_names_the_header_and_avoids_the_build():
    inc = explain_one_incident(FIXTURES / "kernel" / "cuda_header_missing_flashinfer_059.log")
    assert inc["rule"] == "kernel.build.cuda_header_missing"
    assert "cuda_fp8.h" in inc["title"]
    assert inc["remediation"]["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}


def test_a_capture_failing_in_a_kernel_disables_the_graphs_before_adding_headroom():
    rem = explain_one_incident(FIXTURES / "cuda_graph" / "capture_failed_059.log")["remediation"]
    sets = [c["set"] for c in _changes(rem)]
    assert sets[0] == {"--cuda-graph-max-bs": 16}
    assert sets.index({"--disable-cuda-graph": True}) < next(
        i for i, s in enumerate(sets) if "--mem-fraction-static" in s)


def test_a_capture_that_ran_out_of_memory_adds_headroom_before_disabling_the_graphs(tmp_path):
    text = (FIXTURES / "cuda_graph" / "capture_failed_059.log").read_text()
    cause = ("BatchDecodeWithPagedKVCachePyTorchWrapper::BeginForward(at::Tensor, at::Tensor, at::Tensor, "
             "at::Tensor, at::Tensor, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
             "float, at::Tensor, at::Tensor) failed with error invalid argument")
    line = f"Exception: Capture cuda graph failed: {cause}"
    assert line in text
    oom = ("Exception: Capture cuda graph failed: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
           "unhandled cuda error, NCCL version 2.21.5; Failed to CUDA calloc 33554432 bytes: "
           "cudaErrorMemoryAllocation: out of memory")
    log = tmp_path / "capture_oom.log"
    log.write_text(text.replace(line, oom))
    inc = explain_one_incident(log)
    assert inc["rule"] == "cuda_graph.capture_failed_059"
    sets = [c["set"] for c in _changes(inc["remediation"])]
    assert "--mem-fraction-static" in sets[1]
    assert sets.index({"--disable-cuda-graph": True}) > 1


def test_frames_of_the_piecewise_runner_turn_off_the_prefill_graphs_in_the_releases_spelling():
    log = FIXTURES / "cuda_graph" / "piecewise_runner_frames_cut_0512.log"
    # decode graphs were captured ("Capture cuda graph end"); the piecewise runner failed after
    for version, first in [("0.5.12", {"--disable-piecewise-cuda-graph": True}),
                           ("0.5.23", {"--cuda-graph-backend-prefill": "disabled"})]:
        inc = explain_one_incident(log, "--sglang-version", version)
        assert inc["rule"] == "class.cuda_graph.runner" and inc["category"] == "cuda_graph"
        assert inc["remediation"]["set"] == first


def test_an_nvcc_older_than_the_gpu_names_the_architecture_and_avoids_the_build():
    inc = explain_one_incident(FIXTURES / "kernel" / "nvcc_unsupported_arch_flashinfer_059.log")
    rem = inc["remediation"]
    assert inc["rule"] == "kernel.build.nvcc_unsupported_arch" and "compute_120a" in inc["title"]
    assert rem["set"] == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert any("CUDA_HOME" in (c.get("env") or {}) for c in rem["alternatives"])
