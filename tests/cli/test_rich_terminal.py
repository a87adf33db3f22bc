"""Rich output on a real terminal (a pty): wraps, never cuts; the fixed command is copyable.

The terminal is a pseudo-terminal of the given width with TERM and COLUMNS set, as a user's
would be; the test reads what the program wrote to it.
"""

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios

import pytest

from conftest import FIXTURES

CONFIG = FIXTURES / "models" / "qwen3_6_27b_like.json"
BORDERS = set("│╭╮╰╯─┃━┏┓┗┛╇┡┩")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(columns: int, *args: str, timeout: float = 120.0, stdin: str | None = None) -> tuple[str, int]:
    """Run sglang-doctor on a pty `columns` wide; (screen text without colour codes, exit code)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the program on a terminal of that size
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 60, columns, 0, 0))
        if stdin is not None:  # pipe mode: the log on standard input, the terminal for output
            os.dup2(os.open(stdin, os.O_RDONLY), 0)
        env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(columns))
        env.pop("NO_COLOR", None)
        os.execvpe(sys.executable, [sys.executable, "-m", "sglang_doctor", *args], env)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, 9)
            break
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    text = ANSI.sub("", out.decode("utf-8", "replace")).replace("\r\n", "\n")
    return text, os.waitstatus_to_exitcode(status)


def _text_mode(*args):
    import subprocess

    from conftest import doctor_cmd

    return subprocess.run(doctor_cmd(*args, "--format", "text"), capture_output=True, text=True, timeout=120).stdout


@pytest.mark.parametrize("columns", [80, 160])
def test_the_fixed_command_is_one_copyable_line(columns):
    seed = str(FIXTURES / "seed" / "seed_full.log")
    screen, code = on_terminal(columns, "explain", "--model-config", str(CONFIG), seed)
    assert code == 1
    commands = [line.strip()[len("command: "):] for line in _text_mode("explain", "--model-config", str(CONFIG), seed)
                .splitlines() if line.strip().startswith("command: ")]
    assert len(commands) == 2
    for command in commands:
        command = command.strip()
        assert len(command) > columns  # the test means something: the command is wider than the terminal
        # the whole command, joined, on the screen: no line break, indentation or border inside it
        assert any(line == command for line in screen.splitlines()), command
    for line in screen.splitlines():
        if line.startswith("python -m sglang.launch_server"):
            assert not BORDERS & set(line)


@pytest.mark.parametrize("columns", [80, 160])
def test_nothing_is_cut_at_the_border(columns):
    seed = str(FIXTURES / "seed" / "seed_full.log")
    screen, _ = on_terminal(columns, "explain", "--model-config", str(CONFIG), seed)
    flat = " ".join(re.sub(r"[│╭╮╰╯─┃━╇]", " ", screen).split())
    text = _text_mode("explain", "--model-config", str(CONFIG), seed)
    # every word of the explanation, the fix line, the notes and each alternative's changes
    # and trade-off reaches the screen (wrapped lines joined again)
    wanted = []
    squeezed = re.sub(r"\s", "", flat)
    for line in text.splitlines():
        body = line.strip().lstrip("| ").strip()
        if line.strip().startswith("| "):  # a traceback line: a long path folds, never vanishes
            assert re.sub(r"\s", "", body) in squeezed, body
        elif body.startswith(("fix:", "alternative", "SGLang sized", "launch 2 already", "launch 1 ran")):
            wanted.append(body.split(": ", 1)[1] if body.startswith("alternative") else body)
    assert wanted
    for piece in wanted:
        for part in piece.split("  -- "):
            assert " ".join(part.split()) in flat, part
    for line in screen.splitlines():
        assert len(line) <= columns or line.startswith("python -m sglang.launch_server")  # the terminal wraps that one


def test_a_fragment_is_not_called_complete():
    screen, code = on_terminal(80, "explain", str(FIXTURES / "seed" / "seed_tail20.log"))
    assert code == 1
    assert "traceback (complete)" not in screen
    assert "start and end are missing" in screen
    assert "TRUNCATED" in screen  # the header says the same as the box title


def test_long_traceback_lines_wrap_instead_of_being_cut(tmp_path):
    long_message = "ValueError: " + " ".join(f"word{i}" for i in range(60)) + " THE-END"
    log = tmp_path / "long.log"
    log.write_text("Traceback (most recent call last):\n"
                   '  File "/x/sglang/srt/entrypoints/http_server.py", line 1, in f\n'
                   "    f()\n" + long_message + "\n")
    screen, _ = on_terminal(80, "explain", str(log))
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", screen).split())
    assert "word59 THE-END" in flat and "word0 word1" in flat


def test_milestone_lines_wrap_between_figures_not_inside_them():
    log = str(FIXTURES / "healthy" / "ready_then_sigterm_0523.log")
    screen, _ = on_terminal(80, "-", stdin=log)
    import subprocess

    from conftest import doctor_cmd

    with open(log, "rb") as fh:
        text = subprocess.run(doctor_cmd("-", "--format", "text"), stdin=fh, capture_output=True, timeout=60).stdout
    figures = [tok for line in text.decode().splitlines() for tok in re.findall(r"[a-z_]+=[^,() ]+", line)]
    assert any(tok.startswith("max_total_num_tokens=") for tok in figures)
    assert any(len(line) > 80 for line in text.decode().splitlines())  # there is something to wrap
    for token in figures:  # every name=value pair is whole on one screen line
        assert any(token in line for line in screen.splitlines()), token
    for line in screen.splitlines():
        assert len(line) <= 80


def test_the_spinner_clock_moves():
    import time as _time

    from sglang_doctor.report import _LiveStatus
    from rich.console import Console

    status = _LiveStatus("loading weights (line 34)", _time.monotonic() - 7.2)
    console = Console(width=100, record=True)
    console.print(status)
    assert "loading weights (line 34), 7 s since the launch was seen" in console.export_text()
    status.t0 -= 5
    console.print(status)
    assert "12 s since the launch was seen" in console.export_text()
