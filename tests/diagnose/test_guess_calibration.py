"""The best guess's stated confidence is measured (diagnose/calibration.py): the held-out rate of
the guesses that rested on the same cue, shrunk towards wider counts when the cue is rare, less a
margin; the weighed figure (``strength``) still decides what the fallback names."""

import importlib.util
from pathlib import Path

import pytest

from conftest import only_incident
from sglang_doctor.diagnose import calibration

ROOT = Path(__file__).resolve().parents[2]
P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
# a traceback cut in the scheduler's serving loop (deepest_frame -> runtime.crash, weighed 0.4)
CUT_SERVING = ("[2025-04-10 07:26:56 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
               f'  File "{P}/managers/scheduler.py", line 3155, in run_scheduler_process\n'
               "    scheduler.event_loop_normal()\n")
# a traceback cut inside an attention kernel that CUDA graph capture was running
CUT_IN_CAPTURE = ("[2025-04-10 07:26:56 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                  f'  File "{P}/managers/scheduler.py", line 1809, in run_scheduler_process\n'
                  "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
                  f'  File "{P}/model_executor/cuda_graph_runner.py", line 310, in capture\n'
                  "    ) = self.capture_one_batch_size(bs, forward)\n"
                  f'  File "{P}/model_executor/cuda_graph_runner.py", line 402, in capture_one_batch_size\n'
                  "    self.model_runner.attn_backend.init_forward_metadata_capture_cuda_graph(\n"
                  f'  File "{P}/layers/attention/flashinfer_backend.py", line 370, in init_forward_metadata_capture_cuda_graph\n'
                  "    self.indices_updater_decode.update(\n")
# the same kernel frame with no capture frame above it (the model's forward, serving or warming up)
CUT_IN_KERNEL = ("[2025-04-10 07:26:56 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                 f'  File "{P}/models/llama.py", line 420, in forward\n'
                 "    hidden_states = self.model(input_ids, positions, forward_batch)\n"
                 f'  File "{P}/layers/attention/flashinfer_backend.py", line 370, in forward_extend\n'
                 "    o = self.prefill_wrapper.forward(\n")


def table(cues, kinds, every):
    return {"cues": cues, "kinds": kinds, "all": every}


def test_the_cue_is_the_strongest_piece_for_the_named_category():
    guess = {"category": "model.load", "evidence": [
        {"name": "prior:startup.load_weights", "category": "model.load", "weight": 0.2},
        {"name": "deepest_frame", "category": "model.load", "weight": 0.4},
        {"name": "signal:killed", "category": "memory.host_oom", "weight": 0.5}]}
    assert calibration.cue_of(guess) == ("deepest_frame->model.load", "deepest_frame")
    assert calibration.cue_of({"category": "nccl", "basis": "rule:class"}) == ("rule:class->nccl", "rule:class")
    assert calibration.cue_of({"category": "other", "evidence": [
        {"name": "words:nccl", "category": "nccl", "weight": 0.15}]}) == ("none->other", "none")
    assert calibration.cue_of({"category": "nccl", "evidence": [
        {"name": "words:nccl", "category": "nccl", "weight": 0.15}]}) == ("words:nccl->nccl", "words")


def test_a_rare_cue_is_shrunk_towards_its_kind_and_a_common_one_follows_its_rate():
    t = table({"deepest_frame->nccl": [2, 2], "deepest_frame->model.load": [90, 100]},
              {"deepest_frame": [92, 102], "prior": [10, 40]}, [102, 142])
    rare, _ = calibration.estimate("deepest_frame->nccl", "deepest_frame", t)
    common, _ = calibration.estimate("deepest_frame->model.load", "deepest_frame", t)
    assert rare < common < 0.9  # 2/2 is not stated as certain; 90/100 is stated near (under) its rate
    assert 0.8 < common
    # an unseen cue of a kind that is mostly wrong is stated low, below the rate of every guess
    unseen, why = calibration.estimate("prior:serving->runtime.crash", "prior", t)
    assert unseen < 102 / 142 and "10/40 for prior" in why
    # the margin takes off, it never adds: the estimate is at most the shrunk rate
    saved = calibration.MARGIN
    try:
        calibration.MARGIN = 0.0
        assert calibration.estimate("deepest_frame->nccl", "deepest_frame", t)[0] >= rare
    finally:
        calibration.MARGIN = saved


def test_count_adds_up_per_cue_kind_category_and_all():
    t = calibration.count([("a->x", "a", True), ("a->x", "a", False), ("b->y", "b", True), ("c:d->x", "c", True)])
    assert t == {"cues": {"a->x": [1, 2], "b->y": [1, 1], "c:d->x": [1, 1]},
                 "kinds": {"a": [1, 2], "b": [1, 1], "c": [1, 1]},
                 "categories": {"x": [2, 3], "y": [1, 1]}, "all": [3, 4]}


