"""The fix (flag or variable) a failure message names, against what sglang-doctor proposes (issue 12).

Many of SGLang's own failure messages name their way out: "Please use `--attention-backend
flashinfer`", "set --disable-cuda-graph", "try --mem-fraction-static ...".  For every site of a
release's inventory (``data/inventory/sglang-VERSION.json``, made by
``scripts/inventory_failures.py``) whose message *advises* a flag (a verb of advice before
``--flag``, not negated: "is not supported with --x" names the conflict, not the fix), this runs
the engine on the site's synthetic log (the same log ``--measure`` builds) and checks that the
remediation's primary change or its first alternative touches that flag (sets or removes it):
the two places bench/accuracy.py scores a fix in.  A source-derived measure of "the message
names the fix but the remedy does not take it", independent of any corpus part.

``--refusals`` measures the argument checks instead (issue 12): every site of the release's
``server_args.py``, ``arg_groups/`` and ``server_args_config_parser.py`` (its message filled with
sample values, the same synthetic log) whose incident is ``args.invalid``, and whether the primary
remediation or its first alternative is a concrete change -- a flag set to a value (not a
``<...>`` question), a flag removed, or a variable set -- rather than a question or advice only.

``--bare`` pastes each of those checks' exception line alone (``ValueError: message``, no frames,
no launch header, as one-line pastes have it) and counts how many are named ``args.invalid``
(issue 12: argument refusals answered as a crash while serving); ``--bare --every-args-site``
does so for every site whose right answer is args.invalid, in any module (session 35).

``--refusals --shape S`` pastes each check as held-back fragments have it, the release then
unknown to the tool: ``noheader`` (the traceback's record on, no launch header), ``bare`` (the
exception line alone), ``compose`` / ``kubectl`` (those prefixes on every line, no header),
``cut_top`` / ``cut_key_head`` (bench/robustness.py's cuts); ``full`` is the synthetic log with the
release given.  Besides the concrete changes it counts those whose flags are all valid flags of
the message's own release (its catalogue's validation), and how many pastes are named
``args.invalid`` at all.

Usage: ``python bench/message_fixes.py [--version 0.5.23] [--refusals [--shape S|all] | --bare [--every-args-site]] [--verbose]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

import inventory_failures as inv_mod  # noqa: E402

from sglang_doctor.remedy.class_remedies import env_advised  # noqa: E402
from sglang_doctor.remedy.remedies import _ADVISED, _NEGATED  # noqa: E402


def advised_flags(message: str) -> list[str]:
    """The flags a message advises, in its order (``remedies._ADVISED``, skipping negated ones)."""
    out: list[str] = []
    for m in _ADVISED.finditer(message):
        if _NEGATED.search(message[max(0, m.start() - 80):m.start()]):
            continue
        if m.group(1) not in out:
            out.append(m.group(1))
    return out


def touched(rem: dict | None) -> set[str]:
    if not rem:
        return set()
    return set(rem.get("set") or {}) | set(rem.get("unset") or []) | set(rem.get("env") or {})


def run(version: str, verbose: bool) -> dict:
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline
    from sglang_doctor.remedy import flags as flags_mod

    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    printed = ROOT / "data" / "inventory" / f"printed-{version}.json"
    if printed.is_file():
        import json

        inv["_printed"] = json.loads(printed.read_text(encoding="utf-8"))
    disp = inv_mod.Dispositions.load()
    ruleset = RuleSet.load(builtin=True, user=False)
    catalog = flags_mod.load_catalog(version) if hasattr(flags_mod, "load_catalog") else None
    total = hits = 0
    misses: list[str] = []
    for site in inv_mod.iter_sites(inv):
        if not site["disposition"].startswith(("rule:", "class:")):
            continue
        message = inv_mod.fillings(site.get("full") or site["template"])[0]
        wanted = advised_flags(message)
        if catalog is not None:
            wanted = [f for f in wanted if catalog.spec(f) is not None]
        env = env_advised(message)  # "set SGLANG_X=1 to skip this check": the variable is the way out
        if env is not None:
            wanted.append(env[0])
        if not wanted:
            continue
        phase = disp.phase(site)
        pipe = StreamPipeline(ruleset, version=version)
        events = pipe.feed(inv_mod.synthetic_log(site, phase).encode()) + pipe.finish()
        incidents = [e for e in events if e.get("event") == "incident"]
        if not incidents:
            continue
        rem = incidents[-1].get("remediation")
        alts = (rem or {}).get("alternatives") or []
        got = touched(rem) | (touched(alts[0]) if alts else set())
        total += 1
        # one setting under any of its spellings (an alias, an abbreviation argparse accepts)
        same = (lambda a, b: a == b or (catalog is not None and catalog.spec(a) is not None
                                        and catalog.spec(a) == catalog.spec(b)))
        ok = any(same(f, g) for f in wanted for g in got)
        hits += ok
        if not ok:
            misses.append(f"{site['file']}:{site['line']} [{incidents[-1].get('rule')}] wants {', '.join(wanted)}; "
                          f"gets {sorted(touched(rem))} | {sorted(touched(alts[0])) if alts else '-'}"
                          f"  <- {message[:140]!r}")
    if verbose:
        for m in misses:
            print("  MISS", m)
    return {"version": version, "sites": total, "hits": hits}


ARGUMENT_CHECKS = ("srt/server_args.py", "srt/arg_groups/", "srt/server_args_config_parser.py",
                   "srt/utils/server_args_config_parser.py")


def concrete(rem: dict | None) -> bool:
    """A change a relaunch can carry as it is: a removal, a variable, or a flag set to a value
    (not a ``<...>`` question for the user)."""
    if not rem:
        return False
    if rem.get("unset") or rem.get("env"):
        return True
    return any(not (isinstance(v, str) and v.startswith("<")) for v in (rem.get("set") or {}).values())


def bare_line(site: dict) -> str | None:
    """The argument check's exception line alone, as a one-line paste has it: ``ValueError:
    message`` (an assert: ``AssertionError: message``); None for a logged site or an assert
    without a message."""
    message = inv_mod.fillings(site.get("full") or site["template"])[0]
    if site["kind"] == "assert":
        exc = "AssertionError"
    elif site["kind"] == "raise":
        exc = site["exception"].rsplit(".", 1)[-1]
    else:
        return None
    if not message.strip():
        return None
    return f"{exc}: {message}\n"


def args_sites(inv: dict, ruleset) -> set[str]:
    """(args35) The keys of the sites whose right answer is args.invalid wherever they are (the
    speculative, LoRA, disaggregation, quantization and model-config checks of a launch's
    arguments too, not only server_args.py), as the inventory's measure gives it for their phase."""

    disp = inv_mod.Dispositions.load()
    categories = inv_mod.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    by_phase = inv_mod.class_phase_categories()
    return {inv_mod.site_key(s) for s in inv_mod.iter_sites(inv)
            if not s["kind"].startswith("log")
            and inv_mod.right_answer(s, disp, categories, disp.phase(s), by_phase) == "args.invalid"}


