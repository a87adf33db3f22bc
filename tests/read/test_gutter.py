"""read/gutter.py: line numbers or a list marker a paste put before every line are judged on
the text's start and taken off each line before the assembler reads it (session 33)."""

from __future__ import annotations

import pytest

from sglang_doctor import pipeline
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.read import gutter

TRACEBACK = [
    "[2025-10-02 09:14:51 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2611, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank)",
    "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20000).",
]


def _data(lines):
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("form", ["{n:>3} | ", "{n}: ", "{n:>6}\t", "{n:>3}  ", "{n}| "])
def test_counting_line_numbers_are_a_gutter_and_the_lines_keep_their_indentation(form):
    numbered = [form.format(n=40 + i) + line for i, line in enumerate(TRACEBACK)]
    pattern = gutter.gutter(_data(numbered))
    assert pattern is not None
    assert [gutter.strip(pattern, line) for line in numbered] == TRACEBACK


@pytest.mark.parametrize("mark", ["- ", "* ", "• ", "$ "])
def test_one_marker_before_every_line_is_a_gutter(mark):
    marked = [mark + line for line in TRACEBACK]
    pattern = gutter.gutter(_data(marked))
    assert pattern is not None
    assert [gutter.strip(pattern, line) for line in marked] == TRACEBACK


def test_a_log_of_its_own_has_no_gutter():
    assert gutter.gutter(_data(TRACEBACK)) is None


def test_numbers_that_do_not_count_up_are_no_gutter():
    # srun --label's task number on every line, and gcc's source excerpt among other lines
    assert gutter.gutter(_data(["0: " + line for line in TRACEBACK])) is None
    gcc = ["/tmp/x.cpp:12:10: fatal error: cuda_runtime.h: No such file or directory",
           "   12 | #include <cuda_runtime.h>", "      |          ^~~~~~~~~~~~~~~~", "compilation terminated."]
    assert gutter.gutter(_data(gcc)) is None


def test_a_short_paste_needs_a_gutter_no_line_starts_with_by_itself():
    line = TRACEBACK[-1]
    assert gutter.gutter(_data(["- " + line])) is not None
    assert gutter.gutter(_data(["12: " + line])) is not None
    # a command after a prompt, a number and its text: the line's own
    assert gutter.gutter(_data(["$ python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B"])) is None
    assert gutter.gutter(_data(["2048  tokens in the prompt"])) is None


def _diagnoses(lines):
    """The diagnoses ``explain`` gives a finished text (whole_log: the gutter is judged)."""
    pipe = pipeline.StreamPipeline(RuleSet.load(), remediate=False, whole_log=True)
    events = pipe.feed(_data(lines)) + pipe.finish()
    return [ev["_diagnosis"] for ev in events if ev["event"] == "incident"]


@pytest.mark.parametrize("form", ["- {line}", "* {line}", "{n:>3}  {line}", "{n:>6}\t{line}"])
def test_a_traceback_behind_a_gutter_forms_its_incident(form):
    plain = [d.incident for d in _diagnoses(TRACEBACK)]
    pasted = [d.incident for d in _diagnoses([form.format(n=17 + i, line=line) for i, line in enumerate(TRACEBACK)])]
    assert len(plain) == len(pasted) == 1
    assert pasted[0].exception is not None and plain[0].exception is not None
    assert pasted[0].exception.type == plain[0].exception.type == "ValueError"
    assert pasted[0].exception.message == plain[0].exception.message
    assert len(pasted[0].frames) == len(plain[0].frames) == 1
