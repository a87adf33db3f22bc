"""What a fragment shows the server doing when it was cut, read for the best guess
(diagnose/evidence.py, fallback.py): a weight-loading progress line is past the architecture lookup
(evidence.past_architecture); an exception type cut inside its name is completed when it can only be
one (evidence.cut_type); what a cut traceback was doing (a JIT build under way, an allocation, the cut
type) outweighs the module a class rule matched on (fallback._more_precise_place).  The fragments are
written from SGLang's own output (0.4.x-0.5.x), each cut before its cause."""

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
    # the explanation says what took the other reading down
    assert "lowered: model.unsupported by weights_reading" in g["why"]


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


# -- what a cut traceback was doing outweighs the module a class rule matched on ---------------
CAPTURE = (f'  File "{P}/model_executor/model_runner.py", line 504, in init_cuda_graphs\n'
           "    self.cuda_graph_runner = CudaGraphRunner(self)\n"
           f'  File "{P}/model_executor/cuda_graph_runner.py", line 143, in __init__\n'
           "    self.model_runner.attn_backend.init_cuda_graph_state(self.max_num_token)\n"
           f'  File "{P}/layers/attention/triton_backend.py", line 72, in init_cuda_graph_state\n'
           "    self.cuda_graph_attn_logits = torch.empty(\n"
           "                                  ^^^^^^^^^^^^\n")  # (Python 3.11's caret line)


def test_an_exception_type_cut_inside_its_name_is_completed(pack):
    ev = only_incident(pack, CAPTURE + "torch.O")
    assert ev["rule"].startswith("class.cuda_graph")  # the rule matched on the module; the type says more
    fb = ev["fallback"]
    assert fb["best_guess"]["category"] == "memory.cuda_oom"
    assert any(e["name"] == "cut_type" for e in fb["best_guess"]["evidence"])
    assert "cut inside its type name (torch.O...)" in fb["missing"]
    # the missing part is the exception line itself: the traceback grep, not the lines before it
    assert fb["next_step"].startswith("grep -n -B5 -A80 'Traceback")


def test_a_whole_type_with_no_message_is_not_cut(pack):
    # counter-example: a whole RuntimeError with nothing after it says nothing beyond its type
    ev = only_incident(pack, CAPTURE + "RuntimeError\n")
    fb = ev["fallback"]
    assert "says nothing beyond its type" in fb["missing"]
    assert not any(e["name"] == "cut_type" for e in fb["best_guess"].get("evidence", ()))


def test_a_cut_type_that_names_no_category_gives_no_piece():
    from types import SimpleNamespace as NS

    from sglang_doctor.diagnose import evidence as ev

    inc = NS(exception=NS(type="Runtim", message=""))
    assert ev.cut_type(inc) == ["RuntimeError"] and ev.from_cut_type(inc) == []
    assert ev.cut_type(NS(exception=NS(type="torch.O", message=""))) == ["torch.OutOfMemoryError"]
    assert ev.cut_type(NS(exception=NS(type="torch.O", message="x"))) is None
    assert ev.cut_type(NS(exception=NS(type="MyError", message=""))) is None


JIT = ("[2024-12-19 14:44:20 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
       "2024-12-19 14:44:21,421 - INFO - flashinfer.jit: Loading JIT ops: batch_decode_with_kv_cache\n")
CUT_IN_CAPTURE = ("[2024-12-19 14:44:21 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                  f'  File "{P}/model_executor/cuda_graph_runner.py", line 209, in __in')


def test_a_jit_build_under_way_outweighs_the_capture_module(pack):
    ev = only_incident(pack, JIT + CUT_IN_CAPTURE)
    assert ev["category"] == "cuda_graph"  # the rule's answer stands for the incident
    g = ev["fallback"]["best_guess"]
    assert g["category"] == "kernel.build" and "JIT kernel build" in g["why"]


def test_capture_frames_with_no_build_keep_the_rules_answer(pack):
    # counter-example: the same cut traceback after the capture milestone alone
    ev = only_incident(pack, JIT.splitlines(keepends=True)[0] + CUT_IN_CAPTURE)
    assert ev["fallback"]["best_guess"]["category"] == "cuda_graph"
