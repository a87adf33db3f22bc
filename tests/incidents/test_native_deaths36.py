"""Deaths that print no Python exception, in the forms that made no incident (or a wrong one)
before session 36 (incidents/signals.py):

- the launcher's SIGCHLD handler (0.4.6-0.4.x engine.py sigchld_handler): "Child process
  unexpectedly failed with exitcode=N. pid=P" prints ``os.waitpid``'s STATUS: a death by signal
  N has N in its low seven bits (9 is a SIGKILL, 139 a SIGSEGV with a core), an exit has the code
  in its high byte (256 is exit 1).  It is an exit status, read as multiprocessing spells one;
- UCX's fatal-signal handler (ucs/debug/debug.c) for other signals than SIGSEGV: "Caught signal 8
  (Floating point exception: ...)";
- a shell's trace of a command (``set -x``: "+ echo 'exit status 137'") is the command's text,
  not a status: what the command printed is."""

from __future__ import annotations

import pytest

from sglang_doctor.incidents import signals
from tests.conftest import best_guess, incident_events

SERVING = ("[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2)\n"
           "[2026-05-09 10:00:30] The server is fired up and ready to roll!\n"
           "[2026-05-09 10:05:00 TP0] Decode batch, #running-req: 3, #token: 8192, token usage: 0.12, "
           "gen throughput (token/s): 180.22, #queue-req: 0\n")
CHILD = "[2026-05-09 10:06:00] Child process unexpectedly failed with exitcode={}. pid=31207\n"


@pytest.mark.parametrize("status, code", [("9", "-9"), ("137", "-9"), ("139", "-11"), ("134", "-6"),
                                          ("6", "-6"), ("256", "1"), ("512", "2")])
def test_the_wait_status_reads_as_the_exit_status_it_encodes(pack, status, code):
    (event,) = incident_events(pack, CHILD.format(status))
    incident = event["_diagnosis"].incident
    assert incident.signal_names == ["exit_code"]
    assert incident.captures["exit_code"] == code


def test_the_older_spelling_is_the_same_status():
    sig, captures = signals.classify("Child process unexpectedly failed with an exit code 9. pid=31207")
    assert (sig.name, captures["exit_code"]) == ("exit_code", "-9")


def test_a_child_s_sigkill_reads_as_a_sigkill(pack):
    (event,) = incident_events(pack, SERVING + CHILD.format(9))
    assert best_guess(event)["category"] == "memory.host_oom"


@pytest.mark.parametrize("status", ["15", "2"])
def test_a_child_stopped_from_outside_is_no_incident(pack, status):
    assert incident_events(pack, SERVING + CHILD.format(status)) == []


def test_after_an_operator_s_stop_the_children_s_sigkill_is_the_stop_s(pack):
    text = SERVING + "[2026-05-09 10:06:00] Received sigterm, shutting down gracefully\n" + CHILD.format(9) * 3
    assert incident_events(pack, text) == []


def test_after_sglang_killed_its_tree_the_children_s_sigkill_is_that_end(pack):
    text = SERVING + ("[2026-05-09 10:06:00 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                      '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2611, in '
                      "run_scheduler_process\n    scheduler.event_loop_overlap()\n"
                      "RuntimeError: CUDA error: an illegal memory access was encountered\n\n"
                      "[2026-05-09 10:06:01] Received sigquit from a child process. It usually means the child failed.\n"
                      + CHILD.format(9) * 2)
    (event,) = incident_events(pack, text)
    assert event["exception"]["type"] == "RuntimeError"


@pytest.mark.parametrize("line, name, signum", [
    ("[gpu-node-3:31207:0:31240] Caught signal 8 (Floating point exception: integer divide by zero)", "signal_death", "8"),
    ("[gpu-node-3:31207:0:31240] Caught signal 7 (Bus error: nonexistent physical address)", "signal_death", "7"),
    ("[gpu-node-3:31207:0:31240] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)",
     "segfault", "11"),
])
def test_ucx_s_fatal_signal_report_is_a_native_death(pack, line, name, signum):
    (event,) = incident_events(pack, SERVING + line + "\n")
    incident = event["_diagnosis"].incident
    assert incident.signal_names == [name] and incident.captures["signum"] == signum


@pytest.mark.parametrize("line", [
    "+ echo 'exit status 137'",
    "++ echo 'exit code: 137'",
    "$ grep -n 'exit code 137' server.log",
    "root@gpu-node-3:~# echo 'exited with code 137'",
])
def test_a_traced_or_typed_command_is_not_an_exit_status(pack, line):
    assert incident_events(pack, SERVING + line + "\n") == []


def test_what_the_traced_echo_printed_is(pack):
    (event,) = incident_events(pack, SERVING + "+ echo 'exit status 137'\nexit status 137\n")
    assert tuple(event["lines"]) == (5, 5)
    assert event["category"] == "memory.host_oom"
