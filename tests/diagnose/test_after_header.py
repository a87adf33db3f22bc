"""Session 22: a text that stops (or fails) after the launch's ``server_args`` line and before any
start-up step is placed at the step SGLang runs next: building the model's configuration and
tokenizer (transformers' AutoConfig, the hub's files), whose commonest failure is a model this
release does not know (``evidence.AFTER_HEADER``).  SGLang prints the line only once the arguments
were parsed and checked (entrypoints/engine.py ``_launch_subprocesses``), so the argument checks are
past.  Before session 22 such a text had no phase and the guess was ``other`` on nothing."""

from pathlib import Path

from sglang_doctor.diagnose import evidence
from sglang_doctor.pipeline import StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
# a shell's launch command and the start of its ServerArgs dump, cut before anything failed
DUMP_ONLY = ROOT / "corpus" / "late" / "023-model.unsupported-llava-v16-server-args-only-cut.log"

DUMP = ("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/models/m', tokenizer_path='/models/m', "
        "tp_size=1, port=30000)\n")
LOAD = ("[2026-01-01 00:00:05 TP0] Load weight begin. avail mem=23.07 GB\n"
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.0s/it]\n")
ROCM = "INFO 01-01 00:00:00 __init__.py:179] Automatically detected platform rocm.\n"


def summary_guess(pack, data: bytes) -> dict:
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(data) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]["best_guess"]


def test_a_text_that_ends_at_the_server_args_line_is_placed_at_the_model_config_step(pack):
    guess = summary_guess(pack, DUMP_ONLY.read_bytes())
    assert guess["category"] == "model.unsupported"
    assert guess["grounds"] == "phase" and "server_args line" in guess["rests_on"]
    assert guess["cue"] == "after_header->model.unsupported"


def test_a_step_line_after_the_header_places_it_instead(pack):
    guess = summary_guess(pack, (DUMP + LOAD).encode())
    assert not any(ev["name"] == "after_header" for ev in guess["evidence"])


def test_a_word_of_the_text_outweighs_the_placement(pack):
    # the pieces are support: a word of the text's own lines (a ROCm platform, half weight) still names it
    guess = summary_guess(pack, (ROCM + DUMP).encode())
    assert any(ev["name"] == "after_header" for ev in guess["evidence"])
    assert guess["category"] == "kernel.unsupported_hw"


def test_a_failure_right_after_the_header_gets_the_pieces_and_one_before_it_does_not(pack):
    sigquit = "[2026-01-01 00:00:09] Received sigquit from a child process. It usually means the child failed.\n"
    for data, placed in (((DUMP + sigquit).encode(), True), ((sigquit + DUMP).encode(), False)):
        pipe = StreamPipeline(pack, remediate=False, whole_log=True)
        events = pipe.feed(data) + pipe.finish()
        diagnoses = [e["_diagnosis"] for e in events if e["event"] == "incident"]
        assert diagnoses
        names = {p.name for p in evidence.collect(diagnoses[0])}
        assert ("after_header" in names) is placed
