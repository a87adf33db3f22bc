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
    # every tuned part is a fold; the prior counts the prior's parts, never the part held out
    assert list(report) == list(cv.CV_PARTS) == list(cv.TUNED_PARTS + cv.READ_ONLY_PARTS)
    for held, train in zip(cv.CV_PARTS, counted):
        assert held not in train and set(train) == set(cv.TUNED_PARTS) - {held}
    for held in cv.CV_PARTS:
        (call,) = [c for c in scored if c[0] == (held,)]
        assert call[2] == phase_prior.PRIOR_WEIGHT  # the shipped weight, no choice
        assert report[held] == {"right": 1, "total": 2, "weight": phase_prior.PRIOR_WEIGHT, "train_right": {}}
    assert len(rows) == 2 * len(cv.CV_PARTS)


def test_each_fold_counts_every_other_tuned_part(cv, monkeypatch):
    """Session 18: the prior counts every tuned part's labels, so each fold's prior is counted
    from all the other folds (until then from six parts only, nine tuned parts' labels unused),
    and the shipped table from all of them."""
    counted = []
    monkeypatch.setattr(cv, "count", lambda parts: counted.append(tuple(parts)) or {})
    monkeypatch.setattr(cv, "measure", lambda parts, counts, weight: [])
    cv.leave_one_part_out()
    assert len(counted) == len(cv.CV_PARTS) > 6
    for held, train in zip(cv.CV_PARTS, counted):
        assert set(train) == set(cv.CV_PARTS) - {held}
    shipped = __import__("json").loads(phase_prior.DATA.read_text(encoding="utf-8"))
    assert shipped["parts"] == list(cv.CV_PARTS)


def test_an_experiment_may_count_other_parts_but_never_the_held_one(cv, monkeypatch):
    counted = []
    monkeypatch.setattr(cv, "count", lambda parts: counted.append(tuple(parts)) or {})
    monkeypatch.setattr(cv, "measure", lambda parts, counts, weight: [])
    every = cv.TUNED_PARTS + cv.READ_ONLY_PARTS
    cv.leave_one_part_out(prior_parts=every)
    for held, train in zip(cv.CV_PARTS, counted):
        assert set(train) == set(every) - {held}


def test_the_rotation_chooses_the_weight_on_the_other_parts_only(cv, monkeypatch):
    def fake_measure(parts, counts, weight):
        # on the training parts a weight of 0.3 scores best; the held part is never used to choose
        right = weight == 0.3 and len(parts) > 1
        return [(p, "nccl", "nccl" if right else "other", 0.3, "a.log") for p in parts]

    monkeypatch.setattr(cv, "count", lambda parts: {})
    monkeypatch.setattr(cv, "measure", fake_measure)
    _, report = cv.leave_one_part_out(weights=[0.3, 0.5])
    for held, r in report.items():
        trained = len(cv.TUNED_PARTS) - (held in cv.TUNED_PARTS)  # one right per other prior part
        assert r["weight"] == 0.3 and r["train_right"] == {0.3: trained, 0.5: 0}
        assert r["right"] == 0  # scored on the held part alone, where this fake is never right


# -- the counted-evidence comparison (--counted) ---------------------------------------------


def test_counted_guess_follows_the_counts_and_smoothing_holds_a_rare_value_back(cv):
    rows = ([{"label": "other", "cues": {"phase": "none"}}] * 10
            + [{"label": "nccl", "cues": {"phase": "startup.distributed"}}] * 3)
    post = cv.CountedGuess(rows, ("phase",), alpha=2.0).posterior({"phase": "startup.distributed"})
    assert next(iter(post)) == "nccl" and abs(sum(post.values()) - 1) < 1e-9
    # with a smoothing far above the counts, three files no longer outweigh the class prior
    post = cv.CountedGuess(rows, ("phase",), alpha=1000.0).posterior({"phase": "startup.distributed"})
    assert next(iter(post)) == "other"
    # a value never counted says nothing: the class prior decides
    post = cv.CountedGuess(rows, ("phase",), alpha=2.0).posterior({"phase": "serving"})
    assert next(iter(post)) == "other"


