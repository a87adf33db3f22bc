"""A constructor only a request's handler calls (scripts/gen_request_messages.py
REQUEST_ONLY_CONSTRUCTORS): FunctionCallParser's "Unsupported tool_call_parser: X" is one request's
error (the parser name a /parse_function_call request sent, answered 500 by uvicorn's "Exception in
ASGI application"; fixtures/healthy/real-0.5.23/tool_parser_sigterm_twice.log), while
ReasoningParser's "Unsupported model type: X", which the scheduler's start-up also raises, is not."""

from conftest import explain_incidents

from sglang_doctor.incidents.request_errors import is_request_message

SERVING = (
    "[2026-12-07 10:11:35] Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, #pending-token: 0, cpu graph: False, input throughput (token/s): 0.57\n"
    '[2026-12-07 10:11:36] INFO:     127.0.0.1:39806 - "GET /health HTTP/1.1" 200 OK\n'
)


def test_the_tool_call_parser_message_is_a_requests_and_the_reasoning_one_is_not():
    assert is_request_message("ValueError", "Unsupported tool_call_parser: no-such-parser")
    assert not is_request_message("ValueError", "Unsupported model type: no-such-parser")


def test_the_tool_call_parser_line_alone_while_serving_is_quiet(tmp_path):
    log = tmp_path / "bare.log"
    log.write_text(SERVING + "ValueError: Unsupported tool_call_parser: no-such-parser\n" + SERVING)
    assert explain_incidents(log) == []


def test_the_reasoning_parser_line_alone_stays_an_incident(tmp_path):
    log = tmp_path / "bare.log"
    log.write_text(SERVING + "ValueError: Unsupported model type: no-such-parser\n")
    assert explain_incidents(log) != []
