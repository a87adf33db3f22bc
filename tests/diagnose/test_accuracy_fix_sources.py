"""bench/accuracy.py counts a fix from the guarded step of the summary's fallback (a text that
formed no incident), says which fix hits were firm and which guarded advice, and does not
take a change the wrong way for a ``<lower ...>`` placeholder.  Real files, the real CLI."""

import sys

import pytest

from conftest import ROOT

KV_LINE = "[2026-05-09 10:00:01 TP0] KV Cache is allocated. #tokens: 274934, K size: 8.99 GB, V size: 8.99 GB\n"
OOM = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture
    out = run_once()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.
"""


@pytest.fixture(scope="module")
def accuracy():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import accuracy
    finally:
        sys.path.pop(0)
    return accuracy


def label(name: str, category: str, flags: dict, evidence: bool) -> dict:
    return {"file": name, "category": category, "evidence_in_log": evidence, "best_guess_category": category,
            "fix_flags": flags}


def test_a_fix_from_the_summary_fallback_counts_as_guarded(accuracy, tmp_path):
    # a text that ends right after its KV pool was allocated: the guarded step of the memory
    # guess lowers the fraction (the pools fitted: what failed after them ran in the headroom)
    path = tmp_path / "kv.log"
    path.write_text(KV_LINE)
    res = accuracy.score_file(path, label(path.name, "memory.cuda_oom", {"--mem-fraction-static": "<lower>"}, False),
                              "t", 120)
    assert res.incidents == 0 and res.fallback_from_summary
    assert res.fix_hit is True and res.fix_from == "guarded"
    s = accuracy.summarize([res])
    assert s["fix"]["hits"] == 1 and s["fix_from"] == {"firm": 0, "guarded": 1}


def test_a_higher_placeholder_is_not_met_by_a_lowering(accuracy, tmp_path):
    path = tmp_path / "kv.log"
    path.write_text(KV_LINE)
    wanted = {"--mem-fraction-static": "<higher than the value used>"}
    res = accuracy.score_file(path, label(path.name, "memory.kv_pool", wanted, False), "t", 120)
    assert res.fix_hit is False and res.fix_from is None


def test_a_rule_s_fix_counts_as_firm(accuracy, tmp_path):
    path = tmp_path / "oom.log"
    path.write_text(OOM)
    wanted = {"--mem-fraction-static": "<lower than the value used>"}
    res = accuracy.score_file(path, label(path.name, "memory.cuda_oom", wanted, True), "t", 120)
    assert res.incidents == 1 and res.rule != "unknown", res
    assert res.fix_hit is True and res.fix_from == "firm"
    assert accuracy.summarize([res])["fix_from"] == {"firm": 1, "guarded": 0}


def test_a_missed_fix_says_why_in_the_aggregates(accuracy, tmp_path):
    # the CUDA OOM in graph capture gets its fix, but a label that wants another flag is a miss
    # "other flags", a label of another category a miss "wrong category"; a healthy text with
    # an incident counts under the answered category
    path = tmp_path / "oom.log"
    path.write_text(OOM)
    other = accuracy.score_file(path, label(path.name, "memory.cuda_oom", {"--tp-size": 2}, True), "t", 120)
    assert other.fix_hit is False and other.fix_miss == "other flags", other
    wrong = accuracy.score_file(path, label(path.name, "nccl", {"--tp-size": 2}, True), "t", 120)
    assert wrong.fix_miss == "wrong category"
    alarm = accuracy.score_file(path, {"file": path.name, "category": "none", "evidence_in_log": False}, "t", 120)
    s = accuracy.summarize([other, wrong, alarm])
    assert s["per_category"]["memory.cuda_oom"]["fix_missed_because"] == {"other flags": 1}
    assert s["per_category"]["nccl"]["missed_as"] == {"memory.cuda_oom": 1}
    assert s["false_alarms"]["as"] == {"memory.cuda_oom": 1}
