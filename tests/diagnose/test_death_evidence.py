"""How the process died and what the last start-up line showed, as evidence for the best
guess when the cause line is missing: a SIGABRT as the shell reports it, and a start-up
milestone that left almost no free GPU memory for the next step."""

import pytest

from sglang_doctor.diagnose import phase_prior
from conftest import incident_events

CUT = "[2025-06-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"


incidents = incident_events


@pytest.mark.parametrize("line", [
    "Aborted (core dumped)",
    "bash: line 1: 12345 Aborted                 (core dumped) python3 -m sglang.launch_server --model-path /m",
])
def test_a_sigabrt_is_a_native_crash_with_the_honest_fallback(pack, line):
    (ev,) = incidents(pack, "[2025-06-01 10:00:00 TP0] Decode batch, #running-req: 3, #token: 900\n" + line + "\n")
    assert "aborted" in ev["_diagnosis"].incident.signal_names
    assert ev["fallback"]["best_guess"]["category"] == "runtime.crash"
    assert "native crash" in ev["fallback"]["missing"]
    assert "PYTHONFAULTHANDLER" in ev["fallback"]["next_step"]


def test_a_request_aborted_by_the_client_is_no_incident(pack):
    assert incidents(pack, "[2025-06-01 10:00:00 TP0] Abort request 7e1c. Aborted by AbortReq.\n") == []


@pytest.mark.parametrize("milestone, category", [
    ("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=0.52 GB, mem usage=22.90 GB.",
     "memory.kv_pool"),
    ("Capture cuda graph begin. This can take up to several minutes. avail mem=0.31 GB", "memory.cuda_oom"),
])
def test_almost_no_free_memory_at_the_last_milestone_points_at_memory(pack, milestone, category):
    (ev,) = incidents(pack, f"[2025-06-01 10:00:00 TP0] {milestone}\n" + CUT)
    guess = ev["fallback"]["best_guess"]
    assert guess["category"] == category
    assert any(e["name"] == "low_memory" for e in guess["evidence"])


def test_enough_free_memory_is_no_memory_evidence(pack):
    (ev,) = incidents(pack, "[2025-06-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several "
                            "minutes. avail mem=12.31 GB\n" + CUT)
    guess = ev["fallback"]["best_guess"]
    # what usually fails while capturing (diagnose/phase_prior.py), no memory piece
    assert guess["category"] == next(iter(phase_prior.shares("startup.cuda_graph")))
    assert not any(e["name"] == "low_memory" for e in guess["evidence"])
