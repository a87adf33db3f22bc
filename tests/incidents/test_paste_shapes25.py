"""How real pastes wrap SGLang's failures, and healthy texts with scary lines (session 25).

Failures that must form an incident and name what the text says:

- Ray's ``RayTaskError(X): ray::Worker.method() (pid=..., ip=...)`` (verl / slime / AReaL rollout
  workers that run SGLang's Engine): Ray prints the remote task's traceback as the error's
  message, frames first and without a ``Traceback`` header (ray/exceptions.py RayTaskError).
  Those frames and the remote exception are a chained part: the remote exception is what
  failed (tracebacks._remote_task_error).
- SGLang's launcher raising ``Initialization failed. Please see the error messages above.``
  through ``_launch_subprocesses`` (0.4.x-0.5.23 entrypoints/engine.py; an offline
  ``sgl.Engine(...)`` or a wrapper's call): the launch never came up, so it is no crash while
  serving; the cause (the messages above) is not in the text: the honest fallback
  (startup_hints).
- A traceback pasted as a string literal (a JSON body's field, a Python repr): its newlines are
  the two characters backslash-n (tracebacks.split_escaped_traceback).
- ncclInternalError's string through pynccl's NCCL_CHECK: nccl, not SGLang's own "internal
  error" (rules/nccl.yaml nccl.internal_error).
- A container's log file as Docker's json-file driver writes it (``{"log": "...\\n", "stream": ...}``):
  each record's line (assemble._docker_json_log).
- glibc's abort line on a corrupted heap or stack ("free(): invalid pointer", "*** stack smashing
  detected ***"), when the paste ends before "Aborted (core dumped)" (signals glibc_abort).

Healthy texts that must stay silent:

- Ctrl-C on a server that came up: every process prints its KeyboardInterrupt traceback (SGLang
  raises none itself); what follows is the stop's teardown.  Before the ready line, or on top
  of another error, it stays an incident.
- A request's or an answer's text that quotes a traceback (SGLang's --log-requests
  ``Receive: obj=GenerateReqInput(text='...Traceback...\\n  File ...')``, a JSON answer's
  ``content``): the server is fine (tracebacks._ECHOED).
- A retry line a terminal folded inside a quoted value (``host='10.2`` / ``0.0.5', port=...``): the
  rest starts like a date but is that line's rest (assemble._cut_inside_a_value).
- unittest's ERROR report of an SGLang CI test's threshold, which drops unittest's own frames
  (assemble._TEST_RUNNER: sglang/test/test_utils.py), single- or double-spaced.
- ``python -m sglang.check_env``'s report ("vllm: Module Not Found"), Ray's start-up notes,
  uvicorn's Ctrl-C shutdown with asyncio's "Task was destroyed but it is pending!".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, incidents_of_lines
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline

S = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
READY = "[2025-06-01 10:00:00] The server is fired up and ready to roll!"
DECODE = ("[2025-06-01 10:05:00 TP0] Decode batch, #running-req: 1, #token: 300, token usage: 0.00, "
          "cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0")
OOM_FRAMES = [
    f'  File "{S}/managers/scheduler.py", line 2312, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
    f'  File "{S}/model_executor/model_runner.py", line 1271, in init_memory_pool',
    "    raise RuntimeError(",
]
NOT_ENOUGH = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
RAY_HEAD = ("ray.exceptions.RayTaskError({t}): ray::WorkerDict.actor_rollout_{m}() (pid=4012, ip=10.0.0.3, "
            "actor_id=8c1d, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f>)")
VERL_FRAMES = [
    '  File "/workspace/verl/verl/single_controller/ray/base.py", line 663, in func',
    "    return getattr(self.worker_dict[key], name)(*args, **kwargs)",
]
INIT_FAILED = [
    f'  File "{S}/entrypoints/engine.py", line 126, in __init__',
    "    tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(",
    f'  File "{S}/entrypoints/engine.py", line 801, in _launch_subprocesses',
    "    raise RuntimeError(",
    "RuntimeError: Initialization failed. Please see the error messages above.",
]


def diagnoses(text: str):
    pipe = StreamPipeline(RuleSet.load())
    return [e["_diagnosis"] for e in pipe.feed(text.encode()) + pipe.finish() if e["event"] == "incident"]


# -- Ray's RayTaskError ---------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["", "(TaskRunner pid=3001) "])
def test_ray_task_error_names_the_remote_exception(prefix):
    lines = [RAY_HEAD.format(t="OutOfMemoryError", m="generate_sequences"), *VERL_FRAMES,
             f'  File "{S}/layers/logits_processor.py", line 320, in forward',
             "    logits = torch.matmul(hidden_states, lm_head.weight.T)",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.28 GiB. GPU 0 has a total capacity "
             "of 79.10 GiB of which 3.21 GiB is free."]
    (d,) = diagnoses("\n".join(prefix + line for line in lines))
    assert d.incident.exception.type == "torch.OutOfMemoryError"
    assert d.category == "memory.cuda_oom"
    assert [f.function for f in d.incident.frames][-1] == "forward"  # the remote frames are kept


def test_ray_task_error_of_an_engine_that_never_came_up_is_no_crash_while_serving():
    text = "\n".join([
        "Error executing job with overrides: ['actor_rollout_ref.rollout.name=sglang']",
        "Traceback (most recent call last):",
        '  File "/workspace/verl/verl/trainer/main_ppo.py", line 64, in main',
        "    run_ppo(config)",
        '  File "/usr/local/lib/python3.10/dist-packages/ray/_private/worker.py", line 919, in get_objects',
        "    raise value.as_instanceof_cause()",
        RAY_HEAD.format(t="RuntimeError", m="init_model"), *VERL_FRAMES, *INIT_FAILED, "",
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."])
    (d,) = diagnoses(text)
    assert d.incident.exception.message.startswith("Initialization failed.")
    assert d.incident.after_ready is False and d.incident.after_ready_known
    assert d.category != "runtime.crash" and d.fallback is not None  # the cause is above the text


def test_a_ray_error_message_that_is_not_a_task_still_ends_at_its_frames():
    # an ordinary exception followed by a frame line is two tracebacks' pieces, not one chain
    text = "\n".join(["Traceback (most recent call last):", *OOM_FRAMES, NOT_ENOUGH, *OOM_FRAMES[:2]])
    (d,) = diagnoses(text)
    assert d.incident.exception.message.startswith("Not enough memory")
    assert len(d.incident.chain) == 1


# -- the engine's launcher ------------------------------------------------------------

def test_an_offline_engine_that_did_not_come_up_is_before_ready(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, [
        "Traceback (most recent call last):",
        '  File "/home/u/offline.py", line 6, in <module>',
        '    llm = sgl.Engine(model_path="/models/Qwen2.5-7B-Instruct", mem_fraction_static=0.95)',
        *INIT_FAILED])
    assert inc.after_ready is False and inc.after_ready_known


# -- string literals ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    '{"detail": "Traceback (most recent call last):\\n  File \\"' + S + '/managers/scheduler.py\\", line 2312, '
    'in run_scheduler_process\\n    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)\\n' + NOT_ENOUGH + '\\n"}',
    "'[2025-06-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\\n  File \"" + S
    + "/managers/scheduler.py\", line 2312, in run_scheduler_process\\n    scheduler = Scheduler(server_args)\\n"
    + NOT_ENOUGH + "\\n'",
])
def test_a_traceback_in_a_string_literal_is_read_line_by_line(text):
    (d,) = diagnoses(text)
    assert d.category == "memory.kv_pool"
    assert d.incident.exception.message == "Not enough memory. Please try to increase --mem-fraction-static."
    assert [f.function for f in d.incident.frames] == ["run_scheduler_process"]


# -- NCCL's internal error ------------------------------------------------------------

def test_ncclinternalerror_through_pynccl_is_nccl():
    text = "\n".join([
        "[2025-10-02 09:09:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{S}/distributed/device_communicators/pynccl.py", line 110, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{S}/distributed/device_communicators/pynccl_wrapper.py", line 350, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers"])
    (d,) = diagnoses(text)
    assert (d.rule, d.category) == ("nccl.internal_error", "nccl")


# -- Ctrl-C -----------------------------------------------------------------------------

SCHED_INTERRUPT = [
    "Process Process-1:",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/multiprocessing/process.py", line 314, in _bootstrap',
    "    self.run()",
    f'  File "{S}/managers/scheduler.py", line 2320, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    "KeyboardInterrupt",
]
MAIN_INTERRUPT = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/launch_server.py", line 14, in <module>',
    "    launch_server(server_args)",
    "KeyboardInterrupt",
]


def test_ctrl_c_on_a_serving_server_and_its_teardown_are_no_incident():
    assert diagnoses("\n".join([READY, DECODE, "^C" + SCHED_INTERRUPT[0], *SCHED_INTERRUPT[1:],
                                *MAIN_INTERRUPT, "Killed"])) == []


def test_ctrl_c_before_the_ready_line_stays_an_incident():
    # an interrupted start-up may be a hang: where it was is the evidence
    text = "\n".join(["[2025-06-01 10:00:00 TP0] Init torch distributed begin.", "^CTraceback (most recent call last):",
                      f'  File "{S}/distributed/parallel_state.py", line 1100, in initialize_model_parallel',
                      "    _TP = init_model_parallel_group(", "KeyboardInterrupt"])
    assert len(diagnoses(text)) == 1


def test_an_interrupt_on_top_of_an_error_is_still_that_error():
    text = "\n".join([READY, "Traceback (most recent call last):",
                      f'  File "{S}/managers/scheduler.py", line 1000, in event_loop_overlap',
                      "    self.process_batch_result(tmp_batch, tmp_result)",
                      "RuntimeError: CUDA error: an illegal memory access was encountered", "",
                      "During handling of the above exception, another exception occurred:", "",
                      *MAIN_INTERRUPT])
    (d,) = diagnoses(text)
    assert d.category == "runtime.crash"


# -- quoted tracebacks, tool reports, other programs' notes -----------------------------

@pytest.mark.parametrize("text", [
    # --log-requests echoing a prompt that quotes a traceback, escaped and joined
    "\n".join([READY, "[2025-06-01 10:05:00] Receive: obj=GenerateReqInput(text='Fix this error:\\nTraceback (most "
               "recent call last):\\n  File \"a.py\", line 1, in <module>\\nValueError: bad value\\n', rid='9f1c')", DECODE]),
    "\n".join([READY, "[2025-06-01 10:05:00] Receive: obj=GenerateReqInput(text='Fix: Traceback (most recent call "
               "last): File \"a.py\", line 1, in <module> ValueError: bad value', rid='9f1c')", DECODE]),
    # an OpenAI answer whose content quotes one
    '{"id":"cmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"The error is:\\nTraceback (most '
    'recent call last):\\n  File \\"a.py\\", line 1, in <module>\\nValueError: bad value"}}]}',
    # python -m sglang.check_env
    "\n".join(["Python: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]", "CUDA available: True",
               "GPU 0,1: NVIDIA A100-SXM4-80GB", "NVCC: Cuda compilation tools, release 12.4, V12.4.131",
               "sglang: 0.4.3", "flashinfer: 0.2.1.post1", "vllm: Module Not Found", "xformers: Module Not Found",
               "tiktoken: Module Not Found", "NVIDIA Topology:", "ulimit soft: 1048576"]),
    # Ray's start-up notes around a rollout worker's SGLang lines
    "\n".join(["2025-06-01 10:00:00,123\tINFO worker.py:1841 -- Started a local Ray instance. View the dashboard at 127.0.0.1:8265",
               "(autoscaler +1m) Tip: use `ray status` to view detailed cluster status. To disable these messages, set RAY_SCHEDULER_EVENTS=0.",
               "(raylet) WARNING: 8 PYTHON worker processes have been started on node: 5c8f with address: 10.0.0.3. This "
               "could be a result of using a large number of actors, or due to tasks blocked in ray.get() calls.",
               "(WorkerDict pid=4012) [2025-06-01 10:00:40 TP0] Load weight begin. avail mem=78.00 GB"]),
    # uvicorn's Ctrl-C shutdown and asyncio's note on the task it left pending
    "\n".join([READY, DECODE, "^CINFO:     Shutting down", "INFO:     Waiting for application shutdown.",
               "INFO:     Application shutdown complete.", "INFO:     Finished server process [123]",
               "Task was destroyed but it is pending!",
               f"task: <Task pending name='Task-4' coro=<TokenizerManager.handle_loop() running at {S}/managers/"
               "tokenizer_manager.py:1305> wait_for=<Future pending cb=[Task.task_wakeup()]>>"]),
])
def test_healthy_texts_with_scary_words_stay_silent(text):
    assert diagnoses(text) == []


# -- glibc's abort on a corrupted heap or stack ---------------------------------------------

@pytest.mark.parametrize("line", [
    "double free or corruption (!prev)",
    "free(): invalid pointer",
    "free(): double free detected in tcache 2",
    "munmap_chunk(): invalid pointer",
    "malloc(): unaligned tcache chunk detected",
    "corrupted size vs. prev_size",
    "*** stack smashing detected ***: terminated",
    "*** Error in `python': double free or corruption (out): 0x00007f3c2c000b20 ***",
])
def test_glibc_s_abort_line_is_a_death(tmp_path, line):
    # malloc_printerr / __stack_chk_fail print this one line and raise SIGABRT: the paste may
    # end before the shell's "Aborted (core dumped)"
    (inc,) = incidents_of_lines(tmp_path, ["[2025-06-01 10:00:40 TP0] Load weight begin. avail mem=78.00 GB", line])
    assert [s.text for s in inc.signals] == [line]


@pytest.mark.parametrize("line", [
    "[2025-06-01 10:00:41 TP0] Using a pinned pool to avoid double free or corruption (!prev) in the allocator",
    "The malloc(): function is fast enough here",
])
def test_glibc_s_words_in_other_text_are_not_its_abort(tmp_path, line):
    assert incidents_of_lines(tmp_path, ["[2025-06-01 10:00:40 TP0] Load weight begin. avail mem=78.00 GB", line]) == []


# -- a terminal's fold inside a quoted value ------------------------------------------------

def _folded(path: Path, width: int) -> str:
    out = []
    for line in path.read_text().splitlines():
        line = "sglang-1  | " + line  # docker compose's prefix, then the terminal's fold
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out) + "\n"


def _explain(tmp_path: Path, text: str) -> tuple[int, list[str]]:
    p = tmp_path / "folded.log"
    p.write_text(text)
    r = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(p)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, [e["rule"] for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "incident"]


@pytest.mark.parametrize("width", [90, 100, 120])
def test_a_retry_line_folded_inside_a_quoted_value_stays_one_line(tmp_path, width):
    # "Prefill register attempt 1/5 failed: HTTPConnection(host='10.2" / "0.0.5', port=8998): Failed to
    # establish a new connection: [Errno 113] No route to host": the rest starts like a date, but the
    # piece above ended inside host='...': it is that retry line's rest, not a failure of its own
    assert _explain(tmp_path, _folded(FIXTURES / "healthy" / "pd_prefill_register_retry_0523.log", width)) == (0, [])


@pytest.mark.parametrize("width", [90, 100, 120])
def test_the_failed_registration_folded_the_same_way_is_still_named(tmp_path, width):
    code, rules = _explain(tmp_path, _folded(FIXTURES / "nccl" / "pd_bootstrap_register_failed_0523.log", width))
    assert (code, rules) == (1, ["nccl.pd_bootstrap_register_failed"])


# -- unittest's ERROR report of an SGLang CI test --------------------------------------------

T = "/usr/local/python3.11.13/lib/python3.11/site-packages/sglang"
UNITTEST_REPORT = [
    "ERROR: test_qwen3_235b (__main__.TestQwen3_235B.test_qwen3_235b)",
    "----------------------------------------------------------------------",
    "Traceback (most recent call last):",
    f'  File "{T}/srt/utils/common.py", line 2527, in retry',
    "    return fn()",
    f'  File "{T}/test/test_utils.py", line 1704, in <lambda>',
    "    lambda: super(CustomTestCase, self)._callTestMethod(method),",
    "AssertionError: 10.63 not less than or equal to 10.2",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    f'  File "{T}/test/test_utils.py", line 1703, in _callTestMethod',
    "    retry(",
    f'  File "{T}/srt/utils/common.py", line 2535, in retry',
    '    raise Exception(f"retry() exceed maximum number of retries.")',
    "Exception: retry() exceed maximum number of retries.",
]


@pytest.mark.parametrize("spacing", [1, 2])
def test_unittest_s_error_report_of_a_threshold_is_no_server_failure(tmp_path, spacing):
    # unittest drops its own case.py frames from the report (_is_relevant_tb_level): the deepest
    # frame is CustomTestCase's call into the test; a paste may be double-spaced
    lines = [x for line in UNITTEST_REPORT for x in ([line] + [""] * (spacing - 1))]
    assert incidents_of_lines(tmp_path, [READY, DECODE, *lines]) == []


def test_an_assertion_inside_sglang_under_the_test_harness_is_still_an_incident(tmp_path):
    lines = UNITTEST_REPORT[:5] + [f'  File "{T}/srt/managers/scheduler.py", line 900, in event_loop_normal',
                                   "    assert batch.is_empty()", "AssertionError"]
    assert len(incidents_of_lines(tmp_path, [READY, DECODE, *lines])) == 1


# -- Docker's json-file log records -----------------------------------------------------------

def _docker(lines: list[str]) -> list[str]:
    return [json.dumps({"log": line + "\n", "stream": "stderr", "time": "2025-06-01T10:00:00.000000000Z"})
            for line in lines]


def test_a_container_s_json_file_log_is_read_as_its_lines(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, _docker(["[2025-06-01 10:00:00 TP0] Scheduler hit an exception: "
                                                   "Traceback (most recent call last):", *OOM_FRAMES, NOT_ENOUGH]))
    assert inc.exception.message == "Not enough memory. Please try to increase --mem-fraction-static."
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "init_memory_pool"]


def test_a_healthy_container_json_log_stays_silent(tmp_path):
    assert incidents_of_lines(tmp_path, _docker([READY, DECODE, "[2025-06-01 10:05:01] INFO:     127.0.0.1:5 - "
                                                 '"POST /generate HTTP/1.1" 200 OK'])) == []


def test_a_container_json_record_s_colour_codes_are_taken_off(tmp_path):
    # SGLang's coloured output in a json-file record: the ESC is written as the JSON escape
    # \u001b, so the reader saw no ESC byte to strip; the decoded line is read without it
    record = '{"log":"\\u001b[31mRuntimeError: CUDA error: out of memory\\u001b[0m\\n","stream":"stderr"}'
    assert "\x1b" not in record  # (the escape is six characters of text in the file)
    (inc,) = incidents_of_lines(tmp_path, [record])
    assert inc.exception.type == "RuntimeError"
    assert inc.exception.message == "CUDA error: out of memory"
    (ev,) = [e for e in explain_incidents_of(tmp_path, [record])]
    assert ev["category"] == "memory.cuda_oom"


def explain_incidents_of(tmp_path, lines):
    from conftest import explain_incidents

    p = tmp_path / "container-json.log"
    p.write_text("\n".join(lines) + "\n")
    return explain_incidents(p)
