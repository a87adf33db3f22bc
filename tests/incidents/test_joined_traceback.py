"""A traceback whose newlines a paste lost (one line: header, frames, source lines, exception)
is read as the traceback it was (tracebacks.split_joined_traceback): its frames and its
exception name the failure, where the one line used to be an incident with no exception
(``other``, no rule).  A request's joined traceback stays that request's, and a line that
merely holds ``File "`` or the header is not split."""

import pytest

from conftest import incidents_of_lines
from sglang_doctor.incidents.tracebacks import split_joined_traceback

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
SCHED = (f'File "{P}/managers/scheduler.py", line 2989, in run_scheduler_process '
         "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)")
LOADER = (f'File "{P}/model_loader/utils.py", line 98, in get_model_architecture '
          "architectures = resolve_transformers_arch(model_config, architectures)")


def test_the_lines_come_back_in_python_s_layout():
    joined = (f"[2026-04-24 09:34:00 TP0] Scheduler hit an exception: Traceback (most recent call last): {SCHED} "
              f"{LOADER} ValueError: Model architectures ['FooForCausalLM'] are not supported for now.")
    assert split_joined_traceback(joined) == [
        "[2026-04-24 09:34:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{P}/managers/scheduler.py", line 2989, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        f'  File "{P}/model_loader/utils.py", line 98, in get_model_architecture',
        "    architectures = resolve_transformers_arch(model_config, architectures)",
        "ValueError: Model architectures ['FooForCausalLM'] are not supported for now.",
    ]


def test_a_chained_traceback_keeps_its_parts():
    joined = (f"Traceback (most recent call last): {SCHED} KeyError: 'w13' "
              "The above exception was the direct cause of the following exception: "
              f"Traceback (most recent call last): {LOADER} RuntimeError: CUDA error: no kernel image is available "
              "for execution on the device")
    lines = split_joined_traceback(joined)
    assert lines[3] == "KeyError: 'w13'" and lines[5].startswith("The above exception")
    assert lines[-1] == "RuntimeError: CUDA error: no kernel image is available for execution on the device"


@pytest.mark.parametrize("line, etype, category, frames", [
    (f"[2026-04-24 09:34:00 TP0] Scheduler hit an exception: Traceback (most recent call last): {SCHED} {LOADER} "
     "ValueError: Model architectures ['FooForCausalLM'] are not supported for now.", "ValueError", "model.unsupported", 2),
    (f"Traceback (most recent call last):   {SCHED}   {LOADER} RuntimeError: CUDA error: no kernel image is available "
     "for execution on the device", "RuntimeError", "kernel.unsupported_hw", 2),
    (f"{SCHED} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
     "of 23.65 GiB of which 1.02 GiB is free.", "torch.OutOfMemoryError", "memory.cuda_oom", 1),
])
def test_a_joined_traceback_names_its_exception(tmp_path, pack, line, etype, category, frames):
    from sglang_doctor.pipeline import StreamPipeline

    (inc,) = incidents_of_lines(tmp_path, [line])
    assert inc.exception is not None and inc.exception.type == etype and len(inc.frames) == frames
    pipe = StreamPipeline(pack, remediate=False)
    (ev,) = [e for e in pipe.feed((line + "\n").encode()) + pipe.finish() if e["event"] == "incident"]
    assert ev["category"] == category


def test_a_request_s_joined_traceback_stays_the_request_s(tmp_path):
    line = ("[2026-04-24 09:40:00] Error in request: Traceback (most recent call last): "
            f'File "{P}/entrypoints/openai/serving_base.py", line 104, in handle_request '
            "adapted_request, processed_request = self._convert_to_internal_request(request, raw_request) "
            "ValueError: The input (3000 tokens) is longer than the model's context length (2048 tokens).")
    assert incidents_of_lines(tmp_path, [line]) == []


@pytest.mark.parametrize("line", [
    '[2026-04-24 09:34:00] Config file "File "/etc/x.yaml" not found, using defaults',
    'File "/x.py", line 3, in f',  # one frame, nothing joined to it
    'File "/x.py", line 3, in f g()',
    "Traceback (most recent call last):",
    "[2026-04-24 09:34:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    # faulthandler's frame (no comma before "in"): a function named like an exception type
    '  File "/usr/lib/python3/dist-packages/requests/models.py", line 1021 in raise_for_HTTPError',
    # a request's text quoting a joined traceback (--log-requests)
    "[2026-04-24 09:34:00] Receive: obj=GenerateReqInput(text='Fix: Traceback (most recent call last): "
    'File "a.py", line 1, in <module> ValueError: bad value\', rid=\'9f1c\')',
])
def test_lines_that_are_not_joined_tracebacks_are_not_split(line):
    assert split_joined_traceback(line) is None
