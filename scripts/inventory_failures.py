#!/usr/bin/env python3
"""SGLang's failure surface, from its source: every user-facing failure site and who names it.

For each SGLang release's wheel this reads every module under ``sglang/srt`` with ``ast``
(nothing is imported or executed) and lists the sites where SGLang fails on purpose:

- ``raise X(message...)`` (a bare ``raise``, a re-raise of a bound name and ``raise X()``
  without a message are not sites: they carry no message of their own);
- ``assert cond, message`` (an assert without a message is an internal check);
- ``logger.error / critical / exception(message...)``; one that a ``raise`` follows in the same
  block is kind ``log.<method>.raise`` (the line is printed and the failure goes on): it is
  disposed of as a raise and probed as the line followed by the raise's traceback.

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

    python scripts/inventory_failures.py                      # 0.4.3.post2 ... 0.5.23, write
    python scripts/inventory_failures.py --check              # compare with the shipped files
    python scripts/inventory_failures.py --versions 0.5.23 --measure
                                                              # + run the engine on each site
"""

from __future__ import annotations

import functools
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

# 0.4.6.post5: the 0.4.x line many pasted logs come from (module layout and wordings of 0.4);
# 0.4.3.post2 and 0.5.4 (session 28): the most-pasted releases of the tuned corpus parts' labels
# the other three do not stand for (0.4.3.x, before srt/model_loader's 0.4.4 moves and the
# sgl-kernel switch; 0.5.2-0.5.5, between 0.4.x's layout and 0.5.9's)
DEFAULT_VERSIONS = ("0.4.3.post2", "0.4.6.post5", "0.5.4", "0.5.9", "0.5.23")
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
    """Class id -> category: every ``class.*`` rule of the pack's files (rules/classes.yaml and the
    files that add class rules of their own), else the list above."""
    found: dict[str, str] = {}
    for path in sorted(rules_dir.glob("*.yaml")) if rules_dir.is_dir() else ():
        data = _load_yaml(path) or {}
        rules = data.get("rules", []) if isinstance(data, dict) else data
        found.update({r["id"]: r["category"] for r in rules or []
                      if isinstance(r, dict) and str(r.get("id", "")).startswith("class.")})
    return found or dict(CLASS_CATEGORIES)


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


