#!/usr/bin/env python3
"""What can fail under a function of SGLang: the frame -> category table of the best guess.

A traceback whose text was cut above its exception line still says where the process was: its
deepest SGLang frame (file and function).  SGLang's own source says what can fail there.  The
failure inventory (scripts/inventory_failures.py, data/inventory/sglang-VERSION.json) lists,
per release, every failure site (``raise``, ``assert`` with a message, ``logger.error``) with
its file, function and disposition (the rule or class that names it, or a waiver with the
answer it should get).  This script adds a static call graph of the same release's source
(``ast`` only: nothing is imported or run) and writes, for every function, the categories of
the failure sites reachable from it: its own sites and those of the functions it calls, up to
``DEPTH`` calls down.  A call is followed when it is resolved without running anything:

- ``self.name(...)``: the method ``name`` of the same class (same file);
- ``name(...)``: a function of the same module, or a name imported from another SGLang
  module (``from sglang.srt.x import name``, relative imports too); a class called is its
  ``__init__`` (and ``__post_init__`` for a dataclass);
- nothing else (``obj.method(...)`` on another object, dynamic dispatch: not followed).

A site counts once per function however many paths reach it.  A waiver's site counts with the
answer the dispositions give it (``right:``; a waiver whose answer is ``none``, ``excluded`` or
the phase's, ``by_phase``, is left out: it is no failure of its own category).  Functions are
keyed by their bare name (a traceback prints ``in load_model``, not ``ModelRunner.load_model``);
two functions of one file with the same bare name share their sites.

Output: ``sglang_doctor/diagnose/frame_sites.json`` (shipped with the package, read by
diagnose/frame_sites.py): per release, ``totals`` (the release's sites per category) and
``functions`` (file -> function -> {category: sites}, only functions that reach a site), byte-for-byte reproducible from the wheels, the shipped
inventories and the rule pack.  Wheels come from ``~/.cache/sglang-doctor/wheels`` (or
``--wheel-dir``), downloaded with ``pip download --no-deps`` when missing.

    python scripts/frame_sites.py            # write sglang_doctor/diagnose/frame_sites.json
    python scripts/frame_sites.py --check    # compare with the shipped file
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv  # noqa: E402

OUT = ROOT / "sglang_doctor" / "diagnose" / "frame_sites.json"
DEPTH = 2  # calls followed below a function (its callees and theirs)
SKIPPED_ANSWERS = ("none", "excluded", "by_phase", None)


# -- the call graph of one release -------------------------------------------------------------


def module_of(path: str) -> str:
    """``srt/managers/scheduler.py`` -> ``sglang.srt.managers.scheduler``."""
    return "sglang." + path[:-3].replace("/", ".").removesuffix(".__init__")


def _imported(tree: ast.Module, module: str, is_package: bool) -> dict[str, tuple[str, str]]:
    """Local name -> (SGLang module, name in it) for the module's ``from ... import`` lines."""
    out: dict[str, tuple[str, str]] = {}
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if not source.startswith("sglang."):
            continue
        for alias in node.names:
            out[alias.asname or alias.name] = (source, alias.name)
    return out


def _calls(body: ast.AST) -> tuple[set[str], set[str]]:
    """(names called bare, methods called on ``self``) anywhere in a function's body."""
    bare, own = set(), set()
    for node in ast.walk(body):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name):
            bare.add(fn.id)
        elif isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "self":
            own.add(fn.attr)
    return bare, own


