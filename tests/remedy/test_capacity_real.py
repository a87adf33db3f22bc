"""plan --log and explain on a start-up the real SGLang 0.5.23 just logged (slow tier).

A made-up Qwen3.5-style hybrid model (fixtures/models/cpu_qwen35_tiny.json, the config of the
cpu0523_qwen35_* fixtures, with make_tiny_model's tokenizer files) is launched on this
CPU-only machine with a mamba state pool of 300 slots; SGLang then caps max_running_requests at
300 / 3 = 100 (three state slots per request with the radix cache).  The doctor must read that cap
from the real log, name the mamba pool as what set it, and predict SGLang's own figures from the
model's config.json (found through the dump's model_path).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pathlib import Path

from conftest import real_sglang_python
from realsglang import harness
from realsglang.make_tiny_model import write_model

CONFIG = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "cpu_qwen35_tiny.json"
FLAGS = ("--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule", "--mem-fraction-static", "0.3",
         "--max-mamba-cache-size", "300", "--mamba-ssm-dtype", "bfloat16", "--skip-server-warmup")


@pytest.fixture(scope="module")
def real_log(tmp_path_factory):
    python = real_sglang_python()
    tmp = tmp_path_factory.mktemp("capacity-real")
    model = write_model(tmp / "hybrid", vocab=512, context=4096)
    (model / "config.json").write_text(CONFIG.read_text())
    launch = harness.build_launch(model, python=python, extra_args=FLAGS)
    log = tmp / "server.log"
    proc = harness.start(launch, log, cwd=tmp)
    try:  # stopped once the scheduler has logged its sizes: on CPU the GDN kernels (Triton) cannot
        # serve a batch of this model, so the server is not asked to
        seen = harness.wait_for_line(proc, log, "max_total_num_tokens=", timeout=900)
    finally:
        harness.stop(proc)
    assert seen, harness.log_tail(log)
    return log


def _doctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_doctor", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_plan_log_names_the_mamba_pool_that_capped_a_real_server(real_log):
    out = _doctor("plan", "--log", str(real_log), "--sglang-version", "0.5.23", "--format", "json")
    assert out.returncode == 0, out.stderr
    cap = json.loads(out.stdout)["capacity"][-1]
    running = cap["caps"]["max_running_requests"]
    assert running["logged"] == 100 and running["capped_by"] == "mamba_pool", running
    assert running["predicted"] == 100  # the planner, from the model's config.json and the log's figures
    # the token count itself moves with this shared host's free RAM between SGLang's two readings;
    # the bytes per token do not: K size / #tokens is half the planner's cell size
    figures = cap["figures"]
    k_bytes = figures["k_gb"] * 2**30 / figures["kv_tokens"]
    assert abs(k_bytes - figures["kv_bytes_per_token_predicted"] / 2) <= 0.005 * 2**30 / figures["kv_tokens"]
    assert any(r["name"] == "mamba state pool (300 slots)" for r in cap["per_gpu_gb"])


@pytest.mark.slow
def test_explain_adds_the_capacity_section_to_the_real_start_up(real_log):
    """The launch sized its pools: explain shows the section whatever happened after (a stop)."""
    out = _doctor("explain", str(real_log), "--format", "text")
    assert out.returncode in (0, 1), out.stderr
    assert "max_running_requests=100" in out.stdout and "capped by the mamba state pool" in out.stdout
