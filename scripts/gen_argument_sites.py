#!/usr/bin/env python3
"""Generate sglang_doctor/diagnose/argument_sites.json: the messages of SGLang's argument checks,
as templates, for reading a refusal pasted as its exception line alone (issue 12, session 35).

A bare ``ValueError: ...`` line has no frame, so the class rules that read *where* a failure was
raised (class.args.server_args) cannot see that it came from an argument check.  Its text can:
every argument check of the inventoried releases (``data/inventory/sglang-VERSION.json``, made
by scripts/inventory_failures.py from each wheel) has its message as a template, literal text
with ``{expression}`` where an f-string puts a value.  This keeps, for every site whose right
answer is ``args.invalid`` (its disposition's category, as ``inventory_failures.right_answer``
gives it for the site's phase):

- (only a site whose args.invalid is its own: own_category) the template (the whole printed
  message where the inventory has it, else its cut form);
- the exception types the site raises (an assert: AssertionError);
- the releases of the five inventories that have it (the matcher prefers the release a log names);
- the switches its check reads: the ``self.foo`` / ``server_args.foo`` fields tested truthily
  in the ``if`` that guards the raise (or the assert's own test, negated), that are store_true
  flags of that release's catalogue.  A check that only runs when a switch is on is passed by
  removing that switch (the feature off), the change remedy ``site_switch_off`` offers.

A template is left out when it cannot identify its site:

- too little literal text (fewer than MIN_LITERAL characters or MIN_WORDS words outside its
  placeholders): ``{x} is not supported`` would match any refusal;
- a site of another category (any of the five inventories, every site kind) whose message the
  template also reads, or whose template reads this one's message (the same words mean two
  things: the text alone cannot say which).

Nothing is taken from a log.  Deterministic: rerunning on the same inventories and wheels gives
the same bytes.

    python scripts/gen_argument_sites.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402



OUT = ROOT / "sglang_doctor" / "diagnose" / "argument_sites.json"
MIN_LITERAL = 24   # literal characters outside the placeholders
MIN_WORDS = 4      # literal words (letters) outside the placeholders
_WORDS = re.compile(r"[A-Za-z]{2,}")


def site_regex(template: str) -> str:
    """The regex a message printed by ``template`` fully matches (runtime: argument_sites.py):
    literal text escaped with any run of spaces as ``\\s+``, a placeholder any text, a cut
    template (ending in "…") any continuation."""
    from sglang_doctor.diagnose.argument_sites import template_regex

    return template_regex(template)


def literal_ok(template: str) -> bool:
    literal = inv_mod.template_literal(template.rstrip("…"))
    return len(" ".join(literal.split())) >= MIN_LITERAL and len(_WORDS.findall(literal)) >= MIN_WORDS


# -- what the check reads ----------------------------------------------------------------------

_OWNERS = {"self", "server_args", "args", "sa"}


def _truthy_fields(test: ast.AST, negated: bool = False) -> list[str]:
    """Fields (``self.x`` / ``server_args.x``) that must be truthy for ``test`` to hold: the
    field alone, or an operand of an ``and`` chain (``not`` flips what holds)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _truthy_fields(test.operand, not negated)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and not negated:
        return [f for value in test.values for f in _truthy_fields(value)]
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and negated:
        # not (a or b): both false -- nothing must be truthy
        return []
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id in _OWNERS \
            and not negated:
        return [test.attr]
    return []


def guard_tests(tree: ast.Module) -> dict[int, list[ast.AST]]:
    """line -> the tests that must hold for the raise / assert on it (an ``if``'s test around a
    raise in its body; an assert's own test, negated): innermost first.  One walk per module."""
    found: dict[int, list[ast.AST]] = {}
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
    while stack:
        node, guards = stack.pop()
        if isinstance(node, (ast.Raise, ast.Assert)):
            tests = [ast.UnaryOp(op=ast.Not(), operand=node.test)] if isinstance(node, ast.Assert) else []
            found.setdefault(node.lineno, tests + list(reversed(guards)))
        for name, value in ast.iter_fields(node):
            inner = guards
            if isinstance(node, ast.If) and name == "body":
                inner = guards + [node.test]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                inner = []  # a definition's body: the guards of where it is defined do not hold inside
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.Module)):
                    stack.append((child, inner))
    return found


