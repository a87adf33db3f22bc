"""Deaths that print no Python exception (session 34, native34).

A launcher's SIGKILL status is the OOM killer's; a faulthandler dump whose crashing thread is in
NCCL's set-up stays the fallback's frame reading; a signal's name in a shell command or in prose
makes no incident; a native death in the teardown after the operator's stop is none either.
(native34's class rules for the signals themselves were left out at merge: the fallback's
careful reading of those deaths, with the command that gets the missing part, is kept.)  nanobind's exit-time leak report below a KeyboardInterrupt is not the
exception's message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_doctor.incidents.tracebacks import TracebackBuilder

ROOT = Path(__file__).resolve().parents[2]
HEADER = "[2026-11-20 09:02:11] server_args={'model_path': '/models/m', 'tp_size': 2, 'port': 30000}"
MAIN_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/engine.py", line 2039, in _wait_for_scheduler_ready',
    "    raise _scheduler_died_error(j, scheduler_procs[j])",
]


def _explain(tmp_path: Path, text: str) -> list[dict]:
    log = tmp_path / "x.log"
    log.write_text(text)
    out = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(log)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return [e for e in map(json.loads, out.stdout.splitlines()) if "rule" in e]


def _died(code: int) -> str:
    return "\n".join([HEADER, *MAIN_TB, f"RuntimeError: Rank 0 scheduler died during initialization (exit code: {code}). "
                      "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."]) + "\n"


@pytest.mark.parametrize("text, rule, category", [
    (_died(-9), "memory.host_oom.scheduler_died_traceback", "memory.host_oom"),
])
def test_native_death_is_named(tmp_path, text, rule, category):
    found = _explain(tmp_path, text)
    assert [(e["rule"], e["category"]) for e in found] == [(rule, category)]


def test_dump_in_nccl_set_up_yields_to_its_frames(tmp_path):
    text = (ROOT / "fixtures/nccl/pynccl_segfault_during_init.log").read_text()
    found = _explain(tmp_path, text)
    assert [e["category"] for e in found] == ["nccl"]


@pytest.mark.parametrize("line", [
    "+ grep -c 'Segmentation fault' server.log",
    "$ echo 'no Illegal instruction (core dumped) this time'",
    "[2026-11-20 09:03:00] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, gen throughput (token/s): 40.1",
])
def test_signal_words_in_a_command_are_not_a_death(tmp_path, line):
    text = "\n".join([HEADER, "[2026-11-20 09:02:30] The server is fired up and ready to roll!", line]) + "\n"
    assert _explain(tmp_path, text) == []


def test_nanobind_leak_report_is_not_the_interrupts_message():
    builder = TracebackBuilder("Traceback (most recent call last):")
    for text in ['  File "/x/sglang/launch_server.py", line 14, in <module>', "    launch_server(server_args)",
                 "KeyboardInterrupt", "nanobind: leaked 3 instances!", "nanobind: leaked 1 types!"]:
        if not builder.offer(text):
            break
    builder.finish()
    assert [(e.type, e.message) for e in builder.chain] == [("KeyboardInterrupt", "")]


def test_native_death_in_a_stops_teardown_is_not_an_incident(tmp_path):
    head = (ROOT / "fixtures/healthy/ready_then_sigterm_0523.log").read_text().splitlines()[:12]
    assert any("SIGTERM received" in line for line in head)
    teardown = ["terminate called without an active exception", "Aborted (core dumped)"]
    assert _explain(tmp_path, "\n".join(head + teardown) + "\n") == []
    # the same lines with no stop above them are a death
    served = [line for line in head if "SIGTERM" not in line]
    assert len(_explain(tmp_path, "\n".join(served + teardown) + "\n")) == 1
