"""How well the honest fallback's best guess carries to logs it was not tuned on.

For the fragments of the tuned corpus parts whose cause is not in the text
(``evidence_in_log: false``), runs the pipeline in this process and compares the best guess
with ``best_guess_category``, as bench/accuracy.py does (the primary incident's fallback, or
the summary's for a text with no incident).  Four figures:

- in-part: the phase prior (diagnose/phase_prior.py) counted from every tuned part, the
  shipped settings: what ``bench/accuracy.py`` reports;
- leave-one-part-out (the main figure, the held-back situation): for each tuned part, every
  counted table (the phase prior) is counted again from the *other* parts' labels only,
  at the shipped weight, and the part left out is scored.  A held-back part is a new source
  nobody counted, and this is the figure that predicts it.  The folds are ``CV_PARTS``: the
  prior's parts (``TUNED_PARTS``) and the tuned parts the shipped prior does not count
  (``READ_ONLY_PARTS``: none since session 18, when the prior came to count every tuned part), scored with the prior counted from ``TUNED_PARTS``
  (``--prior-parts`` counts another set, e.g. all of them, for an experiment);
- rotation: the same, but the prior's weight is also chosen on the three training parts from
  ``--weights`` (the session 8 figure; it can only move where the training parts disagree with
  the shipped weight);
- calibration: how often a guess at each band of stated confidence was right, leave-one-part-out
  and nested (each part's stated confidence comes from a calibration table counted without it,
  diagnose/calibration.py), with the calibration error (``calibration_error``: the bands'
  |confidence - rate| weighted by their guesses, its over-stated part, the Brier score), and the
  same for the weighed strength the guess stated before it was measured;
- with ``--counted``: counted-evidence variants (naive Bayes over a few cue families, counted on
  the other parts with smoothing, alone or gated by the current answer), two baselines (the
  training parts' commonest no-cause category; the phase prior's top category) and a nested
  choice among them and the current code, on the same folds (see ``counted_report``).

What neither rotation can measure: the hand-written weights of diagnose/evidence.py (WHERE,
WORDS, SIGNALS) were written by people who had read every tuned part, so the tuned figures
overstate a new part by however much those weights fit these files (docs/GUESS-MISSES.md).

The cut check (``--cut-check``): the tuned failures whose cause IS in the text, cut above the line that
names it and kept in the shapes pastes take (``--cut-shapes``: everything above, ``tail -20``, the second
half, the last frames, the ``[rankN]:`` lines, the lines of rank TP0), with ``--cut-real`` the real runs of fixtures/real too;
``--categories`` prints each category's right answers and how often it was answered for another label.

Usage: ``python bench/guess_cv.py [--weights 0.3,0.4,0.5,0.6] [--verbose] [--json] [--counted] [--prior-parts A,B,...]``
(``--counted`` folds over ``TUNED_PARTS`` only).  Never run on the
sealed parts (it reads only the tuned ones).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from guess_prior import READ_ONLY_PARTS, TUNED_PARTS, count, failures, release_family, source_repo  # noqa: E402
from guess_prior import guess_of, no_cause  # noqa: E402,F401  (guess_of, no_cause: used by tests and --counted)
from guess_prior import run as _run  # noqa: E402

# the folds: every tuned part; the read-only ones (tuned for rules, not counted in the shipped prior)
# are scored too, with the prior counted from the prior's parts, never from the part held out
CV_PARTS = TUNED_PARTS + READ_ONLY_PARTS

from sglang_doctor.diagnose import calibration as calib  # noqa: E402
from sglang_doctor.diagnose import phase_prior  # noqa: E402


def measure(parts, counts, weight: float) -> list[tuple]:
    """(part, label, guess, stated confidence, file, cue, kind, strength, grounds) for every no-cause fragment of
    ``parts``, with the phase prior ``counts`` at ``weight``.  The stated confidence is the shipped
    calibration table's (in-sample for these parts); ``nested_calibration`` states it again without
    the part."""
    return measure_labels([(part, lab) for part in parts for lab in no_cause(part)], counts, weight)


def measure_labels(items, counts, weight: float) -> list[tuple]:
    """``measure``'s rows for the (part, label) pairs ``items``."""
    saved = phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT
    phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT = counts, weight
    try:
        out = []
        for part, lab in items:
            g = guess_of(ROOT / "corpus" / part / lab["file"])
            cue, kind = calib.cue_of(g)
            out.append((part, lab.get("best_guess_category"), g.get("category"), float(g.get("confidence") or 0),
                        lab["file"], cue, kind, calib.strength(g), grounds_of(g)))
        return out
    finally:
        phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT = saved


GROUNDS = ("text", "rule", "phase/around", "none")


def grounds_of(guess: dict) -> str:
    """What a guess rests on (evidence.GROUNDS), the phase and the words around taken together:
    the text's own evidence, a rule's answer, only the phase / the lines around, nothing (the
    calibration's first step counts the same, ``calibration.ground_of``)."""
    return calib.ground_of(guess)


def by_grounds(rows) -> dict[str, dict[str, int]]:
    """Right answers per ground (rows with their grounds, ``measure``'s last field)."""
    out = {}
    for ground in GROUNDS:
        h, n = hits([r for r in rows if len(r) > 8 and r[8] == ground])
        out[ground] = {"right": h, "total": n}
    return out


def hits(rows) -> tuple[int, int]:
    return sum(r[1] == r[2] for r in rows), len(rows)


BANDS = ((0.0, 0.15), (0.15, 0.25), (0.25, 0.35), (0.35, 0.5), (0.5, 0.65), (0.65, 0.8), (0.8, 1.01))


def calibration(rows, index: int = 3, bands=BANDS) -> list[dict]:
    """Per band of the confidence at ``index`` of each row (3: the stated one; 7: the weighed
    strength): how many guesses, how many right, the mean confidence, and by how much the band
    was over-stated (mean confidence above the rate)."""
    out = []
    for lo, hi in bands:
        sel = [r for r in rows if lo <= r[index] < hi]
        h, n = hits(sel)
        mean = sum(r[index] for r in sel) / n if n else None
        out.append({"confidence": f"[{lo:.2f}, {min(hi, 1.0):.2f}{')' if hi < 1 else ']'}", "right": h, "guesses": n,
                    "rate": round(h / n, 3) if n else None,
                    "mean_confidence": round(mean, 3) if n else None,
                    "over_stated": round(max(0.0, mean - h / n), 3) if n else None})
    return out


