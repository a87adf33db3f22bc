"""bench/site_shapes.py: each inventory site rendered into the shapes people paste, each shape
faithful to what SGLang / torch print, and the engine's answers counted per shape.  The shapes
are checked on real sites of the shipped 0.5.23 inventory; the bench itself runs as a real
subprocess on a deterministic sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402
import site_shapes  # noqa: E402


@pytest.fixture(scope="module")
def sites():
    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / "sglang-0.5.23.json")
    out = {}
    for site in inv_mod.iter_sites(inv):
        if site["kind"] == "assert" and site["file"].startswith("srt/arg_groups/"):
            out.setdefault("args_assert", site)
        elif site["kind"] == "raise" and site["file"].startswith("srt/managers/"):
            out.setdefault("scheduler_raise", site)
        elif site["kind"].startswith("log") and not site["kind"].endswith(".raise"):
            out.setdefault("logged", site)
    assert set(out) == {"args_assert", "scheduler_raise", "logged"}
    return out


def test_each_shape_holds_what_it_says(sites):
    site = sites["args_assert"]
    msg = "tp_size must be divisible by moe_dp_size"
    bare = site_shapes.render("bare", site, msg, "assert ...")
    assert bare == f"AssertionError: {msg}\n"
    wrapped = site_shapes.render("wrapped", site, msg, "assert ...")
    assert "Scheduler hit an exception: Traceback (most recent call last):" in wrapped
    assert f'{site["file"]}", line {site["line"]}' in wrapped and wrapped.rstrip().endswith(msg)
    cut = site_shapes.render("cut", site, msg, "assert ...")
    assert msg not in cut and cut.rstrip().endswith("assert ...")
    for i, prefix in enumerate(site_shapes.PREFIXES):
        prefixed = site_shapes.render("prefixed", site, msg, "assert ...", i)
        assert all(line.startswith(prefix) for line in prefixed.splitlines())
    dead = site_shapes.render("dead", site, msg, "assert ...")
    assert "Rank 0 scheduler is dead" in dead and dead.rstrip().endswith("EOFError")
    spawned = site_shapes.render("spawned", site, msg, "assert ...")
    assert "-- Process 0 terminated with the following error:" in spawned and "resolve_once" in spawned
    assert site_shapes.render("logged", site, msg, "assert ...") is None


def test_shapes_that_do_not_apply_are_not_rendered(sites):
    raise_site, log_site = sites["scheduler_raise"], sites["logged"]
    # a scheduler-side site never raises inside the caller of sgl.Engine(...)
    assert site_shapes.render("spawned", raise_site, "x", "raise ...") is None
    # nor does a serving failure go through the start-up wait
    assert site_shapes.render("dead", raise_site, "x", "raise ...", phase="serving") is None
    assert "event_loop_overlap" in site_shapes.render("wrapped", raise_site, "x", "raise ...", phase="serving")
    assert site_shapes.render("logged", log_site, "m", "") == f"[{site_shapes.STAMP} TP0] m\n"
    assert site_shapes.render("wrapped", log_site, "m", "") is None


def test_the_bench_counts_every_shape_it_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "site_shapes.py"), "--every", "1000",
                           "--shapes", "wrapped", "cut", "--json"], capture_output=True, text=True, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    for shape in ("wrapped", "cut"):
        r = res["shapes"][shape]
        assert r["sites"] > 0 and 0 <= r["right"] <= r["sites"]
        assert sum(r["answered"].values()) == r["sites"] - r["right"]
        assert sum(c["sites"] for c in r["by_category"].values()) == r["sites"]
    # the full traceback names more sites right than the one cut above its exception line
    assert res["shapes"]["wrapped"]["right"] >= res["shapes"]["cut"]["right"]


def test_an_unknown_release_is_a_one_line_error():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "site_shapes.py"), "--version", "9.9.9"],
                          capture_output=True, text=True, cwd=str(ROOT))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
