"""Issue 12 (session 34, graph34): CUDA graph capture failures as a family, through the CLI on
fixtures (real subprocesses).

- torch's refusal to read the CUDA RNG state during a capture is a capture failure whatever
  layer the cut traceback ends in, and its fix is not fewer sizes (every size fails): torch.compile
  off when Dynamo's frames are in the captured forward, else no decode graphs;
- a native crash whose faulthandler stack runs through a graph runner's capture is a capture
  failure (the same crash in a weight loader is not);
- an operation CUDA refuses inside any capture, or a capture an earlier call broke, leads with no
  decode graphs in the class rules too;
- a capture failure in a forward compiled by torch.compile turns torch.compile off first."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

PROBES = FIXTURES / "cuda_graph"


def _sets(rem):
    return [(c.get("set") or {}, c.get("unset") or []) for c in [rem, *rem["alternatives"]]]


def test_rng_state_read_in_a_dynamo_traced_capture_turns_torch_compile_off_first():
    inc = explain_one_incident(PROBES / "graph34_rng_in_capture_dynamo_cut_046.log")
    assert (inc["rule"], inc["category"]) == ("cuda_graph.rng_state_in_capture", "cuda_graph")
    sets = _sets(inc["remediation"])
    assert sets[0] == ({}, ["--enable-torch-compile"])
    assert sets[1] == ({"--disable-cuda-graph": True}, [])
    # fewer captured sizes cannot help a call every size makes
    assert not any("--cuda-graph-max-bs" in s for s, _ in sets)


def test_rng_state_read_without_frames_runs_without_the_graphs():
    inc = explain_one_incident(PROBES / "graph34_rng_in_capture_bare_compose.log")
    assert inc["rule"] == "cuda_graph.rng_state_in_capture"
    assert _sets(inc["remediation"])[0] == ({"--disable-cuda-graph": True}, [])


def test_a_native_crash_inside_the_capture_is_a_capture_failure_in_both_runner_generations():
    for name in ("graph34_native_crash_in_capture_segfault_046.log", "graph34_native_crash_in_capture_abort_0523.log"):
        inc = explain_one_incident(PROBES / name)
        assert (inc["rule"], inc["category"]) == ("cuda_graph.native_crash_in_capture", "cuda_graph"), name
        assert inc["remediation"]["set"] in ({"--disable-cuda-graph": True}, {"--cuda-graph-backend-decode": "disabled"}), name


def test_a_native_crash_outside_any_capture_is_not_read_as_one():
    inc = explain_one_incident(PROBES / "graph34_native_crash_loading_not_capture.log")
    assert inc["rule"] != "cuda_graph.native_crash_in_capture" and inc["category"] != "cuda_graph"


def test_the_capture_class_rules_lead_with_no_graphs_for_a_broken_capture():
    inc = explain_one_incident(FIXTURES / "classes" / "cuda_graph_capture_invalidated_bare.log")
    assert inc["rule"] == "class.cuda_graph.message"
    sets = _sets(inc["remediation"])
    assert sets[0] == ({"--disable-cuda-graph": True}, [])
    assert "--cuda-graph-max-bs" in sets[1][0]


def test_a_capture_failure_in_a_compiled_forward_drops_torch_compile_first():
    inc = explain_one_incident(PROBES / "graph34_capture_failed_compiled_forward_059.log")
    assert inc["rule"] == "cuda_graph.capture_failed_059"
    sets = _sets(inc["remediation"])
    assert sets[0] == ({}, ["--enable-torch-compile"])
    # the same advice without Dynamo in the frames keeps its order (fewer sizes, then no graphs)
    plain = _sets(explain_one_incident(PROBES / "capture_failed_059.log")["remediation"])
    assert plain[0] == ({"--cuda-graph-max-bs": 16}, []) and plain[1] == ({"--disable-cuda-graph": True}, [])


def test_the_prefill_runners_wrapper_is_a_capture_failure_of_the_prefill_graphs():
    inc = explain_one_incident(PROBES / "graph34_prefill_capture_failed_one_line_0523.log")
    assert (inc["rule"], inc["category"]) == ("cuda_graph.prefill_capture_failed", "cuda_graph")
    # the prefill graphs' own switch: the decode graphs stay
    assert inc["remediation"]["set"] == {"--cuda-graph-backend-prefill": "disabled"}


def test_the_cpu_graph_runners_wrapper_drops_torch_compile_unless_memory_ran_out():
    inc = explain_one_incident(PROBES / "graph34_cpu_graph_capture_failed_059.log")
    assert (inc["rule"], inc["category"]) == ("cuda_graph.cpu_graph_capture_failed", "cuda_graph")
    sets = _sets(inc["remediation"])
    assert sets[0] == ({}, ["--enable-torch-compile"])
    assert "--torch-compile-max-bs" in sets[1][0]
