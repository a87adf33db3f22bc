"""Records SGLang logs for ONE failed request from a handler that catches and goes on.

Each header below is the first line of a log record SGLang prints from an ``except`` block
that answers one request (or one item of it) with an error, aborts that request, or skips one
step of it, and then returns to its loop: the process that printed it lives on by the
structure of its own code.  Their text carries the request's exception (``{e}``), which may
hold any words ("CUDA out of memory", "RuntimeError: CUDA error", a context-length overflow),
and ``logger.exception`` / ``exc_info=True`` print that exception's traceback right below the
header.  So a header line is never a failure signal itself, and a traceback that starts on the
line after it is that request's (assemble.py ``_request_error``): CONTRACT, "a request SGLang
rejected or failed while the server went on" is not an incident.

What stays reported: a failure of the server prints its own lines (the scheduler's
"Scheduler hit an exception", the parent's sigquit, a watchdog, a signal): those are not
headers here and are judged as before, even right after a request's error.  Unknown stays
unknown for errors that are NOT on this list: one that SGLang logged after ready and the log
then shows the launch serving (survived.py ``survived_serving``) becomes a warning; one whose
log ends before that stays an incident, with lowered confidence and the assumption said
(pipeline.py, ``ENDED_BEFORE_PROOF``).

Sources (file:function, the releases checked; 0.4.6.post5 has none of the OpenAI-layer ones,
its ``openai_api/adapter.py`` returns error responses without logging a traceback):
"""

from __future__ import annotations

import re

from sglang_doctor.incidents.tracebacks import CUT_MARK, cut_type_matches

# (the header's start, where SGLang prints it).  A header matches at the start of the
# record's message (behind SGLang's prefix), never in the middle of another line.
HEADERS: tuple[tuple[str, str], ...] = (
    ("Error in request: ",
     "entrypoints/openai/serving_base.py OpenAIServingBase.handle_request, logger.exception (0.5.9, 0.5.23)"),
    ("error: Traceback (most recent call last):",
     "openai_api/adapter.py process_batch (0.4.x batch API: one batch's requests failed), "
     "logger.error(f\"error: {get_exception_traceback()}\") (0.4.6.post5)"),
    ("Error during tokenization",
     "entrypoints/openai/serving_tokenize.py _handle_non_streaming_request, exc_info=True (0.5.9, 0.5.23)"),
    ("Error during detokenization",
     "entrypoints/openai/serving_tokenize.py (detokenize) _handle_non_streaming_request, exc_info=True (0.5.9, 0.5.23)"),
    ("Error handling VL reranker request",
     "entrypoints/openai/serving_rerank.py, logger.exception (0.5.9, 0.5.23)"),
    ("Error in preprocessing prompt inputs",
     "entrypoints/openai/serving_responses.py create_responses, logger.exception (0.5.9, 0.5.23)"),
    ("Background request failed for ",
     "entrypoints/openai/serving_responses.py _run_background_request, logger.exception (0.5.9, 0.5.23)"),
    ("Error processing embedding for item ",
     "entrypoints/openai/serving_classify.py, logger.error (0.5.9, 0.5.23)"),
    ("Tool call parsing error: ",
     "entrypoints/openai/serving_chat.py / serving_responses.py, logger.error (0.5.9, 0.5.23)"),
    ("Reasoning parsing error: ",
     "entrypoints/openai/serving_chat.py, logger.error (0.5.9, 0.5.23)"),
    ("Error converting Anthropic request: ",
     "entrypoints/anthropic/serving.py, logger.exception (0.5.9, 0.5.23)"),
    ("Error processing Anthropic request: ",
     "entrypoints/anthropic/serving.py, logger.exception (0.5.9, 0.5.23)"),
    ("Error converting streaming request: ",
     "entrypoints/anthropic/serving.py, logger.exception (0.5.9, 0.5.23)"),
    ("Error converting count_tokens request: ",
     "entrypoints/anthropic/serving.py, logger.exception (0.5.9, 0.5.23)"),
    ("Error counting tokens: ",
     "entrypoints/anthropic/serving.py, logger.exception (0.5.9, 0.5.23)"),
    ("[http_server] Error: ",
     "entrypoints/http_server.py generate_request (a ValueError answered with 400), logger.error (0.5.9, 0.5.23)"),
    ("Failed to abort request ",
     "managers/tokenizer_manager.py (request-state cleanup), logger.exception (0.5.23)"),
    ("[load_mm_data",
     "multimodal/processors/base_processor.py load_mm_data, logger.exception, then raised to the request's "
     "handler (0.5.9, 0.5.23)"),
    ("Encode failed for request ",
     "disaggregation/encode_receiver.py (EPD), exc_info=True (0.5.9)"),
    ("Grammar compilation raised an exception: ",
     "constrained/grammar_manager.py (the request gets an InvalidGrammarObject and is aborted) (0.5.23)"),
    ("Hit invalid ",
     "constrained/xgrammar_backend.py / outlines_backend.py / llguidance_backend.py dispatch_*: "
     "'Hit invalid json_schema|ebnf|regex|structural_tag|grammar|regex schema: ...', the request is aborted "
     "with 'Failed to compile ... grammar'; 0.4.x logs 'Skip invalid ...' as a warning instead (0.5.9, 0.5.23)"),
    ("Multimodal feature reconstruction failed (",
     "managers/scheduler.py (one request's multimodal inputs, aborted with 400) (0.5.23)"),
    ("Failed to materialize shared-memory multimodal features for rid=",
     "managers/scheduler_components/request_receiver.py, logger.exception, the request rejected (0.5.23)"),
    ("HiCache prefetch transfer failed for request ",
     "managers/cache_controller.py prefetch thread, logger.exception, 0 pages hit: the request recomputes (0.5.23)"),
    ("HiCache storage query failed for request ",
     "managers/cache_controller.py prefetch thread, logger.exception, the request recomputes (0.5.23)"),
)
LITERALS: tuple[str, ...] = tuple(head for head, _ in HEADERS)
_GRAMMAR_KINDS = re.compile(r"Hit invalid (?:json_schema|ebnf|regex|structural_tag|grammar|regex schema): ")


