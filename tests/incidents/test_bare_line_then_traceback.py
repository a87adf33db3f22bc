"""A bare exception line (an exception logged in one line, no traceback above it) and a traceback
of another record after it: one incident only when the line is that traceback's message, or the
record the traceback was logged under (a bare ``Traceback`` header right below it).  Otherwise
each is its own: one request's error logged in a line does not take the failure after it down
with it, and a failure's exception line does not lend its name to another traceback.  The same
holds the other way round (a request's traceback, then a failure's exception line; a failure's
cut traceback, then one request's error line).  Shapes as people paste them: SGLang's records,
another logger's record, behind docker compose, the paste cut above the bare line."""

from __future__ import annotations

import pytest

from tests.conftest import incident_events

SCHED = '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line {n}, in {fn}\n    {src}\n'
FRAMES = (SCHED.format(n=2611, fn="run_scheduler_process", src="scheduler.event_loop_normal()")
          + SCHED.format(n=733, fn="event_loop_normal", src="result = self.run_batch(batch)"))
TYPE_ERROR = "TypeError: Qwen2Model.forward() got an unexpected keyword argument 'pp_proxy_tensors'\n"
CRASH = "[2026-01-01 00:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n" + FRAMES + TYPE_ERROR
# messages SGLang raises only for one request (request_errors.py), as a line of their own
REQUEST_LINES = [
    "[2026-01-01 00:00:00] DS32EncodingError: Tool call format error\n",
    "[2026-01-01 00:00:00] ValueError: Requested token count exceeds the model's maximum context length of 4096 "
    "tokens. You requested a total of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for the "
    "completion.\n",
]
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of "
       "47.54 GiB of which 1.02 GiB is free.")


def _compose(text: str) -> str:
    return "".join(f"sglang-1  | {line}\n" for line in text.splitlines())


def _summary(events: list[dict]) -> list[tuple[int, int, str]]:
    return [(*e["lines"], (e.get("exception") or {}).get("type")) for e in events]


@pytest.mark.parametrize("request_line", REQUEST_LINES)
@pytest.mark.parametrize("shape", ["as logged", "docker compose", "another logger's record", "cut above"])
def test_request_line_does_not_take_the_failure_after_it(pack, request_line, shape):
    crash = CRASH
    if shape == "another logger's record":
        crash = crash.replace("[2026-01-01 00:00:01 TP0] ", "ERROR 16:58:08 scheduler.py:2626] ")
    if shape == "cut above":
        request_line = request_line.split("] ", 1)[1]  # the paste begins at the exception line
    text = request_line + crash
    if shape == "docker compose":
        text = _compose(text)
    events = incident_events(pack, text)
    assert _summary(events) == [(2, 7, "TypeError")]


def test_a_failure_line_and_another_traceback_are_two_incidents(pack):
    text = f"[2026-01-01 00:00:00 TP1] {OOM}\n" + CRASH
    events = incident_events(pack, text)
    assert _summary(events) == [(1, 1, "torch.OutOfMemoryError"), (2, 7, "TypeError")]
    assert events[0]["category"] == "memory.cuda_oom"


@pytest.mark.parametrize("shape", ["another rank's line", "cut above", "docker compose"])
def test_the_line_that_is_the_traceback_s_message_joins_it(pack, shape):
    message = "RuntimeError: CUDA error: an illegal memory access was encountered"
    line = message if shape == "cut above" else f"[2026-01-01 00:00:00 TP1] {message}"
    text = line + "\n" + CRASH.replace(TYPE_ERROR, message + "\n")
    if shape == "docker compose":
        text = _compose(text)
    (event,) = incident_events(pack, text)
    assert tuple(event["lines"]) == (1, 7)
    assert event["rule"] == "runtime.crash.illegal_memory_access"
    assert "event_loop_normal" in event["traceback"]
    assert not event["truncated_top"]  # the traceback with its frames is the incident's, not the line


def test_the_traceback_logged_under_the_line_is_its_own(pack):
    # logging's exc_info: the record's message (here the exception's own line), its traceback below
    text = ("[2026-01-01 00:00:00 TP0] ValueError: weight loading failed\n"
            "Traceback (most recent call last):\n" + FRAMES + "KeyError: 'model.layers.0.mlp.experts.w13_weight'\n")
    (event,) = incident_events(pack, text)
    assert tuple(event["lines"]) == (1, 7)


def test_the_same_request_error_with_its_traceback_is_no_incident(pack):
    message = REQUEST_LINES[1].split("] ", 1)[1]
    text = (REQUEST_LINES[1] + "[2026-01-01 00:00:01] Error in request: Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/dist-packages/sglang/srt/entrypoints/openai/serving_base.py", line 40, '
            "in handle_request\n    return await self._handle_non_streaming_request(\n" + message)
    assert incident_events(pack, text) == []


def test_a_request_traceback_does_not_take_the_failure_line_after_it(pack):
    message = REQUEST_LINES[1].split("] ", 1)[1]
    text = ("[2026-01-01 00:00:00] Error in request: Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/dist-packages/sglang/srt/entrypoints/openai/serving_base.py", line 40, '
            "in handle_request\n    return await self._handle_non_streaming_request(\n" + message
            + f"[2026-01-01 00:00:01 TP0] {OOM}\n")
    events = incident_events(pack, text)
    assert _summary(events) == [(5, 5, "torch.OutOfMemoryError")]


def test_a_request_line_is_not_taken_for_a_cut_traceback_s_exception(pack):
    text = CRASH.replace(TYPE_ERROR, "").rsplit("    result", 1)[0] + REQUEST_LINES[0]
    events = incident_events(pack, text)
    assert _summary(events) == [(1, 4, None)]
    assert events[0]["truncated"]


def test_a_traceback_under_a_request_line_is_a_failure_of_its_own(pack):
    # a bare header right under one request's error line, ending in another exception: no part
    # of that request's error (a process's uncaught traceback prints no record of its own)
    text = REQUEST_LINES[0] + "Traceback (most recent call last):\n" + FRAMES + TYPE_ERROR
    assert _summary(incident_events(pack, text)) == [(2, 7, "TypeError")]


def test_a_failure_line_keeps_the_traceback_logged_under_it(pack):
    # a cut traceback's last line, then the traceback its failure caused, logged under it: one
    # incident, named by the first failure
    text = (f"{OOM}\nTraceback (most recent call last):\n" + FRAMES
            + "RuntimeError: Model generation returned no output.\n")
    (event,) = incident_events(pack, text)
    assert tuple(event["lines"]) == (1, 7)
    assert event["category"] == "memory.cuda_oom"


def test_a_request_line_does_not_take_frames_after_an_elision(pack):
    # the paste elided the traceback's header ("[...]"): the frames and their exception are still
    # a failure, not part of the request's error above them
    text = REQUEST_LINES[0] + "[...]\n" + FRAMES + TYPE_ERROR
    assert _summary(incident_events(pack, text)) == [(3, 7, "TypeError")]


def test_a_failure_line_keeps_frames_after_an_elision(pack):
    # (a failure's line, then frames with no header: one incident, as before)
    text = f"{OOM}\n[...]\n" + FRAMES + "RuntimeError: Model generation returned no output.\n"
    (event,) = incident_events(pack, text)
    assert event["category"] == "memory.cuda_oom"
