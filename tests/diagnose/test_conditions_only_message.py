"""A paste's first line is read as the end of a rule's message (RuleSet.reads_as_message) only by
a message pattern that spells the message's words: one made only of conditions on a whole
message (lookaheads) leaves, run backwards from a cut, any line's "not supported"."""

from __future__ import annotations

from conftest import incident_events

# a vLLM-side warning record right before a traceback cut at its end (a ROCm image's import chain)
WARNING_THEN_CUT = """WARNING 12-26 13:00:41 rocm.py:17] `fork` method is not supported by ROCm. VLLM_WORKER_MULTIPROC_METHOD is overridden to `spawn` instead.
Traceback (most recent call last):
  File "/opt/conda/lib/python3.9/runpy.py", line 197, in _run_module_as_main
    return _run_code(code, main_globals, None,
  File "/opt/conda/lib/python3.9/runpy.py", line 87, in _run_code
    exec(code, run_globals)
  File "/sgl-workspace/sglang/python/sglang/launch_server.py", line 6, in <module>
    from sglang.srt.server import launch_s"""


def test_a_warning_before_a_traceback_is_not_a_cut_message(pack):
    (ev,) = incident_events(pack, WARNING_THEN_CUT)
    assert ev["lines"][0] == 2  # the traceback starts at its header, the warning is not its message
    assert "WARNING" not in ev["title"]


def test_a_cut_message_of_a_worded_rule_is_still_read(pack):
    # the tail of a CUDA OOM message as a paste's first line, then the scheduler's sigquit
    text = ("of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.54 GiB of which 1.06 GiB is free.\n"
            "[2025-05-01 10:00:09] Received sigquit from a child process. It usually means the child failed.\n")
    evs = incident_events(pack, text)
    assert evs and evs[0]["category"] == "memory.cuda_oom"
