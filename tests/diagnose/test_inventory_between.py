"""The failure messages of the releases between the five inventoried ones (data/inventory/between-releases.json).

scripts/inventory_between.py reads the wheels of 30 releases between 0.4.0 and 0.5.22 and keeps
the sites whose template none of the five inventoried releases has (and the known templates
raised from new places).  These tests read only the shipped json (no wheel, no network): every
such site is disposed of by something that exists, and the engine, run on a deterministic sample
of their synthetic logs, is right at least as often as recorded.
"""

from __future__ import annotations

import json

from conftest import ROOT, script_module

INVENTORY = ROOT / "data" / "inventory"
between = script_module(ROOT / "scripts" / "inventory_between.py", "inventory_between")
inv = script_module(ROOT / "scripts" / "inventory_failures.py", "inventory_failures")


def _data() -> dict:
    return json.loads((INVENTORY / "between-releases.json").read_text(encoding="utf-8"))


def test_the_between_releases_are_not_the_inventoried_ones():
    data = _data()
    assert set(data["releases"]).isdisjoint(inv.DEFAULT_VERSIONS)
    assert data["inventoried"] == list(inv.DEFAULT_VERSIONS)
    assert len(data["releases"]) >= 25
    assert all(set(r["releases"]) <= set(data["releases"]) and r["releases"] for r in data["sites"])


def test_every_between_release_site_is_new_and_disposed_of():
    """No site is unaccounted, and each names a rule, a class or a waiver that exists."""
    from sglang_doctor.diagnose.rules_engine import RuleSet

    data = _data()
    keys, templates = between.shipped()
    rules = {r.id for r in RuleSet.load(builtin=True, user=False).rules}
    classes = set(inv.class_categories())
    waivers = set(inv.Dispositions.load().waivers)
    for r in data["sites"]:
        assert r["disposition"] != "unaccounted", r
        kind, _, name = r["disposition"].partition(":")
        assert name in {"rule": rules, "class": classes, "waiver": waivers}[kind], r["disposition"]
        if r["new"] == "template":
            assert r["template"] not in templates, r["template"]
        else:
            assert f"{r['file']}::{r['function']}::{r['template']}" not in keys
    assert data["templates"] == sum(r["new"] == "template" for r in data["sites"])


def test_the_right_category_count_holds_on_a_sample():
    """Every Nth between-release site (deterministic), run through the engine: at least as many
    right answers as recorded by the script."""
    data = _data()
    recorded = data["sample"]
    records = [{k: v for k, v in r.items() if k not in ("right", "measured")} for r in data["sites"]]
    result = between.measure(records, inv.Dispositions.load(), every=recorded["every"])
    assert result["user_facing"] == recorded["user_facing"]
    assert result["right"] >= recorded["right"], result
    assert data["full"]["right"] >= 0.95 * data["full"]["user_facing"]


def test_a_site_is_measured_in_the_context_of_its_newest_release():
    """A site last printed by a 0.4.x release gets 0.4.x's ServerArgs header; one a 0.5 release
    still prints, the 0.5 dict dump."""
    record = {"template": "x must be positive", "releases": ["0.4.8.post1", "0.4.9.post6"], "new": "template",
              "file": "srt/server_args.py", "line": 1, "function": "ServerArgs.__post_init__", "kind": "raise",
              "exception": "ValueError", "disposition": "class:class.args.server_args"}
    old = inv.synthetic_log(between.as_site(record), "startup.args", "args.invalid", release=between.release_of(record))
    assert "server_args=ServerArgs(" in old and "'model_path'" not in old
    newer = dict(record, releases=["0.4.9.post6", "0.5.2"])
    assert between.release_of(newer) is None
    assert "server_args={'model_path'" in inv.synthetic_log(between.as_site(newer), "startup.args", "args.invalid")
