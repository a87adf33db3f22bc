"""Issue 12: the change people confirm most often for a failure is the one the tool proposes
first (or as its first alternative).  ``data/fix_evidence.yaml`` counts, from public threads,
which change worked for each failure; here every failure with a ``fixture`` is run through the
CLI as a user runs it, and its best-supported change (the first of ``changes``) must be in the
primary remediation or the first alternative, scored as ``bench/accuracy.py`` scores a label's
fix (a ``<lower ...>`` value refuses a raise, and the other way round)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from accuracy import parse_events, primary_incident, remediation_hit  # noqa: E402

EVIDENCE = ROOT / "data" / "fix_evidence.yaml"
KINDS = {"reporter", "maintainer", "pr", "docs", "source"}


def _failures() -> list[dict]:
    return yaml.safe_load(EVIDENCE.read_text(encoding="utf-8"))["failures"]


def _rule_ids() -> set[str]:
    ids = set()
    for path in (ROOT / "rules").glob("*.yaml"):
        ids |= {r["id"] for r in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("rules") or []}
    return ids


def test_the_tally_is_well_formed():
    rules = _rule_ids()
    for entry in _failures():
        assert entry["failure"] and entry["category"], entry
        assert set(entry["rules"]) <= rules, entry["failure"]
        if entry.get("fixture"):
            assert (ROOT / entry["fixture"]).is_file(), entry["fixture"]
        assert entry["changes"], entry["failure"]
        for change in entry["changes"]:
            what = change["change"]
            if change.get("fixture"):
                assert (ROOT / change["fixture"]).is_file() and (what.get("flags") or what.get("env")), change
            assert set(what) <= {"flags", "env", "upgrade", "install"} and what, what
            for flag in what.get("flags") or {}:
                assert flag.startswith("--"), flag
            for row in change["confirmed"]:
                assert row["kind"] in KINDS, row
                assert row.get("url", "").startswith("https://github.com/") or row["kind"] == "source", row
                assert row["note"], row
        for row in entry.get("not_helped") or []:
            assert row["url"].startswith("https://github.com/") and row["note"], row


def test_changes_are_ranked_by_their_count():
    """The first change is the best supported: no later change has more confirmations."""
    for entry in _failures():
        counts = [sum(1 for row in c["confirmed"] if row.get("url") and row.get("engine") is None)
                  for c in entry["changes"]]
        assert counts[0] == max(counts), (entry["failure"], counts)


def _explain(path: Path) -> list[dict]:
    r = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(path)],
                       capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert r.returncode in (0, 1), r.stderr
    return parse_events(r.stdout)


@pytest.mark.parametrize("entry", [e for e in _failures() if e.get("fixture")], ids=lambda e: e["fixture"])
def test_the_best_supported_change_comes_first(entry):
    events = _explain(ROOT / entry["fixture"])
    primary = primary_incident([e for e in events if e.get("event") == "incident"])
    assert primary is not None, entry["fixture"]
    assert primary["rule"] in entry["rules"], (primary["rule"], entry["rules"])
    best = entry["changes"][0]["change"]
    rem = primary.get("remediation")
    assert remediation_hit(rem, best.get("flags") or {}, best.get("env") or {}), (
        f"{entry['failure']}: confirmed {best}; tool: {json.dumps(rem, default=str)[:400]}")


def _changes_with_their_own_fixture() -> list[tuple[dict, dict]]:
    return [(entry, change) for entry in _failures() for change in entry["changes"] if change.get("fixture")]


@pytest.mark.parametrize("entry,change", _changes_with_their_own_fixture(), ids=lambda x: x.get("fixture", "") if isinstance(x, dict) else "")
def test_a_change_confirmed_where_its_condition_holds_comes_first_there(entry, change):
    """A later change with a ``fixture`` of its own (a log where what it answers shows: the
    traceback through the backend it replaces) is the primary change or the first alternative
    on that log."""
    events = _explain(ROOT / change["fixture"])
    primary = primary_incident([e for e in events if e.get("event") == "incident"])
    assert primary is not None and primary["rule"] in entry["rules"], change["fixture"]
    what = change["change"]
    rem = primary.get("remediation")
    assert remediation_hit(rem, what.get("flags") or {}, what.get("env") or {}), (
        f"{entry['failure']}: confirmed {what}; tool: {json.dumps(rem, default=str)[:400]}")
