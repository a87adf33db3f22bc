"""`watch` on real files: late file, truncation (copytruncate), rename + recreate, Ctrl-C."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from conftest import doctor_cmd


def _lines(path):
    return path.read_bytes().split(b"\n")


def _next_incident(proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            ev = json.loads(line)
            if ev["event"] == "incident":
                return ev
    raise AssertionError("no incident reported in time")


@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_watch_survives_late_file_truncation_and_rotation(tmp_path, seed_full, poll):
    lines = _lines(seed_full)
    launch1 = b"\n".join(lines[:66]) + b"\n"
    launch2 = b"\n".join(lines[66:132]) + b"\n"
    log = tmp_path / "later" / "sglang-serve.log"
    args = ["watch", str(log), "--format", "json", "--poll-interval", "0.1", "--flush-after", "0.3"]
    proc = subprocess.Popen(doctor_cmd(*args, *(["--poll"] if poll else [])),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        log.parent.mkdir()
        with open(log, "wb") as fh:  # appears late, in a directory that appeared late
            fh.write(launch1)
        inc = _next_incident(proc)
        assert inc["ranks"] == ["TP0", "TP1"] and "mem_fraction_static=0.85" in inc["traceback"]
        with open(log, "r+b") as fh:  # copytruncate, then the relaunch appends
            fh.truncate(0)
        time.sleep(0.3)
        with open(log, "ab") as fh:
            fh.write(launch2)
        inc = _next_incident(proc)
        assert "mem_fraction_static=0.88" in inc["traceback"].splitlines()[-2]
        os.rename(log, str(log) + ".1")  # rotation: rename away, recreate
        with open(log, "wb") as fh:
            fh.write(launch1)
        inc = _next_incident(proc)
        assert "mem_fraction_static=0.85" in inc["traceback"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_watch_a_directory_is_an_input_error(tmp_path):
    r = subprocess.run(doctor_cmd("watch", str(tmp_path)), capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr
