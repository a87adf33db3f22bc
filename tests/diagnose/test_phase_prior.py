"""The best guess's phase prior (diagnose/phase_prior.py): the phase a text shows is read
through what usually fails in it, counted from the tuned corpus parts' labels, not through a
fixed "this phase means that category" table.  On real pasted fragments of corpus/ whose cause
is not in the text; the expected categories come from the shipped counts, never written here."""

import importlib.util
from pathlib import Path


from sglang_doctor.diagnose import phase_prior
from sglang_doctor.pipeline import StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
# frames cut inside CUDA graph capture (init_cuda_graphs), no milestone, no exception line
CAPTURE_FRAMES = CORPUS / "dev" / "008-kernel.unsupported_hw-rtx5090-fp8-capture-frames.log"
# "Capture cuda graph begin" milestone, then a scheduler traceback cut before its exception
CAPTURE_MILESTONE = CORPUS / "late" / "060-cuda_graph-ktransformers-kimi-k25-eagle-capture-bs1.log"
# no failure: a rollout's requests answered 403 while the server was serving
SERVING_TAIL = CORPUS / "fresh" / "053-other-slime-rollout-generate-403-retries.log"


def guess(pack, path: Path) -> dict:
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(path.read_bytes()) + pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    if not incidents:
        return pipe.summary()["fallback"]["best_guess"]
    (ev,) = incidents
    return ev["fallback"]["best_guess"]


def top(phase: str) -> str:
    return next(iter(phase_prior.shares(phase)))


def test_the_shipped_counts_are_the_labels_counts():
    spec = importlib.util.spec_from_file_location("guess_prior", ROOT / "scripts" / "guess_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert phase_prior.COUNTS == mod.count()
    assert phase_prior.COUNTS["startup.cuda_graph"]  # the table is not empty


def test_a_frame_in_graph_capture_gives_the_phase_not_the_cause(pack):
    # capture runs every kernel for the first time: the frame says which step, the prior what
    # usually fails in it
    g = guess(pack, CAPTURE_FRAMES)
    names = [(e["name"], e["category"]) for e in g["evidence"]]
    assert ("deepest_frame", "cuda_graph") not in names
    assert any(name == "prior:startup.cuda_graph" for name, _ in names)
    assert g["category"] == top("startup.cuda_graph")


def test_a_milestone_spreads_over_what_fails_in_its_phase(pack):
    g = guess(pack, CAPTURE_MILESTONE)
    prior = {e["category"]: e["weight"] for e in g["evidence"] if e["name"] == "prior:startup.cuda_graph"}
    shares = phase_prior.shares("startup.cuda_graph")
    wanted = {c: round(phase_prior.PRIOR_WEIGHT * s, 3) for c, s in shares.items() if s >= phase_prior.MIN_SHARE}
    assert prior == wanted and len(prior) > 1
    assert not any(e["name"] == "milestone" for e in g["evidence"])


def test_the_guess_follows_the_counts(pack, monkeypatch):
    # the same text under a table where capture failures were mostly capture failures
    counts = {k: dict(v) for k, v in phase_prior.COUNTS.items()}
    row = counts["startup.cuda_graph"]
    row["cuda_graph"] = max(row.values()) * 3
    monkeypatch.setattr(phase_prior, "COUNTS", counts)
    assert guess(pack, CAPTURE_FRAMES)["category"] == "cuda_graph"


def test_a_text_that_ends_while_serving_gets_the_serving_prior(pack):
    g = guess(pack, SERVING_TAIL)
    assert {e["name"] for e in g["evidence"] if e["name"].startswith("prior:")} == {"prior:serving"}
    assert g["category"] == top("serving")
    assert g["strength"] <= 0.5 and g["confidence"] <= 0.9


# -- the scheduler's event loop named in a text with no incident (fallback._EVENT_LOOP) --------
# frames of several ranks interleaved character by character (faulthandler's dumps of a
# GLM on MI300 while serving): no traceback forms, but event_loop_overlap is legible
INTERLEAVED_SERVING = CORPUS / "field9" / "008-runtime.crash-glm53-mi300-interleaved-faulthandler-dump.log"
# counter-example: a text that ends while the shards load (no event loop named): start-up
LOADING_TAIL = CORPUS / "dev" / "068-model.load-qwen3-235b-fp8-detected-stall.log"


def test_a_text_naming_the_event_loop_gets_the_serving_prior(pack):
    g = guess(pack, INTERLEAVED_SERVING)
    priors = [e for e in g["evidence"] if e["name"].startswith("prior:")]
    assert {e["name"] for e in priors} == {"prior:serving"}
    assert any("event loop (event_loop_overlap)" in e["why"] for e in priors)
    assert g["category"] == top("serving")


def test_a_start_up_tail_without_the_event_loop_keeps_its_step(pack):
    g = guess(pack, LOADING_TAIL)
    assert {e["name"] for e in g["evidence"] if e["name"].startswith("prior:")} == {"prior:startup.load_weights"}


def test_the_event_loop_is_read_only_in_the_last_lines():
    from sglang_doctor.diagnose.fallback import EVENT_LOOP_LINES, text_phase

    line = b"  File \"/x/sglang/srt/managers/scheduler.py\", line 1, in event_loop_normal\n"
    assert text_phase([], line + b"some warning\n")[0] == "serving"
    # further back than EVENT_LOOP_LINES lines: the text shows no phase
    assert text_phase([], line + b"a line\n" * EVENT_LOOP_LINES) == (None, None)
    # a name that only starts like it (event_loop_ alone, another module's loop) is not it
    assert text_phase([], b"in event_loop_\nrun_event_loop()\n") == (None, None)
