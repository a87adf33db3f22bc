"""Record real SGLang 0.5.23 logs of sessions a healthy server survives (fixtures/healthy/real-0.5.23/).

Why: the false alarms that remain are on healthy logs people paste, full of request-level
errors, client disconnects, aborts and stop signals.  Bait rendered from SGLang's source
(bench/healthy_bait.py (c)) does not have the real shapes of these; a real server does.

Each run launches SGLang 0.5.23 on this CPU machine (tests/realsglang/harness.py: a tiny
made-up model, ``--device cpu --load-format dummy``), waits until it is ready, plays a
session of client mistakes and odd-but-legal requests at it (``SESSION``), checks that
``/health`` still answers 200 after each step (a step the server does not survive makes the
recording fail: the fixture would not be healthy), and stops it with a signal (``RUNS``).
The log is kept as SGLang wrote it (stdout + stderr) except:

- the models' scratch directory is shown as ``/opt/models`` (as tests/realsglang/capture.py);
- runs of consecutive batch lines (``Prefill batch`` / ``Decode batch``) keep their first
  ``KEEP_BATCH_HEAD`` lines and their last one (``trim_batch_lines``): the concurrency burst
  and the long generations print hundreds of them;
- ``--log-requests`` records (``Receive: obj=...`` / ``Finish: obj=...``, a request's whole
  input and output, 2-3 KB each) are cut after ``KEEP_REQUEST_CHARS`` characters
  (``trim_request_lines``).  Every other line is kept whole.

A run whose generations are still in flight when the stop signal comes (``Run.in_flight``)
outlasts the recorder's 60 s grace: the recorder then sends SIGTERM to the main process and,
5 s later, SIGKILL to the whole group (tests/realsglang/harness.py ``stop``), as ``docker
stop`` or a supervisor does; the log ends where SGLang was killed, mid-line if it was.

A launch that fails (the busy-port case) is not healthy and is not recorded here: it is
fixtures/real/port_in_use_0523.log (tests/realsglang/capture.py).

Usage (about 5-10 minutes per run on a loaded 2-core machine; not run by the tests)::

    .venv/bin/python scripts/record_healthy_runs.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.realsglang import harness  # noqa: E402
from tests.realsglang.capture import sanitize  # noqa: E402
from tests.realsglang.make_tiny_model import write_model  # noqa: E402

OUT = ROOT / "fixtures" / "healthy" / "real-0.5.23"
KEEP_BATCH_HEAD = 3
BATCH_LINE = re.compile(r"\] (Prefill|Decode) batch[,.]")
KEEP_REQUEST_CHARS = 400
REQUEST_LINE = re.compile(r"^\[[^\]]+\] (?:Receive|Finish): obj=")


# --- one HTTP exchange, raw (a malformed body must reach the server as it is) ---------------


@dataclass(frozen=True)
class Server:
    """Where the steps send their requests, and the API key they send (None: no header)."""
    port: int
    api_key: str | None = None

    def headers(self, body: bytes | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def with_key(self, api_key: str | None) -> "Server":
        return Server(self.port, api_key)


def _request(srv: Server, method: str, path: str, body: bytes | None = None,
             timeout: float = 120.0) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=srv.headers(body))
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _post(srv: Server, path: str, payload: dict, timeout: float = 120.0) -> int:
    return _request(srv, "POST", path, json.dumps(payload).encode(), timeout)


def _disconnect_mid_stream(srv: Server, path: str, payload: dict) -> int:
    """Open a streaming request, read its first chunk, then drop the connection."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    body = json.dumps(payload).encode()
    conn.request("POST", path, body=body, headers=srv.headers(body))
    response = conn.getresponse()
    response.read1(64) if hasattr(response, "read1") else response.fp.read(64)
    conn.sock.close()
    conn.close()
    return response.status


