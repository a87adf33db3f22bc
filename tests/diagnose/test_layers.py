"""Layered diagnosis: specific rules, then class rules, then the honest fallback; unknown
context is assumed (and said), never taken as false."""

import json
import subprocess
import textwrap

import pytest

from conftest import ROOT, doctor_cmd
from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet
from sglang_doctor.pipeline import StreamPipeline

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
RULES = """\
rules:
  - id: t.after_ready
    category: runtime.crash
    phase: auto
    title: t
    confidence: 0.8
    match:
      after_ready: true
      message_any: [illegal memory access]
    explanation: e
  - id: t.tp
    category: nccl
    phase: startup.distributed
    title: t
    confidence: 0.8
    match:
      exception: RuntimeError
      message: 'P2P'
      context: {tp_size: ">1"}
    explanation: e
  - id: class.t.where
    category: cuda_graph
    phase: startup.cuda_graph
    title: t
    confidence: 0.5
    match:
      deepest_frame_module: [cuda_graph_runner]
    explanation: e
  - id: class.t.words
    category: memory.host_oom
    phase: auto
    title: t
    confidence: 0.5
    match:
      message_any: [cannot allocate memory]
    explanation: e
"""


@pytest.fixture(scope="module")
def ruleset(tmp_path_factory):
    d = tmp_path_factory.mktemp("rules")
    (d / "r.yaml").write_text(RULES)
    return RuleSet.load([d], builtin=False, user=False)


def diagnose(ruleset, text):
    pipe = StreamPipeline(ruleset, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e for e in events if e["event"] == "incident"]


IMA = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_after_ready_rule_fires_on_a_fragment_and_says_what_it_assumed(ruleset):
    (ev,) = diagnose(ruleset, IMA)
    assert ev["rule"] == "t.after_ready" and ev["layer"] == "specific"
    assert ev["assumed"] == ["the server had been ready before it failed"]
    assert ev["confidence"] < 0.8
    assert "Assumed (the log does not say)" in ev["explanation"]
    assert ev["phase"] == "serving"


def test_after_ready_rule_is_vetoed_when_the_log_says_it_was_not_ready(ruleset):
    log = ("[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
           "[2026-05-09 10:00:01 TP0] Load weight begin. avail mem=40.00 GB\n" + IMA)
    (ev,) = diagnose(ruleset, log)
    assert ev["rule"] != "t.after_ready"


def test_after_ready_rule_without_assumption_after_the_ready_line(ruleset):
    (ev,) = diagnose(ruleset, "[2026-05-09 10:00:00] The server is fired up and ready to roll!\n" + IMA)
    assert ev["rule"] == "t.after_ready" and ev["assumed"] == [] and ev["confidence"] == 0.8


def test_context_condition_assumed_without_a_dump_and_vetoed_by_one(ruleset):
    (ev,) = diagnose(ruleset, "RuntimeError: P2P is not supported\n")
    assert ev["rule"] == "t.tp" and ev["assumed"] and "tp_size" in ev["assumed"][0]
    dump = "[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
    (ev,) = diagnose(ruleset, dump + "RuntimeError: P2P is not supported\n")
    assert ev["rule"] != "t.tp"


def test_class_rule_by_the_deepest_sglang_frame(ruleset):
    log = (f"Traceback (most recent call last):\n  File \"{P}/managers/scheduler.py\", line 1, in run\n    x()\n"
           f"  File \"{P}/model_executor/runner/decode_cuda_graph_runner.py\", line 603, in __init__\n    y()\n"
           "Exception: Capture cuda graph failed: something new\n")
    (ev,) = diagnose(ruleset, log)
    assert (ev["rule"], ev["layer"], ev["category"]) == ("class.t.where", "class", "cuda_graph")
    assert "fallback" not in ev  # the cause line is there and a rule knew it


def test_class_rule_not_by_an_outer_frame(ruleset):
    log = (f"Traceback (most recent call last):\n  File \"{P}/model_executor/runner/decode_cuda_graph_runner.py\", line 1, in c\n"
           f"    x()\n  File \"{P}/layers/linear.py\", line 9, in forward\n    y()\nValueError: shapes\n")
    (ev,) = diagnose(ruleset, log)
    assert ev["rule"] == "unknown" and ev["layer"] == "fallback"


def test_class_rule_by_message_words_and_specific_first(ruleset):
    (ev,) = diagnose(ruleset, "OSError: [Errno 12] Cannot allocate memory\n")
    assert ev["rule"] == "class.t.words"


