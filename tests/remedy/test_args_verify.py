"""The fixes proposed for real SGLang 0.5.23 argument refusals get past its checks (bench/args_verify.py).

Slow tier: the real-SGLang venv runs the argument checks (``prepare_server_args`` and
``resolve_once``, nothing launched) on the argv fixtures/args_verify/triggers.json holds for
each site, the engine explains the refusal, and the change it proposes is applied and checked
again.  Skipped when the venv is missing, unless SGLANG_DOCTOR_REQUIRE_SGLANG=1 (then it fails).
The fast tests check the verifier's own pieces without SGLang.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import script_module

ROOT = Path(__file__).resolve().parents[2]


def _verifier():
    return script_module(ROOT / "bench" / "args_verify.py", "args_verify")


# site -> the column that must say "pass": the primary change, or the first alternative when
# the primary is the message's advice that only moves the launch to the next check
VERIFIED = {
    "srt/arg_groups/mamba_hook.py:158": "primary",      # no_buffer needs --disable-overlap-schedule
    "srt/arg_groups/mamba_hook.py:84": "primary",       # int8 checkpoint vs hierarchical cache: one removed
    "srt/arg_groups/serving_hook.py:84": "primary",     # --enable-ssl-refresh without the files: not 'and'
    "srt/arg_groups/hicache_hook.py:117": "primary",    # (0, 1]: the closed end, not 0
    "srt/arg_groups/serving_hook.py:260": "primary",    # "conflicts with --x=v": v is the conflict
    "srt/arg_groups/layernorm_sp_hook.py:25": "alt1",   # A requires B: else A off
    "srt/arg_groups/kv_cache_hook.py:41": "alt1",       # "applies only with": a requirement
    "srt/arg_groups/kv_cache_hook.py:357": "primary",   # "only supported on a PD decode server": removed
    "srt/arg_groups/kv_cache_hook.py:431": "primary",   # "should be a non-negative integer": removed
    "srt/arg_groups/parallel_hook.py:152": "primary",   # "B must be set when A": A off, not A on again
    "srt/arg_groups/kv_cache_hook.py:783": "alt1",      # "A without B is unsupported": else A off
}


# (GPU profile, site) -> (category, the column that must say "pass"): sites reached only with
# the GPU described to SGLang (fixtures/args_verify/gpu_profile.py), or on a family's model
GPU_VERIFIED = {
    ("a6000", "srt/arg_groups/kv_cache_hook.py:302"): ("args.invalid", "primary"),   # fp4 KV on an MLA model
    ("a6000", "srt/arg_groups/kv_cache_hook.py:313"): ("args.invalid", "primary"),
    ("a6000", "srt/arg_groups/kv_cache_hook.py:601"): ("args.invalid", "primary"),   # unified memory vs topk 0
    ("a6000", "srt/arg_groups/kv_cache_hook.py:663"): ("args.invalid", "alt1"),
    ("a6000", "srt/arg_groups/model_hook.py:536"): ("args.invalid", "primary"),      # GPT-OSS attention backend
    ("a6000", "srt/arg_groups/attention_hook.py:418"): ("args.invalid", "alt1"),     # Qwen3.5 hybrid replay SSM
    ("a6000", "srt/arg_groups/attention_hook.py:203"): ("kernel.unsupported_hw", "primary"),  # TRTLLM MHA on SM86
    ("a6000", "srt/arg_groups/serving_hook.py:467"): ("kernel.unsupported_hw", "primary"),    # FP4 indexer on SM86
}


def test_named_flags_are_catalogue_flags_the_message_names():
    from sglang_doctor.remedy import flags

    av = _verifier()
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    site = {"template": "--enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile; model_path is fine",
            "full": None}
    assert av.named_flags(site, catalog) == ["--enable-ssl-refresh", "--ssl-certfile", "--ssl-keyfile"]


def test_which_site_takes_the_nearest_site_line_above_the_frame():
    av = _verifier()
    by_function = {("srt/arg_groups/x.py", "check"): [10, 20]}
    assert av.which_site({"site": ["srt/arg_groups/x.py", 22, "check"]}, by_function) == "srt/arg_groups/x.py:20"
    assert av.which_site({"site": ["srt/arg_groups/x.py", 9, "check"]}, by_function) is None
    assert av.which_site({"site": ["srt/arg_groups/x.py", 22, "other"]}, by_function) is None
    assert av.which_site({"site": None}, by_function) is None


def test_the_verified_sites_have_triggers():
    triggers = _verifier().load_triggers()
    assert set(VERIFIED) <= set(triggers)


def test_the_gpu_verified_sites_have_triggers_and_the_profiles_exist():
    av = _verifier()
    for profile, site in GPU_VERIFIED:
        assert profile in av.gpu_profiles()
        assert site in av.load_triggers(profile), (profile, site)


def test_a_backend_a_message_names_by_its_words_is_tried():
    from sglang_doctor.remedy import flags

    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    site = {"template": "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x).", "full": None}
    assert ["--attention-backend", "trtllm_mla"] in _verifier().named_choices(site, catalog)


def _real_python(av):
    python = av.venv_python()
    if python is None:
        if os.environ.get("SGLANG_DOCTOR_REQUIRE_SGLANG") == "1":
            pytest.fail("SGLANG_DOCTOR_REQUIRE_SGLANG=1 but the real-SGLang venv is missing")
        pytest.skip("the real-SGLang venv is not installed (scripts/install-real-sglang)")
    return python


@pytest.mark.slow
def test_proposed_fixes_pass_real_sglang_checks_on_a_described_gpu():
    av = _verifier()
    python = _real_python(av)
    for profile in sorted({p for p, _ in GPU_VERIFIED}):
        sites = sorted(s for p, s in GPU_VERIFIED if p == profile)
        rows = {r["site"]: r for r in av.run(sites, python=python, profile=profile)}
        for site in sites:
            category, column = GPU_VERIFIED[(profile, site)]
            row = rows[site]
            assert row["reached"], (profile, site)
            assert row["category"] == category, (profile, site, row["rule"])
            assert row[column] == "pass", (profile, site, row)


@pytest.mark.slow
def test_proposed_fixes_pass_real_sglang_checks():
    av = _verifier()
    python = _real_python(av)
    rows = {r["site"]: r for r in av.run(sorted(VERIFIED), python=python)}
    for site, column in VERIFIED.items():
        row = rows[site]
        assert row["reached"], site
        assert row["category"] == "args.invalid", (site, row["rule"])
        assert row[column] == "pass", (site, row)
