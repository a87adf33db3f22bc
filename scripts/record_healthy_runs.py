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
  and the long generations print hundreds of them.  Every other line is kept.

A launch that fails (the busy-port case) is not healthy and is not recorded here: it is
fixtures/real/port_in_use_0523.log (tests/realsglang/capture.py).

Usage (about 5-10 minutes per run on a loaded 2-core machine; not run by the tests)::

    .venv/bin/python scripts/record_healthy_runs.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import signal
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


# --- one HTTP exchange, raw (a malformed body must reach the server as it is) ---------------


def _request(port: int, method: str, path: str, body: bytes | None = None,
             timeout: float = 120.0) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _post(port: int, path: str, payload: dict, timeout: float = 120.0) -> int:
    return _request(port, "POST", path, json.dumps(payload).encode(), timeout)


def _disconnect_mid_stream(port: int, path: str, payload: dict) -> int:
    """Open a streaming request, read its first chunk, then drop the connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", path, body=json.dumps(payload).encode(),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read1(64) if hasattr(response, "read1") else response.fp.read(64)
    conn.sock.close()
    conn.close()
    return response.status


def _abort_running(port: int) -> int:
    """Start a long generation with a known rid and abort it from a second connection."""
    rid = "healthy-bait-abort-1"
    payload = {"text": "tell me a story", "rid": rid,
               "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}}
    worker = threading.Thread(target=_post, args=(port, "/generate", payload), daemon=True)
    worker.start()
    time.sleep(3)
    status = _post(port, "/abort_request", {"rid": rid})
    worker.join(timeout=120)
    return status


def _abort_all(port: int) -> int:
    payloads = [{"text": f"once upon a time {i}",
                 "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}} for i in range(3)]
    workers = [threading.Thread(target=_post, args=(port, "/generate", p), daemon=True)
               for p in payloads]
    for w in workers:
        w.start()
    time.sleep(3)
    status = _post(port, "/abort_request", {"abort_all": True})
    for w in workers:
        w.join(timeout=120)
    return status


def _burst(port: int, n: int = 24) -> int:
    """``n`` concurrent short generations; the status of the last."""
    statuses: list[int] = []

    def one(i: int) -> None:
        statuses.append(_post(port, "/generate", {
            "text": f"what is the capital of france {i}",
            "sampling_params": {"max_new_tokens": 16, "temperature": 0.7}}))

    workers = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    return statuses[-1] if statuses else 0


def _chat(payload: dict) -> dict:
    return {"model": "default", "messages": [{"role": "user", "content": "hello"}], **payload}


# --- the session: (what, call) -------------------------------------------------------------

Step = tuple[str, Callable[[int], int]]

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


@dataclass(frozen=True)
class Run:
    name: str
    what: str
    stop_signal: int
    session: tuple[str, ...] = ()  # step names; empty = the whole SESSION


RUNS = [
    Run("session_sigterm", "the whole session, then SIGTERM to the main process", signal.SIGTERM),
    Run("session_sigint", "a short session (a burst, a disconnect, an abort), then SIGINT (Ctrl-C)",
        signal.SIGINT, ("a good generation", "a concurrent burst of 24 requests",
                        "streaming client disconnects mid-stream (/generate)",
                        "abort one running request", "temperature -1")),
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


def play(port: int, steps: list[Step], journal: list[str]) -> None:
    for what, call in steps:
        try:
            status = call(port)
        except (OSError, http.client.HTTPException) as err:
            status = f"client error {type(err).__name__}"
        time.sleep(1)
        health = harness.http_status(f"http://127.0.0.1:{port}/health", timeout=60)
        journal.append(f"{what}: {status}, then /health {health}")
        print(f"   {journal[-1]}", flush=True)
        if health != 200:
            raise RuntimeError(f"the server did not survive {what!r} (/health {health})")


def stop_with(proc, sig: int, grace: float = 60.0) -> int | None:
    """Send ``sig`` to the main process, then let harness.stop clean the group up."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=grace)
    except Exception:  # noqa: BLE001 - harness.stop below kills what is left
        pass
    return harness.stop(proc, grace=5.0).returncode


def record(run: Run, scratch: Path, python: Path, out: Path) -> dict:
    model = scratch / "tiny"
    if not (model / "config.json").exists():
        write_model(model, kind="llama")
    launch = harness.build_launch(model, python=python)
    log_path = scratch / "logs" / f"{run.name}.log"
    proc = harness.start(launch, log_path, cwd=scratch)
    journal: list[str] = []
    try:
        harness.wait_ready(proc, launch, log_path, timeout=1200)
        steps = [s for s in SESSION if not run.session or s[0] in run.session]
        play(launch.port, steps, journal)
        returncode = stop_with(proc, run.stop_signal)
    except Exception:
        failed = Path(tempfile.gettempdir()) / f"record-healthy-failed-{run.name}.log"
        failed.write_text(sanitize(log_path.read_text(errors="replace"), scratch))
        print(f"   FAILED; its log is {failed}", file=sys.stderr, flush=True)
        raise
    finally:
        harness.stop(proc, grace=5.0)
    text = trim_batch_lines(sanitize(log_path.read_text(errors="replace"), scratch))
    (out / f"{run.name}.log").write_text(text)
    return {"name": run.name, "what": run.what, "returncode": returncode, "steps": journal}


def write_readme(out: Path, outcomes: list[dict]) -> None:
    lines = [
        "# Real healthy SGLang 0.5.23 logs (false-alarm bait)",
        "",
        "Recorded by `scripts/record_healthy_runs.py` from real launches of SGLang 0.5.23 on a",
        "CPU-only machine (tests/realsglang/harness.py: a tiny made-up Llama, `--device cpu",
        "--load-format dummy --max-total-tokens 20000`).  Each run plays a session of client",
        "mistakes and odd-but-legal requests at a ready server, checks `/health` answers 200",
        "after every step, and stops it with a signal.  Nothing in these logs ended the server",
        "by itself: `explain` must find no incident in any of them (tests/incidents/",
        "test_real_healthy_runs.py).  Logs are verbatim except the models' scratch directory",
        "(`/opt/models`) and runs of consecutive Prefill/Decode batch lines (first "
        f"{KEEP_BATCH_HEAD} and last kept).",
        "",
        "The failing counterpart (a second launch on a busy port) is not healthy and lives in",
        "fixtures/real/port_in_use_0523.log.",
        "",
    ]
    for o in outcomes:
        lines += [f"## {o['name']}.log", "", o["what"] + f"; exit code {o['returncode']}.", "",
                  "Steps (HTTP status, then /health):", ""]
        lines += [f"- {step}" for step in o["steps"]] + [""]
    (out / "README.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", nargs="*", default=None, help="run names")
    args = parser.parse_args(argv)
    python = harness.sglang_python()
    if python is None:
        print("SGLang 0.5.23 is not installed; run scripts/install-real-sglang", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "manifest.json"
    outcomes = {o["name"]: o for o in (json.loads(manifest.read_text()) if manifest.exists() else [])}
    with tempfile.TemporaryDirectory(prefix="realsg-healthy-") as tmp:
        for run in RUNS:
            if args.only and run.name not in args.only:
                continue
            print(f"== {run.name}: {run.what}", flush=True)
            outcomes[run.name] = record(run, Path(tmp), python, args.out)
    ordered = [outcomes[r.name] for r in RUNS if r.name in outcomes]
    manifest.write_text(json.dumps(ordered, indent=1) + "\n")
    write_readme(args.out, ordered)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
