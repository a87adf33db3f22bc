"""The deaths a shell or SGLang's scheduler-only node reports in words (noinc24's incidents)
carry evidence for the best guess: a SIGKILL status of "Scheduler or DataParallelController
PID terminated with -9" is the kernel's OOM killer's mark, a shell's "Illegal instruction" a
binary built for instructions this CPU lacks.  Real files, the real CLI."""

from __future__ import annotations

from conftest import explain_one_incident

LOAD = "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"


def _guess(inc: dict) -> str:
    return ((inc.get("fallback") or {}).get("best_guess") or {}).get("category")


def test_a_scheduler_terminated_by_sigkill_guesses_host_memory(tmp_path):
    path = tmp_path / "term.log"
    path.write_text(LOAD + "[2026-01-01 10:00:05] Scheduler or DataParallelController 1234 terminated with -9\n")
    assert _guess(explain_one_incident(path)) == "memory.host_oom"


def test_a_scheduler_terminated_with_its_own_status_is_not_a_kill(tmp_path):
    path = tmp_path / "term.log"
    path.write_text(LOAD + "[2026-01-01 10:00:05] Scheduler or DataParallelController 1234 terminated with 1\n")
    assert _guess(explain_one_incident(path)) != "memory.host_oom"


def test_an_illegal_instruction_guesses_the_hardware(tmp_path):
    path = tmp_path / "sigill.log"
    path.write_text(LOAD + "run.sh: line 12:  4242 Illegal instruction     (core dumped) python3 -m sglang.launch_server\n")
    assert _guess(explain_one_incident(path)) == "kernel.unsupported_hw"


def test_a_floating_point_exception_guesses_a_crash_unless_the_server_was_starting(tmp_path):
    # a crash while serving is after ready by definition: in a start-up step the signal is that
    # step's failure, and the phase decides
    path = tmp_path / "sigfpe.log"
    path.write_text("Floating point exception (core dumped)\n")
    assert _guess(explain_one_incident(path)) == "runtime.crash"
    path.write_text(LOAD + "Floating point exception (core dumped)\n")
    assert _guess(explain_one_incident(path)) != "runtime.crash"
