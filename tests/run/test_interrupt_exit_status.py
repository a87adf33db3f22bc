"""Ctrl-C and SIGTERM end with the exit status we choose (130 / 143), wherever they land.

CPython remembers in a process-wide flag that exactly KeyboardInterrupt left code run by
``exec`` of a string (dataclasses build their methods so: a Ctrl-C that lands in a lazy
import does it) and then ends the process by SIGINT (status -2) even after the exception was
caught and ``sys.exit(130)`` was called - when the program runs as ``python -m`` (a script or
``-c`` exits from inside SystemExit's handling and skips the flag).  ``python -m sglang_doctor
run`` hit this in CI, about once in 40 interrupts.
Our handlers raise subclasses (sglang_doctor/interrupts.py), which do not set the flag.

Each case is a real interpreter running a module with ``-m``: the signal is raised inside ``exec``'d code, the exception is
caught and the process asks for 130 or 143.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

CATCH = textwrap.dedent("""
    try:
        exec("import signal; signal.raise_signal(signal.{sig})")
    except KeyboardInterrupt as exc:
        sys.exit(143 if type(exc).__name__ == "Terminated" else 130)
    sys.exit(0)
""")


def run(tmp_path, setup: str, sig: str) -> int:
    (tmp_path / "interrupted_here.py").write_text("import signal, sys\n" + textwrap.dedent(setup)
                                                  + CATCH.format(sig=sig))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "interrupted_here"], cwd=tmp_path, env=env, timeout=60,
                          capture_output=True).returncode


# Python installs its own SIGINT handler at start only when SIGINT is not ignored; a test run in
# the background of a script inherits it ignored, so the handler is set as a foreground start sets it.
PYTHON_START = "signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def test_premise_python_own_handler_exits_by_sigint(tmp_path):
    """What the subclasses avoid: Python's KeyboardInterrupt, caught, still ends the process by SIGINT."""
    assert run(tmp_path, PYTHON_START, "SIGINT") == -signal.SIGINT


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_our_handlers_keep_the_chosen_status(tmp_path, sig, code):
    assert run(tmp_path, "from sglang_doctor import interrupts\ninterrupts.install()\n", sig) == code


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_supervisor_handler_keeps_the_chosen_status(tmp_path, sig, code):
    setup = f"""
        from pathlib import Path
        from sglang_doctor.run.supervisor import RunOptions, Supervisor
        sup = Supervisor(RunOptions(command=["true"], log=Path("server.log")),
                         lambda cmd: None, lambda ev: None, None)
        signal.signal(signal.SIGINT, sup._interrupted)
        signal.signal(signal.SIGTERM, sup._interrupted)
    """
    assert run(tmp_path, setup, sig) == code


def test_cli_replaces_python_default_sigint_handler(tmp_path):
    assert run(tmp_path, PYTHON_START + "from sglang_doctor import interrupts\n"
                         "interrupts.replace_default_sigint()\n", "SIGINT") == 130


def test_cli_leaves_an_ignored_sigint_ignored(tmp_path):
    """Started in the background of a script (SIGINT ignored), a one-shot command stays so."""
    setup = ("signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
             "from sglang_doctor import interrupts\ninterrupts.replace_default_sigint()\n")
    assert run(tmp_path, setup, "SIGINT") == 0
