"""The best guess's phase prior (sglang_doctor/diagnose/phase_prior.json) from the labels of
the tuned corpus parts: per labelled phase, how many failures were of each category
(``category``, or ``best_guess_category`` when the cause is not in the text).

Usage: ``python scripts/guess_prior.py [--write] [PART ...]`` (default: ``TUNED_PARTS``; prints
the JSON, or writes it with ``--write``).

``python scripts/guess_prior.py --calibrate [--write]`` counts the table behind the best guess's
stated confidence (sglang_doctor/diagnose/guess_calibration.json, diagnose/calibration.py): every
no-cause fragment of every tuned part (``TUNED_PARTS`` and ``READ_ONLY_PARTS``) is run through the
pipeline with the phase prior counted from ``TUNED_PARTS`` without that part (the held-back
situation, as bench/guess_cv.py's leave-one-part-out), and each guess's cue is counted right or
wrong against ``best_guess_category``.  The sealed parts are never read.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Every tuned part's labels are counted (session 18): a prior counted from every tuned sources carries to a
# new one at least as well as one counted from six (bench/guess_cv.py, leave-one-part-out with each
# fold's prior counted without the part held out: 108/184 -> 109/184, no part lower; the prior
# counted only from the six parts below until then left nine tuned parts' labels unused)
TUNED_PARTS = ("dev", "fresh", "late", "field", "field9", "notes10", "field10", "sealed10", "field11", "field12",
               "field13", "field14", "field15", "field16", "field17", "field18", "field19", "field20", "field21", "field22", "field23", "field24", "field25", "field26", "field27", "field28", "field29", "field30", "field31", "field32", "field33", "field34", "field35", "field36", "field37", "field38", "field39")
# tuned parts (read, rules fixed on them) whose labels the shipped prior does not count: scored as
# further folds by bench/guess_cv.py (with the prior counted from ``TUNED_PARTS``), and ``count``
# may count them for an experiment (guess_cv --prior-parts).  None since session 18 (field10 had been
# taken out of the prior by 71d9ce1, for a test and one late file that the support-only prior of
# session 15 no longer moves)
READ_ONLY_PARTS: tuple[str, ...] = ()


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


def source_repo(lab: dict) -> str:
    """The repository a label's thread is in (``source.repo``), ``?`` when the label gives none."""
    src = lab.get("source") if isinstance(lab.get("source"), dict) else {}
    return str(src.get("repo") or "?")


# SGLang's releases in families of about five patch releases (a label's ``sglang_version`` is free text:
# "0.4.6.post5", "0.5.11 (NVIDIA sglang:26.05 container)", "main of late September 2026"): the folds of
# bench/guess_cv.py's leave-one-release-out.  A version the text gives no number for is "unknown".
_RELEASE = re.compile(r"\b0\.(\d+)\.(\d+)")


def release_family(lab: dict) -> str:
    """The release family of a label's ``sglang_version`` ("0.4.5-0.4.9"), "unknown" when it names none."""
    m = _RELEASE.search(str(lab.get("sglang_version") or ""))
    if m is None:
        return "unknown"
    minor, low = int(m.group(1)), int(m.group(2)) // 5 * 5
    return f"0.{minor}.{low}-0.{minor}.{low + 4}"


def count(parts=TUNED_PARTS, root: Path = ROOT, skip_repo: str | None = None,
          skip_release: str | None = None) -> dict[str, dict[str, int]]:
    """Per labelled phase, the failures of each category in ``parts``; with ``skip_repo``, the labels
    whose thread is in that repository are left out (bench/guess_cv.py's leave-one-repository-out); with
    ``skip_release``, those of that release family (``release_family``; leave-one-release-out)."""
    out: dict[str, dict[str, int]] = {}
    for part in parts:
        if part not in TUNED_PARTS + READ_ONLY_PARTS:
            raise SystemExit(f"guess_prior: {part} is not a tuned part ({', '.join(TUNED_PARTS + READ_ONLY_PARTS)})")
        for lab, cat in failures(part, root):
            if skip_repo is not None and source_repo(lab) == skip_repo:
                continue
            if skip_release is not None and release_family(lab) == skip_release:
                continue
            row = out.setdefault(lab.get("phase") or "unknown", {})
            row[cat] = row.get(cat, 0) + 1
    return {phase: dict(sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))) for phase, row in sorted(out.items())}