def checked_switches(guards: dict[int, list[ast.AST]], line: int, catalog) -> list[str]:
    """The store_true switches of ``catalog`` the guard of the site at ``line`` needs on."""
    out: list[str] = []
    for test in guards.get(line, [])[:2]:  # the check's own guard and the one around it
        for field in _truthy_fields(test):
            spec = catalog.by_dest(field)
            if spec is not None and not spec.takes_value and spec.action == "store_true" and spec.name not in out:
                out.append(spec.name)
    return out


class Sources:
    """The parsed modules of one release's wheel (None where the wheel is not at hand)."""

    def __init__(self, version: str):
        self.zip = None
        try:
            self.zip = zipfile.ZipFile(inv_mod.find_wheel(version, inv_mod.default_wheel_dir(), download=False))
        except SystemExit:
            pass
        self.guards: dict[str, dict[int, list[ast.AST]]] = {}

    def guards_of(self, path: str) -> dict[int, list[ast.AST]]:
        """The module's guard_tests (empty when its source is not at hand)."""
        if path not in self.guards:
            found: dict[int, list[ast.AST]] = {}
            if self.zip is not None:
                try:
                    found = guard_tests(ast.parse(self.zip.read("sglang/" + path).decode("utf-8-sig", errors="replace")))
                except (KeyError, SyntaxError, ValueError):
                    found = {}
            self.guards[path] = found
        return self.guards[path]


# -- the table ---------------------------------------------------------------------------------


