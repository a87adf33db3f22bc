"""An exception line logged behind SGLang's own prefix, with no traceback above it
("[2025-01-01 10:00:00 TP0] ValueError: ..."), forms an incident: through a real file and a
real pipe, behind docker compose / kubectl / ray prefixes, and in a file big enough for the
block scanner's fast path (which used to skip such a line as a weak hit on a record start).
A warning type, or an exception's words later in a message, forms none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAD = "[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=2, mem_fraction_static=0.88)\n"
BUSY = "[2026-05-09 10:05:00 TP0] Decode batch, #running-req: 3, #token: 8192, token usage: 0.12, gen throughput (token/s): 180.22, #queue-req: 0\n"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["NO_COLOR"] = "1"
    return env


def _incidents(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "incident":
                out.append(event)
    return out


def explain_file(path: Path) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(path)],
                          capture_output=True, text=True, env=_env(), cwd=str(ROOT), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return _incidents(proc.stdout)


def explain_pipe(text: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "-", "--format", "json"], input=text,
                          capture_output=True, text=True, env=_env(), cwd=str(ROOT), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return _incidents(proc.stdout)


FAILING = [
    ("[2026-05-09 10:06:00 TP0] ValueError: The number of attention heads (12) is not divisible by tp_size (24).",
     "ValueError"),
    ("[2026-05-09 10:06:00 TP1] RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
     "RuntimeError"),
    ("sglang-1  | [2026-05-09 10:06:00 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
     "torch.OutOfMemoryError"),
    ("2026-05-09T10:06:00.123456789Z [2026-05-09 10:06:00 TP0] ValueError: Unsupported dtype for this GPU: bfloat16",
     "ValueError"),
    ("(SchedulerActor pid=4242) [2026-05-09 10:06:00 TP3] AssertionError: Not enough space for mamba ping pong idx",
     "AssertionError"),
    ("[2026-05-09 10:06:00 DP1 TP2] triton.runtime.errors.OutOfResources: out of resource: shared memory, "
     "Required: 147456, Hardware limit: 101376.", "triton.runtime.errors.OutOfResources"),
]


@pytest.mark.parametrize("line, etype", FAILING)
def test_a_prefixed_exception_line_is_an_incident_in_a_file(tmp_path, line, etype):
    path = tmp_path / "server.log"
    path.write_text(HEAD + line + "\n")
    incidents = explain_file(path)
    assert len(incidents) == 1
    assert (incidents[0].get("exception") or {}).get("type") == etype


@pytest.mark.parametrize("line, etype", FAILING[:3])
def test_a_prefixed_exception_line_is_an_incident_through_a_pipe(line, etype):
    incidents = explain_pipe(HEAD + BUSY * 3 + line + "\n")
    assert len(incidents) == 1
    assert (incidents[0].get("exception") or {}).get("type") == etype


def test_the_fast_block_path_keeps_a_prefixed_exception_line_in_a_big_file(tmp_path):
    """Megabytes of serving lines around it: the big-block search (and its weak-hit filter)
    must keep the record-start line whose message is the exception."""
    path = tmp_path / "big.log"
    with open(path, "w") as fh:
        fh.write(HEAD)
        fh.write(BUSY * 30000)
        fh.write("[2026-05-09 11:00:00 TP1] ValueError: Loaded weights leave no GPU memory for the KV cache "
                 "under --mem-fraction-static=0.88.\n")
        fh.write(BUSY * 30000)
    assert path.stat().st_size > 4 << 20
    incidents = explain_file(path)
    assert [(i.get("exception") or {}).get("type") for i in incidents] == ["ValueError"]


@pytest.mark.parametrize("line", [
    "[2026-05-09 10:06:00 TP0] UserWarning: TypedStorage is deprecated. It will be removed in the future.",
    "[2026-05-09 10:06:00 TP0] FutureWarning: `resume_download` is deprecated: use `force_download=True`.",
    "[2026-05-09 10:06:00 TP0] Tool call parse failed, fall back to text. ValueError: Expecting value: line 1",
    "[2026-05-09 10:06:00 TP0] Ignore import error when loading sglang.srt.models.foo: No module named 'bar'",
])
def test_a_warning_or_later_words_form_no_incident(tmp_path, line):
    path = tmp_path / "server.log"
    path.write_text(HEAD + BUSY + line + "\n" + BUSY)
    assert explain_file(path) == []
    assert explain_pipe(HEAD + BUSY + line + "\n" + BUSY) == []
