"""`rules lint`: a rule needs a positive match condition, and a specific rule's message regex
must require text (a purely negative one made the failure inventory credit every SGLang site
to one rule in session 24)."""
import subprocess

import pytest

from conftest import doctor_cmd
from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet


def rule(rule_id: str, match: str) -> str:
    body = "".join(f"      {line}\n" for line in match.splitlines())
    conf = "    confidence: 0.6\n" if rule_id.startswith("class.") else ""
    return (f"rules:\n  - id: {rule_id}\n    category: other\n    phase: auto\n    title: t\n{conf}"
            f"    match:\n{body}    explanation: e\n")


def problems(tmp_path, body) -> list[str]:
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / "r.yaml").write_text(body)
    try:
        RuleSet.load([d], builtin=False, user=False, strict=True)
    except RuleLoadError as exc:
        return exc.problems
    return []


@pytest.mark.parametrize("rule_id,match,needle", [
    # only a negative message and a narrowing condition: nothing the text must hold
    ("t.neg", "message: '^(?![\\s\\S]*foo)'\nafter_ready: true\n", "no positive condition"),
    ("class.t.neg", "message: '(?i)^(?!.*bar)'\ntruncated: false\n", "no positive condition"),
    # an all-optional pattern requires no text either
    ("t.opt", "message: '(?:foo)?'\nnames_setting: true\n", "no positive condition"),
    # a type plus a purely negative message: fine for matching, but the inventory reads the
    # specific rule's message as what it names
    ("t.typed_neg", "in_chain: true\nexception: [DistNetworkError]\nmessage: '^(?![\\s\\S]*address family)'\n",
     "matches the empty text"),
])
def test_lint_refuses_a_rule_without_positive_text(tmp_path, rule_id, match, needle):
    found = problems(tmp_path, rule(rule_id, match))
    assert any(needle in p and rule_id in p for p in found), found


@pytest.mark.parametrize("rule_id,match", [
    ("t.pos", "exception: [ValueError]\nmessage: 'boom'\n"),
    ("t.any_text", "frames: {any: [event_loop_normal]}\nmessage: '\\S'\n"),
    # a class rule may exclude by message next to a positive condition (class.cuda_graph.function)
    ("class.t.excl", "deepest_frame_module: [model_executor/cuda_graph_runner.py]\n"
                     "message: '(?i)^(?![\\s\\S]*\\bdo(?:es)? not support\\b)'\n"),
    ("t.words", "message_any: [nccl]\nafter_ready: false\n"),
])
def test_lint_accepts_rules_with_a_positive_condition(tmp_path, rule_id, match):
    assert problems(tmp_path, rule(rule_id, match)) == []


def test_rules_lint_cli_names_the_negative_rule(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.yaml").write_text(rule("t.neg", "message: '^(?!.*foo)'\n"))
    r = subprocess.run(doctor_cmd("rules", "lint", str(d)), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "r.yaml:2: t.neg: match has no positive condition" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
