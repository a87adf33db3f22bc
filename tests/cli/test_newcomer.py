"""What a newcomer meets: option validation, help, warnings, odd inputs, signals (issue 13)."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from cli_run import SEED, one_line_exit_2, run
from conftest import FIXTURES, doctor_cmd


# -- validation before any work -----------------------------------------------------------


@pytest.mark.parametrize("args, needles", [
    (["watch", "--poll-interval", "-1", "x.log"], ["--poll-interval"]),
    (["watch", "--poll-interval", "0", "x.log"], ["--poll-interval"]),
    (["watch", "--flush-after", "-5", "x.log"], ["--flush-after"]),
    (["-", "--flush-after", "-5"], ["--flush-after"]),
    (["-", "--flush-after", "nan"], ["--flush-after"]),
    (["watch", "--poll-interval", "inf", "x.log"], ["--poll-interval"]),
    (["watch", "--confirm-after", "nan", "x.log"], ["--confirm-after"]),
    (["explain", "--sglang-version", "banana", SEED], ["--sglang-version banana: not an SGLang version"]),
    (["watch", "--sglang-version", "banana", "x.log"], ["--sglang-version banana"]),
    (["explain", "--gpus", "a6000x0", SEED], ["--gpus a6000x0: GPU count must be >= 1"]),
    (["explain", "--gpus", "b300", SEED], ["unknown GPU profile", "h100-80", "48GiBx2"]),
    (["explain", "--gpus", "48GiBx2", "--gpu-sm", "x", SEED], ["--gpu-sm x"]),
    (["explain", "--rules", "/nope", SEED], ["--rules /nope: no such directory"]),
    (["explain", "--format", "bogus", SEED], ["--format"]),
    (["explain"], ["LOGFILE"]),
    (["nosuchcommand"], ["nosuchcommand"]),
])
def test_bad_options_are_one_line_and_exit_2(args, needles):
    one_line_exit_2(run(*args), *needles)


@pytest.mark.parametrize("content", ['{"foo": 1}', "[1, 2]", "not json"])
def test_explain_refuses_a_model_config_that_is_not_one(tmp_path, content):
    cfg = tmp_path / "config.json"
    cfg.write_text(content)
    r = run("explain", "--model-config", str(cfg), SEED)
    one_line_exit_2(r, f"--model-config {cfg}")
    assert "KeyError" not in r.stderr and r.stdout == ""  # refused before any output


def test_validation_happens_before_the_file_is_read(tmp_path):
    r = run("explain", "--gpus", "a6000x0", str(tmp_path / "missing.log"))
    one_line_exit_2(r, "GPU count")  # the option, not the missing file


def test_custom_gpu_capacity_is_accepted_everywhere(tmp_path):
    r = run("explain", "--format", "json", "--gpus", "23034MiBx4", "--gpu-sm", "8.6", SEED)
    assert r.returncode == 1, r.stderr
    r = run("plan", "--model-config", str(FIXTURES / "models" / "llama3_1_8b.json"), "--gpus", "48GiBx2",
            "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["gpus"]["total_gib"] == 48.0


# -- warnings once, summaries -------------------------------------------------------------


def test_the_planner_warning_is_printed_once_before_the_summary():
    r = run("explain", "--format", "text", SEED)
    assert r.stderr.count("memory planner was skipped") == 1, r.stderr
    r = run("explain", "--format", "text", SEED, SEED)  # two files: still once per run
    assert r.stderr.count("memory planner was skipped") == 1, r.stderr


def test_the_warning_comes_before_the_summary_on_a_terminal_like_stream():
    proc = subprocess.run(doctor_cmd("explain", "--format", "text", SEED), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    warning = next(i for i, x in enumerate(lines) if "memory planner was skipped" in x)
    summary = next(i for i, x in enumerate(lines) if x.startswith("summary:"))
    assert warning < summary and summary == len(lines) - 1


def test_no_planner_warning_for_a_log_without_launches(tmp_path):
    log = tmp_path / "bare.log"
    log.write_text("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    r = run("explain", "--format", "text", str(log))
    assert "planner was skipped" not in r.stderr


def test_pipe_mode_prints_warnings_and_a_summary_at_eof():
    with open(SEED, "rb") as fh:
        r = subprocess.run(doctor_cmd("-", "--format", "text"), stdin=fh, capture_output=True, timeout=120)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 1
    assert out.splitlines()[-1] == "summary: 2 incidents in 2 launches, 132 lines read"
    assert err.count("memory planner was skipped") == 1
    with open(SEED, "rb") as fh:
        r = subprocess.run(doctor_cmd("-", "--format", "json"), stdin=fh, capture_output=True, timeout=120)
    last = json.loads(r.stdout.splitlines()[-1])
    assert last["event"] == "summary" and last["incidents"] == 2


# -- odd inputs ---------------------------------------------------------------------------


def test_empty_and_binary_inputs_get_a_hint(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "core.log"
    binary.write_bytes(bytes(range(256)) * 64)
    r = run("explain", str(empty))
    assert r.returncode == 0 and "is empty" in r.stderr
    r = run("explain", str(binary))
    assert r.returncode == 0 and "does not look like a log" in r.stderr
    with open(binary, "rb") as fh:
        r = subprocess.run(doctor_cmd("-"), stdin=fh, capture_output=True, timeout=60)
    assert r.returncode == 0 and b"does not look like a log" in r.stderr
    r = run("explain", SEED)  # a real log gets no such hint
    assert "does not look like" not in r.stderr and "is empty" not in r.stderr


# -- wording --------------------------------------------------------------------------------


def test_wording_one_line_and_one_line_read(tmp_path):
    log = tmp_path / "one.log"
    log.write_text("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n")
    r = run("explain", "--format", "text", str(log))
    assert "line 1;" in r.stdout and "lines 1-1" not in r.stdout
    assert "1 line read" in r.stdout and "1 lines" not in r.stdout


def test_no_empty_traceback_header(tmp_path):
    log = tmp_path / "port.log"
    log.write_text("[2026-12-02 15:53:01] server_args={'model_path': '/m', 'host': '127.0.0.1', 'port': 31003}\n"
                   "[2026-12-02 15:53:22] ERROR:    [Errno 98] error while attempting to bind on address "
                   "('127.0.0.1', 31003): address already in use\n")
    r = run("explain", "--format", "text", str(log))
    assert r.returncode == 1
    assert "traceback" not in r.stdout.lower()  # no Python traceback here, and none is announced
    assert "the log's line about it:" in r.stdout
    empty = tmp_path / "empty_tb.log"  # an incident with no text at all has no box or header
    from sglang_doctor.report import text_incident

    text = text_incident({"category": "other", "rule": "x", "title": "t", "lines": [3, 3], "phase": "unknown",
                          "confidence": 0.5, "traceback": "", "kind": "signal"})
    assert "traceback" not in text and ":\n   |" not in text


def test_run_summary_in_plain_english():
    from sglang_doctor.report import run_summary_text

    text = run_summary_text({"outcome": "gave_up", "attempts": 1, "seconds": 3.0, "reason": "no rule knows it",
                             "history": "x.attempts.json"})
    assert "gave_up" not in text and "attempt(s)" not in text
    assert text.startswith("run: gave up after 1 attempt;")
    assert "ready after 2 attempts" in run_summary_text({"outcome": "ready", "attempts": 2, "reason": "",
                                                         "history": "h"})


# -- help -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["explain"], ["watch"], ["-"], ["run"], ["plan"], ["rules"]])
def test_help_has_examples_exit_codes_and_describes_every_option(command):
    r = run(*command, "--help")
    assert r.returncode == 0
    text = r.stdout
    assert "Examples:" in text and "Exit codes:" in text
    examples = text.split("Examples:", 1)[1].split("\n\n", 1)[0]
    assert examples.count("sglang-doctor") >= 2 or examples.count("|") >= 2


def _commands():
    import click

    from sglang_doctor.cli.app import main

    todo = [main]
    while todo:
        cmd = todo.pop()
        yield cmd
        if isinstance(cmd, click.Group):
            todo += list(cmd.commands.values())


def test_every_option_of_every_command_is_described():
    import click

    missing = [f"{cmd.name} {p.opts[0]}" for cmd in _commands() for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()
               and p.opts[0] not in ("--version",)]
    assert not missing, missing


def test_run_usage_shows_the_separator():
    r = run("run", "--help")
    assert "Usage: sglang-doctor run [OPTIONS] -- CMD" in r.stdout


def test_binary_input_choice_is_documented():
    assert "binary" in run("explain", "--help").stdout


# -- watch: SIGTERM, status line -------------------------------------------------------------


def _start_watch(log, *extra):
    return subprocess.Popen(doctor_cmd("watch", str(log), "--format", "text", "--poll-interval", "0.1",
                                       "--flush-after", "0.3", *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _read_until(proc, needle: bytes, timeout=30.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
    return seen


def test_watch_says_it_is_still_following_and_sigterm_exits_143(tmp_path):
    log = tmp_path / "serve.log"
    lines = open(SEED, "rb").read().split(b"\n")
    log.write_bytes(b"\n".join(lines[:66]) + b"\n")
    proc = _start_watch(log)
    try:
        seen = _read_until(proc, b"still following")
        assert b"-- incident" in seen and b"still following " + str(log).encode() in seen
        assert seen.index(b"still following") > seen.index(b"-- incident")
        ready, _, _ = select.select([proc.stderr], [], [], 10)  # the warning comes with the incident,
        assert ready and b"memory planner was skipped" in os.read(proc.stderr.fileno(), 65536)  # not at exit
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=30)
        rest = proc.stderr.read()
        assert status == 143, rest.decode(errors="replace")[-3000:]  # what it said instead, if it failed
        assert b"memory planner was skipped" not in rest  # ... and only once
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_budget_is_one_gib_table_with_failed_and_proposed_columns():
    r = run("explain", "--format", "text", "--model-config", str(FIXTURES / "models" / "qwen3_6_27b_like.json"), SEED)
    out = r.stdout
    assert " GB" not in out and "(GB)" not in out
    assert out.count("memory budget per GPU:") == 2
    block = out.split("memory budget per GPU:")[1].split("\n== ")[0].splitlines()
    assert block[1].split() == ["failed", "launch", "proposed", "launch"]
    names = [line.split("  ")[2] if line.startswith("     ") else "" for line in block[2:]]
    rows = [line.strip() for line in block[2:] if line.strip()]
    assert sum(1 for x in rows if "headroom" in x) == 1  # one headroom row, not two
    widths = {len(x) for x in block[2:] if x.strip() and not x.strip().startswith("summary")}
    assert len(widths) <= 2  # the value columns line up (rows end at the same column)
    assert any(x.startswith("fits") and x.split()[-1] == "yes" and "NO:" in x for x in rows)
    assert "(GiB)" in out and names


def test_a_bad_config_at_the_model_path_is_one_clear_warning(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"foo": 1}')
    log = tmp_path / "seed.log"
    log.write_bytes(open(SEED, "rb").read().replace(b"/root/models/Qwen3.6-27B", str(model).encode()))
    r = run("explain", "--format", "json", str(log))
    assert r.returncode == 1
    assert "KeyError" not in r.stderr and "remediation failed" not in r.stderr
    assert r.stderr.count(f"{model}/config.json is not a model config.json") == 1


@pytest.mark.parametrize("flags, needle", [
    (["--tp-sise", "2", "--mem-fraction-static", "7"], "--tp-sise is not a flag of SGLang"),
    (["--mem-fraction-static", "7"], "--mem-fraction-static 7: must be > 0 and < 1"),
    (["--mem-fraction-static", "abc"], "--mem-fraction-static: invalid float value 'abc'"),
])
def test_run_dry_run_refuses_launch_flags_that_cannot_work(flags, needle):
    r = run("run", "--dry-run", "--", "python", "-m", "sglang.launch_server", "--model-path", "/m", *flags)
    one_line_exit_2(r, needle)
    assert "would run" not in r.stdout


def test_run_dry_run_still_shows_a_good_launch_and_other_programs():
    r = run("run", "--dry-run", "--format", "text", "--", "python", "-m", "sglang.launch_server",
            "--model-path", "/m", "--tp-size", "2")
    assert r.returncode == 0 and "would run: python -m sglang.launch_server" in r.stdout
    r = run("run", "--dry-run", "--format", "text", "--", "bash", "start.sh", "--anything")
    assert r.returncode == 0 and "would run: bash start.sh --anything" in r.stdout
