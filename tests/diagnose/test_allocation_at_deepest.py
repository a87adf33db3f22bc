"""An allocation that is the very line a cut traceback was executing says what the process was doing,
which outweighs the module it was doing it in (diagnose/evidence.py ``ALLOCATION_AT_DEEPEST``), also
against a class rule that matched on that module (fallback._more_precise_place weighs the text's own
pieces, not the phase's prior).  The fragments are real SGLang text of the tuned parts cut above their
exception line (bench/guess_cv.py --cut-check does the same to every tuned failure): corpus/dev/017
(0.5.8.post1, a GPU another process held: ``torch.AcceleratorError: CUDA error: out of memory`` at
GroupCoordinator's first device tensor) and corpus/field10/015 (a T4's rotary cache at ``torch.arange``,
kernel.unsupported_hw, no allocation of ``_ALLOCATING``)."""

from conftest import only_incident

P = "/app/sglang/sglang-latest/lib64/python3.12/site-packages/sglang/srt"
# corpus/dev/017's scheduler traceback down to GroupCoordinator's constructor (its exception line cut)
DEV017 = (
    "[2026-02-25 15:39:23 TP8] Init torch distributed begin.\n"
    "[2026-02-25 15:39:25 TP8] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{P}/managers/scheduler.py", line 2937, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    f'  File "{P}/managers/scheduler.py", line 346, in __init__\n'
    "    self.init_model_worker()\n"
    f'  File "{P}/managers/tp_worker.py", line 329, in _init_model_runner\n'
    "    self._model_runner = ModelRunner(\n"
    f'  File "{P}/model_executor/model_runner.py", line 365, in __init__\n'
    "    min_per_gpu_memory = self.init_torch_distributed()\n"
    f'  File "{P}/model_executor/model_runner.py", line 758, in init_torch_distributed\n'
    "    init_distributed_environment(\n"
    f'  File "{P}/distributed/parallel_state.py", line 1530, in init_distributed_environment\n'
    "    _WORLD = init_world_group(ranks, local_rank, backend)\n"
    f'  File "{P}/distributed/parallel_state.py", line 1327, in init_world_group\n'
    "    return GroupCoordinator(\n"
)
ALLOCATION = (f'  File "{P}/distributed/parallel_state.py", line 255, in __init__\n'
              "    active_ranks = torch.ones(len(ranks), dtype=torch.int32, device=self.device)\n")


def guess_of(pack, text):
    ev = only_incident(pack, text)
    return ev, ev["fallback"]["best_guess"]


def test_an_allocation_at_the_deepest_line_outweighs_the_distributed_module(pack):
    ev, guess = guess_of(pack, DEV017 + ALLOCATION)
    assert ev["rule"] == "class.nccl.distributed"  # the class rule still matched on the module
    assert guess["category"] == "memory.cuda_oom"
    piece = next(e for e in guess["evidence"] if e["name"] == "allocation")
    assert piece["weight"] > next(e["weight"] for e in guess["evidence"] if e["name"] == "deepest_frame")
    assert "torch.ones" in guess["why"] and "class.nccl.distributed" in guess["why"]


def test_the_same_traceback_cut_one_frame_earlier_stays_with_the_module(pack):
    # no allocation visible: the GroupCoordinator call is where it was, NCCL set-up
    ev, guess = guess_of(pack, DEV017)
    assert guess["category"] == "nccl"
    assert not any(e["name"] == "allocation" for e in guess.get("evidence", ()))


def test_an_allocation_above_the_deepest_frame_keeps_its_lower_weight(pack):
    # the allocation's frame calls a deeper one (the deepest line is not the allocation itself)
    text = DEV017 + ALLOCATION.replace("active_ranks = torch.ones(", "active_ranks = torch.ones(helper(") + (
        f'  File "{P}/distributed/utils.py", line 40, in helper\n'
        "    return get_world_group().size\n")
    _, guess = guess_of(pack, text)
    pieces = [e for e in guess.get("evidence", ()) if e["name"] == "allocation"]
    assert all(e["weight"] < 0.4 for e in pieces)
    assert guess["category"] != "memory.cuda_oom"


def test_a_rotary_cache_arange_is_no_allocation_piece(pack):
    # corpus/field10/015's last frame (kernel.unsupported_hw on a T4): torch.arange is not an allocation of
    # _ALLOCATING (it launches a kernel), so no OOM is guessed there
    text = ("Traceback (most recent call last):\n"
            'File ".../sglang/srt/layers/rotary_embedding.py", line 210, in _ensure_cos_sin_cache_length\n'
            "    t_new = torch.arange(start, new_len, dtype=inv_freq.dtype, device=device)\n")
    _, guess = guess_of(pack, text)
    assert guess["category"] != "memory.cuda_oom"
    assert not any(e["name"] == "allocation" for e in guess.get("evidence", ()))


