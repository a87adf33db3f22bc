"""A fragment whose traceback passes the scheduler's event loop was serving.

run_scheduler_process builds the Scheduler (every start-up step), tells the launcher it is up,
and only then enters ``scheduler.run_event_loop()`` (0.5.1x-0.5.23; earlier releases call
``scheduler.event_loop_*()`` directly).  sgl-project/sglang#24972 (field23/001) pasted a rank's
bare AssertionError from the HiCache load-back path, then TP1's "Scheduler hit an exception"
header whose only surviving frame calls ``scheduler.run_event_loop()`` -- no ready line, no
milestone.  The incident did not know whether the server had been ready, so the internal-check
class took "phase unknown" and named it other; the event loop in the second traceback says it was
serving.  Tracebacks through a start-up constructor keep saying "not ready" (startup_hints)."""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor.incidents import tracebacks
from sglang_doctor.model import Frame

SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
ASSERT_TAIL = [
    f'  File "{SITE}/mem_cache/unified_radix_cache.py", line 1240, in load_back',
    "    t = comp.build_hicache_transfers(",
    f'  File "{SITE}/mem_cache/unified_cache_components/swa_component.py", line 448, in build_hicache_transfers',
    "    assert cd.host_value is not None or cd.value is not None",
    "AssertionError",
    "",
]
LOOP_HEADER = [
    "[2026-05-12 06:06:13 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{SITE}/managers/scheduler.py", line 4001, in run_scheduler_process',
    "    scheduler.run_event_loop()",
]


def _frame(function: str, source: str = "", file: str = f"{SITE}/managers/scheduler.py") -> Frame:
    return Frame(file=file, line=1, function=function, source=source)


def test_event_loop_as_frame_or_as_the_call_a_frame_makes():
    assert tracebacks.event_loop_reason([_frame("event_loop_overlap")])
    assert tracebacks.event_loop_reason([_frame("event_loop_overlap_disagg_decode")])
    assert tracebacks.event_loop_reason([_frame("run_scheduler_process", "scheduler.run_event_loop()")])
    assert tracebacks.event_loop_reason([_frame("run_scheduler_process", "scheduler.event_loop_normal()")])


def test_no_event_loop_no_reason():
    # the constructor call of the same function, another package's loop, asyncio's loop
    assert tracebacks.event_loop_reason([_frame("run_scheduler_process", "scheduler = Scheduler(")]) is None
    assert tracebacks.event_loop_reason([_frame("event_loop_overlap", file="/opt/other/scheduler.py")]) is None
    assert tracebacks.event_loop_reason([_frame("run_until_complete", "return self.run_event_loop_forever()",
                                                file="/usr/lib/python3.12/asyncio/base_events.py")]) is None


def test_a_cut_fragment_through_the_event_loop_was_serving(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, ASSERT_TAIL + LOOP_HEADER)
    assert inc.after_ready_known and inc.after_ready
    assert "event loop" in inc.captures["serving_frames"]


def test_without_the_event_loop_it_stays_unknown(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, ASSERT_TAIL)
    assert not inc.after_ready_known
    assert "serving_frames" not in inc.captures


def test_a_start_up_constructor_wins(tmp_path):
    lines = ["Traceback (most recent call last):",
             f'  File "{SITE}/managers/scheduler.py", line 3110, in run_scheduler_process',
             "    scheduler = Scheduler(",
             f'  File "{SITE}/managers/scheduler.py", line 363, in __init__',
             "    self.init_model_worker()",
             "AssertionError"]
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.after_ready_known and not inc.after_ready


# sgl-project/sglang#28396 (field23/003): one rank's exception, the tokenizer manager's crash-dump
# line (0.5.23 tokenizer_manager.py dump_requests_before_crash, run by its SIGQUIT handler), then
# TP7's header.  The crash-dump line is part of the same death: one incident, not two.
DIAGNOSTICS = "[2026-06-16 13:51:45] Sleeping 5 seconds before crash diagnostics to let GPU activity settle."
RUNTIME_TAIL = [
    f'  File "{SITE[:-4]}/../sgl_kernel/kvcacheio.py", line 215, in transfer_kv_all_layer_direct_lf_pf',
    "    torch.ops.sgl_kernel.transfer_kv_all_layer_direct_lf_pf.default(",
    "RuntimeError: cudaMemcpyBatchAsync failed. failIdx=18446744073709551615 error=invalid argument",
    "",
]
TP7_HEADER = [
    "[2026-06-16 13:51:45 TP7] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{SITE}/managers/scheduler.py", line 4064, in run_scheduler_process',
    "    scheduler.run_event_loop()",
]


def test_the_crash_dump_line_does_not_split_the_death(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, RUNTIME_TAIL + [DIAGNOSTICS] + TP7_HEADER)
    assert inc.exception is not None and inc.exception.type == "RuntimeError"
    assert inc.last_line == len(RUNTIME_TAIL) + 1 + len(TP7_HEADER)


def test_another_plain_line_still_ends_the_incident(tmp_path):
    other = "[2026-06-16 13:51:45] Cache flushed successfully!"
    incidents = incidents_of_lines(tmp_path, RUNTIME_TAIL + [other] + TP7_HEADER)
    assert len(incidents) == 2
