#!/usr/bin/env python3
"""SGLang's failure surface, from its source: every user-facing failure site and who names it.

For each SGLang release's wheel this reads every module under ``sglang/srt`` with ``ast``
(nothing is imported or executed) and lists the sites where SGLang fails on purpose:

- ``raise X(message...)`` (a bare ``raise``, a re-raise of a bound name and ``raise X()``
  without a message are not sites: they carry no message of their own);
- ``assert cond, message`` (an assert without a message is an internal check);
- ``logger.error / critical / exception(message...)``.

Each site records its file, line, function (``Class.method``), kind, exception type, and its
message as a template: literal text with ``{expression}`` where an f-string, ``%`` or
``.format`` puts a value.  Each site then gets a disposition, from ``dispositions.yaml``
(hand-maintained) and the rule pack:

1. ``sites:`` in dispositions.yaml, keyed by the stable site key ``file::function::template``
   (no line number, so line shifts between releases keep the entry);
2. ``rule:<id>``: a specific rule of ``rules/`` whose regex matches the message (its
   placeholders filled with sample values) and whose exception type fits;
3. ``patterns:`` in dispositions.yaml, in order: waivers (internal invariants only a code bug
   reaches, request-level errors that are not incidents) and class choices by message;
4. ``areas:`` in dispositions.yaml: the class rule that covers the site by where it is (the
   module), mirroring the class rules' ``where`` logic;
5. otherwise ``unaccounted`` (tests/diagnose/test_inventory.py allows none for 0.5.23).

Output: ``data/inventory/sglang-VERSION.json``, byte-for-byte reproducible from the wheel,
the rule pack and dispositions.yaml.  Wheels are taken from ``--wheel-dir`` (default
``~/.cache/sglang-doctor/wheels``) or downloaded there with ``pip download --no-deps``.

    python scripts/inventory_failures.py                      # 0.5.9 and 0.5.23, write
    python scripts/inventory_failures.py --check              # compare with the shipped files
    python scripts/inventory_failures.py --versions 0.5.23 --measure
                                                              # + run the engine on each site
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_VERSIONS = ("0.5.9", "0.5.23")
DEFAULT_OUT = ROOT / "data" / "inventory"
DISPOSITIONS = DEFAULT_OUT / "dispositions.yaml"
LOG_METHODS = {"error", "critical", "exception"}
LOGGER_NAMES = {"logger", "logging", "log", "_logger", "LOGGER"}
TEMPLATE_MAX = 160  # longer messages are cut (the key keeps the same cut)

# The class ids of issue #12 (and the few more rules/classes.yaml added) with the category
# each names; rules/classes.yaml, when present, is the authority (class_categories()).
CLASS_CATEGORIES = {
    "class.kernel.undefined_symbol": "kernel.build",
    "class.kernel.jit_frames": "kernel.build",
    "class.network.bind": "network.port",
    "class.model.weight_key": "model.load",
    "class.model.load_message": "model.load",
    "class.args.value_check": "args.invalid",
    "class.memory.pool_message": "memory.kv_pool",
    "class.runtime.device_assert": "runtime.crash",
    "class.args.server_args": "args.invalid",
    "class.args.flag_named": "args.invalid",
    "class.hw.capability": "kernel.unsupported_hw",
    "class.model.load": "model.load",
    "class.model.unsupported_arch": "model.unsupported",
    "class.nccl.distributed": "nccl",
    "class.memory.pool": "memory.kv_pool",
    "class.memory.torch_oom": "memory.cuda_oom",
    "class.memory.host_enomem": "memory.host_oom",
    "class.kernel.triton_resources": "kernel.unsupported_hw",
    "class.kernel.jit_build": "kernel.build",
    "class.kernel.import_error": "other",
    "class.cuda_graph.runner": "cuda_graph",
    "class.runtime.after_ready": "runtime.crash",
}


def class_categories(rules_dir: Path = ROOT / "rules") -> dict[str, str]:
    """Class id -> category: rules/classes.yaml when it is there, else the list above."""
    path = rules_dir / "classes.yaml"
    if path.is_file():
        data = _load_yaml(path) or {}
        found = {r["id"]: r["category"] for r in data.get("rules", []) if isinstance(r, dict) and "id" in r}
        if found:
            return found
    return dict(CLASS_CATEGORIES)


# -- reading a wheel ------------------------------------------------------------------------


def default_wheel_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sglang-doctor" / "wheels"


def find_wheel(version: str, wheel_dir: Path, download: bool = True) -> Path:
    """The wheel of ``sglang==version`` in ``wheel_dir``, downloaded there when missing."""
    def existing() -> list[Path]:
        return sorted(p for p in wheel_dir.glob(f"sglang-{version}-*.whl"))

    found = existing()
    if not found and download:
        wheel_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"sglang=={version}",
                        "-d", str(wheel_dir)], check=True)
        found = existing()
    if not found:
        raise SystemExit(f"no wheel for sglang=={version} in {wheel_dir}")
    return found[0]


def sources(wheel: Path):
    """(path inside sglang/, source text) of every module under sglang/srt, sorted."""
    with zipfile.ZipFile(wheel) as zf:
        names = sorted(n for n in zf.namelist() if n.startswith("sglang/srt/") and n.endswith(".py"))
        for name in names:
            yield name[len("sglang/"):], zf.read(name).decode("utf-8-sig", errors="replace")


# -- message templates ----------------------------------------------------------------------
# A template is a list of parts: str for literal text, None-tagged tuples for placeholders.
# Rendered, a placeholder is "{expression}" and literal braces are doubled.


class Placeholder(str):
    """A placeholder's expression text (a str subclass, to tell it from literal text)."""


