"""A traceback pasted without its exception line (the copy stopped one line early; bench/
site_shapes.py's ``cut`` shape) is read by where it was raised: a class rule that names the
failure by the deepest SGLang frame's module matches, its exception type read from the deepest
frame's own statement (``assert`` / ``raise X(``) or assumed, and the explanation says so; the
fallback still says what is missing and how to get it.  A frame that only calls on (the cut
fell at a call) tells no type, and "somewhere in SGLang" alone names nothing: the honest
fallback stays.  Real CLI runs on files under fixtures/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_assumed_answer import incidents

from sglang_doctor.diagnose.rules_engine import raised_type
from sglang_doctor.model import Frame

ROOT = Path(__file__).resolve().parents[2]


def test_an_argument_hook_cut_above_its_assert_is_an_argument_check():
    (inc,) = incidents("fixtures/classes/args_server_args_cut_exception_line_0523.log")
    assert inc["category"] == "args.invalid" and inc["rule"] == "class.args.server_args"
    assert any("cut by the paste" in a and "AssertionError" in a for a in inc["assumed"])
    assert "cut by the paste" in inc["explanation"]
    assert inc["confidence"] < 0.55  # the class's own confidence, lowered for what was assumed
    assert inc["fallback"]["next_step"]  # the missing line: how to get it


def test_a_cut_at_a_call_stays_the_honest_fallback():
    (inc,) = incidents("fixtures/classes/internal_cut_at_a_call_0523.log")
    assert inc["rule"] == "unknown" and inc["layer"] == "fallback"


def _frame(source: str) -> Frame:
    return Frame(file="/x/sglang/srt/a.py", line=3, function="f", source=source)


def test_the_raised_type_comes_from_the_deepest_statement():
    assert raised_type([_frame("assert cfg.tp_size % cfg.moe_dp_size == 0, (")]) == "AssertionError"
    assert raised_type([_frame('raise ValueError(')]) == "ValueError"
    assert raised_type([_frame("raise torch.cuda.OutOfMemoryError(msg)")]) == "OutOfMemoryError"
    assert raised_type([_frame("raise NotImplementedError")]) == "NotImplementedError"
    assert raised_type([_frame("self.init_model_worker()")]) is None
    assert raised_type([_frame("raise")]) is None
    assert raised_type([]) is None


def test_the_cli_exits_one_on_the_cut_paste():
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain",
                           str(ROOT / "fixtures/classes/args_server_args_cut_exception_line_0523.log")],
                          capture_output=True, text=True, cwd=str(ROOT))
    assert proc.returncode == 1 and "class.args.server_args" in proc.stdout and not proc.stderr.strip()
