"""The bounded wait for a provisional incident's evidence (sglang_doctor/confirm_wait.py):
``--confirm-after`` (before ready: no new log output) and ``--confirm-serving-after`` (while
serving: no batch line of its launch), in ``watch`` and pipe mode.

Real ``watch`` and pipe-mode subprocesses on real files and pipes, with 0 (stands at the first
check after the reader caught up with the input available: the input is written whole before
that, and nothing written later can change the outcome) or a value so large that only the
log's lines decide; the waits in between run on an injected clock, in process.  No answer
depends on timing: the waits are for output, with generous limits, never sleeps.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.export.test_metrics import scrape
from tests.incidents.test_survived_before_ready import CAPTURED, SCHEDULER_DIED
from tests.incidents.test_survived_while_serving import GOES_ON, HANDLED, SERVING, UP, _decode, _ok
from tests.run.test_provisional_exit import (COMES_UP, PROVISIONAL, RELAUNCH_DIES, Doctor, _append, _provisional,
                                             _watch)
from tests.run.test_run import free_port

HANDLED_WHILE_SERVING = UP + SERVING + HANDLED["dflash"]  # a provisional "serving" incident, nothing after it


def _argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "sglang_doctor", *args]


def _confirmed(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "confirmed"]


# -- watch ---------------------------------------------------------------------------------


def test_watch_exit_on_incident_stops_when_the_log_stays_quiet_after_a_provisional_incident(tmp_path):
    """The log stops after a caught CUDA OOM before ready: with --confirm-after 0 it stands as
    soon as the log is read (old code: no such option; before it, a wait for ever)."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    doctor = _watch(log, "--confirm-after", "0")
    try:
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        [incident] = [e for e in events if e["event"] == "incident"]
        [confirmed] = _confirmed(events)
        assert incident["provisional"] == "ready"
        assert confirmed["confirms"] == {"rule": incident["rule"], "lines": incident["lines"]}
        assert confirmed["after_quiet_s"] == 0 and confirmed["unresolved"] is True and "line" not in confirmed
        assert "no ready line and no new log output for 0 s" in confirmed["message"]
        assert "assumed" in confirmed["message"] and confirmed["severity_text"] == "ERROR"
    finally:
        doctor.stop()


def test_watch_with_a_long_confirm_after_lets_the_log_decide(tmp_path):
    """A wait longer than the test: the ready line withdraws the incident (no ``confirmed``),
    and a later failure that stands stops the watch."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    doctor = _watch(log, "--confirm-after", "1000000")
    try:
        assert doctor.until(_provisional) is not None
        _append(log, COMES_UP)
        assert doctor.until(lambda ev: ev["event"] == "warning" and ev.get("withdraws")) is not None
        _append(log, RELAUNCH_DIES)
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        assert _confirmed(events) == []
    finally:
        doctor.stop()


def test_pipe_mode_with_a_long_confirm_after_confirms_on_the_death_not_on_the_quiet():
    doctor = Doctor("-", "--flush-after", "0.3", "--confirm-after", "1000000", stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write(PROVISIONAL.encode())
        doctor.proc.stdin.flush()
        assert doctor.until(_provisional) is not None
        doctor.proc.stdin.write(SCHEDULER_DIED.encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        [confirmed] = _confirmed(events)
        assert "died after it" in confirmed["message"] and "after_quiet_s" not in confirmed
        assert not confirmed.get("unresolved")
    finally:
        doctor.stop()


def test_watch_batch_lines_already_read_decide_before_the_wait(tmp_path):
    """--confirm-serving-after 0 judges by all the input read: the two batch lines after the
    handled failure are in the file (the scanner keeps them until an idle gap), so the incident
    is withdrawn, not confirmed.  The death appended afterwards ends the watch."""
    log = tmp_path / "serve.log"
    log.write_text(HANDLED_WHILE_SERVING + GOES_ON)
    doctor = _watch(log, "--confirm-serving-after", "0")
    try:
        withdrawn = doctor.until(lambda ev: ev["event"] == "warning" and ev.get("withdraws"))
        assert withdrawn is not None and withdrawn["kind"] == "survived_while_serving"
        _append(log, RELAUNCH_DIES)
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        assert _confirmed(events) == []
    finally:
        doctor.stop()


def test_watch_metrics_follow_a_quiet_confirmation(tmp_path):
    """The exporter: the confirmed counter up, the provisional gauge back to 0 (old code: the
    gauge stays at 1 for as long as the log stays quiet)."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    port = free_port()
    doctor = Doctor("watch", str(log), "--flush-after", "0.3", "--poll-interval", "0.1", "--confirm-after", "0",
                    "--metrics-port", str(port), "--node", "n1")
    try:
        confirmed = doctor.until(lambda ev: ev["event"] == "confirmed")
        samples = scrape(port)  # the exporter saw the event before it was printed
        labels = (f'category="{confirmed["category"]}",node="n1",phase="{confirmed["phase"]}",'
                  f'rule="{confirmed["rule"]}"')
        assert samples[f"sglang_doctor_incidents_total{{{labels}}}"] == 1
        assert samples[f"sglang_doctor_incidents_confirmed_total{{{labels}}}"] == 1
        assert samples[f"sglang_doctor_incidents_provisional{{{labels}}}"] == 0
    finally:
        doctor.stop()