def test_class_rule_confidence_must_stay_below_specific(tmp_path):
    d = tmp_path / "rules"
    d.mkdir()
    (d / "c.yaml").write_text(RULES.replace("confidence: 0.5\n    match:\n      message_any", "confidence: 0.9\n    match:\n      message_any"))
    with pytest.raises(RuleLoadError) as info:
        RuleSet.load([d], builtin=False, user=False, strict=True)
    assert any("class rule's confidence" in p for p in info.value.problems)


# -- the honest fallback, with the shipped pack --------------------------------------------


def test_cut_traceback_says_what_is_missing_and_how_to_get_it(pack):
    log = (f"[2026-05-09 10:02:11 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           f"  File \"{P}/managers/scheduler.py\", line 3155, in run_scheduler_process\n"
           "    scheduler.event_loop_normal()\n")
    (ev,) = diagnose(pack, log)
    fb = ev["fallback"]
    assert fb["missing"].startswith("the traceback was cut above its last line")
    assert fb["best_guess"]["category"] == "runtime.crash"
    assert "event_loop_normal" in fb["best_guess"]["why"]
    # the weighed strength stays at most 0.5; the confidence stated is measured (diagnose/calibration.py)
    assert 0 < fb["best_guess"]["strength"] <= 0.5 and 0 < fb["best_guess"]["confidence"] <= 0.9
    # a fragment: the whole file has the rest of the traceback (and the tool can read all of it)
    assert fb["next_step"].startswith("grep -n -B5 -A80 'Traceback (most recent call last)' LOG")
    assert "sglang-doctor explain LOG" in fb["next_step"]


def test_only_the_parents_sigquit(pack):
    (ev,) = diagnose(pack, "[2026-05-09 10:02:11] Received sigquit from a child process. It usually means the child failed.\n")
    assert "only the parent's sigquit is here" in ev["fallback"]["missing"]
    assert "hit an exception" in ev["fallback"]["next_step"]


def test_killed_without_python_error_guesses_host_oom(pack):
    log = "[2026-05-09 10:00:01 TP0] Load weight begin. avail mem=40.00 GB\nKilled\n"
    (ev,) = diagnose(pack, log)
    assert ev["category"] == "memory.host_oom"
    if ev["layer"] == "fallback":
        assert ev["fallback"]["best_guess"]["category"] == "memory.host_oom"
    assert "fallback" not in ev or "dmesg" in ev["fallback"]["next_step"]


def test_unknown_exception_in_a_fragment_is_a_crash_while_serving_assumed(pack):
    (ev,) = diagnose(pack, "ZeroDivisionError: division by zero\n")
    assert (ev["rule"], ev["layer"]) == ("class.runtime.after_ready", "class")
    assert ev["assumed"] == ["the server had been ready before it failed"]


def test_unknown_exception_keeps_category_other_with_a_guess(pack):
    log = ("[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
           f"Traceback (most recent call last):\n  File \"{P}/layers/quantization/fp8.py\", line 9, in apply\n"
           "    y()\nZeroDivisionError: division by zero\n")
    (ev,) = diagnose(pack, log)
    assert ev["layer"] == "fallback" and ev["category"] == "other"
    assert ev["fallback"]["missing"] is None
    assert ev["fallback"]["best_guess"]["category"] == "kernel.unsupported_hw"


def test_text_output_shows_the_fallback(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(f"Traceback (most recent call last):\n  File \"{P}/model_executor/cuda_graph_runner.py\", line 3, in capture\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "text", str(log)), capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert "missing: the traceback was cut above its last line" in out.stdout
    assert "best guess: cuda_graph" in out.stdout and "next step: grep -n -B5 -A80 'Traceback" in out.stdout


def test_flag_named_by_an_argument_check_is_advice(tmp_path):
    log = tmp_path / "args.log"
    log.write_text("ValueError: --speculative-eagle-topk must be 1 when --speculative-num-steps is 1, got 4.\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", "0.5.23", str(log)),
                         capture_output=True, text=True)
    (ev,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["event"] == "incident"]
    assert ev["category"] == "args.invalid"
    rem = ev["remediation"]
    assert rem["safe"] is False and "--speculative-eagle-topk" in rem["note"]


def test_thread_that_raised_names_where_a_cut_traceback_was(pack):
    log = ("Exception in thread Thread-3 (forward_thread_func):\nTraceback (most recent call last):\n"
           '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n')
    (ev,) = diagnose(pack, log)
    assert ev["fallback"]["best_guess"]["category"] == "runtime.crash"
    assert "forward_thread_func" in ev["fallback"]["best_guess"]["why"]


def test_no_failure_in_a_fragment_is_said_in_the_summary(tmp_path):
    log = tmp_path / "frag.log"
    log.write_text("[2026-05-09 10:00:01 TP0] Decode batch, #running-req: 6, #token: 1920, token usage: 0.94, "
                   "cuda graph: True, gen throughput (token/s): 446.45, #queue-req: 5\n[2026-05-09 10:00:02 TP0] Deco")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["event"] == "summary" and summary["incidents"] == 0
    assert summary["fallback"]["missing"].startswith("no failure is in these 2 lines")
    assert summary["fallback"]["best_guess"]["category"] == "runtime.crash"


def test_a_whole_healthy_launch_has_no_fallback():
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(ROOT / "fixtures/healthy/ready_then_sigterm_0523.log")),
                         capture_output=True, text=True)
    summary = json.loads(out.stdout.splitlines()[-1])
    assert summary["incidents"] == 0 and "fallback" not in summary


