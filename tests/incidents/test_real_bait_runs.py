"""Real healthy-but-scary SGLang 0.5.23 runs (fixtures/healthy/real_runs/, scripts/record_real_bait.py):
no incident in any of them whole (``explain`` as a user runs it), cut right after any scary record
(a paste that ends there), or that record alone unless it reports a process's end by itself
(bench/healthy_bait.py measure (j) ``runs``, ``bare:dies``).

The runs hold what a healthy server refuses and goes on after: a flood the queue limit refuses,
cache flushes refused while requests run, logprobs out of range, chat input the template
refuses, LoRA adapters that are not loaded, a weight update from a missing directory; launches
that warn and start (a deprecated flag, ``--log-level debug``, Python's hidden warnings); and the
stops: SIGTERM, a terminal's Ctrl-C, the main process SIGKILLed under a shell that says Killed."""

import json
import sys
from pathlib import Path

import pytest

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402

RUNS_DIR = ROOT / "fixtures" / "healthy" / "real_runs"
RUNS = sorted(RUNS_DIR.glob("*.log"))
MANIFEST = json.loads((RUNS_DIR / "manifest.json").read_text())


@pytest.fixture(scope="module")
def engine():
    return healthy_bait.Engine()


def test_the_manifest_names_every_run_as_recorded_healthy():
    assert {e["name"] for e in MANIFEST} == {p.stem for p in RUNS}
    for entry in MANIFEST:
        assert entry["expected"] == "healthy", entry["name"]
        assert entry["sglang_version"] == "0.5.23", entry["name"]
        assert "sglang.launch_server" in entry["command"], entry["name"]
        assert all(step.endswith("/health 200") for step in entry["happened"]["steps"]
                   if "then /health" in step), entry["name"]
    assert sum(p.stat().st_size for p in RUNS) < 3_000_000


def _text(name: str) -> str:
    return (RUNS_DIR / f"{name}.log").read_text(errors="replace")


def test_the_runs_hold_the_scary_lines_they_were_recorded_for():
    names = {p.stem for p in RUNS}
    assert "flood_refusals_sigterm" in names, names
    flood = _text("flood_refusals_sigterm")
    assert flood.count('"POST /generate HTTP/1.1" 503 Service Unavailable') >= 5  # the queue limit refused them
    assert "Cache not flushed because there are pending requests" in flood
    assert "is deprecated" in flood
    assert "SIGTERM received" in flood
    if "debug_log_shell_killed" in names:
        killed = _text("debug_log_shell_killed")
        assert "kill -9 " in killed and " Killed " in killed and "exit status 137" in killed
        assert "Using regular tokenizer for 1 inputs" in killed  # a logger.debug record (tokenizer_manager.py)
        assert "Receive: obj=GenerateReqInput(" in killed  # --log-requests


def test_the_stops_before_ready_end_before_the_ready_line():
    """Session 36: SIGTERM while the weights load and as soon as uvicorn is up (the warm-up's
    request running): the operator's stop of a start-up, no ready line, nothing failed."""
    names = {p.stem for p in RUNS}
    for name, shows in (("sigterm_while_loading", "Load weight begin"), ("sigterm_in_warmup", "Uvicorn running on")):
        if name not in names:
            continue
        text = _text(name)
        assert shows in text and "The server is fired up and ready to roll!" not in text, name
    if "sigterm_in_warmup" in names:
        assert "INFO:     Shutting down" in _text("sigterm_in_warmup")  # uvicorn's own stop


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
def test_every_run_is_quiet_whole(path):
    assert explain_incidents(path) == [], path.name


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.stem)
def test_every_run_is_quiet_cut_at_each_scary_record_and_on_that_record_alone(path, engine):
    alarms = [(group, name, rules) for group, name, text in healthy_bait.run_texts([path])
              if group in ("end", "bare") for rules in [engine.incidents(text)] if rules]
    assert alarms == []


def test_scary_records_are_found_once_each_with_their_traceback():
    lines = [
        "[2026-01-01 00:00:01] Prefill batch, #new-seq: 1",
        "[2026-01-01 00:00:02] Error in request: bad temperature 1",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in f',
        "ValueError: bad temperature 1",
        '[2026-01-01 00:00:03] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 400 Bad Request',
        "[2026-01-01 00:00:04] Error in request: bad temperature 2",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in f',
        "ValueError: bad temperature 2",
        "[2026-01-01 00:00:05] Decode batch, #running-req: 1",
    ]
    assert healthy_bait.scary_records(lines) == [(1, 1, 5), (5, 5, 6)]


def test_the_failing_counterpart_stays_a_failure(tmp_path):
    """A request SGLang 0.5.23 does not survive (``top_logprobs_num`` over the vocabulary: the
    scheduler's top-k raises, "Scheduler hit an exception", the launch is torn down), recorded by
    the same script: a request's refusal is waived, a crash it causes is not."""
    source = ROOT / "fixtures" / "real" / "failed_runs" / "top_logprobs_num_over_vocab_0523.txt"
    log = tmp_path / "crash.log"
    log.write_bytes(source.read_bytes())
    incidents = explain_incidents(log)
    assert [i["category"] for i in incidents] == ["runtime.crash"], incidents
