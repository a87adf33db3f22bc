"""What matching costs as the rule pack grows: the full pack against a 10-rule subset.

Measures, each as the median of several runs:
- per incident: ``RuleSet.diagnose`` over the incidents of every fixture log (the incidents are
  assembled once, outside the timing, so only rule matching is measured);
- per boring line: the whole pipeline (scanner, assembler, rules) over a long serving log of
  ``Decode batch`` / ``Prefill batch`` / access lines with no failure in it;
- loading: ``RuleSet.load`` of the YAML files (paid once per process, and per file by
  ``explain`` today).

Run: ``.venv/bin/python bench/rules_cost.py [--runs N] [--lines N]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from sglang_doctor.pipeline import StreamPipeline, read_incidents
from sglang_doctor.diagnose.rules_engine import RuleSet, builtin_rules_dir

ROOT = Path(__file__).resolve().parent.parent
SUBSET = (  # ten common rules, one file's worth
    "memory.kv_pool.not_enough_memory", "memory.kv_pool.weights_leave_no_memory", "memory.kv_pool.truncated_model_runner",
    "memory.cuda_oom.generic", "memory.host_oom.scheduler_killed", "network.port.address_in_use",
    "other.missing_python_module", "args.invalid.unrecognized_arguments", "args.invalid.context_length_over_model",
    "nccl.unhandled_system_error",
)
BORING = (
    "[2026-05-09 10:{m:02d}:{s:02d} TP0] Decode batch, #running-req: 12, #token: {tok}, token usage: 0.04, "
    "cuda graph: True, gen throughput (token/s): 412.33, #queue-req: 0",
    "[2026-05-09 10:{m:02d}:{s:02d} TP0] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 0, token usage: 0.04, "
    "#running-req: 11, #queue-req: 0, input throughput (token/s): 3021.50, cuda graph: False",
    "[2026-05-09 10:{m:02d}:{s:02d}] INFO:     127.0.0.1:51734 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
)


def subset_ruleset() -> RuleSet:
    """The ten SUBSET rules, loaded from a scratch copy that keeps only them."""
    full = RuleSet.load(builtin=True, user=False)
    return RuleSet([full.get(rule_id) for rule_id in SUBSET])


def fixture_incidents() -> list[tuple]:
    out = []
    for path in sorted((ROOT / "fixtures").rglob("*.log")):
        launches, incidents = read_incidents(path)
        by_index = {launch.index: launch for launch in launches}
        out += [(inc, by_index.get(inc.launch_index)) for inc in incidents]
    return out


def boring_log(n: int) -> bytes:
    lines = [BORING[i % 3].format(m=(i // 60) % 60, s=i % 60, tok=4000 + i % 900) for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_incident_us(ruleset: RuleSet, incidents: list[tuple], runs: int) -> float:
    def go():
        for inc, launch in incidents:
            ruleset.diagnose(inc, launch)
    return median_time(go, runs) / len(incidents) * 1e6


def per_line_us(ruleset: RuleSet, data: bytes, n: int, runs: int) -> float:
    def go():
        pipe = StreamPipeline(ruleset, remediate=False)
        pipe.feed(data)
        pipe.finish()
        assert pipe.incident_count == 0
    return median_time(go, runs) / n * 1e6


def load_ms(rule_ids: tuple[str, ...] | None, runs: int) -> float:
    src = builtin_rules_dir()
    if rule_ids is None:
        return median_time(lambda: RuleSet.load(builtin=True, user=False), runs) * 1e3
    with tempfile.TemporaryDirectory() as tmp:
        # the subset's files only (whole files: a rule's YAML is not split out)
        wanted = {Path(RuleSet.load(builtin=True, user=False).get(r).source).name for r in rule_ids}
        for name in wanted:
            shutil.copy(src / name, Path(tmp) / name)
        return median_time(lambda: RuleSet.load([Path(tmp)], builtin=False, user=False), runs) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lines", type=int, default=60000)
    args = ap.parse_args()
    full, small = RuleSet.load(builtin=True, user=False), subset_ruleset()
    incidents = fixture_incidents()
    data = boring_log(args.lines)
    rows = []
    for name, rs in (("full pack", full), ("10-rule subset", small)):
        rows.append((name, len(rs.rules), len(rs.line_literals()),
                     per_incident_us(rs, incidents, args.runs), per_line_us(rs, data, args.lines, args.runs)))
    print(f"{len(incidents)} fixture incidents, {args.lines} boring lines, median of {args.runs} runs\n")
    print(f"{'pack':<16}{'rules':>6}{'literals':>10}{'us/incident':>14}{'us/line':>10}")
    for name, n, lits, inc_us, line_us in rows:
        print(f"{name:<16}{n:>6}{lits:>10}{inc_us:>14.1f}{line_us:>10.2f}")
    print(f"\nRuleSet.load, full pack: {load_ms(None, args.runs):.0f} ms "
          f"(files holding the subset: {load_ms(SUBSET, args.runs):.0f} ms)")


if __name__ == "__main__":
    main()