def calibration_error(rows, index: int = 3, edges=BANDS) -> dict:
    """The expected calibration error (the bands' |mean confidence - rate|, weighted by their
    guesses), its over-stated part alone (bands whose confidence is above their rate), the worst
    over-stated band of at least 5 guesses, and the Brier score (mean squared error of the
    confidence against right = 1 / wrong = 0)."""
    bands = calibration(rows, index, edges)
    total = sum(b["guesses"] for b in bands) or 1
    ece = sum(b["guesses"] * abs(b["mean_confidence"] - b["rate"]) for b in bands if b["guesses"]) / total
    over = sum(b["guesses"] * b["over_stated"] for b in bands if b["guesses"]) / total
    worst = max((b["over_stated"] for b in bands if b["guesses"] >= 5), default=0.0)
    brier = sum((r[index] - (r[1] == r[2])) ** 2 for r in rows) / max(len(rows), 1)
    return {"ece": round(ece, 3), "over_stated": round(over, 3), "worst_band_over_stated": round(worst, 3),
            "brier": round(brier, 3), "guesses": len(rows)}


BAND_SHIFTS = (-0.04, -0.02, 0.0, 0.02, 0.04)


def shifted(offset: float) -> tuple[tuple[float, float], ...]:
    """``BANDS`` with every inner edge moved by ``offset`` (the outer ones stay 0 and 1.01)."""
    edges = [lo for lo, _ in BANDS] + [BANDS[-1][1]]
    moved = [edges[0]] + [e + offset for e in edges[1:-1]] + [edges[-1]]
    return tuple(zip(moved[:-1], moved[1:]))