def test_counted_guess_reads_a_set_family_value_by_value(cv):
    rows = ([{"label": "runtime.crash", "cues": {"signals": ["segfault", "faulthandler"]}}] * 3
            + [{"label": "memory.host_oom", "cues": {"signals": ["killed"]}}] * 3
            + [{"label": "other", "cues": {"signals": []}}] * 3)
    model = cv.CountedGuess(rows, ("signals",), alpha=2.0)
    assert next(iter(model.posterior({"signals": ["killed"]}))) == "memory.host_oom"
    assert next(iter(model.posterior({"signals": ["faulthandler"]}))) == "runtime.crash"
    assert next(iter(model.posterior({"signals": []}))) == "other"


def test_counted_report_never_counts_the_held_part(cv, monkeypatch):
    # each part's failures carry a cue value and a label of their own: a variant counted without
    # the part cannot name them, one counted with it would; the current code (faked) names them all
    parts = cv.TUNED_PARTS
    rows = [{"part": p, "file": f"{p}{i}.log", "label": f"cat-{p}", "no_cause": True} for p in parts for i in range(3)]
    monkeypatch.setattr(cv, "labelled", lambda ps: [dict(r) for r in rows if r["part"] in ps])
    monkeypatch.setattr(cv, "cues_of", lambda path: {"phase": f"ph-{path.parent.name}", "kind": "traceback:cut",
                                                     "module": "none", "library": "none", "signals": [],
                                                     "piece_cats": []})
    monkeypatch.setattr(cv, "count", lambda ps: {"serving": {"runtime.crash": 1}})
    monkeypatch.setattr(cv, "measure", lambda ps, counts, weight: [(r["part"], r["label"], r["label"], 0.3, r["file"])
                                                                   for r in rows if r["part"] in ps])
    lopo = [(r["part"], r["label"], r["label"], 0.3, r["file"]) for r in rows]
    report = cv.counted_report(lopo)
    assert list(report) == list(parts)
    for part, fold in report.items():
        assert fold["total"] == 3 and fold["current"] == 3
        assert all(fold[v[0]] == 0 for v in cv.VARIANTS if not v[4])  # never its own label
        # gated: a value never counted leaves the counts unsure (four labels alike), so the current answer stands
        assert all(fold[v[0]] == 3 for v in cv.VARIANTS if v[4])
        assert fold["nested"] == 3 and fold["nested_choice"].startswith("current")


# -- calibration of the stated confidence ------------------------------------------------------


def test_the_calibration_error_weighs_each_band_by_its_guesses(cv):
    # 10 guesses at 0.3, 8 right (under-stated by 0.5); 10 at 0.7, 2 right (over-stated by 0.5)
    rows = ([("p", "x", "x", 0.3, "f", "c", "k", 0.3)] * 8 + [("p", "x", "y", 0.3, "f", "c", "k", 0.3)] * 2
            + [("p", "x", "x", 0.7, "f", "c", "k", 0.7)] * 2 + [("p", "x", "y", 0.7, "f", "c", "k", 0.7)] * 8)
    err = cv.calibration_error(rows)
    assert err["ece"] == 0.5 and err["over_stated"] == 0.25 and err["worst_band_over_stated"] == 0.5
    assert err["brier"] == round((8 * 0.49 + 2 * 0.09 + 2 * 0.09 + 8 * 0.49) / 20, 3)
    bands = {b["confidence"]: b for b in cv.calibration(rows) if b["guesses"]}
    assert bands["[0.25, 0.35)"]["rate"] == 0.8 and bands["[0.25, 0.35)"]["over_stated"] == 0.0
    assert bands["[0.65, 0.80)"]["over_stated"] == 0.5


def test_nested_calibration_counts_each_parts_table_without_it(cv, monkeypatch):
    counted, measured = [], []

    def fake_measure(parts, counts, weight):
        (part,) = parts
        measured.append(part)
        # the cue "c" is always right on dev and right half the time on every other part (so no
        # table's share sits at the stated confidence's floor, however many tuned parts there are)
        right = (part, "x", "x", 0.5, "f", "c->x", "c", 0.3)
        wrong = (part, "x", "y", 0.5, "f", "c->x", "c", 0.3)
        return [right] * 4 if part == "dev" else [right, wrong] * 2

    monkeypatch.setattr(cv, "count", lambda parts: counted.append(tuple(parts)) or {})
    monkeypatch.setattr(cv, "measure", fake_measure)
    lopo = [(p, "x", "x", 0.5, "f", "c->x", "c", 0.3) for p in cv.CV_PARTS]
    out = cv.nested_calibration(lopo)
    stated = {r[0]: r[3] for r in out}
    # dev's table has no dev guesses (only the half-right ones): stated lower than for a part whose
    # table counts dev's always-right guesses
    assert stated["dev"] < stated["fresh"]
    pairs = [(h, o) for h in cv.CV_PARTS for o in cv.CV_PARTS if o != h]
    assert measured == [o for _, o in pairs]
    for (held, other), prior in zip(pairs, counted):  # each inner run's prior leaves out both
        assert set(prior) == set(cv.TUNED_PARTS) - {held, other}