def run_bare(version: str, verbose: bool, every_args_site: bool = False) -> dict:
    """The argument checks' refusals pasted as the exception line alone (no frames, no launch
    header): how many are named args.invalid, and what the rest are named.  ``every_args_site``:
    every site whose right answer is args.invalid, in any module (args_sites), instead of the
    argument modules' sites (ARGUMENT_CHECKS)."""
    from collections import Counter

    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    ruleset = RuleSet.load(builtin=True, user=False)
    wanted = args_sites(inv, ruleset) if every_args_site else None
    total = hits = 0
    other: Counter = Counter()
    misses: list[str] = []
    for site in inv_mod.iter_sites(inv):
        if wanted is not None:
            if inv_mod.site_key(site) not in wanted:
                continue
        elif not site["file"].startswith(ARGUMENT_CHECKS):
            continue
        line = bare_line(site)
        if line is None:
            continue
        pipe = StreamPipeline(ruleset, version=version)
        events = pipe.feed(line.encode()) + pipe.finish()
        incidents = [e for e in events if e.get("event") == "incident"]
        category = incidents[-1].get("category") if incidents else "no incident"
        total += 1
        if category == "args.invalid":
            hits += 1
            continue
        other[category] += 1
        misses.append(f"{site['file']}:{site['line']} [{incidents[-1].get('rule') if incidents else '-'}]  <- {line.strip()[:150]!r}")
    if verbose:
        for m in misses:
            print("  NOT ARGS", m)
    return {"version": version, "sites": total, "hits": hits, "other": dict(other.most_common())}


# How a refusal is pasted (issue 12): the synthetic log as SGLang prints it ("full", the release
# given), or a degraded copy of it read with the release unknown, as held-back pastes are.
SHAPES = ("full", "noheader", "bare", "compose", "kubectl", "cut_top", "cut_key_head")


def _key_index(lines: list[str]) -> int:
    """The exception line (the last line that is not blank): the synthetic log ends with it."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            return i
    return 0


def _no_header(lines: list[str], key: int) -> list[str]:
    """The log from its traceback's record on (no launch header, no context lines above)."""
    for i in range(key, -1, -1):
        if "Traceback (most recent call last)" in lines[i]:
            return lines[i:]
    return lines[key:]


def shaped(site: dict, log: str, shape: str) -> str | None:
    """The site's synthetic log pasted in ``shape`` (bench/robustness.py's transforms, seeded
    by the site); None when the shape does not apply."""
    import random

    import robustness as rob

    if shape == "full":
        return log
    if shape == "bare":
        return bare_line(site)
    lines = log.rstrip("\n").split("\n")
    key = _key_index(lines)
    rng = random.Random(f"{site['file']}:{site['line']}:{shape}")
    if shape in ("noheader", "compose", "kubectl"):
        lines = _no_header(lines, key)
        if shape == "noheader":
            return "\n".join(lines) + "\n"
        return (rob.t_compose if shape == "compose" else rob.t_kubectl)(lines, _key_index(lines), rng)
    lines = _no_header(lines, key)  # (a cut a few lines above a short log's key line may keep its header)
    return {"cut_top": rob.t_cut_top, "cut_key_head": rob.t_cut_key_head}[shape](lines, _key_index(lines), rng)