def no_cause(part: str, root: Path = ROOT) -> list[dict]:
    """The labels of a part's failures whose cause is not in the text (``evidence_in_log: false``)."""
    with open(root / "corpus" / part / "labels.yaml", encoding="utf-8") as fh:
        labels = yaml.safe_load(fh) or []
    return [lab for lab in labels if isinstance(lab, dict) and lab.get("category") not in (None, "none")
            and not lab.get("evidence_in_log") and (root / "corpus" / part / lab["file"]).is_file()]


_LAYER_RANK = {"specific": 2, "class": 1, "fallback": 0}
_RULESET: list = []


def run(path: Path):
    """(pipeline, diagnoses, primary diagnosis or None) for one file, as bench/accuracy.py runs it."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline, open_log

    if not _RULESET:
        _RULESET.append(RuleSet.load([]))
    pipe = StreamPipeline(_RULESET[0], remediate=False, whole_log=True)
    events = []
    for block in open_log(path):
        events += pipe.feed(block)
    events += pipe.finish()
    diagnoses = [e["_diagnosis"] for e in events if e.get("event") == "incident"]
    if not diagnoses:
        return pipe, diagnoses, None
    ranked = sorted(enumerate(diagnoses), key=lambda p: (-_LAYER_RANK.get(p[1].layer or "fallback", 0),
                                                         -float(p[1].confidence or 0), p[0]))
    return pipe, diagnoses, ranked[0][1]


def guess_of(path: Path) -> dict:
    """The best guess bench/accuracy.py scores: the primary incident's fallback, or the summary's."""
    pipe, diagnoses, primary = run(path)
    if primary is None:
        fb = pipe.summary().get("fallback") or {}
        return fb.get("best_guess") or {}
    fb = primary.fallback or next((d.fallback for d in diagnoses if d.fallback), None) or {}
    return fb.get("best_guess") or {}


def held_out_guesses(parts, prior_parts=TUNED_PARTS, root: Path = ROOT) -> list[dict]:
    """The guess on every no-cause fragment of ``parts``, each part run with the phase prior
    counted from ``prior_parts`` without it: {part, file, label, category, cue, kind, right}."""
    from sglang_doctor.diagnose import calibration, phase_prior

    saved = phase_prior.COUNTS
    out = []
    try:
        for part in parts:
            phase_prior.COUNTS = count(tuple(p for p in prior_parts if p != part), root)
            for lab in no_cause(part, root):
                g = guess_of(root / "corpus" / part / lab["file"])
                cue, kind = calibration.cue_of(g)
                out.append({"part": part, "file": lab["file"], "label": lab.get("best_guess_category"),
                            "category": g.get("category"), "cue": cue, "kind": kind, "ground": calibration.ground_of(g),
                            "right": g.get("category") == lab.get("best_guess_category")})
    finally:
        phase_prior.COUNTS = saved
    return out


def calibration_data(parts=TUNED_PARTS + READ_ONLY_PARTS, prior_parts=TUNED_PARTS) -> dict:
    from sglang_doctor.diagnose import calibration

    rows = held_out_guesses(parts, prior_parts)
    return {"parts": list(parts), "prior_parts": list(prior_parts),
            **calibration.count((r["cue"], r["kind"], r["right"], r["part"], r["ground"]) for r in rows)}


def data(parts=TUNED_PARTS) -> dict:
    return {"parts": list(parts), "phase_counts": count(parts)}


def main(argv: list[str]) -> int:
    write = "--write" in argv
    if "--calibrate" in argv:
        sys.path.insert(0, str(ROOT))
        from sglang_doctor.diagnose import calibration

        text = re.sub(r"\[\s+([\d.]+),\s+([\d.]+)\s+\]", r"[\1, \2]", json.dumps(calibration_data(), indent=1)) + "\n"
        target = calibration.DATA
    else:
        parts = tuple(a for a in argv if a != "--write") or TUNED_PARTS
        text = json.dumps(data(parts), indent=1, sort_keys=False) + "\n"
        from sglang_doctor.diagnose.phase_prior import DATA as target
    if write:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
