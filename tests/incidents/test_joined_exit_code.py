"""A wrapper that joins SGLang's "Rank N scheduler is dead. Please check if there are relevant
logs." with the "Exit code: N" line that follows it (ai-dynamo's "Error: Rank 0 scheduler is
dead. Exit code: -6 (SIGABRT)") keeps the exit code: a SIGABRT is a native abort, not the OOM
killer's SIGKILL, so only -9 / 137 reads as a kill."""

import pytest

from conftest import only_incident


def _guess_evidence(ev) -> set[tuple[str, str]]:
    guess = (ev.get("fallback") or {}).get("best_guess") or {}
    return {(e["name"], e["category"]) for e in guess.get("evidence", [])}


@pytest.mark.parametrize("line", [
    "Error: Rank 0 scheduler is dead. Exit code: -6 (SIGABRT)",
    "[2025-12-20 10:00:00] Rank 3 scheduler is dead. Please check if there are relevant logs. Exit code: -6",
])
def test_a_scheduler_that_aborted_is_no_oom_kill(pack, line):
    ev = only_incident(pack, line + "\n")
    assert ev["_diagnosis"].incident.captures.get("exit_code") == "-6"
    assert ev["category"] != "memory.host_oom"
    assert ("signal:scheduler_dead", "memory.host_oom") not in _guess_evidence(ev)


def test_a_scheduler_killed_on_the_joined_line_still_reads_as_a_kill(pack):
    ev = only_incident(pack, "Error: Rank 0 scheduler is dead. Exit code: -9 (SIGKILL)\n")
    assert ev["_diagnosis"].incident.captures.get("exit_code") == "-9"
    assert ev["category"] == "memory.host_oom"


def test_sglang_s_own_two_lines_are_unchanged(pack):
    ev = only_incident(pack, "[2026-05-09 17:31:40] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
                             "[2026-05-09 17:31:40] Exit code: -9\n")
    assert ev["category"] == "memory.host_oom"
