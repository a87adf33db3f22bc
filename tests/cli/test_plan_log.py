"""``sglang-doctor plan --log``: capacity explained for real logged start-ups (issue 14)."""

from __future__ import annotations

import json
import subprocess

from conftest import FIXTURES, doctor_cmd

STARTUP = FIXTURES / "startup"
MODELS = FIXTURES / "models"


def plan_log(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(doctor_cmd("plan", *args), capture_output=True, text=True, timeout=120)


def test_a_hybrid_startup_names_the_mamba_pool_as_what_capped_running_requests():
    done = plan_log("--log", str(STARTUP / "cpu0523_qwen35_hybrid_max_mamba_bf16.log"),
                    "--model-config", str(MODELS / "cpu_qwen35_tiny.json"),
                    "--gpus", "auto-from-log", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["logged"]["max_running_requests"] == doc["predicted"]["max_running_requests"] == 666
    assert doc["logged"]["mamba_cache_size"] == doc["predicted"]["mamba_cache_size"] == 2000
    running = [c for c in doc["caps"] if c.startswith("max_running_requests")][0]
    assert "recurrent-state (mamba) pool" in running and "--max-mamba-cache-size" in running
    whats = [row["what"] for row in doc["memory"]]
    assert "KV cache pool" in whats and "recurrent-state (mamba) pool" in whats
    logged, predicted = doc["logged"]["max_total_num_tokens"], doc["predicted"]["max_total_num_tokens"]
    assert abs(predicted - logged) / logged < 0.01


def test_a_user_log_without_a_version_gets_its_range_and_the_cap():
    done = plan_log("--log", str(STARTUP / "sglang_12726_qwen3_4b_ngram_h100.log"),
                    "--model-config", str(MODELS / "qwen3_4b.json"), "--gpus", "h100-80")
    assert done.returncode == 0, done.stderr
    # the thread ran 0.5.4.post3: the range its dump's fields allow contains it
    assert "dump fits >=0.5.4," in done.stdout.splitlines()[0]
    assert "max_running_requests 48" in done.stdout


def test_without_a_model_config_it_shows_the_logged_figures_only():
    done = plan_log("--log", str(STARTUP / "xorbits_3481_qwen3_14b.log"), "--gpus", "a6000")
    assert done.returncode == 0, done.stderr
    assert "KV cache pool" in done.stdout and "--model-config" in done.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    for args in (("--log", str(empty)), ("--log", str(tmp_path / "missing.log")), ()):
        done = plan_log(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
