"""What the raise statement a cut traceback stops at fails as, from SGLang's source (issue 12, session 36).

A traceback cut just above its exception line still shows the deepest frame's source line.  When that
frame is SGLang's (or an inventoried library's under it: FlashInfer, sgl-kernel, Triton, transformers, vLLM)
and its line is a ``raise X(`` or an ``assert``, the exception was raised right there: one of the failure
sites of that function, which the inventories of five SGLang releases and of those libraries list with their
right answers (``raise_sites.json``, scripts/gen_raise_sites.py).  ``sites_at`` returns the sites the line can
be -- the function's sites of that kind and exception type, narrowed by the literal start of the message
when the line shows it -- and ``reading`` the category most of them fail as, with its share.  Internal
checks (whose category is the step they failed in), request rejections and the waivers answered ``other`` for
want of a better answer name no category and only dilute the share.  One lookup per incident (its deepest frame), never per line.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass

from sglang_doctor.model import Frame

# the categories a site's row may hold that name no failure category of its own
NO_CATEGORY = ("by_phase", "none", "unnamed")
MIN_MODULE_SITES = 2  # a module's sites of the line's kind read for a function it lacks: at least a mix of two
MIN_HEAD = 8  # literal characters of the message the source line must show to narrow the sites by it

_RAISE = re.compile(r"^\s*raise\s+(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\s*\(")
_ASSERT = re.compile(r"^\s*assert\b")
# the message's literal start as a source line shows it: raise X(f"...  /  assert cond, "...
_STRING = re.compile(r"""\s*(?:[rRuU]?[fF]?|[fF][rR]?)(?:"{1,3}|'{1,3})([^"'{}\\]*)""")


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, list[list[str]]]:
    try:
        text = importlib.resources.files("sglang_doctor.diagnose").joinpath("raise_sites.json").read_text(encoding="utf-8")
        return json.loads(text).get("functions", {})
    except (OSError, ValueError):
        return {}


_INSTALLED = re.compile(r"/(?:site|dist)-packages/")


@functools.lru_cache(maxsize=1)
def _modules() -> dict[str, list[list[str]]]:
    """Every site of a module, over its functions (for a function the table does not know)."""
    out: dict[str, list[list[str]]] = {}
    for key, rows in _table().items():
        out.setdefault(key.split("::", 1)[0], []).extend(rows)
    return out


def module_key(path: str) -> str | None:
    """The table's name of a frame's file: ``srt/managers/scheduler.py`` for an installed or checked-out
    SGLang file, ``flashinfer/jit/core.py`` for an installed library's; None for anything else."""
    p = "/" + path.replace("\\", "/")
    if not p.endswith(".py"):
        return None
    if "/sglang/" in p:
        rest = p.rsplit("/sglang/", 1)[-1]
        if rest.startswith("srt/"):
            return rest
    parts = _INSTALLED.split(p)
    return parts[-1] if len(parts) > 1 and "/" in parts[-1] else None


@dataclass(frozen=True)
class Reading:
    category: str
    share: float      # the sites of that category among the sites the line can be
    sites: int        # how many sites the line can be
    statement: str    # "raise ValueError" / "assert"
    narrowed: bool    # the message's literal start chose among the function's sites
    module: bool = False  # the function has no site of that kind: the module's sites were read


def _message_head(source: str, kind: str) -> str:
    """The literal start of the message the statement's source line shows ('' when it shows none): the
    string after ``raise X(`` or after an assert's comma."""
    sep = "," if kind == "assert" else "("
    if sep not in source:
        return ""
    m = _STRING.match(source.split(sep, 1)[1])
    return " ".join(m.group(1).split()) if m else ""


def sites_at(frame: Frame) -> tuple[str, list[list[str]], bool, bool] | None:
    """(statement, the sites ``frame``'s source line can raise, narrowed by its message, read from the
    module's sites because the function has none of that kind) or None when the line is no raise / assert
    of a module the inventories know."""
    key = module_key(frame.file)
    source = frame.source or ""
    if key is None or not source:
        return None
    if (m := _RAISE.match(source)) is not None:
        kind, exc = "raise", m.group(1)
    elif _ASSERT.match(source):
        kind, exc = "assert", "AssertionError"
    else:
        return None
    rows = _table().get(f"{key}::{frame.function.rsplit('.', 1)[-1]}") or []
    same = [r for r in rows if r[0] == kind and (kind == "assert" or r[1] == exc)]
    module = False
    if not same:
        # a function the inventoried releases do not have (a later release's), or with no site of this kind:
        # the module's sites of this kind (bench/guess_cv.py --raise-sites: right less often than the
        # function's, the share says how mixed they are)
        same = [r for r in _modules().get(key, ()) if r[0] == kind and (kind == "assert" or r[1] == exc)]
        if len(same) < MIN_MODULE_SITES:
            return None  # (one site is another function's check, not the module's mix)
        module = True
    if not same:
        return None
    head = _message_head(source, kind)
    narrowed = False
    if len(head) >= MIN_HEAD:
        chosen = [r for r in same if r[3] and (r[3].startswith(head) or head.startswith(r[3]))]
        if chosen:
            same, narrowed = chosen, True
    return ("assert" if kind == "assert" else f"raise {exc}"), same, narrowed, module


def reading(frame: Frame) -> Reading | None:
    """The category most of the sites ``frame``'s line can raise fail as (see ``sites_at``)."""
    found = sites_at(frame)
    if found is None:
        return None
    statement, rows, narrowed, module = found
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    named = {c: n for c, n in counts.items() if c not in NO_CATEGORY}
    if not named:
        return None
    best = max(sorted(named), key=lambda c: named[c])
    return Reading(best, named[best] / len(rows), len(rows), statement, narrowed, module)