# corpus/field14/019 (0.5.x, DP4 TP4): the KV pool took 84 GB, capture began with 1.00 GB free and the
# scheduler's traceback, cut above its OOM line, stops in an all_gather's output inside capture
S = "/vast/projects/sglang_my/python/sglang/srt"
FIELD14_019 = (
    "[2025-12-27 17:12:51 DP0 TP0] KV Cache is allocated. #tokens: 1878144, KV size: 84.08 GB\n"
    "[2025-12-27 17:12:51 DP0 TP0] Memory pool end. avail mem=1.44 GB\n"
    "[2025-12-27 17:12:51 DP0 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem={avail} GB\n"
    "[2025-12-27 17:13:27 DP2 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{S}/model_executor/cuda_graph_runner.py", line 393, in __init__\n'
    "    self.capture()\n"
    f'  File "{S}/model_executor/cuda_graph_runner.py", line 741, in capture_one_batch_size\n'
    "    run_once()\n"
    f'  File "{S}/model_executor/cuda_graph_runner.py", line 728, in run_once\n'
    "    logits_output_or_pp_proxy_tensors = forward(\n"
    f'  File "{S}/layers/logits_processor.py", line 881, in _get_logits\n'
    "    logits = tensor_model_parallel_all_gather(logits)\n"
    f'  File "{S}/distributed/communication_op.py", line 20, in tensor_model_parallel_all_gather\n'
    "    return get_tp_group().all_gather(input_, dim)\n"
    f'  File "{S}/distributed/parallel_state.py", line 818, in all_gather\n'
    "    output_tensor = output_tensor.reshape(\n"
)


def test_capture_begun_with_almost_no_free_memory_outweighs_the_module(pack):
    ev, guess = guess_of(pack, FIELD14_019.format(avail="1.00"))
    assert ev["rule"] == "class.nccl.distributed"
    assert guess["category"] == "memory.cuda_oom"
    assert any(e["name"] == "low_memory" and "1 GB" in e["why"] for e in guess["evidence"])
    assert "the free GPU memory the text shows says more" in guess["why"]


def test_capture_begun_with_room_stays_with_the_module(pack):
    # the same text with 3.65 GB free at capture (a non-OOM failure's figure): no memory piece
    ev, guess = guess_of(pack, FIELD14_019.format(avail="3.65"))
    assert guess["category"] == "nccl"
    assert not any(e["name"] == "low_memory" for e in guess.get("evidence", ()))


# corpus/field16/010 (a 0.5.2x tree, PP): a prefill's MoE kernel allocating its output while serving; the
# scheduler's traceback, cut above "torch.OutOfMemoryError: CUDA out of memory", matched
# runtime.crash.scheduler_exception on the serving loop's frames (event_loop_pp)
C = "/data/nvme/sglang-codex/sglang/python/sglang/srt"
FIELD16_010 = (
    "[2026-10-02 17:07:54 PP0 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{C}/managers/scheduler.py", line 6089, in run_scheduler_process\n'
    "    scheduler.run_event_loop()\n"
    f'  File "{C}/managers/scheduler.py", line 5948, in _dispatch_event_loop_once\n'
    "    scheduler.event_loop_pp()\n"
    f'  File "{C}/managers/scheduler_pp_mixin.py", line 165, in event_loop_pp\n'
    "    result, self.launch_event = self._pp_launch_batch(\n"
    f'  File "{C}/managers/scheduler_pp_mixin.py", line 1752, in _pp_launch_batch\n'
    "    result = self.run_batch(cur_batch, pp_proxy_tensors)\n"
    f'  File "{C}/model_executor/model_runner.py", line 1945, in _forward_raw\n'
    "    ret = self.eager_runner.execute(\n"
    f'  File "{C}/layers/moe/fused_moe_triton/layer.py", line 1644, in run_moe_core\n'
    "    return self.quant_method.apply(\n"
    f'  File "{C}/layers/quantization/fp8.py", line 3361, in apply\n'
    "    return self._apply_sub80_mxfp4_w4a16(layer, dispatch_output)\n"
)
MOE_ALLOCATION = (f'  File "{C}/layers/quantization/fp8.py", line 3271, in _apply_sub80_mxfp4_w4a16\n'
                  "    down_slots = torch.empty(\n")


def test_a_serving_loop_rule_yields_to_the_allocation_its_last_line_made(pack):
    ev, guess = guess_of(pack, FIELD16_010 + MOE_ALLOCATION)
    assert ev["rule"] == "runtime.crash.scheduler_exception"
    assert guess["category"] == "memory.cuda_oom"
    assert "matched the cut traceback's frames" in guess["why"]


def test_a_serving_loop_rule_does_not_yield_to_a_place(pack):
    # cut one frame earlier: the quantization kernel's place is where it was, which the rule's frames know too
    ev, guess = guess_of(pack, FIELD16_010)
    assert ev["rule"] == "runtime.crash.scheduler_exception"
    assert guess["category"] == "runtime.crash"
