"""Capacity explained from real start-up logs: where each GiB went and what capped the server.

The logs are the real ones of fixtures/startup (sources in its README); every figure asserted
here is one SGLang printed in that log or follows from them by the arithmetic the module states.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_doctor.pipeline import read_incidents
from sglang_doctor.remedy import capacity, hardware

ROOT = Path(__file__).resolve().parents[2]
STARTUP = ROOT / "fixtures" / "startup"
MODELS = ROOT / "fixtures" / "models"


def _capacity(log: str, model: str | None, version: str, gpus: str | None = None, flags: dict | None = None):
    launches, _ = read_incidents(STARTUP / log)
    launch = launches[-1]
    if flags:
        launch.server_args = {**launch.server_args, **flags}
    cfg = json.loads((MODELS / model).read_text()) if model else None
    return capacity.from_launch(launch, cfg, version, hardware.get_profile(gpus) if gpus else None)


def test_a_mamba_capped_server_names_the_state_pool_and_its_price():
    """0.5.23, --max-mamba-cache-size 2000: 2000 slots / 3 per request = the logged 666."""
    c = _capacity("cpu0523_qwen35_hybrid_max_mamba_bf16.log", "cpu_qwen35_tiny.json", "0.5.23")
    cap = c.cap("max_running_requests")
    assert cap.logged == 666 and cap.capped_by == "mamba_pool"
    assert "2000 slots / 3 per request = 666" in cap.explanation
    assert "--max-mamba-cache-size" in cap.raise_with and "--mamba-full-memory-ratio" in cap.raise_with
    assert "each extra running request costs 3 x" in cap.cost and "KV tokens" in cap.cost
    assert cap.predicted == 666 and cap.predicted_from_flags == 666


def test_an_excerpt_without_the_scheduler_line_still_says_what_caps_concurrency():
    """The 0.5.18 H100 excerpt: 124 mamba slots / 5 per request -> 24 (what the operator quoted)."""
    c = _capacity("gsma_0_5_18_qwen3x_27b_fp8_h100.log", "qwen3_x_27b_fp8_like.json", "0.5.18", "h100-80",
                  {"mem_fraction_static": 0.85, "max_running_requests": 32})
    cap = c.cap("max_running_requests")
    assert cap.logged is None and cap.capped_by == "mamba_pool"
    assert "124 slots / 5 per request = 24 requests" in cap.explanation
    rows = {r.name: r.gb for r in c.rows}
    assert rows["weights (fp8)"] == 28.47 and rows["mamba state pool (124 slots)"] == pytest.approx(17.92)
    assert c.figures["pre_gb"] == pytest.approx(78.48) and c.figures["pre_derived"]


def test_flag_caps_are_named_as_flags():
    c = _capacity("sglang_docs_0_5_9_qwen2_5_0_5b_h100_flag_caps.log", "qwen2_5_0_5b_instruct.json", "0.5.9", "h100-80")
    assert c.cap("max_total_num_tokens").capped_by == "flag"
    assert "--max-total-tokens 20480" in c.cap("max_total_num_tokens").explanation
    assert c.cap("max_running_requests").capped_by == "flag" and c.cap("max_running_requests").logged == 128
    assert "the KV pool holds less than one full-context (32768-token) request" in c.headline


def test_0_4_x_default_concurrency_is_the_token_rule_plus_one():
    c = _capacity("sglang_docs_0_4_1_llama3_1_8b_h100.log", "llama3_1_8b.json", "0.4.1.post7", "h100-80")
    cap = c.cap("max_running_requests")
    assert cap.logged == 2049 and cap.capped_by == "token_default" and cap.predicted == 2049
    tokens = c.cap("max_total_num_tokens")
    assert tokens.capped_by == "kv_budget" and tokens.logged == 444500
    assert "78.81 x (1 - 0.880) = 9.46 GiB" in tokens.explanation
    assert "the KV pool holds 3 full-context (131072-token) requests at once" in tokens.explanation


def test_the_rows_account_for_all_the_memory_free_after_init():
    c = _capacity("llms_in_clouds_0_4_3_qwq32b_l4x4.log", "qwq_32b.json", "0.4.3.post4")
    assert c.rank == "TP0"
    rows = {r.name: r for r in c.rows}
    assert rows["weights"].gb == 15.54 and rows["KV cache pool (46611 tokens)"].gb == pytest.approx(2.84)
    assert rows["CUDA graphs"].gb == 0.93 and rows["free while serving (activations, prefill)"].gb == 0.53
    spent = sum(r.gb for name, r in rows.items() if not name.startswith("distributed init"))
    assert spent == pytest.approx(c.figures["pre_gb"], abs=0.01)


def test_speculative_default_of_48_is_not_called_a_flag():
    # the excerpt's dump is cut before speculative_algorithm; the thread's command line has NGRAM
    c = _capacity("sglang_12726_qwen3_4b_ngram_h100.log", "qwen3_4b.json", "0.5.4.post3", "h100-80",
                  {"speculative_algorithm": "NGRAM"})
    cap = c.cap("max_running_requests")
    assert cap.logged == 48 and cap.capped_by == "speculative_default"


def test_without_a_model_config_the_log_alone_is_explained():
    c = _capacity("cpu0523_llama_b_mrr64.log", None, "0.5.23")
    assert c.plan is None and any("--model-config" in n for n in c.notes)
    assert c.cap("max_running_requests").capped_by == "flag"
    doc = json.loads(json.dumps(c.to_json()))
    assert doc["max_running_requests"] == 64 and isinstance(doc["max_total_num_tokens"], int)


def test_a_failed_launch_has_no_capacity():
    launches, _ = read_incidents(ROOT / "fixtures" / "seed" / "seed_full.log")
    assert all(capacity.from_launch(launch) is None for launch in launches)


# -- plan --log -------------------------------------------------------------------------------

def _plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_doctor", "plan", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_plan_log_text_on_a_healthy_hybrid_start_up():
    out = _plan("--log", str(STARTUP / "cpu0523_qwen35_hybrid_max_mamba_bf16.log"), "--model-config",
                str(MODELS / "cpu_qwen35_tiny.json"), "--sglang-version", "0.5.23", "--format", "text")
    assert out.returncode == 0, out.stderr
    assert "max_running_requests=666" in out.stdout and "capped by the mamba state pool" in out.stdout
    assert "KV cache pool (21495834 tokens)" in out.stdout and "planner 666" in out.stdout


def test_plan_log_json_keeps_numbers_as_numbers_and_takes_flags_after_the_separator():
    out = _plan("--log", str(STARTUP / "gsma_0_5_18_qwen3x_27b_fp8_h100.log"), "--model-config",
                str(MODELS / "qwen3_x_27b_fp8_like.json"), "--gpus", "h100-80", "--sglang-version", "0.5.18",
                "--format", "json", "--", "--mem-fraction-static", "0.85", "--max-running-requests", "32")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)["capacity"][0]
    assert doc["max_total_num_tokens"] == 330323 and doc["caps"]["max_running_requests"]["capped_by"] == "mamba_pool"
    assert isinstance(doc["predicted"]["max_total_num_tokens"], int)
    weights = doc["per_gpu_gb"][0]
    assert (weights["name"], weights["gb"], weights["source"]) == ("weights (fp8)", 28.47, "log")
    assert abs(weights["predicted_gb"] - 28.47) <= 0.02 * 28.47  # the config estimate beside the log's figure
    kv = next(r for r in doc["per_gpu_gb"] if r["name"].startswith("KV cache pool"))
    assert abs(kv["predicted_gb"] - kv["gb"]) <= 0.01 * kv["gb"]


@pytest.mark.parametrize("args,needle", [
    (["--log", "/nonexistent/sglang.log"], "no such file"),
    (["--log", str(ROOT / "fixtures" / "seed" / "seed_full.log")], "sized its memory pools"),
    (["--log", str(STARTUP / "cpu0523_llama_b_mrr64.log"), "--model-config", "/nonexistent/config.json"], "--model-config /nonexistent/config.json: no such file"),
    ([], "--model-config is required"),
])
def test_plan_log_bad_input_is_one_line_and_exit_2(args, needle):
    out = _plan(*args)
    assert out.returncode == 2, out.stdout
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- explain on a healthy log -------------------------------------------------------------------

def _explain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_explain_on_a_healthy_log_adds_the_capacity_section_after_the_launch():
    out = _explain("--format", "text", "--sglang-version", "0.4.3.post4", "--model-config", str(MODELS / "qwq_32b.json"),
                   str(STARTUP / "llms_in_clouds_0_4_3_qwq32b_l4x4.log"))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.index("ready (line") < text.index("capacity of launch 1") < text.index("summary:")
    assert "max_running_requests=2049 (predicted: planner 2049" in text
    assert "capped by SGLang's default from the KV pool" in text


def test_explain_json_has_one_capacity_event_per_sized_launch_and_none_for_a_failed_one():
    out = _explain("--format", "json", str(STARTUP / "cpu0523_qwen35_hybrid_max_mamba_bf16.log"))
    events = [json.loads(line) for line in out.stdout.splitlines()]
    caps = [e for e in events if e["event"] == "capacity"]
    assert len(caps) == 1 and caps[0]["max_running_requests"] == 666
    assert caps[0]["caps"]["max_running_requests"]["capped_by"] == "mamba_pool"
    seed = _explain("--format", "json", str(ROOT / "fixtures" / "seed" / "seed_full.log"))
    assert seed.returncode == 1 and '"event": "capacity"' not in seed.stdout


def test_a_0_4_log_read_with_a_newer_release_still_names_the_token_rule():
    """Without --sglang-version a 0.4.x dataclass dump reads as 0.5.9-style: 2049 is then est + 1."""
    c = _capacity("sglang_docs_0_4_1_llama3_1_8b_h100.log", None, "0.5.9")
    cap = c.cap("max_running_requests")
    assert cap.capped_by == "token_default" and "0.4.0-0.4.6" in cap.explanation