# -- pipe mode ------------------------------------------------------------------------------


def test_pipe_mode_confirms_a_handled_failure_on_an_idle_server():
    """``tail -f | sglang-doctor -`` on a server that went idle after a handled failure: with
    --confirm-serving-after 0 it stands while the pipe is still open; batch lines that come
    later do not take it back (it was decided)."""
    doctor = Doctor("-", "--flush-after", "0.3", "--confirm-serving-after", "0", stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write(HANDLED_WHILE_SERVING.encode())
        doctor.proc.stdin.flush()
        confirmed = doctor.until(lambda ev: ev["event"] == "confirmed")
        assert confirmed["provisional"] == "serving" and confirmed["after_quiet_s"] == 0
        assert "no batch line of launch 1 for 0 s" in confirmed["message"] and confirmed["unresolved"] is True
        doctor.proc.stdin.write(GOES_ON.encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        assert len(_confirmed(events)) == 1
        assert [e for e in events if e["event"] == "warning" and e.get("withdraws")] == []
        assert events[-1]["event"] == "summary" and events[-1]["incidents"] == 1
    finally:
        doctor.stop()


def test_pipe_mode_startup_wait_does_not_apply_while_serving():
    """--confirm-after (before ready) leaves an incident while serving to its own wait: the
    batch lines written later withdraw it."""
    doctor = Doctor("-", "--flush-after", "0.3", "--confirm-after", "0", "--confirm-serving-after", "1000000",
                    stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write(HANDLED_WHILE_SERVING.encode())
        doctor.proc.stdin.flush()
        assert doctor.until(lambda ev: ev["event"] == "incident" and ev.get("provisional") == "serving")
        doctor.proc.stdin.write(GOES_ON.encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 0
        assert _confirmed(events) == []
        assert len([e for e in events if e["event"] == "warning" and e.get("withdraws")]) == 1
    finally:
        doctor.stop()


# -- the options --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["watch", "serve.log"], ["-"]])
@pytest.mark.parametrize("option,value", [("--confirm-after", "-1"), ("--confirm-after", "soon"),
                                          ("--confirm-serving-after", "nan"), ("--confirm-serving-after", "inf")])
def test_a_bad_wait_is_one_line_and_exit_2(tmp_path, command, option, value):
    proc = subprocess.run(_argv(*command, option, value), capture_output=True, text=True, cwd=str(tmp_path),
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert option in line and "number of seconds" in line


@pytest.mark.parametrize("command", [["watch"], ["-"]])
def test_help_documents_both_waits(command):
    out = subprocess.run(_argv(*command, "--help"), capture_output=True, text=True, timeout=60).stdout
    assert "--confirm-after" in out and "--confirm-serving-after" in out


# -- the clock, injected ----------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _live(pack, startup_s: float, serving_s: float):
    from sglang_doctor.confirm_wait import ConfirmWait
    from sglang_doctor.pipeline import StreamPipeline

    clock = Clock()
    pipe = StreamPipeline(pack)
    return pipe, ConfirmWait(pipe, startup_s, serving_s, clock=clock), clock


def _feed(pipe, wait, text: str) -> list[dict]:
    """As the live loops do: feed, then (the input read) the idle flush and the wait's check."""
    events = pipe.feed(text.encode())
    wait.saw_input()
    events += pipe.flush_idle()
    return events + wait.check()


def test_a_start_up_that_still_writes_keeps_waiting(pack):
    """Before ready, any new output restarts the wait; silence for the whole wait makes it stand."""
    pipe, wait, clock = _live(pack, 600, 3600)
    events = _feed(pipe, wait, PROVISIONAL)
    assert [e.get("provisional") for e in events if e["event"] == "incident"] == ["ready"]
    assert wait.remaining() == 600
    clock.now = 599
    assert wait.check() == [] and wait.remaining() == 1
    _feed(pipe, wait, CAPTURED)  # CUDA graph capture ends: still starting, no ready line yet
    clock.now = 1198
    assert wait.check() == [] and wait.remaining() == 1
    clock.now = 1199
    [confirmed] = wait.check()
    assert confirmed["event"] == "confirmed" and confirmed["after_quiet_s"] == 600
    assert pipe.undecided() == [] and wait.remaining() is None


def test_while_serving_only_a_batch_line_restarts_the_wait(pack):
    """An access line (a health check's) says nothing of the scheduler; one batch line does
    (the second would withdraw the incident)."""
    pipe, wait, clock = _live(pack, 600, 3600)
    events = _feed(pipe, wait, HANDLED_WHILE_SERVING)
    assert [e.get("provisional") for e in events if e["event"] == "incident"] == ["serving"]
    clock.now = 3000
    _feed(pipe, wait, _ok("03:00"))
    assert wait.check() == [] and wait.remaining() == 600
    clock.now = 3500
    _feed(pipe, wait, _decode("03:10"))
    assert wait.remaining() == 3600
    clock.now = 7099
    assert wait.check() == []
    clock.now = 7100
    [confirmed] = wait.check()
    assert confirmed["provisional"] == "serving" and confirmed["after_quiet_s"] == 3600


def test_nothing_waits_without_a_provisional_incident(pack):
    pipe, wait, clock = _live(pack, 0, 0)
    _feed(pipe, wait, UP + SERVING)
    clock.now = 10 ** 6
    assert wait.remaining() is None and wait.check() == []
