"""The real-SGLang tier: a genuine SGLang 0.5.23 server started, checked and stopped here.

Why: every other test reads logs; this one proves the harness the `run` supervisor relies on
(tests/realsglang/harness.py) really brings a server up on this CPU-only machine, that the
doctor reads a real healthy log as healthy, and that a stop leaves no process behind.

Needs the venv of scripts/install-real-sglang (``$SGLANG_VENV``, see tests/realsglang/
README.md).  Without it the slow test is skipped, unless SGLANG_DOCTOR_REQUIRE_SGLANG=1,
where it fails: CI must not pass by silently skipping the one real test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, doctor_cmd, real_sglang_python
from realsglang import harness
from realsglang.make_tiny_model import write_model

REAL_HEALTHY = FIXTURES / "real" / "healthy_sigterm_0523.log"


def explain_events(log: Path) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        doctor_cmd("explain", str(log), "--format", "json"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events


def assert_healthy_diagnosis(log: Path) -> None:
    rc, events = explain_events(log)
    incidents = [e for e in events if e["event"] == "incident"]
    assert incidents == [], json.dumps(incidents, indent=1)[:4000]
    assert rc == 0
    kinds = {e["event"] for e in events}
    assert {"launch", "ready", "summary"} <= kinds, kinds


@pytest.fixture(scope="module")
def sglang_python() -> Path:
    python = real_sglang_python()
    return python


def test_real_healthy_fixture_has_no_incident():
    """The captured real healthy log (fixtures/real/) must not be diagnosed as a failure."""
    assert_healthy_diagnosis(REAL_HEALTHY)


@pytest.mark.slow
def test_real_server_starts_serves_and_stops_clean(sglang_python, tmp_path):
    model = write_model(tmp_path / "tiny")
    launch = harness.build_launch(model, python=sglang_python)
    log = tmp_path / "server.log"
    proc = harness.start(launch, log, cwd=tmp_path)
    try:
        try:
            seconds = harness.wait_ready(proc, launch, log, timeout=900)
        except (harness.ServerExited, harness.NotReady) as err:
            pytest.fail(f"the real SGLang server did not start: {err}")
        assert harness.http_status(launch.base_url + "/health") == 200
        status, body = harness.post_json(
            launch.base_url + "/generate",
            {"text": "hello world", "sampling_params": {"max_new_tokens": 3}},
        )
        assert status == 200, body
        assert json.loads(body)["meta_info"]["completion_tokens"] == 3
        print(f"ready after {seconds:.1f} s", file=sys.stderr)
    finally:
        stopped = harness.stop(proc)
    # Nothing of the server's process group may survive the stop.
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    # A clean stop: SIGTERM to the main PID was enough, SGLang drained and exited 0.
    assert not stopped.killed_group, stopped.notes
    assert stopped.returncode == 0, harness.log_tail(log)
    text = log.read_text(errors="replace")
    assert "SIGTERM received" in text
    assert "crashed with exit code" not in text
    assert_healthy_diagnosis(log)


@pytest.mark.slow
def test_vllm_rope_stub_matches_sglang_reference(sglang_python):
    """The stand-in vllm rotary_embedding computes what SGLang's forward_native computes."""
    proc = subprocess.run(
        [str(sglang_python), str(harness.HERE / "rope_stub_check.py")],
        env=harness.launch_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"neox": True, "gptj": True}
