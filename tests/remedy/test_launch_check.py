"""remedy/launch_check.py: a launch's flags checked before it runs (plan, run --dry-run, check)."""

import pytest

from sglang_doctor.remedy import flags, hardware, launch_check

CATALOG = flags.shipped_catalog("0.5.23")
PROGRAM = ["python", "-m", "sglang.launch_server"]


@pytest.mark.parametrize("argv, needle", [
    (["--tp-sise", "2"], "--tp-sise is not a flag of SGLang 0.5.23 (closest: --tp-size)"),
    (["--mem-fraction-static", "7"], "--mem-fraction-static 7: must be > 0 and < 1"),
    (["--mem-fraction-static", "abc"], "--mem-fraction-static: invalid float value 'abc'"),
    (["--tp-size", "0"], "--tp-size 0: must be >= 1"),
    (["--port", "70000"], "--port 70000: must be >= 1 and <= 65535"),
    (["--chunked-prefill-size", "0"], "--chunked-prefill-size 0: must be -1"),
    (["--model-path"], "--model-path needs a value"),
])
def test_each_problem_names_its_flag(argv, needle):
    problems = launch_check.check_argv([*PROGRAM, "--model-path", "/m", *argv], CATALOG)
    assert any(needle in p for p in problems), problems
    assert all("\n" not in p for p in problems)


def test_the_issue_example_gives_both_problems():
    problems = launch_check.check_argv([*PROGRAM, "--model-path", "/m", "--tp-sise", "2",
                                        "--mem-fraction-static", "7"], CATALOG)
    assert len(problems) == 2 and problems[0].startswith("--tp-sise") and problems[1].startswith("--mem-fraction-static 7")


def test_a_good_launch_has_no_problem():
    argv = [*PROGRAM, "--model-path", "/m", "--tp-size", "2", "--mem-fraction-static", "0.85",
            "--chunked-prefill-size", "-1", "--disable-radix-cache", "--port=30000"]
    assert launch_check.check_argv(argv, CATALOG) == []


@pytest.mark.parametrize("args, gpus, problem", [
    ({"tp_size": 3}, "a6000x2", "--tp-size 3 needs 3 GPUs but --gpus a6000x2 has 2"),
    ({"tp_size": 4}, "h100x3", "--tp-size 4 needs 4 GPUs but --gpus h100-80x3 has 3"),
    ({"tp_size": 2, "dp_size": 2}, "a6000x2", "needs 4 GPUs"),
    ({"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}, "a6000x2", None),
    ({"tp_size": 1}, "a6000x2", None),
    ({"tp_size": 8, "nnodes": 2}, "h100x4", None),
])
def test_layout_against_the_gpus(args, gpus, problem):
    got = launch_check.check_layout(args, hardware.get_profile(gpus))
    assert (got is None) if problem is None else (problem in got), got
