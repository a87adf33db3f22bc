"""torch_npu's "RuntimeError: The Inner error is reported as above" traceback is the Python side
of a device-side error torch_npu logged just before it (incidents/assemble.py
``_inner_error_after_reported``): folded into that incident only when the incident above it is
such a device-side error (``_DEVICE_SIDE``: torch_npu's "NPU out of memory" / "NPU function
error", CANN / ACL error codes, a CUDA error), not after any incident.

Written from field21/010 (a real Ascend log: the NPU workspace OOM, its native stack, then the
scheduler's inner-error traceback); the same log with the device line replaced by an error that
is not the device's (the NCCL watchdog's) keeps the traceback as an incident of its own.  The
second test fails on the code before this change (the traceback was dropped after any
incident)."""

from __future__ import annotations

from pathlib import Path

from sglang_doctor import pipeline
from sglang_doctor.diagnose.rules_engine import RuleSet

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "corpus" / "field21" / "010-memory.cuda_oom-ascend-npu-workspace-oom-during-68k-token-prefill-after-ready.log"
DEVICE_LINE = "NPU out of memory. NPUWorkspaceAllocator tried to allocate"
WATCHDOG = ("[rank2]:[E1227 01:06:16.020753201 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=41234, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran "
            "for 600054 milliseconds before timing out.")
INNER = "The Inner error is reported as above"


def _incidents(tmp_path: Path, text: str):
    path = tmp_path / "npu.log"
    path.write_text(text)
    return pipeline.read_incidents(path, RuleSet.load())[1]


def _lines() -> list[str]:
    lines = SOURCE.read_text().split("\n")
    assert sum(DEVICE_LINE in line for line in lines) == 1 and any(INNER in line for line in lines)
    return lines


def test_after_the_device_error_it_is_that_incidents_python_side(tmp_path: Path):
    [incident] = _incidents(tmp_path, "\n".join(_lines()))
    assert any(DEVICE_LINE in line.text for line in incident.signals)
    assert not any(INNER in line.text for line in incident.lines)


def test_after_an_error_that_is_not_the_devices_it_is_an_incident_of_its_own(tmp_path: Path):
    lines = [WATCHDOG if DEVICE_LINE in line else line for line in _lines()]
    incidents = _incidents(tmp_path, "\n".join(lines))
    assert len(incidents) == 2
    assert "nccl_watchdog" in incidents[0].signal_names
    assert incidents[1].exception is not None and incidents[1].exception.message.startswith(INNER)
