"""The deaths a shell or SGLang's scheduler-only node reports in words (noinc24's incidents)
carry evidence for the best guess: a SIGKILL status of "Scheduler or DataParallelController
PID terminated with -9" is the kernel's OOM killer's mark, a shell's "Illegal instruction" a
binary built for instructions this CPU lacks.  Real files, the real CLI."""

from __future__ import annotations

import pytest

from conftest import explain_one_incident

LOAD = "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"


def _guess(inc: dict) -> str:
    """The fallback's best guess; for an incident a rule named (the shell's SIGILL report:
    rules/native35_signals.yaml), the category it named."""
    if inc.get("rule") != "unknown" and not inc.get("fallback"):
        return inc["category"]
    return ((inc.get("fallback") or {}).get("best_guess") or {}).get("category")


@pytest.mark.parametrize("line, guessed, right", [
    # a SIGKILL status: the kernel's OOM killer's mark
    ("[2026-01-01 10:00:05] Scheduler or DataParallelController 1234 terminated with -9", "memory.host_oom", True),
    # a status of its own: a Python error elsewhere, not a kill
    ("[2026-01-01 10:00:05] Scheduler or DataParallelController 1234 terminated with 1", "memory.host_oom", False),
    # SIGILL: a binary built for instructions this CPU lacks
    ("run.sh: line 12:  4242 Illegal instruction     (core dumped) python3 -m sglang.launch_server",
     "kernel.unsupported_hw", True),
])
def test_a_death_in_words_during_the_launch(tmp_path, line, guessed, right):
    path = tmp_path / "death.log"
    path.write_text(LOAD + line + "\n")
    assert (_guess(explain_one_incident(path)) == guessed) is right


def test_a_floating_point_exception_guesses_a_crash_unless_the_server_was_starting(tmp_path):
    # a crash while serving is after ready by definition: in a start-up step the signal is that
    # step's failure, and the phase decides
    path = tmp_path / "sigfpe.log"
    path.write_text("Floating point exception (core dumped)\n")
    assert _guess(explain_one_incident(path)) == "runtime.crash"
    path.write_text(LOAD + "Floating point exception (core dumped)\n")
    assert _guess(explain_one_incident(path)) != "runtime.crash"
