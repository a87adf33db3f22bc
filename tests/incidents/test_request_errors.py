"""One request's handled error, as SGLang's own code logs it, is not a launch's death
(incidents/request_errors.py); an error the log cannot decide keeps its incident with a lowered
confidence and says so (survived.UNPROVED_CONFIDENCE); real crashes stay crashes.

The headers' wording is SGLang 0.5.23's (checked against 0.5.9 and 0.4.6.post5, see
request_errors.HEADERS): each is printed from an ``except`` block that answers one request with
an error (or aborts it) and returns to its loop.  Counter-examples: the scheduler's own fatal
handler after such a line ("Scheduler hit an exception", the parent's SIGQUIT), the invalid
json_schema that crashed 0.4.x schedulers (https://github.com/sgl-project/sglang/issues/4574:
"[... TP6] Scheduler hit an exception: Traceback ... event_loop_overlap ... get_next_batch_to_run"),
and a failure followed by a relaunch that serves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.incidents import request_errors, survived
from tests.incidents.test_survived_before_ready import _events, _incidents
from tests.incidents.test_survived_while_serving import CRASH, GOES_ON, HANDLED, OOM, SERVING, UP

ROOT = Path(__file__).resolve().parents[2]
T = "[2026-01-01 00:02:02] "
S = "[2026-01-01 00:02:02 TP0] "


def _tb(frames: list[tuple[str, str, str]], exc: str) -> str:
    out = "Traceback (most recent call last):\n"
    for path, function, source in frames:
        out += (f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/{path}", line 120, in {function}\n'
                f"    {source}\n")
    return out + exc + "\n"


# one request's error, as each source path prints it (header line, then logger.exception's traceback)
REQUEST_ERRORS = {
    # entrypoints/openai/serving_base.py handle_request: the request's exception holds scary words
    "error_in_request_oom": T + f"Error in request: {OOM}\n" + _tb(
        [("entrypoints/openai/serving_base.py", "handle_request", "return await self._handle_non_streaming_request("),
         ("entrypoints/openai/serving_chat.py", "_handle_non_streaming_request",
          "ret = await self.tokenizer_manager.generate_request(")], f"torch.OutOfMemoryError: {OOM}"),
    # entrypoints/openai/serving_tokenize.py: logger.error("Error during tokenization", exc_info=True)
    "tokenization": T + "Error during tokenization\n" + _tb(
        [("entrypoints/openai/serving_tokenize.py", "_handle_non_streaming_request",
          "tokens = self.tokenizer_manager.tokenizer.encode(prompt)")],
        "TypeError: TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]"),
    # entrypoints/openai/serving_responses.py: logger.exception("Error in preprocessing prompt inputs")
    "responses": T + "Error in preprocessing prompt inputs\n" + _tb(
        [("entrypoints/openai/serving_responses.py", "create_responses",
          "adapted_request, processed_request = self._convert_to_internal_request(request)")],
        "jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/..."),
    # entrypoints/openai/serving_rerank.py: logger.exception("Error handling VL reranker request")
    "rerank": T + "Error handling VL reranker request\n" + _tb(
        [("entrypoints/openai/serving_rerank.py", "_handle_vl_rerank", "results = await self._score(request)")],
        "RuntimeError: An exception occurred while loading IMAGE data at index 0: cannot identify image file"),
    # managers/tokenizer_manager.py: logger.exception("Failed to abort request %s during cleanup", rid)
    "abort_cleanup": T + "Failed to abort request 6f1c2a9e8b7d4c3a during cleanup\n" + _tb(
        [("managers/tokenizer_manager.py", "abort_request", "self.send_to_scheduler.send_pyobj(req)")],
        "zmq.error.ZMQError: Operation cannot be accomplished in current state"),
    # constrained/grammar_manager.py: logger.error(f"Grammar compilation raised an exception: {e}, grammar_key=...")
    "grammar": S + f"Grammar compilation raised an exception: {OOM}, grammar_key=('json', '{{}}')\n",
    # 0.4.x openai_api/adapter.py process_batch: logger.error(f"error: {get_exception_traceback()}"), the
    # traceback inside the record (the batch API's failure of PR 6170's thread,
    # https://github.com/sgl-project/sglang/pull/6170: "error: 'NoneType' object is not iterable")
    "batch_046": T + "error: " + _tb(
        [("openai_api/adapter.py", "process_batch",
          "ret = await tokenizer_manager.generate_request(adapted_request).__anext__()")],
        "TypeError: 'NoneType' object is not iterable"),
    # managers/scheduler.py: logger.error(f"Multimodal feature reconstruction failed ({details})"), the request aborted
    "multimodal": S + "Multimodal feature reconstruction failed (rank 0: RuntimeError: CUDA error: invalid argument)\n",
}


@pytest.mark.parametrize("family", sorted(REQUEST_ERRORS))
def test_a_request_error_then_serving_forms_no_incident(pack, family: str):
    events = _events(pack, UP + SERVING + REQUEST_ERRORS[family] + GOES_ON)
    assert _incidents(events) == []


@pytest.mark.parametrize("family", sorted(REQUEST_ERRORS))
def test_a_request_error_at_the_end_of_the_log_forms_no_incident(pack, family: str):
    """Its own code path answers the request and goes on: known without later lines.
    (The old code reported most of these as a crash while serving, the OOM one at 0.85.)"""
    events = _events(pack, UP + SERVING + REQUEST_ERRORS[family])
    assert _incidents(events) == []


@pytest.mark.parametrize("family", ["error_in_request_oom", "tokenization", "grammar", "batch_046"])
def test_a_request_error_in_a_fragment_without_start_up_forms_no_incident(pack, family: str):
    assert _incidents(_events(pack, REQUEST_ERRORS[family])) == []


def test_the_header_counts_only_at_the_start_of_a_record():
    assert request_errors.is_header("Error during tokenization")
    assert request_errors.is_header("Hit invalid json_schema: key_string='{}', e=RuntimeError('x')")
    assert not request_errors.is_header("Hit invalid something else")
    assert not request_errors.is_header("Scheduler hit an exception: Error in request: x")


def test_an_undecided_error_at_the_end_stays_an_incident_with_lowered_confidence(pack):
    """Unknown stays unknown: a handled line not on the list, then the log ends: still an
    incident (never a warning it survived), but not a high-confidence crash, and it says why."""
    events = _events(pack, UP + SERVING + HANDLED["dflash"])
    incidents = _incidents(events)
    assert len(incidents) == 1
    assert incidents[0]["confidence"] <= survived.UNPROVED_CONFIDENCE
    assert survived.UNPROVED_ASSUMPTION in incidents[0]["assumed"]
    assert "Unknown whether the server survived it" in incidents[0]["explanation"]


def test_the_scheduler_crash_after_a_request_error_is_still_reported_in_full(pack):
    events = _events(pack, UP + SERVING + REQUEST_ERRORS["error_in_request_oom"] + CRASH)
    incidents = _incidents(events)
    assert [i["category"] for i in incidents] == ["memory.cuda_oom"]
    assert incidents[0]["confidence"] > survived.UNPROVED_CONFIDENCE  # a death: decided, not lowered
    assert survived.UNPROVED_ASSUMPTION not in incidents[0]["assumed"]


# issue 4574's shape: the invalid json_schema raised in the scheduler's loop (0.4.x), its fatal handler
SCHEMA_CRASH = (
    "[2026-01-01 00:02:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 2264, in run_scheduler_process\n'
    "    scheduler.event_loop_overlap()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 504, in event_loop_overlap\n'
    "    batch = self.get_next_batch_to_run()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/constrained/xgrammar_backend.py", line 120, in init_value_impl\n'
    "    ctx = self.grammar_compiler.compile_json_schema(key_string)\n"
    "RuntimeError: [08:28:27] /workspace/cpp/json_schema_converter.cc:700: Check failed: (false) is false\n"
    "\n"
    "[2026-01-01 00:02:03] Received sigquit from a child process. It usually means the child failed.\n")


def test_a_scheduler_that_dies_of_an_invalid_schema_stays_a_crash(pack):
    events = _events(pack, UP + SERVING + SCHEMA_CRASH + GOES_ON)
    incidents = _incidents(events)
    assert len(incidents) == 1 and incidents[0]["category"] == "runtime.crash"
    assert survived.UNPROVED_ASSUMPTION not in incidents[0]["assumed"]  # a death: decided, not lowered


def test_a_failure_followed_by_a_relaunch_that_serves_stays_an_incident(pack):
    events = _events(pack, UP + SERVING + HANDLED["dflash"] + UP + SERVING + GOES_ON)
    assert len(_incidents(events)) == 1


def test_the_healthy_fixture_forms_no_incident(pack):
    text = (ROOT / "fixtures/healthy/request_errors_while_serving_0523.log").read_text()
    events = _events(pack, text)
    assert _incidents(events) == []
