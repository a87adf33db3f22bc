"""Issue #12, how the engine decides on fragments nobody tuned on: a class rule's answer that
rests on an assumed context alone does not beat the text's own evidence; a checkpoint tensor's
KeyError is loading whatever its prefix; one-line pastes (an exception's repr, a wrapper's
error line) form incidents; a ray-prefixed traceback whose last line is the next prefix cut
short has no exception line; the frames that show a fragment was still starting are said in
the explanation.  Each test runs the real CLI on a real file under fixtures/."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT, doctor_cmd


def explain(rel: str) -> list[dict]:
    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(ROOT / rel)), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback (most recent call last)" not in r.stderr, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def incidents(rel: str) -> list[dict]:
    return [e for e in explain(rel) if e["event"] == "incident"]


def test_the_texts_own_words_beat_a_crash_while_serving_that_is_only_assumed():
    (inc,) = incidents("fixtures/classes/shape_mismatch_bare.log")
    # the catch-all matched on its assumption alone; the message's words name the model
    assert inc["category"] == "model.unsupported" and inc["layer"] == "fallback"
    assert inc["assumed"] == ["the server had been ready before it failed"]
    assert "class.runtime.after_ready" in inc["explanation"] and "words:shape" in inc["explanation"]
    fb = inc["fallback"]
    assert "is an assumption" in fb["missing"] and fb["best_guess"]["category"] == "model.unsupported"
    assert fb["next_step"]


def test_an_assumed_crash_while_serving_stands_when_the_text_names_nothing_else():
    (inc,) = incidents("fixtures/classes/key_error_dotted_not_a_weight.log")
    assert inc["rule"] == "class.runtime.after_ready" and inc["category"] == "runtime.crash"
    assert "is an assumption" in inc["fallback"]["missing"]


def test_a_key_error_of_a_tensor_name_without_the_model_prefix_is_loading():
    (inc,) = incidents("fixtures/classes/weight_key_error_no_prefix.log")
    assert inc["rule"] == "class.model.weight_key" and inc["category"] == "model.load"
    assert not inc["assumed"]


def test_an_exception_repr_printed_by_a_wrapper_is_an_exception():
    (inc,) = incidents("fixtures/classes/exception_repr_pyo3.log")
    assert inc["rule"] == "class.runtime.after_ready"
    assert inc["title"] == "A crash while serving: TypeError"


def test_a_cut_ray_prefix_is_no_exception_line():
    (inc,) = incidents("fixtures/classes/ray_prefix_cut_traceback.log")
    assert inc["rule"] == "unknown" and inc["category"] == "other"
    assert inc["title"] == "A traceback whose exception line is missing"
    assert inc["fallback"]["missing"].startswith("the traceback was cut above its last line")


def test_the_frames_that_show_start_up_are_said_in_the_explanation():
    (inc,) = incidents("fixtures/classes/startup_constructor_unknown_exception.log")
    assert inc["category"] != "runtime.crash" and not inc["assumed"]
    assert "The server had not been ready yet: its traceback runs through a start-up constructor" in inc["explanation"]


def test_a_wrapper_that_could_not_run_sglang_is_an_incident_and_its_healthy_lines_are_not():
    (inc,) = incidents("fixtures/other/wrapper_logfmt_sglang_failed.log")
    assert inc["rule"] == "unknown" and "sglang package not found" in inc["title"]
    assert incidents("fixtures/healthy/wrapper_logfmt_sglang_ready.log") == []


def test_text_output_says_what_was_assumed():
    r = subprocess.run(doctor_cmd("explain", str(ROOT / "fixtures/classes/shape_mismatch_bare.log")),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "missing: the text does not say whether the server had been ready" in r.stdout
    assert "best guess: model.unsupported" in r.stdout


def test_a_cut_traceback_in_the_serving_loop_of_older_releases_guesses_a_crash_while_serving():
    (inc,) = incidents("fixtures/runtime/modeltpserver_serving_loop_cut.log")
    assert inc["category"] == "runtime.crash"
    assert "get_new_prefill_batch" in inc["fallback"]["best_guess"]["why"]


def test_flashinfers_cuda_error_line_is_a_failure_line():
    (inc,) = incidents("fixtures/kernel/flashinfer_cuda_error_no_kernel_image.log")
    # a specific rule names FlashInfer 0.1.x's own no-kernel-image line since session 22 (the class rule before)
    assert inc["rule"] == "kernel.unsupported_hw.flashinfer_no_kernel_image" and inc["category"] == "kernel.unsupported_hw"


def test_a_native_crash_in_a_start_up_step_is_that_steps_failure():
    (inc,) = incidents("fixtures/nccl/pynccl_segfault_during_init.log")
    assert inc["category"] == "nccl" and inc["phase"] == "startup.distributed"
    assert inc["fallback"]["missing"].startswith("a native crash")
    why = inc["fallback"]["best_guess"]["why"]
    assert "milestone" in why and "signal:faulthandler" not in why.split("against it")[0]


def test_mooncakes_glog_error_from_its_rdma_sources_is_a_transport_failure():
    (inc,) = incidents("fixtures/nccl/mooncake_rdma_register_failed_glog.log")
    assert inc["rule"] == "class.nccl.transport" and inc["category"] == "nccl"


def test_pythons_own_type_error_in_the_argument_handling_is_no_argument_to_change():
    (inc,) = incidents("fixtures/classes/server_args_none_type_error.log")
    assert inc["rule"] == "unknown" and inc["category"] == "other" and not inc["assumed"]
    assert "The server had not been ready yet: a frame checks the launch arguments" in inc["explanation"]


def test_the_launch_command_names_flags_but_is_no_evidence_of_a_bad_argument():
    events = explain("fixtures/healthy/launch_command_and_dump_only.log")
    assert [e for e in events if e["event"] == "incident"] == []
    guess = events[-1]["fallback"]["best_guess"]
    assert guess["category"] != "args.invalid" and "words:flag" not in guess["why"]


def test_the_crashing_threads_stack_names_where_a_native_crash_was():
    (inc,) = incidents("fixtures/nccl/custom_allreduce_segfault_current_thread.log")
    assert inc["category"] == "nccl"
    why = inc["fallback"]["best_guess"]["why"]
    assert "native_frame" in why and "custom_all_reduce.py" in why and "watchdog_thread" not in why
