"""bench/site_shapes.py's session-36 shapes: each holds what its docstring says, on real sites of
the shipped 0.5.23 inventory, and the engine reads the ones with a type as that type."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import incident_events

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402
import site_shapes  # noqa: E402

MSG = "tp_size must be divisible by moe_dp_size"


@pytest.fixture(scope="module")
def sites():
    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / "sglang-0.5.23.json")
    out = {}
    for site in inv_mod.iter_sites(inv):
        if site["kind"] == "raise" and site["exception"] == "ValueError" and site["file"].startswith("srt/arg_groups/"):
            out.setdefault("args_raise", site)
        elif site["kind"].startswith("log") and not site["kind"].endswith(".raise"):
            out.setdefault("logged", site)
    assert set(out) == {"args_raise", "logged"}
    return out


def test_each_new_shape_holds_what_it_says(sites):
    site = sites["args_raise"]
    render = site_shapes.render
    assert render("message", site, MSG, "raise ...") == MSG + "\n"
    loggers = [render("logger", site, MSG, "raise ...", i) for i in range(3)]
    assert all(text.rstrip().endswith(MSG) and "ERROR" in text and "ValueError" not in text for text in loggers)
    assert render("launcher", site, MSG, "raise ...", 0) == f"Exception: ValueError: {MSG}\n"
    assert render("launcher", site, MSG, "raise ...", 1) == f"RuntimeError: {MSG} (exit code 1)\n"
    chained = render("chained", site, MSG, "raise ...")
    assert chained.index(f"ValueError: {MSG}") < chained.index("direct cause") < chained.index("RuntimeError: failed")
    ray = render("ray_task", site, MSG, "raise ...")
    assert ray.startswith("ray.exceptions.RayTaskError(ValueError): ray::") and ray.rstrip().endswith(MSG)
    record = json.loads(render("json", site, MSG, "raise ..."))
    assert record["level"] == "ERROR" and record["message"].startswith("Scheduler hit an exception: Traceback")
    assert record["message"].endswith(f"ValueError: {MSG}")
    frames = render("frames_only", site, MSG, "raise ...")
    assert "raise ..." not in frames and frames.count('  File "') == 2 and frames.rstrip().endswith(MSG)
    wrapped = render("termwrap", site, MSG, "raise ...")
    assert max(len(line) for line in wrapped.splitlines()) <= 80
    assert wrapped.replace("\n", "") == render("wrapped", site, MSG, "raise ...").replace("\n", "")


def test_a_logged_site_has_only_its_message_shapes(sites):
    site = sites["logged"]
    assert site_shapes.render("message", site, "m", "") is None  # (its "bare" shape is that already)
    assert site_shapes.render("logger", site, "m", "", 0) == "ERROR:sglang.srt.managers.scheduler:m\n"
    for shape in ("launcher", "chained", "ray_task", "json", "frames_only", "termwrap"):
        assert site_shapes.render(shape, site, "m", "") is None


def test_the_launcher_shape_reads_as_the_bare_exception(pack, sites):
    site = sites["args_raise"]
    (wrapped,) = incident_events(pack, site_shapes.render("launcher", site, MSG, "raise ...", 0))
    (bare,) = incident_events(pack, site_shapes.render("bare", site, MSG, "raise ..."))
    assert (wrapped["category"], wrapped["rule"]) == (bare["category"], bare["rule"])