def valid_in(rem: dict | None, catalog) -> bool:
    """Every flag the change sets or removes is one of ``catalog``'s release (a value set passes
    its parser's validation); a variable needs no flag."""
    for flag, value in ((rem or {}).get("set") or {}).items():
        if isinstance(value, str) and value.startswith("<"):
            if catalog.spec(flag) is None:
                return False
        elif catalog.validate(flag, value) is not None:
            return False
    return all(catalog.spec(f) is not None for f in (rem or {}).get("unset") or [])


def run_refusals(version: str, verbose: bool, shape: str = "full") -> dict:
    """The argument checks of ``version`` pasted in ``shape``: how many are named args.invalid,
    how many of those get a concrete change (primary or first alternative), and how many of the
    concrete ones are valid flags of the message's own release (the release is unknown to the
    tool for every shape but "full")."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline
    from sglang_doctor.remedy import flags as flags_mod

    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    disp = inv_mod.Dispositions.load()
    ruleset = RuleSet.load(builtin=True, user=False)
    catalog = flags_mod.load_catalog(version)
    sites = named = total = hits = valid = 0
    misses: list[str] = []
    for site in inv_mod.iter_sites(inv):
        if not site["file"].startswith(ARGUMENT_CHECKS):
            continue
        text = shaped(site, inv_mod.synthetic_log(site, disp.phase(site)), shape)
        if text is None:
            continue
        sites += 1
        pipe = StreamPipeline(ruleset, version=version if shape == "full" else None)
        events = pipe.feed(text.encode()) + pipe.finish()
        incidents = [e for e in events if e.get("event") == "incident"]
        if not incidents or incidents[-1].get("category") != "args.invalid":
            continue
        named += 1
        rem = incidents[-1].get("remediation")
        alts = (rem or {}).get("alternatives") or []
        pick = rem if concrete(rem) else (alts[0] if alts and concrete(alts[0]) else None)
        total += 1
        hits += pick is not None
        good = pick is not None and valid_in(pick, catalog)
        valid += good
        if pick is None or not good:
            message = inv_mod.fillings(site.get("full") or site["template"])[0]
            what = "NO CHANGE" if pick is None else f"NOT IN {version}: {touched(pick)}"
            misses.append(f"{what} {site['file']}:{site['line']} [{incidents[-1].get('rule')}]  <- {message[:140]!r}")
    if verbose:
        for m in misses:
            print("  ", m)
    return {"version": version, "shape": shape, "pasted": sites, "named": named, "sites": total,
            "hits": hits, "valid": valid}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="0.5.23")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--refusals", action="store_true",
                    help="the argument checks' sites: a concrete change in the primary or first alternative")
    ap.add_argument("--bare", action="store_true",
                    help="the argument checks' exception lines alone: how many are named args.invalid")
    ap.add_argument("--every-args-site", action="store_true",
                    help="--bare: every site whose right answer is args.invalid, in any module (args35)")
    ap.add_argument("--shape", choices=SHAPES + ("all",), default="full",
                    help="--refusals: the checks pasted so (release unknown but for 'full'); 'all': each")
    args = ap.parse_args(argv)
    if args.bare:
        r = run_bare(args.version, args.verbose, args.every_args_site)
        share = 100 * r["hits"] / r["sites"] if r["sites"] else 0.0
        print(f"sglang {r['version']}: " + ("args.invalid sites' (any module)" if args.every_args_site else "argument checks'")
              + " exception lines alone named args.invalid: "
              f"{r['hits']}/{r['sites']} ({share:.1f}%); the rest: {r['other']}")
        return 0
    if args.refusals:
        for shape in (SHAPES if args.shape == "all" else (args.shape,)):
            r = run_refusals(args.version, args.verbose, shape)
            share = 100 * r["hits"] / r["sites"] if r["sites"] else 0.0
            print(f"sglang {r['version']} [{shape}]: argument checks (args.invalid) with a concrete change in the "
                  f"primary or first alternative: {r['hits']}/{r['sites']} sites ({share:.1f}%); valid flags of "
                  f"{r['version']}: {r['valid']}; named args.invalid {r['named']}/{r['pasted']} pasted")
        return 0
    r = run(args.version, args.verbose)
    share = 100 * r["hits"] / r["sites"] if r["sites"] else 0.0
    print(f"sglang {r['version']}: message-advised flag in the primary or first alternative: "
          f"{r['hits']}/{r['sites']} sites ({share:.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
