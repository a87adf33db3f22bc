"""Incidents from logs as people paste them: behind container/shipper prefixes, cut at the
top, elided in the middle, a single exception line, a request error that is not a failure."""

import pytest

from sglang_doctor.read.records import strip_outer
from conftest import streamed_incidents

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


incidents_of = streamed_incidents


@pytest.mark.parametrize("line, rest", [
    ("sglang-1  | [2025-11-01 16:50:36 TP0] Load weight begin. avail mem=7.00 GB",
     "[2025-11-01 16:50:36 TP0] Load weight begin. avail mem=7.00 GB"),
    ('sglang-kimi-k2  |   File "/x.py", line 3, in f', '  File "/x.py", line 3, in f'),
    ("2026-02-27T16:30:43.486750970Z Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("[2025-02-27T16:30:43.48675097Z] [rank3]:[E227 16:30:43] x", "[E227 16:30:43] x"),
    ('2025-10-09T04:13:06.6374161Z [rank0]:   File "/x.py", line 650, in run_once', '  File "/x.py", line 650, in run_once'),
    ("[2025-12-18T16:24:02+08:00] pod-3da56-cfcd2 >> (SGLangEngine pid=3111) [2025-12-18 08:24:01 TP7] x",
     "[2025-12-18 08:24:01 TP7] x"),
    ("May 09 10:00:01 gpu1 python3[1234]: [2026-05-09 10:00:01 TP0] Load weight begin",
     "[2026-05-09 10:00:01 TP0] Load weight begin"),
    # journald without the host name: the identifier and its pid (sgl-project/sglang#4534)
    ('Mar 18 11:23:46 sgl-router-janus-pro-7b[931930]:   File "/x.py", line 3, in f', '  File "/x.py", line 3, in f'),
    ("Mar 18 11:23:41 systemd[1]: Started SGLang Router Serve.", "Started SGLang Router Serve."),
    ("Mar 18 11:23:46 sgl-router-janus-pro-7b[931930]:", ""),
    ("(SchedulerActor pid=123) torch.OutOfMemoryError: CUDA out of memory.", "torch.OutOfMemoryError: CUDA out of memory."),
    ("[36m(pid=12)[0m   File \"/x.py\", line 3, in f", '  File "/x.py", line 3, in f'),
    ("Thu Jan 23 11:55:50 2025[1,1]<stderr>:    scheduler.event_loop_overlap()", "    scheduler.event_loop_overlap()"),
    ("ERROR 2025-04-04T06:24:51.493646621Z param = params_dict[name]", "param = params_dict[name]"),
    # CRI container log files (what node log shippers read): time, stream, F(ull)/P(artial) tag
    ('2025-07-25T07:53:08.217488644+08:00 stdout F   File "/x.py", line 3, in f', '  File "/x.py", line 3, in f'),
    ("2025-07-25T07:53:08Z stderr P [2025-07-25 07:53:08 TP2] Scheduler hit an exception: x",
     "[2025-07-25 07:53:08 TP2] Scheduler hit an exception: x"),
    # Kibana / OpenSearch Discover's date column (their default dateFormat), padded
    ("May 16, 2026 @ 20:46:57.892    [W516 12:46:57.499 ProcessGroupNCCL.cpp:1826] x",
     "[W516 12:46:57.499 ProcessGroupNCCL.cpp:1826] x"),
    # srun --label: the task number before every line of that task's output
    ("0: [2025-03-05 03:55:55 TP0] Scheduler hit an exception: Traceback (most recent call last):",
     "[2025-03-05 03:55:55 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
    ('12:   File "/x.py", line 3, in f', '  File "/x.py", line 3, in f'),
    ("0: torch.distributed.DistBackendError: x", "torch.distributed.DistBackendError: x"),
    ("0: [rank3]:[W305 03:55:35.242042106 socket.cpp:462] [c10d]", "[W305 03:55:35.242042106 socket.cpp:462] [c10d]"),
])
def test_outer_prefixes_come_off(line, rest):
    assert strip_outer(line) == rest


@pytest.mark.parametrize("line", [
    "[2026-05-09 09:16:24 TP0] Load weight begin", "  | ValueError: x", "ValueError: a | b", "Killed",
    "stdout F is not a prefix without its time", "May 16, 2026 was a Saturday", "Mar 18 11:23:46 failed: x",
    "I0227 11:31:26.136366 1021616 transfer_engine_impl.cpp:172] listening", "(most recent call first):",
    "3: 4.5 GB", "10: x = 1",
])
def test_lines_without_outer_prefix_stay(line):
    assert strip_outer(line) == line


def test_dump_and_traceback_behind_compose_prefix():
    log = "".join(f"sglang-1  | {line}\n" for line in [
        "[2026-05-09 09:16:24] server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.88)",
        "[2026-05-09 09:17:36 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{P}/managers/scheduler.py", line 2, in run_scheduler_process',
        "    raise RuntimeError('x')",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.88",
        "[2026-05-09 09:17:36] Received sigquit from a child process. It usually means the child failed.",
    ])
    (inc,), pipe = incidents_of(log)
    assert pipe.launches[0].server_args["tp_size"] == 2
    assert inc.exception.type == "RuntimeError" and inc.ranks == ["TP0"]
    assert [f.function for f in inc.frames] == ["run_scheduler_process"]
    assert "sigquit_launch" in inc.signal_names


def test_traceback_behind_srun_task_labels_keeps_its_frames_and_exception():
    log = "".join(f"0: {line}\n" for line in [
        "[2025-03-05 03:55:55 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{P}/model_executor/model_runner.py", line 463, in init_weights_update_group',
        "    dist.barrier(group=self._model_update_group, device_ids=[self.gpu_id])",
        "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0]"
        " via c10d key-value store by key '0', but store->get('0') got error: failed to format addr, unknown family=0",
    ])
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "torch.distributed.DistBackendError" and inc.ranks == ["TP0"]
    assert [f.function for f in inc.frames] == ["init_weights_update_group"]


def test_bare_dotted_exception_line_is_an_incident():
    log = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, "
           "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n"
           "[2026-05-09 09:17:36] Received sigquit from a child process. It usually means the child failed.\n")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "triton.runtime.errors.OutOfResources"
    assert inc.exception.message.startswith("out of resource: shared memory, Required: 147456")
    assert inc.truncated_top and not inc.truncated
    assert inc.signal_names == ["sigquit_launch"]


def test_wrapper_exception_type_keeps_the_inner_name():
    (inc,), _ = incidents_of("ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=1, ip=10.0.0.1)\n")
    assert inc.exception.type == "ray.exceptions.RayTaskError(OutOfMemoryError)"


@pytest.mark.parametrize("gap", ["......", "...", "[...]", "  ...  "])
def test_elided_stretch_inside_a_traceback_never_becomes_the_title(gap):
    log = (f"Traceback (most recent call last):\n{gap}\n"
           "ValueError: Model architectures ['GlmForCausalLM'] are not supported for now.\n")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "ValueError"
    assert "not supported for now" in inc.exception.message


def test_frames_after_an_elision_belong_to_the_same_traceback():
    log = (f'[2026-05-09 09:17:36 TP0] Scheduler hit an exception: Traceback (most recent call last):\n'
           f'  File "{P}/managers/scheduler.py", line 2, in run_scheduler_process\n    x()\n[...]\n'
           f'  File "{P}/model_executor/cuda_graph_runner.py", line 9, in capture\n    y()\n'
           "RuntimeError: boom\n")
    (inc,), _ = incidents_of(log)
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "capture"]
    assert inc.exception.message == "boom"


