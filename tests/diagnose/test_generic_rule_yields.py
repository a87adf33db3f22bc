"""A generic specific rule that knows only the traceback's shape (runtime.crash.scheduler_exception:
the scheduler's event loop raised) yields to a class rule that knows the failure itself and names
another category; a class rule that says the same category, or one whose answer is only its
context's, leaves it the answer (rules_engine._yields_to_class)."""

from conftest import FIXTURES, only_incident

LOOP = ("[2026-12-05 10:02:00] The server is fired up and ready to roll!\n"
        "[2026-12-05 10:05:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 6384, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1201, in event_loop_overlap\n'
        "    batch_result = self.run_batch(batch)\n")


def _deepest(path: str, func: str, exc_line: str) -> str:
    return (LOOP + f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/{path}", line 10, in {func}\n'
            "    raise ...\n" + exc_line + "\n")


def test_a_setting_refused_at_the_first_batch_is_the_refusal_not_a_crash(pack):
    text = (FIXTURES / "classes" / "args_refused_while_serving_event_loop.log").read_text()
    ev = only_incident(pack, text)
    assert (ev["rule"], ev["category"]) == ("class.args.refused_while_serving", "args.invalid")


def test_an_internal_check_while_serving_stays_the_schedulers_crash(pack):
    # class.internal.check names runtime.crash while serving too: the specific rule's answer
    # (and its remedies) stand
    ev = only_incident(pack, _deepest("models/qwen3_vl.py", "forward",
                                      "AssertionError: multimodal section rotary embedding requires (3, seq_len) positions"))
    assert (ev["rule"], ev["category"]) == ("runtime.crash.scheduler_exception", "runtime.crash")


def test_a_bare_exception_while_serving_stays_the_schedulers_crash(pack):
    # class.runtime.after_ready knows nothing but the context: it never takes over
    ev = only_incident(pack, _deepest("managers/schedule_batch.py", "prepare_for_decode",
                                      "KeyError: 17"))
    assert ev["category"] == "runtime.crash"
    assert ev["rule"] == "runtime.crash.scheduler_exception"


def test_a_specific_rule_that_reads_the_message_never_yields(pack):
    # the asynchronous CUDA faults have their own specific rules (runtime.yaml): they read the
    # message, so no class rule replaces them even where one matches
    ev = only_incident(pack, _deepest("layers/attention/linear/kda_backend.py", "decode",
                                      "RuntimeError: CUDA error: an illegal memory access was encountered"))
    assert ev["rule"] == "runtime.crash.illegal_memory_access"


def test_a_value_check_while_serving_that_names_no_setting_stays_the_schedulers_crash(pack):
    # class.args.value_check was written for any phase: after ready, a value check that names no
    # setting a user makes checks a value computed while serving (a request's audio, a batch's
    # size), so the scheduler's crash stands (0.5.23 layers/muse_spark/muse_spark_audio.py,
    # layers/dcp/layout.py)
    for path, func, exc in (("layers/muse_spark/muse_spark_audio.py", "patchify",
                             "ValueError: audio length 1001 is not divisible by 4"),
                            ("layers/dcp/layout.py", "get_dcp_chain_spec_lens",
                             "ValueError: tokens_per_req must be >= 1, got 0")):
        ev = only_incident(pack, _deepest(path, func, exc))
        assert (ev["rule"], ev["category"]) == ("runtime.crash.scheduler_exception", "runtime.crash"), exc


def test_a_value_check_while_serving_that_names_a_setting_is_the_setting(pack):
    ev = only_incident(pack, _deepest("layers/dcp/comm.py", "dcp_a2a_lse_reduce",
                                      "AssertionError: num_heads (12) must be divisible by dcp_size (8)"))
    assert (ev["rule"], ev["category"]) == ("class.args.value_check", "args.invalid")
    ev = only_incident(pack, (FIXTURES / "runtime" / "scheduler_exception_value_check_request_input_0523.log").read_text())
    assert ev["category"] == "runtime.crash"


def test_a_refusal_written_for_serving_still_takes_over_without_a_setting_named(pack):
    # class.args.refused_while_serving (after_ready: true) reads its own message for a refusal:
    # "dcp_kv_mask is not supported for FP4 KV cache." (0.5.23 mem_cache/memory_pool.py) names
    # a combination, not a flag
    ev = only_incident(pack, _deepest("mem_cache/memory_pool.py", "set_kv_buffer",
                                      "RuntimeError: dcp_kv_mask is not supported for FP4 KV cache."))
    assert (ev["rule"], ev["category"]) == ("class.args.refused_while_serving", "args.invalid")