def collect() -> tuple[list[dict], list[tuple[str, str]]]:
    """(argument sites, [(template, category)] of every other site), over the five releases."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.remedy import flags

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = inv_mod.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    by_phase = inv_mod.class_phase_categories()
    disp = inv_mod.Dispositions.load()
    table: dict[str, dict] = {}
    others: set[tuple[str, str]] = set()
    for version in inv_mod.DEFAULT_VERSIONS:
        inv = inv_mod.load_inventory(inv_mod.DEFAULT_OUT / f"sglang-{version}.json")
        catalog = flags.shipped_catalog(version)
        sources = Sources(version)
        for site in inv_mod.iter_sites(inv):
            template = " ".join((site.get("full") or site["template"]).split())
            right = inv_mod.right_answer(site, disp, categories, disp.phase(site), by_phase)
            if right != "args.invalid" or site["kind"].startswith("log") or not own_category(site, disp):
                others.add((template, right or "none"))
                continue
            exc = "AssertionError" if site["kind"] == "assert" else (site["exception"] or "").rsplit(".", 1)[-1]
            entry = table.setdefault(template, {"template": template, "exceptions": [], "releases": [],
                                                "switches": [], "sites": []})
            if exc and exc not in entry["exceptions"]:
                entry["exceptions"].append(exc)
            if version not in entry["releases"]:
                entry["releases"].append(version)
            for flag in checked_switches(sources.guards_of(site["file"]), site["line"], catalog):
                if flag not in entry["switches"]:
                    entry["switches"].append(flag)
            where = f"{version} {site['file']}:{site['line']}"
            if len(entry["sites"]) < 2:
                entry["sites"].append(where)
    return list(table.values()), sorted(others)


def own_category(site: dict, disp) -> bool:
    """The site's args.invalid is its own, not its place's or its phase's: not a waiver whose
    answer is the phase's (an internal invariant met at start-up), not a class whose category
    follows the phase; and a check the class layer names by its feature's module
    (class.feature.*: a quantization method, LoRA, disaggregation ...) only when its message
    names a setting a user makes (a --flag, a flag's field, an SGLANG_* switch): "The input size
    is not aligned with the quantized weight shape" is the checkpoint's, whatever module says it."""
    from sglang_doctor.diagnose.rules_engine import names_setting

    kind, _, name = site["disposition"].partition(":")
    if kind == "waiver" and disp.right.get(name) == "by_phase":
        return False
    if kind == "class" and name in inv_mod.class_phase_categories():
        return False
    if kind == "class" and name.startswith("class.feature."):
        return names_setting(inv_mod.template_literal(site.get("full") or site["template"]))
    return True


def _longest_literal(template: str) -> str:
    parts = [p.strip() for p in re.split(r"\{[^{}]*\}|…", template)]
    return max(parts, key=len) if parts else ""


def collides(entry: dict, others: list[dict]) -> bool:
    """Another category's site reads the same words (module docstring)."""
    from sglang_doctor.diagnose.argument_sites import template_regex

    mine = None
    my_samples = inv_mod.fillings(entry["template"].rstrip("…"))
    chunk = _longest_literal(entry["template"])
    for other in others:
        if not (chunk in other["template"] or other["chunk"] in entry["template"]):
            continue  # (a regex of one reads the other's message only when they share its longest words)
        mine = mine or re.compile(template_regex(entry["template"]), re.S)
        if any(mine.fullmatch(s) for s in other["samples"]):
            return True
        if any(other["regex"].fullmatch(s) for s in my_samples):
            return True
    return False


def _other_sites(others: list[tuple[str, str]]) -> list[dict]:
    """The other categories' templates that name a failure of their own (a message mostly
    placeholders, "{e}" or "Error: {msg}", names none and vetoes nothing)."""
    from sglang_doctor.diagnose.argument_sites import template_regex

    out = []
    for template in sorted({t for t, _ in others}):
        if literal_ok(template):
            out.append({"template": template, "chunk": _longest_literal(template),
                        "samples": inv_mod.fillings(template.rstrip("…")),
                        "regex": re.compile(template_regex(template), re.S)})
    return out


def build() -> dict:
    entries, others = collect()
    kept: list[dict] = []
    dropped_short = dropped_shared = 0
    other_sites = _other_sites(others)
    for entry in sorted(entries, key=lambda e: e["template"]):
        if not literal_ok(entry["template"]):
            dropped_short += 1
            continue
        if collides(entry, other_sites):
            dropped_shared += 1
            continue
        kept.append({k: entry[k] for k in ("template", "exceptions", "releases", "switches", "sites")})
    return {"about": "SGLang's argument checks' messages (scripts/gen_argument_sites.py; read by "
                     "sglang_doctor/diagnose/argument_sites.py)",
            "releases": list(inv_mod.DEFAULT_VERSIONS),
            "left_out": {"too_little_literal_text": dropped_short, "words_of_another_category": dropped_shared},
            "sites": kept}


COLUMNS = ("template", "exceptions", "releases", "switches", "sites")


def dumps(table: dict) -> str:
    """The table as shipped: one site a line, a row of COLUMNS (its releases as indexes into
    ``releases``), so a template the five releases share is stored once and the file stays
    small (session 36: 500 KB as one value a line, about 350 KB as rows)."""
    releases = table["releases"]
    head = {k: v for k, v in table.items() if k != "sites"}
    head["columns"] = list(COLUMNS)
    rows = [[site["template"], site["exceptions"], [releases.index(r) for r in site["releases"]],
             site["switches"], site["sites"]] for site in table["sites"]]
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))[:-1]
    body = ",\n".join(json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in rows)
    return text + ',"sites":[\n' + body + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = ap.parse_args(argv)
    text = dumps(build())
    status = inv_mod.check_or_write(OUT, text, args.check)
    if args.check:
        return status
    table = json.loads(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(table['sites'])} templates, {len(text.encode())} bytes; "
          f"left out {table['left_out']}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