def test_header_cut_mid_line_is_a_truncated_incident():
    (inc,), _ = incidents_of("[2025-03-29 18:56:25 TP0] Scheduler hit an exception: Traceb")
    assert inc.kind == "traceback" and inc.truncated and inc.exception is None


def test_one_line_paste_without_newline():
    (inc,), _ = incidents_of("AssertionError: cutlass_fp8 MoE requires CUDA 12.0+ with SM90 or CUDA 12.4+ with SM89")
    assert inc.exception.type == "AssertionError"


def test_request_error_traceback_is_not_an_incident():
    log = ('[2025-07-15 23:47:06] INFO:     1.2.3.4:0 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
           "[2025-07-15 23:47:06] Error in request: \n"
           "[2025-07-15 23:47:06] Traceback (most recent call last):\n"
           f'  File "{P}/entrypoints/openai/serving_chat.py", line 9, in handle\n    x()\n'
           "ValueError: bad tool call\n")
    incs, _ = incidents_of(log)
    assert incs == []


ASGI_HEAD = ('[2025-06-11 06:19:30] INFO:     10.0.0.1:40106 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
             "[2025-06-11 06:19:30] ERROR:    Exception in ASGI application\n"
             "Traceback (most recent call last):\n"
             '  File "/usr/lib/python3/site-packages/uvicorn/protocols/http/h11_impl.py", line 403, in run_asgi\n'
             "    result = await app(  # type: ignore[func-returns-value]\n")


