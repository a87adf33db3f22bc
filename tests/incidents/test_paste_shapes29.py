"""Shapes of real pastes incident forming got wrong (session 29), each with a counter-example:

- a structured header on EVERY line of a record (records.parse_structured; field31/003,
  sgl-project/sglang#21170): ``2026-03-23 01:10:21.463 ERROR 502747 [ ATTN_CP4 TP4
  scheduler.py:3468] Scheduler hit an exception: Traceback ...`` and each traceback line under
  the same header.  The lines under one header are one record (the traceback joined, its ranks
  kept); a line under another header starts a record of its own.
"""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor.read import records

SCHED = "2026-03-23 01:10:21.463 ERROR 502747 [ ATTN_CP4 TP4 scheduler.py:3468] "
TRACEBACK = [
    "Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 3464, in '
    "run_scheduler_process",
    "    scheduler.run_event_loop()",
    '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/model_executor/model_runner.py", line 2210, '
    "in forward",
    "    return self.forward_decode(forward_batch)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 4 has a total capacity "
    "of 79.10 GiB of which 1.02 GiB is free.",
    "",
]
INFO = [
    "2026-03-23 01:10:20.101 INFO 502747 [ ATTN_CP4 TP4 scheduler_metrics_mixin.py:210] Decode batch, "
    "#running-req: 12, #token: 40123, token usage: 0.31, gen throughput (token/s): 812.40, #queue-req: 0",
    "2026-03-23 01:10:20.902 INFO 502740 [ ATTN_CP0 TP0 scheduler_metrics_mixin.py:210] Decode batch, "
    "#running-req: 11, #token: 39811, token usage: 0.31, gen throughput (token/s): 809.12, #queue-req: 0",
]


def test_the_header_is_read_whole():
    got = records.parse_structured(SCHED + TRACEBACK[0])
    assert got is not None
    assert (got.timestamp, got.level, got.pid, got.ranks, got.location) == (
        "2026-03-23 01:10:21", "ERROR", 502747, ("ATTN_CP4", "TP4"), "scheduler.py:3468")
    assert got.message == TRACEBACK[0]
    frame = records.parse_structured(SCHED + TRACEBACK[1])
    assert frame.message == TRACEBACK[1] and frame.header == got.header  # indentation kept
    assert got.prefix().ranks == ("ATTN_CP4", "TP4") and got.prefix().kind == "sglang"
    plain = records.parse_structured("2026-03-23 01:10:21 INFO 7 [scheduler.py:12] ready")
    assert plain is not None and plain.ranks == () and plain.message == "ready"


def test_other_time_stamped_lines_are_no_structured_header():
    for text in ("2026-03-23 01:10:21.463 ERROR something [x] went wrong",
                 "2026-03-23 01:10:21,463 - root - ERROR - boom",
                 "[2026-03-23 01:10:21 TP0] Scheduler hit an exception: Traceback (most recent call last):"):
        assert records.parse_structured(text) is None, text


def test_a_traceback_under_one_header_is_one_incident_with_its_ranks(tmp_path):
    incs = incidents_of_lines(tmp_path, INFO + [SCHED + line for line in TRACEBACK])
    assert len(incs) == 1
    inc = incs[0]
    assert inc.kind == "traceback" and not inc.truncated
    assert inc.exception is not None and inc.exception.type.endswith("OutOfMemoryError")
    assert inc.ranks == ["ATTN_CP4 TP4"]
    assert any(f.function == "forward" for f in inc.frames)


def test_behind_a_containers_prefix_too(tmp_path):
    """docker compose's ``name  | `` before every line (records.outer_prefix_end), and a comma
    before the milliseconds (logging's own default)."""
    lines = ["sglang-1  | " + (SCHED + line).replace("21.463", "21,463") for line in TRACEBACK]
    incs = incidents_of_lines(tmp_path, lines)
    assert len(incs) == 1 and incs[0].exception.type == "torch.OutOfMemoryError"
    assert incs[0].ranks == ["ATTN_CP4 TP4"]


def test_healthy_structured_lines_stay_quiet(tmp_path):
    assert incidents_of_lines(tmp_path, INFO * 3) == []


def test_a_line_under_another_header_ends_the_record(tmp_path):
    """A record of another call (another time, file or pid) after the traceback is not one of its
    lines: the traceback stays cut above its exception line."""
    cut = [SCHED + line for line in TRACEBACK[:-2]]
    incs = incidents_of_lines(tmp_path, cut + INFO)
    assert len(incs) == 1 and incs[0].truncated and incs[0].last_line == len(cut)
    assert not any("Decode batch" in text for text in incs[0].text_lines())


