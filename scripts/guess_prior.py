"""The best guess's phase prior (sglang_doctor/diagnose/phase_prior.json) from the labels of
the tuned corpus parts: per labelled phase, how many failures were of each category
(``category``, or ``best_guess_category`` when the cause is not in the text).

Usage: ``python scripts/guess_prior.py [--write] [PART ...]`` (default: dev fresh late field; prints
the JSON, or writes it with ``--write``).  The sealed parts are never read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TUNED_PARTS = ("dev", "fresh", "late", "field", "field9", "notes10")
# tuned parts (read, rules fixed on them) whose labels the shipped prior does not count: they are
# scored as further folds by bench/guess_cv.py, and ``count`` may count them for an experiment
# (guess_cv --prior-parts); field10 was taken out of the prior by 71d9ce1
READ_ONLY_PARTS = ("field10", "sealed10", "field11", "field12")


def failures(part: str, root: Path = ROOT):
    """Each labelled failure of a part (healthy logs left out) with the category it is scored
    on: ``category``, or ``best_guess_category`` when the cause is not in the text."""
    with open(root / "corpus" / part / "labels.yaml", encoding="utf-8") as fh:
        labels = yaml.safe_load(fh) or []
    for lab in labels:
        if not isinstance(lab, dict) or lab.get("category") in (None, "none"):
            continue
        cat = lab["category"] if lab.get("evidence_in_log") else lab.get("best_guess_category")
        if cat:
            yield lab, cat


def count(parts=TUNED_PARTS, root: Path = ROOT) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for part in parts:
        if part not in TUNED_PARTS + READ_ONLY_PARTS:
            raise SystemExit(f"guess_prior: {part} is not a tuned part ({', '.join(TUNED_PARTS + READ_ONLY_PARTS)})")
        for lab, cat in failures(part, root):
            row = out.setdefault(lab.get("phase") or "unknown", {})
            row[cat] = row.get(cat, 0) + 1
    return {phase: dict(sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))) for phase, row in sorted(out.items())}


def data(parts=TUNED_PARTS) -> dict:
    return {"parts": list(parts), "phase_counts": count(parts)}


def main(argv: list[str]) -> int:
    write = "--write" in argv
    parts = tuple(a for a in argv if a != "--write") or TUNED_PARTS
    text = json.dumps(data(parts), indent=1, sort_keys=False) + "\n"
    if write:
        from sglang_doctor.diagnose.phase_prior import DATA

        DATA.write_text(text, encoding="utf-8")
        print(f"wrote {DATA}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