def equal_mass(rows, index: int = 3, n_bands: int = 8) -> tuple[tuple[float, float], ...]:
    """Bands holding (about) the same number of guesses each, by the confidence at ``index``."""
    values = sorted(r[index] for r in rows)
    if not values:
        return BANDS
    cuts = sorted({values[min(len(values) - 1, (i * len(values)) // n_bands)] for i in range(1, n_bands)})
    edges = [0.0] + [c for c in cuts if 0.0 < c < 1.01] + [1.01]
    return tuple(zip(edges[:-1], edges[1:]))


def edge_sensitivity(rows, index: int = 3) -> dict:
    """How much the binned calibration error owes to where the band edges fall: the error with
    every inner edge of ``BANDS`` moved by each of ``BAND_SHIFTS`` (min, mean, max) and with
    equal-mass bands.  Stated figures that sit on an edge (many guesses are stated 0.33-0.36) move
    between bands when a change moves them by 0.01; the Brier score has no bands."""
    errors = [calibration_error(rows, index, shifted(o))["ece"] for o in BAND_SHIFTS]
    return {"shifts": list(BAND_SHIFTS), "ece": errors, "min": min(errors), "max": max(errors),
            "mean": round(sum(errors) / len(errors), 3),
            "equal_mass": calibration_error(rows, index, equal_mass(rows, index))["ece"]}


def nested_calibration(lopo_rows, parts=None, prior_parts=None) -> list[tuple]:
    """``lopo_rows`` with each held part's stated confidence counted without it: for each held part
    H, the calibration table (diagnose/calibration.py) is counted from the guesses on every other
    fold P, each run with the prior counted from ``prior_parts`` without H and P (what
    ``scripts/guess_prior.py --calibrate`` does with H absent), then H's guesses are stated from
    that table by their cue.  The figure a new part would see."""
    parts = CV_PARTS if parts is None else tuple(parts)
    prior_parts = TUNED_PARTS if prior_parts is None else tuple(prior_parts)
    out = []
    for held in parts:
        train = []
        for other in parts:
            if other != held:
                counts = count(tuple(p for p in prior_parts if p not in (held, other)))
                train += measure((other,), counts, phase_prior.PRIOR_WEIGHT)
        # (the part: calibration's design effect; the ground, when the rows have it: its first step)
        grounded = all(len(r) > 8 for r in train)
        table = calib.count((r[5], r[6], r[1] == r[2], r[0]) + ((r[8],) if grounded else ()) for r in train)
        out += [r[:3] + (calib.estimate(r[5], r[6], table, r[8] if len(r) > 8 else None)[0],) + r[4:]
                for r in lopo_rows if r[0] == held]
    return out


def leave_one_part_out(weight: float | None = None, weights=(), parts=None, prior_parts=None) -> tuple[list, dict]:
    """Rows scored with the counted tables fitted on the other parts; with ``weights``, the prior's
    weight too is chosen on those parts (rotation).  ``parts`` are the folds (``CV_PARTS``),
    ``prior_parts`` the parts the prior may count (``TUNED_PARTS``, the shipped choice): each fold
    counts ``prior_parts`` without the part held out.  Returns (rows, per-part report)."""
    parts = CV_PARTS if parts is None else tuple(parts)
    prior_parts = TUNED_PARTS if prior_parts is None else tuple(prior_parts)
    rows, report = [], {}
    for held in parts:
        train = tuple(p for p in prior_parts if p != held)
        counts = count(train)
        chosen = phase_prior.PRIOR_WEIGHT if weight is None else weight
        scored = {}
        if len(weights) == 1:
            chosen = weights[0]  # one weight to choose from: nothing to score on the training parts
        elif weights:
            scored = {w: hits(measure(train, counts, w))[0] for w in weights}
            chosen = max(weights, key=lambda w: (scored[w], -abs(w - phase_prior.PRIOR_WEIGHT)))
        held_rows = measure((held,), counts, chosen)
        rows += held_rows
        h, n = hits(held_rows)
        report[held] = {"right": h, "total": n, "weight": chosen, "train_right": scored}
    return rows, report


def leave_one_repo_out(parts=None, prior_parts=None) -> tuple[list, dict]:
    """Like ``leave_one_part_out``, with the source repository of each label's thread as the fold:
    every no-cause fragment of ``parts`` whose thread is in repository R is scored with the phase
    prior counted from ``prior_parts`` without any label of R (in any part).  The held-back parts come
    from threads nobody counted, often of repositories no tuned part has; a part of the tuned corpus
    shares its repository (mostly sgl-project/sglang) with the others, which leave-one-part-out does
    not take away.  Returns (rows, per-repository report)."""
    return _leave_one_group_out(parts, prior_parts, source_repo, "skip_repo",
                                order=lambda kv: (-len(kv[1]), kv[0]))


def leave_one_release_out(parts=None, prior_parts=None) -> tuple[list, dict]:
    """Like ``leave_one_repo_out``, with the release family of each label's ``sglang_version`` as the
    fold (``guess_prior.release_family``: about five patch releases, "unknown" when the label names
    none): every no-cause fragment of a family is scored with the phase prior counted without any
    label of that family.  A held-back part may come from releases the tuned parts hold few of."""
    return _leave_one_group_out(parts, prior_parts, release_family, "skip_release", order=lambda kv: kv[0])


def _leave_one_group_out(parts, prior_parts, group_of, skip: str, order) -> tuple[list, dict]:
    """The no-cause fragments of ``parts`` grouped by ``group_of(label)``; each group scored with the
    phase prior counted from ``prior_parts`` without that group's labels (``count(..., **{skip: group})``),
    at the shipped weight.  Returns (rows, per-group report), the groups in ``order``."""
    parts = CV_PARTS if parts is None else tuple(parts)
    prior_parts = TUNED_PARTS if prior_parts is None else tuple(prior_parts)
    groups: dict[str, list] = {}
    for part in parts:
        for lab in no_cause(part):
            groups.setdefault(group_of(lab), []).append((part, lab))
    rows, report = [], {}
    for group, items in sorted(groups.items(), key=order):
        held_rows = measure_labels(items, count(prior_parts, **{skip: group}), phase_prior.PRIOR_WEIGHT)
        rows += held_rows
        h, n = hits(held_rows)
        report[group] = {"right": h, "total": n}
    return rows, report


# -- the cut check: texts whose cause IS in them, with the cause cut off ---------------------------
# What a paste that stops above its error leaves (a ``tail`` taken too early, an excerpt cut at the
# traceback's last frame): every labelled failure of the tuned parts whose cause is in the text, cut
# before the line that names it (the label's ``key_line``; for a CUDA OOM also before the first line
# that says so, torch's or the allocator's words), and the rest run as a whole log.  The answer is not
# tuned per file: it measures how often the guess names a CUDA OOM that lost its line (the hit rate)
# and how often it names one for another failure cut the same way (the false-guess rate).
_OOM_LINE = re.compile(r"(?i)out of memory|OutOfMemoryError|Tried to allocate|CUDA_ERROR_OUT_OF_MEMORY|"
                       r"cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED")
OOM = "memory.cuda_oom"


def cut_index(lines: list[str], lab: dict) -> int | None:
    """The first line of the text that names its cause (see above), None when the label's key line
    is not found in it."""
    key = str(lab.get("key_line") or "").strip()
    probes = [p for p in (key[:60], key.split("] ", 1)[-1].strip()[:60]) if len(p) >= 10]
    found = [i for i, line in enumerate(lines) if any(p in line for p in probes)]
    if lab.get("category") == OOM:
        found += [i for i, line in enumerate(lines) if _OOM_LINE.search(line)]
    return min(found) if found else None


def answer_of(path: Path) -> tuple[str | None, str]:
    """(category, how) the tool answers for a text: the best guess of its honest fallback ("guess"),
    or a rule's category when a rule still answers the cut text ("rule")."""
    pipe, diagnoses, primary = _run(path)
    if primary is None:
        return ((pipe.summary().get("fallback") or {}).get("best_guess") or {}).get("category"), "guess"
    if primary.fallback is None:
        return primary.category, "rule"
    return (primary.fallback.get("best_guess") or {}).get("category"), "guess"


# ``extra``: that many more lines cut above the cause line (a paste that also lost the traceback's last
# frames: with 2 the deepest frame's header and source line go too), which asks whether a reading holds
# when the line the traceback was executing is gone as well.
CUT_DEPTHS = (0, 2, 4)

# The shapes a paste that stops above its error takes (what is kept of the text above the cut):
# - ``above``: everything above it (a log read up to the wrong line, a ``head`` of the file);
# - ``tail``: its last ``TAIL_LINES`` lines (``tail -20`` run before the error was printed, the
#   commonest paste);
# - ``head_cut``: its second half only (a paste that began mid-log: no launch header, no command,
#   no server_args dump, no early milestones);
# - ``frames``: the traceback's last ``FRAME_LINES`` lines only (the last frames: a screenshot's
#   excerpt); left out when they hold no frame line;
# - ``rank``: only its ``[rankN]:`` lines (torchrun's per-rank prefix: a grep for the ranks' output);
#   left out when fewer than ``RANK_LINES_MIN`` lines carry it (the tuned texts: none above the cut);
# - ``tp0``: only the lines SGLang's logger prefixed for rank TP0 (``[2025-01-01 00:00:00 TP0] ...``,
#   ``grep TP0 LOG``): the milestones and batch lines stay, every traceback line (unprefixed) goes;
#   left out when fewer than ``RANK_LINES_MIN`` lines carry it.
CUT_SHAPES = ("above", "tail", "head_cut", "frames", "rank", "tp0")
TAIL_LINES = 20
FRAME_LINES = 6
RANK_LINES_MIN = 3
_RANK_PREFIX = re.compile(r"^\s*(?:\([^()\n]*\)\s*)?\[rank\d+\]:")
_TP0_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z_]+\d+)*? TP0(?: [A-Z_]+\d+)*\]")
_FRAME_LINE = re.compile(r'^\s*(?:\[rank\d+\]:\s*)?File "')


def cut_shape(above: list[str], shape: str) -> list[str] | None:
    """What a paste of ``shape`` (``CUT_SHAPES``) keeps of the lines ``above`` a cut, None when the
    shape does not apply to this text (no frame in the last lines, too few rank lines)."""
    if shape == "above":
        return above
    if shape == "tail":
        return above[-TAIL_LINES:]
    if shape == "head_cut":
        return above[len(above) // 2:] or None
    if shape == "frames":
        last = above[-FRAME_LINES:]
        return last if any(_FRAME_LINE.match(line) for line in last) else None
    if shape == "rank":
        ranked = [line for line in above if _RANK_PREFIX.match(line)]
        return ranked if len(ranked) >= RANK_LINES_MIN else None
    if shape == "tp0":
        ranked = [line for line in above if _TP0_PREFIX.search(line[:120])]
        return ranked if len(ranked) >= RANK_LINES_MIN else None
    raise ValueError(f"unknown cut shape {shape!r}")


# The real runs of SGLang 0.5.23 on this machine (fixtures/real): each failing run's category is the
# one its rule gives (fixtures/EXPECTED.yaml), its cause line the manifest's ``expect``.
REAL_RUNS = ROOT / "fixtures" / "real"


def real_failures():
    """(label, category) for every failing real run of fixtures/real, shaped like a corpus label
    (``file``, ``key_line``, ``evidence_in_log``): the cut check cuts them the same way."""
    import yaml

    manifest = json.loads((REAL_RUNS / "manifest.json").read_text(encoding="utf-8"))
    expected = (yaml.safe_load((ROOT / "fixtures" / "EXPECTED.yaml").read_text(encoding="utf-8")) or {})["fixtures"]
    for run in manifest:
        incidents = expected.get(f"fixtures/real/{run['name']}.log") or []
        if not incidents or not run.get("expect"):
            continue  # a healthy run
        yield ({"file": f"{run['name']}.log", "key_line": run["expect"], "evidence_in_log": True,
                "category": incidents[0]["category"]}, incidents[0]["category"])


def _cut_sources(parts, real: bool):
    """(shown name, path, label, category) of every text the cut check cuts."""
    for part in parts:
        for lab, cat in failures(part):
            yield f"{part}/{lab['file']}", ROOT / "corpus" / part / lab["file"], lab, cat
    if real:
        for lab, cat in real_failures():
            yield f"real/{lab['file']}", REAL_RUNS / lab["file"], lab, cat


def cut_check(parts=None, extra: int = 0, shape: str = "above", real: bool = False) -> dict:
    """The cut check's rows and rates (see above) over ``parts`` (every tuned part; with ``real`` the
    real runs of fixtures/real too), cut ``extra`` lines further up (``CUT_DEPTHS``) and kept in the
    paste ``shape`` (``CUT_SHAPES``)."""
    import tempfile

    parts = CV_PARTS if parts is None else tuple(parts)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, lab, cat in _cut_sources(parts, real):
            if not lab.get("evidence_in_log") or not path.is_file():
                continue
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            i = cut_index(lines, lab)
            i = None if i is None else i - extra
            if not i or i < 0:
                continue  # key line not found, or the text begins with it: nothing is left above it
            kept = cut_shape(lines[:i], shape)
            if not kept:
                continue
            cut = Path(tmp) / Path(lab["file"]).name
            cut.write_text("".join(kept), encoding="utf-8")
            answer, how = answer_of(cut)
            rows.append({"file": name, "label": cat, "answer": answer, "how": how})
    return cut_summary(rows, extra, shape)


def cut_summary(rows: list[dict], extra: int = 0, shape: str = "above") -> dict:
    """The cut check's figures from its rows: the CUDA OOMs' (hit rate, false OOMs by label), and for
    every category its texts answered right (``by_label``: right, total, what the misses were answered
    as) and how often it was answered for a text of another label (``false_by_answer``)."""
    oom = [r for r in rows if r["label"] == OOM]
    other = [r for r in rows if r["label"] != OOM]
    false_by_label: dict[str, int] = {}
    for r in other:
        if r["answer"] == OOM:
            false_by_label[r["label"]] = false_by_label.get(r["label"], 0) + 1
    oom_answers: dict[str, int] = {}
    for r in oom:
        oom_answers[str(r["answer"])] = oom_answers.get(str(r["answer"]), 0) + 1
    by_label: dict[str, dict] = {}
    false_by_answer: dict[str, int] = {}
    for r in rows:
        cell = by_label.setdefault(r["label"], {"right": 0, "total": 0, "answered_as": {}})
        cell["total"] += 1
        if r["answer"] == r["label"]:
            cell["right"] += 1
        else:
            cell["answered_as"][str(r["answer"])] = cell["answered_as"].get(str(r["answer"]), 0) + 1
            false_by_answer[str(r["answer"])] = false_by_answer.get(str(r["answer"]), 0) + 1
    return {"rows": rows, "extra": extra, "shape": shape,
            "oom_said": sum(r["answer"] == OOM for r in oom), "oom_total": len(oom),
            "false_oom": sum(r["answer"] == OOM for r in other), "other_total": len(other),
            "false_oom_by_label": false_by_label, "oom_answers": oom_answers,
            "by_label": dict(sorted(by_label.items(), key=lambda kv: (-kv[1]["total"], kv[0]))),
            "false_by_answer": dict(sorted(false_by_answer.items(), key=lambda kv: (-kv[1], kv[0]))),
            "right": sum(r["answer"] == r["label"] for r in rows), "total": len(rows), "halves": halves(rows)}


def print_cut_check(report: dict, verbose: bool, categories: bool = False) -> None:
    if verbose:
        for r in report["rows"]:
            if r["label"] != r["answer"]:
                print(f"cut  {r['file'][:70]:70} label {r['label']:22} answer {r['answer']} ({r['how']})")
    deeper = f" (and {report['extra']} lines more)" if report.get("extra") else ""
    shape = report.get("shape", "above")
    print(f"cut check [{shape}]{deeper}: CUDA OOMs cut above their line answered cuda_oom "
          f"{report['oom_said']}/{report['oom_total']}; "
          f"other failures cut the same way answered cuda_oom {report['false_oom']}/{report['other_total']}; "
          f"every cut text right {report['right']}/{report['total']}")
    if report.get("halves"):
        print("  by half (a hash of the file): " + ", ".join(f"{h} {c['right']}/{c['total']}"
                                                         for h, c in report["halves"].items()))
    print("  the OOMs answered: " + ", ".join(f"{k} {v}" for k, v in sorted(report["oom_answers"].items(),
                                                                              key=lambda kv: -kv[1])))
    if report["false_oom_by_label"]:
        print("  others answered cuda_oom, by label: " + ", ".join(f"{k} {v}" for k, v in
                                                                 sorted(report["false_oom_by_label"].items())))
    if categories:
        for label, c in report["by_label"].items():
            missed = ", ".join(f"{a} {n}" for a, n in sorted(c["answered_as"].items(), key=lambda kv: -kv[1]))
            wrong_for = report["false_by_answer"].get(label, 0)
            print(f"  {label:22} right {c['right']:>3}/{c['total']:<3} answered for another label {wrong_for:>3}"
                  + (f"  (missed as: {missed})" if missed else ""))


# -- the halves: a synthetic case is tuned on or held back by a hash of its source ------------------


def half_of(name: str) -> str:
    """``tune`` or ``held`` for a case named ``name`` (a corpus file, a failure site): a fixed hash of the
    name, so a change is tuned on one half and the other stays unread (session 36)."""
    import hashlib

    return "tune" if int(hashlib.sha1(name.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "held"


def halves(rows: list[dict], key: str = "file") -> dict[str, dict[str, int]]:
    """Right answers per half (``half_of`` the row's ``key``)."""
    out = {"tune": {"right": 0, "total": 0}, "held": {"right": 0, "total": 0}}
    for r in rows:
        if key not in r:
            continue
        cell = out[half_of(r[key])]
        cell["total"] += 1
        cell["right"] += r["answer"] == r["label"]
    return out


# -- the raise-site check: SGLang's own raise / assert sites, cut just above their exception line -----
#
# For every raise / assert failure site of the five inventoried releases whose right answer is a category
# (data/inventory/sglang-VERSION.json, as scripts/gen_raise_sites.py reads them), a fragment is rendered
# as a paste that lost the traceback's last line: the scheduler's header and its run_scheduler_process
# frame, then the site's own frame with the source line the wheel has at that line (``raise ValueError(``,
# ``assert ...``), and no exception line.  The best guess is scored against the site's category with the
# raise-site reading off (the tool before session 36) and on, the reading's table counted from the
# ``tune`` half of the sites only (``half_of`` file::function::template): a ``held`` site is read
# through the other sites of its function alone, the situation of a site no table saw.  Not real data.


def _wheel_lines(name: str):
    """file -> its lines, read from the wheel of inventory ``name`` (``sglang-0.5.23``,
    ``flashinfer-python-0.7.2``) in ~/.cache/sglang-doctor/wheels; None when it is not there."""
    import zipfile

    wheel_dir = Path.home() / ".cache" / "sglang-doctor" / "wheels"
    dist, _, version = name.rpartition("-")
    found = sorted(wheel_dir.glob(f"{dist.replace('-', '_')}-{version}-*.whl")) + sorted(
        wheel_dir.glob(f"{dist}-{version}-*.whl"))
    if not found:
        return None
    zf = zipfile.ZipFile(found[0])
    names = set(zf.namelist())
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in cache:
            inside = "sglang/" + path if dist == "sglang" else path
            cache[path] = (zf.read(inside).decode("utf-8", errors="replace").splitlines() if inside in names else [])
        return cache[path]
    return lines


def raise_site_cases() -> list[dict]:
    """One case per distinct raise / assert site (see above) whose right answer is a category: file,
    function, line, source line, kind, exception, label (the right answer), row (the category the table
    holds for it: ``unnamed`` for a waiver answered ``other``), the head its template begins with, and its
    half."""
    import gen_raise_sites as gen

    seen: set[tuple] = set()
    cases: list[dict] = []
    wheels: dict[str, object] = {}
    for site, name, row, right in gen.site_rows():
        if right == "none" or row == gen.BY_PHASE:
            continue
        function = site["function"].rsplit(".", 1)[-1]
        key = (site["file"], function, site["kind"], site["exception"], site["template"])
        if key in seen:
            continue
        seen.add(key)
        if name not in wheels:
            wheels[name] = _wheel_lines(name)
        text = wheels[name](site["file"]) if wheels[name] else []
        source = text[site["line"] - 1].strip() if 0 < site["line"] <= len(text) else ""
        if not source:
            continue
        cases.append({"file": site["file"], "function": function, "line": site["line"], "source": source,
                      "kind": site["kind"], "exception": gen.exception_of(site), "label": right, "row": row,
                      "head": gen.head_of(site.get("full") or site["template"]),
                      "half": half_of(f"{site['file']}::{function}::{site['template']}")})
    return cases


_PREFIX = "/usr/local/lib/python3.12/dist-packages/"


def _path(case: dict) -> str:
    return _PREFIX + ("sglang/" if case["file"].startswith("srt/") else "") + case["file"]


def render_raise_site(case: dict) -> str:
    """The fragment of a case: the scheduler's header, its constructor frame, the site's frame, no
    exception line."""
    return ("[2026-01-01 00:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{_PREFIX}sglang/srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
            "    scheduler = Scheduler(\n"
            f'  File "{_path(case)}", line {case["line"]}, in {case["function"]}\n'
            f"    {case['source']}\n")


def raise_site_check(every: int = 1) -> dict:
    """The raise-site check's figures (see above): per half, the guesses right with the reading off and on
    (its table from the tune half), and how often the reading fired."""
    import tempfile

    from sglang_doctor.diagnose import evidence, raise_sites

    cases = raise_site_cases()
    tune = {}
    for c in cases:  # (the table from every tune site; the fragments of every ``every``-th site)
        if c["half"] == "tune":
            tune.setdefault(f"{c['file']}::{c['function']}", set()).add((c["kind"], c["exception"], c["row"], c["head"]))
    tune_table = {k: [list(r) for r in sorted(v)] for k, v in tune.items()}
    saved_table, saved_share = raise_sites._table, evidence.RAISE_SITE_MIN_SHARE
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "site.log"
            for c in cases[::every]:
                path.write_text(render_raise_site(c), encoding="utf-8")
                evidence.RAISE_SITE_MIN_SHARE = 2.0  # the reading off
                off, _ = answer_of(path)
                evidence.RAISE_SITE_MIN_SHARE = saved_share
                raise_sites._table = lambda: tune_table
                raise_sites._modules.cache_clear()
                on, _ = answer_of(path)
                found = raise_sites.reading(_frame_of(c))  # (with the tune half's table)
                fired = found is not None and found.share > saved_share
                raise_sites._table = saved_table
                raise_sites._modules.cache_clear()
                rows.append({**c, "off": off, "on": on, "fired": fired})
    finally:
        raise_sites._table, evidence.RAISE_SITE_MIN_SHARE = saved_table, saved_share
        raise_sites._modules.cache_clear()
    report: dict = {"cases": len(rows)}
    for half in ("tune", "held"):
        mine = [r for r in rows if r["half"] == half]
        report[half] = {"total": len(mine), "right_off": sum(r["off"] == r["label"] for r in mine),
                        "right_on": sum(r["on"] == r["label"] for r in mine),
                        "lost": sum(r["off"] == r["label"] != r["on"] for r in mine),
                        "fired": sum(r["fired"] for r in mine),
                        "right_where_fired": sum(r["fired"] and r["on"] == r["label"] for r in mine),
                        "by_label": _by_label_on_off(mine)}
    report["rows"] = rows
    return report


def _frame_of(case: dict):
    from sglang_doctor.model import Frame

    return Frame(file=_path(case), line=case["line"], function=case["function"], source=case["source"])


def _by_label_on_off(rows: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for r in rows:
        cell = out.setdefault(r["label"], [0, 0, 0])
        cell[0] += r["off"] == r["label"]
        cell[1] += r["on"] == r["label"]
        cell[2] += 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1][2]))


def print_raise_site_check(report: dict) -> None:
    print(f"raise-site check: {report['cases']} sites (SGLang's raise / assert sites, cut just above the exception "
          "line); the reading's table from the tune half only")
    for half in ("tune", "held"):
        h = report[half]
        print(f"  {half:4}: right with the reading off {h['right_off']}/{h['total']}, on {h['right_on']}/{h['total']} "
              f"(right before, wrong after: {h['lost']}); the reading named a category for {h['fired']}, "
              f"the guess right on {h['right_where_fired']} of them")
        for label, (off, on, n) in h["by_label"].items():
            print(f"      {label:22} {off:>4} -> {on:>4} / {n}")


def _total(report: dict) -> tuple[int, int]:
    return sum(r["right"] for r in report.values()), sum(r["total"] for r in report.values())


# -- counted evidence: would a counted combination carry better than the hand-written weights? ---
#
# The guess adds up hand-written weights (diagnose/evidence.py).  The alternative measured here
# (``--counted``) keeps only what the text shows, as a few cue families, and counts on the training
# parts how often each value of each family came with each category, like the phase prior; a naive
# Bayes combination of the counts (every count smoothed towards the family's whole-table share,
# ``alpha`` pseudo-counts) names the category.  Each variant is scored leave-one-part-out, next to
# the current code and two baselines, on the same folds; "gated" keeps the current answer unless
# the counted posterior of its own top is at least ``GATE``; "nested" chooses, for each held part,
# among the current code and every variant by leave-one-part-out on the training parts alone (ties
# go to the current code), which is the honest figure for "adopt the best of them".

CUE_SETS = {
    # what the text shows, read by no hand-written table: the phase, the incident's kind, the
    # module of the deepest SGLang frame, the library below it, the failure lines' names
    "raw": ("phase", "kind", "module", "library", "signals"),
    # the phase and kind, and the categories evidence.py's detectors point to (their weights left out)
    "pieces": ("phase", "kind", "piece_cats"),
}
GATE = 0.5


def _module(path: str) -> str:
    """``srt/managers`` for .../sglang/srt/managers/scheduler.py (a file at the top: its name)."""
    parts = path.replace("\\", "/").rsplit("/sglang/", 1)[-1].split("/")
    return "/".join(parts[:2]).removesuffix(".py")


def _library(frames) -> str:
    """The package of the deepest frame below SGLang's own (``torch/distributed``, ``triton``)."""
    ours = [i for i, f in enumerate(frames) if "/sglang/" in f.file.replace("\\", "/")]
    below = frames[ours[-1] + 1:] if ours else []
    if not below:
        return "none"
    path = below[-1].file.replace("\\", "/")
    for root in ("/site-packages/", "/dist-packages/"):
        if root in path:
            rest = path.split(root, 1)[1].split("/")
            return "/".join(rest[:2]).removesuffix(".py") if rest[0] == "torch" else rest[0]
    return "other"


def cues_of(path: Path) -> dict:
    """The cue families of one file (``CUE_SETS``): one value each, or a list for a set."""
    from sglang_doctor.diagnose import evidence, fallback
    from sglang_doctor.incidents.tracebacks import sglang_frames

    pipe, _, d = _run(path)
    if d is None:
        phase, _ = fallback.text_phase(pipe.assembler.launches, pipe._tail)
        cats = sorted({e.category for e in evidence.from_text(list(reversed(fallback._last_lines(pipe._tail, 40))))})
        return {"phase": phase or "none", "kind": "none", "module": "none", "library": "none", "signals": [],
                "piece_cats": cats}
    inc = d.incident
    cut = inc.kind == "traceback" and (inc.exception is None or not inc.exception.type)
    found = evidence.context_phase(d)
    ours = sglang_frames(inc.frames)
    pieces = [p for p in evidence.collect(d) if not p.name.startswith("prior:") and p.weight > 0]
    return {"phase": found[0] if found else "none", "kind": inc.kind + (":cut" if cut else ""),
            "module": _module(ours[-1].file) if ours else "none", "library": _library(inc.frames),
            "signals": sorted(set(inc.signal_names)), "piece_cats": sorted({p.category for p in pieces})}


def labelled(parts) -> list[dict]:
    """Every labelled failure of ``parts`` with its category (``best_guess_category`` when the
    cause is not in the text) and whether the cause is in the text."""
    return [{"part": part, "file": lab["file"], "label": cat, "no_cause": not lab.get("evidence_in_log")}
            for part in parts for lab, cat in failures(part, ROOT)
            if (ROOT / "corpus" / part / lab["file"]).is_file()]


def _tokens(cues: dict, families) -> list[tuple[str, str]]:
    out = []
    for fam in families:
        value = cues.get(fam, "none")
        values = value if isinstance(value, list) else [value]
        out += [(fam, v) for v in (values or ["none"])]
    return out


class CountedGuess:
    """Naive Bayes over cue families, counted on ``rows`` (each with ``label`` and ``cues``).

    P(value | category) = (n(category, value) + alpha * share(value)) / (n(category) + alpha), with
    share(value) the value's share of its family over every category (add-half smoothed), so that a
    value seen with a category a few times moves it little; the class prior is add-``beta``/K."""

    def __init__(self, rows, families, alpha: float = 10.0, beta: float = 2.0):
        self.families, self.alpha = tuple(families), alpha
        self.classes: dict[str, int] = {}
        self.pair: dict[tuple[str, str, str], int] = {}
        self.value: dict[tuple[str, str], int] = {}
        self.per_class: dict[tuple[str, str], int] = {}
        self.per_family: dict[str, int] = {}
        for r in rows:
            c = r["label"]
            self.classes[c] = self.classes.get(c, 0) + 1
            for fam, v in _tokens(r["cues"], self.families):
                self.pair[(fam, v, c)] = self.pair.get((fam, v, c), 0) + 1
                self.value[(fam, v)] = self.value.get((fam, v), 0) + 1
                self.per_class[(fam, c)] = self.per_class.get((fam, c), 0) + 1
                self.per_family[fam] = self.per_family.get(fam, 0) + 1
        n, k = sum(self.classes.values()), max(len(self.classes), 1)
        self.log_prior = {c: math.log((m + beta / k) / (n + beta)) for c, m in self.classes.items()}

    def _share(self, fam: str, v: str) -> float:
        seen = sum(1 for (f, _) in self.value if f == fam)
        return (self.value.get((fam, v), 0) + 0.5) / (self.per_family.get(fam, 0) + 0.5 * (seen + 1))

    def posterior(self, cues: dict) -> dict[str, float]:
        score = {}
        for c, lp in self.log_prior.items():
            for fam, v in _tokens(cues, self.families):
                share = self._share(fam, v)
                lp += math.log((self.pair.get((fam, v, c), 0) + self.alpha * share)
                               / (self.per_class.get((fam, c), 0) + self.alpha))
            score[c] = lp
        top = max(score.values())
        z = sum(math.exp(v - top) for v in score.values())
        return dict(sorted(((c, math.exp(v - top) / z) for c, v in score.items()), key=lambda kv: -kv[1]))


# a variant: (name, cue set, alpha, train on every labelled failure (True) or the no-cause ones, gated)
VARIANTS = tuple((f"{cs} a={a:g} {'all' if every else 'no-cause'}{' gated' if gated else ''}", cs, a, every, gated)
                 for cs in CUE_SETS for a in (2.0, 10.0) for every in (False, True) for gated in (False, True))


def _answer(variant, train_rows, rows, current: dict) -> dict:
    """{key: answer} for ``rows`` (no-cause ones), the variant counted on ``train_rows``; current =
    {key: the current code's answer}."""
    _, cue_set, alpha, every, gated = variant
    model = CountedGuess([r for r in train_rows if every or r["no_cause"]], CUE_SETS[cue_set], alpha)
    out = {}
    for r in rows:
        post = model.posterior(r["cues"])
        top = next(iter(post))
        out[r["key"]] = top if not gated or post[top] >= GATE else current[r["key"]]
    return out


def counted_report(lopo_rows, weight: float | None = None) -> dict:
    """Per held part: right answers of the current code (``lopo_rows``), of two baselines, of every
    counted variant and of the nested choice; all counted on the other tuned parts only."""
    weight = phase_prior.PRIOR_WEIGHT if weight is None else weight
    rows = labelled(TUNED_PARTS)
    for r in rows:
        r["key"] = f"{r['part']}/{r['file']}"
        r["cues"] = cues_of(ROOT / "corpus" / r["part"] / r["file"])
    current = {f"{part}/{f}": guess for part, _, guess, _, f in lopo_rows}
    # the current code's answer on part b with the prior counted without parts a and b (the nested choice's inner folds)
    inner_current: dict[tuple[str, str], dict] = {}
    for a in TUNED_PARTS:
        for b in TUNED_PARTS:
            if a < b:
                counts = count(tuple(p for p in TUNED_PARTS if p not in (a, b)))
                got = {f"{part}/{f}": guess for part, _, guess, _, f in measure((a, b), counts, weight)}
                inner_current[(a, b)] = inner_current[(b, a)] = got
    report: dict = {}

    def right(answers, test):
        return sum(answers[r["key"]] == r["label"] for r in test)

    for held in TUNED_PARTS:
        train = [r for r in rows if r["part"] != held]
        test = [r for r in rows if r["part"] == held and r["no_cause"]]
        fold = {"total": len(test), "current": right(current, test)}
        majority = max(sorted({r["label"] for r in train if r["no_cause"]}),
                       key=lambda c: sum(r["label"] == c for r in train if r["no_cause"]))
        fold["majority"] = sum(r["label"] == majority for r in test)
        counts = count(tuple(p for p in TUNED_PARTS if p != held))
        fold["prior top"] = sum(r["label"] == (next(iter(phase_prior.shares(r["cues"]["phase"], counts)))
                                               if r["cues"]["phase"] in counts or r["cues"]["phase"] == phase_prior.STARTUP
                                               else majority) for r in test)
        for v in VARIANTS:
            fold[v[0]] = right(_answer(v, train, test, current), test)
        # the nested choice: every variant (and the current code) scored leave-one-part-out on the
        # training parts alone; the best is applied to the held part
        inner = {"current": 0, **{v[0]: 0 for v in VARIANTS}}
        for inner_held in TUNED_PARTS:
            if inner_held == held:
                continue
            itrain = [r for r in train if r["part"] != inner_held]
            itest = [r for r in train if r["part"] == inner_held and r["no_cause"]]
            icur = inner_current[(held, inner_held)]
            inner["current"] += right(icur, itest)
            for v in VARIANTS:
                inner[v[0]] += right(_answer(v, itrain, itest, icur), itest)
        choice = max(inner, key=lambda name: (inner[name], name == "current"))
        fold["nested"] = fold["current"] if choice == "current" else fold[choice]
        fold["nested_choice"] = f"{choice} (on the other parts {inner[choice]}, current {inner['current']})"
        report[held] = fold
    return report


def print_counted(report: dict) -> None:
    names = [k for k in next(iter(report.values())) if k not in ("total", "nested_choice")]
    print(f"{'counted evidence, leave-one-part-out':40} " + " ".join(f"{p:>7}" for p in report) + "     all")
    for name in names:
        right = sum(f[name] for f in report.values())
        total = sum(f["total"] for f in report.values())
        cells = " ".join(f"{f[name]:>3}/{f['total']:<3}" for f in report.values())
        print(f"{name:40} {cells} {right:>3}/{total} {100 * right / max(total, 1):.1f}%")
    for part, f in report.items():
        print(f"nested choice for {part}: {f['nested_choice']}")


def by_category(rows) -> dict[str, dict]:
    """Per label: right answers, guesses, and what the misses were guessed as (commonest first)."""
    out: dict[str, dict] = {}
    for r in rows:
        cell = out.setdefault(r[1], {"right": 0, "total": 0, "guessed_as": {}})
        cell["total"] += 1
        if r[1] == r[2]:
            cell["right"] += 1
        else:
            cell["guessed_as"][r[2]] = cell["guessed_as"].get(r[2], 0) + 1
    for cell in out.values():
        cell["guessed_as"] = dict(sorted(cell["guessed_as"].items(), key=lambda kv: (-kv[1], str(kv[0]))))
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["total"], kv[0])))


