"""Incidents from shapes SGLang's own logger does not print: components with a logging
format of their own (sglang-router's Python launcher and Rust gateway, the KV-transfer
engine, torch's caching allocator), another program's logger wrapped around SGLang's output,
a log viewer's header lines, frame lines wrapped before their function, a paste cut inside
the next line's time stamp; and what a fragment's failure says about start-up."""

import pytest

from sglang_doctor.incidents import startup_hints
from sglang_doctor.model import Frame
from conftest import streamed_incidents

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def incidents_of(text: str):
    return streamed_incidents(text)[0]


@pytest.mark.parametrize("line, name", [
    # disaggregation/decode.py's logger.error after a failed KV transfer (0.4.7 .. 0.5.2x)
    ("[2025-09-17 16:23:13 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='3ce8' "
     "decode_req.req.bootstrap_room=1655 with exception KVTransferError(bootstrap_room=1655): "
     "Failed due to an unknown reason from another rank", "kv_transfer_failed"),
    # the same text as a client saw it in the aborted request's JSON
    ('{"text":"","meta_info":{"finish_reason":{"type":"abort","message":"Decode transfer failed for request '
     "rank=0 decode_req.req.rid='c5' decode_req.req.bootstrap_room=21 with exception KVTransferError("
     'bootstrap_room=21): Failed to get kvcache from prefill instance, it might be dead","status_code":500}}}',
     "kv_transfer_failed"),
    # sglang_router/launch_router.py: logger.error(f"Error starting router: {e}")
    ("[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: argument 'worker_urls': "
     "'NoneType' object cannot be converted to 'Sequence'", "component_failed"),
    ("2025-11-04 10:05:37 ERROR sglang_router_rs::server: src/server.rs:88: Failed to start server: "
     "Address already in use (os error 98)", "component_failed"),
    ("thread 'main' panicked at src/main.rs:42:5:", "component_failed"),
    ("[rank1]:[W906 07:46:05.008634648 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on "
     "device 1 while trying to allocate 4334813184 bytes (free: 3779919872, total: 287431131136).", "cuda_alloc_oom"),
])
def test_a_components_failure_line_forms_an_incident(line, name):
    (inc,) = incidents_of(line + "\n")
    assert name in inc.signal_names


@pytest.mark.parametrize("line", [
    # a client's abort is not a transport failure
    "[2025-09-17 16:23:13 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='3c' "
    "decode_req.req.bootstrap_room=16 with exception KVTransferError(bootstrap_room=16): Aborted by AbortReq.",
    # the router retries while its workers start: errors it logs and goes on from
    "2025-10-07 23:31:33 ERROR sglang_router_rs::core::worker: src/core/worker.rs:517: Failed to connect gRPC "
    "client for worker grpc://localhost:20000: transport error",
    # "Failed to start" at INFO level is no error
    "2025-10-07 23:31:33  INFO sglang_router_rs::core: src/core/x.rs:5: Failed to start health probe, retrying",
])
def test_lines_a_healthy_component_logs_are_not_incidents(line):
    assert incidents_of(line + "\n") == []


def test_a_log_viewers_header_lines_do_not_cut_a_traceback():
    hdr = "2026-09-06 15:46:07  if-ddjbovhieqyjamak-child-z25ds-worker-0  \n"
    log = (hdr + "[2026-09-06 07:46:05 DP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           + hdr + f'  File "{P}/managers/scheduler.py", line 5156, in run_scheduler_process\n'
           + hdr + "    scheduler = Scheduler(\n"
           + hdr + f'  File "{P}/managers/scheduler.py", line 519, in __init__\n'
           + hdr + "    self.init_model_worker()\n"
           + hdr + "ValueError: boom\n")
    (inc,) = incidents_of(log)
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "__init__"]
    assert inc.exception.type == "ValueError"


@pytest.mark.parametrize("prefix", ["2025-04-03 12:06:29,955 - __main__ - INFO - ",
                                    "2024-06-02 00:26:10 | ERROR | stderr | "])
def test_another_programs_logger_around_a_traceback(prefix):
    lines = ["Traceback (most recent call last):",
             '  File "/venv/lib/python3.11/site-packages/huggingface_hub/utils/_http.py", line 96, in send',
             "    return super().send(request, *args, **kwargs)",
             '  File "/venv/lib/python3.11/site-packages/requests/adapters.py", line 682, in send',
             "    raise ConnectionError(e, request=request)",
             "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443)"]
    (inc,) = incidents_of("".join(prefix + t + "\n" for t in lines))
    assert [f.function for f in inc.frames] == ["send", "send"]
    assert inc.exception.type == "requests.exceptions.ConnectionError"


def test_a_paste_cut_inside_the_next_lines_time_stamp_is_no_exception_line():
    log = ("Traceback (most recent call last):\n"
           '  File "/venv/lib/python3.11/site-packages/requests/adapters.py", line 682, in send\n'
           "2025-0")
    (inc,) = incidents_of(log)
    assert inc.exception is None and inc.truncated


def test_a_frame_line_wrapped_before_its_function():
    log = ('File "sglang/srt/speculative/multi_layer_eagle_worker.py", line 236,\n'
           "  in MultiLayerEagleWorker\n"
           "    def mtp_model_runner(self, layer_id: int) -> ModelRunner:\n"
           "NameError: name 'ModelRunner' is not defined\n")
    (inc,) = incidents_of(log)
    assert inc.frames[-1].function == "MultiLayerEagleWorker"
    assert inc.frames[-1].source.startswith("def mtp_model_runner")
    # a class body runs at import time: the server was starting
    assert inc.after_ready_known and not inc.after_ready


@pytest.mark.parametrize("frames, says", [
    ([Frame(f"{P}/managers/scheduler.py", 5156, "run_scheduler_process", "scheduler = Scheduler(")],
     "builds a start-up object"),
    ([Frame(f"{P}/layers/x.py", 3, "<module>", "import foo")], "import time"),
    ([Frame(f"{P}/model_executor/model_runner.py", 9, "init_memory_pool", "self.x = y(")], "start-up step"),
    ([Frame(f"{P}/model_executor/runner/decode_cuda_graph_runner.py", 9, "_capture_one_stream", "self._capture_graph_size(bs=bs)")],
     "start-up step"),
    ([Frame(f"{P}/managers/scheduler.py", 9, "event_loop_normal", "self.run_batch(batch)")], None),
    # a vision encoder's graph is captured on a first request: not a start-up step
    ([Frame(f"{P}/multimodal/internvl_vit_cuda_graph_runner.py", 9, "_capture_graph", "graph.capture_begin()")], None),
])
def test_frames_that_say_the_server_was_starting(frames, says):
    reason = startup_hints.frames_reason(frames)
    assert (reason is None) if says is None else (says in reason)


@pytest.mark.parametrize("line, hinted", [
    ("RuntimeError: Error in function 'TllmGenFmhaRunner' at fmhaRunner.cuh:30: Unsupported architecture", True),
    ("AttributeError: module 'sgl_kernel' has no attribute 'fp8_scaled_mm'", True),
    ("AttributeError: 'NoneType' object has no attribute 'cpu'", False),  # a state bug: serving meets it too
    ("ZeroDivisionError: division by zero", False),
])
def test_words_that_point_to_start_up(line, hinted):
    (inc,) = incidents_of(line + "\n")
    assert inc.after_ready_known is False
    assert ("startup_hint" in inc.captures) == hinted
