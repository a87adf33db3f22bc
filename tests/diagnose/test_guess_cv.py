"""bench/guess_cv.py's leave-one-part-out: each tuned part is scored with the counted tables
(the phase prior) counted from the other tuned parts only, never from itself, at the shipped
weight; the rotation chooses the weight on those other parts alone."""

import importlib.util
from pathlib import Path

import pytest

from sglang_doctor.diagnose import phase_prior

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cv():
    spec = importlib.util.spec_from_file_location("guess_cv_under_test", ROOT / "bench" / "guess_cv.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_part_is_scored_with_tables_counted_without_it(cv, monkeypatch):
    counted, scored = [], []

    def fake_count(parts):
        counted.append(tuple(parts))
        return {"serving": {"runtime.crash": len(parts)}}

    def fake_measure(parts, counts, weight):
        scored.append((tuple(parts), counts, weight))
        # one right and one wrong guess per part, so the totals add up per fold
        return [(p, "nccl", "nccl", 0.3, "a.log") for p in parts] + [(p, "nccl", "other", 0.1, "b.log") for p in parts]

    monkeypatch.setattr(cv, "count", fake_count)
    monkeypatch.setattr(cv, "measure", fake_measure)
    rows, report = cv.leave_one_part_out()
    assert list(report) == list(cv.TUNED_PARTS)
    for held, train in zip(cv.TUNED_PARTS, counted):
        assert held not in train and set(train) | {held} == set(cv.TUNED_PARTS)
    for held in cv.TUNED_PARTS:
        (call,) = [c for c in scored if c[0] == (held,)]
        assert call[2] == phase_prior.PRIOR_WEIGHT  # the shipped weight, no choice
        assert report[held] == {"right": 1, "total": 2, "weight": phase_prior.PRIOR_WEIGHT, "train_right": {}}
    assert len(rows) == 2 * len(cv.TUNED_PARTS)


def test_the_rotation_chooses_the_weight_on_the_other_parts_only(cv, monkeypatch):
    def fake_measure(parts, counts, weight):
        # on the training parts a weight of 0.3 scores best; the held part is never used to choose
        right = weight == 0.3 and len(parts) > 1
        return [(p, "nccl", "nccl" if right else "other", 0.3, "a.log") for p in parts]

    monkeypatch.setattr(cv, "count", lambda parts: {})
    monkeypatch.setattr(cv, "measure", fake_measure)
    _, report = cv.leave_one_part_out(weights=[0.3, 0.5])
    for held, r in report.items():
        assert r["weight"] == 0.3 and r["train_right"] == {0.3: len(cv.TUNED_PARTS) - 1, 0.5: 0}  # one right per other part
        assert r["right"] == 0  # scored on the held part alone, where this fake is never right
