"""The --mem-fraction-static step from the log's own memory figures (remedy/memory_fit.py,
issue 12): a pool that did not fit is raised past the bound the ``Load weight end`` line gives,
an OOM outside the pools is lowered by what torch missed; the entry's fixed step stays the
floor, a bound past the safe maximum gives no step, and no figures leave the fixed step."""

from __future__ import annotations

from pathlib import Path

from conftest import explain_one_incident

from sglang_doctor.model import Diagnosis, Incident, Launch, Line, Milestone
from sglang_doctor.remedy import memory_fit

ROOT = Path(__file__).resolve().parents[2]
POOL = ROOT / "fixtures" / "memory" / "kv_pool_not_enough_059.log"
LOAD_LINE = "avail mem=8.16 GB, mem usage=15.05 GB."


def _pool_log(tmp_path, avail: float, usage: float, mfs: str = "0.88") -> Path:
    text = POOL.read_text(encoding="utf-8")
    assert LOAD_LINE in text and "mem_fraction_static=0.88" in text
    text = text.replace(LOAD_LINE, f"avail mem={avail} GB, mem usage={usage} GB.")
    text = text.replace("mem_fraction_static=0.88", f"mem_fraction_static={mfs}")
    log = tmp_path / "pool.log"
    log.write_text(text, encoding="utf-8")
    return log


def _changes(rem):
    return [r["set"] for r in [rem, *rem["alternatives"]] if r.get("set")]


def test_the_raise_passes_the_bound_the_weights_set(tmp_path):
    # 8 of 68 GB left after the weights: SGLang reserves 1 - f of 68, so f must pass 1 - 8/68 = 0.882
    rem = explain_one_incident(_pool_log(tmp_path, 8.0, 60.0, "0.8"), "--sglang-version", "0.5.9")["remediation"]
    assert rem["set"] == {"--mem-fraction-static": 0.92}  # 0.882 + 0.03, rounded up; the fixed step gave 0.83
    assert "from the log's own figures" in rem["note"] and "0.882" in rem["note"]
    assert rem["provenance"]["--mem-fraction-static"]["source"] == "planner"


def test_the_fixed_step_stays_the_floor(tmp_path):
    # the weights' bound (0.648) is far below the launch's 0.88: the figures add nothing
    rem = explain_one_incident(_pool_log(tmp_path, 8.16, 15.05), "--sglang-version", "0.5.9")["remediation"]
    assert rem["set"] == {"--mem-fraction-static": 0.91} and "own figures" not in rem["note"]


def test_a_bound_past_the_safe_maximum_gives_no_raise(tmp_path):
    # 2 of 80 GB left: the pools need a fraction past 0.975, beyond the rule's 0.93
    rem = explain_one_incident(_pool_log(tmp_path, 2.0, 78.0, "0.85"), "--sglang-version", "0.5.9")["remediation"]
    assert all("--mem-fraction-static" not in s for s in _changes(rem))
    assert rem["needs_human"] and rem["safe"] is False and rem["set"] == {}
    assert "past the safe maximum 0.93" in rem["note"] and "--tp-size" in rem["note"]


def _oom(text: str, mfs_line: int = 5) -> Diagnosis:
    incident = Incident(kind="traceback", first_line=mfs_line, last_line=mfs_line,
                        lines=[Line(number=mfs_line, text=text)])
    return Diagnosis(incident=incident, rule="r", category="memory.cuda_oom",
                     launch=Launch(index=0, line=1, server_args={"mem_fraction_static": 0.9}))


def test_the_lower_step_covers_what_torch_missed():
    d = _oom("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total "
             "capacity of 79.11 GiB of which 1.00 GiB is free.")
    step, why = memory_fit.lower_step(d)
    assert step == 0.07 and "5.00 GiB" in why  # (6 - 1 + 0.5) / 79.11 = 0.0695, rounded up
    small = _oom("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.11 GiB "
                 "of which 4.00 MiB is free.")
    assert memory_fit.lower_step(small)[0] == memory_fit._MIN_STEP
    assert memory_fit.lower_step(_oom("CUDA out of memory. Tried to allocate 20.00 MiB.")) is None  # no size


def test_weights_bound_reads_the_tightest_rank_before_the_failure():
    d = _oom("RuntimeError: Not enough memory.", mfs_line=10)
    d.launch.milestones = [
        Milestone(name="load_weights_end", line=3, rank="TP0", figures={"avail_mem_gb": "20.0", "mem_usage_gb": "60.0"}),
        Milestone(name="load_weights_end", line=4, rank="TP1", figures={"avail_mem_gb": "10.0", "mem_usage_gb": "70.0"}),
        Milestone(name="load_weights_end", line=12, rank="TP0", figures={"avail_mem_gb": "1.0", "mem_usage_gb": "79.0"}),
    ]
    bound, why = memory_fit.weights_bound(d)
    assert round(bound, 3) == 0.875 and "line 4" in why  # TP1's, not the later launch's line 12
    d.launch.milestones = [Milestone(name="load_weights_end", line=3, figures={"avail_mem_gb": "x"})]
    assert memory_fit.weights_bound(d) is None
