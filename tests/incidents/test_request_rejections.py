"""One request that SGLang rejects while it goes on serving is not an incident (CONTRACT).

http_server.py's generate_request (0.4.10 through 0.5.23) logs a ValueError of one request as
"[http_server] Error: <e>" and answers it with a 400; when SGLang logs in uvicorn's format the
line also starts with "ERROR:    ", which the uvicorn start-up error signal used to take as a
failure.  The ValueError that tokenizer_manager raises for input plus max_new_tokens over the
context ("Requested token count exceeds the model's maximum context length of N tokens", the
same words from 0.4.6 to 0.5.23) is one request's too, in a traceback as in that line.
Written from field16/003 (an Ascend decode node that rejected one over-long request and served
on); uvicorn's own bind error stays a failure."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import BUSY, HEAD, explain_file

TOO_LONG = ("Requested token count exceeds the model's maximum context length of 8192 tokens. You requested a total "
            "of 8503 tokens: 7003 tokens from the input messages and 1500 tokens for the completion. Please reduce "
            "the number of tokens in the input messages or the completion to fit within the limit.")
HTTP_ERROR = f"[2026-05-09 10:05:01] ERROR:    [http_server] Error: {TOO_LONG}\n"
OK = '[2026-05-09 10:05:01] INFO:     127.0.0.1:34022 - "POST /generate HTTP/1.1" 200 OK\n'
# the same rejection raised where the tokenizer manager validates the request (no scheduler frame)
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tokenizer_manager.py", line 795, '
    "in _validate_one_request\n"
    "    raise ValueError(error_msg)\n"
    f"ValueError: {TOO_LONG}\n")


def test_the_http_servers_line_for_one_rejected_request_forms_no_incident(tmp_path: Path):
    log = tmp_path / "serving.log"
    log.write_text(HEAD + BUSY + OK + HTTP_ERROR + OK + BUSY)
    assert explain_file(log) == []


def test_the_rejection_alone_forms_no_incident(tmp_path: Path):
    log = tmp_path / "one.log"
    log.write_text(HTTP_ERROR)
    assert explain_file(log) == []


def test_the_tokenizer_managers_traceback_of_the_rejection_forms_no_incident(tmp_path: Path):
    log = tmp_path / "tb.log"
    log.write_text(HEAD + BUSY + TRACEBACK + BUSY)
    assert explain_file(log) == []


def test_uvicorns_bind_error_still_forms_one(tmp_path: Path):
    log = tmp_path / "bind.log"
    log.write_text(HEAD + "[2026-05-09 10:04:00] ERROR:    [Errno 98] error while attempting to bind on address "
                   "('0.0.0.0', 30000): address already in use\n")
    incidents = explain_file(log)
    assert len(incidents) == 1
    assert incidents[0]["category"] == "network.port"


def test_the_same_words_from_the_scheduler_still_form_one(tmp_path: Path):
    log = tmp_path / "sched.log"
    log.write_text(HEAD + BUSY + "[2026-05-09 10:05:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2688, '
                   "in run_scheduler_process\n"
                   "    scheduler.event_loop_overlap()\n"
                   f"ValueError: {TOO_LONG}\n")
    assert len(explain_file(log)) == 1
