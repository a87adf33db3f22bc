"""Graph-capture failures by runner and release (session 26, cudagraph26):

- 0.5.3-0.5.9's piecewise (prefill) runner raises the decode runner's words ("Capture cuda graph
  failed: {e}") followed by its OWN advice; it is the piecewise graphs that failed, so the fix
  turns them off (these releases: drop --enable-piecewise-cuda-graph), not the decode knobs;
  with a CUDA error the advice follows a blank line and is still read; an out-of-memory one is
  still the capture OOM;
- cut before that advice, the piecewise runner's frames pick the same switch;
- 0.4.6.post2-0.4.x spell it "Capture CUDA graph failed" (capital CUDA): the release's own
  capture rule, not the advice-only tail rule.
Real ``sglang-doctor explain`` subprocesses on fixture files (or files derived from them)."""

from pathlib import Path

import pytest

from conftest import explain_incidents

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "cuda_graph"


def _first(path, *extra):
    incidents = explain_incidents(path, *extra)
    assert len(incidents) == 1, [i["rule"] for i in incidents]
    return incidents[0]


@pytest.mark.parametrize("name", ["piecewise_capture_failed_055.log", "piecewise_capture_failed_059.log",
                                  "piecewise_capture_failed_blank_line_059.log"])
def test_the_piecewise_runner_s_capture_failure_turns_piecewise_graphs_off(name):
    inc = _first(FIX / name)
    assert (inc["rule"], inc["category"]) == ("cuda_graph.piecewise_capture_failed", "cuda_graph")
    fix = inc["remediation"]
    assert fix["unset"] == ["--enable-piecewise-cuda-graph"] and not fix["set"]
    # the decode graphs stay: no --disable-cuda-graph, no smaller --cuda-graph-max-bs first
    assert "--disable-cuda-graph" not in fix["command"]


def test_an_out_of_memory_piecewise_capture_stays_the_capture_oom(tmp_path):
    text = (FIX / "piecewise_capture_failed_blank_line_059.log").read_text()
    cause = "CUDA error: operation not permitted when stream is capturing"
    oom = ("CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
           "1.21 GiB is free.")
    assert text.count(cause) == 2
    log = tmp_path / "oom.log"
    log.write_text(text.replace(f"RuntimeError: {cause}", f"torch.OutOfMemoryError: {oom}")
                   .replace(f"failed: {cause}", f"failed: {oom}"))
    inc = _first(log)
    assert inc["category"] == "memory.cuda_oom"
    assert "--mem-fraction-static" in inc["remediation"]["set"]


def test_a_piecewise_capture_cut_before_its_advice_is_known_by_its_frames(tmp_path):
    text = (FIX / "piecewise_capture_failed_059.log").read_text()
    log = tmp_path / "cut.log"
    log.write_text(text[:text.index("Possible solutions:")])
    inc = _first(log)
    assert (inc["rule"], inc["category"]) == ("cuda_graph.capture_failed_cut", "cuda_graph")
    assert inc["remediation"]["unset"] == ["--enable-piecewise-cuda-graph"]


def test_the_decode_runner_s_failure_keeps_the_decode_knobs():
    # the same words with the decode runner's advice: a smaller largest captured batch first
    inc = _first(FIX / "capture_failed_059.log")
    assert inc["rule"] == "cuda_graph.capture_failed_059"
    assert "--enable-piecewise-cuda-graph" not in inc["remediation"]["unset"]


def test_capital_cuda_of_0_4_6_post5_is_the_release_s_capture_rule():
    inc = _first(FIX / "capture_failed_cuda_caps_0465.log")
    assert (inc["rule"], inc["category"]) == ("cuda_graph.capture_failed_059", "cuda_graph")
    assert "CUDA error: invalid argument" in inc["title"]
    assert "--cuda-graph-max-bs" in inc["remediation"]["set"]


SRT = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def test_a_piecewise_compile_failing_is_the_piecewise_graphs():
    # 0.5.10-0.5.13 piecewise runner's warm-up compile, the "Piecewise CUDA Graph failed" line
    # not pasted: class.cuda_graph.in_capture reads the runner's compile step, its fix the
    # piecewise switch of those releases
    inc = _first(Path(__file__).resolve().parents[2] / "fixtures" / "classes" / "cuda_graph_in_piecewise_compile_cublas_0512.log")
    assert (inc["rule"], inc["category"]) == ("class.cuda_graph.in_capture", "cuda_graph")
    assert inc["remediation"]["set"] == {"--disable-piecewise-cuda-graph": True}


def test_a_cut_capture_one_shape_traceback_is_a_capture_not_a_crash_while_serving(tmp_path):
    # 0.5.14-0.5.23 capture one size in capture_one_shape; a paste cut to the last frames,
    # with no ready line and no milestone, is still before ready (startup_hints) and a capture
    log = tmp_path / "cut.log"
    log.write_text("\n".join([
        f'  File "{SRT}/model_executor/runner/decode_cuda_graph_runner.py", line 1368, in capture_one_shape',
        "    out = run_once()",
        f'  File "{SRT}/models/deepseek_v2.py", line 2601, in forward',
        "    hidden_states = self.model(",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]) + "\n")
    inc = _first(log)
    assert inc["category"] == "cuda_graph", (inc["rule"], inc["category"])


@pytest.mark.parametrize("cause", ["CUDA error: operation not permitted when stream is capturing",
                                   "CUDA error: capturing stream has unjoined work"])
def test_an_operation_cuda_refuses_under_capture_leads_with_no_decode_graphs(tmp_path, cause):
    # it fails at every batch size: fewer captured sizes cannot help (the launch's dump says
    # torch.compile is off, so it is not the compiled graph)
    lines = (FIX / "capture_failed_cut_059.log").read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("Exception: Capture cuda graph failed: "))
    lines[i] = f"Exception: Capture cuda graph failed: {cause}"
    log = tmp_path / "refused.log"
    log.write_text("\n".join(lines) + "\n")
    inc = _first(log)
    assert inc["category"] == "cuda_graph"
    assert inc["remediation"]["set"] == {"--disable-cuda-graph": True}
    assert any("--cuda-graph-max-bs" in alt["set"] for alt in inc["remediation"]["alternatives"])


def test_another_cause_still_leads_with_fewer_captured_sizes():
    inc = _first(FIX / "capture_failed_cut_059.log")
    assert "--cuda-graph-max-bs" in inc["remediation"]["set"]