def is_header(message: str) -> bool:
    """Whether ``message`` (a record's text behind SGLang's prefix, or a bare line) is the
    header of one request's handled error."""
    text = message.lstrip()
    # one startswith over all the heads (no head is a prefix of another): called on every
    # record-start line the reader passes on, the kept batch lines included (read/scanner.py)
    if not text.startswith(LITERALS):
        return False
    return not text.startswith("Hit invalid ") or _GRAMMAR_KINDS.match(text) is not None


# -- messages SGLang raises only for one request ---------------------------------------------
# request_messages.json, generated by scripts/gen_request_messages.py from the failure
# inventory (the raise sites waived as request_level in the request path's own modules:
# io_struct, tokenizer_manager, the OpenAI / Anthropic / Ollama layers, http_server; and the
# per-request code they call, wherever the inventory's phase map places no scheduler or
# start-up step: the multimodal processors, SamplingParams, the parsers, the tool-call detectors).
_MESSAGES: list[tuple[str, re.Pattern]] | None = None


def _messages() -> list[tuple[str, re.Pattern]]:
    global _MESSAGES
    if _MESSAGES is None:
        import json
        from pathlib import Path

        data = json.loads((Path(__file__).with_name("request_messages.json")).read_text(encoding="utf-8"))
        _MESSAGES = [(m["type"], re.compile(m["regex"], re.S)) for m in data["messages"]]
    return _MESSAGES


