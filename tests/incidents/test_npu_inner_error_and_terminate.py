"""Two shapes of one device failure that used to read as two incidents.

torch_npu logs the device-side error itself ("[rankN]:[E... compiler_depend.ts:444] NPU out of
memory. NPUWorkspaceAllocator tried to allocate ...") and then raises "RuntimeError: The Inner
error is reported as above. ..." in the scheduler, whose "Scheduler hit an exception" traceback
followed as a second, generic runtime.crash incident.  And a c10::Error that escapes to
std::terminate ("terminate called after throwing an instance of 'c10::Error'", its "what():" and
native frames ending "<omitting python frames>") makes the process abort, so faulthandler's
"Fatal Python error: Aborted" dump follows: the same failure, which was split in two because the
"<omitting python frames>" line ended the signal record.  Written from field21/010 and 012; the
same traceback with no reported error above it stays an incident."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import HEAD, explain_file

SCHED = "/usr/local/python3.11.13/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py"
NPU_OOM = (
    "[2026-02-03 14:21:07 TP1] Prefill batch, #new-seq: 9, #new-token: 57344, #cached-token: 0, token usage: 0.02, "
    "#running-req: 0, #queue-req: 6, \n"
    "[rank1]:[E203 14:21:10.118204377 compiler_depend.ts:444] NPU out of memory. NPUWorkspaceAllocator tried to "
    "allocate 312.00 MiB(NPU 1; 61.27 GiB total capacity; 201.44 MiB free). If you want to reduce memory usage, "
    "take a try to set the environment variable TASK_QUEUE_ENABLE=1.\n"
    "\n")


def inner(message: str = "The Inner error is reported as above. The process exits for this inner error, and the "
                         "current working operator name is PagedAttentionOperation.") -> str:
    return (
        "[2026-02-03 14:21:10 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{SCHED}", line 2866, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        f"RuntimeError: {message}\n"
        "[2026-02-03 14:21:10] Received sigquit from a child process. It usually means the child failed.\n")


def test_the_inner_error_traceback_is_the_reported_oom(tmp_path: Path):
    log = tmp_path / "npu.log"
    log.write_text(HEAD + NPU_OOM + inner())
    incidents = explain_file(log)
    assert [(i["rule"], i["category"]) for i in incidents] == [("memory.cuda_oom.npu_allocator", "memory.cuda_oom")]
    # the scheduler's end still counts as the failure's death: no "went on serving?" doubt
    assert incidents[0]["confidence"] > 0.6


def test_the_inner_error_traceback_alone_is_still_an_incident(tmp_path: Path):
    log = tmp_path / "npu.log"
    log.write_text(HEAD + inner())
    incidents = explain_file(log)
    assert len(incidents) == 1 and incidents[0]["category"] != "memory.cuda_oom"


TERMINATE = (
    "terminate called after throwing an instance of 'c10::Error'\n"
    "  what():  NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 61.28 GiB total capacity; 55.40 GiB already "
    "allocated; 55.40 GiB current active; 1.02 GiB free; 58.11 GiB reserved in total by PyTorch)\n"
    "Exception raised from malloc at build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1634 (most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xb0 (0xfffe209c48c0 in /usr/lib/libc10.so)\n"
    "<omitting python frames>\n"
    "\n"
    "Fatal Python error: Aborted\n"
    "\n"
    "Current thread 0x0000ffff9a2d1120 (most recent call first):\n"
    '  File "/usr/local/python3.11.14/lib/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", '
    "line 711 in run_once\n"
    '  File "/usr/local/python3.11.14/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2978 in '
    "run_scheduler_process\n")


def test_terminate_and_its_abort_dump_are_one_incident(tmp_path: Path):
    log = tmp_path / "abort.log"
    log.write_text(HEAD + TERMINATE)
    incidents = explain_file(log)
    assert [i["rule"] for i in incidents] == ["memory.cuda_oom.npu_allocator"]
    # the crashing thread's stack (faulthandler's) stands for the traceback: it was capturing graphs
    rem = incidents[0]["remediation"]
    firsts = [rem["set"]] + [a["set"] for a in rem["alternatives"][:1]]
    assert any(k.startswith("--cuda-graph-max-bs") for s in firsts for k in s)
