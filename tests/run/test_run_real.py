"""``sglang-doctor run`` against a real SGLang 0.5.23 server on this CPU-only machine.

The launch fails for real (its port is already taken: SGLang loads the model, uvicorn cannot
bind, and the server hangs), the doctor diagnoses it from the real log, stops the hung
server's process group, relaunches on a free port with the validated flag change, waits for
SGLang's ready line and a 200 from /health, stops the server cleanly, and leaves no process
behind.  Needs the venv of scripts/install-real-sglang (see tests/realsglang/README.md);
skipped without it unless SGLANG_DOCTOR_REQUIRE_SGLANG=1, where it fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import doctor_cmd, processes_mentioning, real_sglang_python
from realsglang import harness
from realsglang.make_tiny_model import write_model



@pytest.fixture(scope="module")
def sglang_python() -> Path:
    python = real_sglang_python()
    return python


@pytest.mark.slow
def test_run_fixes_a_taken_port_and_reaches_a_healthy_server(sglang_python, tmp_path):
    model = write_model(tmp_path / "tinymodel-run")
    launch = harness.build_launch(model, python=sglang_python)
    log = tmp_path / "server.log"
    with socket.socket() as blocker:
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind((launch.host, launch.port))
        blocker.listen()
        t0 = time.monotonic()
        proc = subprocess.run(
            [*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--until-ready", "--yes",
             "--settle", "5", "--stop-grace", "20", "--ready-timeout", "900", "--", *launch.argv],
            env=launch.env, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL,
        )
        elapsed = time.monotonic() - t0
    try:
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        hist = json.loads(Path(f"{log}.attempts.json").read_text())
        assert proc.returncode == 0, (proc.stderr[-3000:], Path(log).read_text()[-3000:])
        first, second = hist["attempts"]
        assert first["incident"]["category"] == "network.port"
        assert first["incident"]["rule"].startswith("network.port")
        assert "address already in use" in Path(f"{log}.1").read_text()
        new_port = int(second["command"][second["command"].index("--port") + 1])
        assert new_port != launch.port
        assert second["outcome"] == "ready"
        healthy = [e for e in events if e["event"] == "healthy"]
        assert healthy and healthy[0]["url"].endswith(f":{new_port}/health")
        assert "The server is fired up and ready to roll!" in log.read_text()
        print(f"run: 2 attempts, {elapsed:.0f} s in all; ready after {second.get('ready_seconds')} s")
    finally:
        deadline = time.monotonic() + 10
        while processes_mentioning(str(model)) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_mentioning(str(model))
        for pid in left:
            os.kill(pid, 9)
        assert not left, f"server processes left behind: {left}"