def _abort_running(srv: Server) -> int:
    """Start a long generation with a known rid and abort it from a second connection."""
    rid = "healthy-bait-abort-1"
    payload = {"text": "tell me a story", "rid": rid,
               "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}}
    worker = threading.Thread(target=_post, args=(srv, "/generate", payload), daemon=True)
    worker.start()
    time.sleep(3)
    status = _post(srv, "/abort_request", {"rid": rid})
    worker.join(timeout=120)
    return status


def _abort_all(srv: Server) -> int:
    payloads = [{"text": f"once upon a time {i}",
                 "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}} for i in range(3)]
    workers = [threading.Thread(target=_post, args=(srv, "/generate", p), daemon=True)
               for p in payloads]
    for w in workers:
        w.start()
    time.sleep(3)
    status = _post(srv, "/abort_request", {"abort_all": True})
    for w in workers:
        w.join(timeout=120)
    return status


def _burst(srv: Server, n: int = 24) -> int:
    """``n`` concurrent short generations; the status of the last."""
    statuses: list[int] = []

    def one(i: int) -> None:
        statuses.append(_post(srv, "/generate", {
            "text": f"what is the capital of france {i}",
            "sampling_params": {"max_new_tokens": 16, "temperature": 0.7}}))

    workers = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    return statuses[-1] if statuses else 0


_STREAMING_CLIENT = """
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
headers = {"Content-Type": "application/json"}
if sys.argv[2]:
    headers["Authorization"] = "Bearer " + sys.argv[2]
conn.request("POST", "/generate", body=json.dumps({"text": "tell me a long story", "stream": True,
    "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}}), headers=headers)
response = conn.getresponse()
while response.read1(256):
    pass
"""


def _client_killed_mid_stream(srv: Server) -> int:
    """A separate client process streams a long generation and is killed with SIGKILL after a
    few seconds: its socket is closed by the kernel, no FIN from Python's side of it first."""
    client = subprocess.Popen([sys.executable, "-c", _STREAMING_CLIENT, str(srv.port), srv.api_key or ""])
    time.sleep(4)
    client.send_signal(signal.SIGKILL)
    return client.wait(timeout=30)


def _raw(srv: Server, data: bytes) -> int:
    """Send ``data`` as it is on a fresh connection; the status of the answer (0: none)."""
    import socket

    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
        sock.sendall(data)
        try:
            head = sock.recv(64)
        except OSError:
            return 0
    found = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return int(found.group(1)) if found else 0


def _truncated_body(srv: Server) -> int:
    """A POST whose Content-Length promises more body than the client sends before closing."""
    import socket

    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
        sock.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 500\r\n\r\n{\"text\": \"hel")
        time.sleep(1)
    return 0


def start_in_flight(srv: Server, n: int) -> list[threading.Thread]:
    """``n`` long generations left running (for a stop signal that lands while they are)."""
    workers = [threading.Thread(target=_post_quietly, args=(srv, {
        "text": f"in flight {i}", "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}}),
        daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    time.sleep(4)
    return workers


def _post_quietly(srv: Server, payload: dict) -> None:
    """A request whose connection the stopping server may drop: its outcome is not the point."""
    try:
        _post(srv, "/generate", payload)
    except (OSError, http.client.HTTPException):
        pass


def _chat(payload: dict) -> dict:
    return {"model": "default", "messages": [{"role": "user", "content": "hello"}], **payload}


# --- the session: (what, call) -------------------------------------------------------------

Step = tuple[str, Callable[[Server], int]]

SESSION: list[Step] = [
    ("a good generation", lambda p: _post(p, "/generate", {
        "text": "hello world", "sampling_params": {"max_new_tokens": 8}})),
    ("malformed JSON body to /generate", lambda p: _request(p, "POST", "/generate", b'{"text": "hi",')),
    ("malformed JSON body to /v1/chat/completions",
     lambda p: _request(p, "POST", "/v1/chat/completions", b"{not json")),
    ("unknown model name", lambda p: _post(p, "/v1/chat/completions", _chat({"model": "gpt-9-nonexistent"}))),
    ("chat without messages", lambda p: _post(p, "/v1/chat/completions", {"model": "default"})),
    ("prompt longer than the context", lambda p: _post(p, "/generate", {
        "input_ids": [5] * 3000, "sampling_params": {"max_new_tokens": 4}})),
    ("completion prompt longer than the context", lambda p: _post(p, "/v1/completions", {
        "model": "default", "prompt": "hello world " * 1600, "max_tokens": 4})),
    ("max_tokens larger than the context", lambda p: _post(p, "/v1/completions", {
        "model": "default", "prompt": "hello", "max_tokens": 100000})),
    ("max_new_tokens larger than the context", lambda p: _post(p, "/generate", {
        "text": "hello", "sampling_params": {"max_new_tokens": 100000}})),
    ("temperature -1", lambda p: _post(p, "/generate", {
        "text": "hello", "sampling_params": {"temperature": -1, "max_new_tokens": 4}})),
    ("top_p 2", lambda p: _post(p, "/generate", {
        "text": "hello", "sampling_params": {"top_p": 2, "max_new_tokens": 4}})),
    ("top_k -5 and min_p 3 (OpenAI)", lambda p: _post(p, "/v1/chat/completions", _chat({
        "top_k": -5, "min_p": 3, "max_tokens": 4}))),
    ("temperature -1 (OpenAI chat)", lambda p: _post(p, "/v1/chat/completions", _chat({
        "temperature": -1, "max_tokens": 4}))),
    ("n=0 (OpenAI)", lambda p: _post(p, "/v1/completions", {
        "model": "default", "prompt": "hi", "n": 0, "max_tokens": 4})),
    ("invalid regex", lambda p: _post(p, "/generate", {
        "text": "hello", "sampling_params": {"regex": "([a-z", "max_new_tokens": 4}})),
    ("invalid json_schema", lambda p: _post(p, "/generate", {
        "text": "hello", "sampling_params": {"json_schema": "{not a schema", "max_new_tokens": 4}})),
    ("invalid response_format schema (OpenAI)", lambda p: _post(p, "/v1/chat/completions", _chat({
        "max_tokens": 4, "response_format": {"type": "json_schema",
                                             "json_schema": {"name": "x", "schema": {"type": "nope"}}}}))),
    ("unknown lora name", lambda p: _post(p, "/generate", {
        "text": "hello", "lora_path": "no-such-adapter", "sampling_params": {"max_new_tokens": 4}})),
    ("streaming client disconnects mid-stream (/generate)", lambda p: _disconnect_mid_stream(p, "/generate", {
        "text": "tell me a story", "stream": True,
        "sampling_params": {"max_new_tokens": 400, "ignore_eos": True}})),
    ("streaming client disconnects mid-stream (chat)", lambda p: _disconnect_mid_stream(
        p, "/v1/chat/completions", _chat({"stream": True, "max_tokens": 400}))),
    ("abort one running request", _abort_running),
    ("abort all running requests", _abort_all),
    ("flush the cache", lambda p: _request(p, "POST", "/flush_cache")),
    ("server info", lambda p: _request(p, "GET", "/get_server_info")),
    ("model info", lambda p: _request(p, "GET", "/get_model_info")),
    ("an endpoint that does not exist", lambda p: _request(p, "GET", "/v2/nothing")),
    ("wrong method", lambda p: _request(p, "GET", "/generate")),
    ("a concurrent burst of 24 requests", _burst),
    ("a good chat completion", lambda p: _post(p, "/v1/chat/completions", _chat({"max_tokens": 8}))),
    ("health_generate", lambda p: _request(p, "GET", "/health_generate")),
]

# Steps of the runs recorded in session 30 (the first two runs use SESSION only).  The ones that
# need a flag say so (``Run.flags``): /metrics needs --enable-metrics, the key steps --api-key.
MORE_STEPS: list[Step] = [
    ("scrape /metrics", lambda p: _request(p, "GET", "/metrics")),
    ("wrong API key", lambda p: _post(p.with_key("sk-wrong-key"), "/generate", {
        "text": "hello", "sampling_params": {"max_new_tokens": 4}})),
    ("no API key (OpenAI chat)", lambda p: _post(p.with_key(None), "/v1/chat/completions",
                                                 _chat({"max_tokens": 4}))),
    ("HEAD /", lambda p: _request(p, "HEAD", "/")),
    ("OPTIONS /generate", lambda p: _request(p, "OPTIONS", "/generate")),
    ("404 under /v1", lambda p: _request(p, "GET", "/v1/nothing-here")),
    ("return_logprob with out-of-vocabulary token_ids_logprob", lambda p: _post(p, "/generate", {
        "text": "hello", "return_logprob": True, "token_ids_logprob": [1, 99999999],
        "sampling_params": {"max_new_tokens": 4}})),
    ("return_logprob with top_logprobs_num", lambda p: _post(p, "/generate", {
        "text": "hello", "return_logprob": True, "top_logprobs_num": 3, "logprob_start_len": 0,
        "sampling_params": {"max_new_tokens": 4}})),
    ("a batch with one bad item", lambda p: _post(p, "/generate", {
        "text": ["hello", "world"],
        "sampling_params": [{"max_new_tokens": 4}, {"max_new_tokens": 4, "temperature": -1}]})),
    ("/v1/embeddings on a generation model", lambda p: _post(p, "/v1/embeddings", {
        "model": "default", "input": "hello"})),
    ("a client killed with SIGKILL mid-stream", _client_killed_mid_stream),
    ("bytes that are not HTTP", lambda p: _raw(p, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n")),
    ("a websocket upgrade request", lambda p: _raw(p, b"GET /generate HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                                                     b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                                                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")),
    ("a body cut short by the client", _truncated_body),
    ("a good generation after it all", lambda p: _post(p, "/generate", {
        "text": "hello again", "sampling_params": {"max_new_tokens": 8}})),
]

_WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def _parse_tool_call(text: str, parser: str = "qwen25"):
    """POST /parse_function_call: SGLang's own tool-call parser on a model output we choose (a
    dummy model's output never holds a tool call, so the parse failures are fed to it here)."""
    return lambda p: _post(p, "/parse_function_call", {
        "text": text, "tool_call_parser": parser, "tools": [_WEATHER_TOOL]})


# Steps of the runs recorded in session 32: SGLang's tool-call and reasoning parsers given a
# malformed model output, admin endpoints asked for what this server cannot do (a weight update
# from a missing directory, a LoRA adapter without --enable-lora), the rerank / score / tokenize
# endpoints used wrongly, a profile started and stopped, generation paused and resumed.
ADMIN_STEPS: list[Step] = [
    ("tool call with malformed JSON (/parse_function_call, qwen25)", _parse_tool_call(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": \n</tool_call>')),
    ("tool call to an undefined function (/parse_function_call, qwen25)", _parse_tool_call(
        '<tool_call>\n{"name": "delete_all_files", "arguments": {}}\n</tool_call>')),
    ("tool call with an unknown parser name (/parse_function_call)", _parse_tool_call(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        parser="no-such-parser")),
    ("reasoning with an unknown parser name (/separate_reasoning)", lambda p: _post(p, "/separate_reasoning", {
        "text": "<think>hmm</think>answer", "reasoning_parser": "no-such-parser"})),
    ("chat whose history holds a tool call with malformed arguments", lambda p: _post(
        p, "/v1/chat/completions", {"model": "default", "max_tokens": 4, "tools": [_WEATHER_TOOL], "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\": "}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]})),
    ("chat with tools and tool_choice naming an undefined function", lambda p: _post(
        p, "/v1/chat/completions", _chat({"max_tokens": 4, "tools": [_WEATHER_TOOL], "tool_choice": {
            "type": "function", "function": {"name": "not_a_tool"}}}))),
    ("update weights from a directory that does not exist", lambda p: _post(p, "/update_weights_from_disk", {
        "model_path": "/nonexistent/checkpoint-1000"})),
    ("load a LoRA adapter on a server started without LoRA", lambda p: _post(p, "/load_lora_adapter", {
        "lora_name": "adapter-x", "lora_path": "/nonexistent/adapter-x"})),
    ("/v1/rerank on a generation model", lambda p: _post(p, "/v1/rerank", {
        "query": "what is a cat", "documents": ["a cat is an animal", "a car is a vehicle"]})),
    ("/v1/score with an empty item list", lambda p: _post(p, "/v1/score", {
        "model": "default", "query": "is this good?", "items": [], "label_token_ids": [1, 2]})),
    ("/tokenize with no text", lambda p: _post(p, "/tokenize", {"model": "default"})),
    ("pause generation, then continue", lambda p: (_post(p, "/pause_generation", {}),
                                                   _post(p, "/continue_generation", {}))[-1]),
    ("a good generation after the admin errors", lambda p: _post(p, "/generate", {
        "text": "hello again", "sampling_params": {"max_new_tokens": 8}})),
]


@dataclass(frozen=True)
class Run:
    name: str
    what: str
    stop_signal: int
    session: tuple[str, ...] = ()  # step names (SESSION or MORE_STEPS); empty = the whole SESSION
    flags: tuple[str, ...] = ()  # launch flags besides harness.DEFAULT_FLAGS
    api_key: str | None = None  # the --api-key the steps send (it must be in ``flags`` too)
    in_flight: int = 0  # long generations still running when the stop signal is sent
    env: tuple[tuple[str, str], ...] = ()  # environment of the launch besides harness.launch_env's
    probe_startup: bool = False  # poll /health from the launch on (the probes before ready)
    to_group: bool = False  # the stop signal goes to the whole process group (a terminal's Ctrl-C)
    repeat_stop: float = 0.0  # seconds after which the stop signal is sent a second time (0: once)


RUNS = [
    Run("session_sigterm", "the whole session, then SIGTERM to the main process", signal.SIGTERM),
    Run("session_sigint", "a short session (a burst, a disconnect, an abort), then SIGINT (Ctrl-C)",
        signal.SIGINT, ("a good generation", "a concurrent burst of 24 requests",
                        "streaming client disconnects mid-stream (/generate)",
                        "abort one running request", "temperature -1")),
    Run("probes_sigterm_in_flight",
        "--enable-metrics --api-key --log-requests: metrics scrapes, wrong and missing keys, HEAD/"
        "OPTIONS/404, bad logprob token ids, a batch with one bad item, embeddings on a generation "
        "model, a client killed with SIGKILL mid-stream; then SIGTERM with 3 generations in flight",
        signal.SIGTERM, tuple(name for name, _ in MORE_STEPS),
        flags=("--enable-metrics", "--api-key", "sk-bait-30", "--log-requests", "--log-requests-level", "1"),
        api_key="sk-bait-30", in_flight=3),
    Run("raw_http_sigterm", "bytes that are not HTTP (a TLS hello), a websocket upgrade, a body the client "
        "cut short, then SIGTERM", signal.SIGTERM,
        ("a good generation", "bytes that are not HTTP", "a websocket upgrade request", "a body cut short by the client",
         "a good generation after it all")),
    Run("sigint_in_flight", "a good generation and a bad one, then SIGINT (Ctrl-C) with 3 generations "
        "in flight", signal.SIGINT, ("a good generation", "temperature -1"), in_flight=3),
    Run("warnings_probes_ctrl_c_twice",
        "PYTHONWARNINGS=default (the warnings Python hides by default, with their source lines), /health "
        "polled from the launch on (answers before ready), tool-call and reasoning parse failures, admin "
        "endpoints asked for what the server cannot do; then Ctrl-C twice to the whole process group, as "
        "an impatient terminal user", signal.SIGINT, tuple(name for name, _ in ADMIN_STEPS),
        env=(("PYTHONWARNINGS", "default"),), probe_startup=True, to_group=True, repeat_stop=1.0),
    Run("tool_parser_sigterm_twice",
        "--tool-call-parser qwen25 --reasoning-parser deepseek-r1: the parse failures and admin errors "
        "with the parsers configured, 2 generations in flight; then SIGTERM twice to the main process",
        signal.SIGTERM, tuple(name for name, _ in ADMIN_STEPS),
        flags=("--tool-call-parser", "qwen25", "--reasoning-parser", "deepseek-r1"), in_flight=2,
        repeat_stop=2.0),
]


def trim_batch_lines(text: str, head: int = KEEP_BATCH_HEAD) -> str:
    """Keep the first ``head`` and the last line of each run of consecutive batch lines."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(run if len(run) <= head + 1 else run[:head] + run[-1:])
        run.clear()

    for line in text.splitlines(keepends=True):
        if BATCH_LINE.search(line):
            run.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return "".join(out)


def trim_request_lines(text: str, keep: int = KEEP_REQUEST_CHARS) -> str:
    """Cut each ``--log-requests`` record line after ``keep`` characters (its line end kept)."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        if REQUEST_LINE.match(body) and len(body) > keep:
            line = body[:keep] + line[len(body):]
        out.append(line)
    return "".join(out)


def play(srv: Server, steps: list[Step], journal: list[str]) -> None:
    for what, call in steps:
        try:
            status = call(srv)
        except (OSError, http.client.HTTPException) as err:
            status = f"client error {type(err).__name__}"
        time.sleep(1)
        health = harness.http_status(f"http://127.0.0.1:{srv.port}/health", timeout=60)
        journal.append(f"{what}: {status}, then /health {health}")
        print(f"   {journal[-1]}", flush=True)
        if health != 200:
            raise RuntimeError(f"the server did not survive {what!r} (/health {health})")


def _signal(proc, sig: int, to_group: bool) -> None:
    try:
        if to_group:
            os.killpg(proc.pid, sig)  # start_new_session: the leader's pid is the group id
        else:
            proc.send_signal(sig)
    except ProcessLookupError:
        pass


def stop_with(proc, sig: int, grace: float = 60.0, to_group: bool = False, repeat: float = 0.0) -> int | None:
    """Send ``sig`` to the main process (or its group), a second time after ``repeat`` seconds
    when asked, then let harness.stop clean the group up."""
    _signal(proc, sig, to_group)
    if repeat:
        time.sleep(repeat)
        if proc.poll() is None:
            _signal(proc, sig, to_group)
    try:
        proc.wait(timeout=grace)
    except Exception:  # noqa: BLE001 - harness.stop below kills what is left
        pass
    return harness.stop(proc, grace=5.0).returncode


def probe_until_ready(port: int, stop: threading.Event, journal: list[str]) -> threading.Thread:
    """Poll /health once a second from the launch on, as a load balancer or a start-up script
    does; the statuses seen before the first 200 go to the journal."""
    def poll() -> None:
        seen: list[str] = []
        while not stop.is_set():
            status = harness.http_status(f"http://127.0.0.1:{port}/health", timeout=5)
            label = "no answer" if status is None else str(status)
            if not seen or seen[-1] != label:
                seen.append(label)
            if status == 200:
                break
            time.sleep(1)
        journal.append("/health polled from the launch on: " + " -> ".join(seen))

    worker = threading.Thread(target=poll, daemon=True)
    worker.start()
    return worker


def tiny_launch(run, scratch: Path, python: Path) -> harness.Launch:
    """A run's launch (its ``flags`` and ``env`` besides the harness's) on the tiny made-up Llama,
    written once per scratch directory (this script and record_real_bait.py)."""
    model = scratch / "tiny"
    if not (model / "config.json").exists():
        write_model(model, kind="llama")
    return harness.build_launch(model, python=python, extra_args=harness.DEFAULT_FLAGS + run.flags, env=dict(run.env))


def record(run: Run, scratch: Path, python: Path, out: Path) -> dict:
    launch = tiny_launch(run, scratch, python)
    log_path = scratch / "logs" / f"{run.name}.log"
    proc = harness.start(launch, log_path, cwd=scratch)
    journal: list[str] = []
    probing = threading.Event()
    try:
        prober = probe_until_ready(launch.port, probing, journal) if run.probe_startup else None
        harness.wait_ready(proc, launch, log_path, timeout=1200)
        if prober is not None:
            prober.join(timeout=30)
        steps = [s for s in SESSION + MORE_STEPS + ADMIN_STEPS if s[0] in run.session] if run.session else SESSION
        srv = Server(launch.port, run.api_key)
        play(srv, steps, journal)
        if run.in_flight:
            start_in_flight(srv, run.in_flight)
            journal.append(f"{run.in_flight} long generations in flight when the signal is sent")
        returncode = stop_with(proc, run.stop_signal, to_group=run.to_group, repeat=run.repeat_stop)
    except Exception:
        probing.set()
        failed = Path(tempfile.gettempdir()) / f"record-healthy-failed-{run.name}.log"
        failed.write_text(sanitize(log_path.read_text(errors="replace"), scratch))
        print(f"   FAILED; its log is {failed}", file=sys.stderr, flush=True)
        raise
    finally:
        harness.stop(proc, grace=5.0)
    text = trim_request_lines(trim_batch_lines(sanitize(log_path.read_text(errors="replace"), scratch)))
    (out / f"{run.name}.log").write_text(text)
    outcome = {"name": run.name, "what": run.what, "flags": list(run.flags), "returncode": returncode,
               "steps": journal}
    if run.env:
        outcome["env"] = dict(run.env)
    return outcome


def write_readme(out: Path, outcomes: list[dict]) -> None:
    lines = [
        "# Real healthy SGLang 0.5.23 logs (false-alarm bait)",
        "",
        "Recorded by `scripts/record_healthy_runs.py` from real launches of SGLang 0.5.23 on a",
        "CPU-only machine (tests/realsglang/harness.py: a tiny made-up Llama, `--device cpu",
        "--load-format dummy --max-total-tokens 20000`).  Each run plays a session of client",
        "mistakes and odd-but-legal requests at a ready server, checks `/health` answers 200",
        "after every step, and stops it with a signal (a run with generations still in flight",
        "outlasts the 60 s grace: SIGTERM follows, then SIGKILL to the group 5 s later, and the",
        "log ends where SGLang was killed).  Nothing in these logs ended the server",
        "by itself: `explain` must find no incident in any of them (tests/incidents/",
        "test_real_healthy_runs.py).  Logs are verbatim except the models' scratch directory",
        "(`/opt/models`), runs of consecutive Prefill/Decode batch lines (first "
        f"{KEEP_BATCH_HEAD} and last kept) and `--log-requests` records (cut after "
        f"{KEEP_REQUEST_CHARS} characters).",
        "",
        "The failing counterpart (a second launch on a busy port) is not healthy and lives in",
        "fixtures/real/port_in_use_0523.log.",
        "",
    ]
    for o in outcomes:
        flags = " ".join(o.get("flags", []))
        lines += [f"## {o['name']}.log", "", o["what"] + f"; exit code {o['returncode']}.", ""]
        lines += [f"Launch flags besides the defaults: `{flags}`.", ""] if flags else []
        env = " ".join(f"{k}={v}" for k, v in o.get("env", {}).items())
        lines += [f"Launch environment besides the harness's: `{env}`.", ""] if env else []
        lines += ["Steps (HTTP status, then /health):", ""]
        lines += [f"- {step}" for step in o["steps"]] + [""]
    (out / "README.md").write_text("\n".join(lines))


def recorder_command_line(description: str, default_out: Path, argv: list[str] | None):
    """The recorders' shared command line (this script and record_real_bait.py): ``--out``,
    ``--only``; returns the arguments and the real SGLang's python (None: not installed), the
    output directory made."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--only", nargs="*", default=None, help="run names")
    args = parser.parse_args(argv)
    python = harness.sglang_python()
    if python is None:
        print("SGLang 0.5.23 is not installed; run scripts/install-real-sglang", file=sys.stderr)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
    return args, python


def read_manifest(out: Path) -> dict[str, dict]:
    """The runs recorded so far (``manifest.json``), by name: a run left out keeps its entry."""
    manifest = out / "manifest.json"
    return {e["name"]: e for e in (json.loads(manifest.read_text()) if manifest.exists() else [])}


def write_manifest(out: Path, ordered: list[dict], write_readme_of: Callable[[Path, list[dict]], None]) -> None:
    (out / "manifest.json").write_text(json.dumps(ordered, indent=1) + "\n")
    write_readme_of(out, ordered)


def main(argv: list[str] | None = None) -> int:
    args, python = recorder_command_line(__doc__.splitlines()[0], OUT, argv)
    if python is None:
        return 2
    outcomes = read_manifest(args.out)
    with tempfile.TemporaryDirectory(prefix="realsg-healthy-") as tmp:
        for run in RUNS:
            if args.only and run.name not in args.only:
                continue
            print(f"== {run.name}: {run.what}", flush=True)
            outcomes[run.name] = record(run, Path(tmp), python, args.out)
    write_manifest(args.out, [outcomes[r.name] for r in RUNS if r.name in outcomes], write_readme)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
