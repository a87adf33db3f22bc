"""runtime.crash, other, or the category of where it failed (session 35, docs/CRASH-OR-OTHER.md).

A builtin exception raised under a function SGLang runs only while it serves batches is a crash
of the serving runtime (class.runtime.serving_path), also when the paste lost the event loop's
frames and shows no ready line; before the ready line (the warm-up, a start-up phase the text
shows) it is other.  A whole traceback with a program's entry and no SGLang frame is the calling
program's (class.other.outside_sglang: other), never a crash while serving; a library thread's
traceback or one cut above its frames is not.  The shapes: a traceback cut above its frames,
one after a "... hit an exception" header of each process that prints one (0.4.3 to 0.5.23), a
bare assert under an elided gap; the frames as SGLang's source has them.
"""

from __future__ import annotations

import pytest

from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet
from sglang_doctor.pipeline import diagnose_file

SG = "/usr/local/lib/python3.10/dist-packages/sglang/srt/"
SIGQUIT = "[2025-06-01 10:02:11] Received sigquit from a child process. It usually means the child failed.\n"
LAUNCH = ("[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, port=30000)\n"
          "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=78.00 GB\n"
          "[2025-06-01 10:00:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=62.00 GB\n")


def frame(path: str, line: int, function: str, source: str) -> str:
    return f'  File "{path}", line {line}, in {function}\n    {source}\n'


CUT_ABOVE_BATCH_RESULT = (
    frame(SG + "managers/scheduler.py", 2447, "process_batch_result", "self.process_batch_result_decode(batch, result)")
    + frame(SG + "managers/scheduler_output_processor_mixin.py", 417, "process_batch_result_decode",
            "if req.grammar is not None:")
    + "AttributeError: 'Req' object has no attribute 'grammar'\n")
BARE_ASSERT_PREPARE_FOR_DECODE = (
    "[2025-04-18 09:21:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n[...]\n"
    + frame(SG + "managers/schedule_batch.py", 1449, "prepare_for_decode", "self.out_cache_loc = self.alloc_token_slots(bs)")
    + frame(SG + "managers/schedule_batch.py", 1120, "alloc_token_slots", "assert len(out_cache_loc) == num_tokens")
    + "AssertionError\n\n" + SIGQUIT)
# 0.4.x: the overlap scheduler's forward thread (tp_worker_overlap_thread.py forward_thread_func)
OVERLAP_THREAD = (
    "[2025-01-20 08:12:40 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
    + frame(SG + "managers/tp_worker_overlap_thread.py", 109, "forward_thread_func", "self.forward_thread_func_()")
    + frame(SG + "managers/tp_worker_overlap_thread.py", 140, "forward_thread_func_",
            "logits_output, next_token_ids = self.worker.forward_batch_generation(")
    + frame(SG + "layers/logits_processor.py", 300, "forward", "pruned_states = hidden_states[last_index]")
    + "ZeroDivisionError: integer division or modulo by zero\n\n" + SIGQUIT)
DP_DISPATCH = (
    "[2025-03-02 09:00:01] DataParallelController hit an exception: Traceback (most recent call last):\n"
    + frame(SG + "managers/data_parallel_controller.py", 260, "run_data_parallel_controller_process",
            "controller.event_loop()")
    + frame(SG + "managers/data_parallel_controller.py", 240, "event_loop", "self.dispatching(recv_req)")
    + frame(SG + "managers/data_parallel_controller.py", 210, "round_robin_scheduler",
            "self.workers[self.round_robin_counter].send_pyobj(req)")
    + "IndexError: list index out of range\n\n" + SIGQUIT)
TOKENIZER_OUTPUT_LOOP = (
    "[2025-09-10 12:00:00] TokenizerManager hit an exception: Traceback (most recent call last):\n"
    + frame(SG + "managers/tokenizer_manager.py", 1520, "print_exception_wrapper", "await func()")
    + frame(SG + "managers/tokenizer_manager.py", 1200, "handle_loop", "self._result_dispatcher(recv_obj)")
    + frame(SG + "managers/tokenizer_manager.py", 1290, "_handle_batch_output", "state = self.rid_to_state[rid]")
    + "KeyError: 'a8c1f0e2b7d94d3c'\n\n"
    + "[2025-09-10 12:00:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n")

USER_SCRIPT = (
    "Traceback (most recent call last):\n"
    + frame("/home/user/rl/train_grpo.py", 212, "<module>", "main()")
    + frame("/home/user/rl/rewards.py", 44, "compute_rewards", 'scores.append(float(out["text"].split("####")[1]))')
    + "IndexError: list index out of range\n")
MODULE_DRIVER = (
    "Traceback (most recent call last):\n"
    + frame("/usr/lib/python3.10/runpy.py", 196, "_run_module_as_main", "return _run_code(code, main_globals, None,")
    + frame("/usr/lib/python3.10/runpy.py", 86, "_run_code", "exec(code, run_globals)")
    + frame("/opt/fw/fw/trainer/main.py", 270, "<module>", "main()")
    + frame("/opt/fw/fw/utils/reward.py", 52, "compute_score", 'answer = solution_str.split("####")[1]')
    + "TypeError: 'NoneType' object is not subscriptable\n")
