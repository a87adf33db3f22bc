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
    assert g["confidence"] <= 0.5
