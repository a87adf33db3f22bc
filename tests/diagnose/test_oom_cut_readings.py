"""What a CUDA OOM whose exception line was cut still shows (diagnose/evidence.py ``from_allocation``,
``gpu_memory_free``), read from torch's and SGLang's source:

- torch's caching allocator raises ``torch.OutOfMemoryError`` synchronously in the op that asked for
  the memory, so a traceback cut above its last line that stops at an op allocating its output
  (``F.linear``, an embedding, a contiguous copy: ``_OUTPUT_ALLOCATING``) or in ``Module._apply``'s
  ``convert`` (a module moved to the GPU) was most often running out of memory; an asynchronous CUDA
  error surfaces at a copy to the host or a synchronize instead (``_SYNCHRONIZING``);
- the scheduler's summary line ("max_total_num_tokens=..., available_gpu_mem=N GB", 0.4.7+ scheduler.py)
  gives the free GPU memory after capture, as the start-up milestones' "avail mem=" do.

The tracebacks are the tuned parts' real text cut above their exception line (bench/guess_cv.py
--cut-check does the same to every tuned failure): corpus/field30/001 (a 13938-token prefill's
``F.linear``, memory.cuda_oom), corpus/field27/008 (runtime.crash: ``torch.concat(..., x.cpu())``)."""

from conftest import only_incident

H = "/home/ubuntu/sglang/python/sglang/srt"
T = "/home/ubuntu/miniconda3/envs/sglang-env/lib/python3.9/site-packages"
# corpus/field30/001 (0.2.x ModelTpServer): a long prefill's MLP, cut above "torch.cuda.OutOfMemoryError"
FIELD30_001 = (
    "[gpu=0] Prefill batch. #new-seq: 17, #new-token: 13938, #cached-token: 3260, cache hit rate: 17.86%, "
    "#running-req: 1, #queue-req: 2\n"
    "Exception in ModelTpServer:\n"
    "Traceback (most recent call last):\n"
    f'  File "{H}/managers/tp_worker.py", line 545, in forward_prefill_batch\n'
    "    output = self.model_runner.forward(batch, ForwardMode.EXTEND)\n"
    f'  File "{H}/model_executor/model_runner.py", line 356, in forward_extend\n'
    "    return self.model.forward(\n"
    f'  File "{H}/models/llama2.py", line 79, in forward\n'
    "    gate_up, _ = self.gate_up_proj(x)\n"
    f'  File "{T}/torch/nn/modules/module.py", line 1541, in _call_impl\n'
    "    return forward_call(*args, **kwargs)\n"
    f'  File "{T}/vllm/model_executor/layers/linear.py", line 330, in forward\n'
    "    output_parallel = self.quant_method.apply(self, input_, bias)\n"
)
LINEAR = (f'  File "{T}/vllm/model_executor/layers/linear.py", line 122, in apply\n'
          "    return F.linear(x, layer.weight, bias)\n")


def guess_of(pack, text):
    ev = only_incident(pack, text)
    return ev["fallback"]["best_guess"]


def _allocation(guess):
    return [e for e in guess.get("evidence", ()) if e["name"] == "allocation"]


def test_a_cut_traceback_stopping_at_an_op_allocating_its_output_reads_as_an_oom(pack):
    guess = guess_of(pack, FIELD30_001 + LINEAR)
    assert guess["category"] == "memory.cuda_oom"
    (piece,) = _allocation(guess)
    assert "F.linear" in piece["why"] and "caching allocator" in piece["why"]


def test_the_same_traceback_one_frame_earlier_has_no_allocation(pack):
    guess = guess_of(pack, FIELD30_001)
    assert not _allocation(guess)
    assert guess["category"] != "memory.cuda_oom"


def test_an_op_on_a_line_that_copies_to_the_host_is_no_allocation(pack):
    # corpus/field27/008's last frame (runtime.crash): ``.cpu()`` is where an earlier kernel's error surfaces
    text = ("[2025-03-07 18:14:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{H}/speculative/eagle_utils.py", line 333, in verify\n'
            "    batch.token_to_kv_pool.free(mem_need_free_idx)\n"
            f'  File "{H}/mem_cache/memory_pool.py", line 132, in free\n'
            "    self.free_slots = torch.concat((self.free_slots, free_index.cpu()))\n")
    guess = guess_of(pack, text)
    assert not _allocation(guess)
    assert guess["category"] != "memory.cuda_oom"
    # the same line without the copy to the host: an allocation
    assert _allocation(guess_of(pack, text.replace("free_index.cpu()", "free_index")))