@pytest.mark.parametrize("ending", [
    "",  # the paste was cut inside the frames
    f'  File "{P}/entrypoints/http_server.py", line 9, in openai_v1_chat_completions\n    x()\n'
    "KeyError: 'tool_calls'\n",
])
def test_uvicorn_asgi_exception_is_one_requests_not_an_incident(ending):
    # uvicorn answers the request with a 500 and goes on serving
    incs, _ = incidents_of(ASGI_HEAD + ending)
    assert incs == []


def test_a_crash_after_an_asgi_exception_is_still_an_incident():
    log = (ASGI_HEAD + "KeyError: 'tool_calls'\n"
           "[2025-06-11 06:19:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           f'  File "{P}/managers/scheduler.py", line 9, in event_loop_normal\n    x()\n'
           "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "RuntimeError"


def test_input_longer_than_context_is_not_an_incident():
    incs, _ = incidents_of("ValueError: The input (85050 tokens) is longer than the model's context length (32768 tokens).\n")
    assert incs == []


@pytest.mark.parametrize("line, name", [
    (" Caught signal 11 (Segmentation fault: address not mapped to object at address 0x3)", "segfault"),
    ("[rank3]:[E227 16:30:43.526290891 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] Exception (either an "
     "error or timeout) detected by watchdog at work: 32, last enqueued NCCL work: 32", "nccl_watchdog"),
    # NVSHMEM's bootstrap reports negative statuses too (sgl-project/sglang#5376, corpus/field28/005)
    ("/src/nvshmem_src/src/host/topo/topo.cpp:526: non-zero status: -3 allgather of ipc handles failed", "transfer_error"),
    ("/src/nvshmem_src/src/host/init/init.cu:1049: non-zero status: 7 nvshmem register static heaps failed", "transfer_error"),
])
def test_native_failure_signals(line, name):
    (inc,), _ = incidents_of(line + "\n")
    assert inc.kind == "signal" and inc.signal_names == [name]


def test_blank_line_inside_an_exception_message_stays_one_incident():
    log = (f'[2026-05-09 10:02:11] Traceback (most recent call last):\n'
           f'  File "{P}/utils/hf_transformers_utils.py", line 320, in get_config\n    raise e\n'
           "ValueError: The checkpoint you are trying to load has model type `new_moe` but Transformers does not "
           "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
           "version of Transformers is out of date.\n\n"
           "You can update Transformers with the command `pip install --upgrade transformers`. If this does not "
           "work, and the checkpoint is very new, then there may not be a release version that supports this model "
           "yet. In this case, you can get the most up-to-date code by installing Transformers from source with the "
           "command `pip install git+https://github.com/huggingface/transformers.git`\n")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "ValueError" and "model type `new_moe`" in inc.exception.message


def test_one_line_paste_that_lost_its_newlines_behind_ray_prefixes():
    log = ("Capturing batches (bs=64 avail_mem=11.08 GB): 0%| | 0/11 [00:00<?, ?it/s] (Worker pid=7) "
           "[2025-09-18 03:27:45 TP0] Scheduler hit an exception: Traceback (most recent call last): (Worker pid=7) "
           f'File "{P}/model_executor/cuda_graph_runner.py", line 292, in capture (Worker pid=7) x() (Worker pid=7) '
           "RuntimeError: ptxas fatal : Value 'sm_120a' is not defined for option 'gpu-name'\n")
    (inc,), _ = incidents_of(log)
    assert [f.function for f in inc.frames] == ["capture"]
    assert inc.exception.type == "RuntimeError" and "ptxas" in inc.exception.message


def test_an_exception_python_ignored_is_not_an_incident():
    log = ("Exception ignored in: <function Engine.__del__ at 0x7f00>\nTraceback (most recent call last):\n"
           f'  File "{P}/entrypoints/engine.py", line 300, in __del__\n    self.shutdown()\n'
           "TypeError: 'NoneType' object is not callable\n")
    incs, _ = incidents_of(log)
    assert incs == []


def test_an_exception_line_whose_message_starts_on_the_next_line():
    # multiprocessing's bootstrapping error prints "RuntimeError: " and the text below it
    from sglang_doctor.incidents.tracebacks import loose_exception
    exc = loose_exception("RuntimeError:")
    assert (exc.type, exc.message) == ("RuntimeError", "")
    assert loose_exception("RuntimeError: boom").message == "boom"
    assert loose_exception("not an exception line").type == ""


def test_a_bare_exception_line_with_a_signal_word_keeps_its_exception():
    # "DistBackendError: NCCL error in: ..." is an exception line first: the signal joins as evidence
    from sglang_doctor.incidents.assemble import Assembler
    from sglang_doctor.model import Line
    text = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")
    asm = Assembler()
    events = asm.feed(Line(1, text, text.encode())) + asm.flush()
    (inc,) = [e.incident for e in events if e.kind == "incident"]
    assert inc.kind == "traceback" and inc.exception.type == "torch.distributed.DistBackendError"
    assert "nccl_error" in inc.signal_names
    line = "Killed"
    asm2 = Assembler()
    events = asm2.feed(Line(1, line, line.encode())) + asm2.flush()
    (inc,) = [e.incident for e in events if e.kind == "incident"]
    assert inc.kind == "signal"  # a signal line that is no exception stays a signal


HANDLER_TRACEBACK = ("Traceback (most recent call last):\n"
                     f'  File "{P}/entrypoints/openai/serving_base.py", line 45, in handle_request\n'
                     "    return await self._handle_non_streaming_request(\n"
                     f'  File "{P}/entrypoints/openai/serving_chat.py", line 785, in _build_chat_response\n'
                     "    raise ValueError(\n"
                     "ValueError: Expected 2 output messages (reasoning and final), but got 3.\n")


@pytest.mark.parametrize("above", [
    "",  # the paste lost the "Error in request" line
    "[2025-08-08 16:52:59] Error in request: Expected 2 output messages\n--\n",  # a separator between
])
def test_a_traceback_through_the_openai_request_handler_is_one_requests(above):
    # OpenAIServingBase.handle_request catches every exception of its request, logs it and
    # answers that request with an error: the server goes on serving
    incs, _ = incidents_of(above + HANDLER_TRACEBACK)
    assert incs == []


def test_a_scheduler_crash_is_not_taken_for_a_request_handler_error():
    log = HANDLER_TRACEBACK.replace("entrypoints/openai/serving_base.py", "managers/scheduler.py")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "ValueError"


STARLETTE = "/usr/local/lib/python3.12/dist-packages/starlette"


def test_frames_of_starlettes_request_dispatch_alone_are_one_requests():
    # a paste cut inside the HTTP stack's frames of one request (ServerErrorMiddleware answers 500)
    log = (f'  File "{STARLETTE}/middleware/errors.py", line 164, in __call__\n    await self.app(scope, receive, _send)\n'
           f'  File "{STARLETTE}/routing.py", line 290, in handle\n    await self.app(scope, receive, send)\n'
           f'  File "{STARLETTE}/_exception_handler.py", line 42, in wrapped_app\n    await app(scope, rec\n')
    incs, _ = incidents_of(log)
    assert incs == []


def test_a_start_up_failure_in_the_asgi_lifespan_is_still_an_incident():
    log = ("Traceback (most recent call last):\n"
           f'  File "{STARLETTE}/routing.py", line 694, in lifespan\n    async with self.lifespan_context(app) as maybe_state:\n'
           f'  File "{P}/entrypoints/http_server.py", line 180, in lifespan\n    x()\n'
           "RuntimeError: Initialization failed. warmup error\n")
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "RuntimeError"


def test_traceback_behind_cri_log_file_prefix_keeps_its_frames():
    cri = "2025-07-25T07:53:08.217488644+08:00 stdout F "
    log = "".join(f"{cri}{line}\n" for line in [
        "[2025-07-25 07:53:08 TP2] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{P}/managers/scheduler.py", line 2769, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        f'  File "{P}/managers/scheduler.py", line 1756, in run_batch',
        "    ) = self.draft_worker.forward_batch_speculative_generation(batch)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ])
    (inc,), _ = incidents_of(log)
    assert inc.exception.type == "RuntimeError" and inc.ranks == ["TP2"]
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "run_batch"]
