"""What a scheduler's death leaves behind, read as evidence for the best guess when the cause
line is missing: another rank's TCPStore connection reset after the launcher's "scheduler is
dead" notice is the death's echo (TCPStore is served from rank 0's process), not a network
failure; a symbolized native stack ('File "<unknown>", line 0, in ...') says the process crashed
in native code rather than being killed from outside; torch's fatal-signal handler line
("Segfault encountered") is a segfault."""

import pytest

from conftest import incident_events, best_guess

DEAD = "[2026-01-23 09:10:40] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
RESET = ("[rank1]:[W123 09:10:40.029953638 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=59, "
         "addr=[localhost]:48516, remote=[localhost]:30573): Connection reset by peer\n")
NATIVE_BOTTOM = '  File "<unknown>", line 0, in 0xffffffffffffffff\n'


incidents = incident_events


guess = best_guess


def names(ev):
    return {e["name"] for e in guess(ev)["evidence"]}


def test_a_store_reset_after_the_death_notice_is_its_echo_not_a_network_failure(pack):
    (ev,) = incidents(pack, DEAD + RESET)
    assert "signal:c10d_peer_gone" not in names(ev)
    assert "words:nccl" not in names(ev)
    assert guess(ev)["category"] != "nccl"


def test_a_store_reset_without_a_death_notice_still_points_at_the_peer(pack):
    (ev,) = incidents(pack, RESET)
    assert "signal:c10d_peer_gone" in names(ev)
    assert guess(ev)["category"] == "nccl"


def test_a_store_reset_before_the_death_notice_is_no_echo_of_it(pack):
    (ev,) = incidents(pack, RESET + DEAD)
    assert "signal:c10d_peer_gone" in names(ev)


def test_a_symbolized_native_stack_before_the_death_is_a_native_crash(pack):
    (ev,) = incidents(pack, NATIVE_BOTTOM + "\n" + DEAD + RESET)
    assert "native_stack" in names(ev)
    assert guess(ev)["category"] == "runtime.crash"


def test_a_bare_death_notice_has_no_native_stack_evidence(pack):
    (ev,) = incidents(pack, DEAD)
    assert "native_stack" not in names(ev)
    assert guess(ev)["category"] != "runtime.crash"


@pytest.mark.parametrize("line", ["!!!!!!! Segfault encountered !!!!!!!"])
def test_torchs_fatal_signal_handler_line_is_a_segfault(pack, line):
    (ev,) = incidents(pack, "[2025-06-01 10:00:00 TP0] Decode batch, #running-req: 3, #token: 900\n"
                            + line + "\n" + NATIVE_BOTTOM)
    assert "segfault" in ev["_diagnosis"].incident.signal_names
    assert "native_stack" not in names(ev)  # the segfault names the crash already: not counted twice
    assert guess(ev)["category"] == "runtime.crash"
