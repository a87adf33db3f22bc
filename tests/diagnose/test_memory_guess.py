"""Session 23: memory in the best guess of a text that holds no failure.

A text that ends after a start-up milestone that left almost no free GPU memory (``avail mem=`` under
``evidence.LOW_AVAIL_GB``) is read as a failure after it would be (``evidence.low_memory``): the KV pool when
the pools were sized next, else an allocation (capture, warm-up).  And the tail of torch's caching-allocator
message (``Tried to allocate``, ``total capacity of``, ``non-PyTorch memory``), when a paste kept only that, is
a word of running out of memory."""

import pytest

from sglang_doctor.diagnose import evidence, phase_prior
from sglang_doctor.pipeline import StreamPipeline

LOADED = ("[2026-01-01 00:00:05 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=30.52 GB, "
          "mem usage=42.90 GB.\n"
          "[2026-01-01 00:00:06 TP0] KV Cache is allocated. #tokens: 100000, K size: 14.00 GB, V size: 14.00 GB\n")


def summary_guess(pack, text: str) -> dict:
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]["best_guess"]


def names(guess: dict) -> list[str]:
    return [ev["name"] for ev in guess["evidence"]]


def test_a_text_ending_at_a_reserve_of_almost_nothing_guesses_a_cuda_oom(pack):
    guess = summary_guess(pack, LOADED + "[2026-01-01 00:00:06 TP0] Memory pool end. avail mem=0.62 GB\n")
    assert guess["category"] == "memory.cuda_oom"
    assert "low_memory" in names(guess)


def test_a_text_ending_after_the_weights_with_almost_nothing_free_guesses_the_kv_pool(pack):
    guess = summary_guess(pack, "[2026-01-01 00:00:05 TP0] Load weight end. type=LlamaForCausalLM, "
                                "dtype=torch.bfloat16, avail mem=0.41 GB, mem usage=46.90 GB.\n")
    assert guess["category"] == "memory.kv_pool"
    assert "low_memory" in names(guess)


def test_enough_free_memory_at_the_end_of_a_text_is_no_memory_evidence(pack):
    guess = summary_guess(pack, LOADED + "[2026-01-01 00:00:06 TP0] Memory pool end. avail mem=9.62 GB\n")
    assert "low_memory" not in names(guess)
    assert guess["category"] == next(iter(phase_prior.shares("startup.cuda_graph")))


def test_a_ready_server_is_not_read_by_its_start_up_memory(pack):
    text = (LOADED + "[2026-01-01 00:00:06 TP0] Memory pool end. avail mem=0.62 GB\n"
            "[2026-01-01 00:00:30] The server is fired up and ready to roll!\n"
            "[2026-01-01 00:00:31 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, gen throughput "
            "(token/s): 30.0, #queue-req: 0\n")
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    pipe.feed(text.encode())
    pipe.finish()
    fallback = pipe.summary().get("fallback")
    assert fallback is None or "low_memory" not in names(fallback["best_guess"])


@pytest.mark.parametrize("line", [
    "GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.12 GiB memory in use.",
    "Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity; 22.67 GiB already allocated; 12.69 MiB free; "
    "22.94 GiB reserved in total by PyTorch)",
])
def test_the_tail_of_torchs_out_of_memory_message_is_a_word_of_it(line):
    (piece,) = [ev for ev in evidence._words(line, 1.0, "the failure's message") if ev.name == "words:cuda_oom"]
    assert piece.category == "memory.cuda_oom"


@pytest.mark.parametrize("line", [
    "Double-alloc detected: slots already allocated: [3, 4]",
    "Total capacity of the host KV cache in tokens.",
    "[2026-01-01 00:00:06 TP0] KV Cache is allocated. #tokens: 100000, K size: 14.00 GB, V size: 14.00 GB",
])
def test_sglangs_own_lines_about_capacity_are_no_word_of_it(line):
    assert not [ev for ev in evidence._words(line, 1.0, "the last lines") if ev.name == "words:cuda_oom"]


# Session 25: the capture bar's headroom (cuda_graph_runner.py's tqdm description, "Capturing batches
# (bs=N avail_mem=X GB)"; the piecewise runner's "Capturing num tokens (...)") is the newest figure of
# free memory while graphs are captured.
CAPTURE_BEGIN = (LOADED + "[2026-01-01 00:00:06 TP0] Memory pool end. avail mem=6.20 GB\n"
                 "[2026-01-01 00:00:07 TP0] Capture cuda graph begin. This can take up to several minutes. "
                 "avail mem=6.10 GB\n")


def test_a_text_ending_in_a_capture_bar_with_almost_nothing_free_guesses_a_cuda_oom(pack):
    bar = "Capturing batches (bs=160 avail_mem=4.02 GB):  10%|#         | 3/23 [00:01<00:09]\r" \
          "Capturing batches (bs=152 avail_mem=0.87 GB):  17%|#7        | 4/23 [00:02<00:09]\n"
    guess = summary_guess(pack, CAPTURE_BEGIN + bar)
    assert guess["category"] == "memory.cuda_oom"
    assert "low_memory" in names(guess)


def test_a_capture_bar_with_room_left_is_no_memory_evidence(pack):
    bar = "Capturing batches (bs=152 avail_mem=5.87 GB):  17%|#7        | 4/23 [00:02<00:09]\n"
    guess = summary_guess(pack, CAPTURE_BEGIN + bar)
    assert "low_memory" not in names(guess)


@pytest.mark.parametrize("text, found", [
    ("Capturing num tokens (num_tokens=512 avail_mem=0.76 GB):  40%|####      | 8/20", 0.76),
    ("Capturing batches (bs=4 avail_mem=1.49 GB): 100%|##########| 23/23", 1.49),
    ("Capturing batches (bs=4 avail_mem=1.50 GB): 100%|##########| 23/23", None),
    ("Capture cuda graph begin. This can take up to several minutes. avail mem=0.40 GB", None),
])
def test_the_capture_bars_last_figure_is_read_against_the_threshold(text, found):
    pieces = evidence.low_capture_memory(text, "a line")
    if found is None:
        assert pieces == []
    else:
        (piece,) = pieces
        assert piece.category == "memory.cuda_oom" and f"{found:g} GB" in piece.why


def test_a_failure_after_a_capture_bar_with_almost_nothing_free_has_the_memory_piece(pack):
    text = (CAPTURE_BEGIN + "Capturing batches (bs=152 avail_mem=0.87 GB):  17%|#7        | 4/23 [00:02<00:09]\n"
            "[2026-01-01 00:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process\n'
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n")
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    (incident,) = [e for e in events if e["event"] == "incident"]
    guess = incident["fallback"]["best_guess"]
    assert "low_memory" in names(guess)
    assert guess["category"] == "memory.cuda_oom"


@pytest.mark.parametrize("avail, low", [("1.20", True), ("1.60", False)])
def test_the_threshold_lies_between_the_ooms_and_the_other_failures_headroom(pack, avail, low):
    # (the tuned logs' capture headroom: CUDA OOMs 0.08-1.13 GB, every other failure 1.60 GB or more)
    guess = summary_guess(pack, LOADED + f"[2026-01-01 00:00:06 TP0] Memory pool end. avail mem={avail} GB\n")
    assert ("low_memory" in names(guess)) is low
    if low:
        assert guess["category"] == "memory.cuda_oom"
