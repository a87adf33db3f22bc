"""A paste of faulthandler's thread dump from its middle is frames, not an exception.

Python's faulthandler (a segfault or an abort in native code) prints every thread as
"Thread 0x00007f39a0232b80 (most recent call first):" (or "Current thread 0x...:") and then
that thread's frames, most recent call first, as ``  File "x.py", line 294 in load_weights``.
Pasted without its "Fatal Python error" line, the first frames open a headless traceback;
the next thread's header used to be read as that traceback's exception line, which dropped
the frames after it (here the main thread, inside the model loader) and left a fragment of
start-up read as a crash while serving.  The header is taken as part of the dump, and each
thread's frames are put in a traceback's order (outermost first).  Written from field16/005
(kt-kernel's AMX load_weights crashing during SGLang's load_model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sglang_doctor.incidents.tracebacks import TracebackBuilder

ROOT = Path(__file__).resolve().parents[2]
PKG = "/opt/venv/lib/python3.12/site-packages"
DUMP = [
    f'  File "{PKG}/tqdm/_monitor.py", line 60 in run',
    '  File "/usr/lib/python3.12/threading.py", line 1075 in _bootstrap_inner',
    '  File "/usr/lib/python3.12/threading.py", line 1032 in _bootstrap',
    "",
    "Thread 0x00007f39a0232b80 (most recent call first):",
    f'  File "{PKG}/kt_kernel/utils/amx.py", line 294 in load_weights',
    f'  File "{PKG}/sglang/srt/layers/moe/kt_ep_wrapper.py", line 258 in process_weights_after_loading',
    f'  File "{PKG}/sglang/srt/model_loader/loader.py", line 619 in load_weights_and_postprocess',
    f'  File "{PKG}/sglang/srt/model_loader/loader.py", line 600 in load_model',
    f'  File "{PKG}/sglang/srt/model_executor/model_runner.py", line 797 in load_model',
    f'  File "{PKG}/sglang/srt/model_executor/model_runner.py", line 432 in initialize',
]


def _build(lines: list[str]) -> TracebackBuilder:
    builder = TracebackBuilder(lines[0], headless=True)
    for text in lines[1:]:
        builder.offer(text)
    builder.finish()
    return builder


def test_the_next_threads_header_is_no_exception_line():
    builder = _build(DUMP)
    assert builder.chain == []
    assert "load_weights_and_postprocess" in [f.function for f in builder.frames]


def test_each_threads_frames_come_outermost_first():
    functions = [f.function for f in _build(DUMP).frames]
    assert functions[:3] == ["_bootstrap", "_bootstrap_inner", "run"]
    assert functions[3:] == ["initialize", "load_model", "load_model", "load_weights_and_postprocess",
                             "process_weights_after_loading", "load_weights"]


def test_a_traceback_keeps_its_order_and_its_exception():
    builder = _build([
        '  File "/x/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        '  File "/x/sglang/srt/managers/scheduler.py", line 20, in event_loop_normal',
        "    self.run_batch()",
        "RuntimeError: boom",
    ])
    assert [f.function for f in builder.frames] == ["run_scheduler_process", "event_loop_normal"]
    assert [e.type for e in builder.chain] == ["RuntimeError"]


def test_the_fragment_is_read_as_start_up_not_serving(tmp_path: Path):
    log = tmp_path / "dump.log"
    log.write_text("\n".join(DUMP) + "\n")
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(log)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    incidents = [e for e in map(json.loads, (l for l in proc.stdout.splitlines() if l.startswith("{")))
                 if e.get("event") == "incident"]
    assert len(incidents) == 1
    assert incidents[0]["phase"] != "serving"
    assert incidents[0]["category"] != "runtime.crash"
    assert incidents[0]["exception"] is None
