"""A serving OOM in a prefill batch: the change is the flag that bounded that batch.  With
chunked prefill on, the chunk (--chunked-prefill-size); when the scheduler's last prefill batch
took more new tokens than any chunk the launch could have had, chunking was off and the batch
budget (--max-prefill-tokens) is what bounds it (remedy/prefill_budget.py; sgl-project/sglang
#1030: "it works with --max-prefill 4096").  NCCL's failed buffer allocation is the GPU out of
memory (rules/field30_faults.yaml).  Real subprocesses on the rules' fixtures."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident


def test_an_unchunked_prefill_batch_lowers_the_batch_budget_to_half_its_tokens():
    inc = explain_one_incident(FIXTURES / "memory" / "cuda_oom_prefill_unchunked_02x.log")
    assert inc["rule"] == "memory.cuda_oom.serving"
    # the smaller pool leads (the change confirmed most often, data/fix_evidence.yaml); the
    # batch budget is the first alternative
    assert "--mem-fraction-static" in inc["remediation"]["set"]
    rem = inc["remediation"]["alternatives"][0]
    # the batch line says 13938 new tokens: half of it on a power of two
    assert rem["set"] == {"--max-prefill-tokens": 4096}
    assert "chunked prefill was off" in rem["note"] and "13938" in rem["note"]
    assert rem["safe"] is False  # the launch's own budget is not in the log: asks first
    assert "--chunked-prefill-size" not in rem["set"]


def test_a_chunked_prefill_oom_still_halves_the_chunk():
    inc = explain_one_incident(FIXTURES / "memory" / "cuda_oom_prefill.log")
    assert inc["rule"] == "memory.cuda_oom.serving"
    named = [inc["remediation"], *inc["remediation"]["alternatives"]]
    assert not any("--max-prefill-tokens" in r["set"] for r in named)
    assert any("--chunked-prefill-size" in r["set"] for r in named)


def test_nccl_failing_to_allocate_its_buffers_is_out_of_memory_not_p2p():
    inc = explain_one_incident(FIXTURES / "memory" / "nccl_cuda_calloc_failed_0212.log")
    assert inc["rule"] == "memory.cuda_oom.nccl_buffer_alloc" and inc["category"] == "memory.cuda_oom"
    assert "--mem-fraction-static" in inc["remediation"]["set"]
    assert "NCCL_P2P_DISABLE" not in (inc["remediation"].get("env") or {})
    # the transport failure (no allocation in its last error) stays NCCL's
    other = explain_one_incident(FIXTURES / "nccl" / "unhandled_cuda_error_0523.log")
    assert other["rule"] == "nccl.unhandled_cuda_error"


def test_nan_probabilities_in_sampling_are_a_crash_with_advice_not_a_flag():
    inc = explain_one_incident(FIXTURES / "runtime" / "sampling_probability_nan_0117.log")
    assert inc["rule"] == "runtime.crash.sampling_nan_probabilities" and inc["category"] == "runtime.crash"
    rem = inc["remediation"]
    assert not rem["set"] and rem["needs_human"]


def test_a_shared_outlines_cache_database_is_the_environment_with_a_per_process_directory():
    inc = explain_one_incident(FIXTURES / "runtime" / "outlines_cache_sqlite_disk_io_error.log")
    assert inc["rule"] == "other.diskcache_sqlite_shared" and inc["category"] == "other"
    rem = inc["remediation"]
    assert not rem["set"] and list(rem["env"]) == ["OUTLINES_CACHE_DIR"] and rem["needs_human"]