def test_an_op_with_its_exception_line_is_left_to_the_rules(pack):
    # the exception line is there: no cut, so no reading of what the line was doing
    ev = only_incident(pack, FIELD30_001 + LINEAR + "RuntimeError: shapes cannot be multiplied (4x5 and 6x7)\n")
    assert not _allocation((ev.get("fallback") or {}).get("best_guess") or {})


def test_a_module_moved_to_the_gpu_reads_as_an_oom(pack):
    # torch/nn/modules/module.py Module.to -> _apply -> convert, as torch 2.4+ prints it (``return t.to(``)
    text = ("Traceback (most recent call last):\n"
            f'  File "{H}/model_loader/loader.py", line 380, in load_model\n'
            "    model = model.to(device)\n"
            f'  File "{T}/torch/nn/modules/module.py", line 1355, in to\n'
            "    return self._apply(convert)\n"
            f'  File "{T}/torch/nn/modules/module.py", line 942, in _apply\n'
            "    param_applied = fn(param)\n"
            f'  File "{T}/torch/nn/modules/module.py", line 1341, in convert\n'
            "    return t.to(\n")
    guess = guess_of(pack, text)
    assert guess["category"] == "memory.cuda_oom"
    (piece,) = _allocation(guess)
    assert "convert" in piece["why"]


def _summary_line(avail: str, device: str = "gpu") -> str:
    return ("[2025-06-01 10:00:00] max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests=4096, context_len=32768, available_{device}_mem={avail} GB\n")


def _low(guess):
    return [e for e in guess.get("evidence", ()) if e["name"] == "low_memory"]


SCHED = ("[2025-06-01 10:00:05] Scheduler hit an exception: Traceback (most recent call last):\n"
         f'  File "{H}/managers/scheduler.py", line 2400, in run_scheduler_process\n'
         "    scheduler.event_loop_overlap()\n")


def test_the_scheduler_summary_with_almost_no_gpu_memory_free_is_a_memory_piece(pack):
    guess = guess_of(pack, _summary_line("0.62") + SCHED)
    (piece,) = _low(guess)
    assert piece["category"] == "memory.cuda_oom" and "0.62 GB" in piece["why"]


def test_the_scheduler_summary_with_room_or_of_host_memory_is_none(pack):
    assert not _low(guess_of(pack, _summary_line("7.61") + SCHED))
    # a CPU device's figure is host memory
    assert not _low(guess_of(pack, _summary_line("0.62", device="cpu") + SCHED))


# corpus/field27/014 (runtime.crash: an RMSNorm kernel's invalid launch configuration) cut two lines above
# its exception line: sgl_kernel's op dispatched through torch/_ops.py under torch's device context
M = "sglang/python/sglang/srt"
KERNEL_UNDER_DEVICE = (
    "[2025-01-20 09:00:00 DP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{M}/models/mixtral.py", line 232, in forward\n'
    "    hidden_states, residual = self.input_layernorm(hidden_states, residual)\n"
    '  File "python3.10/site-packages/sgl_kernel/ops/__init__.py", line 156, in rmsnorm\n'
    "    torch.ops.sgl_kernels.rmsnorm(out, input, weight, eps, _get_cuda_stream(device))\n"
    '  File "python3.10/site-packages/torch/_ops.py", line 1116, in __call__\n'
    "    return self._op(*args, **(kwargs or {}))\n"
    '  File "python3.10/site-packages/torch/utils/_device.py", line 106, in __torch_function__\n'
    "    return func(*args, **kwargs)\n")


def test_a_kernel_op_under_the_device_context_is_no_allocation(pack):
    # torch's device context gives a device only to the tensor constructors; an op under it is a kernel
    assert not _allocation(guess_of(pack, KERNEL_UNDER_DEVICE))
    # a constructor under it (corpus/field27/013's fp8 create_weights: torch.empty) still is one
    constructor = KERNEL_UNDER_DEVICE.replace(
        '  File "python3.10/site-packages/torch/_ops.py", line 1116, in __call__\n'
        "    return self._op(*args, **(kwargs or {}))\n",
        f'  File "{M}/layers/quantization/fp8.py", line 300, in create_weights\n'
        "    data=torch.empty(\n")
    assert _allocation(guess_of(pack, constructor))
