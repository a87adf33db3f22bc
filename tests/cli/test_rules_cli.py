"""`rules list|show|test` as a user meets them, including from a plain (non-editable) install."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd


def run(*args, **kw):
    return subprocess.run(doctor_cmd(*args), capture_output=True, text=True, timeout=120, **kw)


def test_rules_list_has_a_header_and_a_count():
    r = run("rules", "list")
    lines = r.stdout.splitlines()
    assert r.returncode == 0
    assert lines[0].split()[:3] == ["RULE", "CATEGORY", "TITLE"]
    assert lines[-1] == f"{len(lines) - 2} rules"


def test_rules_list_json_is_one_object_per_rule():
    r = run("rules", "list", "--format", "json")
    rules = [json.loads(line) for line in r.stdout.splitlines()]
    text = run("rules", "list").stdout.splitlines()
    assert len(rules) == len(text) - 2
    kv = next(x for x in rules if x["id"] == "memory.kv_pool.not_enough_memory")
    assert kv["category"] == "memory.kv_pool" and kv["examples"]
    assert kv["remedies"][0].startswith("ask the memory planner")


def test_rules_show_says_remedies_in_words():
    r = run("rules", "show", "memory.kv_pool.not_enough_memory")
    assert r.returncode == 0
    assert "{'goal'" not in r.stdout and "plan_memory" not in r.stdout
    assert "ask the memory planner for launches that fit" in r.stdout
    assert ("raise --mem-fraction-static by 0.03, or further when the log's own memory figures call for it "
            "(at most 0.93)") in r.stdout
    assert "Example (fixtures/seed/seed_full.log" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["rules", "--rules", "/nope", "list"], "--rules /nope: no such directory"),
    (["explain", "--rules", "/nope", "x.log"], "--rules /nope: no such directory"),
    (["rules", "lint", "/nope"], "/nope: no such directory"),
])
def test_a_missing_rule_directory_is_named(args, message):
    r = run(*args)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package as `pip install .` puts it (no editable link back to the checkout)."""
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


def _run_installed(installed, cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(installed))
    return subprocess.run([sys.executable, "-m", "sglang_doctor", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=env)


def test_rules_test_and_show_work_from_a_plain_install(installed, tmp_path):
    where = _run_installed(installed, tmp_path, "rules", "show", "memory.kv_pool.not_enough_memory")
    assert where.returncode == 0, where.stderr
    assert "Example (fixtures/seed/seed_full.log" in where.stdout and "RuntimeError: Not enough memory" in where.stdout
    assert str(ROOT) not in where.stdout  # the installed pack, not the checkout's
    r = _run_installed(installed, tmp_path, "rules", "test")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    checkout = run("rules", "test")
    assert r.stdout.splitlines()[-1] == checkout.stdout.splitlines()[-1]  # the same self-test, whole
    assert (Path(installed) / "sglang_doctor" / "fixtures" / "seed" / "seed_full.log").is_file()