# Exception types SGLang defines for one request's processing and raises nowhere else, whatever
# the message: DS32EncodingError (entrypoints/openai/encoding_dsv32.py, 0.5.x: the DeepSeek-V3.2
# chat encoding of one request's messages; serving_base.py ``handle_request`` catches it,
# ``logger.info(f"DS32EncodingError: {e}")`` -- a record that reads as a bare exception line --
# and answers 400).  Its message is the request's content, so the catalog's regexes do not cover
# every filling of it.
REQUEST_ONLY_TYPES = frozenset({"DS32EncodingError"})
# ... and the HTTP server's own exceptions of ONE client connection, which its ASGI stack raises
# only while it serves that connection: starlette's ``ClientDisconnect`` (requests.py
# ``Request.stream``: the client went away before its body was read), h11's protocol errors as
# uvicorn's h11 protocol meets them (h11_impl.py ``send`` / ``handle_events``: "Can't send data
# when our state is ERROR" after the client vanished mid-response, a malformed request).  uvicorn
# logs them with "Exception in ASGI application" (or, for a malformed request, answers 400) and
# serves the other connections.  The qualified names only: an HTTP *client* in SGLang (httpx,
# aiohttp: the PD router, a remote tokenizer) raises its own wrappers (httpcore's
# RemoteProtocolError, aiohttp's ClientConnectionError), which say a peer is unreachable.
CONNECTION_ONLY_TYPES = frozenset({"starlette.requests.ClientDisconnect", "ClientDisconnect",
                                   "h11._util.LocalProtocolError", "h11._util.RemoteProtocolError",
                                   "h11.LocalProtocolError", "h11.RemoteProtocolError"})


def is_request_message(etype: str, message: str) -> bool:
    """Whether an exception (type, first line of its message) is one SGLang raises only while
    validating or failing one request (request_messages.json, REQUEST_ONLY_TYPES), or one client
    connection's (CONNECTION_ONLY_TYPES): that request's error.  A type the paste cut at the line's head (``…ueError``) is the catalog's type it can
    end, 5 of its characters or more left (tracebacks.cut_type_matches)."""
    first = message.split("\n", 1)[0].strip()
    name = etype.rsplit(".", 1)[-1].lstrip(CUT_MARK)
    if not etype.startswith(CUT_MARK) and (name in REQUEST_ONLY_TYPES or etype in CONNECTION_ONLY_TYPES):
        return True
    messages = _messages()
    ends = (set(cut_type_matches(CUT_MARK + name, {t for t, _ in messages}, min_tail=5))
            if etype.startswith(CUT_MARK) else {name})
    return any(t in ends and rx.match(first) for t, rx in messages)


# -- a client request's body rejected by its pydantic model ------------------------------------
# SGLang's HTTP layers parse a request's JSON body into pydantic models named for the request
# (entrypoints/openai/protocol.py ChatCompletionRequest, CompletionRequest, EmbeddingRequest,
# ResponsesRequest, ScoringRequest, TokenizeRequest, ...; anthropic/protocol.py
# AnthropicMessagesRequest; ollama/protocol.py OllamaChatRequest, ...; 0.4.x
# openai_api/protocol.py with the same names; the adapter of 0.4.x builds them with
# ``ChatCompletionRequest(**request_json)`` inside the route handler, so an invalid body's
# ValidationError is printed by uvicorn's "Exception in ASGI application" and answered 500, later
# releases answer 400/422).  pydantic prints "N validation error(s) for <Model>": when <Model> is
# one of those request models, one client's body was refused and the server goes on.  Models
# SGLang validates at start-up are not named "...Request".
_REQUEST_MODEL_VALIDATION = re.compile(r"\d+ validation errors? for \w*Request\b")


def is_request_model_validation(etype: str, message: str) -> bool:
    """Whether an exception is pydantic's ValidationError for one of SGLang's request models
    (a client's request body refused; above)."""
    return (etype.rsplit(".", 1)[-1] == "ValidationError"
            and _REQUEST_MODEL_VALIDATION.match(message.split("\n", 1)[0].strip()) is not None)