def test_the_figure_is_given_per_ground(cv):
    # session 16: what the guess rests on (evidence.GROUNDS), the phase and the words around together
    assert cv.grounds_of({"grounds": "phase"}) == cv.grounds_of({"grounds": "around"}) == "phase/around"
    assert cv.grounds_of({"basis": "rule:class"}) == "rule" and cv.grounds_of({}) == "none"
    rows = [("p", "x", "x", 0.5, "f", "c", "k", 0.3, "text"), ("p", "x", "y", 0.5, "f", "c", "k", 0.3, "text"),
            ("p", "x", "x", 0.5, "f", "c", "k", 0.3, "none"), ("p", "x", "x", 0.5, "f", "c", "k", 0.3)]
    got = cv.by_grounds(rows)
    assert got["text"] == {"right": 1, "total": 2} and got["none"] == {"right": 1, "total": 1}
    assert got["rule"] == {"right": 0, "total": 0}  # (a row without its grounds is in no ground)


def test_the_calibration_error_is_also_given_with_the_band_edges_moved(cv):
    # 10 guesses at 0.34 (5 right) and 10 at 0.36 (5 right): calibrated as a whole (0.35 stated,
    # half right), but the 0.35 edge splits them, and each band is off by 0.15-0.16 alone
    rows = ([("p", "x", "x", 0.34, "f", "c", "k", 0.34)] * 5 + [("p", "x", "y", 0.34, "f", "c", "k", 0.34)] * 5
            + [("p", "x", "x", 0.36, "f", "c", "k", 0.36)] * 5 + [("p", "x", "y", 0.36, "f", "c", "k", 0.36)] * 5)
    sens = cv.edge_sensitivity(rows)
    assert sens["shifts"] == list(cv.BAND_SHIFTS) and len(sens["ece"]) == len(cv.BAND_SHIFTS)
    assert sens["ece"][cv.BAND_SHIFTS.index(0.0)] == cv.calibration_error(rows)["ece"]
    assert sens["min"] <= sens["mean"] <= sens["max"]
    # the inner edges move, the outer ones stay
    assert cv.shifted(0.02)[0][0] == 0.0 and cv.shifted(0.02)[-1][1] == 1.01
    assert abs(cv.shifted(0.02)[3][0] - 0.37) < 1e-9
    # equal-mass bands put each stated figure in a band of its own here
    assert len(cv.equal_mass(rows)) >= 2


def test_each_repository_is_scored_with_a_prior_counted_without_its_labels(cv, monkeypatch):
    """Session 24: leave-one-repository-out.  Every no-cause fragment is scored with the prior counted
    from the tuned parts without any label of its thread's repository, in any part."""
    labels = {"dev": [{"file": "a.log", "source": {"repo": "sgl-project/sglang"}, "best_guess_category": "nccl"},
                      {"file": "b.log", "source": {"repo": "THUDM/slime"}, "best_guess_category": "other"}],
              "fresh": [{"file": "c.log", "source": {"repo": "sgl-project/sglang"}, "best_guess_category": "nccl"},
                        {"file": "d.log", "best_guess_category": "other"}]}
    counted, scored = [], []
    monkeypatch.setattr(cv, "no_cause", lambda part: labels.get(part, []))
    monkeypatch.setattr(cv, "count", lambda parts, skip_repo=None: counted.append((tuple(parts), skip_repo)) or
                        {"skip": skip_repo})
    monkeypatch.setattr(cv, "measure_labels", lambda items, counts, weight: scored.append((items, counts)) or
                        [(part, lab["best_guess_category"], "nccl", 0.3, lab["file"]) for part, lab in items])
    rows, report = cv.leave_one_repo_out()
    assert report == {"sgl-project/sglang": {"right": 2, "total": 2}, "?": {"right": 0, "total": 1},
                      "THUDM/slime": {"right": 0, "total": 1}}
    assert len(rows) == 4
    for items, counts in scored:
        repos = {cv.source_repo(lab) for _, lab in items}
        assert repos == {counts["skip"]}  # one repository a fold, its labels left out of the prior
    assert all(parts == tuple(cv.TUNED_PARTS) for parts, _ in counted)