def _cut(text: str, limit: int = TEMPLATE_MAX) -> str:
    """A rendered one-line text cut as ``render`` cuts a template."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


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


class Constants:
    """The string constants a message's placeholders may name, as the release defines them: a
    module-level ``NAME = "..."`` of the site's module or of the sglang module it imports NAME
    from (``from sglang.kernels.plugin_kernels.amd.spec import FLAG``), and a class body's
    ``NAME = "..."`` read as ``cls.NAME`` / ``self.NAME`` / ``Class.NAME`` in that class.  SGLang
    prints their text where the source has the name, so the measure's synthetic message does too
    (a placeholder it cannot resolve keeps a sample value).  The template, the site's key, keeps
    the name."""

    def __init__(self, read):
        self._read = read  # path inside the wheel (sglang/...) -> source text, or None
        self._modules: dict[str, tuple[dict, dict, dict]] = {}

    @staticmethod
    def _literal(node) -> str | None:
        parts = template_parts(node) if node is not None else []
        if parts and not any(isinstance(p, Placeholder) for p in parts):
            return "".join(parts)
        return None

    def module(self, path: str, tree: ast.Module | None = None) -> tuple[dict, dict, dict]:
        """(constants, imports, class constants) of a module (path under sglang/'s parent)."""
        if path in self._modules:
            return self._modules[path]
        consts: dict[str, str] = {}
        imports: dict[str, tuple[str, str]] = {}
        classes: dict[str, dict[str, str]] = {}
        self._modules[path] = (consts, imports, classes)
        if tree is None:
            text = self._read(path)
            try:
                tree = ast.parse(text) if text is not None else None
            except SyntaxError:
                tree = None
        if tree is None:
            return consts, imports, classes
        package = path.rsplit("/", 1)[0].split("/")
        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = self._literal(stmt.value)
                for t in targets:
                    if isinstance(t, ast.Name):
                        if value is None:
                            consts.pop(t.id, None)  # rebound to something else: not a constant
                        else:
                            consts[t.id] = value
            elif isinstance(stmt, ast.ImportFrom) and (stmt.module is not None or stmt.level):
                if stmt.level:
                    base = package[:len(package) - (stmt.level - 1)] if stmt.level > 1 else package
                    mod = "/".join(base + (stmt.module.split(".") if stmt.module else []))
                else:
                    mod = stmt.module.replace(".", "/")
                if not mod.startswith("sglang"):
                    continue
                for alias in stmt.names:
                    imports[alias.asname or alias.name] = (mod, alias.name)
            elif isinstance(stmt, ast.ClassDef):
                table = classes.setdefault(stmt.name, {})
                for item in stmt.body:
                    if isinstance(item, (ast.Assign, ast.AnnAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        value = self._literal(item.value)
                        for t in targets:
                            if isinstance(t, ast.Name) and value is not None:
                                table[t.id] = value
        return consts, imports, classes

    def name(self, path: str, name: str, depth: int = 0) -> str | None:
        consts, imports, _ = self.module(path)
        if name in consts:
            return consts[name]
        if name in imports and depth < 4:
            mod, orig = imports[name]
            for candidate in (mod + ".py", mod + "/__init__.py"):
                if self._read(candidate) is not None:
                    return self.name(candidate, orig, depth + 1)
        return None

    def resolve(self, path: str, classes: list[str], expr: str) -> str | None:
        """The text of a placeholder's expression, when it names a string constant."""
        if re.fullmatch(r"[A-Za-z_]\w*", expr):
            return self.name(path, expr)
        m = re.fullmatch(r"(cls|self|[A-Z]\w*)\.([A-Za-z_]\w*)", expr)
        if m:
            table = self.module(path)[2]
            owners = [m.group(1)] if m.group(1) not in ("cls", "self") else classes[::-1]
            for owner in owners:
                if m.group(2) in table.get(owner, {}):
                    return table[owner][m.group(2)]
        return None


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, constants: Constants | None = None):
        self.path = path
        self.constants = constants
        self.classes: list[str] = []  # the enclosing classes, innermost last
        self.stack: list[str] = []
        self.functions: list[ast.AST] = []
        self.sites: list[dict] = []
        self.raised_after: set[int] = set()  # logger calls a raise follows in their block

    def _scoped(self, node, name):
        self.stack.append(name)
        self.generic_visit(node)
        self.stack.pop()

    def generic_visit(self, node):
        # a logger call followed, later in the same block, by a raise: the line is printed
        # and then the failure goes on (a traceback follows in the log), not handled
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for i, stmt in enumerate(stmts):
                    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                            and any(isinstance(x, ast.Raise) for x in stmts[i + 1:])):
                        self.raised_after.add(id(stmt.value))
        super().generic_visit(node)

    def visit_ClassDef(self, node):
        self.classes.append(node.name)
        self._scoped(node, node.name)
        self.classes.pop()

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
        printed = parts
        if self.constants is not None:  # the constants a placeholder names, as SGLang prints them
            printed = [self._constant(p) if isinstance(p, Placeholder) else p for p in parts]
        self.sites.append({"file": self.path, "line": node.lineno, "function": ".".join(self.stack) or "<module>",
                           "kind": kind, "exception": exc, "template": render(parts),
                           "full": render(printed, None), "resolved": render(printed)})

    def _constant(self, placeholder: Placeholder):
        if str(placeholder) in self._local_names():
            return placeholder  # a parameter or a local of the function, not the module's constant
        text = self.constants.resolve("sglang/" + self.path, self.classes, str(placeholder))
        return placeholder if text is None else text

    def _local_names(self) -> set[str]:
        names: set[str] = set()
        for fn in self.functions:
            a = fn.args
            names |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
            names |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        return names

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
                kind = "log." + func.attr + (".raise" if id(node) in self.raised_after else "")
                self._add(node, kind, "", self._message(node.args[0], list(node.args[1:])))
        self.generic_visit(node)


def find_sites(path: str, text: str, finder_class: type | None = None, constants: Constants | None = None) -> list[dict]:
    """The sites of one source file, found by ``_Finder`` (or a subclass that looks for other calls);
    with ``constants``, a site's ``full`` and ``resolved`` texts hold the string constants its
    placeholders name."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    if constants is not None:
        constants.module("sglang/" + path, tree)
        finder = (finder_class or _Finder)(path, constants)
    else:
        finder = (finder_class or _Finder)(path)
    finder.visit(tree)
    return finder.sites


def site_key(site: dict) -> str:
    return f"{site['file']}::{site['function']}::{site['template']}"


# -- dispositions ---------------------------------------------------------------------------


def _load_yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _pattern_kind(kind: str) -> str:
    """raise / assert / log; a logged line a raise follows (``log.error.raise``) is a raise:
    the failure goes on after the line, so the raise patterns (and their right answers) hold."""
    return "raise" if kind.endswith(".raise") else kind.split(".")[0]


# the exception a logged-then-raised site is taken to raise (its own is not in the site)
_LOGGED_RAISE = {"raise": "RuntimeError"}


class Dispositions:
    """dispositions.yaml: explicit sites, then ordered patterns (waivers, classes by message
    or by area).  A pattern's keys are ANDed; a list value is an OR:

        path:      fnmatch globs on the site's file (srt/...)
        function:  regex searched in the function's qualified name
        kind:      raise | assert | log (log.* kinds)
        exception: exception class names (last dotted part)
        message:   regex searched in the template's literal text (case-insensitive)
        phase / phase_not: the site's phase (``phases:``) is / is not this one
        path_not:  fnmatch globs the site's file matches none of
        names_setting: the message does (true) / does not (false) name a setting a user makes
                   (a --flag, an SGLANG_* switch, a flag's foo_bar field: the engine's test)
    """

    def __init__(self, data: dict):
        self.waivers: dict[str, str] = dict(data.get("waivers") or {})
        self.right: dict[str, str] = dict(data.get("right") or {})
        self.phases: list[tuple[dict, str]] = [
            (self._compile({k: v for k, v in entry.items() if k != "phase"}), entry["phase"])
            for entry in data.get("phases") or []]
        self.sites: dict[str, str] = {}
        for entry in data.get("sites") or []:
            self.sites[entry["key"]] = entry["disposition"]
        self.patterns: list[dict] = [self._compile(entry) for entry in data.get("patterns") or []]

    @staticmethod
    def _compile(entry: dict) -> dict:
        pat = dict(entry)
        if "message" in pat:
            pat["_message"] = re.compile(pat["message"], re.I)
        if "function" in pat:
            pat["_function"] = re.compile(pat["function"])
        for key in ("path", "path_not", "exception", "kind"):
            if isinstance(pat.get(key), str):
                pat[key] = [pat[key]]
        return pat

    @staticmethod
    def _fits(pat: dict, site: dict, phase: str | None = None) -> bool:
        if "path" in pat and not any(fnmatch.fnmatchcase(site["file"], g) for g in pat["path"]):
            return False
        if "path_not" in pat and any(fnmatch.fnmatchcase(site["file"], g) for g in pat["path_not"]):
            return False
        if "kind" in pat and _pattern_kind(site["kind"]) not in pat["kind"]:
            return False
        if "exception" in pat and (site["exception"] or _LOGGED_RAISE.get(_pattern_kind(site["kind"]), "")).rsplit(".", 1)[-1] not in pat["exception"]:
            return False
        if "_function" in pat and not pat["_function"].search(site["function"]):
            return False
        if "phase" in pat and pat["phase"] != phase:
            return False
        if "phase_not" in pat and pat["phase_not"] == phase:  # a class rule with after_ready: false
            return False
        # the message as SGLang prints it (the constants its placeholders name), cut as the template is
        text = template_literal(site.get("resolved") or site["template"])
        if "_message" in pat and not pat["_message"].search(text):
            return False
        if "names_setting" in pat:
            from sglang_doctor.diagnose.rules_engine import names_setting

            if names_setting(text) != pat["names_setting"]:
                return False
        return True

    def phase(self, site: dict) -> str:
        """The phase the site fails in as far as its place tells (``phases:``), else unknown."""
        for pat, phase in self.phases:
            if self._fits(pat, site):
                return phase
        return "unknown"

    @classmethod
    def load(cls, path: Path = DISPOSITIONS) -> "Dispositions":
        return cls(_load_yaml(path) or {})

    def by_pattern(self, site: dict) -> str | None:
        phase = self.phase(site)
        for pat in self.patterns:
            if self._fits(pat, site, phase):
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
        # (a rule with match.line_also also needs a second line of the incident, the watchdog's
        # py-spy dump: one site's text alone never shows it)
        self.rules = [r for r in rules if not r.id.startswith("class.") and (r.message is not None or r.line_rx is not None)
                      and getattr(r, "line_also", None) is None]

    def match(self, site: dict) -> str | None:
        kind = site["kind"].split(".")[0]
        exc = "AssertionError" if kind == "assert" else site["exception"].rsplit(".", 1)[-1]
        if site["kind"].endswith(".raise"):  # the line, then a raise: both kinds of rule see it
            kind, exc = "raise", _LOGGED_RAISE["raise"]
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
            if rx is None or not _can_be_in_frames(rule, site):
                continue
            if any(rx.search(t) for t in texts):
                if best is None or (rule.priority, rule.id) > (best.priority, best.id):
                    best = rule
        return best.id if best else None


def _can_be_in_frames(rule, site: dict) -> bool:
    """A rule that also asks for frames (``match.frames``) names a site only when the site's own
    function or file is one of those frames: its message alone (``'\\S'`` in a rule that names a
    failure by where it happened) says nothing about a site raised elsewhere."""
    patterns = tuple(rule.frames_sequence) + tuple(rule.frames_all) + tuple(rule.frames_any)
    if not patterns:
        return True
    function, path = site.get("function") or "", site.get("file") or ""
    return any(p == function or function.endswith("." + p) or (p in path) for p in patterns)


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
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        constants = Constants(lambda name: zf.read(name).decode("utf-8-sig", errors="replace") if name in names else None)
        for path, text in sources(wheel):
            sites += find_sites(path, text, constants=constants)
    files: dict[str, list] = {}
    counts: Counter = Counter()
    full: dict[str, str] = {}  # a template cut at TEMPLATE_MAX or naming a constant: its whole printed text, for the measure
    printed: dict[str, str] = {}  # a template naming a string constant: the whole text SGLang prints (printed-VERSION.json)
    for site in sites:
        if site["full"] != site["template"]:
            full[site_key(site)] = site["full"]
        if site["resolved"] != site["template"]:
            printed[site_key(site)] = site["full"]
        d = dispose(site, disp, rules)
        counts[d.split(":", 1)[0]] += 1
        files.setdefault(site["file"], []).append(
            [site["line"], site["function"], site["kind"], site["exception"], site["template"], d])
    return {"sglang_version": version, "wheel": wheel.name, "sites": len(sites),
            "counts": dict(sorted(counts.items())), "files": files, "_full": full, "_printed": printed}


def dumps(inv: dict) -> str:
    """Compact, stable JSON: one line per file, sites in source order."""
    head = {k: v for k, v in inv.items() if k != "files" and not k.startswith("_")}
    lines = ["{" + json.dumps(head, sort_keys=True, ensure_ascii=False)[1:-1] + ', "files": {']
    items = sorted(inv["files"].items())
    for i, (path, sites) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(path)}: {json.dumps(sites, ensure_ascii=False, separators=(',', ':'))}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


def printed_path(version: str, out: Path = DEFAULT_OUT) -> Path:
    return out / f"printed-{version}.json"


def check_or_write(path: Path, text: str, check: bool) -> int:
    """With ``check``: 0 when ``path`` holds ``text`` ("up to date"), else 1 ("DIFFERS"); without:
    ``text`` written to ``path`` (its folder made), 0.  Every inventory script's --check."""
    if check:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        print(f"{path}: {'up to date' if same else 'DIFFERS'}")
        return 0 if same else 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return 0


def dumps_printed(inv: dict) -> str:
    """printed-VERSION.json: for each site whose message names a string constant (``{FLAG}``,
    ``{cls._ERR}``), the whole text SGLang prints, keyed like the site (the shipped inventory holds
    the template, which keeps the name)."""
    return json.dumps(dict(sorted((inv.get("_printed") or {}).items())), indent=0, ensure_ascii=False) + "\n"


def load_inventory(path: Path) -> dict:
    """A shipped inventory with the printed texts of its sites that name a constant."""
    inv = json.loads(path.read_text(encoding="utf-8"))
    printed = printed_path(inv["sglang_version"], path.parent)
    if printed.is_file():
        inv["_printed"] = json.loads(printed.read_text(encoding="utf-8"))
    return inv


def iter_sites(inv: dict):
    """The sites of an inventory; ``full`` is the whole message when the inventory was just made
    from the wheel (a shipped file holds only the template, cut at TEMPLATE_MAX characters)."""
    full = inv.get("_full") or {}
    printed = inv.get("_printed") or {}
    for path, sites in inv["files"].items():
        for line, function, kind, exc, template, d in sites:
            site = {"file": path, "line": line, "function": function, "kind": kind, "exception": exc,
                    "template": template, "disposition": d}
            key = site_key(site)
            site["full"] = full.get(key) or printed.get(key) or template
            # the printed text cut as the template is (what the dispositions' patterns read)
            site["resolved"] = _cut(printed[key]) if key in printed else template
            yield site


# -- measuring: what the engine says about each site ------------------------------------------

STAMP = "2026-01-01 00:00:{:02d}"
PREFIX = "/usr/local/lib/python3.12/dist-packages/sglang/"
# What SGLang 0.5.23 prints before a failure in each phase (the milestone lines the engine
# reads the phase from, sglang-notes 1.3); a serving failure comes after the ready line.
_CONTEXT = {
    "startup.distributed": ["Init torch distributed begin."],
    "startup.load_weights": ["Init torch distributed ends. elapsed=0.52 s, mem usage=0.41 GB",
                             "Load weight begin. avail mem=78.50 GB"],
    "startup.memory_pool": ["Init torch distributed ends. elapsed=0.52 s, mem usage=0.41 GB",
                            "Load weight begin. avail mem=78.50 GB",
                            "Load weight end. elapsed=38.12 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
                            "avail mem=62.31 GB, mem usage=16.19 GB."],
    "startup.cuda_graph": ["Init torch distributed ends. elapsed=0.52 s, mem usage=0.41 GB",
                           "Load weight begin. avail mem=78.50 GB",
                           "Load weight end. elapsed=38.12 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
                           "avail mem=62.31 GB, mem usage=16.19 GB.",
                           "KV Cache is allocated. #tokens: 420000, K size: 24.00 GB, V size: 24.00 GB",
                           "Memory pool end. avail mem=13.20 GB",
                           "Capture cuda graph begin. This can take up to several minutes. avail mem=13.10 GB"],
    "serving": ["The server is fired up and ready to roll!"],
}
# a start-up failure at a step the site's place does not tell: the launch's dump only
_DUMP = ("server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'tokenizer_path': "
         "'meta-llama/Llama-3.1-8B-Instruct', 'host': '127.0.0.1', 'port': 30000, 'tp_size': 2, "
         "'mem_fraction_static': 0.88, 'sglang_version': '0.5.23'}")


# What a 0.4.x release prints instead (0.4.3.post3-0.4.10.post2 model_runner.py and
# memory_pool.py: no elapsed times, "mem usage" only after distributed init; the milestone
# wordings of tests/incidents/test_milestones_releases.py), and its launch header: the
# ServerArgs dataclass's repr (``server_args=ServerArgs(model_path=..., ...)``), not a dict.
_CONTEXT_04 = {
    "startup.distributed": ["Init torch distributed begin."],
    "startup.load_weights": ["Init torch distributed ends. mem usage=0.41 GB",
                             "Load weight begin. avail mem=78.50 GB"],
    "startup.memory_pool": ["Init torch distributed ends. mem usage=0.41 GB",
                            "Load weight begin. avail mem=78.50 GB",
                            "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
                            "avail mem=62.31 GB, mem usage=16.19 GB."],
    "startup.cuda_graph": ["Init torch distributed ends. mem usage=0.41 GB",
                           "Load weight begin. avail mem=78.50 GB",
                           "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
                           "avail mem=62.31 GB, mem usage=16.19 GB.",
                           "KV Cache is allocated. #tokens: 420000, K size: 24.00 GB, V size: 24.00 GB",
                           "Memory pool end. avail mem=13.20 GB",
                           "Capture cuda graph begin. This can take up to several minutes. avail mem=13.10 GB"],
    "serving": ["The server is fired up and ready to roll!"],
}
_LAUNCH = {"model_path": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_path": "meta-llama/Llama-3.1-8B-Instruct",
           "host": "127.0.0.1", "port": 30000, "tp_size": 2, "mem_fraction_static": 0.88}


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _server_args_repr(wheel: Path) -> str:
    """``ServerArgs(...)`` as the release's dataclass prints it: its fields in order, each at
    its literal default (None where the default is computed), the launch's values set."""
    with zipfile.ZipFile(wheel) as zf:
        tree = ast.parse(zf.read("sglang/srt/server_args.py").decode("utf-8", errors="replace"))
    fields: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ServerArgs":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    name = stmt.target.id
                    try:
                        value = ast.literal_eval(stmt.value) if stmt.value is not None else None
                    except Exception:  # a computed default (field(default_factory=...), a call)
                        value = None
                    fields.append(f"{name}={_LAUNCH.get(name, value)!r}")
    return "ServerArgs(" + ", ".join(fields) + ")"


def release_context(version: str, wheel: Path | None = None) -> dict | None:
    """What a release prints around a failure, for its synthetic logs: None for 0.5.x (the
    0.5.23 wording above); for 0.4.x its milestone lines, its ``ServerArgs(...)`` header (read
    from the wheel) and its request errors (the OpenAI routes' exceptions reach uvicorn:
    "Exception in ASGI application", 0.4.x has no "Error in request" handler)."""
    if version_key(version) >= (0, 5):
        return None
    dump = "server_args=" + (_server_args_repr(wheel) if wheel is not None else
                             "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in _LAUNCH.items()) + ")")
    return {"lines": _CONTEXT_04, "dump": dump, "asgi_requests": True}


def _context(phase: str, release: dict | None = None) -> str:
    lines, dump = (release["lines"], release["dump"]) if release else (_CONTEXT, _DUMP)
    head = f"[{STAMP.format(0)}] {dump}\n" if phase != "serving" else ""
    return head + "".join(f"[{STAMP.format(i + 1)} TP0] {line}\n" for i, line in enumerate(lines.get(phase, [])))


def _traceback(site: dict, message: str, header: str, phase: str = "unknown") -> str:
    exc = "AssertionError" if site["kind"] == "assert" else site["exception"]
    func = site["function"].rsplit(".", 1)[-1]
    entry = "scheduler.event_loop_overlap()" if header.startswith("Scheduler") else "scheduler = Scheduler("
    # while serving, the scheduler's traceback passes through its event loop's frame (0.5.23
    # scheduler.py event_loop_overlap -> run_batch), as every real serving crash shows
    loop = (f'  File "{PREFIX}srt/managers/scheduler.py", line 1201, in event_loop_overlap\n'
            f"    batch_result = self.run_batch(batch)\n") if phase == "serving" else ""
    return (f"[{STAMP.format(30)} TP0] {header}Traceback (most recent call last):\n"
            f'  File "{PREFIX}srt/managers/scheduler.py", line 3100, in run_scheduler_process\n    {entry}\n'
            + loop +
            f'  File "{PREFIX}{site["file"]}", line {site["line"]}, in {func}\n'
            f"    {'assert' if site['kind'] == 'assert' else 'raise'} ...\n"
            f"{exc}: {message}\n\n")


def synthetic_log(site: dict, phase: str = "unknown", right: str | None = None, message: str | None = None,
                  release: dict | None = None) -> str:
    """The log a failure at this site leaves, as SGLang prints it: the lines it prints before
    the site's phase (``_CONTEXT``), then

    - a raise or assert: the scheduler's ``Scheduler hit an exception:`` traceback ending in
      the site's frame and ``ExceptionType: message`` (placeholders filled with sample values);
    - a logged site: the logged line; a logged site a raise follows: the line, then the
      scheduler's traceback through the site's frame (a RuntimeError with the line's words);
    - a rejected request (``right: none`` of request_level): what 0.5.23 logs for it, after
      the ready line: ``[http_server] Error: <message>`` and the 400 access line for a
      ValueError (entrypoints/http_server.py generate_request), ``Error in request: <message>``
      and its traceback (logger.exception, entrypoints/openai/serving_base.py) for the rest.
    """
    message = fillings(site.get("full") or site["template"])[0] if message is None else message
    stamp = STAMP.format(30)
    if site["kind"].endswith(".raise"):
        site = {**site, "kind": "raise", "exception": "RuntimeError", "logged": message}
    if right == "none" and not site["kind"].startswith("log"):
        head = _context("serving", release)
        if site["kind"] == "raise" and site["exception"].rsplit(".", 1)[-1] == "ValueError":
            # 0.4.x's generate_request logs it without the logger's name (http_server.py:272)
            where = "" if release and release.get("asgi_requests") else "[http_server] "
            return (head + f"[{stamp}] {where}Error: {message}\n"
                    f'[{stamp}] INFO:     127.0.0.1:51734 - "POST /generate HTTP/1.1" 400 Bad Request\n')
        exc = "AssertionError" if site["kind"] == "assert" else site["exception"]
        func = site["function"].rsplit(".", 1)[-1]
        if release and release.get("asgi_requests"):
            return (head + f"[{stamp}] ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
                    f'  File "/usr/local/lib/python3.10/dist-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi\n'
                    f"    result = await app(  # type: ignore[func-returns-value]\n"
                    f'  File "/usr/local/lib/python3.10/dist-packages/starlette/routing.py", line 73, in app\n'
                    f"    response = await f(request)\n"
                    f'  File "{PREFIX}{site["file"]}", line {site["line"]}, in {func}\n    raise ...\n'
                    f"{exc}: {message}\n")
        return (head + f"[{stamp}] Error in request: {message}\nTraceback (most recent call last):\n"
                f'  File "{PREFIX}srt/entrypoints/openai/serving_base.py", line 112, in handle_request\n'
                f"    return await self._handle_non_streaming_request(\n"
                f'  File "{PREFIX}{site["file"]}", line {site["line"]}, in {func}\n    raise ...\n'
                f"{exc}: {message}\n"
                f'[{stamp}] INFO:     127.0.0.1:51734 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n')
    if "logged" in site:
        # a logged line a raise follows: the line, then the raise ends the scheduler (its
        # traceback, through the site's function, with the words the line printed: the raised
        # exception's own type and text are not in the site, a RuntimeError stands for it)
        return (_context(phase, release) + f"[{stamp} TP0] {message}\n"
                + _traceback(site, message, "Scheduler hit an exception: ", phase))
    if site["kind"].startswith("log"):
        return _context(phase, release) + f"[{stamp} TP0] {message}\n"
    header = "Scheduler hit an exception: "
    return _context(phase, release) + _traceback(site, message, header, phase)


@functools.lru_cache(maxsize=None)
def by_phase_categories(rules_dir: Path = ROOT / "rules") -> tuple[dict[str, str], str]:
    """class.internal.check's phase -> category map and its category for an unknown phase (read once
    per rules directory: right_answer asks for every by-phase waiver)."""
    data = _load_yaml(rules_dir / "classes.yaml") or {}
    for rule in data.get("rules", []):
        if isinstance(rule, dict) and rule.get("id") == "class.internal.check":
            return dict(rule.get("category_by_phase") or {}), rule["category"]
    return {}, "other"


@functools.lru_cache(maxsize=None)
def class_phase_categories(rules_dir: Path = ROOT / "rules") -> dict[str, dict[str, str]]:
    """Class id -> its ``category_by_phase`` (the classes whose category is the phase's; read once
    per rules directory)."""
    data = _load_yaml(rules_dir / "classes.yaml") or {}
    return {r["id"]: dict(r["category_by_phase"]) for r in data.get("rules", [])
            if isinstance(r, dict) and r.get("category_by_phase")}


def right_answer(site: dict, disp: Dispositions, categories: dict[str, str], phase: str,
                 class_by_phase: dict[str, dict[str, str]] | None = None) -> str | None:
    """The right answer for a site: a category, ``none`` (no incident) or ``excluded``; a class
    whose category follows the phase (``category_by_phase``) gives the phase's."""
    kind, _, name = site["disposition"].partition(":")
    if kind == "class" and class_by_phase and name in class_by_phase:
        return class_by_phase[name].get(phase, categories.get(name))
    if kind in ("rule", "class"):
        return categories.get(name)
    if kind == "waiver":
        right = disp.right.get(name)
        if right == "by_phase":
            by_phase, unknown = by_phase_categories()
            return by_phase.get(phase, unknown)
        return right
    return None


def measure(inv: dict, disp: Dispositions, every: int = 1, verbose: bool = False, release: dict | None = None) -> dict:
    """Run the engine (every layer in rules/) on each site's synthetic log (every Nth site with
    ``every``, in the inventory's order) and count the right answers per disposition group.

    Right: the engine's incidents include the site's right category; for ``none`` the engine
    raised no incident (a warning event is fine); ``excluded`` sites are not run.
    """
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    class_by_phase = class_phase_categories()
    groups: dict[str, list[int]] = {}
    wrong: Counter = Counter()
    excluded = 0
    for i, site in enumerate(iter_sites(inv)):
        if i % every:
            continue
        phase = disp.phase(site)
        want = right_answer(site, disp, categories, phase, class_by_phase)
        kind, _, name = site["disposition"].partition(":")
        group = "rule" if kind == "rule" else site["disposition"]
        if want == "excluded":
            excluded += 1
            continue
        message = None
        if kind == "rule":  # the sample values that make the message the rule credited (a rank number, ...)
            rule = ruleset.get(name)
            rx = None if rule is None else (rule.line_rx if (site["kind"].startswith("log") and not site["kind"].endswith(".raise")) or rule.message is None
                                            else rule.message)
            message = next((t for t in fillings(site["full"] or site["template"]) if rx is not None and rx.search(t)), None)
        pipe = StreamPipeline(ruleset, remediate=False)
        events = pipe.feed(synthetic_log(site, phase, want, message, release).encode()) + pipe.finish()
        got = [ev["category"] for ev in events if ev["event"] == "incident"]
        ok = (not got) if want == "none" else (want in got)
        counts = groups.setdefault(group, [0, 0])
        counts[0] += 1
        counts[1] += ok
        if not ok:
            wrong[f"{site['disposition']} [{phase}] want {want} -> {','.join(got) or 'none'}"] += 1
    if verbose:
        for key, n in wrong.most_common(25):
            print(f"    {n:5d} {key}")
    sites = sum(c[0] for c in groups.values())
    right = sum(c[1] for c in groups.values())
    return {"every": every, "user_facing": sites, "excluded": excluded, "right": right,
            "share": round(right / sites, 4) if sites else 0.0,
            "groups": {g: {"sites": c[0], "right": c[1]} for g, c in sorted(groups.items())}}


def judged_path(version: str, out: Path = DEFAULT_OUT) -> Path:
    return out / f"judged-{version}.yaml"


def load_judged(version: str, out: Path = DEFAULT_OUT) -> list[dict]:
    """The hand-judged sites of a release: judged-VERSION.yaml, then each later hand check's
    own file (judged-VERSION-sampleN.yaml, drawn with its own seed): key, right answer, sample."""
    paths = [judged_path(version, out)] + sorted(out.glob(f"judged-{version}-sample*.yaml"))
    judged: list[dict] = []
    for path in paths:
        if path.is_file():
            judged += list((_load_yaml(path) or {}).get("sites") or [])
    return judged


def measure_judged(inv: dict, disp: Dispositions, judged: list[dict], verbose: bool = False,
                   release: dict | None = None) -> dict:
    """Rightness, not consistency: run the engine on the synthetic log of every hand-judged
    site and compare its answer with the category a person judged right for the site's message
    (judged-VERSION.yaml), whatever the inventory assigns.  A judged site the release no longer
    has is counted as missing, not as right."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(builtin=True, user=False)
    by_key = {site_key(s): s for s in iter_sites(inv)}
    right = missing = 0
    per_sample: dict[str, list[int]] = {}
    misses: list[str] = []
    for entry in judged:
        site = by_key.get(entry["key"])
        date, _, tag = entry["sample"].rpartition(" ")
        group = date + " " + tag.rstrip("0123456789")  # the sample's letter(s): "Z12" -> Z, "AA3" -> AA
        counts = per_sample.setdefault(group, [0, 0])
        if site is None:
            missing += 1
            continue
        want = entry["right"]
        # the judge may say where a user meets the message (``phase: serving`` for a check
        # reached while serving in a function the ``phases:`` map does not know as serving)
        phase = entry.get("phase") or disp.phase(site)
        pipe = StreamPipeline(ruleset, remediate=False)
        events = pipe.feed(synthetic_log(site, phase, want, release=release).encode()) + pipe.finish()
        got = [ev["category"] for ev in events if ev["event"] == "incident"]
        ok = (not got) if want == "none" else (want in got)
        counts[0] += 1
        counts[1] += ok
        right += ok
        if not ok:
            misses.append(f"{entry['sample']}: {site['file']}:{site['line']} want {want} -> {','.join(got) or 'none'}"
                          f" ({site['disposition']})")
    if verbose:
        for m in misses:
            print(f"    judged miss  {m}")
    sites = len(judged) - missing
    return {"sites": sites, "missing": missing, "right": right, "share": round(right / sites, 4) if sites else 0.0,
            "samples": {g: {"sites": c[0], "right": c[1]} for g, c in sorted(per_sample.items())}}


def with_shipped_figure(judged_result: dict, shipped: Path, disp: Dispositions, judged: list[dict]) -> dict:
    """The judged figure to record: measured on the whole messages the wheel prints, plus the
    same measure on the shipped inventory (``shipped``), whose templates are cut at
    TEMPLATE_MAX characters.  The everyday test has only the shipped file, so it holds the
    engine to the shipped figure; a cut can lose the flag a long message names (or the words a
    rule would wrongly take), so the two may differ by a site or two."""
    cut = measure_judged(load_inventory(shipped), disp, judged)
    return dict(judged_result, shipped={"right": cut["right"], "share": cut["share"]})


def print_measure(version: str, result: dict) -> None:
    print(f"  right category, sglang {version}" + (f" (every {result['every']}th site)" if result["every"] > 1 else "")
          + f": {result['right']}/{result['user_facing']} user-facing sites = {100 * result['share']:.1f}%"
          f" ({result['excluded']} test/debug sites excluded)")
    for group, c in result["groups"].items():
        print(f"    {group:<48} {c['sites']:6d} sites  {c['right']:6d} right  {100 * c['right'] / c['sites']:5.1f}%")
    judged = result.get("judged")
    if judged:
        print(f"  right category by hand judgement, sglang {version}: {judged['right']}/{judged['sites']} judged sites"
              f" = {100 * judged['share']:.1f}%" + (f" ({judged['missing']} judged sites gone)" if judged["missing"] else ""))
        for group, c in judged["samples"].items():
            print(f"    {group:<48} {c['sites']:6d} sites  {c['right']:6d} right")


MEASURED = DEFAULT_OUT / "measured.json"
SAMPLE_EVERY = 40  # the everyday test's deterministic sample: every 40th site


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
    ap.add_argument("--judged-only", action="store_true",
                    help="with --measure: only the hand-judged sites (judged-VERSION.yaml), a few seconds")
    ap.add_argument("--every", type=int, default=1, help="--measure every Nth site only (a deterministic sample)")
    ap.add_argument("--record", action="store_true",
                    help=f"with --measure: write the full and the every-{SAMPLE_EVERY}th-site shares to {MEASURED.name}")
    args = ap.parse_args(argv)
    wheel_dir = args.wheel_dir or default_wheel_dir()
    disp = Dispositions.load(args.dispositions)
    rules = RuleMatcher()
    status = 0
    for version in args.versions:
        wheel = find_wheel(version, wheel_dir)
        inv = inventory(version, wheel, disp, rules)
        release = release_context(version, wheel)
        text = dumps(inv)
        target = args.out / f"sglang-{version}.json"
        printed_target = printed_path(version, args.out)
        printed_text = dumps_printed(inv)
        for path, want in ((target, text), (printed_target, printed_text)):
            status |= check_or_write(path, want, args.check)
        c = inv["counts"]
        print(f"sglang {version}: {inv['sites']} sites; rule {c.get('rule', 0)}, class {c.get('class', 0)}, "
              f"waiver {c.get('waiver', 0)}, unaccounted {c.get('unaccounted', 0)}")
        if args.show:
            for site in iter_sites(inv):
                if site["disposition"].startswith(args.show):
                    print(f"  {site['file']}:{site['line']} {site['function']} [{site['exception'] or site['kind']}] "
                          f"{site['template'][:140]} -> {site['disposition']}")
        if args.measure:
            judged = load_judged(version, args.out)
            if args.judged_only:
                if judged:
                    r = measure_judged(inv, disp, judged, verbose=True, release=release)
                    print(f"  right category by hand judgement, sglang {version}: {r['right']}/{r['sites']} = "
                          f"{100 * r['share']:.1f}% {r['samples']}")
                    if args.record:  # only the judged figure; the full run's figures stay
                        recorded = json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.is_file() else {}
                        recorded.setdefault(version, {})["judged"] = with_shipped_figure(r, target, disp, judged)
                        MEASURED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
                continue
            result = measure(inv, disp, every=args.every, verbose=True, release=release)
            if judged:
                result["judged"] = measure_judged(inv, disp, judged, verbose=True, release=release)
            print_measure(version, result)
            if args.record:
                sample = measure(inv, disp, every=SAMPLE_EVERY, release=release) if args.every != SAMPLE_EVERY else result
                recorded = json.loads(MEASURED.read_text(encoding="utf-8")) if MEASURED.is_file() else {}
                full = {k: v for k, v in result.items() if k != "judged"}
                recorded[version] = {"full": full, "sample": {k: sample[k] for k in ("every", "user_facing", "right", "share")}}
                if judged:
                    recorded[version]["judged"] = with_shipped_figure(result["judged"], target, disp, judged)
                MEASURED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
