"""Paste shapes of session 36 (bench/site_shapes.py's new shapes), from the mechanism, not a file:

- a launcher that wraps the failure in a generic exception naming it (``Exception: ValueError:
  ...``, ``RuntimeError: torch.OutOfMemoryError: ...``) fails as the exception it names, the
  wrapper kept in the chain before it (assemble._with_wrapped);
- a supervisor's report of a container's own death (docker compose "sglang-1 exited with code
  139") is an exit status; the codes of a stop (143 SIGTERM, 130 SIGINT, 0) are not."""

from __future__ import annotations

import pytest

from tests.conftest import incident_events

ARCH = "Unsupported architectures: FooForCausalLM. Supported: LlamaForCausalLM"


@pytest.mark.parametrize("line", [
    f"Exception: ValueError: {ARCH}",
    f"RuntimeError: ValueError: {ARCH}",
    f"(SGLangEngine pid=4242, ip=10.0.0.2) Exception: ValueError: {ARCH}",
])
def test_a_wrapper_s_exception_fails_as_the_one_it_names(pack, line):
    (event,) = incident_events(pack, line + "\n")
    assert event["exception"] == {"type": "ValueError", "message": ARCH}
    assert [e.type for e in event["_diagnosis"].incident.chain] == ["Exception" if line.count("Exception:")
                                                                    else "RuntimeError", "ValueError"]
    (plain,) = incident_events(pack, f"ValueError: {ARCH}\n")
    assert (event["rule"], event["category"]) == (plain["rule"], plain["category"])


def test_the_wrapper_at_a_traceback_s_end_too(pack):
    text = ("Traceback (most recent call last):\n"
            '  File "/workspace/launch.py", line 30, in main\n'
            "    engine = start_engine(cfg)\n"
            '  File "/workspace/launch.py", line 12, in start_engine\n'
            '    raise Exception(f"{type(e).__name__}: {e}")\n'
            f"Exception: ValueError: {ARCH}\n")
    (event,) = incident_events(pack, text)
    assert event["exception"]["type"] == "ValueError"


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: an illegal memory access was encountered",  # no type in the message
    "RuntimeError: Error: the engine did not start",  # a bare word, not a type
    "ValueError: TypeError: bad input",  # not a generic wrapper
    "Exception: Exception: twice",  # the same type
    "RuntimeError: UserWarning: deprecated",  # a warning
])
def test_other_messages_keep_their_exception(pack, line):
    events = incident_events(pack, line + "\n")
    assert all(e["exception"] is None or e["exception"]["type"] == line.split(":", 1)[0] for e in events)


@pytest.mark.parametrize("code, exit_code", [("139", "139"), ("134", "134"), ("1", "1")])
def test_a_container_s_own_death_is_an_exit_status(pack, code, exit_code):
    (event,) = incident_events(pack, f"sglang-1 exited with code {code}\n")
    incident = event["_diagnosis"].incident
    assert incident.signal_names == ["exit_code"] and incident.captures["status"] == exit_code


@pytest.mark.parametrize("code", ["0", "130", "143"])
def test_a_container_a_stop_ended_is_no_incident(pack, code):
    assert incident_events(pack, f"sglang-1 exited with code {code}\n") == []


def test_after_a_stop_the_container_s_sigkill_is_the_stop_s(pack):
    text = ("sglang-1  | [2026-05-09 10:06:00] Received sigterm, shutting down gracefully\n"
            "sglang-1 exited with code 137\n")
    assert incident_events(pack, text) == []
