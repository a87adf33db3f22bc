"""``sglang-doctor run`` against the stand-in server (tests/standin/sglang_standin.py).

Every test runs the real CLI as a subprocess and the stand-in as a real server with a real
scheduler child in its process group; the teardown checks that no stand-in process is left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, doctor_cmd, processes_mentioning

STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")


def standin_processes() -> list[int]:
    return processes_mentioning(STANDIN)


@pytest.fixture(autouse=True)
def no_process_left():
    yield
    deadline = time.monotonic() + 5
    while standin_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = standin_processes()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"stand-in processes left behind: {[(p, open(f'/proc/{p}/cmdline', 'rb').read()) for p in left if os.path.exists(f'/proc/{p}')]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(port: int, *extra: str) -> list[str]:
    return [sys.executable, STANDIN, "--model-path", "/models/tiny", "--host", "127.0.0.1", "--port", str(port),
            *extra]


def run_doctor(tmp_path: Path, command: list[str], *opts: str, env: dict | None = None, timeout: float = 60):
    log = tmp_path / "server.log"
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--settle", "1",
                           "--stop-grace", "5", *opts, "--", *command],
                          capture_output=True, text=True, env=full_env, timeout=timeout, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    hist_path = Path(f"{log}.attempts.json")
    hist = json.loads(hist_path.read_text()) if hist_path.exists() else None
    return proc, events, hist, log


def test_healthy_launch_until_ready(tmp_path):
    port = free_port()
    # a long grace: on a loaded machine the stand-in may take seconds to log its SIGTERM line,
    # and a SIGKILL after a short grace would lose the line this test looks for
    proc, events, hist, log = run_doctor(tmp_path, launch(port), "--until-ready", "--stop-grace", "60",
                                         timeout=120)
    assert proc.returncode == 0, proc.stderr
    kinds = [e["event"] for e in events]
    assert "ready" in kinds and "healthy" in kinds
    assert kinds[-1] == "run_summary" and events[-1]["outcome"] == "ready"
    assert hist["outcome"] == "ready" and len(hist["attempts"]) == 1
    assert "SIGTERM received" in log.read_text()  # stopped cleanly through the main process


def test_relaunch_with_raised_mem_fraction_until_ready(tmp_path):
    port = free_port()
    proc, events, hist, log = run_doctor(tmp_path, launch(port, "--mem-fraction-static", "0.5"), "--until-ready",
                                         "--yes", env={"STANDIN_MIN_MFS": "0.8"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    attempts = hist["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "ready"]
    assert attempts[0]["incident"]["rule"] == "memory.kv_pool.weights_leave_no_memory"
    second = attempts[1]["command"]
    value = float(second[second.index("--mem-fraction-static") + 1])
    assert 0.8 < value <= 0.95
    # everything else of the user's command is kept as written
    assert [t for t in second if t != second[second.index("--mem-fraction-static") + 1]] == \
           [t for t in attempts[0]["command"] if t != "0.5"]
    relaunch = next(e for e in events if e["event"] == "relaunch")
    assert any("--mem-fraction-static 0.5 ->" in line for line in relaunch["changes"])
    # each attempt's log is kept
    assert "Loaded weights leave no GPU memory" in Path(f"{log}.1").read_text()
    assert attempts[0]["log"] == f"{log}.1" and attempts[1]["log"] == str(log)


def test_attempt_budget_is_respected(tmp_path):
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.5"), "--until-ready",
                                       "--yes", "--max-attempts", "1", env={"STANDIN_MIN_MFS": "0.8"})
    assert proc.returncode == 1
    assert len(hist["attempts"]) == 1
    assert "--max-attempts 1" in hist["reason"]


def test_never_relaunches_the_same_configuration(tmp_path):
    # No fraction up to the remedy's bound (0.95) is enough: the loop must stop by itself.
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.5"), "--until-ready",
                                       "--yes", "--max-attempts", "6", env={"STANDIN_MIN_MFS": "0.99"})
    assert proc.returncode == 1
    commands = [tuple(a["command"]) for a in hist["attempts"]]
    assert len(commands) == len(set(commands)) < 6
    assert hist["outcome"] == "gave_up"


def test_stops_when_a_human_is_needed(tmp_path):
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port()), "--until-ready", "--yes",
                                       env={"STANDIN_REPLAY": str(FIXTURES / "other" / "missing_module_vllm_0523.log")})
    assert proc.returncode == 1
    assert len(hist["attempts"]) == 1
    assert "needs a human" in hist["reason"]


def test_without_a_terminal_a_relaunch_needs_yes(tmp_path):
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.5"), "--until-ready",
                                       env={"STANDIN_MIN_MFS": "0.8"})
    assert proc.returncode == 1
    assert len(hist["attempts"]) == 1 and "--yes" in hist["reason"]
    assert hist["attempts"][0]["change"], "the proposed change is recorded even when not applied"


def test_port_in_use_moves_to_a_free_port(tmp_path):
    port = free_port()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        proc, events, hist, _ = run_doctor(tmp_path, launch(port), "--until-ready", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = hist["attempts"]
    assert first["incident"]["category"] == "network.port"
    new_port = int(second["command"][second["command"].index("--port") + 1])
    assert new_port != port


def test_lingering_children_are_killed(tmp_path):
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.5"), "--until-ready",
                                       "--max-attempts", "1",
                                       env={"STANDIN_MIN_MFS": "0.8", "STANDIN_LINGER": "1"})
    assert proc.returncode == 1
    # the autouse fixture checks that the lingering scheduler is gone


def _start_background(tmp_path: Path, env: dict) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "server.log"
    proc = subprocess.Popen([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--stop-grace", "5",
                             "--", *launch(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env={**os.environ, **env})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and "Load weight begin" in log.read_text():
            return proc, log
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the stand-in did not start")


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_the_server(tmp_path, sig, code):
    proc, log = _start_background(tmp_path, {"STANDIN_START_DELAY": "60"})
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    assert proc.returncode == code, (out[-2000:], err[-2000:], hist)
    assert hist["outcome"] == "interrupted", hist
    assert hist["attempts"][0]["outcome"] == "interrupted", hist


def test_doctor_killed_mid_launch_leaves_no_server(tmp_path):
    proc, _ = _start_background(tmp_path, {"STANDIN_START_DELAY": "60"})
    proc.kill()  # SIGKILL: no handler of ours runs; the kernel's parent-death signal must do it
    proc.wait(timeout=10)
    # the autouse fixture waits up to 5 s and fails if any stand-in process survives


def test_dry_run_runs_nothing(tmp_path):
    proc, events, hist, log = run_doctor(tmp_path, launch(free_port()), "--dry-run")
    assert proc.returncode == 0
    assert events[0]["event"] == "dry_run" and events[0]["command"][1] == STANDIN
    assert not log.exists() and hist is None


def test_explain_reads_the_attempts_history(tmp_path):
    proc, events, hist, log = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.5"),
                                         "--until-ready", "--yes", env={"STANDIN_MIN_MFS": "0.8"})
    assert proc.returncode == 0
    out = subprocess.run([*doctor_cmd(), "explain", "--format", "text", f"{log}.attempts.json"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "attempt 1: failed" in out.stdout and "attempt 2: ready" in out.stdout
    assert "memory.kv_pool.weights_leave_no_memory" in out.stdout


def test_log_text_never_reaches_the_command(tmp_path):
    """A log line crafted to look like advice must not be executed or copied into argv."""
    hostile = tmp_path / "hostile.log"
    marker = tmp_path / "pwned"
    src = (FIXTURES / "memory" / "weights_leave_no_memory_0523.log").read_text()
    src = src.replace("If using speculative decoding", f"Run --port $(touch {marker}) ; --mem-fraction-static=`id`")
    hostile.write_text(src)
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port(), "--mem-fraction-static", "0.2"), "--until-ready",
                                       "--yes", "--max-attempts", "2", env={"STANDIN_REPLAY": str(hostile)})
    assert not marker.exists()
    original = hist["attempts"][0]["command"]
    for att in hist["attempts"][1:]:
        added = [t for t in att["command"] if t not in original]
        assert all(t.replace(".", "").isdigit() for t in added), added


def test_a_crash_while_serving_is_diagnosed_and_the_loop_goes_on(tmp_path):
    """Foreground mode: after ready the doctor supervises; a crash is a runtime incident."""
    proc, events, hist, log = run_doctor(tmp_path, launch(free_port()), "--yes", "--max-attempts", "3",
                                         env={"STANDIN_CRASH_AFTER_READY": "1"})
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    first = hist["attempts"][0]
    assert first["incident"]["category"] == "runtime.crash"
    assert first["incident"]["rule"] == "runtime.crash.illegal_memory_access"
    assert first.get("ready_seconds") is not None  # it was ready and serving before it crashed
    second = hist["attempts"][1]["command"]
    assert second[second.index("--cuda-graph-backend-decode") + 1] == "disabled"
    # the same crash again: the next remedy needs a human, so the loop stops
    assert len(hist["attempts"]) == 2 and "needs a human" in hist["reason"]


def test_via_prefix_runs_the_launch_and_the_health_check_through_it(tmp_path):
    """--via "env": a real command prefix, as "ssh host pct exec 129 --" would be."""
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port()), "--until-ready", "--via", "env")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [e for e in events if e["event"] == "healthy"]
    assert hist["attempts"][0]["command"][0] == sys.executable  # the prefix is not part of the command


def test_on_a_terminal_it_asks_before_relaunching(tmp_path):
    """stdin is a terminal (a real pty): the flag diff is shown and the answer decides."""
    import pty

    log = tmp_path / "server.log"
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--settle", "1",
                                 "--stop-grace", "5", "--until-ready", "--",
                                 *launch(free_port(), "--mem-fraction-static", "0.5")],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "STANDIN_MIN_MFS": "0.8"})
        history = Path(f"{log}.attempts.json")
        deadline = time.monotonic() + 60
        # the proposed change is in the history before the question is asked
        while time.monotonic() < deadline and not (history.exists() and '"change"' in history.read_text()):
            time.sleep(0.1)
        os.write(master, b"y\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 0, err.decode()[-2000:]
    text = err.decode()
    assert "relaunch with:" in text and "~ --mem-fraction-static 0.5 ->" in text and "relaunch?" in text
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    assert [a["outcome"] for a in hist["attempts"]] == ["failed", "ready"]