def _unparse(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - ast.unparse handles every expression of 3.9+
        text = "?"
    return " ".join(text.split())[:60]


def _percent_parts(fmt: str, args: list[ast.AST]) -> list:
    parts: list = []
    pos = 0
    it = iter(args)
    for m in re.finditer(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdifrxXeEgGc%]", fmt):
        parts.append(fmt[pos:m.start()])
        if m.group(0) == "%%":
            parts.append("%")
        else:
            arg = next(it, None)
            parts.append(Placeholder(_unparse(arg) if arg is not None else "arg"))
        pos = m.end()
    parts.append(fmt[pos:])
    return parts


def _format_parts(fmt: str, args: list[ast.AST], keywords: dict[str, ast.AST]) -> list:
    parts: list = []
    pos = 0
    auto = iter(args)
    for m in re.finditer(r"\{\{|\}\}|\{([^{}]*)\}", fmt):
        parts.append(fmt[pos:m.start()])
        if m.group(0) in ("{{", "}}"):
            parts.append(m.group(0)[0])
        else:
            field = (m.group(1) or "").split(":")[0].split("!")[0]
            if field == "":
                arg = next(auto, None)
            elif field.isdigit():
                arg = args[int(field)] if int(field) < len(args) else None
            else:
                arg = keywords.get(field.split(".")[0].split("[")[0])
            parts.append(Placeholder(_unparse(arg) if arg is not None else field or "arg"))
        pos = m.end()
    parts.append(fmt[pos:])
    return parts


def template_parts(node: ast.AST | None, extra_args: list[ast.AST] | None = None) -> list:
    """The message of an expression as literal text and placeholders."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return _percent_parts(node.value, extra_args) if extra_args else [node.value]
        return [Placeholder(repr(node.value))]
    if isinstance(node, ast.JoinedStr):
        parts: list = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append(Placeholder(_unparse(value.value)))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return template_parts(node.left) + template_parts(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        right = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        return _percent_parts(node.left.value, list(right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        return _format_parts(node.func.value.value, list(node.args), keywords)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return [Placeholder(_unparse(node))]
    return [Placeholder(_unparse(node))]


def render(parts: list, limit: int | None = TEMPLATE_MAX) -> str:
    out = []
    for part in parts:
        if isinstance(part, Placeholder):
            out.append("{" + part + "}")
        else:
            out.append(part.replace("{", "{{").replace("}", "}}"))
    text = " ".join("".join(out).split())  # one line: newlines and runs of spaces collapse
    if limit is not None and len(text) > limit:
        text = text[:limit - 1] + "…"  # cut: the stored template ends with an ellipsis
    return text


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def template_literal(template: str) -> str:
    """The template's literal text, placeholders removed (for keyword matching)."""
    return _PLACEHOLDER.sub(lambda m: m.group(0)[0] if m.group(0) in ("{{", "}}") else " ", template)


# Sample values a placeholder takes when a rule's regex is checked against a template; a rule
# covers a site when its regex matches the message with any of these fillings.
_NUMERIC_NAME = re.compile(r"size|len|num|count|tokens|mem|fraction|ratio|_bs\b|bs$|dim|capab|sm\b|version|"
                           r"rank|port|max|min|layers|heads|page|window|tp\b|dp\b|pp\b|gb|mb|bytes", re.I)


def fillings(template: str) -> list[str]:
    def fill(chooser) -> str:
        return _PLACEHOLDER.sub(lambda m: m.group(0)[0] if m.group(0) in ("{{", "}}") else chooser(m.group(1)),
                                template)

    return [
        fill(lambda expr: "131072" if _NUMERIC_NAME.search(expr) else "X"),
        fill(lambda expr: "0.88" if _NUMERIC_NAME.search(expr) else "X"),
        fill(lambda expr: "-561981" if _NUMERIC_NAME.search(expr) else "x"),
        fill(lambda expr: "['X']"),
        fill(lambda expr: "1"),
    ]


# -- finding the sites ----------------------------------------------------------------------


def _exc_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _unparse(node)
    return "?"


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str):
        self.path = path
        self.stack: list[str] = []
        self.functions: list[ast.AST] = []
        self.sites: list[dict] = []

    def _scoped(self, node, name):
        self.stack.append(name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_ClassDef(self, node):
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node):
        self.functions.append(node)
        self._scoped(node, node.name)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _message(self, node: ast.AST, extra_args=None) -> list:
        """A message's parts; a local name built earlier in the function (``msg = "..."``,
        ``msg += f"..."``) is replaced by what was assigned to it."""
        if isinstance(node, ast.Name) and self.functions:
            parts: list = []
            for stmt in sorted((n for n in ast.walk(self.functions[-1])
                                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                                and n.lineno < node.lineno), key=lambda n: n.lineno):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if not any(isinstance(t, ast.Name) and t.id == node.id for t in targets) or stmt.value is None:
                    continue
                value = template_parts(stmt.value)
                if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
                    parts += value
                else:
                    parts = value
            if parts and any(not isinstance(p, Placeholder) and p.strip() for p in parts):
                return parts
        return template_parts(node, extra_args)

    def _add(self, node, kind, exc, parts):
        if not render(parts).strip():
            return  # an empty message: nothing to name
        self.sites.append({"file": self.path, "line": node.lineno, "function": ".".join(self.stack) or "<module>",
                           "kind": kind, "exception": exc, "template": render(parts),
                           "full": render(parts, None)})

    def visit_Return(self, node):
        # an error factory (``return RuntimeError(f"...")``, raised by its caller)
        value = node.value
        if isinstance(value, ast.Call) and re.search(r"(Error|Exception)$", _exc_name(value)):
            self._raise_site(node, value)
        self.generic_visit(node)

    def visit_Raise(self, node):
        exc = node.exc
        if isinstance(exc, ast.Call) and not _exc_name(exc).rsplit(".", 1)[-1][:1].isupper():
            pass  # ``raise make_error(...)``: the factory's own ``return XError(...)`` is the site
        else:
            self._raise_site(node, exc)
        self.generic_visit(node)

    def _raise_site(self, node, exc):
        if isinstance(exc, ast.Call) and (exc.args or exc.keywords):
            msg = exc.args[0] if exc.args else next((k.value for k in exc.keywords if k.arg in ("msg", "message", "detail")), None)
            if msg is not None:
                self._add(node, "raise", _exc_name(exc), self._message(msg))

    def visit_Assert(self, node):
        if node.msg is not None:
            self._add(node, "assert", "AssertionError", self._message(node.msg))
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and node.args:
            owner = func.value
            name = owner.id if isinstance(owner, ast.Name) else (owner.attr if isinstance(owner, ast.Attribute) else "")
            if name in LOGGER_NAMES:
                self._add(node, "log." + func.attr, "", self._message(node.args[0], list(node.args[1:])))
        self.generic_visit(node)


