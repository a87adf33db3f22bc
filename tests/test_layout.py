"""The package's folders are its stages, and data flows one way through them.

Every ``import`` of every module (at module level and inside functions) is read with ``ast``;
a module may import only its own stage, earlier stages and the foundation modules.  The
order is docs/DESIGN.md's: read -> incidents -> diagnose -> remedy -> (pipeline, report)
-> run -> cli.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "sglang_doctor"

# rank of each stage; a module may import ranks <= its own
FOUNDATION = {"model", "exit_codes", "atomic_file", "interrupts", "__init__", "rules", "program_cache"}
RANK = {"read": 1, "incidents": 2, "diagnose": 3, "remedy": 4, "pipeline": 5, "confirm_wait": 5, "report": 5,
        "export": 5, "run": 6, "cli": 7, "__main__": 8}


def _stage(module: str) -> str:
    """'sglang_doctor.read.reader' -> 'read'; 'sglang_doctor.model' -> 'model'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rank(stage: str) -> int:
    if stage in FOUNDATION:
        return 0
    assert stage in RANK, f"{stage!r} is neither a stage folder nor a foundation module: add it to the layout"
    return RANK[stage]


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    here = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: -node.level]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append((node.lineno, mod))
            # `from sglang_doctor import read` names a stage as well
            if mod == "sglang_doctor":
                found += [(node.lineno, f"sglang_doctor.{a.name}") for a in node.names
                          if (PACKAGE / a.name).is_dir() or (PACKAGE / f"{a.name}.py").is_file()]
    return [(line, mod) for line, mod in found if mod.split(".")[0] == "sglang_doctor"]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def test_every_module_sits_in_a_known_stage():
    for path in _modules():
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        _rank(_stage(mod))


def test_no_import_from_a_later_stage():
    problems = []
    for path in _modules():
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = _rank(_stage(mod))
        for line, target in _imports(path):
            theirs = _rank(_stage(target))
            if theirs > mine:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {target} (a later stage)")
    assert not problems, "\n".join(problems)


def test_no_cycle_between_stage_folders():
    edges: dict[str, set[str]] = {}
    for path in _modules():
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        src = _stage(mod)
        for _, target in _imports(path):
            dst = _stage(target)
            if dst != src:
                edges.setdefault(src, set()).add(dst)

    def reaches(a: str, b: str, seen: set[str]) -> bool:
        for nxt in edges.get(a, ()):
            if nxt == b or (nxt not in seen and reaches(nxt, b, seen | {nxt})):
                return True
        return False

    cycles = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if reaches(b, a, {b}))
    assert not cycles, cycles


def test_every_stage_folder_says_what_it_takes_and_gives():
    for folder in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.name in RANK):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text()))
        assert doc and "takes" in doc.lower() and "gives" in doc.lower(), folder


def test_tests_mirror_the_layout():
    for folder in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name in RANK):
        assert (ROOT / "tests" / folder.name).is_dir(), f"tests/{folder.name}/ is missing"


def test_importing_the_cli_pulls_in_neither_sglang_nor_torch():
    code = ("import sys, sglang_doctor.cli, sglang_doctor.cli.run, sglang_doctor.cli.plan, "
            "sglang_doctor.cli.rules; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sglang', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout
