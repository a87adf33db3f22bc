"""How well the honest fallback's best guess carries to logs it was not tuned on.

For the fragments of the tuned corpus parts whose cause is not in the text
(``evidence_in_log: false``), runs the pipeline in this process and compares the best guess
with ``best_guess_category``, as bench/accuracy.py does (the primary incident's fallback, or
the summary's for a text with no incident).  Four figures:

- in-part: the phase prior (diagnose/phase_prior.py) counted from every tuned part, the
  shipped settings: what ``bench/accuracy.py`` reports;
- leave-one-part-out (the main figure, the held-back situation): for each tuned part, every
  counted table (the phase prior) is counted again from the *other three* parts' labels only,
  at the shipped weight, and the part left out is scored.  A held-back part is a new source
  nobody counted, and this is the figure that predicts it;
- rotation: the same, but the prior's weight is also chosen on the three training parts from
  ``--weights`` (the session 8 figure; it can only move where the training parts disagree with
  the shipped weight);
- calibration: how often a guess at each confidence level was right (leave-one-part-out).

What neither rotation can measure: the hand-written weights of diagnose/evidence.py (WHERE,
WORDS, SIGNALS) were written by people who had read every tuned part, so the tuned figures
overstate a new part by however much those weights fit these files (docs/GUESS-MISSES.md).

Usage: ``python bench/guess_cv.py [--weights 0.3,0.4,0.5,0.6] [--verbose] [--json]``.  Never run on the
sealed parts (it reads only the tuned ones).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from guess_prior import TUNED_PARTS, count  # noqa: E402

from sglang_doctor.diagnose import phase_prior  # noqa: E402
from sglang_doctor.diagnose.rules_engine import RuleSet  # noqa: E402
from sglang_doctor.pipeline import StreamPipeline, open_log  # noqa: E402

_LAYER_RANK = {"specific": 2, "class": 1, "fallback": 0}


def no_cause(part: str) -> list[dict]:
    with open(ROOT / "corpus" / part / "labels.yaml", encoding="utf-8") as fh:
        labels = yaml.safe_load(fh) or []
    return [lab for lab in labels if isinstance(lab, dict) and lab.get("category") not in (None, "none")
            and not lab.get("evidence_in_log") and (ROOT / "corpus" / part / lab["file"]).is_file()]


_RULESET: list = []


def _rules():
    if not _RULESET:
        _RULESET.append(RuleSet.load([]))
    return _RULESET[0]


def guess_of(path: Path) -> dict:
    """The best guess bench/accuracy.py scores: the primary incident's fallback, or the summary's."""
    pipe = StreamPipeline(_rules(), remediate=False, whole_log=True)
    events = []
    for block in open_log(path):
        events += pipe.feed(block)
    events += pipe.finish()
    diagnoses = [e["_diagnosis"] for e in events if e.get("event") == "incident"]
    if not diagnoses:
        fb = pipe.summary().get("fallback") or {}
        return fb.get("best_guess") or {}
    ranked = sorted(enumerate(diagnoses), key=lambda p: (-_LAYER_RANK.get(p[1].layer or "fallback", 0),
                                                         -float(p[1].confidence or 0), p[0]))
    primary = ranked[0][1]
    fb = primary.fallback or next((d.fallback for d in diagnoses if d.fallback), None) or {}
    return fb.get("best_guess") or {}


def measure(parts, counts, weight: float) -> list[tuple[str, str, str | None, float]]:
    """(part, label, guess, confidence, file) for every no-cause fragment of ``parts``, with the phase
    prior ``counts`` at ``weight``."""
    saved = phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT
    phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT = counts, weight
    try:
        out = []
        for part in parts:
            for lab in no_cause(part):
                g = guess_of(ROOT / "corpus" / part / lab["file"])
                out.append((part, lab.get("best_guess_category"), g.get("category"), float(g.get("confidence") or 0),
                            lab["file"]))
        return out
    finally:
        phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT = saved


def hits(rows) -> tuple[int, int]:
    return sum(r[1] == r[2] for r in rows), len(rows)


def calibration(rows) -> list[dict]:
    bins = ((0.0, 0.15), (0.15, 0.25), (0.25, 0.35), (0.35, 0.51))
    out = []
    for lo, hi in bins:
        sel = [r for r in rows if lo <= r[3] < hi]
        h, n = hits(sel)
        out.append({"confidence": f"[{lo:.2f}, {hi:.2f})", "right": h, "guesses": n,
                    "rate": round(h / n, 3) if n else None,
                    "mean_confidence": round(sum(r[3] for r in sel) / n, 3) if n else None})
    return out


def leave_one_part_out(weight: float | None = None, weights=()) -> tuple[list, dict]:
    """Rows scored with the counted tables fitted on the other parts; with ``weights``, the prior's
    weight too is chosen on those parts (rotation).  Returns (rows, per-part report)."""
    rows, report = [], {}
    for held in TUNED_PARTS:
        train = tuple(p for p in TUNED_PARTS if p != held)
        counts = count(train)
        chosen = phase_prior.PRIOR_WEIGHT if weight is None else weight
        scored = {}
        if weights:
            scored = {w: hits(measure(train, counts, w))[0] for w in weights}
            chosen = max(weights, key=lambda w: (scored[w], -abs(w - phase_prior.PRIOR_WEIGHT)))
        held_rows = measure((held,), counts, chosen)
        rows += held_rows
        h, n = hits(held_rows)
        report[held] = {"right": h, "total": n, "weight": chosen, "train_right": scored}
    return rows, report


def _total(report: dict) -> tuple[int, int]:
    return sum(r["right"] for r in report.values()), sum(r["total"] for r in report.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.3,0.4,0.5,0.6")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="list the misses (leave-one-part-out)")
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    report: dict = {"in_part": {}, "leave_one_part_out": {}, "rotation": {}, "calibration": []}
    rows = measure(TUNED_PARTS, phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT)
    for part in TUNED_PARTS:
        h, n = hits([r for r in rows if r[0] == part])
        report["in_part"][part] = {"right": h, "total": n}
    lopo_rows, report["leave_one_part_out"] = leave_one_part_out()
    _, report["rotation"] = leave_one_part_out(weights=weights)
    report["calibration"] = calibration(lopo_rows)
    report["misses"] = [{"file": f"{r[0]}/{r[4]}", "label": r[1], "guess": r[2], "confidence": r[3]}
                        for r in lopo_rows if r[1] != r[2]]
    for key in ("in_part", "leave_one_part_out", "rotation"):
        h, n = _total(report[key])
        report[key + "_all"] = {"right": h, "total": n}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    if args.verbose:
        for m in report["misses"]:
            print(f"miss  {m['file'][:70]:70} label {m['label']:22} guess {m['guess']} ({m['confidence']:.2f})")
    for key, name in (("in_part", "in-part"), ("leave_one_part_out", "leave-one-part-out"), ("rotation", "rotation")):
        for part, r in report[key].items():
            extra = f"  (weight {r['weight']}; on the other parts: {r['train_right']})" if r.get("train_right") else ""
            print(f"{name:19} {part:6} {r['right']:>3}/{r['total']:<3}{extra}")
        a = report[key + "_all"]
        print(f"{name:19} {'all':6} {a['right']:>3}/{a['total']:<3} {100 * a['right'] / max(a['total'], 1):.1f}%")
    for b in report["calibration"]:
        print(f"confidence {b['confidence']}: right {b['right']}/{b['guesses']} (mean confidence {b['mean_confidence']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
