"""The weight phase of the best guess: a text whose last step line shows the checkpoint being read
(a shard bar, the loader's weights format, the fp8 config's notice) has passed the architecture
lookup, so the weight phase's prior leans to the weights themselves (evidence.past_architecture).
The fragments are written from SGLang's own output (0.4.x-0.5.x), each cut before its cause."""

import pytest
from conftest import only_incident

from sglang_doctor.diagnose import evidence, fallback, phase_prior

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
SHARDS = "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:11<00:11,  5.81s/it]\n"
CUT_SCHEDULER = ("[2025-02-09 22:50:08 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                 f'  File "{P}/managers/scheduler.py", line 1787, in run_scheduler_process\n'
                 "    scheduler = Schedul")
LOAD_BEGIN = "[2025-02-09 22:49:58 TP0] Load weight begin. avail mem=78.50 GB\n"


@pytest.fixture
def level_row(monkeypatch):
    """A weight phase whose prior has model.unsupported just ahead of model.load (the coin flip)."""
    counts = {k: dict(v) for k, v in phase_prior.COUNTS.items()}
    counts["startup.load_weights"] = {"model.unsupported": 11, "model.load": 10, "other": 6}
    monkeypatch.setattr(phase_prior, "COUNTS", counts)


def test_a_text_ending_in_a_shard_bar_is_past_the_architecture_lookup(level_row):
    note = fallback.no_incident([], (LOAD_BEGIN + SHARDS).encode(), 2)
    g = note["best_guess"]
    assert g["category"] == "model.load"
    assert any(e["name"] == "weights_reading" and e["weight"] < 0 for e in g["evidence"])


def test_the_fp8_notice_counts_as_reading_too(level_row):
    text = b"[2025-05-01 10:08:11 TP1] Detected fp8 checkpoint. Please note that the format is experimental.\n"
    assert fallback.no_incident([], text, 1)["best_guess"]["category"] == "model.load"


def test_load_weight_begin_alone_keeps_the_whole_row(level_row):
    # counter-example: the milestone is printed before the architecture lookup
    g = fallback.no_incident([], LOAD_BEGIN.encode(), 1)["best_guess"]
    assert g["category"] == "model.unsupported"
    assert not any(e["name"] == "weights_reading" for e in g["evidence"])


def test_an_incident_after_a_shard_bar_carries_the_piece(pack, level_row):
    ev = only_incident(pack, SHARDS + CUT_SCHEDULER)
    g = ev["fallback"]["best_guess"]
    assert any(e["name"] == "weights_reading" for e in g["evidence"])
    assert g["category"] == "model.load"


def test_the_piece_names_only_weight_reading_lines():
    assert evidence.past_architecture(SHARDS)[0].category == "model.unsupported"
    assert evidence.past_architecture(LOAD_BEGIN) == []
    assert evidence.past_architecture("Capturing batches (bs=8 avail_mem=3.1 GB)") == []
