"""Exit codes and records of ``run`` on every path (issue 11, findings 4, 5, 7).

Real CLI subprocesses against the stand-in server (tests/standin/sglang_standin.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd

STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")


pytestmark = pytest.mark.usefixtures("no_standin_left")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def standin(port: int, *extra: str) -> list[str]:
    return [sys.executable, STANDIN, "--model-path", "/models/tiny", "--host", "127.0.0.1", "--port", str(port), *extra]


def run(tmp_path: Path, *args: str, env: dict | None = None, log: Path | None = None, timeout: float = 60):
    log = log or tmp_path / "server.log"
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--settle", "1",
                           "--stop-grace", "5", *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    hist_path = Path(f"{log}.attempts.json")
    return proc, (json.loads(hist_path.read_text()) if hist_path.exists() else None)


class Background:
    """A foreground ``run`` in the background of the test, its JSON events read as they come."""

    def __init__(self, tmp_path: Path, command: list[str], *opts: str, env: dict | None = None):
        self.log = tmp_path / "server.log"
        self.proc = subprocess.Popen([*doctor_cmd(), "run", "--format", "json", "--log", str(self.log), "--settle", "1",
                                      "--stop-grace", "5", *opts, "--", *command], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                     env={**os.environ, **(env or {})})
        self.events: list[dict] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.events.append(json.loads(line))

    def wait_for(self, kind: str, count: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if len([e for e in list(self.events) if e["event"] == kind]) >= count:
                return
            time.sleep(0.05)
        raise AssertionError(f"no {count}x {kind}: {[e['event'] for e in self.events]}")

    def serving_pid(self, attempt: int, timeout: float = 60) -> int:
        """The server's pid once the history says the attempt is serving."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                atts = json.loads(Path(f"{self.log}.attempts.json").read_text())["attempts"]
            except (OSError, ValueError):
                atts = []
            if len(atts) >= attempt and atts[attempt - 1]["outcome"] == "serving":
                return atts[attempt - 1]["pid"]
            time.sleep(0.05)
        raise AssertionError("never serving")

    def finish(self, sig: int | None = signal.SIGINT) -> tuple[int, dict]:
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        return self.proc.returncode, json.loads(Path(f"{self.log}.attempts.json").read_text())


@pytest.mark.parametrize("code", ["1", "-15", "241"])
def test_until_ready_exits_0_whatever_the_server_stops_with(tmp_path, code):
    """Finding 4: the server's own stop status (241, 1, ...) is not run's exit code."""
    proc, hist = run(tmp_path, "--until-ready", "--", *standin(free_port()), env={"STANDIN_SIGTERM_EXIT": code})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert hist["outcome"] == "ready" and hist["attempts"][0]["outcome"] == "ready"


def test_a_server_sigkilled_while_serving_is_an_incident_and_is_restarted(tmp_path):
    """Finding 5: foreground, SIGKILL of the serving server -> incident, restart, never exit 0."""
    bg = Background(tmp_path, standin(free_port()), "--yes")
    os.kill(bg.serving_pid(1), signal.SIGKILL)
    bg.wait_for("healthy", count=2)
    code, hist = bg.finish(signal.SIGINT)
    assert code == 130
    first = hist["attempts"][0]
    assert first["outcome"] == "failed" and first["exit_code"] == 128 + signal.SIGKILL
    assert first["incident"]["category"] == "memory.host_oom"
    assert hist["attempts"][1]["command"] == first["command"]
    assert hist["outcome"] == "interrupted"
    incidents = [e for e in bg.events if e["event"] == "incident"]
    assert incidents and "SIGKILL" in incidents[0]["title"]


def test_a_server_that_dies_silently_while_serving_gives_up_after_the_attempts(tmp_path):
    bg = Background(tmp_path, standin(free_port()), "--yes", "--max-attempts", "2")
    for n in (1, 2):
        os.kill(bg.serving_pid(n), signal.SIGKILL)
    code, hist = bg.finish(None)  # it gives up by itself
    assert code == 1
    assert hist["outcome"] == "gave_up" and len(hist["attempts"]) == 2