def test_a_parts_guesses_count_as_the_square_root_of_their_number():
    # session 16: guesses of one part share a source, so n of them weigh sqrt(n) (the design effect)
    rows = [("a->x", "a", True, "p")] * 9 + [("a->x", "a", False, "q")]
    t = calibration.count(rows)
    assert t["cues"] == {"a->x": [9, 10]} and t["all"] == [9, 10]  # the plain counts, cited in ``why``
    eff = t["effective"]
    assert eff["cues"]["a->x"] == [3.0, 4.0] and eff["all"] == [3.0, 4.0]  # 9 of p as 3; 1 of q as 1
    assert eff["categories"]["x"] == [3.0, 4.0] and eff["kinds"]["a"] == [3.0, 4.0]
    # rows without their part: no effective block (a table counted before session 16)
    assert "effective" not in calibration.count([r[:3] for r in rows])


def test_a_cue_right_on_one_part_only_is_stated_below_one_right_on_many():
    # the 0.80+ band of session 15: a serving-phase cue right 11/12 on the other parts, most of them
    # from one part, was stated 0.81 and right 3/6 on the part held out
    filler = [("none->other", "none", i % 3 == 0, f"f{i % 6}") for i in range(30)]
    one_part = calibration.count([("c->runtime.crash", "c", True, "p")] * 11 + [("c->runtime.crash", "c", False, "q")]
                                 + filler)
    many = calibration.count([("c->runtime.crash", "c", True, f"p{i}") for i in range(11)]
                             + [("c->runtime.crash", "c", False, "q")] + filler)
    stated_one, why = calibration.estimate("c->runtime.crash", "c", one_part)
    stated_many, _ = calibration.estimate("c->runtime.crash", "c", many)
    assert stated_one < stated_many
    assert stated_one < 0.8 and "11/12 for c->runtime.crash" in why  # the plain counts are cited
    assert "square root" in why


def test_a_rare_cue_is_shrunk_towards_the_rate_of_its_categorys_guesses():
    # session 14: the middle step is the category the guess names, not the cue's kind: an "other"
    # guess (nothing in the text points anywhere) is right far less often than the average guess
    t = {"cues": {"none->other": [6, 22], "prior:startup->other": [7, 19], "deepest_frame->runtime.crash": [20, 22],
                  "prior:serving->runtime.crash": [13, 16]},
         "kinds": {"none": [6, 22], "prior": [20, 35], "deepest_frame": [20, 22]},
         "categories": {"other": [13, 41], "runtime.crash": [33, 38]}, "all": [46, 79]}
    rare_other, why = calibration.estimate("import_frame->other", "import_frame", t)
    rare_crash, _ = calibration.estimate("thread->runtime.crash", "thread", t)
    assert rare_other < 46 / 79 < rare_crash  # an unseen cue takes its category's side of the average
    assert "13/41 for every other guess" in why and "46/79 for every guess" in why
    # the same table without categories (counted before session 14): the kinds' step, as before
    old = {k: v for k, v in t.items() if k != "categories"}
    assert calibration.estimate("none->other", "none", old)[1] != calibration.estimate("none->other", "none", t)[1]
    assert "6/22 for none," in calibration.estimate("none->other", "none", old)[1]


def test_the_stated_confidence_is_measured_and_the_strength_still_names_the_category(pack, monkeypatch):
    ev = only_incident(pack, CUT_SERVING)
    guess = ev["fallback"]["best_guess"]
    assert guess["category"] == ev["category"] == "runtime.crash"
    assert guess["strength"] <= 0.5 and guess["cue"] == "deepest_frame->runtime.crash"
    assert f"confidence {guess['confidence']}" in ev["explanation"]
    # a table where that cue was never right: the same category is named (the strength decides),
    # the stated confidence falls to what the table says
    monkeypatch.setattr(calibration, "TABLE", table({"deepest_frame->runtime.crash": [0, 50]},
                                                    {"deepest_frame": [0, 50]}, [0, 50]))
    low = only_incident(pack, CUT_SERVING)
    assert low["category"] == "runtime.crash" and low["fallback"]["best_guess"]["strength"] == guess["strength"]
    assert low["fallback"]["best_guess"]["confidence"] < 0.1 < guess["confidence"]


def test_a_kernel_frame_under_graph_capture_gives_the_phase_not_the_cause(pack):
    capture = only_incident(pack, CUT_IN_CAPTURE)["fallback"]["best_guess"]
    names = {(e["name"], e["category"]) for e in capture["evidence"]}
    assert ("deepest_frame", "kernel.unsupported_hw") not in names
    assert any(name == "prior:startup.cuda_graph" for name, _ in names)
    # with no capture frame above it the kernel frame keeps its reading
    kernel = only_incident(pack, CUT_IN_KERNEL)["fallback"]["best_guess"]
    assert any(e["name"] == "deepest_frame" and e["category"] == "kernel.unsupported_hw" for e in kernel["evidence"])


