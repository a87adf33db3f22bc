"""A Ctrl-C / SIGTERM that lands at a bad point of the live loop still ends it cleanly.

The signal is injected deterministically, not by timing: a wrapper runs the real CLI in a
subprocess under a profile hook that sends SIGTERM to the process at one chosen point (right
after a lock inside ``threading.Event.clear`` was taken, from the follower's ``read``).  Before
the fix the handler raised there, leaving the event's lock held; ``Follower.close`` then waited
on it for ever and ``watch`` never exited."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEED = FIXTURES / "seed" / "seed_full.log"

WRAPPER = r'''
import os, signal, sys, threading
from sglang_doctor import report
state = {"armed": False, "sent": False}
orig = report.Reporter.message
def message(self, text, *a, **k):
    out = orig(self, text, *a, **k)
    if text.startswith("still following"):
        state["armed"] = True  # the incident is out: the next turn of the loop gets the signal
    return out
report.Reporter.message = message

def hook(frame, event, arg):
    # the point: the C lock of Event.clear's condition was just taken, its `with` not yet entered
    if (state["armed"] and not state["sent"] and event == "c_return"
            and frame.f_code.co_name == "__enter__" and frame.f_back is not None
            and frame.f_back.f_code.co_name == "clear" and frame.f_back.f_back is not None
            and frame.f_back.f_back.f_code.co_name == "read"):
        state["sent"] = True
        sys.setprofile(None)
        sys.stderr.write("injected SIGTERM\n")
        os.kill(os.getpid(), signal.SIGTERM)
sys.setprofile(hook)
from sglang_doctor.cli.app import main
sys.argv = ["sglang-doctor"] + sys.argv[1:]
main()
'''


def test_sigterm_inside_the_followers_wake_up_lock_still_exits_143(tmp_path):
    log = tmp_path / "serve.log"
    lines = SEED.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join(lines[:66]) + b"\n")
    wrapper = tmp_path / "inject.py"
    wrapper.write_text(WRAPPER)
    proc = subprocess.Popen([sys.executable, str(wrapper), "watch", str(log), "--format", "text",
                             "--poll-interval", "0.1", "--flush-after", "0.3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)  # a bound for a hang, not a timing assumption
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("watch hung after a SIGTERM inside Event.clear: " + err.decode(errors="replace")[-2000:])
    assert b"injected SIGTERM" in err  # the signal came at the chosen point
    assert proc.returncode == 143, err.decode(errors="replace")[-3000:]
    assert b"-- incident" in out and b"Traceback" not in err


def test_sigterm_while_the_pipe_is_being_fed_exits_143_and_reports_the_incident(tmp_path):
    """Pipe mode: a SIGTERM half-way through feeding the pipeline is acted on at the next safe
    point; what was read is finished and reported, the summary follows."""
    wrapper = tmp_path / "inject.py"
    wrapper.write_text(r'''
import os, signal, sys
from sglang_doctor import pipeline
orig = pipeline.StreamPipeline.feed
calls = {"n": 0}
def feed(self, data):
    calls["n"] += 1
    if calls["n"] == 1:
        os.kill(os.getpid(), signal.SIGTERM)  # lands inside the first feed
    return orig(self, data)
pipeline.StreamPipeline.feed = feed
from sglang_doctor.cli.app import main
sys.argv = ["sglang-doctor"] + sys.argv[1:]
main()
''')
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, str(wrapper), "-", "--format", "text"], stdin=r,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(r)
    os.write(w, SEED.read_bytes()[:60000])  # the input stays open: only the signal ends it
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(w)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err.decode(errors="replace")[-3000:]
    assert b"Traceback (most recent call last)" not in err
    assert b"summary:" in out


def test_inside_deferred_the_first_signal_waits_for_a_safe_point_and_a_second_one_raises_at_once():
    import pytest

    from sglang_doctor import interrupts

    with pytest.raises(interrupts.Terminated):
        with interrupts.deferred():
            interrupts.raise_for(signal.SIGTERM, None)  # noted, not raised: the code goes on
            reached = True
            interrupts.check()  # the safe point raises it
    assert reached
    with pytest.raises(interrupts.Interrupted) as second:
        with interrupts.deferred():
            interrupts.raise_for(signal.SIGINT, None)
            interrupts.raise_for(signal.SIGINT, None)  # a second Ctrl-C: no more waiting
    assert not isinstance(second.value, interrupts.Terminated)
    interrupts.take()  # the noted first one, forgotten: nothing leaks into the next test
    with pytest.raises(interrupts.Terminated):  # outside deferred(): raised at once, as before
        interrupts.raise_for(signal.SIGTERM, None)
