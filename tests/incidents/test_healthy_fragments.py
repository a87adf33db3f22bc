"""Healthy texts cut the way pastes are cut raise no incident (issue #12: 0 false alarms),
while the same failures' evidence still does.

Found by bench/healthy_bait.py (robustness transforms on the tuned parts' healthy files, and
bait generated from SGLang 0.5.23's request-level raise sites):

- a request's error raised through ``TokenizerManager.generate_request`` (the per-request
  coroutine the HTTP handlers and the offline Engine await; 0.4.x to 0.5.23) is that request's,
  like one through ``OpenAIServingBase.handle_request``, even when the paste lost the exception
  line below the frames;
- the tokenizer manager's context-length rejection whose line lost the head of its type
  (``ueError: The input (N tokens) is longer than the model's context length``);
- a ``Traceback (most recent call last):`` header whose frames and exception the text lost is
  no evidence of a failure: no incident, the summary's fallback says where the cause would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_record_exception import BUSY, HEAD, _env, explain_file

ROOT = Path(__file__).resolve().parents[2]
SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"
ENGINE_REQUEST = (
    "Traceback (most recent call last):\n"
    '  File "/work/bench.py", line 184, in measure\n'
    "    _ = engine.generate(prompts[:1], sampling_params=sampling_params)\n"
    f'  File "{SITE}entrypoints/engine.py", line 347, in generate\n'
    "    ret = self.loop.run_until_complete(generator.__anext__())\n"
    '  File "uvloop/loop.pyx", line 1518, in uvloop.loop.Loop.run_until_complete\n'
    f'  File "{SITE}managers/tokenizer_manager.py", line 527, in generate_request\n'
    "    async for response in self._wait_one_response(obj, state, request):\n"
)


def _summary(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(path)],
                          capture_output=True, text=True, env=_env(), cwd=str(ROOT), timeout=120)
    return next(json.loads(ln) for ln in proc.stdout.splitlines()
                if ln.startswith("{") and json.loads(ln).get("event") == "summary")


@pytest.mark.parametrize("text", [
    ENGINE_REQUEST,  # the frames only: the paste was cut above the exception
    HEAD + BUSY + ENGINE_REQUEST
    + f'  File "{SITE}managers/tokenizer_manager.py", line 1919, in _handle_abort_finish_reason\n'
    + "    raise ValueError(finish_reason[\"message\"])\n"
    + "ValueError: Input length (40000 tokens) exceeds the maximum allowed length (32768 tokens).\n"
    + BUSY,
], ids=["cut_above_the_exception", "with_its_exception"])
def test_a_requests_error_through_generate_request_is_no_incident(tmp_path: Path, text: str):
    log = tmp_path / "engine.log"
    log.write_text(text)
    assert explain_file(log) == []


def test_the_scheduler_failing_while_serving_still_forms_one(tmp_path: Path):
    # counter-example: the same launch's scheduler traceback (no request frame) stays a failure
    log = tmp_path / "sched.log"
    log.write_text(HEAD + BUSY
                   + "[2026-05-09 10:05:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   + f'  File "{SITE}managers/scheduler.py", line 2563, in run_scheduler_process\n'
                   + "    scheduler.event_loop_overlap()\n"
                   + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                   + "capacity of 47.54 GiB of which 1.02 GiB is free.\n")
    incidents = explain_file(log)
    assert len(incidents) == 1 and incidents[0]["category"] == "memory.cuda_oom"


def test_the_context_length_rejection_with_its_types_head_cut(tmp_path: Path):
    log = tmp_path / "cut.log"
    log.write_text("ueError: The input (85050 tokens) is longer than the model's context length (32768 tokens).\n")
    assert explain_file(log) == []


def test_another_cut_value_error_still_forms_one(tmp_path: Path):
    # counter-example: the cut-head tolerance is for the request-level messages only
    log = tmp_path / "cut2.log"
    log.write_text("ueError: Model architectures ['GlmForCausalLM'] are not supported for now.\n")
    incidents = explain_file(log)
    assert len(incidents) == 1 and incidents[0]["category"] == "model.unsupported"


def test_a_bare_traceback_header_is_no_incident_but_the_fallback_says_so(tmp_path: Path):
    log = tmp_path / "header.log"
    log.write_text("[2025-07-16 14:47:06] INFO:     10.0.0.1:0 - \"POST /v1/chat/completions HTTP/1.1\" 500\n"
                   "5-07-16 14:47:06] Traceback (most recent call last):\n[2025-\n")
    assert explain_file(log) == []
    assert "fallback" in _summary(log)


@pytest.mark.parametrize("text, category", [
    ("Traceback (most recent call last):\n"
     "...\n"
     "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n", "nccl"),
    ("```\nTraceback (most recent call last):\n"  # fenced
     '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", '
     "line 300, in init_memory_pool\n    raise RuntimeError(\n"
     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n```\n", "memory.kv_pool"),
], ids=["header", "fenced"])
def test_a_traceback_with_its_exception_still_forms_one(tmp_path: Path, text: str, category: str):
    log = tmp_path / "with_exception.log"
    log.write_text(text)
    incidents = explain_file(log)
    assert len(incidents) == 1 and incidents[0]["category"] == category


# -- messages SGLang raises only for one request (request_messages.json) ----------------------

def test_the_request_message_catalog_is_the_generators():
    proc = subprocess.run([sys.executable, "scripts/gen_request_messages.py", "--check"],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_request_messages_match_their_sources_and_nothing_else():
    from sglang_doctor.incidents.request_errors import is_request_message

    # io_struct.GenerateReqInput._validate_inputs and tokenizer_manager._validate_one_request (0.5.23)
    assert is_request_message("ValueError", "Either text, input_ids or input_embeds should be provided.")
    assert is_request_message("ValueError", "The server is not configured to enable custom logit processor. "
                                            "Please set `--enable-custom-logit-processor` to enable this feature.")
    assert is_request_message("…lueError", "Either text, input_ids or input_embeds should be provided.")
    # the type must be the site's
    assert not is_request_message("RuntimeError", "Either text, input_ids or input_embeds should be provided.")
    # a start-up failure's words are not in the catalog
    assert not is_request_message("ValueError", "Model architectures ['X'] are not supported for now.")
    assert not is_request_message("RuntimeError", "CUDA out of memory. Tried to allocate 2.00 GiB")


def test_a_requests_validation_error_at_the_end_of_a_fragment_is_no_incident(tmp_path: Path):
    log = tmp_path / "bare.log"
    log.write_text(BUSY + "ValueError: The server is not configured to enable custom logit processor. Please set "
                   "`--enable-custom-logit-processor` to enable this feature.\n"
                   '[2026-05-09 10:05:01] INFO:     127.0.0.1:51754 - "POST /generate HTTP/1.1" 400 Bad Request\n')
    assert explain_file(log) == []


def test_a_value_error_sglang_raises_at_start_up_at_the_end_of_a_fragment_stays_one(tmp_path: Path):
    # counter-example: server_args' check of the same kind of words is the launch's
    log = tmp_path / "args.log"
    log.write_text("ValueError: The server is not configured to enable custom logit processor at start-up "
                   "because --foo-bar is set.\n")
    assert explain_file(log) != []


def test_a_death_header_cut_below_its_traceback_line_still_forms_one(tmp_path: Path):
    # counter-example: "X hit an exception: Traceback ..." says a process failed, frames or not
    log = tmp_path / "death.log"
    log.write_text("[2025-02-09 16:43:26 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
                   "[2025-02-09 16:43:26 TP0]   File \"/x/sglang/srt/managers/tp_worker_overlap_thread.py\", line 109, "
                   "in forward_thread_func\n")
    assert explain_file(log) != []


def test_a_threads_exception_header_cut_below_its_traceback_line_still_forms_one(tmp_path: Path):
    # counter-example: Python's "Exception in thread ..." says a thread died (dev/097's shape)
    log = tmp_path / "thread.log"
    log.write_text("Exception in thread Thread-3 (forward_thread_func):\nTraceback (most recent call last):\n"
                   '  File "/state/partition/x/conda/envs/sglang/lib\n')
    assert explain_file(log) != []


STOP_THEN_CUT_FRAMES = (
    "[2025-08-05 10:33:30] SIGTERM received. signum=None frame=None. Draining requests and shutting down...\n"
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '  File "/opt/venv/lib/python3.12/site-packages/typer/main.py", line 341, in __call__\n'
    "    raise e\n"
    '  File "/opt/venv/lib/python3.12/site-p\n')


def test_a_code_fence_below_cut_frames_is_not_their_exception_line(tmp_path: Path):
    # a paste in <details> / a code fence: "```" below frames cut short is the paste's end
    plain = tmp_path / "plain.log"
    plain.write_text(STOP_THEN_CUT_FRAMES)
    fenced = tmp_path / "fenced.log"
    fenced.write_text("<details>\n<summary>log</summary>\n\n```\n" + STOP_THEN_CUT_FRAMES + "```\n\n</details>\n")
    assert explain_file(plain) == []
    assert explain_file(fenced) == []
