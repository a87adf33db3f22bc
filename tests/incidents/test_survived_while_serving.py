"""An incident while serving that shows no death, after which the same launch's scheduler logs
survived.SERVING_PROOF batch lines, is a warning the server survived (incidents/survived.py);
a death first, a log that ends first, or a failure that ends the launch in practice (the NCCL
watchdog) stays an incident.  A KV transfer's failure in PD disaggregation has its own policy and
tests (tests/incidents/test_pd_transfer_one_request.py).

The logs are 0.5.23-shaped tp=2 launches (tests/incidents/test_survived_before_ready.py's
start-up) that serve after the ready line, with lines as SGLang 0.5.23 prints them while
serving, each a ``logger.warning`` / ``print`` of a failure it handled and went on from:

- srt/models/llava.py:448 ``print(f"RuntimeError in image encoding: {e}")`` (then a zero embedding);
- srt/disaggregation/decode_hicache_mixin.py:158 ``logger.warning(f"HiCache L3 prefetch failed for
  rid={req.rid}: {e}; falling back to L2-only LoadingBack")``;
- srt/speculative/dflash_worker_v2.py:2530 ``logger.warning(f"DFLASH Triton prepare_block failed;
  falling back to eager path: {e}")``;
- srt/function_call/qwen25_detector.py:69 ``logger.warning(f"Failed to parse JSON part: {match_result},
  JSON parse error: {str(e)}")``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.incidents.test_survived_before_ready import (CAPTURED, DUMP, HEALTHY_WITH_CAUGHT_OOM, READY, SCHEDULER_UP, START,
                                                        UVICORN, WARMUP, _events, _incidents)

ROOT = Path(__file__).resolve().parents[2]

OOM = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "
       "11.00 MiB is free.")
UP = DUMP + START + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY  # a clean start-up


def _prefill(stamp: str) -> str:
    return (f"[2026-01-01 00:{stamp} TP0] Prefill batch, #new-seq: 3, #new-token: 1532, #cached-token: 0, token usage: "
            "0.01, #running-req: 1, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): "
            "4131.00\n")


def _decode(stamp: str) -> str:
    return (f"[2026-01-01 00:{stamp} TP0] Decode batch, #running-req: 4, #token: 1741, token usage: 0.01, cuda graph: "
            "True, gen throughput (token/s): 342.88, #queue-req: 0\n")


def _ok(stamp: str) -> str:
    return f'[2026-01-01 00:{stamp}] INFO:     127.0.0.1:51734 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


SERVING = _prefill("02:00") + _ok("02:01")
GOES_ON = _decode("02:03") + _ok("02:04") + _prefill("02:05") + _decode("02:06")

HANDLED = {
    "llava": f"RuntimeError in image encoding: {OOM}\n",  # print(): no SGLang prefix
    "hicache": f"[2026-01-01 00:02:02 TP0] HiCache L3 prefetch failed for rid=5f1c2b: CUDA error: an illegal memory "
               "access was encountered; falling back to L2-only LoadingBack\n",
    "dflash": f"[2026-01-01 00:02:02 TP1] DFLASH Triton prepare_block failed; falling back to eager path: {OOM}\n",
    "qwen25": "[2026-01-01 00:02:02] Failed to parse JSON part: {\"name\": \"f\", JSON parse error: NCCL error: unhandled "
              "system error\n",
}


def _warnings(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "survived_while_serving"]


@pytest.mark.parametrize("site", sorted(HANDLED))
def test_a_handled_failure_while_serving_is_survived(pack, site: str):
    events = _events(pack, UP + SERVING + HANDLED[site] + GOES_ON)
    assert _incidents(events) == []
    assert len(_warnings(events)) == 1 and events[-1]["survived"] == 1


@pytest.mark.parametrize("prefix", ["sglang-1  | ", "2026-01-01T00:02:02.123456789Z "])
def test_a_container_prefix_changes_nothing(pack, prefix: str):
    """docker compose and kubectl --timestamps put their own text before every line."""
    text = "".join(prefix + line for line in (UP + SERVING + HANDLED["dflash"] + GOES_ON).splitlines(keepends=True))
    events = _events(pack, text)
    assert _incidents(events) == [] and len(_warnings(events)) == 1


def test_a_log_that_ends_after_the_line_keeps_the_incident(pack):
    """Unknown stays unknown: nothing shows the scheduler went on."""
    events = _events(pack, UP + SERVING + HANDLED["dflash"] + _decode("02:03"))
    assert len(_incidents(events)) == 1 and _warnings(events) == []


def test_the_next_launchs_batches_prove_nothing_of_the_last(pack):
    """The line, then a new launch (its dump) that serves: the first launch ended unproven."""
    events = _events(pack, UP + SERVING + HANDLED["dflash"] + UP + SERVING + GOES_ON)
    assert len(_incidents(events)) == 1 and _warnings(events) == []


# managers/scheduler.py run_scheduler_process's handler, then the parent's SIGQUIT handler
CRASH = ("[2026-01-01 00:02:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3118, in '
         "run_scheduler_process\n"
         "    scheduler.event_loop_overlap()\n"
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1201, in '
         "event_loop_overlap\n"
         "    batch_result = self.run_batch(batch)\n"
         f"torch.OutOfMemoryError: {OOM}\n"
         "\n"
         "[2026-01-01 00:02:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n")


def test_a_crash_before_the_batches_keeps_the_handled_line_an_incident(pack):
    """The launch died after one batch line: the line before the death is not proven survived."""
    events = _events(pack, UP + SERVING + HANDLED["dflash"] + _decode("02:03") + CRASH)
    assert _warnings(events) == [] and events[-1].get("survived") is None
    assert [i["category"] for i in _incidents(events)][-1] == "memory.cuda_oom"


def test_a_crash_while_serving_stays_an_incident_whatever_follows(pack):
    events = _events(pack, UP + SERVING + CRASH + GOES_ON)
    incidents = _incidents(events)
    assert len(incidents) == 1 and incidents[0]["category"] == "memory.cuda_oom" and _warnings(events) == []


def test_the_nccl_watchdog_stays_an_incident(pack):
    """torch ProcessGroupNCCL's watchdog aborts the process even if TP0 logs a batch or two."""
    nccl = ("[rank1]:[E101 00:02:02.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=41234, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran "
            "for 600054 milliseconds before timing out.\n")
    events = _events(pack, UP + SERVING + nccl + GOES_ON)
    assert len(_incidents(events)) == 1 and _warnings(events) == []