def test_count_leaves_a_repositorys_labels_out(cv):
    whole = cv.count(("field23",))
    without = cv.count(("field23",), skip_repo="sgl-project/sglang")
    assert sum(map(sum, (r.values() for r in without.values()))) < sum(map(sum, (r.values() for r in whole.values())))
    assert cv.count(("field23",), skip_repo="no/such-repository") == whole


def test_by_category_says_what_the_misses_were_guessed_as(cv):
    rows = [("p", "nccl", "nccl"), ("p", "nccl", "other"), ("p", "nccl", "other"), ("p", "other", "nccl")]
    assert cv.by_category(rows) == {"nccl": {"right": 1, "total": 3, "guessed_as": {"other": 2}},
                                    "other": {"right": 0, "total": 1, "guessed_as": {"nccl": 1}}}


def test_leave_one_release_out_counts_the_prior_without_the_held_family(cv, monkeypatch):
    labels = {"dev": [{"file": "a.log", "sglang_version": "0.4.6.post5"},
                      {"file": "b.log", "sglang_version": "0.5.11 (NVIDIA sglang:26.05 container)"}],
              "fresh": [{"file": "c.log", "sglang_version": None}, {"file": "d.log", "sglang_version": "0.4.8"}]}
    skipped, held = [], []

    def fake_count(parts, skip_release=None):
        skipped.append(skip_release)
        return {"serving": {}}

    def fake_measure_labels(items, counts, weight):
        held.append(sorted(lab["file"] for _, lab in items))
        return [(part, "nccl", "nccl", 0.3, lab["file"]) for part, lab in items]

    monkeypatch.setattr(cv, "no_cause", lambda part: labels.get(part, []))
    monkeypatch.setattr(cv, "count", fake_count)
    monkeypatch.setattr(cv, "measure_labels", fake_measure_labels)
    rows, report = cv.leave_one_release_out()
    assert report == {"0.4.5-0.4.9": {"right": 2, "total": 2}, "0.5.10-0.5.14": {"right": 1, "total": 1},
                      "unknown": {"right": 1, "total": 1}}
    assert skipped == list(report) and held == [["a.log", "d.log"], ["b.log"], ["c.log"]]


def test_the_cut_check_cuts_above_the_key_line_and_an_oom_above_its_first_oom_line(cv):
    lines = ["[x TP0] Load weight end.\n", "Traceback (most recent call last):\n",
             '  File "a.py", line 1, in f\n', "torch.OutOfMemoryError: CUDA out of memory.\n",
             "[x TP0] Received sigquit from a child process. It usually means the child failed.\n"]
    sigquit = {"category": "memory.cuda_oom", "key_line": "Received sigquit from a child process. It usually means"}
    assert cv.cut_index(lines, sigquit) == 3  # the OOM line comes first
    assert cv.cut_index(lines, dict(sigquit, category="runtime.crash")) == 4  # another failure: its key line only
    assert cv.cut_index(lines, {"category": "nccl", "key_line": "not in this text at all"}) is None


