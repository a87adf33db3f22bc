"""Confirmed fixes versus what sglang-doctor proposes (issue 12).

Reads ``fixtures/fixes/cases.yaml``: each case is a real log (a tuned corpus part's file, or a
small snippet of a thread under ``fixtures/fixes/``) with the change people confirmed fixed it
(``fix_flags`` / ``fix_env``, compared exactly as ``bench/accuracy.py`` compares a label's).
Runs ``python -m sglang_doctor explain --format json`` on each log (a real subprocess, as a
user runs it) and prints, per case, the failure, the confirmed fix, the primary change and the
first alternative the tool proposes, and whether the fix is a hit (in the primary or the
first alternative).  Cases carry ``half: tune`` (read while changing remedies) or
``half: check`` (not read while changing remedies: their figure is reported apart).  Each half's
figure is also given per category (the failure family), and ``--added TEXT`` keeps only the
cases whose ``added`` note holds TEXT (e.g. ``"session 25"``: one session's new cases, scored
apart from the ones earlier sessions tuned on).

Usage: ``python bench/fixes.py [--half tune|check|all] [--added TEXT] [--markdown] [--jobs 2]``
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from accuracy import parse_events, primary_incident, remediation_hit, run_tool  # noqa: E402

CASES = ROOT / "fixtures" / "fixes" / "cases.yaml"


def load_cases(path: Path = CASES) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [c for c in (yaml.safe_load(fh) or []) if isinstance(c, dict)]


def _change(rem: dict | None) -> str:
    if not rem:
        return "-"
    parts = [f"{k} {v}" if v is not True else k for k, v in (rem.get("set") or {}).items()]
    parts += [f"remove {f}" for f in rem.get("unset") or []]
    parts += [f"{k}={v}" for k, v in (rem.get("env") or {}).items()]
    return ", ".join(parts) or (rem.get("remedy") or "advice")


def score(case: dict) -> dict:
    code, stdout, stderr = run_tool(ROOT / case["log"])
    events = parse_events(stdout)
    incidents = [e for e in events if e.get("event") == "incident"]
    primary = primary_incident(incidents)
    if primary is not None:
        rem = primary.get("remediation")
        rule = primary.get("rule")
    else:
        summary = next((e for e in events if e.get("event") == "summary"), {})
        rem = (summary.get("fallback") or {}).get("guarded")
        rule = "(fallback guard)" if rem else None
    flags, env = case.get("fix_flags") or {}, case.get("fix_env") or {}
    alts = (rem or {}).get("alternatives") or []
    return {
        "id": case["id"], "half": case.get("half", "check"), "rule": rule, "category": case.get("category") or "?",
        "confirmed": case.get("confirmed") or "", "failure": case.get("failure") or "",
        "primary": _change(rem), "alt1": _change(alts[0]) if alts else "-",
        "hit": remediation_hit(rem, flags, env) if (flags or env) else None,
        "crash": code not in (0, 1),
    }


def per_category(rows: list[dict]) -> str:
    """``cuda_graph 2/3, memory.cuda_oom 4/4, ...``: the hits of scored rows by the case's category."""
    counts: dict[str, list[int]] = {}
    for r in rows:
        hit_total = counts.setdefault(r["category"], [0, 0])
        hit_total[0] += bool(r["hit"])
        hit_total[1] += 1
    return ", ".join(f"{cat} {h}/{n}" for cat, (h, n) in sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--half", choices=("tune", "check", "all"), default="all")
    ap.add_argument("--added", metavar="TEXT", help="only the cases whose `added` note holds TEXT")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    cases = [c for c in load_cases() if (args.half == "all" or c.get("half") == args.half)
             and (args.added is None or args.added in str(c.get("added") or ""))]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(score, cases))
    if args.markdown:
        print("| case | half | failure | confirmed fix | rule | proposes (primary) | first alternative | hit |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            r = {k: v.replace("|", "\\|") if isinstance(v, str) else v for k, v in r.items()}
            hit = {True: "yes", False: "**no**", None: "n/a"}[r["hit"]]
            print(f"| {r['id']} | {r['half']} | {r['failure']} | {r['confirmed']} | {r['rule']} | "
                  f"{r['primary']} | {r['alt1']} | {hit} |")
    else:
        for r in rows:
            mark = {True: "hit ", False: "MISS", None: "n/a "}[r["hit"]]
            print(f"{mark} {r['id']:<34} {str(r['rule'])[:44]:<44} primary: {r['primary'][:60]} | alt1: {r['alt1'][:50]}")
    for half in ("tune", "check"):
        scored = [r for r in rows if r["half"] == half and r["hit"] is not None]
        if scored:
            hits = sum(r["hit"] for r in scored)
            print(f"{half}: fix {hits}/{len(scored)} ({per_category(scored)})")
    scored = [r for r in rows if r["hit"] is not None]
    print(f"all: fix {sum(r['hit'] for r in scored)}/{len(scored)}; crashes {sum(r['crash'] for r in rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
