"""The memory planner against SGLang's own numbers.

The accuracy test reads real start-up logs (fixtures/startup, sources in its README), takes
the launch's flags from the server_args dump (plus what the thread's command line says, in
cases.json) and checks the planner's prediction of what SGLang logged:
weights (``Load weight end ... mem usage=``), KV tokens (``KV Cache is allocated. #tokens`` /
``max_total_num_tokens=``), K-cache size (``K size:``), mamba slots and state sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import doctor_cmd
from sglang_doctor.remedy import hardware
from sglang_doctor.remedy import planner
from sglang_doctor.pipeline import read_incidents

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
STARTUP = ROOT / "fixtures" / "startup"
CASES = json.loads((STARTUP / "cases.json").read_text())["cases"]


def _config(name: str) -> dict:
    return json.loads((MODELS / name).read_text())


def _case_plan(case: dict):
    launches, _ = read_incidents(STARTUP / case["log"])
    launch = launches[-1] if launches else None
    args = dict(launch.server_args) if launch is not None else {}
    args.update(case["flags"])
    observed = planner.observed_from_launch(launch) if launch is not None else {}
    hw = hardware.from_log(launch) if case["gpus"] == "auto-from-log" else hardware.get_profile(case["gpus"])
    cfg = _config(case["model"])
    p = planner.plan(cfg, hw, args, case["version"], observed)
    return p, planner.model_shape(cfg), launch


def _predicted(key: str, p, shape, logged: dict, case: dict) -> float:
    st = p.settings
    if key == "weights_gb":
        return planner.weights_gb(shape, st.tp, attn_tp=st.attn_tp)
    if key in ("max_total_num_tokens", "kv_tokens"):
        return p.max_total_num_tokens
    if key == "max_running_requests":
        return p.max_running_requests
    if key == "kv_k_gb":  # K half of the cell, at the token count SGLang allocated
        tokens = case.get("kv_tokens_at") or logged.get("kv_tokens") or logged["max_total_num_tokens"]
        return p.cell_bytes / 2 * tokens / 2**30
    conv, ssm, _ = planner.mamba_state_bytes(shape, st.attn_tp, st.ssm_dtype)
    if key == "mamba_cache_size":
        return p.mamba_cache_size
    if key == "mamba_ssm_gb":
        return ssm * p.mamba_cache_size / 2**30
    if key == "mamba_conv_gb":
        return conv * p.mamba_cache_size / 2**30
    raise KeyError(key)


ROWS = [(c, key) for c in CASES for key in c["logged"]]


@pytest.mark.parametrize("case,key", ROWS, ids=[f"{c['log']}:{k}" for c, k in ROWS])
def test_prediction_within_5_percent_of_what_sglang_logged(case, key):
    p, shape, _ = _case_plan(case)
    logged = case["logged"][key]
    pred = _predicted(key, p, shape, case["logged"], case)
    # SGLang prints GiB with two decimals: a figure like 0.07 is exact only to +-0.005
    tolerance = max(0.05 * abs(logged), 0.005 if isinstance(logged, float) else 0)
    assert abs(pred - logged) <= tolerance, f"{key}: predicted {pred}, SGLang logged {logged}"


def test_at_least_eight_real_logs_predict_sglangs_token_count():
    """Real logs (users' and our own 0.5.23 CPU runs, not the seed) whose KV token count is predicted."""
    real = {c["log"] for c in CASES if not c["log"].startswith("../seed")
            and ("max_total_num_tokens" in c["logged"] or "kv_tokens" in c["logged"])}
    assert len(real) >= 8


# -- the seed scenario ------------------------------------------------------------------------

SEED = ROOT / "fixtures" / "seed" / "seed_full.log"
QWEN36 = _config("qwen3_6_27b_like.json")
A6000X2 = hardware.get_profile("a6000x2")


def _seed_launch(i: int = 0):
    launches, _ = read_incidents(SEED)
    return launches[i]


def test_seed_names_the_mamba_pool_as_the_one_that_did_not_fit():
    launch = _seed_launch(0)
    obs = planner.observed_from_launch(launch)
    p = planner.plan(QWEN36, A6000X2, launch.server_args, "0.5.9", obs)
    assert not p.fits and p.failing == "mamba_pool"
    # 48 slots x 73.4 MiB of state plus 48 x 4 draft tokens of intermediate state
    assert p.mamba_cache_size == 48 and p.mamba_slot_bytes == 76_972_032
    rows = dict(p.rows)
    assert rows["weights"] == pytest.approx(26.22)
    spec_row = next(v for k, v in p.rows if k.startswith("mamba spec intermediate"))
    assert spec_row == pytest.approx(13.76, abs=0.01)
    assert p.max_total_num_tokens == 0


@pytest.mark.parametrize("launch_index", [0, 1])
def test_seed_search_returns_launches_that_fit(launch_index):
    launch = _seed_launch(launch_index)
    obs = planner.observed_from_launch(launch)
    cands = planner.search(QWEN36, A6000X2, launch.server_args, "0.5.9", obs, margin_gb=1.0)
    assert cands, "no candidate fits"
    for c in cands:
        assert c.plan.fits and c.plan.headroom_gb >= 1.0
        assert c.plan.max_total_num_tokens >= 65536  # the user's context length still fits
        assert c.changes and c.tradeoff
        # re-planning the candidate's flags from scratch gives the same verdict
        again = planner.plan(QWEN36, A6000X2, {**launch.server_args, **c.changes}, "0.5.9", obs)
        assert again.fits
    assert cands[0].gave_up == []  # context length and speculative decoding kept


def test_seed_on_0523_sizes_like_the_worked_example():
    """sglang-notes 2.8: 0.5.23 defaults -> K~36 slots, 7 running requests, ~179k tokens."""
    args = {"tp_size": 2, "context_length": 65536, "speculative_algorithm": "NEXTN"}
    p = planner.plan(QWEN36, A6000X2, args, "0.5.23")
    assert p.fits
    assert p.mem_fraction_static == pytest.approx(0.786, abs=0.001)
    assert 34 <= p.mamba_cache_size <= 38 and p.max_running_requests == 7
    assert 170_000 <= p.max_total_num_tokens <= 190_000


def test_default_mem_fraction_rules_per_version():
    """0.5.9 adds 2 GiB for EAGLE-like drafts, 0.5.23 the prefill-graph buckets (sglang-notes 2.2)."""
    args = {"tp_size": 2, "context_length": 65536, "speculative_algorithm": "NEXTN"}
    p59 = planner.plan(QWEN36, A6000X2, args, "0.5.9")
    assert p59.mem_fraction_static == pytest.approx(0.816 * 0.92477, abs=0.0005)
    llama = _config("llama3_1_8b.json")
    p = planner.plan(llama, hardware.get_profile("h100-80"), {}, "0.5.9")
    # H100: 512 + 8192*1.5 + 256*2 + 1/8*1024 = 13440 MiB reserve -> 0.835, the value both real
    # H100 dumps in fixtures/startup show (sglang#12726 with NGRAM, LMCache#2400 without spec)
    assert p.mem_fraction_static == pytest.approx(0.835, abs=0.0005)
    ngram = planner.plan(_config("qwen3_4b.json"), hardware.get_profile("h100-80"),
                         {"speculative_algorithm": "NGRAM"}, "0.5.9")
    assert ngram.mem_fraction_static == pytest.approx(0.835, abs=0.0005)  # NGRAM adds no draft reserve


def test_bf16_ssm_state_halves_the_dominant_term():
    shape = planner.model_shape(QWEN36)
    _, ssm32, total32 = planner.mamba_state_bytes(shape, 2, None)
    _, ssm16, total16 = planner.mamba_state_bytes(shape, 2, "bfloat16")
    assert ssm16 * 2 == ssm32 and total16 < total32 * 0.52


def test_kv_heads_are_replicated_when_fewer_than_tp():
    shape = planner.model_shape(_config("qwen3_235b_a22b_fp8.json"))  # 4 kv heads
    assert planner.cell_size(shape, 8, "auto") == planner.cell_size(shape, 4, "auto")
    assert planner.cell_size(shape, 2, "auto") == 2 * planner.cell_size(shape, 4, "auto")
    assert planner.cell_size(shape, 4, "fp8_e5m2") * 2 == planner.cell_size(shape, 4, "auto")


@pytest.mark.parametrize("model,hybrid,full_layers", [
    ("llama3_1_8b.json", False, 32), ("qwen3_30b_a3b.json", False, 48),
    ("qwen3_next_80b_a3b.json", True, 12), ("nemotron_h_8b.json", True, 4), ("qwen3_6_27b_like.json", True, 16),
])
def test_model_families_are_read(model, hybrid, full_layers):
    shape = planner.model_shape(_config(model))
    assert shape.hybrid is hybrid and shape.full_attention_layers == full_layers
    p = planner.plan(_config(model), hardware.get_profile("h100-80x8"), {"tp_size": 8}, "0.5.23")
    assert p.fits and p.max_total_num_tokens > 0


def test_weights_that_leave_no_room_are_named():
    # Qwen3-Next-80B in bf16 (~149 GiB) cannot fit two A6000s
    p = planner.plan(_config("qwen3_next_80b_a3b.json"), A6000X2, {"tp_size": 2}, "0.5.23")
    assert not p.fits and p.failing == "weights"
    # no impossible "minimum fraction" above 1: the weights alone exceed the free memory
    assert "at any --mem-fraction-static" in p.error and "tp-size" in p.error


def test_plan_to_json_is_serialisable():
    p = planner.plan(QWEN36, A6000X2, {"tp_size": 2}, "0.5.23")
    doc = json.loads(json.dumps(p.to_json()))
    assert doc["per_gpu_gb"][0]["name"] == "weights" and "fits" in doc and "failing" in doc


def test_render_is_a_rich_table_with_every_row():
    from rich.console import Console

    p = planner.plan(QWEN36, A6000X2, {"tp_size": 2}, "0.5.23")
    table = planner.render(p)
    console = Console(width=120, record=True)
    console.print(table)
    text = console.export_text()
    assert "weights" in text and "KV cache pool" in text and "free headroom" in text


# -- the plan command -------------------------------------------------------------------------

def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_doctor", "plan", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


def test_plan_command_json_for_the_seed_flags():
    out = _run("--model-config", str(MODELS / "qwen3_6_27b_like.json"), "--gpus", "a6000x2", "--sglang-version",
               "0.5.9", "--format", "json", "--", "--tp-size", "2", "--context-length", "65536",
               "--mem-fraction-static", "0.85", "--speculative-algorithm", "NEXTN")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["plan"]["failing"] == "mamba_pool" and doc["candidates"]
    assert doc["flags"]["tp_size"] == 2 and doc["flags"]["mem_fraction_static"] == 0.85


def test_plan_command_text_that_fits():
    out = _run("--model-config", str(MODELS / "llama3_1_8b.json"), "--gpus", "h100-80", "--format", "text")
    assert out.returncode == 0, out.stderr
    assert "KV cache pool" in out.stdout and "=> fits" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (["--model-config", "/nonexistent/config.json"], "--model-config /nonexistent/config.json: no such file"),
    (["--model-config", str(MODELS / "llama3_1_8b.json"), "--gpus", "b300"], "unknown GPU profile"),
    (["--model-config", str(MODELS / "llama3_1_8b.json"), "--", "tp"], "expected a --flag"),
])
def test_plan_command_bad_input_is_one_line_and_exit_2(args, needle):
    out = _run(*args)
    assert out.returncode == 2
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_parse_flags_without_a_catalogue_converts_names_and_values():
    from sglang_doctor.cli import plan as plan_command

    parsed = plan_command.parse_flags(["--tp-size", "2", "--mem-fraction-static=0.85", "--enable-torch-compile",
                                       "--speculative-algorithm", "NEXTN"], "0.5.9")
    assert parsed["tp_size"] == 2 and parsed["mem_fraction_static"] == 0.85
    assert parsed["enable_torch_compile"] is True and parsed["speculative_algorithm"] == "NEXTN"


