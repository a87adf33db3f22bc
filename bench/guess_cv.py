"""How well the honest fallback's best guess carries to logs it was not tuned on.

For the fragments of the tuned corpus parts whose cause is not in the text
(``evidence_in_log: false``), runs the pipeline in this process and compares the best guess
with ``best_guess_category``, as bench/accuracy.py does (the primary incident's fallback, or
the summary's for a text with no incident).  Three figures:

- in-part: the phase prior (diagnose/phase_prior.py) counted from every tuned part, the
  shipped settings: what ``bench/accuracy.py`` reports;
- out-of-part (rotated): for each part, the prior counted from the other tuned parts' labels
  only, and its weight chosen on those two parts from ``--weights``; then measured on the
  part left out.  This is the figure that predicts a part nobody tuned on;
- calibration: how often a guess at each confidence level was right (in-part).

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.3,0.4,0.5,0.6")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="list the misses (in-part)")
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    report: dict = {"in_part": {}, "out_of_part": {}, "calibration": []}
    rows = measure(TUNED_PARTS, phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT)
    for part in TUNED_PARTS:
        h, n = hits([r for r in rows if r[0] == part])
        report["in_part"][part] = {"right": h, "total": n}
    report["calibration"] = calibration(rows)
    for held in TUNED_PARTS:
        train = tuple(p for p in TUNED_PARTS if p != held)
        counts = count(train)
        scored = {w: hits(measure(train, counts, w))[0] for w in weights}
        best = max(weights, key=lambda w: (scored[w], -abs(w - phase_prior.PRIOR_WEIGHT)))
        h, n = hits(measure((held,), counts, best))
        report["out_of_part"][held] = {"right": h, "total": n, "weight": best, "train_right": scored}
    report["misses"] = [{"file": f"{r[0]}/{r[4]}", "label": r[1], "guess": r[2], "confidence": r[3]}
                        for r in rows if r[1] != r[2]]
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    if args.verbose:
        for m in report["misses"]:
            print(f"miss  {m['file'][:70]:70} label {m['label']:22} guess {m['guess']} ({m['confidence']:.2f})")
    for part, r in report["in_part"].items():
        print(f"in-part      {part:6} {r['right']:>3}/{r['total']:<3}")
    tot = [0, 0]
    for part, r in report["out_of_part"].items():
        tot[0] += r["right"]
        tot[1] += r["total"]
        print(f"out-of-part  {part:6} {r['right']:>3}/{r['total']:<3} (prior from the other parts, weight {r['weight']}; "
              f"on them: {r['train_right']})")
    print(f"out-of-part  all    {tot[0]:>3}/{tot[1]:<3} {100 * tot[0] / max(tot[1], 1):.1f}%")
    for b in report["calibration"]:
        print(f"confidence {b['confidence']}: right {b['right']}/{b['guesses']} (mean confidence {b['mean_confidence']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
