#!/usr/bin/env python3
"""Tracebacks SGLang prints and survives: every handled traceback site, from its source.

A healthy SGLang server prints whole Python tracebacks that are no failure of the launch: a code
path catches an exception, logs it WITH its traceback and goes on (a fallback, a retry, a skipped
item, a loop's next round).  The engine forms an incident from any traceback, so such a record is
false-alarm bait; a fragment that ends right after it shows nothing of the server going on but
the record's own words ("falling back to ...", "will retry", "skipping", "ignored", "continuing",
"disabled"; incidents/survived.py ``HANDLED_WORDS``).  This lists, per release wheel, every place
under ``sglang/srt`` that prints a traceback:

- ``logger.<level>(..., exc_info=...)`` with a true value (``True``, the exception) at any level;
- ``logger.exception(...)`` (ERROR level, the traceback always);
- ``traceback.print_exc()`` (the traceback alone on stderr: the record that goes with it, if
  any, is the ``print`` / logger call right before it);
- a logger call whose message embeds the traceback (``traceback.format_exc()``,
  ``get_exception_traceback()``: 0.4.x's "error: Traceback ..." records).

Each site is ``handled`` when no ``raise`` / ``sys.exit`` / ``os._exit`` / ``kill_process_tree`` /
``send_signal`` (the fatal handlers' SIGQUIT to the parent) follows it in its block (scripts/inventory_warnings.py ``_ends_process``): the code goes on after
the record.  A site a raise follows prints its traceback and then fails (the failure's own lines
come after), so it is recorded as ``ends``; the figure that matters for the mend is how many of
THOSE carry the going-on words (a word list must not take back a failure: it should be none).

Output: ``data/inventory/handled-VERSION.json`` (per file: line, function, kind, the phase of
data/inventory/dispositions.yaml, the except clause's types, the message template, ``handled`` /
``ends``, ``words`` when the template carries HANDLED_WORDS); bench/healthy_bait.py (h) renders the
handled sites as pasted fragments.

    python scripts/inventory_handled.py                       # every release of DEFAULT_VERSIONS: write
    python scripts/inventory_handled.py --check               # recompute, compare with the files
    python scripts/inventory_handled.py --versions 0.5.23 --show   # list the ending sites with the words
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as invf  # noqa: E402  (the wheel reading and the templates)
import inventory_warnings as invw  # noqa: E402  (what ends the process, the phases)

from sglang_doctor.incidents.survived import HANDLED_WORDS  # noqa: E402

DEFAULT_VERSIONS = invw.DEFAULT_VERSIONS
DEFAULT_OUT = ROOT / "data" / "inventory"
LOG_LEVELS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "warning_once", "info_once"}
# helpers whose value is the current exception's formatted traceback
FORMAT_TRACEBACK = {"traceback.format_exc", "get_exception_traceback", "format_exc"}


def _true(node: ast.AST) -> bool:
    """``exc_info=`` with a value that prints the traceback (not a literal False / None / 0)."""
    return not (isinstance(node, ast.Constant) and not node.value)


def _embeds_traceback(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and invf._unparse(n.func) in FORMAT_TRACEBACK for n in ast.walk(node))


def _ends(stmt: ast.stmt) -> bool:
    """A statement after which the process ends: inventory_warnings' (raise, exits, kill_process_tree)
    and SGLang's fatal handlers' SIGQUIT to the parent (``parent_process.send_signal(signal.SIGQUIT)``
    after "Scheduler hit an exception: {traceback}")."""
    if invw._ends_process(stmt):
        return True
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and invf._unparse(stmt.value.func).endswith("send_signal"))


class _HandledFinder(invf._Finder):
    """The traceback-printing calls of one file (above), with their except clauses."""

    def __init__(self, path: str, constants=None):
        super().__init__(path, constants)
        self.handlers: list[list[str]] = []  # the enclosing except clauses' types, innermost last
        self.ending: set[int] = set()  # calls a process-ending statement follows in their block
        self.before: dict[int, ast.Call] = {}  # print_exc() -> the call right before it

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for i, stmt in enumerate(stmts):
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                        if any(_ends(x) for x in stmts[i + 1:]):
                            self.ending.add(id(stmt.value))
                        prev = stmts[i - 1] if i else None
                        if isinstance(prev, ast.Expr) and isinstance(prev.value, ast.Call):
                            self.before[id(stmt.value)] = prev.value
        ast.NodeVisitor.generic_visit(self, node)

    def visit_ExceptHandler(self, node):
        types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type] if node.type else []
        self.handlers.append([invf._unparse(t) for t in types])
        self.generic_visit(node)
        self.handlers.pop()

    def visit_Raise(self, node):  # failure sites are scripts/inventory_failures.py's
        ast.NodeVisitor.generic_visit(self, node)

    visit_Assert = visit_Return = visit_Raise

    def _site(self, node: ast.Call, kind: str, message: ast.AST | None, extra=None) -> None:
        parts = self._message(message, extra) if message is not None else ["(no message)"]
        before = len(self.sites)
        self._add(node, kind, "", parts)
        if len(self.sites) > before:
            self.sites[-1]["caught"] = self.handlers[-1] if self.handlers else []
            self.sites[-1]["ends"] = id(node) in self.ending

    def visit_Call(self, node):
        func = node.func
        name = invf._unparse(func)
        if isinstance(func, ast.Attribute) and func.attr in LOG_LEVELS and node.args:
            owner = func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else (owner.attr if isinstance(owner, ast.Attribute) else "")
            if owner_name in invf.LOGGER_NAMES or owner_name.lower().endswith("logger"):
                exc_info = next((k.value for k in node.keywords if k.arg == "exc_info"), None)
                if func.attr == "exception":
                    self._site(node, "log.exception", node.args[0], list(node.args[1:]))
                elif exc_info is not None and _true(exc_info):
                    self._site(node, f"log.{func.attr}+exc_info", node.args[0], list(node.args[1:]))
                elif _embeds_traceback(node):
                    self._site(node, f"log.{func.attr}+format_exc", node.args[0], list(node.args[1:]))
        elif name in ("traceback.print_exc", "print_exc"):
            prev = self.before.get(id(node))
            message = prev.args[0] if prev is not None and prev.args else None
            self._site(node, "print_exc", message)
        ast.NodeVisitor.generic_visit(self, node)


def find_sites(path: str, text: str) -> list[dict]:
    """The traceback-printing sites of one source file."""
    return invf.find_sites(path, text, _HandledFinder)


def inventory(version: str, wheel: Path, disp: invf.Dispositions) -> dict:
    files: dict[str, list] = {}
    counts: Counter = Counter()
    for path, text in invf.sources(wheel):
        if any(fnmatch.fnmatchcase(path, g) for g in invw.EXCLUDED_PATHS):
            continue
        for s in find_sites(path, text):
            site = {"file": s["file"], "line": s["line"], "function": s["function"], "kind": s["kind"],
                    "template": s["full"]}
            phase = invw.site_phase(site, disp)
            status = "ends" if s["ends"] else "handled"
            words = HANDLED_WORDS.search(s["full"]) is not None
            counts[status] += 1
            counts[f"{status}+words"] += words
            counts[s["kind"].split("+")[-1] if "+" in s["kind"] else s["kind"]] += 1
            files.setdefault(path, []).append([s["line"], s["function"], s["kind"], phase, s["caught"], s["full"],
                                               status, words])
    return {"sglang_version": version, "wheel": wheel.name, "sites": counts["handled"] + counts["ends"],
            "handled": counts["handled"], "handled_with_words": counts["handled+words"],
            "ends": counts["ends"], "ends_with_words": counts["ends+words"],
            "kinds": {k: v for k, v in sorted(counts.items()) if "+" not in k and k not in ("handled", "ends")},
            "files": files}


def iter_sites(inv: dict):
    for path, sites in inv["files"].items():
        for line, function, kind, phase, caught, template, status, words in sites:
            yield {"file": path, "line": line, "function": function, "kind": kind, "phase": phase,
                   "caught": caught, "template": template, "status": status, "words": words}


def load(version: str, out: Path = DEFAULT_OUT) -> dict:
    return json.loads((out / f"handled-{version}.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="+", default=list(DEFAULT_VERSIONS))
    ap.add_argument("--wheel-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    ap.add_argument("--show", action="store_true", help="print the ending sites whose message has the words")
    args = ap.parse_args(argv)
    wheel_dir = args.wheel_dir or invf.default_wheel_dir()
    disp = invf.Dispositions.load()
    status = 0
    for version in args.versions:
        inv = inventory(version, invf.find_wheel(version, wheel_dir), disp)
        target = args.out / f"handled-{version}.json"
        text = invf.dumps(inv)
        status |= invf.check_or_write(target, text, args.check)
        print(f"sglang {version}: {inv['sites']} traceback sites {inv['kinds']}; handled {inv['handled']} "
              f"({inv['handled_with_words']} with going-on words), followed by a raise/exit {inv['ends']} "
              f"({inv['ends_with_words']} with the words)")
        if args.show:
            for site in iter_sites(inv):
                if site["status"] == "ends" and site["words"]:
                    print(f"  ends+words: {site['file']}:{site['line']} {site['template'][:140]}")
    return status


if __name__ == "__main__":
    sys.exit(main())
