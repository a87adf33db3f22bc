"""The shipped rule pack against its fixtures, through the real command line.

Every fixture log is run through ``sglang-doctor explain --format json`` as a subprocess (what
a user or a script sees), and the incidents it prints must be exactly those that
``fixtures/EXPECTED.yaml`` lists for it, in order.  The pack must also cover every category of
CONTRACT.md and hold at least 40 rules, and ``rules lint`` / ``rules test`` must pass.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from conftest import FIXTURES, ROOT, doctor_cmd
from sglang_doctor.model import CATEGORIES
from sglang_doctor.diagnose.rules_engine import RuleSet

EXPECTED_FILE = FIXTURES / "EXPECTED.yaml"
# Directories whose logs other work owns: checked only when EXPECTED.yaml lists them.
OPTIONAL_DIRS = ("real", "startup", "models")


def _expected() -> dict[str, list[dict]]:
    return yaml.safe_load(EXPECTED_FILE.read_text())["fixtures"]


def _fixture_logs() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in FIXTURES.rglob("*.log"))


def _explain(*rels: str) -> tuple[int, list[dict], str]:
    proc = subprocess.run(doctor_cmd("explain", "--format", "json", *rels), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    return proc.returncode, events, proc.stderr


@pytest.fixture(scope="module")
def results() -> dict[str, list[dict]]:
    """Every expected fixture through one real ``explain`` process, split per file.

    With several files ``explain`` ends each file's events with a ``summary`` that names the
    file.  It is slow (about a minute here) only because the CLI reloads the whole YAML pack
    for every file with the pure-Python loader; the in-process test below checks the same
    expectations in the fast tier.
    """
    wanted = [rel for rel in _fixture_logs() if rel in _expected()]
    rc, events, stderr = _explain(*wanted)
    assert rc == 1, stderr
    out: dict[str, list[dict]] = {}
    current: list[dict] = []
    for event in events:
        current.append(event)
        if event["event"] == "summary":
            out[event["file"]] = current
            current = []
    assert sorted(out) == sorted(wanted), "explain did not report every file"
    return out


def test_every_fixture_of_the_pack_has_an_expectation():
    expected = _expected()
    missing = [rel for rel in _fixture_logs()
               if rel.split("/")[1] not in OPTIONAL_DIRS and rel not in expected]
    assert not missing, f"add these to {EXPECTED_FILE.name}: {missing}"
    stale = [rel for rel in expected if not (ROOT / rel).is_file()]
    assert not stale, f"{EXPECTED_FILE.name} lists files that do not exist: {stale}"


@pytest.mark.slow
@pytest.mark.parametrize("rel", sorted(_expected()))
def test_explain_gives_the_expected_incidents(results, rel):
    events = results[rel]
    want = [(e["rule"], e["category"]) for e in _expected()[rel]]
    got = [(e["rule"], e["category"]) for e in events if e["event"] == "incident"]
    assert got == want, f"{rel}: explain printed {got}, expected {want}"
    assert events[-1]["incidents"] == len(want)


@pytest.mark.parametrize("rel,rc", [("fixtures/healthy/ready_then_sigterm_0523.log", 0),
                                    ("fixtures/memory/kv_pool_not_enough_059.log", 1)])
def test_exit_code_of_a_single_fixture(rel, rc):
    got, events, stderr = _explain(rel)
    assert got == rc, stderr
    assert events[-1]["event"] == "summary"


def test_pack_gives_the_expected_incidents_in_process():
    """The same expectations through the pipeline explain uses, with the pack loaded once."""
    from sglang_doctor.pipeline import diagnose_file

    ruleset = RuleSet.load(builtin=True, user=False)
    wrong = {}
    for rel, incidents in _expected().items():
        want = [(e["rule"], e["category"]) for e in incidents]
        got = [(d.rule, d.category) for d in diagnose_file(ROOT / rel, ruleset, remediate=False)]
        if got != want:
            wrong[rel] = (got, want)
    assert not wrong, wrong


def test_every_category_has_a_rule_and_the_pack_is_large_enough():
    ruleset = RuleSet.load(builtin=True, user=False)
    assert len(ruleset.rules) >= 40
    covered = {r.category for r in ruleset.rules}
    assert set(CATEGORIES) <= covered, f"no rule for {set(CATEGORIES) - covered}"


def test_every_rule_has_docs_references_and_an_example():
    for rule in RuleSet.load(builtin=True, user=False).rules:
        assert rule.examples, rule.id
        assert rule.references, rule.id
        assert all(rule.doc.get(k) for k in ("means", "why", "fix")), rule.id


def test_every_category_is_exercised_by_some_fixture():
    seen = {e["category"] for incs in _expected().values() for e in incs}
    assert set(CATEGORIES) <= seen


def test_truncated_seed_fragment_is_kv_pool_with_low_confidence():
    _, events, _ = _explain("fixtures/seed/seed_tail20.log")
    (incident,) = [e for e in events if e["event"] == "incident"]
    assert incident["category"] == "memory.kv_pool" and incident["truncated"]
    assert incident["confidence"] < 0.5


@pytest.mark.parametrize("rel,form", [("fixtures/memory/kv_pool_not_enough_059.log", "0.5.9"),
                                      ("fixtures/memory/kv_pool_not_enough_0523.log", "0.5.23")])
def test_both_not_enough_memory_forms_quote_the_fraction(rel, form):
    _, events, _ = _explain(rel)
    (incident,) = [e for e in events if e["event"] == "incident"]
    assert incident["rule"] == "memory.kv_pool.not_enough_memory"
    fraction = incident["exception"]["message"].rsplit("=", 1)[1]
    assert f"mem_fraction_static={fraction}" in incident["title"], (form, incident["title"])


def test_rules_lint_and_test_pass_on_the_shipped_pack():
    lint = subprocess.run(doctor_cmd("rules", "lint"), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stderr
    test = subprocess.run(doctor_cmd("rules", "test"), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert test.returncode == 0, test.stdout[-2000:]
    assert " 0 failed" in test.stdout
