"""NVIDIA Dynamo's SGLang worker says when its engine is ready.

Dynamo runs SGLang's Engine inside its own worker process: there is no HTTP server, so SGLang's
"The server is fired up and ready to roll" is never logged.  Once the engine is up and the model
is registered with the Dynamo runtime, the worker lets the queued requests through and logs
"Model registration succeeded; processing queued requests" (Dynamo's SGLang component, once
register_llm_with_runtime_config succeeded and the readiness gate is set).  sgl-project/sglang#30242 (field24/004) pasted a
decode worker's log: the registration lines, then four minutes later a rank's "Scheduler hit an
exception" header cut in its first frame.  Without the worker's ready line the incident did not
know whether the engine had served and the best guess was "other"; with it the crash is one while
serving."""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor.incidents import milestones

REGISTERED = [
    "2026-07-06T02:45:29.923854Z  INFO _core: Registered base model 'deepseek-ai/DeepSeek-V4-Pro' MDC",
    "[2026-07-05 19:45:29.924] Successfully registered LLM with runtime config",
    "[2026-07-05 19:45:29.924] Model registration succeeded; processing queued requests",
]
HEADER = [
    "[2026-07-05 19:49:44.257 DP1 TP1 EP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt',
]


def test_the_registration_line_is_the_ready_milestone():
    assert milestones.match("Model registration succeeded; processing queued requests") == ("ready", {})
    # the lines before it are not: the worker may still fail to register ("Model registration failed")
    assert milestones.match("Successfully registered LLM with runtime config") is None
    assert milestones.match("Model registration failed; shutting down") is None


def test_a_scheduler_failure_after_registration_was_serving(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, REGISTERED + HEADER)
    assert inc.after_ready_known and inc.after_ready


def test_without_the_registration_line_it_stays_unknown(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, REGISTERED[:2] + HEADER)
    assert not inc.after_ready_known
