"""``sglang-doctor check``: the pre-flight, on the seed and on single faults (issue 14).

Real subprocesses of the CLI; the facts checked come from the releases' source (see
sglang_doctor/remedy/preflight.py) and from the shipped catalogues.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, doctor_cmd

MODEL = str(FIXTURES / "models" / "qwen3_6_27b_like.json")
# /work/shared/seed-scenario.md, launch 1
SEED = ["python", "-m", "sglang.launch_server", "--model-path", "/root/models/Qwen3.6-27B",
        "--port", "30000", "--tp-size", "2", "--mem-fraction-static", "0.85",
        "--context-length", "65536", "--reasoning-parser", "qwen3", "--tool-call-parser",
        "qwen3_coder", "--enable-torch-compile", "--speculative-algo", "NEXTN",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4"]
SMALL = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]


def check(*args: str, command=SEED) -> subprocess.CompletedProcess:
    return subprocess.run(doctor_cmd("check", *args, "--", *command), capture_output=True,
                          text=True, timeout=120)


def as_json(done: subprocess.CompletedProcess) -> dict:
    return json.loads(done.stdout)


def test_the_seed_on_059_would_fail_in_the_recurrent_state_pools_and_gets_a_fit():
    done = check("--model-config", MODEL, "--sglang-version", "0.5.9", "--gpus", "a6000x2")
    assert done.returncode == 1, done.stderr
    assert "does not fit (mamba_pool)" in done.stdout
    assert "recurrent-state (mamba) pool" in done.stdout
    assert "speculative-decoding intermediate states" in done.stdout
    report = as_json(check("--model-config", MODEL, "--sglang-version", "0.5.9", "--format", "json"))
    assert report["ok"] is False and report["sglang_version"] == "0.5.9"
    (memory,) = [f for f in report["findings"] if f["topic"] == "memory"]
    assert memory["level"] == "error" and memory["fix"]
    # the change it proposes does fit: run the pre-flight again with it
    best = report["candidates"][0]["changes"]
    fixed = list(SEED)
    for dest, value in best.items():
        flag = "--" + dest.replace("_", "-")
        if flag in fixed:
            fixed[fixed.index(flag) + 1] = str(value)
        else:
            fixed += [flag, str(value)]
    again = check("--model-config", MODEL, "--sglang-version", "0.5.9", command=fixed)
    assert again.returncode == 0, again.stdout


def test_the_same_flags_on_0523_get_its_own_verdict():
    report = as_json(check("--model-config", MODEL, "--sglang-version", "0.5.23", "--format", "json"))
    assert report["sglang_version"] == "0.5.23"
    assert report["flags_from"] == "catalogue sglang-0.5.23.json"
    old = as_json(check("--model-config", MODEL, "--sglang-version", "0.5.9", "--format", "json"))
    # 0.5.23 sizes the speculative intermediate state per running request, not per slot
    assert report["plan"]["fits"] != old["plan"]["fits"]
    assert report["ok"] is True and report["plan"]["max_running_requests"] >= 1


def test_an_abbreviation_is_a_note_and_names_the_full_flag():
    report = as_json(check("--sglang-version", "0.5.9", "--format", "json"))
    notes = [f for f in report["findings"] if f["topic"] == "flags"]
    assert notes and notes[0]["level"] == "note"
    assert "--speculative-algorithm" in notes[0]["fix"]


def test_a_typo_names_the_closest_flag_and_fails():
    done = check("--sglang-version", "0.5.9", command=SMALL + ["--mem-fraction-statc", "0.8"])
    assert done.returncode == 1
    assert "--mem-fraction-statc is not a flag of SGLang 0.5.9" in done.stdout
    assert "did you mean --mem-fraction-static" in done.stdout


def test_a_flag_of_another_release_names_its_spelling_here():
    done = check("--sglang-version", "0.5.23", command=SMALL + ["--cuda-graph-max-bs", "16"])
    assert done.returncode == 1
    assert "--cuda-graph-max-bs" in done.stdout


def test_values_out_of_range_and_wrong_choices():
    done = check("--sglang-version", "0.5.9", command=SMALL + ["--mem-fraction-static", "1.5"])
    assert done.returncode == 1 and "must be between 0 and 1" in done.stdout
    done = check("--sglang-version", "0.5.9", command=SMALL + ["--kv-cache-dtype", "int3"])
    assert done.returncode == 1 and "invalid choice 'int3'" in done.stdout
    done = check("--sglang-version", "0.5.9", command=SMALL + ["--tp-size", "two"])
    assert done.returncode == 1 and "invalid int value 'two'" in done.stdout
    done = check("--sglang-version", "0.5.9", "--gpus", "a6000x2", command=SMALL + ["--tp-size", "4"])
    assert done.returncode == 1 and "needs 4 GPUs" in done.stdout


def test_fp8_checkpoints_and_methods_against_sm86():
    # 0.5.9 layers/quantization/w8a8_fp8.py:66 returns 89: refused on SM86
    done = check("--sglang-version", "0.5.9", "--gpus", "a6000", command=SMALL + ["--quantization", "w8a8_fp8"])
    assert done.returncode == 1 and "needs compute capability 89" in done.stdout
    # fp8 (Fp8Config) needs 80: weight-only Marlin on SM86, a note, not a failure
    done = check("--sglang-version", "0.5.9", "--gpus", "a6000", command=SMALL + ["--quantization", "fp8"])
    assert done.returncode == 0 and "weight-only" in done.stdout
    # the same fp8 method on an H100 has nothing to say
    done = check("--sglang-version", "0.5.9", "--gpus", "h100-80", command=SMALL + ["--quantization", "fp8"])
    assert done.returncode == 0 and "weight-only" not in done.stdout
    # modelopt_fp4: 100 until 0.5.12.post1, 80 from 0.5.13 (generated table)
    assert check("--sglang-version", "0.5.9", "--gpus", "a6000",
                 command=SMALL + ["--quantization", "modelopt_fp4"]).returncode == 1
    assert check("--sglang-version", "0.5.23", "--gpus", "a6000",
                 command=SMALL + ["--quantization", "modelopt_fp4"]).returncode == 0


def test_fa3_on_sm86_depends_on_the_release():
    fa3 = SMALL + ["--attention-backend", "fa3"]
    # 0.4.6: model_runner.py asserts capability major >= 9
    done = check("--sglang-version", "0.4.6", "--gpus", "a6000", command=fa3)
    assert done.returncode == 1 and "requires SM>=90" in done.stdout
    # 0.5.9 attention_registry.py:130: SM8x allowed for non-MLA models
    assert check("--sglang-version", "0.5.9", "--gpus", "a6000", command=fa3).returncode == 0
    # ... but not on an MLA model (kv_lora_rank), nor on SM120-class GPUs
    mla = FIXTURES / "models" / "mla_tiny.json"
    if mla.exists():
        assert check("--sglang-version", "0.5.9", "--gpus", "a6000", "--model-config", str(mla),
                     command=fa3).returncode == 1


def test_pcie_tp2_warns_about_custom_all_reduce_without_failing():
    done = check("--sglang-version", "0.5.9", "--gpus", "a6000x2", command=SMALL + ["--tp-size", "2"])
    assert done.returncode == 0 and "custom all-reduce" in done.stdout
    done = check("--sglang-version", "0.5.9", "--gpus", "a6000x2",
                 command=SMALL + ["--tp-size", "2", "--disable-custom-all-reduce"])
    assert "custom all-reduce" not in done.stdout


@pytest.mark.parametrize("args, command", [
    (("--sglang-version", "0.5.9"), ["python", "train.py"]),
    (("--gpus", "nosuchgpu"), SMALL),
    (("--model-config", "/nonexistent/config.json"), SMALL),
    (("--sglang-version", "latest"), SMALL),
    ((), []),
])
def test_usage_errors_exit_2_with_one_line(args, command):
    done = check(*args, command=command)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_run_checks_before_the_first_launch_and_no_check_skips_it(tmp_path):
    """`run` refuses the seed on 0.5.9 before launching anything; --no-check launches (here a
    command that is no server at all, which exits at once: the run then reports the failure)."""
    log = tmp_path / "server.log"
    marker = tmp_path / "launched"
    seed = [sys.executable] + SEED[1:]
    done = subprocess.run(doctor_cmd("run", "--format", "json", "--log", str(log), "--sglang-version",
                                     "0.5.9", "--model-config", MODEL, "--", *seed),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    (event,) = [json.loads(l) for l in done.stdout.splitlines() if '"preflight"' in l]
    assert event["ok"] is False and any(f["topic"] == "memory" for f in event["findings"])
    assert not log.exists() and not (tmp_path / "server.log.attempts.json").exists()
    # --no-check launches it (this venv has no SGLang: the child fails at once, and run says so)
    done = subprocess.run(doctor_cmd("run", "--format", "json", "--log", str(log), "--settle", "1",
                                     "--max-attempts", "1", "--no-check", "--sglang-version", "0.5.9",
                                     "--model-config", MODEL, "--", *seed),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert '"preflight"' not in done.stdout and log.exists()
    # a wrapper that is not an SGLang launch is not pre-flighted: it runs
    wrapper = ["sh", "-c", f"touch {marker}; exit 3"]
    subprocess.run(doctor_cmd("run", "--format", "json", "--log", str(tmp_path / "w.log"), "--settle", "1",
                              "--max-attempts", "1", "--", *wrapper),
                   capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert marker.exists()
