"""Where a cut fragment stopped in SGLang's order of work, read for the best guess
(diagnose/evidence.py ``weights_read``, ``pool_allocated``): a finished checkpoint bar means every
shard had been handed to the model and the loaded weights were being post-processed (the quantization
methods' repacking, moving to the GPU: the weights' peak of GPU memory); "KV Cache is allocated" means
the pool's sizing ("Not enough memory") is behind and what allocates next takes what the pool left.
Both lean the guess to memory.cuda_oom as support pieces; a word or frame of the failure itself still
names it.  The fragments are written from SGLang's own output (0.4.x-0.5.x), each cut before its cause."""

from conftest import only_incident

from sglang_doctor.diagnose import evidence, fallback

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
BAR_HALF = "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:11<00:11,  5.81s/it]"
BAR_DONE = "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:21<00:00,  5.40s/it]"
LOAD_BEGIN = "[2025-08-27 00:58:38 TP0] Load weight begin. avail mem=23.07 GB\n"
CUT_SCHEDULER = ("[2025-08-27 00:58:49 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                 f'  File "{P}/managers/scheduler.py", line 2753, in run_scheduler_process\n'
                 "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
                 f'  File "{P}/managers/scheduler.py", line 339, in __init__\n'
                 "    self.tp_worker = TpWorkerClass(\n"
                 f'  File "{P}/managers/tp_worker.py", line 81, in __init__\n'
                 "    self.model_runner = ModelRunner(\n"
                 f'  File "{P}/model_executor/model_runner.py", line 233, in __init__\n'
                 "    s")
KV_ALLOCATED = "[2025-05-05 03:55:08 TP0] KV Cache is allocated. #tokens: 274934, KV size: 17.99 GB\n"
WEIGHTS_LOADED = ("[2025-05-05 03:54:51 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
                  "avail mem=61.22 GB, mem usage=15.40 GB.\n")


def _names(guess: dict) -> set[str]:
    return {e["name"] for e in guess["evidence"]}


def test_only_a_finished_bar_is_every_shard_read():
    assert evidence.weights_read(BAR_DONE)[0].category == "memory.cuda_oom"
    assert evidence.weights_read(BAR_DONE)[0].support
    assert evidence.weights_read(BAR_HALF) == []
    assert evidence.weights_read(LOAD_BEGIN) == []
    # tqdm's carriage returns: several updates on one line, the newest last
    assert evidence.weights_read(BAR_HALF + "\r" + BAR_DONE) != []
    assert evidence.weights_read(BAR_DONE.replace("4/4", "3/4")) == []
    multi = "Multi-thread loading shards: 100% Completed | 8/8 [00:40<00:00,  5.02s/it]"
    assert evidence.weights_read(multi) != []


def test_a_text_ending_in_a_finished_bar_guesses_memory():
    text = (LOAD_BEGIN + BAR_HALF + "\n" + BAR_DONE + "\n").encode()
    g = fallback.no_incident([], text, 3)["best_guess"]
    assert g["category"] == "memory.cuda_oom"
    assert "weights_read" in _names(g)
    assert "post-process" in g["why"]


def test_a_text_ending_in_a_running_bar_keeps_the_weight_reading():
    # counter-example: the shards were still being read (a missing tensor, a bad file come here)
    g = fallback.no_incident([], (LOAD_BEGIN + BAR_HALF + "\n").encode(), 2)["best_guess"]
    assert "weights_read" not in _names(g)
    assert g["category"] != "memory.cuda_oom"


def test_a_cut_traceback_after_a_finished_bar_guesses_memory(pack):
    ev = only_incident(pack, LOAD_BEGIN + BAR_DONE + "\n\n" + CUT_SCHEDULER)
    g = ev["fallback"]["best_guess"]
    assert "weights_read" in _names(g)
    assert g["category"] == "memory.cuda_oom"
    # the explanation says what the guess assumed: where the text stops, not a piece of the failure
    assert "every checkpoint shard read" in g["rests_on"] and "?" not in g["rests_on"]


def test_the_failures_own_words_still_name_it():
    # counter-example: a word of the failure's own message (a checkpoint tensor the model does not
    # have) names model.load, whatever the bar says: the piece is support, it places, it does not name
    own = evidence.Evidence("words:weight_name", "model.load", 0.4, "the failure's own message")
    g = evidence.weigh(evidence.weights_read(BAR_DONE) + [own], context_known=True)
    assert g["category"] == "model.load"
    # and with nothing of the failure's own, the placing piece decides
    assert evidence.weigh(evidence.weights_read(BAR_DONE), context_known=True)["category"] == "memory.cuda_oom"


def _summary_guess(pack, text: str) -> dict:
    """The best guess of the summary for a text with no failure, read by a fresh pipeline (the
    launch and its milestones formed from the text)."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]["best_guess"]


def test_a_text_ending_after_the_pool_is_allocated_is_past_its_sizing(pack):
    g = _summary_guess(pack, WEIGHTS_LOADED + KV_ALLOCATED)
    assert g["category"] == "memory.cuda_oom"
    assert "pool_allocated" in _names(g)
    assert any(e["name"] == "pool_allocated" and e["category"] == "memory.kv_pool" and e["weight"] < 0
               for e in g["evidence"])


def test_a_text_ending_after_the_weights_keeps_the_pool_sizing(pack):
    # counter-example: the pool is sized next, and its "Not enough memory" is what usually fails there
    g = _summary_guess(pack, WEIGHTS_LOADED)
    assert "pool_allocated" not in _names(g)
    assert g["category"] == "memory.kv_pool"
