"""A compiler's own diagnostic written onto a warning's line (DeepGEMM prints its NVCC-version
warning without a line end, then nvcc's failure) is read as its own line (session 33,
signals.split_after_warning); the warning alone stays a warning."""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor import pipeline
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.incidents import signals

WARNING = "Warning: please use at least NVCC 12.9 for the best DeepGEMM performance"
NVCC = "NVCC compilation failed: nvcc fatal   : Unsupported gpu architecture 'sm_100f'"


def test_the_line_splits_before_the_compiler_head():
    assert signals.split_after_warning(WARNING + NVCC) == [
        WARNING + "NVCC compilation failed: ", "nvcc fatal   : Unsupported gpu architecture 'sm_100f'"]
    assert signals.split_after_warning(WARNING) is None
    assert signals.split_after_warning(NVCC) is None  # no warning: nothing to split


def test_the_glued_nvcc_failure_forms_an_incident():
    pipe = pipeline.StreamPipeline(RuleSet.load(), remediate=False, whole_log=True)
    events = pipe.feed(("Testing GEMM:\n" + WARNING + NVCC + "\n").encode()) + pipe.finish()
    rules = [ev["_diagnosis"].rule for ev in events if ev["event"] == "incident"]
    assert rules == ["kernel.build.nvcc_unsupported_arch"]


def test_the_warning_alone_forms_nothing(tmp_path):
    assert incidents_of_lines(tmp_path, ["Testing GEMM:", WARNING]) == []