def test_the_cut_check_cuts_further_up_and_counts_false_ooms_by_label(cv, tmp_path, monkeypatch):
    # the cut text's last line is what the fake answer reads: an allocation line answers cuda_oom
    (tmp_path / "corpus" / "p").mkdir(parents=True)
    oom = ["Traceback (most recent call last):\n", '  File "a.py", line 1, in f\n', "    x = torch.empty(n)\n",
           '  File "b.py", line 2, in g\n', "    return F.linear(x, w)\n", "torch.OutOfMemoryError: CUDA out of memory.\n"]
    crash = oom[:5] + ["RuntimeError: CUDA error: an illegal memory access was encountered\n"]
    (tmp_path / "corpus" / "p" / "oom.log").write_text("".join(oom))
    (tmp_path / "corpus" / "p" / "crash.log").write_text("".join(crash))
    labels = [({"file": "oom.log", "evidence_in_log": True, "key_line": "torch.OutOfMemoryError: CUDA out of"},
               "memory.cuda_oom"),
              ({"file": "crash.log", "evidence_in_log": True, "key_line": "RuntimeError: CUDA error: an illegal memory"},
               "runtime.crash")]
    seen = []

    def fake_answer(path):
        text = path.read_text()
        seen.append((path.name, text.count("\n")))
        return ("memory.cuda_oom" if "torch.empty" in text.splitlines()[-1] or "F.linear" in text else "other"), "guess"

    monkeypatch.setattr(cv, "ROOT", tmp_path)
    monkeypatch.setattr(cv, "failures", lambda part: labels)
    monkeypatch.setattr(cv, "answer_of", fake_answer)
    at_line = cv.cut_check(parts=["p"])
    assert seen == [("oom.log", 5), ("crash.log", 5)]
    assert (at_line["oom_said"], at_line["false_oom"], at_line["false_oom_by_label"]) == (1, 1, {"runtime.crash": 1})
    seen.clear()
    deeper = cv.cut_check(parts=["p"], extra=2)
    assert seen == [("oom.log", 3), ("crash.log", 3)]  # the last frame (F.linear) is gone too
    assert deeper["extra"] == 2 and deeper["oom_answers"] == {"memory.cuda_oom": 1}
    assert deeper["false_oom_by_label"] == {"runtime.crash": 1}
    seen.clear()
    assert cv.cut_check(parts=["p"], extra=5)["total"] == 0  # nothing left above the cut


def test_the_cut_check_keeps_each_paste_shape_of_the_text_above_the_cut(cv):
    above = [f"[x TP0] line {i}\n" for i in range(30)] + ["Traceback (most recent call last):\n",
                                                         '  File "a.py", line 1, in f\n', "    g()\n"]
    assert cv.cut_shape(above, "above") == above
    assert cv.cut_shape(above, "tail") == above[-cv.TAIL_LINES:]
    assert cv.cut_shape(above, "head_cut") == above[len(above) // 2:]
    assert cv.cut_shape(above, "frames") == above[-cv.FRAME_LINES:]
    assert cv.cut_shape(above[:30], "frames") is None  # no frame in the last lines
    assert cv.cut_shape(above, "rank") is None  # no rank prefix
    ranked = ["[rank0]: Traceback (most recent call last):\n", "noise\n", '[rank0]:   File "a.py", line 1, in f\n',
              "(WorkerDict pid=7) [rank1]:     g()\n"]
    assert cv.cut_shape(ranked, "rank") == [ranked[0], ranked[2], ranked[3]]
    tp = ["[2025-01-01 10:00:00 TP0] Load weight end.\n", "[2025-01-01 10:00:00 TP1] Load weight end.\n",
          "[2025-01-01 10:00:01 DP0 TP0 EP0] KV Cache is allocated.\n", "Traceback (most recent call last):\n",
          "[2025-01-01 10:00:02 TP0] Capture cuda graph begin.\n"]
    assert cv.cut_shape(tp, "tp0") == [tp[0], tp[2], tp[4]]
    assert cv.cut_shape(tp[:2], "tp0") is None  # too few lines of the rank
    with pytest.raises(ValueError):
        cv.cut_shape(above, "sideways")


def test_the_cut_summary_counts_each_category_right_and_answered_for_others(cv):
    rows = [{"label": "nccl", "answer": "nccl"}, {"label": "nccl", "answer": "other"},
            {"label": "memory.cuda_oom", "answer": "nccl"}, {"label": "other", "answer": "other"}]
    s = cv.cut_summary(rows, shape="tail")
    assert s["by_label"]["nccl"] == {"right": 1, "total": 2, "answered_as": {"other": 1}}
    assert s["false_by_answer"] == {"nccl": 1, "other": 1}
    assert (s["oom_said"], s["oom_total"], s["right"], s["total"], s["shape"]) == (0, 1, 2, 4, "tail")


def test_the_real_runs_are_cut_at_their_expected_line(cv):
    runs = list(cv.real_failures())
    assert runs and all(lab["evidence_in_log"] and lab["key_line"] for lab, _ in runs)
    names = {lab["file"]: cat for lab, cat in runs}
    assert names["no_accelerator_0523.log"] == "kernel.unsupported_hw"
    assert "healthy_sigterm_0523.log" not in names