def find_sites(path: str, text: str) -> list[dict]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    finder = _Finder(path)
    finder.visit(tree)
    return finder.sites


def site_key(site: dict) -> str:
    return f"{site['file']}::{site['function']}::{site['template']}"


# -- dispositions ---------------------------------------------------------------------------


def _load_yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


class Dispositions:
    """dispositions.yaml: explicit sites, then ordered patterns (waivers, classes by message
    or by area).  A pattern's keys are ANDed; a list value is an OR:

        path:      fnmatch globs on the site's file (srt/...)
        function:  regex searched in the function's qualified name
        kind:      raise | assert | log (log.* kinds)
        exception: exception class names (last dotted part)
        message:   regex searched in the template's literal text (case-insensitive)
    """

    def __init__(self, data: dict):
        self.waivers: dict[str, str] = dict(data.get("waivers") or {})
        self.sites: dict[str, str] = {}
        for entry in data.get("sites") or []:
            self.sites[entry["key"]] = entry["disposition"]
        self.patterns: list[dict] = []
        for entry in data.get("patterns") or []:
            pat = dict(entry)
            if "message" in pat:
                pat["_message"] = re.compile(pat["message"], re.I)
            if "function" in pat:
                pat["_function"] = re.compile(pat["function"])
            for key in ("path", "exception", "kind"):
                if isinstance(pat.get(key), str):
                    pat[key] = [pat[key]]
            self.patterns.append(pat)

    @classmethod
    def load(cls, path: Path = DISPOSITIONS) -> "Dispositions":
        return cls(_load_yaml(path) or {})

    def by_pattern(self, site: dict) -> str | None:
        literal = template_literal(site["template"])
        kind = site["kind"].split(".")[0]
        exc = site["exception"].rsplit(".", 1)[-1]
        for pat in self.patterns:
            if "path" in pat and not any(fnmatch.fnmatchcase(site["file"], g) for g in pat["path"]):
                continue
            if "kind" in pat and kind not in pat["kind"]:
                continue
            if "exception" in pat and exc not in pat["exception"]:
                continue
            if "_function" in pat and not pat["_function"].search(site["function"]):
                continue
            if "_message" in pat and not pat["_message"].search(literal):
                continue
            return pat["disposition"]
        return None