def test_the_scheduler_watchdog_stays_an_incident(pack):
    watchdog = "[2026-01-01 00:02:02 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n"
    events = _events(pack, UP + SERVING + watchdog + GOES_ON)
    assert len(_incidents(events)) == 1 and _warnings(events) == []


@pytest.mark.parametrize("fmt", ["json", "text"])
@pytest.mark.parametrize("kind", ["survived_before_ready", "survived_while_serving"])
def test_explain_exits_0_and_says_the_server_survived(tmp_path: Path, kind: str, fmt: str):
    """A failure the server survived, before its ready line (a caught OOM while it started) or
    while it served (a request's handled error): explain exits 0 and says so."""
    text, says = {"survived_before_ready": (HEALTHY_WITH_CAUGHT_OOM, "a warning the server survived, not the launch's cause"),
                  "survived_while_serving": (UP + SERVING + HANDLED["llava"] + GOES_ON, "went on serving after it")}[kind]
    log = tmp_path / "server.log"
    log.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", fmt, str(log)],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120, env={"NO_COLOR": "1", "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        warnings = [e for e in events if e["event"] == "warning" and e.get("kind") == kind]
        assert _incidents(events) == [] and len(warnings) == 1
    else:
        assert says in proc.stdout and "1 warning the server survived" in proc.stdout


def test_a_live_stream_confirms_what_it_holds_past_the_hold_limit(pack, monkeypatch):
    """A live stream (pipe, watch, run) that holds a provisional incident while more than
    HOLD_LIMIT events pile up stops holding it: it stands, and says so with a ``confirmed``
    event (old code: dropped silently, so the exporter's provisional gauge and ``watch
    --exit-on-incident`` waited for ever).  The limit is lowered to 0 for the test: the
    incident's own event is then over it."""
    from sglang_doctor import pipeline
    from sglang_doctor.pipeline import StreamPipeline

    monkeypatch.setattr(pipeline, "HOLD_LIMIT", 0)
    pipe = StreamPipeline(pack)  # live: not whole_log
    events = pipe.feed((UP + SERVING + HANDLED["dflash"]).encode()) + pipe.flush_idle()
    [incident] = _incidents(events)
    [confirmed] = [e for e in events if e["event"] == "confirmed"]
    assert incident["provisional"] == "serving"
    assert confirmed["confirms"] == {"rule": incident["rule"], "lines": incident["lines"]}
    assert confirmed["unresolved"] is True and "held no longer" in confirmed["message"]
    assert pipe.undecided() == []
