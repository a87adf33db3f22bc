"""Session 35: a traceback cut while a memory pool allocated its buffers (diagnose/evidence.py
``POOL_BUFFER_FUNCTIONS``, ``_pool_buffers``).  SGLang sizes the KV pool and raises its "Not enough memory"
(memory.kv_pool) before it builds the pool (model_runner.py ``init_memory_pool``); the pool's
``_create_buffers`` / ``_init_mamba_pool`` then allocate its tensors, and what else they raise is a
configuration check.  So a traceback cut there, at a line that is not a check, was allocating: the guess is a
CUDA OOM, not the pool's sizing that the module "srt/mem_cache/" names.  The frames are those SGLang
0.4.x-0.5.x prints on that path (scheduler -> TpModelWorker -> ModelRunner -> init_memory_pool -> the pool)."""

from conftest import only_incident

from sglang_doctor.diagnose import evidence

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
TO_THE_POOL = (
    "[2026-01-01 00:00:05 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=9.10 GB, "
    "mem usage=14.90 GB.\n"
    "[2026-01-01 00:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{P}/managers/scheduler.py", line 2100, in run_scheduler_process\n'
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
    f'  File "{P}/managers/tp_worker.py", line 81, in __init__\n'
    "    self.model_runner = ModelRunner(\n"
    f'  File "{P}/model_executor/model_runner.py", line 220, in __init__\n'
    "    self.initialize(min_per_gpu_memory)\n"
    f'  File "{P}/model_executor/model_runner.py", line 290, in initialize\n'
    "    self.init_memory_pool(\n"
    f'  File "{P}/model_executor/model_runner.py", line 1010, in init_memory_pool\n'
    "    self.token_to_kv_pool = MHATokenToKVPool(\n"
    f'  File "{P}/mem_cache/memory_pool.py", line 260, in __init__\n'
    "    self._create_buffers()\n"
)


def guess_of(pack, text):
    ev = only_incident(pack, text)
    return ev["fallback"]["best_guess"]


def pieces(guess, name="deepest_frame"):
    return [e for e in guess.get("evidence", ()) if e["name"] == name]


def test_a_traceback_cut_in_the_pools_buffers_guesses_a_cuda_oom(pack):
    text = TO_THE_POOL + (f'  File "{P}/mem_cache/memory_pool.py", line 285, in _create_buffers\n'
                          "    for _ in range(self.layer_num)\n")
    guess = guess_of(pack, text)
    assert guess["category"] == "memory.cuda_oom"
    assert [e["category"] for e in pieces(guess)] == ["memory.cuda_oom"]
    assert "_create_buffers" in guess["why"]


def test_a_frame_header_without_its_source_line_is_read_the_same(pack):
    # (a paste cut right after the frame's header line)
    guess = guess_of(pack, TO_THE_POOL + f'  File "{P}/mem_cache/memory_pool.py", line 499, in _init_mamba_pool\n')
    assert [e["category"] for e in pieces(guess)] == ["memory.cuda_oom"]


def test_a_pools_check_line_keeps_the_modules_reading(pack):
    # the deepest line is one of the pool's configuration checks: that check failed, no allocation
    text = TO_THE_POOL + (f'  File "{P}/mem_cache/memory_pool.py", line 270, in _create_buffers\n'
                          "    raise ValueError(\n")
    guess = guess_of(pack, text)
    assert guess["category"] != "memory.cuda_oom"
    assert [e["category"] for e in pieces(guess)] == ["memory.kv_pool"]


def test_other_functions_of_the_pools_are_not_allocation(pack):
    # serving's slot allocation in the same module (alloc / free) is the KV pool's bookkeeping, not a
    # device allocation
    text = TO_THE_POOL + (f'  File "{P}/mem_cache/memory_pool.py", line 120, in alloc\n'
                          "    select_index = self.free_slots[:need_size]\n")
    guess = guess_of(pack, text)
    assert not [e for e in pieces(guess) if e["category"] == "memory.cuda_oom"]


def test_torchs_fragmentation_advice_is_a_word_of_running_out_of_memory():
    for line in ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                 "to avoid fragmentation.",
                 "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation."):
        assert any(name == "cuda_oom" and rx.search(line) for name, rx, *_ in evidence.words()), line
    # a setting of the allocator in a launch is no such word
    assert not any(name == "cuda_oom" and rx.search("export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512")
                   for name, rx, *_ in evidence.words())


# -- SGLang's own pool-sizing verdict from the figures it prints (evidence.pool_budget) ---------------------

from pathlib import Path  # noqa: E402

from sglang_doctor.pipeline import StreamPipeline  # noqa: E402

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


def up_to_the_weights(name: str) -> str:
    """A real SGLang 0.5.23 run (fixtures/real) kept down to its "Load weight end" line, as a paste that
    stops there keeps it."""
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if "Load weight end." in line)
    return "".join(lines[:end + 1])


def summary_pieces(pack, text: str) -> list[dict]:
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return [e for e in pipe.summary()["fallback"]["best_guess"]["evidence"] if e["name"] == "pool_budget"]


def test_a_budget_under_zero_is_the_pools_sizing(pack):
    # --mem-fraction-static 0.01 (and --max-total-tokens 20000, applied as min(cap, budget)): 19.08 - 20.05 x 0.99
    # = -0.77 GB; the run raised "Loaded weights leave no GPU
    # memory for the KV cache" right after this line
    found = summary_pieces(pack, up_to_the_weights("mem_fraction_too_small_0523.log"))
    assert [(e["category"], e["weight"]) for e in found] == [("memory.kv_pool", evidence.LOW_MEMORY)]
    assert "-0.77 GB" in found[0]["why"]


def test_a_positive_budget_passes_the_check_and_points_past_it(pack):
    # a public 0.4.3 launch on four L4s (fixtures/startup): 6.09 - 21.63 x (1 - 0.85) = 2.85 GB; the pool was built
    found = summary_pieces(pack, up_to_the_weights("../startup/llms_in_clouds_0_4_3_qwq32b_l4x4.log"))
    assert {e["category"]: e["weight"] for e in found} == {"memory.kv_pool": -0.1,
                                                           "memory.cuda_oom": evidence.WEIGHTS_READ}


def test_on_a_cpu_launch_a_positive_budget_says_nothing(pack):
    # the real 0.5.23 CPU run (13.77 GB): its pool is host memory, so no CUDA OOM is pointed to
    assert summary_pieces(pack, up_to_the_weights("healthy_ctrl_c_0523.log")) == []


def test_an_explicit_token_cap_is_left_alone(pack):
    # --max-total-tokens 0 leaves the pool no tokens whatever the memory (this run raised "Not enough memory" for it):
    # its positive budget says nothing
    assert summary_pieces(pack, up_to_the_weights("max_total_tokens_zero_0523.log")) == []


def test_a_kv_pool_guess_gets_the_command_that_finds_the_pools_check(pack):
    from sglang_doctor.diagnose import fallback

    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    pipe.feed(up_to_the_weights("mem_fraction_too_small_0523.log").encode())
    pipe.finish()
    fb = pipe.summary()["fallback"]
    assert fb["best_guess"]["category"] == "memory.kv_pool"
    assert fb["next_step"] == fallback.KV_POOL_STEP
    # the command finds what this run printed next: its 0.5.23 pool check
    assert "leave no GPU memory" in fallback.KV_POOL_STEP
    assert "Loaded weights leave no GPU memory for the KV cache" in (REAL / "mem_fraction_too_small_0523.log").read_text()
