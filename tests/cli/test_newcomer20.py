"""Issue 13 re-checked on session 20's code: what a demanding newcomer still hit."""

from __future__ import annotations

import subprocess

import click
import pytest

from cli_run import SEED, one_line_exit_2, run
from conftest import FIXTURES, doctor_cmd

LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]


def _command_paths():
    """Every (sub)command, from the click tree itself: a new one cannot slip past."""
    from sglang_doctor.cli.app import main

    todo = [((), main)]
    while todo:
        path, cmd = todo.pop()
        yield path
        if isinstance(cmd, click.Group):
            todo += [(path + (name,), sub) for name, sub in cmd.commands.items()]


@pytest.mark.parametrize("path", sorted(_command_paths()), ids=lambda p: " ".join(p) or "main")
def test_every_command_has_two_examples_and_its_exit_codes(path):
    r = run(*path, "--help")
    assert r.returncode == 0, r.stderr
    assert "Examples:" in r.stdout and "Exit codes:" in r.stdout, r.stdout
    examples = r.stdout.split("Examples:", 1)[1].split("\n\n", 1)[0]
    assert examples.count("sglang-doctor") >= 2 or examples.count("|") >= 2, examples


@pytest.mark.parametrize("opts, needle", [
    (["--flush-after", "abc"], "no such option: --flush-after"),  # watch's option, not run's
    (["--max-attempt", "3"], "did you mean --max-attempts?"),
    (["--bogus"], "no such option: --bogus"),
])
def test_run_names_an_option_it_does_not_have_instead_of_running_it(opts, needle):
    # before: `would run: --flush-after abc -- python ...`, exit 0 (and without --dry-run it
    # would have tried to execute "--flush-after")
    r = run("run", "--dry-run", *opts, "--", *LAUNCH)
    one_line_exit_2(r, needle, "after --")
    assert "would run" not in r.stdout


@pytest.mark.parametrize("opts, needle", [
    (["--gpus", "zz"], "--gpus zz: unknown GPU profile"),
    (["--model-config", str(FIXTURES / "seed" / "seed_full.log")], "--model-config"),
    (["--rules", "/nonexistent-rules-dir"], "--rules /nonexistent-rules-dir"),
])
def test_run_dry_run_validates_the_common_options_too(opts, needle):
    r = run("run", "--dry-run", *opts, "--", *LAUNCH)
    one_line_exit_2(r, needle)
    assert "would run" not in r.stdout


def test_check_names_an_option_it_does_not_have_instead_of_checking_it_as_a_sglang_flag():
    # before: "FAIL [flags] --bogus is not a flag of SGLang", "unexpected argument 'python'", exit 1
    r = run("check", "--bogus", "--", *LAUNCH)
    one_line_exit_2(r, "no such option: --bogus")


def test_check_takes_gpu_sm_for_a_custom_capacity_as_the_readme_says():
    r = run("check", "--gpus", "48GiBx2", "--gpu-sm", "8.6", "--", *LAUNCH)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "SM86" in r.stdout and "gpu-sm" not in r.stdout
    one_line_exit_2(run("check", "--gpu-sm", "abc", "--", *LAUNCH), "--gpu-sm abc")


@pytest.mark.parametrize("opts, needle", [
    (["--sglang-version", "banana"], "--sglang-version banana: not an SGLang version"),
    (["--model-config", SEED], "--model-config"),
])
def test_check_errors_name_the_option_as_explains_do(opts, needle):
    one_line_exit_2(run("check", *opts, "--", *LAUNCH), needle)


def test_rules_show_suggests_the_closest_rule_id():
    r = run("rules", "show", "memory.kv_pool.not_enough_memry")
    one_line_exit_2(r, "did you mean memory.kv_pool.not_enough_memory?")


def test_one_line_of_input_is_one_line_in_the_words_too():
    r = subprocess.run(doctor_cmd("-", "--format", "text"), input="hello\n", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0
    assert "no failure is in this line:" in r.stdout and "these 1 lines" not in r.stdout


def test_run_summary_says_interrupted_once():
    from sglang_doctor.report import run_summary_text

    text = run_summary_text({"event": "run_summary", "outcome": "interrupted", "attempts": 1, "seconds": 9.0,
                             "reason": "interrupted: the server was stopped", "history": "serve.log.attempts.json"})
    first = text.splitlines()[0]
    assert first == "run: interrupted after 1 attempt (9.0 s): the server was stopped", first


def test_empty_standard_input_is_not_called_a_file():
    r = subprocess.run(doctor_cmd("-", "--format", "text"), input="", capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert "standard input: it is empty" in r.stderr and "file" not in r.stderr, r.stderr


def test_run_takes_gpu_sm_like_the_other_commands():
    one_line_exit_2(run("run", "--dry-run", "--gpu-sm", "abc", "--", *LAUNCH), "--gpu-sm abc")
    r = run("run", "--dry-run", "--gpus", "48GiBx2", "--gpu-sm", "8.6", "--", *LAUNCH)
    assert r.returncode == 0 and "would run: " + " ".join(LAUNCH) in r.stdout, (r.stdout, r.stderr)
