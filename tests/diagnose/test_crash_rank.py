"""A generic crash class does not win where the text names a more specific category
(session 24, crashwin24):

- torch's "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions." trailer, which
  every CUDA error torch raises carries, is not a device-side assert (class.runtime.device_assert
  took every CUDA error as a crash, above the classes of where it failed);
- a runtime.crash rule that only *assumed* the server had been ready (a fragment that does not
  say) ranks below the rules of its layer that do not rest on that assumption
  (rules_engine._crash_on_assumption);
- Python's refusal of a call's arguments is code of two versions (class.internal.call_mismatch),
  and a warm-up request's failure is no crash while serving."""

from conftest import FIXTURES, only_incident

READY = "[2026-12-06 10:00:00] The server is fired up and ready to roll!\n"
TORCH_TRAILER = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def _fixture(name: str) -> str:
    return (FIXTURES / "classes" / name).read_text()


def test_the_dsa_trailer_of_a_cuda_error_is_no_device_side_assert(pack):
    ev = only_incident(pack, _fixture("cuda_error_trailer_pynccl_init.log"))
    assert (ev["rule"], ev["category"]) == ("class.nccl.distributed", "nccl")


def test_a_real_device_side_assert_is_still_one(pack):
    ev = only_incident(pack, _fixture("device_assert_before_ready.log"))
    assert (ev["rule"], ev["category"]) == ("class.runtime.device_assert", "runtime.crash")


def test_a_kernel_without_code_for_this_gpu_is_a_capability_failure(pack):
    ev = only_incident(pack, _fixture("cuda_invalid_device_function_sgl_kernel.log"))
    assert (ev["rule"], ev["category"]) == ("class.hw.capability", "kernel.unsupported_hw")
    assert TORCH_TRAILER.splitlines()[-1] in _fixture("cuda_invalid_device_function_sgl_kernel.log")


def test_an_assumed_crash_while_serving_ranks_below_where_it_failed(pack):
    # the distributed layer's assert in a fragment: "after ready" would only be assumed
    fragment = _fixture("distributed_assert_fragment.log")
    ev = only_incident(pack, fragment)
    assert (ev["rule"], ev["category"]) == ("class.nccl.distributed", "nccl")


def test_a_known_crash_while_serving_keeps_its_rank(pack):
    # the same assert with the ready line before it: a broken invariant while serving
    ev = only_incident(pack, READY + "[2026-12-06 10:05:00 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
                       + _fixture("distributed_assert_fragment.log"))
    assert (ev["rule"], ev["category"]) == ("class.runtime.distributed_invariant", "runtime.crash")


CALL = ('  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/models/deepseek_v2.py", line 1453, in forward_core\n'
        "    return forward_dsa_core_npu(self, *inner_state)\n"
        "TypeError: forward_dsa_core_npu() missing 1 required positional argument: 'v'\n")


def test_a_call_that_does_not_fit_its_signature_is_code_of_two_versions(pack):
    ev = only_incident(pack, CALL)
    assert (ev["rule"], ev["category"]) == ("class.internal.call_mismatch", "other")
    for message in ("Foo.forward() takes 2 positional arguments but 3 were given",
                    "rmsnorm() got an unexpected keyword argument 'enable_pdl'",
                    "apply() got multiple values for argument 'layer'",
                    "run() missing 1 required keyword-only argument: 'stream'"):
        ev = only_incident(pack, CALL.rsplit("TypeError", 1)[0] + "TypeError: " + message + "\n")
        assert ev["rule"] == "class.internal.call_mismatch", message


def test_a_type_error_of_another_kind_is_no_call_mismatch(pack):
    ev = only_incident(pack, CALL.rsplit("TypeError", 1)[0] + "TypeError: 'NoneType' object is not subscriptable\n")
    assert ev["rule"] != "class.internal.call_mismatch"


def test_a_call_mismatch_while_serving_is_a_crash_while_serving(pack):
    ev = only_incident(pack, READY + "[2026-12-06 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                       '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 6384, in run_scheduler_process\n'
                       "    scheduler.event_loop_overlap()\n" + CALL)
    assert ev["category"] == "runtime.crash"


def test_a_failure_of_the_warm_up_request_is_not_a_crash_while_serving(pack):
    # the HTTP server was up and warming up (no ready line yet): SGLang's own check failed
    text = ("[2026-12-06 10:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', tp_size=1, port=30000)\n"
            "[2026-12-06 10:00:40] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
            "[2026-12-06 10:00:41 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 6384, in run_scheduler_process\n'
            "    scheduler.event_loop_overlap()\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/schedule_batch.py", line 1500, in prepare_for_extend\n'
            "    assert len(self.out_cache_loc) == self.extend_num_tokens\n"
            "AssertionError\n")
    ev = only_incident(pack, text)
    assert ev["phase"] == "startup.warmup"
    assert ev["category"] != "runtime.crash", ev["rule"]


def test_a_request_structure_that_does_not_fit_is_a_crash_while_serving(pack):
    # a wrapper of another version builds SGLang's request (io_struct) only for a request it
    # serves (corpus late/062: dynamo's TokenizedGenerateReqInput without 'stream')
    ev = only_incident(pack, _fixture("exception_repr_pyo3.log"))
    assert (ev["rule"], ev["category"]) == ("class.runtime.after_ready", "runtime.crash")


def test_torch_distributeds_own_error_is_nccl_wherever_it_was_called_from(pack):
    # a weight-update group's barrier in model_runner (corpus field17/011): the deepest SGLang
    # frame is not in srt/distributed/, the exception is torch distributed's
    # (fa24's specific rule for torch.distributed's own exception types names it first; the class
    # unit stands behind it for the messages that rule does not know)
    ev = only_incident(pack, _fixture("nccl_dist_backend_error_weight_update_group.log"))
    assert ev["category"] == "nccl" and ev["rule"] in ("nccl.torch_distributed_exception", "class.nccl.message"), ev