# multiprocessing's resource_sharer thread inside SGLang's own scheduler process (tuned field28/001)
LIBRARY_THREAD = (
    "Exception in thread Thread-4 (_serve):\nTraceback (most recent call last):\n"
    + frame("/usr/lib/python3.10/threading.py", 1016, "_bootstrap_inner", "self.run()")
    + frame("/usr/lib/python3.10/multiprocessing/resource_sharer.py", 145, "_serve", "send, close = self._cache.pop(key)")
    + "KeyError: 1\n")
CUT_TOP_TORCH = (
    frame("/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", 2551, "embedding",
          "return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)")
    + "IndexError: index out of range in self\n")
ENGINE_IN_SCRIPT = (
    "Traceback (most recent call last):\n"
    + frame("/workspace/offline.py", 40, "<module>", "out = engine.generate(prompt)")
    + frame(SG + "entrypoints/engine.py", 204, "generate", "ret = self.loop.run_until_complete(generator.__anext__())")
    + frame(SG + "managers/scheduler.py", 2447, "process_batch_result", "self.process_batch_result_decode(batch, result)")
    + "KeyError: 'rid-1'\n")
SCRIPT_OOM = (
    "Traceback (most recent call last):\n"
    + frame("/home/user/train.py", 90, "<module>", "loss = model(batch).loss")
    + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.64 GiB "
      "of which 1.10 GiB is free.\n")


def primary(tmp_path, text: str):
    log = tmp_path / "paste.log"
    log.write_text(text)
    found = diagnose_file(log, RuleSet.load(user=False), remediate=False)
    assert found, "no incident"
    return max(found, key=lambda d: d.confidence)


@pytest.mark.parametrize("text,category,rule", [
    (CUT_ABOVE_BATCH_RESULT, "runtime.crash", "class.runtime.serving_path"),
    (BARE_ASSERT_PREPARE_FOR_DECODE, "runtime.crash", "class.runtime.serving_path"),
    (OVERLAP_THREAD, "runtime.crash", "class.runtime.serving_path"),
    (DP_DISPATCH, "runtime.crash", "class.runtime.serving_path"),
    (TOKENIZER_OUTPUT_LOOP, "runtime.crash", "class.runtime.serving_path"),
    # the launch shown, no ready line, no batch line: a start-up phase (the warm-up), other
    (LAUNCH + CUT_ABOVE_BATCH_RESULT, "other", "class.runtime.serving_path"),
    (USER_SCRIPT, "other", "class.other.outside_sglang"),
    (MODULE_DRIVER, "other", "class.other.outside_sglang"),
])
def test_where_it_was_raised_names_it(tmp_path, text, category, rule):
    d = primary(tmp_path, text)
    assert (d.category, d.rule) == (category, rule)


@pytest.mark.parametrize("text,not_rule", [
    # a library's thread inside SGLang's process, a paste cut above its frames, an Engine's
    # call with SGLang's frames: not a calling program's own failure
    (LIBRARY_THREAD, "class.other.outside_sglang"),
    (CUT_TOP_TORCH, "class.other.outside_sglang"),
    (ENGINE_IN_SCRIPT, "class.other.outside_sglang"),
    # a family that names itself outranks where it was raised
    (SCRIPT_OOM, "class.other.outside_sglang"),
    # the words of another category are that category's
    (CUT_ABOVE_BATCH_RESULT.replace("AttributeError: 'Req' object has no attribute 'grammar'",
                                    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"),
     "class.runtime.serving_path"),
    # a message that names a setting is a refusal, not a crash
    (CUT_ABOVE_BATCH_RESULT.replace("AttributeError: 'Req' object has no attribute 'grammar'",
                                    "ValueError: --page-size must be 1 with this grammar backend"),
     "class.runtime.serving_path"),
])
def test_not_read_as_this_class(tmp_path, text, not_rule):
    assert primary(tmp_path, text).rule != not_rule


def test_engine_in_script_is_sglangs_crash(tmp_path):
    d = primary(tmp_path, ENGINE_IN_SCRIPT)
    assert (d.category, d.rule) == ("runtime.crash", "class.runtime.serving_path")


def test_outside_sglang_is_a_yes_or_no(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.yaml").write_text("rules:\n  - id: class.t.x\n    category: other\n    phase: auto\n    title: t\n"
                              "    confidence: 0.5\n    match:\n      kind: traceback\n      outside_sglang: maybe\n"
                              "    explanation: e\n")
    with pytest.raises(RuleLoadError) as exc:
        RuleSet.load([d], builtin=False, user=False, strict=True)
    assert any("outside_sglang must be true or false" in p for p in exc.value.problems)
