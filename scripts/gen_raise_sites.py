#!/usr/bin/env python3
"""Generate sglang_doctor/diagnose/raise_sites.json: what SGLang's own ``raise`` / ``assert`` statements
fail as, per function, for reading a traceback cut just above its exception line (issue 12, session 36).

A traceback whose last line (``ValueError: ...``) was cut off still shows the deepest frame's source line;
when that line is a ``raise X(`` or an ``assert`` of SGLang's own code, the exception was raised right there,
by one of the failure sites the inventories list (``data/inventory/sglang-VERSION.json``, made by
scripts/inventory_failures.py from each wheel).  Their right answers (``inventory_failures.right_answer``:
the specific rule that names the message, the class rule, or the waiver group's answer, at the site's own
phase) say what such a raise is.  This keeps, for every function of the five inventoried releases with a
raise or assert site, one row per distinct site:

    [kind ("raise" | "assert"), exception (last part of its name; "AssertionError" for an assert),
     category (the right answer; "none" for a request's rejection, never an incident; "by_phase" for an
     internal check, whose category is the step it failed in; "unnamed" for a waiver answered ``other``
     for want of a better answer),
     head (the template's literal start, up to HEAD characters, before its first placeholder)]

keyed ``"srt/path/module.py::function"`` (the function's last name: a traceback prints ``co_name``).  The
libraries under SGLang whose sites are inventoried too (``data/inventory/external-*.json``,
scripts/inventory_external.py: FlashInfer, sgl-kernel, Triton, transformers, vLLM, DeepGEMM, xgrammar) are
read the same way, keyed by their path inside the wheel (``flashinfer/jit/core.py::build``), with their
dispositions (``external-dispositions.yaml``).  The
sites of test and debug code (right answer ``excluded``) and logged lines (no raise in the frame) are left
out.  Nothing is taken from a log.  Deterministic: rerunning on the same inventories gives the same bytes.

    python scripts/gen_raise_sites.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402


OUT = ROOT / "sglang_doctor" / "diagnose" / "raise_sites.json"
HEAD = 40  # literal characters of a template's start kept to tell the sites of one function apart
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def head_of(template: str) -> str:
    """The template's literal start, before its first placeholder, spaces collapsed."""
    text = " ".join(template.split()).rstrip("…")
    m = _PLACEHOLDER.search(text)
    return (text[:m.start()] if m else text)[:HEAD]


BY_PHASE = "by_phase"
UNNAMED = "unnamed"
EXTERNAL_DISPOSITIONS = inv_mod.DEFAULT_OUT / "external-dispositions.yaml"


def external_inventories() -> list[Path]:
    """The inventories of the libraries under SGLang (scripts/inventory_external.py), by name."""
    return sorted(p for p in inv_mod.DEFAULT_OUT.glob("external-*.json") if p.name != "external-measured.json")


def _unnamed(site: dict, disp, right: str) -> bool:
    """A waiver whose answer is ``other`` for want of a better one (the libraries' ``library_other`` /
    ``library_api_contract``: "names neither a flag, nor hardware, nor a package"): the site names no
    category, unlike a class rule's ``other``."""
    kind, _, _ = site["disposition"].partition(":")
    return kind == "waiver" and right == "other"


def _follows_phase(site: dict, disp, by_phase: dict) -> bool:
    """The site's right answer is its phase's (an internal invariant: ``by_phase`` waivers, class rules
    with ``category_by_phase``), so the site itself names no category."""
    kind, _, name = site["disposition"].partition(":")
    return (kind == "waiver" and disp.right.get(name) == "by_phase") or (kind == "class" and name in by_phase)


def site_rows():
    """(site, the inventory it is of, its row's category, its right answer) for every raise / assert site of
    the inventories (SGLang's five releases, then the libraries'), test and debug code left out."""
    from sglang_doctor.diagnose.rules_engine import RuleSet

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = inv_mod.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    by_phase = inv_mod.class_phase_categories()
    disp = inv_mod.Dispositions.load()
    sources = [(f"sglang-{v}", inv_mod.load_inventory(inv_mod.DEFAULT_OUT / f"sglang-{v}.json"), disp)
               for v in inv_mod.DEFAULT_VERSIONS]
    ext_disp = inv_mod.Dispositions.load(EXTERNAL_DISPOSITIONS)
    sources += [(path.stem.removeprefix("external-"), json.loads(path.read_text(encoding="utf-8")), ext_disp)
                for path in external_inventories()]
    for name, inv, dispositions in sources:
        for site in inv_mod.iter_sites(inv):
            if site["kind"] not in ("raise", "assert"):
                continue
            right = inv_mod.right_answer(site, dispositions, categories, dispositions.phase(site), by_phase)
            if right in (None, "excluded"):
                continue
            row = right
            if _follows_phase(site, dispositions, by_phase):
                row = BY_PHASE  # an internal check: the category of the step it failed in, not its own
            elif _unnamed(site, dispositions, right):
                row = UNNAMED
            yield site, name, row, right


def exception_of(site: dict) -> str:
    return "AssertionError" if site["kind"] == "assert" else (site["exception"] or "").rsplit(".", 1)[-1]


def build() -> dict:
    table: dict[str, set[tuple[str, str, str, str]]] = {}
    for site, _, row, _ in site_rows():
        key = f"{site['file']}::{site['function'].rsplit('.', 1)[-1]}"
        table.setdefault(key, set()).add((site["kind"], exception_of(site), row,
                                          head_of(site.get("full") or site["template"])))
    return {"about": "what SGLang's raise / assert sites fail as, per function (scripts/gen_raise_sites.py; "
                     "read by sglang_doctor/diagnose/raise_sites.py)",
            "releases": list(inv_mod.DEFAULT_VERSIONS),
            "libraries": [path.stem.removeprefix("external-") for path in external_inventories()],
            "functions": {key: [list(row) for row in sorted(rows)] for key, rows in sorted(table.items())}}


def dumps(table: dict) -> str:
    return json.dumps(table, indent=None, separators=(",", ":"), ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = ap.parse_args(argv)
    text = dumps(build())
    status = inv_mod.check_or_write(OUT, text, args.check)
    if args.check:
        return status
    table = json.loads(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(table['functions'])} functions, "
          f"{sum(len(v) for v in table['functions'].values())} sites")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
