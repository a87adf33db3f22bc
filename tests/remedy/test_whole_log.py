"""Fixes that use the whole log: a change another launch already ran and died of is not proposed.

The seed log holds two launches that died the same way: launch 1 with --mem-fraction-static
0.85, launch 2 with 0.88 and --mamba-full-memory-ratio 0.5.
"""

import json
import subprocess

from conftest import FIXTURES, doctor_cmd

CONFIG = FIXTURES / "models" / "qwen3_6_27b_like.json"


def _incidents(*extra):
    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(FIXTURES / "seed" / "seed_full.log"), *extra),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    evs = [json.loads(line) for line in r.stdout.splitlines()]
    return [e for e in evs if e["event"] == "incident"], r.stderr


def _all_changes(rem):
    return [rem, *rem["alternatives"]]


def _mfs(rem):
    return rem["set"].get("--mem-fraction-static")


def test_without_config_launch_1_is_not_told_to_try_what_launch_2_tried():
    (one, two), _ = _incidents()
    for rem in _all_changes(one["remediation"]):
        assert _mfs(rem) != 0.88, rem
    note = one["remediation"]["note"]
    assert "launch 2 already tried --mem-fraction-static 0.88 with --mamba-full-memory-ratio 0.5" in note
    assert "the fraction is not the constraint" in note
    assert one["remediation"]["needs_human"] is True  # no proven change left: a human decides
    assert "--model-config" in note  # ... and is told what gets the missing part


def test_without_config_launch_2_gets_no_unmarked_raise():
    (_, two), _ = _incidents()
    rem = two["remediation"]
    assert rem["needs_human"] is True and rem["set"] == {}
    assert "launch 1 ran --mem-fraction-static 0.85 and this launch 0.88: both failed the same way" in rem["note"]
    for alt in rem["alternatives"]:  # what is still offered is marked and never applied unattended
        assert "UNPROVEN" in alt["tradeoff"] and alt["safe"] is False


def test_with_config_no_change_repeats_a_failed_launch_and_doubtful_ones_are_marked():
    (one, two), stderr = _incidents("--model-config", str(CONFIG))
    assert "planner was skipped" not in stderr
    # launch 1: 0.88 (what launch 2 ran) is nowhere, not even as an alternative
    assert all(_mfs(r) != 0.88 or r["set"].keys() - {"--mem-fraction-static"} for r in _all_changes(one["remediation"]))
    assert "launch 2 already tried --mem-fraction-static 0.88" in one["remediation"]["note"]
    # the fix shrinks the pools the planner says do not fit
    assert one["remediation"]["set"].get("--mamba-ssm-dtype") == "bfloat16"
    assert one["remediation"]["plan"]["fits"] is True
    # launch 2: every unmarked change is one the planner predicts to fit; the bare raise is marked
    for rem in _all_changes(two["remediation"]):
        if "UNPROVEN" in (rem.get("tradeoff") or ""):
            assert rem["safe"] is False
            continue
        assert rem.get("plan", {}).get("fits") is True, rem
    bare = [r for r in _all_changes(two["remediation"]) if set(r["set"]) == {"--mem-fraction-static"}]
    assert all("UNPROVEN" in r["tradeoff"] for r in bare)
    assert all("does not fit" in r["tradeoff"] for r in bare)  # the planner's verdict is named too


def test_watch_order_launch_1_alone_is_remedied_from_what_came_before(tmp_path):
    """Streaming (pipe mode) knows only the launches so far: launch 1's fix may raise the fraction."""
    lines = (FIXTURES / "seed" / "seed_full.log").read_bytes().split(b"\n")
    r = subprocess.run(doctor_cmd("-", "--format", "json"), input=b"\n".join(lines[:66]) + b"\n",
                       capture_output=True, timeout=120)
    (inc,) = [json.loads(x) for x in r.stdout.splitlines() if json.loads(x)["event"] == "incident"]
    assert inc["remediation"]["set"] == {"--mem-fraction-static": 0.88}


