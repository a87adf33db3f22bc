"""The table of other libraries' failures (fixtures/external/table.yaml, docs/EXTERNAL-FAILURES.md)
against the shipped rule pack.

Every row's example (a message line verbatim from an issue thread, in the context SGLang logs it)
runs through the pipeline ``explain`` uses; its primary incident must have the row's category, and
the row's rule where one is named ('none': the example must form no incident).  The document is
generated from the table and the pack and must be in step with both.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from conftest import ROOT
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.model import CATEGORIES

_spec = importlib.util.spec_from_file_location("gen_external_failures_doc",
                                               ROOT / "scripts" / "gen_external_failures_doc.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

ROWS = gen.rows()
KEYS = {"id", "library", "pattern", "category", "means", "fix", "sglang_threads", "threads", "example"}
OPTIONAL = {"rule", "fix_has"}


@pytest.fixture(scope="module")
def got() -> dict[str, tuple[str, str, str]]:
    return gen.diagnose_rows(ROWS, remediate=True)


def test_the_table_is_well_formed():
    ids = [row["id"] for row in ROWS]
    assert len(ids) == len(set(ids)), "duplicate row ids"
    assert len(ROWS) >= 30
    rule_ids = {r.id for r in RuleSet.load(builtin=True, user=False).rules}
    for row in ROWS:
        assert KEYS <= set(row) <= KEYS | OPTIONAL, (row["id"], set(row) ^ KEYS)
        assert row["category"] in set(CATEGORIES) | {"none"}, row["id"]
        assert row.get("rule") is None or row["rule"] in rule_ids, (row["id"], row.get("rule"))
        assert row["threads"] and all(re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", u)
                                      for u in row["threads"]), row["id"]
        assert 0 <= row["sglang_threads"] <= len(row["threads"]), row["id"]
        # the message the row is about is in its example
        assert row["example"].strip(), row["id"]


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_every_row_gets_its_category_and_rule(got, row):
    category, rule, remedy = got[row["id"]]
    assert category == row["category"], f"{row['id']}: the pack says {category} ({rule}), the table {row['category']}"
    if row.get("rule"):
        assert rule == row["rule"], f"{row['id']}: claimed by {rule}, the table names {row['rule']}"
    if row.get("fix_has"):
        # the fix the threads confirm is in what the tool proposes
        assert row["fix_has"] in remedy, f"{row['id']}: the remediation does not say {row['fix_has']!r}: {remedy[:300]}"


def test_the_document_is_in_step_with_the_table_and_the_pack(got):
    want = gen.render(ROWS, {k: v[:2] for k, v in got.items()})
    assert gen.TARGET.read_text() == want, "run python scripts/gen_external_failures_doc.py"
