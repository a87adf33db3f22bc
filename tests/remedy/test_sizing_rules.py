"""Each release's sizing rules, 0.5.9 to 0.5.23, against figures worked out by hand from the
release's own source (the arithmetic is in each test; file:line in sizing_rules.py).

The expected default fractions below are SGLang's formula evaluated on paper, not the
planner's output: 512 MiB + 1.5 MiB x max(chunk, 2048) + tp*pp/8 GiB, plus per release the
decode graph (2 MiB x graph max bs), the prefill graph (8 MiB x captured sizes; 50 sizes up to
4096 tokens, 42 up to 2048) and the speculative reserve; mfs = round((gpu - reserved) / gpu, 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_doctor.remedy import hardware, planner
from sglang_doctor.remedy.sizing_rules import sizing_rules

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
LLAMA = json.loads((MODELS / "llama3_1_8b.json").read_text())
QWEN_X = json.loads((MODELS / "qwen3_x_27b_fp8_like.json").read_text())  # Qwen3_5ForConditionalGeneration
NEXT = json.loads((MODELS / "qwen3_next_80b_a3b.json").read_text())

RELEASES = ["0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.13", "0.5.13.post1", "0.5.14",
            "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]


def _mfs(version: str, gpus: str, **args) -> float:
    return planner.plan(LLAMA, hardware.get_profile(gpus), args, version).mem_fraction_static


def _r(reserved_mib: float, gpu_mib: int) -> float:
    return round((gpu_mib - reserved_mib) / gpu_mib, 3)


A6000 = 49140  # 40-60 GiB tier: chunk 4096, decode graph max bs 32 at tp 1
BASE_A6000 = 512 + 4096 * 1.5 + 1 / 8 * 1024  # 6784
RTX4090 = 24564  # 20-35 GiB tier


def _expected_a6000(version: str, case: str) -> float:
    idx = RELEASES.index(version)
    graph, prefill = 32 * 2, 50 * 8
    if case == "default":
        # 0.5.9: no prefill graph (opt-in); 0.5.10 on: piecewise / tc_piecewise / breakable, all on
        return _r(BASE_A6000 + graph + (0 if idx == 0 else prefill), A6000)
    if case == "disable_cuda_graph":
        if idx == 0:
            return _r(BASE_A6000 + graph, A6000)  # 0.5.9 :1029 unconditional
        if version < "0.5.14" and idx <= RELEASES.index("0.5.13.post1"):
            return _r(BASE_A6000 + graph + prefill, A6000)  # 0.5.10-0.5.13: neither is dropped
        if version == "0.5.14":
            return _r(BASE_A6000 + graph, A6000)  # decode reserve unconditional, prefill off
        return _r(BASE_A6000, A6000)  # 0.5.15+: both follow the backends
    if case == "eagle":
        if idx == 0:
            return _r(BASE_A6000 + graph + 2048, A6000)  # 0.5.9 :1051-1057, EAGLE 2 GiB
        if idx <= RELEASES.index("0.5.13.post1"):
            return _r(BASE_A6000 + graph + 4096, A6000)  # piecewise off under spec, EAGLE 4 GiB
        return _r(BASE_A6000 + graph + prefill, A6000)  # 0.5.14+: no speculative reserve
    raise AssertionError(case)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("case", ["default", "disable_cuda_graph", "eagle"])
def test_default_fraction_per_release_llama_8b_on_an_a6000(version, case):
    args = {"disable_cuda_graph": True} if case == "disable_cuda_graph" else (
        {"speculative_algorithm": "EAGLE"} if case == "eagle" else {})
    assert _mfs(version, "a6000", **args) == _expected_a6000(version, case)


def test_default_fraction_table_has_the_figures_worked_out_by_hand():
    """The same table written out (so a change of the formula above cannot hide a change here)."""
    table = {("0.5.9", "default"): 0.861, ("0.5.12", "default"): 0.853, ("0.5.23", "default"): 0.853,
             ("0.5.9", "disable_cuda_graph"): 0.861, ("0.5.13", "disable_cuda_graph"): 0.853,
             ("0.5.14", "disable_cuda_graph"): 0.861, ("0.5.15", "disable_cuda_graph"): 0.862,
             ("0.5.9", "eagle"): 0.819, ("0.5.11", "eagle"): 0.777, ("0.5.14", "eagle"): 0.853}
    for (version, case), mfs in table.items():
        args = {"disable_cuda_graph": True} if case == "disable_cuda_graph" else (
            {"speculative_algorithm": "EAGLE"} if case == "eagle" else {})
        assert _mfs(version, "a6000", **args) == mfs, (version, case)


@pytest.mark.parametrize("version, expected", [
    # <=0.5.19: chunk 2048, graph bs 24 -> 512 + 3072 + 128 + 48 (+ 42 prefill sizes x 8 from 0.5.10)
    ("0.5.9", _r(3760, RTX4090)), ("0.5.13", _r(3760 + 336, RTX4090)), ("0.5.19", _r(3760 + 336, RTX4090)),
    # 0.5.20+: chunk 4096, graph bs 48 -> 512 + 6144 + 128 + 96 + 400
    ("0.5.20", _r(7280, RTX4090)), ("0.5.23", _r(7280, RTX4090)),
])
def test_the_20_to_35_gib_tier_moved_in_0520(version, expected):
    assert _mfs(version, "rtx4090") == expected
    assert expected == {"0.5.9": 0.847, "0.5.13": 0.833, "0.5.19": 0.833, "0.5.20": 0.704, "0.5.23": 0.704}[version]


def test_graph_max_bs_follows_max_running_requests_from_0522():
    # 0.5.22 memory_hook.py:182-189: a default graph max bs above the flag is lowered to it
    h100 = hardware.get_profile("h100-80")
    for version, bs in (("0.5.21", 256), ("0.5.22", 16), ("0.5.23", 16)):
        st = planner.plan(LLAMA, h100, {"max_running_requests": 16}, version).settings
        assert st.graph_bs == bs, version


def _observed_vlm():
    return {"avail_mem_before_weights_gb": 78.48, "avail_mem_after_weights_gb": 50.01, "weights_gb": 28.47}


@pytest.mark.parametrize("version", RELEASES)
def test_multimodal_reservation_from_0518(version):
    """mm_runtime_reservation_gb first appears in 0.5.18 (kv_cache_configurator.py:130-148)."""
    p = planner.plan(QWEN_X, hardware.get_profile("h100-80"), {"mem_fraction_static": 0.85}, version,
                     _observed_vlm())
    rows = dict(p.rows)
    if RELEASES.index(version) >= RELEASES.index("0.5.18"):
        assert rows["multimodal reservation"] == pytest.approx(100 / 1024)
    else:
        assert "multimodal reservation" not in rows


def test_the_reservation_costs_0518_exactly_100_mib_of_state_and_kv():
    obs, h100 = _observed_vlm(), hardware.get_profile("h100-80")
    args = {"mem_fraction_static": 0.85, "max_mamba_cache_size": 120}
    before = planner.plan(QWEN_X, h100, args, "0.5.17", obs)
    after = planner.plan(QWEN_X, h100, args, "0.5.18", obs)
    assert before.mamba_cache_size == after.mamba_cache_size == 120
    lost = (before.max_total_num_tokens - after.max_total_num_tokens) * after.cell_bytes
    assert abs(lost - 100 * 2**20) < after.cell_bytes


@pytest.mark.parametrize("version, rule", [
    ("0.5.9", "flag"), ("0.5.10", "flag_vs_estimate"), ("0.5.13.post1", "flag_vs_estimate"),
    ("0.5.14", "flag_vs_half_tokens"), ("0.5.23", "flag_vs_half_tokens"),
])
def test_running_cap_rule_ranges(version, rule):
    assert sizing_rules(version).running_cap == rule


def test_max_running_requests_flag_is_capped_by_the_estimate_in_0510_to_0513_and_by_half_the_tokens_after():
    # max_total_tokens 3000 and context 131072: estimate = max(min(3000/131072*512, 4096), 2048) = 2048,
    # tokens // 2 = 1500.  --max-running-requests 3000 gives 3000 (0.5.9), 2048 (0.5.10-0.5.13), 1500 (0.5.14+)
    args = {"max_running_requests": 3000, "max_total_tokens": 3000, "mem_fraction_static": 0.8}
    h100 = hardware.get_profile("h100-80")
    got = {v: planner.plan(LLAMA, h100, args, v).max_running_requests for v in ("0.5.9", "0.5.12", "0.5.14", "0.5.23")}
    assert got == {"0.5.9": 3000, "0.5.12": 2048, "0.5.14": 1500, "0.5.23": 1500}


def _hybrid(version: str, **args):
    base = {"tp_size": 4, "mem_fraction_static": 0.85, "context_length": 65536}
    return planner.plan(NEXT, hardware.get_profile("h100-80x4"), {**base, **args}, version,
                        {"avail_mem_before_weights_gb": 78.0, "avail_mem_after_weights_gb": 40.0})


def test_mamba_slots_per_release_without_speculative_decoding():
    """budget = (40 - 78 x 0.15) x 0.9/1.9 GiB; reserve_first/joint: K = budget // per;
    joint_padded (0.5.17+): K = (budget - per) // per."""
    p = _hybrid("0.5.12")
    per = p.mamba_slot_bytes
    budget = (40.0 - 78.0 * (1 - 0.85)) * 0.9 / 1.9 * 2**30
    assert _hybrid("0.5.12").mamba_cache_size == int(budget // per)
    assert _hybrid("0.5.16").mamba_cache_size == int(budget // per)
    assert _hybrid("0.5.17").mamba_cache_size == int((budget - per) // per)


def test_mamba_slots_per_release_with_speculative_decoding():
    """D = 4 draft tokens (NEXTN, topk 1, 3 steps), max_running_requests 48 by default.
    0.5.9-0.5.12: 48 x D states first, then K from the ratio; 0.5.13-0.5.16: K = budget //
    (per (1 + D/ratio)); 0.5.17+: (budget - per (1 + D)) // (per (1 + D/ratio))."""
    spec = {"speculative_algorithm": "NEXTN", "disable_radix_cache": True, "max_mamba_cache_size": None}
    per = _hybrid("0.5.12").mamba_slot_bytes
    rest = (40.0 - 78.0 * 0.15)
    p12 = _hybrid("0.5.12", **spec)
    # disable_radix_cache with max_running_requests 48: K = 48 in every release
    assert p12.mamba_cache_size == _hybrid("0.5.16", **spec).mamba_cache_size == 48
    spec = {"speculative_algorithm": "NEXTN", "mamba_scheduler_strategy": "extra_buffer"}
    D = 4
    ratio_059 = 3 + 1  # 0.5.9: extra_buffer with spec -> +1
    ratio_new = 3 + 2  # 0.5.10+: extra_buffer with overlap -> +2
    k12 = int((rest * 2**30 - per * 48 * D) * 0.9 / 1.9) // per
    assert _hybrid("0.5.12", **spec).mamba_cache_size == k12
    budget = rest * 0.9 / 1.9 * 2**30
    assert _hybrid("0.5.13", **spec).mamba_cache_size == int(budget // (per * (1 + D / ratio_new)))
    # 0.5.14+ load the draft (its weights) before sizing: it comes out of the budget first
    p18 = _hybrid("0.5.18", **spec)
    budget_draft = (rest - dict(p18.rows)["draft weights (MTP/NEXTN)"]) * 0.9 / 1.9 * 2**30
    assert _hybrid("0.5.14", **spec).mamba_cache_size == int(budget_draft // (per * (1 + D / ratio_new)))
    assert p18.mamba_cache_size == int((budget_draft - per * (1 + D)) // (per * (1 + D / ratio_new)))
    assert planner.plan(NEXT, hardware.get_profile("h100-80x4"), {"tp_size": 4, **spec}, "0.5.9").settings.mamba_ratio \
        == ratio_059


def test_hybrid_speculative_decoding_with_the_radix_cache_per_release():
    """no_buffer + speculative + radix cache: 0.5.9 turns the radix cache off, 0.5.10-0.5.13
    raise a ValueError, 0.5.14+ choose extra_buffer for GDN models."""
    spec = {"speculative_algorithm": "NEXTN"}
    old = _hybrid("0.5.9", **spec)
    assert old.settings.disable_radix and old.failing != "server_args"
    for version in ("0.5.10", "0.5.13.post1"):
        p = _hybrid(version, **spec)
        assert not p.fits and p.failing == "server_args" and "radix cache" in p.error
    new = _hybrid("0.5.14", **spec)
    assert new.failing != "server_args" and new.settings.mamba_ratio == 5


def test_search_turns_the_radix_cache_off_where_0510_to_0513_refuse_it():
    cands = planner.search(NEXT, hardware.get_profile("h100-80x4"),
                           {"tp_size": 4, "speculative_algorithm": "NEXTN", "context_length": 65536}, "0.5.11")
    assert cands and all(c.changes.get("disable_radix_cache") for c in cands)


@pytest.mark.parametrize("version, on", [("0.5.9", False), ("0.5.10", True), ("0.5.14", True), ("0.5.23", True)])
def test_prefill_graph_default_per_release(version, on):
    st = planner.plan(LLAMA, hardware.get_profile("h100-80"), {}, version).settings
    assert st.prefill_graph is on


def test_prefill_graph_is_off_for_mla_under_breakable_0515_to_0517_only():
    mla = {**LLAMA, "architectures": ["DeepseekV3ForCausalLM"], "kv_lora_rank": 512, "qk_rope_head_dim": 64,
           "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 1536}
    got = {v: planner.plan(mla, hardware.get_profile("h100-80"), {}, v).settings.prefill_graph
           for v in ("0.5.13", "0.5.14", "0.5.15", "0.5.17", "0.5.18", "0.5.23")}
    assert got == {"0.5.13": True, "0.5.14": True, "0.5.15": False, "0.5.17": False, "0.5.18": True, "0.5.23": True}


GEMMA3 = json.loads((MODELS / "gemma_3_4b_it.json").read_text())


@pytest.mark.parametrize("version, factor", [("0.4.0", 0.95), ("0.4.4.post2", 0.95), ("0.4.4.post3", 0.95),
                                             ("0.4.4.post4", 1.0), ("0.4.7", 1.0)])
def test_0440_and_before_take_five_percent_off_a_multimodal_models_fraction(version, factor):
    """0.4.0-0.4.4.post3 ModelRunner: ``self.mem_fraction_static *= 0.95`` for multimodal models,
    the flag's value too (0.4.0 model_runner.py:113-118, 0.4.4.post3 :253-254); gone in 0.4.4.post4."""
    p = planner.plan(GEMMA3, hardware.get_profile("h100-80"), {"mem_fraction_static": 0.88}, version)
    assert p.mem_fraction_static == pytest.approx(0.88 * factor)
    text_only = planner.plan(LLAMA, hardware.get_profile("h100-80"), {"mem_fraction_static": 0.88}, version)
    assert text_only.mem_fraction_static == 0.88


def test_the_vlm_adjustment_of_the_default_fraction_starts_in_0493():
    """adjust_mem_fraction_for_vlm (0.4.9.post3 server_args.py:345-349): SigLIP 27 x 1152 ->
    complexity 27 x 1152^2 / (24 x 1024^2) = 1.4238, factor 0.95 x (1 - 0.1 x 0.4238) = 0.90974."""
    h100 = hardware.get_profile("h100-80")
    factor = 0.95 * (1 - 0.1 * (27 * 1152 ** 2 / (24 * 1024 ** 2) - 1))
    for version in ("0.4.9.post2", "0.4.9.post3", "0.5.2"):
        vlm = planner.plan(GEMMA3, h100, {}, version).mem_fraction_static
        text = planner.plan(LLAMA, h100, {}, version).mem_fraction_static
        expected = text * factor if version != "0.4.9.post2" else text
        assert vlm == pytest.approx(expected), version


@pytest.mark.parametrize("version, bs", [("0.5.3", 16), ("0.5.4", 16), ("0.5.4.post1", 24), ("0.5.19", 24),
                                         ("0.5.20", 48)])
def test_graph_max_bs_of_the_20_to_35_gib_tier(version, bs):
    # 0.5.4 server_args.py:685-692 (16), 0.5.4.post1 :669-677 (24), 0.5.20 memory_hook.py:100-116 (48)
    assert planner.plan(LLAMA, hardware.get_profile("rtx4090"), {}, version).settings.graph_bs == bs


def test_mamba_slots_of_0_5_3_to_0_5_8():
    """0.5.3: radix cache off for GDN models, max_running_requests (else 512) slots, 1 per
    request; 0.5.4-0.5.6: radix on, K = budget x r/(1+r) // per // (1 + D), 3 slots per request;
    0.5.7: 3 + 2 slots per request even under no_buffer; 0.5.8: 3."""
    h = hardware.get_profile("h100-80x4")
    obs = {"avail_mem_before_weights_gb": 78.0, "avail_mem_after_weights_gb": 40.0}
    base = {"tp_size": 4, "mem_fraction_static": 0.85, "context_length": 65536}
    p53 = planner.plan(NEXT, h, base, "0.5.3", obs)
    assert p53.settings.disable_radix and p53.mamba_cache_size == 512 and p53.settings.mamba_ratio == 1
    per = p53.mamba_slot_bytes
    budget = (40.0 - 78.0 * 0.15) * 0.9 / 1.9 * 2**30
    p54 = planner.plan(NEXT, h, base, "0.5.4", obs)
    assert not p54.settings.disable_radix and p54.mamba_cache_size == int(budget) // per
    assert p54.settings.mamba_ratio == 3
    spec = {**base, "speculative_algorithm": "NEXTN"}
    assert planner.plan(NEXT, h, spec, "0.5.6", obs).mamba_cache_size == int(budget) // per // (1 + 4)
    assert planner.plan(NEXT, h, base, "0.5.7", obs).settings.mamba_ratio == 5
    assert planner.plan(NEXT, h, base, "0.5.8", obs).settings.mamba_ratio == 3


@pytest.mark.parametrize("version, extra", [("0.5.5", 0), ("0.5.6", 4096 // 4), ("0.5.7", 4096 // 8),
                                            ("0.5.8", 50 * 8), ("0.5.9", 50 * 8)])
def test_opt_in_piecewise_graph_reserve_before_0510(version, extra):
    """--enable-piecewise-cuda-graph: nothing (0.5.5), max tokens / 4 (0.5.6 :856-857), / 8 with
    max tokens = chunk (0.5.7 :944-945), 8 MiB per captured size (0.5.8 on); A6000: chunk 4096."""
    assert _mfs(version, "a6000", enable_piecewise_cuda_graph=True) == _r(BASE_A6000 + 64 + extra, A6000)
