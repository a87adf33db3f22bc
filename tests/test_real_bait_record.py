"""Slow tier: re-record ONE short healthy-but-scary scenario with the real SGLang 0.5.23 server
(scripts/record_real_bait.py ``short_bad_requests_sigterm``: a good generation, a malformed JSON
body, a negative temperature, a prompt over the context length, then SIGTERM) and check the
doctor stays quiet on the fresh log, whole and cut at each scary record.  The everyday tests read
the recorded copies (tests/incidents/test_real_bait_runs.py); this one proves the recording still
matches what the installed SGLang prints.

Needs the venv of scripts/install-real-sglang; skipped without it, unless
SGLANG_DOCTOR_REQUIRE_SGLANG=1 (then it fails, as tests/test_real_sglang.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import explain_incidents, real_sglang_python

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))


@pytest.mark.slow
def test_a_fresh_short_scary_run_is_quiet(tmp_path):
    python = real_sglang_python()
    import healthy_bait
    import record_real_bait

    run = next(r for r in record_real_bait.RUNS if r.name == "short_bad_requests_sigterm")
    entry = record_real_bait.record(run, tmp_path / "scratch", python, tmp_path / "out")
    log = tmp_path / "out" / f"{run.name}.log"
    text = log.read_text(errors="replace")
    assert entry["expected"] == "healthy"
    assert entry["happened"]["returncode"] == 0, text[-3000:]
    assert '"POST /generate HTTP/1.1" 400 Bad Request' in text
    assert "longer than the model's context length" in text
    assert "SIGTERM received" in text
    assert explain_incidents(log) == []
    engine = healthy_bait.Engine()
    alarms = [(group, name) for group, name, cut in healthy_bait.run_texts([log])
              if group in ("end", "bare") and engine.incidents(cut)]
    assert alarms == []