def test_the_shipped_table_adds_up_and_covers_every_tuned_part():
    spec = importlib.util.spec_from_file_location("guess_prior", ROOT / "scripts" / "guess_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = calibration.TABLE
    assert t["parts"] == list(mod.TUNED_PARTS + mod.READ_ONLY_PARTS) and t["prior_parts"] == list(mod.TUNED_PARTS)
    for key in ("cues", "kinds", "categories"):
        assert [sum(c[0] for c in t[key].values()), sum(c[1] for c in t[key].values())] == t["all"]
        # the effective counts (session 16): the same cells, none counting more guesses than it has
        assert set(t["effective"][key]) == set(t[key])
        assert all(t["effective"][key][k][1] <= t[key][k][1] for k in t[key])
    assert t["all"][1] == sum(len(mod.no_cause(p)) for p in t["parts"])


@pytest.mark.slow
def test_the_shipped_table_is_what_the_tool_does_now():
    """``python scripts/guess_prior.py --calibrate --write`` after any change that moves a guess."""
    spec = importlib.util.spec_from_file_location("guess_prior", ROOT / "scripts" / "guess_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fresh = mod.calibration_data()
    keys = ("cues", "kinds", "grounds", "all", "effective")
    assert {k: fresh[k] for k in keys} == {k: calibration.TABLE[k] for k in keys}


def test_a_text_with_no_failure_gets_the_command_for_what_it_was_doing():
    from sglang_doctor.diagnose import fallback

    serving = (b"[2025-02-06 21:40:01 TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, "
               b"gen throughput (token/s): 80.1, #queue-req: 0\n")
    note = fallback.no_incident([], serving, 1)
    assert note["best_guess"]["category"] == "runtime.crash"
    assert note["next_step"].startswith("sglang-doctor explain LOG")
    assert "every node" in fallback._no_failure_step("nccl")
    assert "dmesg" in fallback._no_failure_step("memory.host_oom")


def test_a_text_that_ends_on_a_steps_end_line_is_in_the_next_step():
    from sglang_doctor.diagnose import fallback

    loaded = (b"[2025-05-01 10:00:01 TP0] Load weight begin. avail mem=78.50 GB\n"
              b"[2025-05-01 10:00:31 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
              b"avail mem=63.20 GB, mem usage=15.30 GB.\n")
    assert fallback.text_phase([], loaded)[0] == "startup.memory_pool"
    assert fallback.text_phase([], loaded.splitlines(keepends=True)[0])[0] == "startup.load_weights"
    captured = b"[2025-05-01 10:01:02 TP0] Capture cuda graph end. Time elapsed: 20.1 s. mem usage=1.2 GB.\n"
    assert fallback.text_phase([], captured)[0] == "startup.warmup"


def test_the_ground_a_guess_rests_on_is_counted_and_named():
    # session 19: what the guess rests on (evidence.GROUNDS), the phase and the words around together
    assert calibration.ground_of({"grounds": "phase"}) == calibration.ground_of({"grounds": "around"}) == "phase/around"
    assert calibration.ground_of({"grounds": "text"}) == "text"
    assert calibration.ground_of({"basis": "rule:class"}) == "rule" and calibration.ground_of({}) == "none"
    rows = [("a->x", "a", True, "p", "text"), ("b->x", "b", False, "q", "none"), ("c->y", "c", True, "q", "none")]
    t = calibration.count(rows)
    assert t["grounds"] == {"none": [1, 2], "text": [1, 1]}
    assert t["effective"]["grounds"]["none"] == [0.707, 1.414]  # two guesses of one part count as sqrt(2)
    # rows without a ground (a table counted before session 19): no grounds block
    assert "grounds" not in calibration.count([r[:4] for r in rows])


def test_a_guess_is_stated_what_guesses_resting_on_the_same_ground_scored():
    # one category's guesses, half resting on the text's own evidence (right 9 of 10 on many parts) and
    # half on nothing (right 1 of 10): a rare cue of each is stated towards its ground's rate, not
    # the category's average, and the figure says which ground it counted
    rows = ([(f"t{i % 5}->x", "t", i != 0, f"p{i}", "text") for i in range(10)]
            + [(f"n{i % 5}->x", "n", i == 0, f"q{i}", "none") for i in range(10)])
    t = calibration.count(rows)
    on_text, why = calibration.estimate("new->x", "new", t, "text")
    on_nothing, why_nothing = calibration.estimate("new->x", "new", t, "none")
    without, _ = calibration.estimate("new->x", "new", t)
    assert on_nothing < without < on_text
    assert "9/10 for every guess resting on the text's own evidence" in why
    assert "1/10 for every guess resting on nothing" in why_nothing
    # calibrate reads the ground from the guess itself
    text_guess = calibration.calibrate({"category": "x", "confidence": 0.3, "grounds": "text",
                                        "evidence": [{"name": "new", "category": "x", "weight": 0.3}]}, t)
    none_guess = calibration.calibrate({"category": "x", "confidence": 0.3, "grounds": "none",
                                        "evidence": [{"name": "new", "category": "x", "weight": 0.3}]}, t)
    assert none_guess["confidence"] < text_guess["confidence"]


def test_the_shipped_table_counts_the_grounds():
    assert set(calibration.TABLE.get("grounds", {})) <= {"text", "rule", "phase/around", "none"}
    assert sum(n for _, n in calibration.TABLE["grounds"].values()) == calibration.TABLE["all"][1]