class RuleMatcher:
    """Which specific rule of the pack names a site's message (class rules are not specific)."""

    def __init__(self, rules_dir: Path | None = None):
        from sglang_doctor.diagnose.rules_engine import RuleSet, load_rule_file

        if rules_dir is None:
            rules = RuleSet.load(builtin=True, user=False).rules
        else:
            problems: list[str] = []
            rules = [r for p in sorted(rules_dir.glob("*.yaml")) for r in load_rule_file(p, None, problems)]
        self.rules = [r for r in rules if not r.id.startswith("class.") and (r.message is not None or r.line_rx is not None)]

    def match(self, site: dict) -> str | None:
        kind = site["kind"].split(".")[0]
        exc = "AssertionError" if kind == "assert" else site["exception"].rsplit(".", 1)[-1]
        texts = fillings(site.get("full") or site["template"])
        best = None
        for rule in self.rules:
            if kind == "log":
                rx = rule.line_rx  # a logged line: only line rules see it
            else:
                rx = rule.message if rule.message is not None else rule.line_rx
                if rule.message is not None and rule.exceptions and not rule.in_chain:
                    wanted = {e.rsplit(".", 1)[-1] for e in rule.exceptions}
                    if exc not in wanted and "Exception" not in wanted:
                        continue
            if rx is None:
                continue
            if any(rx.search(t) for t in texts):
                if best is None or (rule.priority, rule.id) > (best.priority, best.id):
                    best = rule
        return best.id if best else None


def dispose(site: dict, disp: Dispositions, rules: RuleMatcher) -> str:
    key = site_key(site)
    if key in disp.sites:
        return disp.sites[key]
    rule = rules.match(site)
    if rule:
        return f"rule:{rule}"
    return disp.by_pattern(site) or "unaccounted"


# -- the inventory ----------------------------------------------------------------------------


def inventory(version: str, wheel: Path, disp: Dispositions, rules: RuleMatcher) -> dict:
    sites: list[dict] = []
    for path, text in sources(wheel):
        sites += find_sites(path, text)
    files: dict[str, list] = {}
    counts: Counter = Counter()
    for site in sites:
        d = dispose(site, disp, rules)
        counts[d.split(":", 1)[0]] += 1
        files.setdefault(site["file"], []).append(
            [site["line"], site["function"], site["kind"], site["exception"], site["template"], d])
    return {"sglang_version": version, "wheel": wheel.name, "sites": len(sites),
            "counts": dict(sorted(counts.items())), "files": files}


