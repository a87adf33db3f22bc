#!/usr/bin/env python3
"""Write sglang_doctor/remedy/catalogs/pre-0.4.0-renames.json: the launch-flag spellings of
SGLang's releases before 0.4.0 (0.1.x-0.3.x) that no shipped catalogue has, the renames
that lead from them to 0.4.0's spellings, and the module paths of those releases (which
date a traceback's frames before 0.4.0: remedy/frame_releases.py).

The shipped catalogues (scripts/gen_flag_catalog.py) start at 0.4.0: they are dumps of each
release's live argument parser, which needs the release's environment.  Older releases are
read here without running them: ``sglang/srt/server_args.py`` of each wheel (``pip download
--no-deps sglang==VERSION``, cached with the inventory's wheels) is parsed with ``ast`` and
every ``parser.add_argument(...)`` call gives an action record (option strings, dest, help,
switch or value), the fields ``flags._renames_between`` compares.  The renames are found with
the same rule as between shipped releases (``flags.derived_renames``): between two adjacent
releases, an option that disappears while another appears with the same ServerArgs field or
the same help text and the same kind; the last pre-0.4.0 release is compared with the shipped
0.4.0 catalogue.  A user who launches a current release with a command written for 0.2
(``--max-num-reqs``, ``--schedule-heuristic``) gets the rename, not "no similar flag".

Output has sorted keys and no timestamps: regenerating gives identical bytes.

Usage: python scripts/gen_pre040_renames.py [--check] [--wheel-dir DIR]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
TARGET = ROOT / "sglang_doctor" / "remedy" / "catalogs" / "pre-0.4.0-renames.json"

# Every release of sglang on PyPI before 0.4.0 (pip index versions sglang, 2026-12-04).
RELEASES = (
    "0.1.3", "0.1.4", "0.1.5", "0.1.6", "0.1.7", "0.1.9", "0.1.10", "0.1.11", "0.1.12", "0.1.13",
    "0.1.14", "0.1.15", "0.1.16", "0.1.17", "0.1.18", "0.1.19", "0.1.20", "0.1.21", "0.1.22",
    "0.1.24", "0.1.25", "0.1.26", "0.2.0", "0.2.1", "0.2.2", "0.2.3", "0.2.4", "0.2.5", "0.2.6",
    "0.2.7", "0.2.8", "0.2.9", "0.2.9.post1", "0.2.10", "0.2.11", "0.2.12", "0.2.13", "0.2.14",
    "0.2.14.post1", "0.2.14.post2", "0.2.15", "0.3.0", "0.3.1", "0.3.1.post1", "0.3.1.post2",
    "0.3.1.post3", "0.3.2", "0.3.3", "0.3.3.post1", "0.3.4", "0.3.4.post1", "0.3.4.post2", "0.3.5",
    "0.3.5.post1", "0.3.5.post2", "0.3.6", "0.3.6.post1", "0.3.6.post2", "0.3.6.post3",
)


def _text(node: ast.AST | None) -> str | None:
    """A string literal's text (implicit concatenation is one constant), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def actions_of(source: str) -> list[dict]:
    """The action records of every ``add_argument`` call with ``--`` option strings."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not options or not all(o.startswith("-") for o in options) or not any(o.startswith("--") for o in options):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action = _text(kw.get("action")) or "store"
        long = next(o for o in options if o.startswith("--"))
        dest = _text(kw.get("dest")) or long[2:].replace("-", "_")
        nargs = kw.get("nargs")
        choices = kw.get("choices")
        choice_values = None
        if isinstance(choices, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in choices.elts):
            choice_values = [e.value for e in choices.elts]
        out.append({
            "action": action, "choices": choice_values, "const": None, "default": None, "dest": dest,
            "help": _text(kw.get("help")),
            "nargs": (0 if action in ("store_true", "store_false") else
                      nargs.value if isinstance(nargs, ast.Constant) else None),
            "option_strings": options, "type": None,
        })
    return sorted(out, key=lambda a: a["option_strings"])


def release_actions(version: str, wheel_dir: Path) -> list[dict]:
    import inventory_failures as inv

    wheel = inv.find_wheel(version, wheel_dir)
    with zipfile.ZipFile(wheel) as z:
        return actions_of(z.read("sglang/srt/server_args.py").decode("utf-8"))


def release_modules(wheel_dir: Path) -> dict[str, str]:
    """Every server module path (``sglang/srt/``, not tests) of the releases before 0.4.0 -> the runs of
    ``RELEASES`` indices that had it ("0-21,23-30"), as scripts/gen_frame_index.py records the
    shipped releases' modules: a traceback whose frames pass a module only these releases had
    was written by one of them (frame_releases.pre_040_span)."""
    import gen_frame_index
    import inventory_failures as inv

    having: dict[str, list[int]] = {}
    for i, version in enumerate(RELEASES):
        with zipfile.ZipFile(inv.find_wheel(version, wheel_dir)) as z:
            for name in z.namelist():
                module = name[len("sglang/"):]
                # the server's modules (a launch log's frames), test modules left out as
                # scripts/gen_frame_index.py leaves them out of the shipped releases' index
                if name.startswith("sglang/srt/") and name.endswith(".py") and not gen_frame_index._is_test(module):
                    having.setdefault(module, []).append(i)
    return {path: _runs(indices) for path, indices in sorted(having.items())}


def _runs(indices: list[int]) -> str:
    """[0, 1, 2, 5, 6] -> "0-2,5-6"."""
    runs, start = [], indices[0]
    for prev, cur in zip(indices, indices[1:] + [None]):
        if cur != prev + 1:
            runs.append(f"{start}-{prev}")
            start = cur
    return ",".join(runs)


_DEPRECATED_FOR = re.compile(r"'(--[\w-]+)' is deprecated\. Please use '(--[\w-]+)(?: ([\w.-]+))?' instead")


def _words(option: str) -> set[str]:
    return set(option.lstrip("-").split("-"))


def _help_words(text: str | None) -> str:
    return " ".join("".join(c if c.isalnum() else " " for c in (text or "").lower()).split())


def _more_renames(a, b, taken_old: set[str], taken_new: set[str]) -> list:
    """Renames of the old releases that dest and help equality miss, with the same kind
    (switch or value, plain or negative): the same non-empty list of choices
    (``--schedule-heuristic`` -> ``--schedule-policy``, 0.2.7), a help text that differs only a
    little (difflib ratio >= 0.85 on its words: ``--attention-reduce-in-fp32`` ->
    ``--triton-attention-reduce-in-fp32``, 0.2.14), or a name whose words contain the other's
    (``--disable-regex-jump-forward`` -> ``--disable-jump-forward``, 0.3.5.post1).  A gone option
    is renamed only when exactly one appearing option fits it by one of these; an ``--enable-x``
    that gives way to ``--disable-x`` (0.1.18 FlashInfer, 0.3.1.post2 MLA) is the opposite
    switch, not a rename."""
    import difflib

    from sglang_doctor.remedy import flags

    def record(catalog, spec):
        return next((r for r in catalog.body["actions"] if spec.name in r["option_strings"]), {})

    gone = [s for s in a.specs if s.action not in ("help", "version") and s.name not in taken_old
            and not any(o in b._by_option for o in (s.name, *s.aliases))]
    came = [s for s in b.specs if s.action not in ("help", "version") and s.name not in taken_new
            and not any(o in a._by_option for o in (s.name, *s.aliases))]
    out = []
    for old in gone:
        fits = []
        for new in came:
            if old.takes_value != new.takes_value or flags._negative(old) != flags._negative(new):
                continue
            if {"enable", "disable"} <= (_words(old.name) | _words(new.name)) - (_words(old.name) & _words(new.name)):
                continue  # --enable-mla -> --disable-mla: the same help, the opposite switch
            old_choices, new_choices = record(a, old).get("choices"), record(b, new).get("choices")
            h1, h2 = _help_words(old.help), _help_words(new.help)
            if old_choices and old_choices == new_choices:
                fits.append((new, "choices"))
            elif h1 and h2 and difflib.SequenceMatcher(None, h1, h2).ratio() >= 0.85:
                fits.append((new, "similar help"))
            elif _words(old.name) < _words(new.name) or _words(new.name) < _words(old.name):
                fits.append((new, "name"))
        if len(fits) == 1:
            new, evidence = fits[0]
            out.append(flags.Rename(old.name, new.name, a.version, b.version, evidence))
    return out


def build(wheel_dir: Path) -> dict:
    from sglang_doctor.remedy import flags

    catalogs = [flags.Catalog(v, f"ast of sglang-{v} server_args.py", {"actions": release_actions(v, wheel_dir), "fields": {}})
                for v in RELEASES]
    first_shipped = flags.shipped_catalog(flags.KNOWN_VERSIONS[0])
    renames = []
    for a, b in zip(catalogs, catalogs[1:] + [first_shipped]):
        found = flags._renames_between(a, b)
        renames.extend(found)
        renames.extend(_more_renames(a, b, {r.old for r in found}, {r.new for r in found}))
    shipped = set()
    for version in flags.KNOWN_VERSIONS:
        for record in flags.read_shipped(flags._shipped_files()[version]).get("actions", ()):
            shipped.update(record.get("option_strings") or ())
    options: dict[str, list[str]] = {}
    for catalog in catalogs:
        for spec in catalog.specs:
            for option in (spec.name, *spec.aliases):
                if option.startswith("--") and option not in shipped:
                    options.setdefault(option, [catalog.version, catalog.version])[1] = catalog.version
    having: dict[str, list[int]] = {}
    equivalents: dict[str, dict] = {}
    for i, catalog in enumerate(catalogs):
        for spec in catalog.specs:
            for option in (spec.name, *spec.aliases):
                if option.startswith("--"):
                    having.setdefault(option, []).append(i)
            said = _DEPRECATED_FOR.search(spec.help or "")
            if said is not None and said.group(1) in (spec.name, *spec.aliases):
                equivalents[spec.name] = {"new": said.group(2), "value": _choice(catalog, said.group(2), said.group(3))}
    return {
        "generated_by": "scripts/gen_pre040_renames.py",
        "modules": release_modules(wheel_dir),
        # every option string of these releases -> the runs of RELEASES indices that have it
        "option_runs": {o: _runs(v) for o, v in sorted(having.items())},
        # an option the release's own help text retires for another flag and value
        # ("'--disable-flashinfer' is deprecated. Please use '--attention-backend triton' instead.")
        "equivalents": dict(sorted(equivalents.items())),
        "releases": list(RELEASES),
        "options": {o: {"first": v[0], "last": v[1]} for o, v in sorted(options.items())},
        "renames": [{"old": r.old, "new": r.new, "before": r.before, "after": r.after, "evidence": r.evidence}
                    for r in renames],
    }


def _choice(catalog, option: str, value: str | None) -> str | None:
    """The value a help text names for ``option``, as the option's own choices spell it: 0.3.x
    says "Please use '--sampling-backend pytroch' instead" where the choice is ``pytorch``."""
    spec = next((s for s in catalog.specs if option in (s.name, *s.aliases)), None)
    if value is None or spec is None or not spec.choices or value in spec.choices:
        return value
    from sglang_doctor.remedy import flags

    return flags.close_choice(spec, value) or value


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    import inventory_failures as inv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--wheel-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    text = render(build(args.wheel_dir or inv.default_wheel_dir()))
    if args.check:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is out of step with the wheels: run python scripts/gen_pre040_renames.py")
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
