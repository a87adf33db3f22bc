"""A failure written onto a progress bar's line, and the CuTe DSL's compile failures.

tqdm ends its bar with a carriage return, not a line end, so what the process writes next lands
on the bar's line: sgl-project/sglang#28232 (field22/002) pasted "Capturing batches (bs=512 ...)
0/52 [00:00<?, ?it/s]terminate called after throwing an instance of
'nanobind::builtin_exception'" as one line.  The bar is the step the server was in (CUDA-graph
capture), which the incident did not know because the assembler only took progress lines before
the failure's first line.  The what() of that terminate is the CuTe DSL's MLIR bindings failing
to compile a kernel: kernel.build, not an unknown crash."""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor.incidents import progress
from test_record_exception import explain_file

BAR = "Capturing batches (bs=512 avail_mem=19.45 GB):   0%|          | 0/52 [00:00<?, ?it/s]"
TERMINATE = "terminate called after throwing an instance of 'std::runtime_error'"
WHAT = "  what():  unexpected value in the kernel's launch table"
ABORT = "Fatal Python error: Aborted"
MLIR_WHAT = ("  what():  Expected an MLIR object (got [<cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir.OpResult object "
             "at 0x7f72f4382db0>]).")


def test_a_bar_with_text_after_it_shows_its_phase():
    assert progress.bar_run_into(BAR + TERMINATE) == "startup.cuda_graph"
    assert progress.bar_run_into("Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"
                                 "[2025-08-25 22:39:26] IS_TBO_ENABLED is not initialized") == "startup.load_weights"


def test_a_bar_alone_or_text_alone_is_not_run_into():
    assert progress.bar_run_into(BAR) is None
    assert progress.bar_run_into(BAR + "   ") is None
    assert progress.bar_run_into(TERMINATE) is None
    # the literal inside a message, not a bar at the line's start
    assert progress.bar_run_into("[2026-01-01 00:00:00] Capturing batches failed [00:00<?, ?it/s] x") is None


def test_the_failure_on_the_bars_line_takes_the_bars_phase(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, [BAR + TERMINATE, WHAT, ABORT])
    assert inc.captures.get("progress_phase") == "startup.cuda_graph"
    assert inc.captures.get("progress_line") == "1"


def test_a_failure_on_its_own_line_after_a_finished_bar_is_read_as_before(tmp_path):
    # the bar on its own line before the failure: the progress line before it, as always
    (inc,) = incidents_of_lines(tmp_path, [BAR, TERMINATE, WHAT, ABORT])
    assert inc.captures.get("progress_phase") == "startup.cuda_graph"
    assert inc.captures.get("progress_line") == "1"
    (inc,) = incidents_of_lines(tmp_path, [TERMINATE, WHAT, ABORT])
    assert "progress_phase" not in inc.captures


def test_the_cute_dsls_mlir_error_is_a_kernel_build(tmp_path):
    log = tmp_path / "mlir.log"
    log.write_text("\n".join([BAR + "terminate called after throwing an instance of 'nanobind::builtin_exception'",
                              MLIR_WHAT, ABORT]) + "\n")
    (inc,) = explain_file(log)
    assert (inc["rule"], inc["category"]) == ("kernel.build.cute_dsl_compile", "kernel.build")
    # another what() on the same bar's line is no such failure
    log.write_text("\n".join([BAR + TERMINATE, WHAT, ABORT]) + "\n")
    (inc,) = explain_file(log)
    assert inc["category"] != "kernel.build"
