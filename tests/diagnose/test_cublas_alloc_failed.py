"""cuBLAS's CUBLAS_STATUS_ALLOC_FAILED (field32): an allocation inside cuBLAS failed (a cudaMalloc,
e.g. torch's lazy cublasCreate(handle) at the first GEMM on a stream), so the GPU is out of
memory, not a crash of the forward:

- under a scheduler traceback while serving: memory.cuda_oom, with advice to free the GPU and a
  smaller --mem-fraction-static computed from the log's own value;
- the other cuBLAS statuses (here CUBLAS_STATUS_EXECUTION_FAILED) are not memory and keep their
  own reading.
Real ``sglang-doctor explain`` subprocesses on a fixture file (or a file derived from it)."""

from pathlib import Path

from conftest import explain_incidents

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "memory" / "cublas_alloc_failed_serving_0523.log"


def _only(path):
    incidents = explain_incidents(path)
    assert len(incidents) == 1, [i["rule"] for i in incidents]
    return incidents[0]


def test_cublas_alloc_failed_while_serving_is_the_gpu_out_of_memory():
    inc = _only(FIXTURE)
    assert (inc["rule"], inc["category"], inc["phase"]) == (
        "memory.cuda_oom.cublas_alloc_failed", "memory.cuda_oom", "serving")
    assert "0.93" in inc["explanation"]
    assert inc["remediation"]["set"] == {"--mem-fraction-static": 0.88}
    assert inc["remediation"]["needs_human"]


def test_another_cublas_status_is_not_read_as_memory(tmp_path):
    log = tmp_path / "execution_failed.log"
    log.write_text(FIXTURE.read_text().replace("CUBLAS_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_EXECUTION_FAILED"))
    inc = _only(log)
    assert inc["category"] != "memory.cuda_oom"
