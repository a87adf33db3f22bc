"""The planner's sizing rules per SGLang release (issue 14), each from the release's wheel.

The rules are in sglang_doctor/remedy/planner.py (``mfs_era``, ``legacy_mem_fraction``,
``_capacity_defaults``, ``default_mem_fraction``), cited there by file:line.  The accuracy
part measures the planner against the real start-up logs of fixtures/startup (users' threads
and our own 0.5.23 runs) and prints the figures it reaches.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from sglang_doctor.pipeline import read_incidents
from sglang_doctor.remedy import hardware, planner

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
STARTUP = ROOT / "fixtures" / "startup"
LLAMA = json.loads((MODELS / "llama3_1_8b.json").read_text())
QWEN36 = json.loads((MODELS / "qwen3_6_27b_like.json").read_text())


def mfs(version: str, gpus: str, **args) -> float:
    return planner.plan(LLAMA, hardware.get_profile(gpus), args, version).mem_fraction_static


@pytest.mark.parametrize("version, era", [
    ("0.4.0", "tp_table"), ("0.4.1.post7", "tp_table"), ("0.4.5.post2", "tp_table"),
    ("0.4.5.post3", "tp_table_13g"), ("0.4.6", "tp_table_13g"), ("0.4.6.post1", "tp_table_13g"),
    ("0.4.6.post2", "ps_table_96g"), ("0.4.6.post5", "ps_table_96g"), ("0.4.7", "ps_table_spec"),
    ("0.4.7.post1", "reserved_table"), ("0.4.10", "reserved_table"), ("0.5.2", "reserved_table"),
    ("0.5.3", "reserved_formula"), ("0.5.9", "reserved_formula"), ("0.5.23", "reserved_formula"),
    ("0.0.0.dev4111", "reserved_formula"),
])
def test_release_ranges_of_the_default_fraction_rules(version, era):
    assert planner.mfs_era(version) == era


def test_041_to_046_take_the_fraction_from_a_table_by_tp_size():
    # 0.4.1 server_args.py: tp 16 -> 0.79, 8 -> 0.81, 4 -> 0.85, 2 -> 0.87, else 0.88
    table = {1: 0.88, 2: 0.87, 4: 0.85, 8: 0.81, 16: 0.79}
    for tp, expected in table.items():
        assert mfs("0.4.1", f"h100-80x{tp}", tp_size=tp) == expected
        assert mfs("0.4.6", f"a6000x{tp}", tp_size=tp) == expected  # <= 80 GiB GPUs
    # the GPU does not matter before 0.4.5.post3 ...
    assert mfs("0.4.1", "rtx3090") == mfs("0.4.1", "a100-80") == 0.88


def test_0410_reserves_by_gpu_size_and_parallelism():
    # 0.4.10 server_args.py: under 35 GiB (2.8 + tp*pp/10) GiB; under 90 GiB (9.5 + tp*pp/2)
    gpu = hardware.get_profile("rtx4090")
    assert mfs("0.4.10", "rtx4090") == round((gpu.total_mib - 2.9 * 1024) / gpu.total_mib, 3)
    a6000 = hardware.get_profile("a6000x2")
    assert mfs("0.4.10", "a6000x2", tp_size=2) == round((a6000.total_mib - 10.5 * 1024) / a6000.total_mib, 3)
    # +2 GiB with speculative decoding
    with_spec = planner.plan(LLAMA, a6000, {"tp_size": 2, "speculative_algorithm": "EAGLE"}, "0.4.10")
    assert with_spec.mem_fraction_static == round((a6000.total_mib - 12.5 * 1024) / a6000.total_mib, 3)


def test_05101_still_reserves_graph_memory_under_disable_cuda_graph():
    # 0.5.10.post1 server_args.py:1290 adds cuda_graph_max_bs * 2 MiB unconditionally
    for version in ("0.5.9", "0.5.10.post1"):
        assert mfs(version, "a6000", disable_cuda_graph=True) == mfs(version, "a6000")
    assert mfs("0.5.23", "a6000", disable_cuda_graph=True) > mfs("0.5.23", "a6000")


def test_a_dev_build_takes_059s_rules():
    for gpus in ("a6000", "h100-80", "rtx3090"):
        assert mfs("0.0.0.dev4111", gpus) == mfs("0.5.9", gpus)
    assert not planner.is_new_sizing("0.0.0.dev4111")


def test_speculative_decoding_caps_running_requests_at_48_unless_given():
    args = {"tp_size": 2, "context_length": 65536, "speculative_algorithm": "NEXTN",
            "mamba_ssm_dtype": "bfloat16"}
    for version in ("0.5.9", "0.5.23"):
        st = planner.plan(QWEN36, hardware.get_profile("a6000x2"), args, version).settings
        assert st.max_running == 48
        given = planner.plan(QWEN36, hardware.get_profile("a6000x2"),
                             {**args, "max_running_requests": 16}, version).settings
        assert given.max_running == 16


def test_newer_releases_split_mamba_and_kv_memory_themselves():
    """0.5.23 sizes the recurrent-state pool from the budget when no ratio is given; 0.5.9
    takes max_running_requests slots x (3 + extra buffer)."""
    args = {"tp_size": 2, "context_length": 65536, "speculative_algorithm": "NEXTN"}
    new = planner.plan(QWEN36, hardware.get_profile("a6000x2"), args, "0.5.23")
    old = planner.plan(QWEN36, hardware.get_profile("a6000x2"), args, "0.5.9")
    assert new.fits and not old.fits
    assert new.max_running_requests < 48  # the state pool, not the cap, limits it


def test_capacity_defaults_per_release():
    # 0.4.x: chunked prefill 2048 under 25000 MiB else 8192; graphs 8 (80 from tp 4) / 160
    assert planner._capacity_defaults(24564, 1, "0.4.6") == (2048, 8)
    assert planner._capacity_defaults(24564, 4, "0.4.6") == (2048, 80)
    assert planner._capacity_defaults(49140, 1, "0.4.6") == (8192, 160)
    # 0.4.7.post1-0.5.2: the small tier goes up to 35 GiB
    assert planner._capacity_defaults(30000, 1, "0.5.2") == (2048, 8)
    assert planner._capacity_defaults(49140, 1, "0.5.2") == (8192, 160)


# -- accuracy against real start-up logs ---------------------------------------------------------


def _cases():
    return json.loads((STARTUP / "cases.json").read_text())["cases"]


def _measure():
    """Per real log (not the seed): relative errors of tokens (anchored on the log's figures;
    from flags alone), weights, and running requests exact or not."""
    rows = []
    for case in _cases():
        if case["log"].startswith("../seed"):
            continue
        launches, _ = read_incidents(STARTUP / case["log"])
        launch = launches[-1]
        args = {**launch.server_args, **case["flags"]}
        observed = planner.observed_from_launch(launch)
        hw = (hardware.from_log(launch) if case["gpus"] == "auto-from-log"
              else hardware.get_profile(case["gpus"]))
        cfg = json.loads((MODELS / case["model"]).read_text())
        anchored = planner.plan(cfg, hw, args, case["version"], observed)
        alone = planner.plan(cfg, hw, args, case["version"], {})
        summary = launch.milestone("max_total_num_tokens")
        kv = launch.milestone("kv_cache")
        tokens = ((summary.figures.get("max_total_num_tokens") if summary else None)
                  or (kv.figures.get("tokens") if kv else None))
        weights = launch.milestone("load_weights_end")
        row = {"log": case["log"], "version": case["version"]}
        # only where the log gives what the prediction needs: the fraction (dump) and the
        # free memory before and after the weights
        anchorable = "mem_fraction_static" in args and "avail_mem_before_weights_gb" in observed
        if tokens and anchorable:
            row["tokens_anchored"] = abs(anchored.max_total_num_tokens - tokens) / tokens
        if tokens and case["gpus"] != "auto-from-log":  # a named GPU: the idle-GPU profile
            row["tokens_flags"] = abs(alone.max_total_num_tokens - tokens) / tokens
        if weights and weights.figures.get("mem_usage_gb", 0) > 1:
            est = planner.weights_gb(planner.model_shape(cfg), anchored.settings.tp,
                                     attn_tp=anchored.settings.attn_tp)
            row["weights"] = abs(est - weights.figures["mem_usage_gb"]) / weights.figures["mem_usage_gb"]
        if summary and "max_running_requests" in summary.figures:
            row["mrr_exact"] = anchored.max_running_requests == summary.figures["max_running_requests"]
        rows.append(row)
    return rows


def test_accuracy_on_real_startup_logs(capsys):
    rows = _measure()
    anchored = [r["tokens_anchored"] for r in rows if "tokens_anchored" in r]
    weights = [r["weights"] for r in rows if "weights" in r]
    running = [r["mrr_exact"] for r in rows if "mrr_exact" in r]
    alone = [r["tokens_flags"] for r in rows if "tokens_flags" in r]
    with capsys.disabled():
        print(f"\nplanner on {len(rows)} real logs: tokens anchored median "
              f"{statistics.median(anchored):.2%} worst {max(anchored):.2%} (n={len(anchored)}); "
              f"from flags alone on the named GPU {', '.join(f'{x:.1%}' for x in sorted(alone))}; "
              f"weights worst {max(weights):.2%} (n={len(weights)}); "
              f"max_running_requests exact {sum(running)}/{len(running)}")
    assert len(anchored) >= 10
    assert statistics.median(anchored) < 0.01 and max(anchored) < 0.03
    assert max(weights) < 0.02
    assert all(running)
