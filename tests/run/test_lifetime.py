"""Every exit path of the doctor takes the whole server tree down (issue 11, findings 3 and 6).

The server runs under ``run/wrapper.py``'s sh wrapper, which holds a pipe from the doctor;
these tests kill the doctor every way there is, with the stand-in started directly and
behind a ``bash -c '...'`` wrapper that forks it, and look in /proc for anything left.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd, processes_mentioning

STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_gone(marker: str, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while processes_mentioning(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = processes_mentioning(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def commands(marker: str) -> dict[str, list[str]]:
    """The stand-in as the command itself, and behind a bash wrapper that forks it."""
    base = [sys.executable, STANDIN, "--model-path", f"/models/{marker}", "--host", "127.0.0.1",
            "--port", str(free_port())]
    return {"direct": base,
            "bash": ["bash", "-c", shlex.join(base) + "; echo the server exited"]}


def start(tmp_path: Path, command: list[str], *opts: str, env: dict | None = None, until: str = "Load weight begin"):
    log = tmp_path / "server.log"
    proc = subprocess.Popen([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--stop-grace", "3",
                             "--settle", "1", *opts, "--", *command], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and until in log.read_text(errors="replace"):
            return proc, log
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the stand-in did not start")


@pytest.mark.parametrize("shape", ["direct", "bash"])
@pytest.mark.parametrize("how", ["sigkill", *(pytest.param(h, marks=pytest.mark.slow)
                                              for h in ("sigterm", "ctrl-c", "ctrl-c x3"))])
def test_every_way_the_doctor_ends_leaves_no_server(tmp_path, shape, how):
    marker = f"lifetime-{os.getpid()}-{shape}-{how.replace(' ', '')}"
    proc, log = start(tmp_path, commands(marker)[shape], env={"STANDIN_START_DELAY": "120"})
    assert processes_mentioning(marker), "the server runs"
    if how == "sigkill":
        proc.kill()  # no handler of ours runs: only the wrapper's lifeline can act
    elif how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    elif how == "ctrl-c":
        proc.send_signal(signal.SIGINT)
    else:
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.2)
    proc.wait(timeout=60)
    assert wait_gone(marker) == [], f"{shape} server left after {how}"
    expected = {"sigkill": -9, "sigterm": 143, "ctrl-c": 130, "ctrl-c x3": 130}[how]
    assert proc.returncode == expected, proc.stderr.read().decode()[-2000:]
    if how != "sigkill":
        hist = json.loads(Path(f"{log}.attempts.json").read_text())
        assert hist["outcome"] == "interrupted"
        assert "Traceback" not in proc.stderr.read().decode()


@pytest.mark.parametrize("shape", ["direct", "bash"])
def test_until_ready_and_relaunch_leave_no_server(tmp_path, shape):
    marker = f"lifetime-{os.getpid()}-ready-{shape}"
    command = commands(marker)[shape]
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--log", str(tmp_path / "s.log"), "--until-ready",
                           "--stop-grace", "3", "--", *command], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert wait_gone(marker, timeout=1) == []


def test_a_command_that_does_not_exist_is_one_line_and_exit_2(tmp_path):
    log = tmp_path / "s.log"
    proc = subprocess.run([*doctor_cmd(), "run", "--log", str(log), "--", "/nonexistent/python3", "-m", "x"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "/nonexistent/python3" in proc.stderr


def test_detach_leaves_the_server_running_and_its_pid_in_the_pid_file(tmp_path):
    """--detach: the one exit path that keeps the server; the pid file names its main process."""
    marker = f"lifetime-{os.getpid()}-detach"
    pid_file = tmp_path / "server.pid"
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--log", str(tmp_path / "s.log"), "--detach",
                           "--pid-file", str(pid_file), "--", *commands(marker)["direct"]],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        pid = int(pid_file.read_text())
        assert b"sglang_standin" in Path(f"/proc/{pid}/cmdline").read_bytes()
        time.sleep(1)  # the doctor is gone; the server must not follow it
        assert pid in processes_mentioning(marker)
        os.kill(pid, signal.SIGTERM)
    finally:
        assert wait_gone(marker) == []
