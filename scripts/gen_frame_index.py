#!/usr/bin/env python3
"""Generate sglang_doctor/remedy/catalogs/frame-index.json: which SGLang releases had each
module path and each function name, for dating a log that has no launch header and no
ServerArgs dump from its traceback frames (remedy/frame_releases.py reads it).

    python scripts/gen_frame_index.py [WHEELS_DIR]

WHEELS_DIR (default ~/.cache/sglang-doctor/flag-catalogues/wheels, where
scripts/gen_flag_catalog.py keeps them) holds ``sglang-V-py3-none-any.whl`` for the releases
of the shipped flag catalogues (flags.KNOWN_VERSIONS); a missing wheel is fetched with
``pip download --no-deps sglang==V``.  Nothing is installed or imported: each wheel's file
list gives the module paths under ``sglang/`` and ``ast`` gives each module's function names
(every ``def``, nested or in a class: a traceback frame prints only the bare name).

Output (compact; numbers are indices into ``releases``, oldest first):

    {"releases": [...],
     "paths": {"srt/managers/scheduler.py": "0-91", ...},
     "functions": {"srt/managers/scheduler.py": "run_batch:3-91 get_idle_batch:0-40,44-50", ...}}

A value is the runs of consecutive releases that had the module (or function): "FIRST-LAST",
several joined by "," when it went away and came back.  Test modules (``test/``, ``tests/``,
``test_*.py``: never in a server's traceback) are left out; function names are kept for the
server's modules (``srt/``) only, and only those whose runs differ from their module's (a name
present whenever its module is carries no extra evidence).  The output is deterministic:
rerunning on the same wheels gives the same bytes.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "sglang_doctor" / "remedy" / "catalogs" / "frame-index.json"
DEFAULT_WHEELS = Path.home() / ".cache" / "sglang-doctor" / "flag-catalogues" / "wheels"


def _wheel(wheels: Path, version: str) -> Path:
    """The release's wheel (pure-Python up to 0.5.10, cp311 manylinux from 0.5.11 on)."""
    found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.11", "--platform", "manylinux_2_34_x86_64",
                        f"sglang=={version}", "-d", str(wheels)], check=True)
        found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    return found[0]


def _functions(source: bytes) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _release(path: Path) -> dict[str, set[str]]:
    """module path under sglang/ -> its function names, for one wheel (parsed once: kept
    next to the wheel as ``NAME.frames.json``, since parsing 92 wheels takes minutes)."""
    cache = path.with_name(path.name + ".frames.json")
    if cache.exists() and cache.stat().st_mtime >= path.stat().st_mtime:
        return {module: set(names) for module, names in json.loads(cache.read_text()).items()}
    found = {}
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            if name.startswith("sglang/") and name.endswith(".py"):
                found[name[len("sglang/"):]] = _functions(wheel.read(name))
    cache.write_text(json.dumps({module: sorted(names) for module, names in sorted(found.items())}))
    return found


def _runs(indices: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def _text(runs: list[list[int]]) -> str:
    return ",".join(f"{first}-{last}" for first, last in runs)


def _is_test(module: str) -> bool:
    parts = module.split("/")
    return any(p in ("test", "tests") for p in parts[:-1]) or parts[-1].startswith("test_")


def build(wheels: Path) -> dict:
    from sglang_doctor.remedy import flags

    releases = list(flags.KNOWN_VERSIONS)
    path_at: dict[str, list[int]] = {}
    func_at: dict[str, dict[str, list[int]]] = {}
    for index, version in enumerate(releases):
        print(f"{version}", file=sys.stderr)
        for module, names in _release(_wheel(wheels, version)).items():
            if _is_test(module):
                continue
            path_at.setdefault(module, []).append(index)
            if module.startswith("srt/"):
                for name in names:
                    func_at.setdefault(module, {}).setdefault(name, []).append(index)
    paths = {module: _text(_runs(at)) for module, at in sorted(path_at.items())}
    functions = {}
    for module, names in sorted(func_at.items()):
        differing = [f"{name}:{_text(_runs(at))}" for name, at in sorted(names.items())
                     if _text(_runs(at)) != paths[module]]
        if differing:
            functions[module] = " ".join(differing)
    return {"releases": releases, "paths": paths, "functions": functions}


def main(argv: list[str]) -> int:
    wheels = Path(argv[1]) if len(argv) > 1 else DEFAULT_WHEELS
    index = build(wheels)
    OUT.write_text(json.dumps(index, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(index['paths'])} paths)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