def dumps(inv: dict) -> str:
    """Compact, stable JSON: one line per file, sites in source order."""
    head = {k: v for k, v in inv.items() if k != "files"}
    lines = ["{" + json.dumps(head, sort_keys=True, ensure_ascii=False)[1:-1] + ', "files": {']
    items = sorted(inv["files"].items())
    for i, (path, sites) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(path)}: {json.dumps(sites, ensure_ascii=False, separators=(',', ':'))}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def iter_sites(inv: dict):
    for path, sites in inv["files"].items():
        for line, function, kind, exc, template, d in sites:
            yield {"file": path, "line": line, "function": function, "kind": kind, "exception": exc,
                   "template": template, "disposition": d}


# -- measuring: what the engine says about each site ------------------------------------------


def synthetic_log(site: dict) -> str:
    """The log a failure at this site leaves: a 0.5.23 scheduler traceback ending in the
    site's frame and message (placeholders filled), or the logged line itself."""
    message = fillings(site["template"])[0]
    stamp = "[2026-01-01 00:00:00 TP0]"
    if site["kind"].startswith("log"):
        return f"{stamp} {message}\n"
    exc = "AssertionError" if site["kind"] == "assert" else site["exception"]
    func = site["function"].rsplit(".", 1)[-1]
    return (f"{stamp} Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3100, '
            f"in run_scheduler_process\n    scheduler = Scheduler(\n"
            f'  File "/usr/local/lib/python3.12/dist-packages/sglang/{site["file"]}", line {site["line"]}, '
            f"in {func}\n    raise\n{exc}: {message}\n\n")


def expected_category(disposition: str, categories: dict[str, str]) -> str | None:
    kind, _, name = disposition.partition(":")
    if kind in ("rule", "class"):
        return categories.get(name)
    return None


def measure(inv: dict, verbose: bool = False) -> dict:
    """Run the engine (every layer present in rules/) on each site's synthetic log.

    A site counts as right when the engine's incident has the category of the rule or class
    its disposition names: the category of where and how it failed.  Waived sites have no
    expected category; what the engine says about them is counted per waiver.
    """
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    out: Counter = Counter()
    wrong: Counter = Counter()
    for site in iter_sites(inv):
        want = expected_category(site["disposition"], categories)
        pipe = StreamPipeline(ruleset, remediate=False)
        events = pipe.feed(synthetic_log(site).encode()) + pipe.finish()
        got = [ev["category"] for ev in events if ev["event"] == "incident"]
        kind = site["disposition"].split(":", 1)[0]
        out[f"{kind}.sites"] += 1
        if want is not None and want in got:
            out[f"{kind}.right"] += 1
        elif want is not None:
            wrong[f"{site['disposition']} -> {','.join(got) or 'none'}"] += 1
        else:
            out[f"{kind}.engine:{got[0] if got else 'none'}"] += 1
    if verbose:
        for key, n in wrong.most_common(40):
            print(f"    {n:5d} {key}")
    return dict(sorted(out.items()))


# -- command line -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="+", default=list(DEFAULT_VERSIONS))
    ap.add_argument("--wheel-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--dispositions", type=Path, default=DISPOSITIONS)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    ap.add_argument("--measure", action="store_true", help="run the engine on a synthetic log of every site")
    ap.add_argument("--show", default=None, help="print the sites whose disposition starts with this")
    args = ap.parse_args(argv)
    wheel_dir = args.wheel_dir or default_wheel_dir()
    disp = Dispositions.load(args.dispositions)
    rules = RuleMatcher()
    status = 0
    for version in args.versions:
        inv = inventory(version, find_wheel(version, wheel_dir), disp, rules)
        text = dumps(inv)
        target = args.out / f"sglang-{version}.json"
        if args.check:
            same = target.is_file() and target.read_text(encoding="utf-8") == text
            print(f"{target}: {'up to date' if same else 'DIFFERS'}")
            status |= 0 if same else 1
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        c = inv["counts"]
        print(f"sglang {version}: {inv['sites']} sites; rule {c.get('rule', 0)}, class {c.get('class', 0)}, "
              f"waiver {c.get('waiver', 0)}, unaccounted {c.get('unaccounted', 0)}")
        if args.show:
            for site in iter_sites(inv):
                if site["disposition"].startswith(args.show):
                    print(f"  {site['file']}:{site['line']} {site['function']} [{site['exception'] or site['kind']}] "
                          f"{site['template'][:140]} -> {site['disposition']}")
        if args.measure:
            print(f"  engine on synthetic logs: {measure(inv, verbose=True)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
