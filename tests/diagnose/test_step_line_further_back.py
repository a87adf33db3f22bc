"""Session 21: a text with no failure whose last lines name no step (a model's processor notices,
a library's warnings) is read by the last line that names a step further back (up to
``fallback.PHASE_LINES``), when nothing nearer (the last lines, the event loop, the ready line, a
milestone) says where the server was.  Both tests fail on the code before session 21 (the phase
was none, the guess ``other`` on nothing)."""

from pathlib import Path

from sglang_doctor.diagnose import fallback
from sglang_doctor.pipeline import StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
# a CI server's batch line and access line, then repeated image-processor notices (field13/006)
SERVING_THEN_NOTICES = ROOT / "corpus" / "field13" / (
    "006-memory.cuda_oom-ci-kimi-vl-mixed-batch-image-processor-warnings-before-oom.log")


def run(pack, data: bytes):
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(data) + pipe.finish()
    return pipe, [e for e in events if e["event"] == "incident"]


def test_a_batch_line_before_notices_says_the_server_was_serving(pack):
    pipe, incidents = run(pack, SERVING_THEN_NOTICES.read_bytes())
    assert not incidents
    phase, why = fallback.text_phase(pipe.assembler.launches, pipe._tail)
    assert phase == "serving" and "name none" in why
    guess = pipe.summary()["fallback"]["best_guess"]
    assert guess["category"] == "runtime.crash" and guess["grounds"] == "phase"


def test_the_last_step_line_wins_and_one_too_far_back_is_not_read(pack):
    notice = "[2026-01-01 00:00:00] Some library printed a notice that names no step.\n"
    loading = "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.0s/it]\n"
    batch = ("[2026-01-01 00:00:00] Decode batch, #running-req: 1, #token: 64, token usage: 0.00, "
             "gen throughput (token/s): 10.0, #queue-req: 0\n")
    pipe, _ = run(pack, (batch + loading + notice * 5).encode())
    assert fallback.text_phase(pipe.assembler.launches, pipe._tail)[0] == "startup.load_weights"
    far = (batch + notice * (fallback.PHASE_LINES + 2)).encode()
    pipe, _ = run(pack, far)
    assert fallback.text_phase(pipe.assembler.launches, pipe._tail) == (None, None)
