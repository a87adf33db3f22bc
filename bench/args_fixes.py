"""Argument refusals with a confirmed fix versus what sglang-doctor proposes (issue 12).

Reads ``fixtures/args_fixes/cases.yaml``: each case is a real argument refusal (a tuned corpus
part's ``args.invalid`` file with a fix label, or the exception text of a public thread that
``taken.py`` calls free) with the change that fixed it and ``kind``, how the fix went (remove the
flag the message names, respell it, set its partner, change its value, change the backend /
quantization / dtype).  Runs ``python -m sglang_doctor explain --format json`` on each text (a
real subprocess, as ``bench/fixes.py`` does) and scores the fix as ``bench/accuracy.py`` does:
every labelled flag/variable in the primary change or the first alternative.  Prints per case
and per kind, for the ``tune`` half (read while changing the refusal machinery) and the
``check`` half apart.

Usage: ``python bench/args_fixes.py [--half tune|check|all] [--jobs 1]``
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import fixes  # noqa: E402
from fixes import score  # noqa: E402

CASES = ROOT / "fixtures" / "args_fixes" / "cases.yaml"


def load_cases() -> list[dict]:
    return fixes.load_cases(CASES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--half", choices=("tune", "check", "all"), default="all")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    cases = [c for c in load_cases() if args.half == "all" or c.get("half") == args.half]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(score, cases))
    kinds = {c["id"]: c.get("kind", "?") for c in cases}
    for r in rows:
        mark = {True: "hit ", False: "MISS", None: "n/a "}[r["hit"]]
        print(f"{mark} {r['id']:<22} {kinds[r['id']]:<8} {str(r['rule'])[:46]:<46} "
              f"primary: {r['primary'][:56]} | alt1: {r['alt1'][:44]}")
    by_kind: Counter = Counter()
    hit_kind: Counter = Counter()
    for r in rows:
        if r["hit"] is not None:
            by_kind[kinds[r["id"]]] += 1
            hit_kind[kinds[r["id"]]] += bool(r["hit"])
    print("by kind: " + ", ".join(f"{k} {hit_kind[k]}/{n}" for k, n in sorted(by_kind.items())))
    for half in ("tune", "check"):
        scored = [r for r in rows if r["half"] == half and r["hit"] is not None]
        if scored:
            hits = sum(bool(r["hit"]) for r in scored)
            print(f"{half}: fix {hits}/{len(scored)} ({100 * hits / len(scored):.0f}%)")
    scored = [r for r in rows if r["hit"] is not None]
    hits = sum(bool(r["hit"]) for r in scored)
    print(f"all: fix {hits}/{len(scored)} ({100 * hits / max(1, len(scored)):.0f}%); "
          f"crashes {sum(r['crash'] for r in rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