# -- a stop hides only what its teardown raises ----------------------------------------------
# (incidents/assemble.py _TEARDOWN_TYPES, captures' after_stop; pipeline._after_stop)

from pathlib import Path  # noqa: E402

from sglang_doctor.diagnose.rules_engine import RuleSet  # noqa: E402
from sglang_doctor.pipeline import AFTER_STOP_FACTOR, StreamPipeline  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# real SGLang 0.5.23: served, then SIGTERM to the main PID ("INFO:     Shutting down" and the teardown)
SIGTERM_RUN = (ROOT / "fixtures/real/healthy_sigterm_0523.log").read_text()
# the same served, then a terminal's Ctrl-C (SIGINT to the process group): "Shutting down" too
CTRL_C_RUN = (ROOT / "fixtures/real/healthy_ctrl_c_0523.log").read_text()
READY = "[2026-01-01 10:00:00] The server is fired up and ready to roll!\n"
SHUTTING_DOWN = "[2026-01-01 10:00:04] INFO:     Shutting down\n"
FAILED = ("[2026-01-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
          '  File "/x/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process\n'
          "    scheduler.event_loop_normal()\n"
          '  File "/x/sglang/srt/model_executor/model_runner.py", line 20, in forward\n'
          "    return self.forward_decode(forward_batch)\n")
CUDA = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
RELAUNCH = "[2026-01-01 10:02:00 TP0] Load weight begin. avail mem=20.00 GB\n"


def _incident_events(text: str) -> list[dict]:
    pipe = StreamPipeline(RuleSet.load())
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e for e in events if e["event"] == "incident"]


def test_the_real_teardowns_stay_quiet():
    for run in (SIGTERM_RUN, CTRL_C_RUN):
        assert "INFO:     Shutting down" in run
        assert _incident_events(run) == []


def test_a_failure_after_the_stop_is_reported_as_after_it():
    for before in (SIGTERM_RUN, CTRL_C_RUN, READY + SHUTTING_DOWN):
        after = _incident_events(before + FAILED + CUDA)
        assert len(after) == 1
        diagnosis = after[0]["_diagnosis"]
        assert diagnosis.incident.captures["after_stop"]
        assert "after the server was asked to stop" in diagnosis.explanation
    plain = _incident_events(READY + FAILED + CUDA)[0]
    assert "after_stop" not in plain["_diagnosis"].incident.captures
    assert plain["rule"] == after[0]["rule"]
    assert after[0]["confidence"] == round(plain["confidence"] * AFTER_STOP_FACTOR, 3)


def test_what_a_teardown_raises_stays_quiet_after_the_stop_only():
    for exc in ("BrokenPipeError: [Errno 32] Broken pipe\n",
                "ConnectionResetError: [Errno 104] Connection reset by peer\n",
                "zmq.error.ContextTerminated: Context was terminated\n"):
        assert _incident_events(READY + SHUTTING_DOWN + FAILED + exc) == [], exc
        assert len(_incident_events(READY + FAILED + exc)) == 1, exc  # without a stop: a failure


def test_a_relaunch_after_the_stop_ends_it():
    """A start-up step after the stop is a new launch (its header left out): its Killed is
    evidence again; right after the stop the Killed is the stop's own end."""
    assert _incident_events(READY + SHUTTING_DOWN + "Killed\n") == []
    relaunched = _incident_events(READY + SHUTTING_DOWN + RELAUNCH + "Killed\n")
    assert len(relaunched) == 1
    assert "after_stop" not in relaunched[0]["_diagnosis"].incident.captures


# -- bash's Killed: a verdict only with context ----------------------------------------------

from sglang_doctor.pipeline import BARE_KILLED_CONFIDENCE  # noqa: E402


def test_a_bare_killed_is_a_low_confidence_host_oom_guess():
    bare = _incident_events("Killed\n")
    assert len(bare) == 1 and bare[0]["category"] == "memory.host_oom"
    assert bare[0]["confidence"] == BARE_KILLED_CONFIDENCE
    assert "the OOM killer is a guess" in bare[0]["explanation"]
    loading = _incident_events(RELAUNCH + "Killed\n")  # killed while loading weights: the rule's own answer
    assert len(loading) == 1 and loading[0]["confidence"] > BARE_KILLED_CONFIDENCE
    assert "the OOM killer is a guess" not in loading[0]["explanation"]
