"""``sglang-doctor flags``: a release's option strings, and what changed (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd
from sglang_doctor.remedy import flags

REAL_VENV = Path.home() / ".cache" / "sglang-doctor" / "real-sglang-venv"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(doctor_cmd("flags", *args), capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("version", ["0.4.0", "0.5.9", "0.5.23"])
def test_one_option_string_per_line_from_the_catalogue(version):
    done = run("--sglang-version", version)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    document = flags.read_shipped(f"sglang-{version}.json")
    assert lines == sorted(o for a in document["actions"] for o in a["option_strings"])
    assert "--model-path" in lines and "--help" in lines and "-h" in lines


def test_aliases_are_on_their_own_lines():
    lines = run("--sglang-version", "0.5.9").stdout.splitlines()
    assert "--tp-size" in lines and "--tensor-parallel-size" in lines


def test_a_release_without_its_own_catalogue_says_which_one_it_shows():
    done = run("--sglang-version", "0.5.24")
    assert done.returncode == 0
    assert "no catalogue for SGLang 0.5.24" in done.stderr and "sglang-0.5.23.json" in done.stderr


def test_diff_names_renames_removals_and_additions():
    done = run("--diff", "0.5.9", "0.5.23")
    assert done.returncode == 0, done.stderr
    assert "renamed  --mamba-scheduler-strategy -> --mamba-radix-cache-strategy" in done.stdout
    assert "added    --cuda-graph-max-bs-decode" in done.stdout or \
        "renamed  --cuda-graph-max-bs -> --cuda-graph-max-bs-decode" in done.stdout
    same = run("--sglang-version", "0.5.9", "--diff", "0.5.23", "--format", "json")
    document = json.loads(same.stdout)
    assert document["from"] == "0.5.9" and document["to"] == "0.5.23"
    kinds = {c["kind"] for c in document["changes"]}
    assert {"renamed", "removed", "added", "changed"} <= kinds


def test_diff_of_a_release_with_itself_is_empty():
    done = run("--diff", "0.5.9", "0.5.9")
    assert done.returncode == 0 and done.stdout == ""


@pytest.mark.parametrize("args", [("--diff", "0.5.9"), ("--sglang-version", "latest"),
                                  ("0.5.9", "0.5.23")])
def test_usage_errors(args):
    done = run(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_output_equals_the_real_0523_parser():
    """The real SGLang 0.5.23 (scripts/install-real-sglang): its parser's option strings."""
    python = REAL_VENV / "bin" / "python"
    if not python.exists():
        if os.environ.get("SGLANG_DOCTOR_REQUIRE_SGLANG") == "1":
            pytest.fail(f"no real SGLang venv at {REAL_VENV}")
        pytest.skip(f"no real SGLang venv at {REAL_VENV}")
    code = ("import argparse\nfrom sglang.srt.server_args import ServerArgs\n"
            "p = argparse.ArgumentParser(); ServerArgs.add_cli_args(p)\n"
            "print('\\n'.join(sorted(o for a in p._actions for o in a.option_strings)))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "SGL_"))}
    env["PYTHONPATH"] = str(ROOT)
    real = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          timeout=600, env=env)
    if real.returncode != 0 and "torchvision" in real.stderr:
        pytest.skip("the real venv cannot import server_args here: " + real.stderr.splitlines()[-1])
    assert real.returncode == 0, real.stderr[-2000:]
    assert run("--sglang-version", "0.5.23").stdout == real.stdout


def test_a_log_without_its_version_gets_the_range_its_dump_fits(seed_full):
    done = subprocess.run(doctor_cmd("explain", str(seed_full), "--format", "json"),
                          capture_output=True, text=True, timeout=120)
    launches = [json.loads(l) for l in done.stdout.splitlines() if '"event": "launch"' in l]
    assert launches and all(l["sglang_version"] is None for l in launches)
    spec = launches[0]["sglang_version_range"]
    low, _, high = spec.partition(",")
    assert spec == "==0.5.9" or (flags.version_key(low.lstrip(">=")) <= flags.version_key("0.5.9")
                                 <= flags.version_key(high.lstrip("<=")))
    text = subprocess.run(doctor_cmd("explain", str(seed_full), "--format", "text"),
                          capture_output=True, text=True, timeout=120).stdout
    assert f"SGLang {spec}" in text.splitlines()[0]
    incident = [json.loads(l) for l in done.stdout.splitlines() if '"event": "incident"' in l][0]
    target = incident["remediation"]["target"]
    assert target["version_source"] == "dump fields"
    assert target["sglang_version"] == (spec[2:] if spec.startswith("==") else high.lstrip("<="))
