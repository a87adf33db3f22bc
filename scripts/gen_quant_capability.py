#!/usr/bin/env python3
"""Generate sglang_doctor/remedy/catalogs/quant-min-capability.json from SGLang's source.

    python scripts/gen_quant_capability.py RELEASES_DIR

RELEASES_DIR holds one directory per release with its wheel unpacked (``pip install
--no-deps --target``), as scripts/gen_flag_catalog.py leaves them in its cache
(~/.cache/sglang-doctor/flag-catalogues/releases).  For each release it reads
``sglang/srt/layers/quantization/__init__.py``'s method -> config-class table and each class's
``get_min_capability()`` (the number ``model_loader/loader.py`` compares with the GPU's
``major*10+minor`` before raising "The quantization method X is not supported for the
current GPU"), without importing anything.  A platform branch (``60 if not _is_musa else 21``)
takes the CUDA value; ``Fp8Config`` returns 100 for ``mxfp8`` and 80 otherwise.  The output
lists, per method, runs of consecutive releases with the same minimum and where it is
defined (file:line in the first release of the run).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "sglang_doctor" / "remedy" / "catalogs" / "quant-min-capability.json"


def _classes(quant_dir: Path) -> dict[str, tuple[ast.expr, str, ast.ClassDef]]:
    found = {}
    for path in sorted(quant_dir.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "get_min_capability":
                        returns = [n.value for n in ast.walk(item)
                                   if isinstance(n, ast.Return) and n.value is not None]
                        if returns and node.name not in found:
                            where = f"{path.relative_to(quant_dir.parents[2])}:{item.lineno}"
                            found[node.name] = (returns[0], where, node)
    return found


def _value(expr: ast.expr, method: str, classes: dict, depth: int = 0) -> int | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
        return expr.value
    if isinstance(expr, ast.IfExp):
        test = ast.unparse(expr.test)
        if "mxfp8" in test:
            return _value(expr.body if method == "mxfp8" else expr.orelse, method, classes, depth)
        platform = re.search(r"_is_(musa|npu|hip|xpu|cpu)", test)
        if platform:
            negated = isinstance(expr.test, ast.UnaryOp) and isinstance(expr.test.op, ast.Not)
            return _value(expr.body if negated else expr.orelse, method, classes, depth)
        return None
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and isinstance(expr.func.value, ast.Name) and depth < 3):
        target = classes.get(expr.func.value.id)
        if target:
            return _value(target[0], method, classes, depth + 1)
    return None


def release_table(release: Path) -> dict[str, tuple[int, str]]:
    quant_dir = release / "sglang" / "srt" / "layers" / "quantization"
    init = (quant_dir / "__init__.py").read_text(encoding="utf-8")
    classes = _classes(quant_dir)
    table: dict[str, tuple[int, str]] = {}
    for method, cls in re.findall(r'"([\w-]+)":\s*(\w+),', init):
        if method in table or cls not in classes:
            continue  # the first registration is the CUDA one (later ones: CPU/XPU/NPU)
        value = _value(classes[cls][0], method, classes)
        if value is not None:
            table[method] = (value, classes[cls][1])
    return table


def main(argv: list[str] | None = None) -> int:
    from sglang_doctor.remedy.flags import version_key

    releases_dir = Path((argv or sys.argv[1:])[0])
    releases = sorted((p for p in releases_dir.iterdir() if (p / "sglang").is_dir()),
                      key=lambda p: version_key(p.name))
    runs: dict[str, list[dict]] = {}
    previous: dict[str, int] = {}
    previous_release: str | None = None
    for release in releases:
        table = release_table(release)
        for method, (value, where) in table.items():
            run = runs.setdefault(method, [])
            if run and previous.get(method) == value and run[-1]["last"] == previous_release:
                run[-1]["last"] = release.name
            else:
                run.append({"first": release.name, "last": release.name, "min_capability": value,
                            "source": where})
        previous = {m: v for m, (v, _) in table.items()}
        previous_release = release.name
    document = {
        "_doc": "SGLang quantization methods: the minimum GPU capability (major*10+minor) "
                "their config's get_min_capability() returns, per run of releases; "
                "model_loader/loader.py raises ValueError below it. Generated by "
                "scripts/gen_quant_capability.py from the releases' source.",
        "methods": dict(sorted(runs.items())),
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(runs)} methods over {len(releases)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
