"""Hardening, bad rule files (issue 7): every problem is a `file:line: message` on stderr with
exit 2 -- through `sglang-doctor rules lint DIR` and `explain --rules DIR` -- never a
traceback; a catastrophic regex is stopped by the timeout, reported once as too slow, and
the other rules still run.  Plus a property test: whatever YAML structure a rule file
holds, loading either succeeds or raises RuleLoadError, nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
ENV = {**os.environ, "SGLANG_DOCTOR_NO_RULE_CACHE": "1"}

GOOD = """\
rules:
  - id: user.good
    category: other
    phase: auto
    title: a good rule
    match:
      exception: RuntimeError
      message: 'worker died'
    explanation: it matched
    priority: 50
"""

LOG = ('Traceback (most recent call last):\n  File "/x/sglang/srt/a.py", line 1, in f\n'
       "RuntimeError: worker died " + "a" * 30000 + "!\n")


def doctor(*args: str, timeout=120):
    return subprocess.run([PY, "-m", "sglang_doctor", *args], capture_output=True, text=True, timeout=timeout,
                          env=ENV, cwd=ROOT)


def rule_dir(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def check_both(tmp_path: Path, d: Path, *expected: str) -> list[str]:
    """lint fails with exit 2 and file:line problems; explain --rules warns on stderr that it
    skipped the bad file and carries on (issue 11 item 13); no traceback from either."""
    lint = doctor("rules", "lint", str(d))
    assert lint.returncode == 2, (lint.stdout, lint.stderr)
    assert "Traceback" not in lint.stderr
    problems = lint.stderr.strip().splitlines()
    for p in problems:
        assert p.startswith(str(d)) and p.split(":")[1].isdigit(), p
    for e in expected:
        assert any(e in p for p in problems), (e, problems)
    log = tmp_path / "x.log"
    log.write_text("plain\n")
    ex = doctor("explain", "--rules", str(d), str(log))
    assert ex.returncode == 0 and "Traceback" not in ex.stderr, ex.stderr
    skipped = [w for w in ex.stderr.splitlines() if "warning: rule file" in w and "skipped" in w]
    assert skipped and all(str(d) in w for w in skipped), ex.stderr
    return problems


def test_malformed_yaml_names_the_line(tmp_path):
    d = rule_dir(tmp_path, "rules:\n  - id: a\n    category: other\n   phase: x\n")
    (problem,) = check_both(tmp_path, d, "malformed YAML")
    assert problem.startswith(f"{d / 'r.yaml'}:4:")


def test_wrong_types_and_unknown_keys(tmp_path):
    unknown = GOOD.replace("priority: 50", "colour: red\n    5: five")
    types = GOOD.replace("user.good", "user.types").replace("priority: 50", "priority: high\n    confidence: 7").replace(
        "exception: RuntimeError", "exception: {a: 1}\n      after_ready: 'no'\n      bogus: 1")
    problems = check_both(tmp_path, rule_dir(tmp_path, unknown + types.split("\n", 1)[1]),
                          "user.good: unknown key 'colour'", "user.good: unknown key 5",
                          "user.types: priority must be an integer", "confidence must be a number",
                          "unknown match key 'bogus'", "match.exception must be a string",
                          "match.after_ready must be true or false")
    assert all(":2: user.good:" in p or ":12: user.types:" in p for p in problems), problems


def test_regex_that_does_not_compile(tmp_path):
    check_both(tmp_path, rule_dir(tmp_path, GOOD.replace("'worker died'", "'(unclosed'")),
               "match.message does not compile")


def test_duplicate_ids_across_files_and_within_one(tmp_path):
    d = rule_dir(tmp_path, GOOD, "a.yaml")
    rule_dir(tmp_path, GOOD, "b.yaml")
    check_both(tmp_path, d, "duplicate rule id 'user.good'")
    d2 = tmp_path / "two"
    d2.mkdir()
    (d2 / "r.yaml").write_text(GOOD + GOOD.split("\n", 1)[1])
    problems = check_both(tmp_path, d2, "duplicate rule id 'user.good'")
    assert problems[0].startswith(f"{d2 / 'r.yaml'}:11:")


def test_duplicate_key_in_one_rule(tmp_path):
    text = GOOD.replace("    title: a good rule\n", "    title: a good rule\n    id: user.other\n")
    (problem,) = check_both(tmp_path, rule_dir(tmp_path, text), "duplicate key 'id'")
    assert ":6:" in problem


def test_not_utf8_and_not_a_mapping(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "a.yaml").write_bytes(b"rules:\n  - id: caf\xe9\n")
    (d / "b.yaml").write_text("rules: 5\n")
    (d / "c.yaml").write_text("!!python/object:os.system x\n")
    check_both(tmp_path, d, "a.yaml:1: cannot read", "b.yaml:1: a rule file is a mapping", "c.yaml:1: malformed")


@pytest.mark.slow
def test_huge_rule_file_loads_in_bounded_time(tmp_path):
    """5000 rules (~0.9 MB): validated and indexed in a few seconds with libyaml."""
    body = ["rules:"]
    for i in range(5000):
        body.append(f"  - {{id: user.r{i}, category: other, phase: auto, title: r{i}, explanation: e,"
                    f" match: {{exception: E{i}Error, message: 'thing {i} (?P<n>\\d+)'}}}}")
    d = rule_dir(tmp_path, "\n".join(body) + "\n")
    t0 = time.process_time()
    rs = RuleSet.load([d], builtin=False, user=False)
    assert len(rs.rules) == 5000
    assert time.process_time() - t0 < 20
    bad = d / "r.yaml"
    bad.write_text(bad.read_text().replace("user.r4321,", "user.r4321, colour: red,"))
    with pytest.raises(RuleLoadError) as err:
        RuleSet.load([d], builtin=False, user=False, strict=True)
    assert err.value.problems == [f"{bad}:4323: user.r4321: unknown key 'colour'"]


def test_catastrophic_regex_is_stopped_reported_once_others_still_run(tmp_path):
    slow = GOOD.replace("user.good", "user.slow").replace("'worker died'", "'worker died (a|aa)+$'").replace(
        "priority: 50", "priority: 90")
    d = rule_dir(tmp_path, GOOD + slow.split("\n", 1)[1])
    log = tmp_path / "cat.log"
    # three incidents: the slow rule times out once, then is skipped (a plain line between them, not
    # a batch line: two batch lines after a failure show the scheduler lived through it, survived.py)
    log.write_text((LOG + "[2026-12-02 15:56:05] Cache flushed successfully!\n") * 3)
    t0 = time.monotonic()
    r = doctor("explain", "--format", "json", "--rules", str(d), str(log))
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    incidents = [json.loads(x) for x in r.stdout.splitlines() if '"incident"' in x]
    assert [i["rule"] for i in incidents] == ["user.good"] * 3
    warnings = [x for x in r.stderr.splitlines() if "too slow" in x]
    assert len(warnings) == 1 and "user.slow" in warnings[0] and "r.yaml:" in warnings[0], r.stderr
    assert "Traceback" not in r.stderr
    assert elapsed < 60


# -- any structure at all --------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=8),
                    st.sampled_from(["other", "auto", "traceback", "RuntimeError", "(", "present", ">=3"]))
keys = st.sampled_from(["id", "category", "phase", "title", "match", "explanation", "priority", "confidence",
                        "remedy", "examples", "doc", "status", "exception", "message", "line", "literal",
                        "frames", "any", "all", "context", "after_ready", "in_chain", "kind", "set_flag",
                        "x", 5])
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=6)), max_leaves=25)


@st.composite
def rule_files(draw):
    base = {"id": "user.h", "category": "other", "phase": "auto", "title": "t", "explanation": "e",
            "match": {"exception": "RuntimeError"}}
    rules = []
    for _ in range(draw(st.integers(0, 3))):
        rule = dict(base) if draw(st.booleans()) else {}
        rule.update(draw(st.dictionaries(keys, values, max_size=6)))
        rules.append(rule)
    return draw(st.sampled_from([{"rules": rules}, rules, {"rules": draw(values)}, draw(values)]))


@settings(max_examples=int(os.environ.get("RULES_EXAMPLES", "100")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rule_files())
def test_any_yaml_structure_loads_or_gives_file_line_problems(data):
    d = Path(tempfile.mkdtemp())
    try:
        (d / "r.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
        try:
            rs = RuleSet.load([d], builtin=False, user=False, strict=True)
        except RuleLoadError as exc:
            assert exc.problems
            for p in exc.problems:
                path, line, _ = p.split(":", 2)
                assert path == str(d / "r.yaml") and line.isdigit(), p
            return
        for rule in rs.rules:  # a rule that loaded can be matched without raising
            from sglang_doctor.model import ExceptionInfo, Incident, Line

            inc = Incident(kind="traceback", first_line=1, last_line=1, lines=[Line(1, "RuntimeError: x")],
                           ranks=[], signals=[], launch_index=0, after_ready=False)
            inc.exception = ExceptionInfo("RuntimeError", "x")
            inc.chain = [inc.exception]
            rs.diagnose(inc, None)
    finally:
        for p in d.iterdir():
            p.unlink()
        d.rmdir()