def _print_categories(cats: dict) -> None:
    for label, c in cats.items():
        missed = ", ".join(f"{g} {n}" for g, n in c["guessed_as"].items())
        print(f"leave-one-part-out {label:22} {c['right']:>3}/{c['total']:<3}" + (f" (guessed as: {missed})" if missed else ""))


def _print_repos(repos: dict) -> None:
    h, n = _total(repos)
    main_repo = max(repos, key=lambda r: repos[r]["total"], default=None)
    rest = [r for r in repos if r != main_repo]
    rh, rn = _total({r: repos[r] for r in rest})
    print(f"leave-one-repo-out  all    {h:>3}/{n:<3} {100 * h / max(n, 1):.1f}%  ({main_repo} {repos[main_repo]['right']}/"
          f"{repos[main_repo]['total']}; the {len(rest)} other repositories {rh}/{rn})" if main_repo else
          "leave-one-repo-out: no fragment")


def _quick(prior_parts, as_json: bool, verbose: bool, rows_file: str = "") -> int:
    """``--quick``: leave-one-part-out and leave-one-repository-out only (``rows_file``: the
    leave-one-part-out rows, with the shipped table's stated confidence)."""
    lopo_rows, lopo = leave_one_part_out(prior_parts=prior_parts)
    if rows_file:
        Path(rows_file).write_text(json.dumps([list(r) for r in lopo_rows], indent=0) + "\n", encoding="utf-8")
    _, loro = leave_one_repo_out(prior_parts=prior_parts)
    release_rows, lorel = leave_one_release_out(prior_parts=prior_parts)
    report = {"leave_one_part_out": lopo, "leave_one_repo_out": loro, "leave_one_release_out": lorel,
              "leave_one_part_out_categories": by_category(lopo_rows),
              "leave_one_release_out_categories": by_category(release_rows),
              "leave_one_part_out_grounds": by_grounds(lopo_rows),
              "misses": [{"file": f"{r[0]}/{r[4]}", "label": r[1], "guess": r[2], "cue": r[5]}
                         for r in lopo_rows if r[1] != r[2]]}
    for key in ("leave_one_part_out", "leave_one_repo_out", "leave_one_release_out"):
        h, n = _total(report[key])
        report[key + "_all"] = {"right": h, "total": n}
    if as_json:
        print(json.dumps(report, indent=1))
        return 0
    if verbose:
        for m in report["misses"]:
            print(f"miss  {m['file'][:70]:70} label {m['label']:22} guess {m['guess']} ({m['cue']})")
    a = report["leave_one_part_out_all"]
    print(f"leave-one-part-out  all    {a['right']:>3}/{a['total']:<3} {100 * a['right'] / max(a['total'], 1):.1f}%")
    _print_repos(loro)
    r = report["leave_one_release_out_all"]
    print(f"leave-one-release-out all {r['right']:>3}/{r['total']:<3} " + ", ".join(
        f"{family} {c['right']}/{c['total']}" for family, c in lorel.items()))
    _print_categories(report["leave_one_part_out_categories"])
    print("leave-one-part-out by what the guess rests on: " + ", ".join(
        f"{g} {r['right']}/{r['total']}" for g, r in report["leave_one_part_out_grounds"].items()))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.3,0.4,0.5,0.6")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="list the misses (leave-one-part-out)")
    ap.add_argument("--counted", action="store_true",
                    help="also score counted-evidence variants (naive Bayes over cue families) on the same folds")
    ap.add_argument("--rows", default="",
                    help="write the nested rows (part, label, guess, stated confidence, file, cue, kind, strength, "
                         "ground) to this JSON file, to score calibration variants offline (e.g. band edges); with --quick the "
                         "leave-one-part-out rows")
    ap.add_argument("--prior-parts", default="",
                    help="the parts the prior counts in each fold (comma-separated; default the shipped TUNED_PARTS; "
                         "an experiment may add the read-only parts)")
    ap.add_argument("--cut-check", action="store_true",
                    help="only the cut check: the tuned failures whose cause is in the text, cut above the line that "
                         "names it, and how often the answer is a CUDA OOM (see cut_check)")
    ap.add_argument("--cut-lines", default="0",
                    help="with --cut-check: how many more lines to cut above the cause line, comma-separated for "
                         "several runs (e.g. 0,2,4: CUT_DEPTHS)")
    ap.add_argument("--cut-shapes", default="above",
                    help="with --cut-check: the paste shapes to keep of the text above the cut, comma-separated "
                         "(CUT_SHAPES: above, tail, head_cut, frames, rank, tp0; 'all' for every one)")
    ap.add_argument("--cut-real", action="store_true",
                    help="with --cut-check: also cut the real failing runs of fixtures/real")
    ap.add_argument("--categories", action="store_true",
                    help="with --cut-check: per category, right answers and how often it was answered for another label")
    ap.add_argument("--raise-sites", action="store_true",
                    help="only the raise-site check: SGLang's own raise / assert sites rendered as a traceback cut "
                         "just above the exception line, the reading off and on (its table from half the sites)")
    ap.add_argument("--every", type=int, default=1, help="with --raise-sites: every Nth site only")
    ap.add_argument("--quick", action="store_true",
                    help="only leave-one-part-out and leave-one-repository-out, per category (no rotation, no nested "
                         "calibration: a few minutes less)")
    args = ap.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    prior_parts = tuple(args.prior_parts.split(",")) if args.prior_parts else None
    if args.raise_sites:
        report = raise_site_check(args.every)
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            print_raise_site_check(report)
        return 0
    if args.cut_check:
        shapes = CUT_SHAPES if args.cut_shapes == "all" else tuple(args.cut_shapes.split(","))
        reports = [cut_check(extra=int(k), shape=shape, real=args.cut_real)
                   for shape in shapes for k in args.cut_lines.split(",")]
        if args.json:
            print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=1))
        else:
            for report in reports:
                print_cut_check(report, args.verbose, args.categories)
        return 0
    if args.quick:
        return _quick(prior_parts, args.json, args.verbose, args.rows)
    report: dict = {"in_part": {}, "leave_one_part_out": {}, "rotation": {}, "calibration": []}
    rows = measure(CV_PARTS, phase_prior.COUNTS, phase_prior.PRIOR_WEIGHT)
    for part in CV_PARTS:
        h, n = hits([r for r in rows if r[0] == part])
        report["in_part"][part] = {"right": h, "total": n}
    lopo_rows, report["leave_one_part_out"] = leave_one_part_out(prior_parts=prior_parts)
    _, report["leave_one_repo_out"] = leave_one_repo_out(prior_parts=prior_parts)
    report["leave_one_part_out_categories"] = by_category(lopo_rows)
    _, report["rotation"] = leave_one_part_out(weights=weights, prior_parts=prior_parts)
    # the stated confidence, each part's counted without it (nested); the shipped table's (in-sample:
    # it counted these guesses); the weighed strength (what the guess stated before it was measured)
    nested = nested_calibration(lopo_rows, prior_parts=prior_parts)
    report["calibration"] = calibration(nested)
    if args.rows:
        Path(args.rows).write_text(json.dumps([list(r) for r in nested], indent=0) + "\n", encoding="utf-8")
    report["calibration_error"] = calibration_error(nested)
    report["calibration_edges"] = edge_sensitivity(nested)
    report["calibration_in_sample"] = calibration_error(lopo_rows)
    report["calibration_strength"] = calibration(lopo_rows, 7)
    report["calibration_error_strength"] = calibration_error(lopo_rows, 7)
    if args.counted:  # (over the prior's parts only)
        report["counted"] = counted_report([r for r in lopo_rows if r[0] in TUNED_PARTS])
    report["leave_one_part_out_grounds"] = by_grounds(lopo_rows)
    report["misses"] = [{"file": f"{r[0]}/{r[4]}", "label": r[1], "guess": r[2], "confidence": r[3]}
                        for r in lopo_rows if r[1] != r[2]]
    for key in ("in_part", "leave_one_part_out", "rotation", "leave_one_repo_out"):
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
    _print_repos(report["leave_one_repo_out"])
    _print_categories(report["leave_one_part_out_categories"])
    print("leave-one-part-out by what the guess rests on: " + ", ".join(
        f"{g} {r['right']}/{r['total']}" for g, r in report["leave_one_part_out_grounds"].items()))
    for title, bands, err in (("stated confidence, leave-one-part-out (the table counted without the part)",
                               report["calibration"], report["calibration_error"]),
                              ("weighed strength (the figure stated before session 12)",
                               report["calibration_strength"], report["calibration_error_strength"])):
        print(title)
        for b in bands:
            if b["guesses"]:
                print(f"  confidence {b['confidence']}: right {b['right']}/{b['guesses']} = {b['rate']:.2f} "
                      f"(mean confidence {b['mean_confidence']}, over-stated by {b['over_stated']})")
        print(f"  calibration error {err['ece']}, over-stated part {err['over_stated']}, worst band over-stated "
              f"{err['worst_band_over_stated']}, Brier {err['brier']} ({err['guesses']} guesses)")
    e = report["calibration_edges"]
    print(f"  nested calibration error with the band edges moved by {e['shifts']}: {e['ece']} (mean {e['mean']}); "
          f"equal-mass bands {e['equal_mass']}")
    e = report["calibration_in_sample"]
    print(f"stated confidence with the shipped table (in-sample): calibration error {e['ece']}, "
          f"over-stated part {e['over_stated']}, Brier {e['brier']}")
    if args.counted:
        print_counted(report["counted"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
