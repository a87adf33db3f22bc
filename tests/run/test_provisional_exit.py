"""A provisional incident (a failure SGLang logs and may go on from) must not act as a confirmed
one in the live modes: ``watch --exit-on-incident`` waits for its decision (confirmed: exit 1;
withdrawn: following goes on), pipe mode says when the input ends before the evidence, and a
``confirmed`` event tells every consumer when one stands (docs/CONTRACT.md).

Real files, real ``watch`` and pipe-mode subprocesses, real pipes.  The test appends each part
of the log only after the doctor has printed what the previous part decides, so no answer
depends on timing (the waits are for output, with generous limits, never sleeps).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.incidents.test_survived_before_ready import (CAPTURED, CAUGHT_OOM, DUMP, READY, SCHEDULER_DIED,
                                                        SCHEDULER_UP, START, UVICORN, WARMUP)

ROOT = Path(__file__).resolve().parents[2]
PROVISIONAL = DUMP + START + CAUGHT_OOM  # a caught CUDA OOM before ready: provisional "ready"
COMES_UP = CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY  # ... and the launch comes up after it
# a relaunch that dies sizing its pools (a confirmed incident at once)
RELAUNCH_DIES = (
    "[2026-01-01 00:10:00] server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'host': '127.0.0.1', "
    "'port': 30000, 'tp_size': 2, 'mem_fraction_static': 0.88, 'sglang_version': '0.5.23'}\n"
    + SCHEDULER_DIED.replace("00:00:41", "00:10:41"))


class Doctor:
    """A doctor subprocess whose JSON events are read as they come."""

    def __init__(self, *args: str, stdin=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "sglang_doctor", *args, "--format", "json"],
                                     stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT),
                                     env={**os.environ, "NO_COLOR": "1"})
        self.events: list[dict] = []
        self._buf = b""

    def until(self, predicate, timeout: float = 60.0) -> dict | None:
        """Read events until one satisfies ``predicate`` (returned) or stdout ends (None)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.startswith(b"{"):
                    ev = json.loads(line)
                    self.events.append(ev)
                    if predicate(ev):
                        return ev
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    return None
                self._buf += chunk
        raise AssertionError(f"no such event in {timeout} s; events so far: {[e['event'] for e in self.events]}")

    def rest(self) -> list[dict]:
        self.until(lambda ev: False, timeout=60)
        return self.events

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def _provisional(ev: dict) -> bool:
    return ev["event"] == "incident" and ev.get("provisional") == "ready"


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _watch(log: Path, *extra: str) -> Doctor:
    return Doctor("watch", str(log), "--exit-on-incident", "--flush-after", "0.3", "--poll-interval", "0.1", *extra)


def test_watch_exit_on_incident_follows_on_after_a_withdrawn_provisional_incident(tmp_path):
    """Old code: exit 1 at the provisional incident, a warning the server then survived."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    doctor = _watch(log)
    try:
        assert doctor.until(_provisional) is not None
        _append(log, COMES_UP)
        withdrawn = doctor.until(lambda ev: ev["event"] == "warning" and ev.get("withdraws"))
        assert withdrawn is not None, "watch stopped at a provisional incident"
        _append(log, RELAUNCH_DIES)  # a failure that stands: now it stops
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        incidents = [e for e in events if e["event"] == "incident"]
        assert len(incidents) == 2 and not incidents[-1].get("provisional")
        assert incidents[-1]["lines"][0] > withdrawn["ready_line"]
    finally:
        doctor.stop()


def test_watch_exit_on_incident_stops_when_the_launch_dies_after_a_provisional_incident(tmp_path):
    """The launch dies before ready: the provisional incident stands, exit 1 (old code: exit 1
    at once, before the death was written)."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    doctor = _watch(log)
    try:
        first = doctor.until(_provisional)
        _append(log, SCHEDULER_DIED)
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        incidents = [e for e in events if e["event"] == "incident"]
        assert incidents[0] == first and len(incidents) == 2 and not incidents[1].get("provisional")
        assert not [e for e in events if e["event"] == "warning" and e.get("withdraws")]
    finally:
        doctor.stop()


def test_watch_exit_on_incident_interrupted_while_waiting_says_it_is_unresolved(tmp_path):
    """Ctrl-C while a provisional incident waits: exit 130 as always, and the JSON says the
    incident stands unresolved (the input ended before the evidence)."""
    log = tmp_path / "serve.log"
    log.write_text(PROVISIONAL)
    doctor = _watch(log)
    try:
        first = doctor.until(_provisional)
        doctor.proc.send_signal(signal.SIGINT)
        events = doctor.rest()
        assert doctor.proc.wait(30) == 130
        [confirmed] = [e for e in events if e["event"] == "confirmed"]
        assert confirmed["confirms"] == {"rule": first["rule"], "lines": first["lines"]}
        assert confirmed["unresolved"] is True and "unknown" in confirmed["message"]
    finally:
        doctor.stop()


def test_pipe_mode_confirms_a_provisional_incident_when_the_launch_dies(tmp_path):
    """``tail -f | sglang-doctor -``: the death is written after the provisional incident was
    printed; a ``confirmed`` event names it (placed after the death), exit 1."""
    doctor = Doctor("-", "--flush-after", "0.3", stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write(PROVISIONAL.encode())
        doctor.proc.stdin.flush()
        first = doctor.until(_provisional)
        doctor.proc.stdin.write(SCHEDULER_DIED.encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        kinds = [e["event"] for e in events]
        [confirmed] = [e for e in events if e["event"] == "confirmed"]
        assert confirmed["confirms"]["lines"] == first["lines"] and not confirmed.get("unresolved")
        assert "died after it" in confirmed["message"]
        death = [e for e in events if e["event"] == "incident"][1]
        assert kinds.index("confirmed") > events.index(death) and confirmed["line"] == death["lines"][0]
        assert events[-1]["event"] == "summary" and events[-1]["incidents"] == 2
    finally:
        doctor.stop()


def test_pipe_mode_says_when_the_input_ends_before_the_ready_line(tmp_path):
    """Unknown stays unknown: the input ends before the evidence; the incident stands (exit 1,
    the conservative outcome) and a ``confirmed`` event says it is unresolved."""
    doctor = Doctor("-", stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write(PROVISIONAL.encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 1
        [incident] = [e for e in events if e["event"] == "incident"]
        [confirmed] = [e for e in events if e["event"] == "confirmed"]
        assert incident["provisional"] == "ready" and confirmed["unresolved"] is True
        assert "ended before launch 1's ready line" in confirmed["message"]
        assert incident["severity_text"] == "WARN" and confirmed["severity_text"] == "ERROR"  # OTel fields
        assert events[-1]["incidents"] == 1
    finally:
        doctor.stop()


def test_pipe_mode_withdrawn_incident_gets_no_confirmation():
    doctor = Doctor("-", stdin=subprocess.PIPE)
    try:
        doctor.proc.stdin.write((PROVISIONAL + COMES_UP).encode())
        doctor.proc.stdin.close()
        events = doctor.rest()
        assert doctor.proc.wait(30) == 0
        assert [e for e in events if e["event"] == "confirmed"] == []
        assert len([e for e in events if e["event"] == "warning" and e.get("withdraws")]) == 1
    finally:
        doctor.stop()
