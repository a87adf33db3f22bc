"""Live modes (pipe ``-``, ``run``) and an incident the launch may yet survive (docs/DESIGN.md
"Survived before ready" and "Survived while serving"): reported at once, marked provisional,
then withdrawn with a line of its own when the launch comes up (or goes on serving) after it;
the exit status and ``run``'s verdict follow the withdrawal.  Real subprocesses and pipes; no
answer depends on timing (the logs are written whole before the doctor reads them, or the
stand-in waits on its own clock, which only the old code's ``--settle`` could race).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.incidents.test_survived_before_ready import HEALTHY_WITH_CAUGHT_OOM, SCHEDULER_DIED
from tests.incidents.test_survived_while_serving import CRASH, GOES_ON, HANDLED, SERVING, UP
from tests.run.test_run import free_port, launch, no_process_left, run_doctor  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]


def _pipe(text: str, fmt: str = "json") -> tuple[int, list[dict], str]:
    """``cat LOG | sglang-doctor -``: the log through a real pipe, as ``tail -f`` gives it."""
    cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    doctor = subprocess.Popen([sys.executable, "-m", "sglang_doctor", "-", "--format", fmt], stdin=cat.stdout,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                              env={**os.environ, "NO_COLOR": "1"})
    cat.stdout.close()
    cat.stdin.write(text.encode())
    cat.stdin.close()
    out, err = doctor.communicate(timeout=120)
    cat.wait(timeout=30)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")] if fmt == "json" else []
    return doctor.returncode, events, out + err


def _withdrawals(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("withdraws")]


def test_pipe_withdraws_a_startup_warning_when_the_launch_comes_up():
    code, events, _ = _pipe(HEALTHY_WITH_CAUGHT_OOM)
    incidents = [e for e in events if e["event"] == "incident"]
    assert [i.get("provisional") for i in incidents] == ["ready"]
    [withdrawn] = _withdrawals(events)
    assert withdrawn["kind"] == "survived_before_ready" and withdrawn["withdraws"]["lines"] == incidents[0]["lines"]
    kinds = [e["event"] for e in events]
    assert kinds.index("ready") < kinds.index("warning")  # said where the log says it
    assert events[-1]["incidents"] == 0 and events[-1]["survived"] == 1
    assert code == 0


def test_pipe_withdraws_a_handled_failure_while_serving_in_text():
    code, _, out = _pipe(UP + SERVING + HANDLED["llava"] + GOES_ON, fmt="text")
    assert "provisional: SGLang logs failures it handles" in out
    assert "the server went on serving: the provisional incident reported at" in out
    assert code == 0


def test_pipe_keeps_a_provisional_incident_when_the_launch_dies():
    """The scheduler died before ready: nothing is withdrawn, exit 1."""
    text = HEALTHY_WITH_CAUGHT_OOM.split("[2026-01-01 00:01:07")[0] + SCHEDULER_DIED
    code, events, _ = _pipe(text)
    assert _withdrawals(events) == [] and code == 1


def test_pipe_keeps_a_handled_line_when_the_scheduler_crashes_next():
    code, events, _ = _pipe(UP + SERVING + HANDLED["dflash"] + CRASH)
    assert _withdrawals(events) == [] and code == 1
    assert events[-1]["incidents"] >= 1


def test_run_waits_for_the_ready_line_after_a_startup_warning(tmp_path, no_process_left):
    """A caught CUDA OOM logged while the weights load, then a pause longer than --settle (1 s):
    the old loop stopped the server as failed at --settle; now it waits for the ready line (or
    the server's exit, or --ready-timeout), withdraws the incident and the launch is ready."""
    warning = ("FlashInfer workspace preflight probe failed (CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
               "a total capacity of 79.19 GiB of which 1.50 GiB is free.). Skipping allreduce fusion.")
    proc, events, hist, _ = run_doctor(tmp_path, launch(free_port()), "--until-ready", "--stop-grace", "60",
                                       env={"STANDIN_STARTUP_WARNING": warning, "STANDIN_WARNING_DELAY": "3"},
                                       timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert [e.get("provisional") for e in events if e["event"] == "incident"] == ["ready"]
    assert len(_withdrawals(events)) == 1
    assert "healthy" in [e["event"] for e in events]
    assert hist["outcome"] == "ready" and len(hist["attempts"]) == 1


def test_run_takes_back_a_handled_failure_when_the_server_still_answers(tmp_path, no_process_left):
    """run's /health probe is evidence: the stand-in logs a handled failure after ready and then
    no batch line (an idle server).  After --settle, /health still answers, so the provisional
    incident is withdrawn in the event stream, once, and the exporter's gauge of undecided
    incidents falls back to 0 (old code: a bare warning without ``withdraws``: the gauge stayed
    at 1 for as long as the server ran, and nothing counted the incident as withdrawn)."""
    import signal
    import threading
    import time

    from tests.export.test_metrics import scrape
    from tests.run.test_run import doctor_cmd

    injected = tmp_path / "after_ready.txt"
    injected.write_text(HANDLED["hicache"])
    log, mport = tmp_path / "server.log", free_port()
    proc = subprocess.Popen([*doctor_cmd(), "run", "--yes", "--format", "json", "--log", str(log), "--settle", "1",
                             "--stop-grace", "30", "--metrics-port", str(mport), "--node", "n1", "--",
                             *launch(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True,
                            env={**os.environ, "NO_COLOR": "1", "STANDIN_AFTER_READY": str(injected)})
    events: list[dict] = []
    reader = threading.Thread(target=lambda: events.extend(json.loads(x) for x in proc.stdout if x.startswith("{")))
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not _withdrawals(list(events)):
            time.sleep(0.1)
        assert _withdrawals(list(events)), [(e["event"], e.get("message")) for e in events]
        samples = scrape(mport)  # the exporter saw the withdrawal before it was printed
    finally:
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        proc.wait(timeout=60)
        reader.join(timeout=30)
    assert proc.returncode == 130, err[-2000:]
    [incident] = [e for e in events if e["event"] == "incident"]
    [withdrawn] = _withdrawals(events)
    assert incident["provisional"] == "serving"
    assert withdrawn["withdraws"] == {"rule": incident["rule"], "lines": incident["lines"]}
    assert withdrawn["kind"] == "survived_while_serving" and "still answered http://127.0.0.1:" in withdrawn["message"]
    assert not [e for e in events if e["event"] in ("relaunch", "confirmed")]
    labels = f'category="{incident["category"]}",node="n1",phase="{incident["phase"]}",rule="{incident["rule"]}"'
    assert samples[f"sglang_doctor_incidents_provisional{{{labels}}}"] == 0
    assert samples[f"sglang_doctor_withdrawn_total{{{labels}}}"] == 1
