"""Record real healthy-but-scary SGLang 0.5.23 runs (fixtures/healthy/real_runs/).

Why: on healthy logs people paste, the tool still raises false alarms, while every synthetic
bait measure is near 0: the bait does not look like what people paste.  A real server does.
scripts/record_healthy_runs.py (fixtures/healthy/real-0.5.23/) recorded request-level errors,
disconnects, aborts and signal stops; this script adds the scary text it left out:

- a flood over ``--max-running-requests`` / ``--max-queued-requests`` (SGLang aborts the
  overflow, "The request queue is full." to the client, and uvicorn logs each a 503), ``/health`` and ``/flush_cache`` while it is
  busy (the flush is refused: "Cache not flushed because there are pending requests");
- logprobs out of range (not ``top_logprobs_num`` over the vocabulary: on 0.5.23 that request
  crashes the scheduler, "RuntimeError: selected index k out of range" in its top-k; the log of
  that launch is the failing counterpart, fixtures/real/failed_runs/top_logprobs_num_over_vocab_0523.txt,
  and the tool must report it), chat-template input SGLang refuses (an unknown role, a content part
  a text model cannot take), a LoRA adapter that is not loaded, unloading one that never was,
  a weight update from a directory that does not exist;
- launches that print warnings and still start: a deprecated flag (``--disable-cuda-graph``),
  ``--enable-metrics``, ``--log-level debug``, ``--log-requests``, Python's hidden warnings;
- stops: SIGTERM, SIGINT to the group (a terminal's Ctrl-C), and the main process killed
  with ``kill -9`` by the shell script that started it in the background (``SHELL_STOP``),
  whose children follow their parent (SGLang's ``kill_itself_when_parent_died``) and the shell
  reports the job ``Killed``;
- (session 36) stops before ready: SIGTERM to the main process while the weights load and as
  soon as uvicorn is up (the server's own warm-up request running), with ``/health`` polled from
  the launch on (``stop_at``: no steps, the stop comes when the log shows that line); and a storm
  of streaming clients that disconnect after their first chunk, ``/abort_request`` for all and
  for an id nobody sent, prompts over the context through the OpenAI chat API.  The failing
  counterpart of a stop before ready is a start-up that fails on its own
  (fixtures/real/port_in_use_0523.log: a second server on a port already taken).

Each run launches the real server (one at a time: tests/realsglang/harness.py, a tiny made-up
Llama, ``--device cpu --load-format dummy``), waits until it is ready, plays its steps, checks
that ``/health`` answers 200 after each (a step the server does not survive makes the
recording fail: the log would not be healthy), and stops it its way.  The log is kept whole,
as SGLang wrote it; the only change is the models' scratch directory shown as ``/opt/models``
(tests/realsglang/capture.py ``sanitize``) and runs of consecutive Prefill / Decode batch
lines kept to their first three and last (record_healthy_runs ``trim_batch_lines``: a flood
prints hundreds).  ``manifest.json`` records each run's scenario, command, SGLang version,
what happened (every step's HTTP status and the exit code) and ``expected: healthy``.

Usage (about 3-8 minutes per run on a loaded 2-core machine; not run by the everyday tests)::

    .venv/bin/python scripts/record_real_bait.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from record_healthy_runs import (  # noqa: E402
    SESSION, Server, Step, _abort_running, _chat, _disconnect_mid_stream, _post, _request,
    play, probe_until_ready, read_manifest, recorder_command_line, start_in_flight, stop_with, tiny_launch, trim_batch_lines, write_manifest,
)
from tests.realsglang import harness  # noqa: E402
from tests.realsglang.capture import PLACEHOLDER, sanitize  # noqa: E402

OUT = ROOT / "fixtures" / "healthy" / "real_runs"


# --- steps this script adds (each returns the HTTP status the client saw) -----------------


def _flood(srv: Server, n: int = 16) -> int:
    """``n`` concurrent generations at a server that runs 2 and queues 3: the overflow is
    refused.  While it is busy, ``/health`` is asked and the cache flush is refused."""
    statuses: list[int] = []

    def one(i: int) -> None:
        try:
            statuses.append(_post(srv, "/generate", {
                "text": f"flood {i}", "sampling_params": {"max_new_tokens": 48, "ignore_eos": True}}))
        except OSError:
            statuses.append(0)

    workers = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    time.sleep(1.5)
    health = harness.http_status(f"http://127.0.0.1:{srv.port}/health", timeout=60)
    flush = _request(srv, "POST", "/flush_cache")
    for w in workers:
        w.join(timeout=300)
    refused = sum(1 for s in statuses if s != 200)
    print(f"   flood: {refused}/{n} refused, /health {health} and flush {flush} while busy", flush=True)
    return max(statuses) if statuses else 0


def _flush_while_busy(srv: Server) -> int:
    """One long generation running, then a cache flush: SGLang refuses it (400)."""
    worker = threading.Thread(target=_post, args=(srv, "/generate", {
        "text": "a long one", "sampling_params": {"max_new_tokens": 300, "ignore_eos": True}}), daemon=True)
    worker.start()
    time.sleep(2)
    status = _request(srv, "POST", "/flush_cache")
    worker.join(timeout=300)
    return status


def _disconnect_storm(srv: Server, n: int = 12) -> int:
    """``n`` streaming clients at once, each dropping its connection after the first chunk (a
    load balancer's retry storm, a benchmark killed with Ctrl-C): SGLang aborts each request
    whose client went away and goes on."""
    statuses: list[int] = []

    def one(i: int) -> None:
        try:
            statuses.append(_disconnect_mid_stream(srv, "/generate", {
                "text": f"storm {i}", "stream": True,
                "sampling_params": {"max_new_tokens": 200, "ignore_eos": True}}))
        except OSError:
            statuses.append(0)

    workers = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    time.sleep(3)  # the scheduler notices the aborts on its next steps
    print(f"   storm: {sum(1 for s in statuses if s == 200)}/{n} streams opened, then dropped", flush=True)
    return max(statuses) if statuses else 0


def _gen(payload: dict):
    return lambda p: _post(p, "/generate", {"text": "hello", **payload})


STEPS: list[Step] = [
    ("a good generation", _gen({"sampling_params": {"max_new_tokens": 8}})),
    ("a flood over --max-running-requests / --max-queued-requests, /health and a flush while busy", _flood),
    ("a cache flush while a generation runs", _flush_while_busy),
    ("top_logprobs 50 (OpenAI chat, the limit is 20)", lambda p: _post(p, "/v1/chat/completions", _chat({
        "max_tokens": 4, "logprobs": True, "top_logprobs": 50}))),
    ("logprobs 50 (OpenAI completions)", lambda p: _post(p, "/v1/completions", {
        "model": "default", "prompt": "hi", "max_tokens": 4, "logprobs": 50})),
    ("logprob_start_len past the input", _gen({"return_logprob": True, "logprob_start_len": 500,
                                               "sampling_params": {"max_new_tokens": 4}})),
    ("chat with an unknown role", lambda p: _post(p, "/v1/chat/completions", {
        "model": "default", "max_tokens": 4, "messages": [{"role": "wizard", "content": "hi"}]})),
    ("chat with an image part on a text model", lambda p: _post(p, "/v1/chat/completions", {
        "model": "default", "max_tokens": 4, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]})),
    ("chat with a content part of an unknown type", lambda p: _post(p, "/v1/chat/completions", {
        "model": "default", "max_tokens": 4, "messages": [{"role": "user", "content": [
            {"type": "hologram", "data": "x"}]}]})),
    ("continue_final_message after a user turn", lambda p: _post(p, "/v1/chat/completions", _chat({
        "max_tokens": 4, "continue_final_message": True}))),
    ("a LoRA adapter that is not loaded (/generate)", _gen({
        "lora_path": "adapter-not-loaded", "sampling_params": {"max_new_tokens": 4}})),
    ("a LoRA adapter that is not loaded (OpenAI model name)", lambda p: _post(
        p, "/v1/chat/completions", _chat({"model": "default:adapter-not-loaded", "max_tokens": 4}))),
    ("unload a LoRA adapter that was never loaded", lambda p: _post(
        p, "/unload_lora_adapter", {"lora_name": "adapter-not-loaded"})),
    ("update weights from a directory that does not exist", lambda p: _post(
        p, "/update_weights_from_disk", {"model_path": "/nonexistent/step-200"})),
    ("stop_token_ids out of the vocabulary", _gen({"sampling_params": {
        "max_new_tokens": 4, "stop_token_ids": [99999999]}})),
    ("abort one running request", _abort_running),
    ("streaming client disconnects mid-stream (chat)", lambda p: _disconnect_mid_stream(
        p, "/v1/chat/completions", _chat({"stream": True, "max_tokens": 300}))),
    ("a good generation after it all", _gen({"sampling_params": {"max_new_tokens": 8}})),
]

# steps of the session-36 runs (disconnect_storm_abort_sigterm)
STORM_STEPS: list[Step] = [
    ("a storm of 12 streaming clients that disconnect after the first chunk", _disconnect_storm),
    ("abort a request id nobody sent", lambda p: _post(p, "/abort_request", {"rid": "no-such-request"})),
    ("a prompt of 5000 tokens (over the context) to the OpenAI chat API", lambda p: _post(
        p, "/v1/chat/completions", _chat({"max_tokens": 4, "messages": [
            {"role": "user", "content": "hello " * 5000}]}))),
    # errors of streaming requests: the status line is sent before the error, which goes to the
    # client as a stream chunk (uvicorn logs 200 for a request SGLang refused)
    ("a streaming generation over the context", _gen({"stream": True, "text": "hello " * 3000,
                                                      "sampling_params": {"max_new_tokens": 4}})),
    ("a streaming chat completion over the context", lambda p: _post(p, "/v1/chat/completions", _chat({
        "stream": True, "max_tokens": 4, "messages": [{"role": "user", "content": "hello " * 5000}]}))),
    ("a streaming generation with an invalid regex", _gen({"stream": True, "sampling_params": {
        "max_new_tokens": 4, "regex": "(unclosed"}})),
    ("tokenize a text over the context", lambda p: _post(p, "/tokenize", {"model": "default",
                                                                         "prompt": "hello " * 5000})),
    ("list the models", lambda p: _request(p, "GET", "/v1/models")),
    ("the load", lambda p: _request(p, "GET", "/get_load")),
]

ALL_STEPS: list[Step] = STEPS + STORM_STEPS + [s for s in SESSION if s[0] not in {n for n, _ in STEPS}]


# --- runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    name: str
    what: str
    steps: tuple[str, ...]  # step names of ALL_STEPS, in that order
    stop: str  # "sigterm", "ctrl_c" (SIGINT to the group), "sigint" (to the main process only) or
    # "shell_killed" (SIGKILL to the main process)
    flags: tuple[str, ...] = ()  # launch flags besides harness.DEFAULT_FLAGS
    env: tuple[tuple[str, str], ...] = ()
    in_flight: int = 0  # long generations running when the stop comes
    # a stop before ready: the stop comes as soon as the log shows this text (no steps are played;
    # /health is polled from the launch on, as a start-up script does)
    stop_at: str = ""


QUICK = ("a good generation", "malformed JSON body to /generate", "temperature -1",
         "prompt longer than the context")

RUNS: list[Run] = [
    Run("short_bad_requests_sigterm",
        "a good generation, a malformed JSON body, a negative temperature, a prompt over the context "
        "length, then SIGTERM to the main process (the slow test re-records this one)",
        QUICK, "sigterm"),
    Run("flood_refusals_sigterm",
        "--max-running-requests 2 --max-queued-requests 3 with a deprecated flag and --enable-metrics: "
        "a flood the queue limit refuses, /health and cache flushes while busy, logprobs out of range, "
        "chat input the template refuses, a LoRA that is not loaded, a weight update from a missing "
        "directory, an abort, a disconnect; then SIGTERM with 2 generations in flight",
        tuple(name for name, _ in STEPS), "sigterm",
        flags=("--max-running-requests", "2", "--max-queued-requests", "3", "--disable-cuda-graph",
               "--enable-metrics"),
        in_flight=2),
    Run("debug_log_shell_killed",
        "--log-level debug --log-requests under a shell (bash -c), PYTHONWARNINGS=default: a few bad "
        "requests and a disconnect; then the script that started it in the background kills it "
        "(kill -9, traced with set -x), its children follow their parent and bash reports the job Killed",
        QUICK + ("invalid regex", "unknown lora name", "streaming client disconnects mid-stream (/generate)",
                 "a good chat completion"),
        "shell_killed",
        flags=("--log-level", "debug", "--log-requests", "--log-requests-level", "1"),
        env=(("PYTHONWARNINGS", "default"),)),
    Run("tp2_bad_requests_sigterm",
        "--tp 2 (two scheduler ranks whose records interleave, SGLANG_CPU_OMP_THREADS_BIND=0|1 as a CPU "
        "TP launch needs): bad requests, a disconnect and an abort, then SIGTERM to the main process",
        QUICK + ("invalid regex", "streaming client disconnects mid-stream (/generate)", "abort one running request"),
        "sigterm", flags=("--tp", "2"), env=(("SGLANG_CPU_OMP_THREADS_BIND", "0|1"),)),
    Run("ctrl_c_in_flight",
        "the chat-template, logprob and LoRA refusals, then a terminal's Ctrl-C (SIGINT to the whole "
        "process group) with 2 generations in flight",
        ("a good generation", "chat with an unknown role", "chat with an image part on a text model",
         "top_logprobs 50 (OpenAI chat, the limit is 20)", "a LoRA adapter that is not loaded (/generate)",
         "n=0 (OpenAI)", "invalid json_schema"),
        "ctrl_c", in_flight=2),
    # session 36: stops that come before ready, and a storm of clients that go away
    Run("sigterm_while_loading",
        "SIGTERM to the main process while the weights load (the operator gives up on a start-up: "
        "docker stop, a pod deleted, a supervisor's restart), /health polled from the launch on",
        (), "sigterm", stop_at="Load weight begin"),
    Run("sigterm_in_warmup",
        "SIGTERM to the main process as soon as uvicorn is up, while the server's own warm-up "
        "request runs (before the ready line), /health polled from the launch on",
        (), "sigterm", stop_at="Uvicorn running on"),
    Run("disconnect_storm_abort_sigterm",
        "a storm of streaming clients that disconnect, /abort_request for all and for an unknown id, "
        "bad JSON, prompts over the context (native and OpenAI APIs), then SIGTERM with 2 generations "
        "in flight",
        ("a good generation", "a storm of 12 streaming clients that disconnect after the first chunk",
         "abort all running requests", "abort a request id nobody sent", "malformed JSON body to /v1/chat/completions",
         "prompt longer than the context", "a prompt of 5000 tokens (over the context) to the OpenAI chat API",
         "max_new_tokens larger than the context", "a good chat completion"),
        "sigterm", in_flight=2),
    Run("streaming_errors_sigint_main",
        "errors of streaming requests (over the context, an invalid regex: uvicorn logs 200, the error "
        "goes to the client as a stream chunk), tokenize over the context, /v1/models and /get_load, "
        "then one Ctrl-C to the main process only (kill -INT PID: uvicorn's shutdown, the launcher's "
        "kill of its children)",
        ("a good generation", "a streaming generation over the context", "a streaming chat completion over the context",
         "a streaming generation with an invalid regex", "tokenize a text over the context", "list the models",
         "the load", "a good chat completion"),
        "sigint"),
]


# --- one run -----------------------------------------------------------------------------------


# A supervising script's kill -9 of the server it started in the background: the shell waits for
# the server; on SIGUSR1 (sent by the recorder) it turns tracing on and kills it with SIGKILL, as a
# benchmark script's ``kill -9 $pid`` does (fixtures/healthy/bash_killed_after_own_kill9.log),
# then reports how the job ended ("bash: line 1: PID Killed ...") and its exit status.  The text
# shows who killed the server: a ``Killed`` with no kill before it reads as the OOM killer's, and
# that is what the tool must keep saying of it.
SHELL_STOP = ' & pid=$!; trap "set -x; kill -9 \\$pid" USR1; wait $pid; wait $pid; echo "exit status $?"'


def _launch_argv(run: Run, launch: harness.Launch) -> list[str]:
    """The launch itself, or in the background of ``bash -c`` (SHELL_STOP)."""
    if run.stop != "shell_killed":
        return launch.argv
    return ["bash", "-c", shlex.join(launch.argv) + SHELL_STOP]


def stop_run(run: Run, proc: subprocess.Popen) -> int | None:
    """Stop the server the run's way; returns the exit code of what was started."""
    if run.stop == "sigterm":
        return stop_with(proc, signal.SIGTERM)
    if run.stop == "ctrl_c":
        return stop_with(proc, signal.SIGINT, to_group=True)
    if run.stop == "sigint":
        return stop_with(proc, signal.SIGINT)
    os.kill(proc.pid, signal.SIGUSR1)  # the shell kills its background server (SHELL_STOP)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(5)  # the scheduler and detokenizer notice their parent died
    return harness.stop(proc, grace=5.0).returncode


def steps_of(run: Run) -> list[Step]:
    by_name = dict(ALL_STEPS)
    return [(name, by_name[name]) for name in run.steps]


def display_command(run: Run, launch: harness.Launch, scratch: Path) -> str:
    env = ["PYTHONPATH=tests/realsglang/stubs"] + [f"{k}={v}" for k, v in run.env]
    argv = ["python"] + launch.argv[1:]
    line = " ".join(env + [shlex.join(argv)])
    if run.stop == "shell_killed":
        line = "bash -c " + shlex.quote(line + SHELL_STOP)
    return sanitize(line, scratch)


def wait_for_text(proc: subprocess.Popen, log_path: Path, text: str, timeout: float) -> float:
    """Seconds until the log shows ``text``; raises when the process ends or the time runs out."""
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        if proc.poll() is not None:
            raise harness.ServerExited(proc.returncode, harness.log_tail(log_path))
        if log_path.exists() and text in log_path.read_text(errors="replace"):
            return time.monotonic() - started
        time.sleep(0.2)
    raise TimeoutError(f"{text!r} not in the log after {timeout} s")


def record(run: Run, scratch: Path, python: Path, out: Path) -> dict:
    """Launch, play, stop; write ``out/<name>.log``; return the run's manifest entry."""
    launch = tiny_launch(run, scratch, python)
    launch = harness.Launch(argv=_launch_argv(run, launch), env=launch.env, host=launch.host, port=launch.port)
    log_path = scratch / "logs" / f"{run.name}.log"
    started = time.monotonic()
    proc = harness.start(launch, log_path, cwd=scratch)
    journal: list[str] = []
    probing = threading.Event()
    try:
        if run.stop_at:
            prober = probe_until_ready(launch.port, probing, journal)
            ready = wait_for_text(proc, log_path, run.stop_at, timeout=1200)
            journal.append(f"stopped as soon as the log showed {run.stop_at!r}, before ready")
            returncode = stop_run(run, proc)
            probing.set()
            prober.join(timeout=10)
        else:
            ready = harness.wait_ready(proc, launch, log_path, timeout=1200)
            play(Server(launch.port), steps_of(run), journal)
            if run.in_flight:
                start_in_flight(Server(launch.port), run.in_flight)
                journal.append(f"{run.in_flight} long generations in flight when the stop comes")
            returncode = stop_run(run, proc)
    except Exception:
        probing.set()
        failed = Path(tempfile.gettempdir()) / f"record-real-bait-failed-{run.name}.log"
        failed.write_text(sanitize(log_path.read_text(errors="replace"), scratch))
        print(f"   FAILED; its log is {failed}", file=sys.stderr, flush=True)
        raise
    finally:
        harness.stop(proc, grace=5.0)
    text = trim_batch_lines(sanitize(log_path.read_text(errors="replace"), scratch))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{run.name}.log").write_text(text)
    return {
        "name": run.name,
        "scenario": run.what,
        "command": display_command(run, launch, scratch),
        "sglang_version": harness.SGLANG_VERSION,
        "stop": run.stop,
        "happened": {("seconds_to_stop" if run.stop_at else "seconds_to_ready"): round(ready, 1), "steps": journal, "returncode": returncode,
                     "seconds": round(time.monotonic() - started, 1)},
        "expected": "healthy",
    }


def write_readme(out: Path, entries: list[dict]) -> None:
    lines = [
        "# Real healthy-but-scary SGLang 0.5.23 runs",
        "",
        "Recorded by `scripts/record_real_bait.py` (its docstring says why and how): real launches",
        "of SGLang 0.5.23 on a CPU-only machine, a tiny made-up Llama, `--device cpu --load-format",
        "dummy`.  Every step was followed by `/health` answering 200, and every run was stopped",
        "from outside: each log is **healthy** (`expected` in `manifest.json`), and `explain` must",
        "raise no incident on it whole, cut right after any scary record, on that record alone (unless",
        "the record itself reports a process's end, as a stop's teardown does: `bare:dies`), or",
        "transformed (bench/healthy_bait.py mode (j) `runs`, tests/incidents/test_real_bait_runs.py).",
        "The failing counterpart (a request 0.5.23 does not survive) is fixtures/real/failed_runs/.",
        f"Verbatim except the models' scratch directory (`{PLACEHOLDER}`) and runs of batch lines",
        "(first 3 and last kept).",
        "",
    ]
    for e in entries:
        lines += [f"## {e['name']}.log", "", e["scenario"] + ".", "", "```", e["command"], "```", ""]
        lines += [f"- {step}" for step in e["happened"]["steps"]]
        lines += [f"- exit code {e['happened']['returncode']}", ""]
    (out / "README.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    args, python = recorder_command_line(__doc__.splitlines()[0], OUT, argv)
    if python is None:
        return 2
    entries = read_manifest(args.out)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="realsg-bait-") as tmp:
        for run in RUNS:
            if args.only and run.name not in args.only:
                continue
            print(f"== {run.name}: {run.what}", flush=True)
            try:
                entries[run.name] = record(run, Path(tmp), python, args.out)
            except Exception as err:  # noqa: BLE001 - record the others, fail at the end
                failures += 1
                print(f"   FAILED: {err}", file=sys.stderr, flush=True)
    write_manifest(args.out, [entries[r.name] for r in RUNS if r.name in entries], write_readme)
    return 1 if failures else 0

if __name__ == "__main__":
    raise SystemExit(main())
