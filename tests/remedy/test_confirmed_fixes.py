"""Issue 12: the change people confirmed for a failure is the primary change or the first
alternative (fixtures/fixes/cases.yaml, scored by bench/fixes.py as bench/accuracy.py scores a
label's fix).  Here the cases whose log is a fixture (thread snippets and messages that name
their own fix), through the CLI as a user runs it; the corpus cases are bench/accuracy.py's.
A case marked ``known_miss`` says why it is not a hit yet; every other one must be a hit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from fixes import load_cases, score  # noqa: E402

CASES = [c for c in load_cases() if c["log"].startswith("fixtures/")]


def test_the_cases_are_well_formed():
    ids = [c["id"] for c in load_cases()]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    for case in load_cases():
        assert (ROOT / case["log"]).is_file(), case["id"]
        assert case.get("fix_flags") or case.get("fix_env"), case["id"]
        assert case["half"] in ("tune", "check") and case.get("source") and case.get("confirmed"), case["id"]
        if case["log"].startswith("fixtures/fixes/"):
            assert case["log"].endswith(".txt"), "a *.log under fixtures/ must be a rule's example (rules test)"


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("known_miss")], ids=lambda c: c["id"])
def test_the_confirmed_fix_is_first_or_the_first_alternative(case):
    row = score(case)
    assert not row["crash"]
    assert row["hit"], f"{case['id']}: confirmed {case['confirmed']}; tool: {row['primary']} | {row['alt1']}"


def _tuned_parts() -> tuple[str, ...]:
    """The tuned parts as scripts/guess_prior.py lists them (every other part is held back)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("guess_prior", ROOT / "scripts" / "guess_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return tuple(mod.TUNED_PARTS)




def test_corpus_cases_are_tuned_files_with_their_labelled_fix():
    """A corpus case is a tuned part's file, and its fix is that file's label, verbatim."""
    for case in load_cases():
        if not case["log"].startswith("corpus/"):
            continue
        _, part, name = case["log"].split("/", 2)
        assert part in _tuned_parts(), case["id"]  # a held-back part is never a case
        labels = yaml.safe_load((ROOT / "corpus" / part / "labels.yaml").read_text(encoding="utf-8"))
        label = next(item for item in labels if isinstance(item, dict) and item.get("file") == name)
        assert (case.get("fix_flags") or {}) == (label.get("fix_flags") or {}), case["id"]
        assert (case.get("fix_env") or {}) == (label.get("fix_env") or {}), case["id"]


def test_session_25_cases_took_their_half_from_the_file_number():
    """The rule fixed before the tool ran on them: an odd file number is a check case."""
    added = [c for c in load_cases() if "session 25" in str(c.get("added") or "")]
    assert len(added) >= 20
    for case in added:
        number = int(case["log"].rsplit("/", 1)[1][:3])
        assert case["half"] == ("check" if number % 2 else "tune"), case["id"]


def test_per_category_counts_hits_by_the_case_category():
    from fixes import per_category

    rows = [{"category": "cuda_graph", "hit": True}, {"category": "cuda_graph", "hit": False},
            {"category": "memory.kv_pool", "hit": True}]
    assert per_category(rows) == "cuda_graph 1/2, memory.kv_pool 1/1"