def test_a_warning_sglang_worked_around_is_not_an_incident(tmp_path):
    log = tmp_path / "warn.log"
    log.write_text("[2026-05-09 10:00:00 TP0] Setup Custom allreduce failed with CUDART error: peer access is not "
                   "supported between these two devices. To silence this warning, specify --disable-custom-all-reduce "
                   "explicitly.\n[2026-05-09 10:00:01 TP0] Load weight begin. avail mem=47.00 GB\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert not [e for e in map(json.loads, out.stdout.splitlines()) if e["event"] == "incident"]


SETTING_RULES = """\
rules:
  - id: class.t.own_value
    category: other
    phase: auto
    title: t
    confidence: 0.4
    match:
      kind: traceback
      names_setting: false
      deepest_frame_module: [srt/]
      deepest_frame_module_not: [srt/models/]
      message_any: [must be positive]
    explanation: e
  - id: class.t.graph_function
    category: cuda_graph
    phase: auto
    title: t
    confidence: 0.4
    match:
      kind: traceback
      deepest_frame_module: ["srt/:*cuda_graph*"]
    explanation: e
"""


def _raised_in(path, function, message):
    return (f"Traceback (most recent call last):\n  File \"{P}/managers/scheduler.py\", line 1, in run\n    x()\n"
            f"  File \"{P}/{path}\", line 9, in {function}\n    raise ValueError(m)\nValueError: {message}\n")


@pytest.mark.parametrize("path, message, named", [
    ("layers/attention/plan.py", "batch_size, query_length, and max_pages must be positive", "class.t.own_value"),
    ("layers/attention/plan.py", "--chunked-prefill-size must be positive", "unknown"),       # a flag
    ("layers/attention/plan.py", "chunked_prefill_size must be positive", "unknown"),         # a flag's field
    ("layers/attention/plan.py", "SGLANG_FOO_BAR must be positive", "unknown"),               # a switch
    ("models/kimi.py", "dim must be positive", "unknown"),                                   # deepest_frame_module_not
])
def test_names_setting_and_deepest_frame_module_not(tmp_path, path, message, named):
    """A value check naming no setting is SGLang's own; one naming a --flag, an SGLANG_* switch
    or an SGLang flag's field is not; deepest_frame_module_not vetoes by where it was raised."""
    (tmp_path / "r.yaml").write_text(SETTING_RULES)
    ruleset = RuleSet.load([tmp_path], builtin=False, user=False)
    (ev,) = diagnose(ruleset, _raised_in(path, "run", message))
    assert ev["rule"] == named


def test_deepest_function_glob(tmp_path):
    (tmp_path / "r.yaml").write_text(SETTING_RULES)
    ruleset = RuleSet.load([tmp_path], builtin=False, user=False)
    (ev,) = diagnose(ruleset, _raised_in("layers/attention/wave_backend.py", "_build_cuda_graph_forward_metadata", "x"))
    assert ev["rule"] == "class.t.graph_function"
    (ev,) = diagnose(ruleset, _raised_in("layers/attention/wave_backend.py", "forward_decode", "x"))
    assert ev["rule"] == "unknown"


def test_names_setting_must_be_a_boolean(tmp_path):
    (tmp_path / "r.yaml").write_text(SETTING_RULES.replace("names_setting: false", "names_setting: maybe"))
    with pytest.raises(RuleLoadError) as info:
        RuleSet.load([tmp_path], builtin=False, user=False, strict=True)
    assert any("names_setting must be true or false" in p for p in info.value.problems)
