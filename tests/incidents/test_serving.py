"""The scheduler's batch lines as the serving state before a failure (incidents/serving.py).

On real files: fragments people pasted (corpus/), fixtures in SGLang's real format, and a
real SGLang 0.5.23 server on CPU whose scheduler is killed while it serves.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, doctor_cmd
from sglang_doctor.incidents import serving
from sglang_doctor.pipeline import StreamPipeline, diagnose_file
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.read import records

CORPUS = [ROOT / "corpus" / part for part in ("dev", "fresh", "late")]


@pytest.fixture(scope="module")
def ruleset():
    return RuleSet.load(builtin=True, user=False)


def _batch_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line of a file whose message starts as a batch line's."""
    out = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        text = raw.decode("utf-8", "replace")
        end = records.outer_prefix_end(text)
        message = records.parse_prefix(text[end:]).message
        if message.startswith("[gpu_id="):
            message = message[message.find("] ") + 2:]
        if re.match(r"(?:Prefill|Decode) batch(?: \[\d+\])?[.,] ", message):  # (not a paste cut right there)
            out.append((n, text))
    return out


def test_every_batch_line_of_the_tuned_corpus_parses():
    """Every release's wording in pasted logs: a kind and, unless the paste cut the line,
    the request counts and a pool usage (token usage, or a hybrid model's full/SWA/mamba)."""
    seen = 0
    for path in sorted(p for part in CORPUS for p in part.glob("*.log")):
        for number, text in _batch_lines(path):
            fields = serving.parse(serving.batch_message(text) or "")
            assert fields is not None, (path.name, number, text)
            seen += 1
            cut = not text.rstrip().endswith(("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "True", "False", ",", "%"))
            if fields["kind"] == "decode" and not cut and "#token" in text:
                assert isinstance(fields.get("running_req"), int), (path.name, number, fields)
                assert serving.usage(fields) is not None or "usage" not in text, (path.name, number, fields)
            if fields["kind"] == "prefill" and "#queue-req: " in text:
                assert isinstance(fields.get("queue_req"), int), (path.name, number, fields)
    assert seen >= 90


def test_forms_across_releases():
    """The wordings SGLang's source prints (0.2.x gpu_id, 0.4.x '.', 0.5.9 cuda graph,
    0.5.23 cpu graph and #pending-token, hybrid pools, spec accept len, forward-iter index)."""
    forms = {
        "[gpu_id=0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, cache hit rate: 0.00%, #running-req: 0, #queue-req: 0":
            {"kind": "prefill", "new_seq": 1, "cache_hit_rate": 0.0, "queue_req": 0},
        "[2025-02-26 13:18:19 DP3 TP3] Decode batch. #running-req: 12, #token: 9000, token usage: 0.97, gen throughput (token/s): 9.42, #queue-req: 40":
            {"kind": "decode", "running_req": 12, "token_usage": 0.97, "gen_throughput": 9.42, "queue_req": 40},
        "[2026-12-02 15:14:56] Decode batch, #running-req: 4, #token: 141, token usage: 0.00, cpu graph: False, gen throughput (token/s): 3.54, #queue-req: 0":
            {"kind": "decode", "cpu_graph": False, "running_req": 4},
        "[2026-01-01 00:00:00 TP0] Decode batch, #running-req: 4, #full token: 141, full token usage: 0.50, mamba num: 4, mamba usage: 0.91, accept len: 2.50, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 42.88, #queue-req: 2":
            {"kind": "decode", "full_token_usage": 0.5, "mamba_usage": 0.91, "accept_len": 2.5, "cuda_graph": True},
        "[2026-01-01 00:00:00 TP0] Prefill batch [17], #new-seq: 2, #new-token: 64, #cached-token: 0, full token usage: 0.10, swa token usage: 0.20, #running-req: 3, #queue-req: 1, #pending-token: 0, cuda graph: False, input throughput (token/s): 4.44":
            {"kind": "prefill", "swa_token_usage": 0.2, "pending_token": 0, "input_throughput": 4.44},
    }
    for text, want in forms.items():
        got = serving.parse(serving.batch_message(text))
        assert {k: got.get(k) for k in want} == want, (text, got)
    assert serving.usage(serving.parse(serving.batch_message(list(forms)[3]))) == 0.91
    # not batch lines: a request whose text holds the words, a tqdm bar, the warm-up's request line
    for text in ("[2026-12-02 15:56:12 TP0] Receive: obj=GenerateReqInput(text='a Decode batch, #running-req: 1')",
                 "Capturing batches (bs=8 avail_mem=20.1 GB):  50%",
                 "[2025-01-01 00:00:00] INFO:     127.0.0.1:1 - \"POST /generate HTTP/1.1\" 200 OK"):
        assert serving.batch_message(text) is None, text


def test_batch_line_makes_a_pasted_crash_known_after_ready(ruleset):
    """corpus/fresh/003: a prefill batch (prefix-cached: not the warm-up) and a scheduler
    traceback cut before its exception, no ready line.  The batch line says the server was
    serving: the after_ready rule is not an assumption, and the state is in the JSON."""
    path = ROOT / "corpus" / "fresh" / "003-runtime.crash-gptoss-spec-tool-choice-cut.log"
    (d,) = diagnose_file(path, ruleset, remediate=False)
    assert d.category == "runtime.crash" and d.phase == "serving"
    assert d.assumed == []
    assert d.incident.after_ready and d.incident.after_ready_known
    record = d.incident.serving
    assert record["last_batch_line"] == _batch_lines(path)[-1][0]
    assert record["serving"] is True and record["last_batch"]["cached_token"] == 128
    assert record["seconds_before"] == 1
    assert d.to_json()["serving"]["summary"].startswith("last prefill batch 1 s before the failure")


def test_full_pool_before_a_cut_traceback_guesses_the_pool(ruleset):
    """corpus/late/049: mamba usage 0.29 -> 0.43 -> 0.89, then only a traceback's header.
    The pool being full is the evidence; the advice is the serving-time one (admit less at
    once), not the start-up one, and it is advice."""
    path = ROOT / "corpus" / "late" / "049-memory.kv_pool-sm120-mamba-usage-prefill-then-exception-head.log"
    (d,) = diagnose_file(path, ruleset)
    assert d.incident.serving["peak_usage"] == 0.89 and d.incident.serving["usage_field"] == "mamba usage"
    guess = d.fallback["best_guess"]
    assert guess["category"] == "memory.kv_pool", guess
    assert any(e["name"] == "serving:pool_full" for e in guess["evidence"])
    assert d.phase == "serving"
    rem = d.remediation
    assert "--max-running-requests" in rem.set and rem.needs_human and not rem.safe
    assert "filled up under the load" in rem.note


def test_hang_before_a_watchdog(ruleset):
    """fixtures/runtime/scheduler_watchdog_059.log: decode batches with 10 requests running,
    then nothing for 312 s, then the watchdog."""
    (d,) = diagnose_file(FIXTURES / "runtime" / "scheduler_watchdog_059.log", ruleset, remediate=False)
    record = d.incident.serving
    assert record["seconds_before"] == 312 and record["last_batch"]["running_req"] == 10
    assert serving.stalled(record)
    assert "scheduler had stopped while requests were running" in record["summary"]


def test_stall_before_an_nccl_collective_timeout(ruleset):
    """fixtures/nccl/collective_timeout_0523.log: the incident starts with torch's own lines
    (no SGLang date); its time is its first line that has one: decode batches had stopped
    about 600 s (NCCL's timeout) before, with 10 requests running."""
    (d,) = diagnose_file(FIXTURES / "nccl" / "collective_timeout_0523.log", ruleset, remediate=False)
    assert d.category == "nccl"
    record = d.incident.serving
    assert 600 <= record["seconds_before"] < 660 and record["last_batch"]["running_req"] == 10
    assert serving.stalled(record)


def test_warm_up_batch_alone_is_not_serving():
    """The server's own warm-up request logs one prefill batch before the ready line: a
    failure right after it is not a crash while serving (the launch is still starting)."""
    head = (FIXTURES / "runtime" / "scheduler_watchdog_059.log").read_text().splitlines()
    warm = [i for i, t in enumerate(head) if "Prefill batch" in t][0]
    text = "\n".join(head[:warm + 1]) + "\n" + "\n".join([
        "[2026-05-12 16:01:41 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2810, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        "RuntimeError: boom"]) + "\n"
    pipe = StreamPipeline(RuleSet.load(builtin=True, user=False), remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    (inc,) = [e["_diagnosis"].incident for e in events if e["event"] == "incident"]
    assert inc.serving["serving"] is False
    assert not inc.after_ready and inc.after_ready_known


def test_fast_scanner_hands_over_the_last_batch_lines(tmp_path):
    """A long serving log read by the block scanner (batch lines skipped, never triggers):
    the incident still gets the last batch lines, the same as reading every line."""
    head = (FIXTURES / "runtime" / "scheduler_watchdog_059.log").read_text().splitlines(keepends=True)
    cut = [i for i, t in enumerate(head) if "Decode batch" in t][0]
    body = []
    for i in range(20000):
        body.append(f"[2026-05-12 16:0{2 + i // 10000}:00 TP0] Decode batch, #running-req: {i % 50}, #token: {i}, "
                    f"token usage: 0.{i % 100:02d}, cuda graph: True, gen throughput (token/s): 410.50, #queue-req: {i % 7}\n")
        if i % 97 == 0:
            body.append(f'[2026-05-12 16:02:00] INFO:     127.0.0.1:{i} - "POST /generate HTTP/1.1" 200 OK\n')
    log = tmp_path / "serving.log"
    log.write_text("".join(head[:cut]) + "".join(body) + "".join(head[cut + 3:]))
    got = {}
    for fast in (True, False):
        pipe = StreamPipeline(RuleSet.load(builtin=True, user=False), remediate=False, fast=fast)
        events = []
        with open(log, "rb") as fh:
            while block := fh.read(1 << 16):
                events += pipe.feed(block)
        events += pipe.finish()
        (inc,) = [e["_diagnosis"].incident for e in events if e["event"] == "incident"]
        got[fast] = inc.serving
    assert got[True] == got[False]
    assert got[True]["last_batch"]["running_req"] == 19999 % 50 and got[True]["batch_lines"] == serving.KEEP


# -- a real SGLang server ------------------------------------------------------------------


def _scheduler_pids(pgid: int) -> list[int]:
    """The processes of the server's group whose title names the scheduler (setproctitle)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == pgid and "scheduler" in cmdline:
            out.append(int(entry.name))
    return out


@pytest.mark.slow
def test_real_server_killed_while_serving_shows_its_last_batch(tmp_path):
    """A real SGLang 0.5.23 on CPU serves a request (prefill and decode batch lines, decode
    logged every 2 steps), then its scheduler is killed: the incident carries the last batch
    line the server logged before the failure, with its figures."""
    from realsglang import harness
    from realsglang.make_tiny_model import write_model

    python = harness.sglang_python()
    if python is None:
        if os.environ.get("SGLANG_DOCTOR_REQUIRE_SGLANG") == "1":
            pytest.fail("SGLang is not installed: run scripts/install-real-sglang")
        pytest.skip("SGLang is not installed (scripts/install-real-sglang)")
    model = write_model(tmp_path / "tiny")
    launch = harness.build_launch(model, python=python,
                                  extra_args=("--max-total-tokens", "20000", "--decode-log-interval", "2"))
    log = tmp_path / "server.log"
    proc = harness.start(launch, log, cwd=tmp_path)
    try:
        harness.wait_ready(proc, launch, log, timeout=900)
        status, body = harness.post_json(launch.base_url + "/generate",
                                         {"text": "hello world", "sampling_params": {"max_new_tokens": 12}})
        assert status == 200, body
        assert harness.wait_for_line(proc, log, "Decode batch", timeout=60), harness.log_tail(log)
        pids = _scheduler_pids(proc.pid)
        assert pids, "no scheduler process found"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and "crashed" not in log.read_text(errors="replace"):
            time.sleep(0.5)
    finally:
        harness.stop(proc)
    run = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    incidents = [e for e in events if e["event"] == "incident"]
    assert incidents, harness.log_tail(log, 60)
    first = incidents[0]
    before = [(n, t) for n, t in _batch_lines(log) if n < first["lines"][0]]
    assert before, harness.log_tail(log, 60)
    record = first["serving"]
    assert record["last_batch_line"] == before[-1][0]
    assert record["last_batch"] == serving.parse(serving.batch_message(before[-1][1]))
    assert record["serving"] is True and first["phase"] == "serving"


def test_retractions_before_a_cut_traceback(ruleset):
    """SGLang's own retraction lines (0.4.x wording, from corpus/dev/060, a healthy log on its
    own) after decode batches, then a scheduler traceback cut after its first line: the state
    records the retraction and the pool is the best guess; PD decode's ``#retracted-req`` too."""
    retract = (ROOT / "corpus" / "dev" / "060-none-decode-out-of-memory-retract-dsr1.log").read_text().splitlines()[0]
    head = (FIXTURES / "runtime" / "scheduler_watchdog_059.log").read_text().splitlines()
    decode = [t for t in head if "Decode batch" in t]
    for extra, key in ((retract, "retraction_line"),
                       (decode[-1].replace("#queue-req: 0", "#retracted-req: 2, #queue-req: 0"), "retracted_req")):
        lines = decode + [extra, "[2026-05-12 16:05:02 TP0] Scheduler hit an exception: Traceback (most recent call last):"]
        pipe = StreamPipeline(ruleset)
        events = pipe.feed(("\n".join(lines) + "\n").encode()) + pipe.finish()
        (d,) = [e["_diagnosis"] for e in events if e["event"] == "incident"]
        assert key in d.incident.serving, d.incident.serving
        assert d.fallback["best_guess"]["category"] == "memory.kv_pool", d.fallback["best_guess"]
        assert "retracted" in d.incident.serving["summary"]