def _pipeline_events(monkeypatch, limit):
    from sglang_doctor import pipeline
    from sglang_doctor.cli.app import load_ruleset

    monkeypatch.setattr(pipeline, "HOLD_LIMIT", limit)
    pipe = pipeline.StreamPipeline(load_ruleset(()), whole_log=True)
    data = (FIXTURES / "seed" / "seed_full.log").read_bytes()
    chunks = []
    for i in range(0, len(data), 512):  # fed in pieces, as a large file is
        chunks.append(pipe.feed(data[i:i + 512]))
    chunks.append(pipe.finish())
    return chunks


def test_events_wait_for_the_whole_log_in_order(monkeypatch):
    chunks = _pipeline_events(monkeypatch, 20000)
    flat = [e for c in chunks for e in c]
    kinds = [e["event"] for e in flat if e["event"] != "milestone"]
    assert kinds == ["launch", "incident", "launch", "incident"]  # order kept while held
    first = next(i for i, c in enumerate(chunks) if any(e["event"] == "incident" for e in c))
    assert first == len(chunks) - 1  # the incidents came out at the end, remedied with all launches
    one = [e for e in flat if e["event"] == "incident"][0]
    assert one["remediation"]["set"].get("--mem-fraction-static") != 0.88


def test_holding_is_bounded(monkeypatch):
    chunks = _pipeline_events(monkeypatch, 1)
    flat = [e for c in chunks for e in c]
    one = [e for e in flat if e["event"] == "incident"][0]
    # released early, it was remedied from what came before it only: the plain raise
    assert one["remediation"]["set"] == {"--mem-fraction-static": 0.88}


def _ctx_and_rem(here: dict, rem_set: dict, unset=(), rule="memory.kv_pool.not_enough_memory"):
    from sglang_doctor.model import Diagnosis, Incident, Launch, Remediation
    from sglang_doctor.remedy import flags, remedies

    catalog = flags.shipped_catalog("0.5.9")
    launch = Launch(index=1, line=70, server_args=dict(here))
    diagnosis = Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=2), rule=rule,
                          category="memory.kv_pool", launch=launch)
    ctx = remedies.Context(diagnosis, None, False, "0.5.9", catalog, None, None, [])
    return ctx, Remediation(set=dict(rem_set), unset=list(unset), note="n")


def test_weigh_rules_one_by_one():
    from sglang_doctor.remedy import remedies

    E = remedies.EarlierLaunch
    here = {"mem_fraction_static": 0.85, "enable_torch_compile": True}
    # exact repeat of a same-way launch: dropped, and said
    ctx, rem = _ctx_and_rem(here, {"--mem-fraction-static": 0.88})
    out = remedies.weigh(ctx, [rem], [E(2, {"mem_fraction_static": 0.88}, ("memory.kv_pool.not_enough_memory",))])
    assert out[0].needs_human and "launch 2 already tried --mem-fraction-static 0.88" in out[0].note
    # a launch that died of something else proves nothing about this change
    ctx, rem = _ctx_and_rem(here, {"--mem-fraction-static": 0.88})
    out = remedies.weigh(ctx, [rem], [E(2, {"mem_fraction_static": 0.88}, ("network.port.address_in_use",))])
    assert out == [rem] and rem.safe
    # inside the range two same-way launches spanned: proven not to help
    ctx, rem = _ctx_and_rem({"mem_fraction_static": 0.90}, {"--mem-fraction-static": 0.88})
    out = remedies.weigh(ctx, [rem], [E(1, {"mem_fraction_static": 0.85}, ("memory.kv_pool.not_enough_memory",))])
    assert out[0].needs_human and "would too" in out[0].note
    # a removal counts as tried only when the earlier dump shows the setting off
    ctx, rem = _ctx_and_rem(here, {}, unset=["--enable-torch-compile"])
    out = remedies.weigh(ctx, [rem], [E(1, {"mem_fraction_static": 0.85}, ("memory.kv_pool.not_enough_memory",))])
    assert out == [rem]
    ctx, rem = _ctx_and_rem(here, {}, unset=["--enable-torch-compile"])
    out = remedies.weigh(ctx, [rem], [E(1, {"enable_torch_compile": False}, ("memory.kv_pool.not_enough_memory",))])
    assert out[0].needs_human and "without --enable-torch-compile" in out[0].note