def _functions(tree: ast.Module):
    """(class name or None, function node) of the module's functions and its classes' methods."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node.name, item


def call_graph(wheel: Path) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(file, qualified function) -> the (file, qualified function) it calls, resolved statically."""
    modules: dict[str, str] = {}  # module -> file
    parsed = []
    for path, text in inv.sources(wheel):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        modules[module_of(path)] = path
        parsed.append((path, tree))
    defined: dict[str, set[str]] = {}  # file -> qualified names
    classes: dict[str, set[str]] = {}
    for path, tree in parsed:
        defined[path] = {f"{cls}.{fn.name}" if cls else fn.name for cls, fn in _functions(tree)}
        classes[path] = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}

    def target(path: str, name: str) -> list[tuple[str, str]]:
        if name in defined.get(path, ()):
            return [(path, name)]
        if name in classes.get(path, ()):
            return [(path, f"{name}.{init}") for init in ("__init__", "__post_init__")
                    if f"{name}.{init}" in defined[path]]
        return []

    graph: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for path, tree in parsed:
        imports = _imported(tree, module_of(path), path.endswith("__init__.py"))
        for cls, fn in _functions(tree):
            bare, own = _calls(fn)
            out: set[tuple[str, str]] = set()
            for name in bare:
                found = target(path, name)
                if not found and name in imports:
                    source, original = imports[name]
                    if source in modules:
                        found = target(modules[source], original)
                out.update(found)
            if cls:
                out.update((path, f"{cls}.{name}") for name in own if f"{cls}.{name}" in defined[path])
            graph[(path, f"{cls}.{fn.name}" if cls else fn.name)] = out
    return graph


# -- the table --------------------------------------------------------------------------------


def site_categories(inventory: dict, disp: inv.Dispositions, categories: dict[str, str]):
    """(file, qualified function) -> {site key: category} of an inventory's sites."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for site in inv.iter_sites(inventory):
        kind, _, name = site["disposition"].partition(":")
        if kind == "waiver":
            answer = disp.right.get(name)
        elif kind in ("rule", "class"):
            answer = categories.get(name)
        else:
            answer = None
        if answer in SKIPPED_ANSWERS:
            continue
        out.setdefault((site["file"], site["function"]), {})[f"{site['file']}:{site['line']}"] = answer
    return out


def reachable(graph, start: tuple[str, str], depth: int = DEPTH) -> set[tuple[str, str]]:
    """``start`` and the functions it reaches in at most ``depth`` calls."""
    seen, frontier = {start}, {start}
    for _ in range(depth):
        frontier = {callee for fn in frontier for callee in graph.get(fn, ())} - seen
        seen |= frontier
    return seen


def release_table(version: str, wheel: Path, disp: inv.Dispositions, categories: dict[str, str]) -> dict:
    """``totals`` (sites per category) and ``functions`` (file -> bare function name -> {category:
    reachable sites}) for one release."""
    inventory = inv.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    sites = site_categories(inventory, disp, categories)
    graph = call_graph(wheel)
    for key in sites:
        graph.setdefault(key, set())
    merged: dict[tuple[str, str], dict[str, str]] = {}
    for fn in graph:
        found: dict[str, str] = {}
        for reached in reachable(graph, fn):
            found.update(sites.get(reached, {}))
        if found:
            merged.setdefault((fn[0], fn[1].rsplit(".", 1)[-1]), {}).update(found)
    table: dict[str, dict[str, dict[str, int]]] = {}
    for (path, name), found in sorted(merged.items()):
        counts: dict[str, int] = {}
        for category in found.values():
            counts[category] = counts.get(category, 0) + 1
        table.setdefault(path, {})[name] = dict(sorted(counts.items()))
    totals: dict[str, int] = {}
    for found in sites.values():
        for category in found.values():
            totals[category] = totals.get(category, 0) + 1
    return {"totals": dict(sorted(totals.items())), "functions": table}


def build(versions, wheel_dir: Path) -> dict:
    from sglang_doctor.diagnose.rules_engine import RuleSet

    disp = inv.Dispositions.load()
    categories = inv.class_categories()
    categories.update({r.id: r.category for r in RuleSet.load(builtin=True, user=False).rules})
    releases = {v: release_table(v, inv.find_wheel(v, wheel_dir), disp, categories) for v in versions}
    return {"depth": DEPTH, "releases": releases}


def dumps(table: dict) -> str:
    return json.dumps(table, indent=None, separators=(",", ":"), sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped table")
    ap.add_argument("--wheel-dir", type=Path, default=inv.default_wheel_dir())
    ap.add_argument("--versions", default=",".join(inv.DEFAULT_VERSIONS))
    args = ap.parse_args(argv)
    return inv.check_or_write(OUT, dumps(build(args.versions.split(","), args.wheel_dir)), args.check)


if __name__ == "__main__":
    sys.exit(main())