QWEN36_PATH = MODELS / "qwen3_6_27b_like.json"


@pytest.mark.parametrize("args,needle", [
    (["--", "--tp-size", "3"], "--tp-size 3 needs 3 GPUs but --gpus a6000x2 has 2"),
    (["--gpus", "h100x3", "--", "--tp-size", "4"], "--tp-size 4 needs 4 GPUs but --gpus h100-80x3 has 3"),
    (["--gpus", "a6000x4", "--", "--tp-size", "2", "--pp-size", "3"], "needs 6 GPUs"),
    (["--", "--mem-fraction-static", "1.5"], "--mem-fraction-static 1.5: must be > 0 and < 1"),
    (["--", "--mem-fraction-static", "0"], "--mem-fraction-static 0: must be > 0 and < 1"),
    (["--", "--mem-fraction-static", "abc"], "--mem-fraction-static: invalid float value 'abc'"),
    (["--", "--tp-sise", "2"], "closest: --tp-size"),
    (["--", "--context-length", "-5"], "--context-length -5: must be >= 1"),
    (["--", "--chunked-prefill-size", "0"], "--chunked-prefill-size 0: must be -1 (no chunking) or >= 1"),
    (["--sglang-version", "banana"], "--sglang-version banana: not an SGLang version"),
    (["--gpus", "a6000x0"], "--gpus a6000x0: GPU count must be >= 1"),
    (["--gpus", "48GiBx2", "--gpu-sm", "abc"], "--gpu-sm abc"),
])
def test_plan_refuses_what_cannot_run(args, needle):
    out = _run("--model-config", str(QWEN36_PATH), "--format", "text", *args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.parametrize("content", ['{"foo": 1}', "[1, 2]", '{"num_hidden_layers": 4}'])
def test_plan_and_explain_refuse_a_json_that_is_not_a_config(tmp_path, content, seed_full):
    cfg = tmp_path / "config.json"
    cfg.write_text(content)
    for args in (["plan", "--model-config", str(cfg)], ["explain", "--model-config", str(cfg), str(seed_full)]):
        out = subprocess.run(doctor_cmd(*args), capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "not a model config.json" in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "KeyError" not in out.stderr


def test_a_disabled_chunk_is_a_value_not_a_flag():
    out = _run("--model-config", str(MODELS / "llama3_1_8b.json"), "--gpus", "h100-80", "--format", "json",
               "--", "--chunked-prefill-size", "-1")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["flags"]["chunked_prefill_size"] == -1


def test_plan_json_keeps_token_and_request_counts_as_numbers_and_says_gib():
    out = _run("--model-config", str(QWEN36_PATH), "--format", "json", "--sglang-version", "0.5.9", "--",
               "--tp-size", "2", "--context-length", "65536", "--mem-fraction-static", "0.85",
               "--speculative-algo", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
               "--speculative-num-draft-tokens", "4")
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    for p in [doc["plan"], *[c["plan"] for c in doc["candidates"]]]:
        assert type(p["max_total_num_tokens"]) is int and type(p["max_running_requests"]) is int
        assert p["per_gpu_gib"][0]["name"] == "weights" and isinstance(p["headroom_gib"], float)
    assert doc["gpus"]["total_gib"] == doc["gpus"]["total_gb"]
    assert doc["candidates"][0]["flags"][0].startswith("--")  # pasteable


def test_fits_lines_are_pasteable_flags():
    out = _run("--model-config", str(QWEN36_PATH), "--format", "text", "--sglang-version", "0.5.9", "--",
               "--tp-size", "2", "--context-length", "65536", "--mem-fraction-static", "0.85",
               "--speculative-algo", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
               "--speculative-num-draft-tokens", "4")
    fits = [line for line in out.stdout.splitlines() if line.startswith("fits:")]
    assert fits and all("=" not in line.split("->")[0] for line in fits), fits
    assert "--mamba-ssm-dtype bfloat16" in fits[0]
    assert "does NOT fit (mamba_pool)" in out.stdout and "(GiB)" in out.stdout


def test_a_0523_plan_says_which_max_running_requests_sglang_uses():
    out = _run("--model-config", str(QWEN36_PATH), "--format", "text", "--sglang-version", "0.5.23", "--",
               "--tp-size", "2", "--context-length", "65536", "--speculative-algo", "NEXTN",
               "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
               "--mem-fraction-static", "0.85")
    doc = json.loads(_run("--model-config", str(QWEN36_PATH), "--format", "json", "--sglang-version", "0.5.23",
                          "--", "--tp-size", "2", "--context-length", "65536", "--speculative-algo", "NEXTN",
                          "--mem-fraction-static", "0.85").stdout)
    n = doc["plan"]["max_running_requests"]
    assert n < 48
    line = next(x for x in out.stdout.splitlines() if "max_running_requests: SGLang will use" in x)
    assert f"will use {n}:" in line or "will use" in line
    assert "default 48" in line and "mamba state pool" in line
    assert "note: max_running_requests defaults to 48" not in out.stdout  # said once, with the reason
