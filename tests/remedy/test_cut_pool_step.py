"""A ModelRunner traceback cut at the pool step (memory.kv_pool.truncated_model_runner): with the
model's figures the planner's launch leads (the seed scenario's fix is unchanged); without them
the change SGLang's pool check asks for, a small raise of --mem-fraction-static, is offered as
advice that names its condition, instead of no change at all.  Real subprocesses."""

from __future__ import annotations

import json
import subprocess

from conftest import FIXTURES, doctor_cmd, explain_one_incident

SEED = FIXTURES / "seed"


def test_the_cut_fragment_without_model_figures_gets_a_small_raise_as_advice():
    inc = explain_one_incident(SEED / "seed_tail20.log")
    assert inc["rule"] == "memory.kv_pool.truncated_model_runner"
    rem = inc["remediation"]
    (value,) = rem["set"].values()
    assert list(rem["set"]) == ["--mem-fraction-static"] and 0.5 < value <= 0.93
    assert rem["safe"] is False  # the launch's own value is not in the fragment: asks first
    assert "Not enough memory" in rem["tradeoff"]


def test_the_seed_scenario_keeps_its_planned_fix():
    r = subprocess.run(doctor_cmd("explain", "--format", "json", "--model-config",
                                  str(FIXTURES / "models" / "qwen3_6_27b_like.json"), str(SEED / "seed_full.log")),
                       capture_output=True, text=True, timeout=120)
    incidents = [e for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "incident"]
    assert incidents[0]["remediation"]["set"] == {"--mem-fraction-static": 0.84, "--mamba-ssm-dtype": "bfloat16"}
