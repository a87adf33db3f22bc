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
