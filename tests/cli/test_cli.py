import gzip
import json
import os
import select
import subprocess
import sys
import time

from conftest import doctor_cmd

HEALTHY = b"""[2026-12-02 15:13:08] server_args={'model_path': '/m', 'tp_size': 1, 'mem_fraction_static': 0.716}
[2026-12-02 15:13:26] Load weight begin. avail mem=21.75 GB
[2026-12-02 15:14:17] INFO:     Uvicorn running on http://127.0.0.1:31000 (Press CTRL+C to quit)
[2026-12-02 15:14:19] The server is fired up and ready to roll!
[2026-12-02 15:14:56] Decode batch, #running-req: 4, #token: 141, token usage: 0.00, cpu graph: False, gen throughput (token/s): 3.54, #queue-req: 0
"""


def run(*args, **kw):
    return subprocess.run(doctor_cmd(*args), capture_output=True, text=True, timeout=60, **kw)


def events(stdout: str):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_explain_seed_json(seed_full):
    r = run("explain", str(seed_full), "--format", "json")
    assert r.returncode == 1, r.stderr
    evs = events(r.stdout)
    assert [e["event"] for e in evs if e["event"] != "milestone"] == ["launch", "incident", "launch", "incident", "summary"]
    inc = [e for e in evs if e["event"] == "incident"][1]
    assert inc["ranks"] == ["TP0", "TP1"] and inc["lines"] == [86, 132]
    assert "RuntimeError: Not enough memory" in inc["traceback"].splitlines()[-2]
    for key in ("rule", "category", "phase", "title", "explanation", "confidence", "exception", "frames",
                "truncated", "remediation"):
        assert key in inc
    assert evs[-1] == {"event": "summary", "incidents": 2, "launches": 2, "lines": 132}


def test_explain_text_prints_whole_traceback(seed_full, seed_tail):
    r = run("explain", str(seed_full))
    assert r.returncode == 1
    assert r.stdout.count("RuntimeError: Not enough memory") >= 4
    assert "launch 2 at line 70" in r.stdout
    r = run("explain", str(seed_tail), "--format", "json")
    (inc,) = [e for e in events(r.stdout) if e["event"] == "incident"]
    assert inc["truncated"] is True and len(inc["frames"]) == 4


def test_healthy_log_has_no_incident(tmp_path):
    p = tmp_path / "ok.log"
    p.write_bytes(HEALTHY)
    r = run("explain", str(p), "--format", "json")
    assert r.returncode == 0, r.stdout
    assert not [e for e in events(r.stdout) if e["event"] == "incident"]


def test_gzip_log(tmp_path, seed_full):
    p = tmp_path / "crash.log.gz"
    p.write_bytes(gzip.compress(seed_full.read_bytes()))
    r = run("explain", str(p), "--format", "json")
    assert r.returncode == 1 and events(r.stdout)[-1]["incidents"] == 2


def test_bad_input_is_one_line_exit_2(tmp_path):
    for target in (tmp_path / "missing.log", tmp_path):
        r = run("explain", str(target))
        assert r.returncode == 2
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run("explain", str(tmp_path / "x.log"), "--format", "bogus")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_unreadable_file(tmp_path):
    p = tmp_path / "secret.log"
    p.write_text("x\n")
    p.chmod(0)
    if os.access(p, os.R_OK):  # root reads anything: use a path that is a FIFO-less dir trick instead
        p.chmod(0o644)
        return
    r = run("explain", str(p))
    assert r.returncode == 2 and "permission denied" in r.stderr


def test_empty_and_no_newline_files(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert run("explain", str(empty)).returncode == 0
    one = tmp_path / "one.log"
    one.write_bytes(b"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    r = run("explain", str(one), "--format", "json")
    assert r.returncode == 1


def _read_event(proc, kind, timeout=10.0):
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        for line in buf.split(b"\n"):
            if line.strip():
                ev = json.loads(line)
                if ev["event"] == kind:
                    return ev
    raise AssertionError(f"no {kind} event within {timeout}s; got {buf[-500:]!r}")


def test_pipe_mode_reports_while_the_writer_holds_the_pipe_open(seed_full):
    text = seed_full.read_bytes()
    first_launch = b"\n".join(text.split(b"\n")[:66]) + b"\n"
    proc = subprocess.Popen(doctor_cmd("-", "--format", "json", "--flush-after", "0.3"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(first_launch)
        proc.stdin.flush()
        inc = _read_event(proc, "incident")
        assert inc["ranks"] == ["TP0", "TP1"] and proc.poll() is None
        # an incident whose terminal line never comes is reported after the idle gap
        proc.stdin.write(b'[2026-05-09 09:40:00] Scheduler hit an exception: Traceback (most recent call last):\n'
                         b'  File "/x/sglang/srt/a.py", line 1, in f\n    f()\nValueError: late\n')
        proc.stdin.flush()
        inc = _read_event(proc, "incident")
        assert inc["exception"]["message"] == "late"
        proc.stdin.close()
        assert proc.wait(10) == 1
    finally:
        proc.kill()
        proc.wait()


def test_no_torch_or_sglang_imported_at_start(seed_full):
    code = ("import sys, runpy; sys.argv=['sglang-doctor','explain',%r,'--format','json'];\n"
            "try:\n    runpy.run_module('sglang_doctor', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "bad=[m for m in ('torch','sglang') if m in sys.modules]; print('BAD', bad) if bad else print('CLEAN')") % str(seed_full)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().endswith("CLEAN"), r.stdout[-300:] + r.stderr[-300:]


def test_version_and_help():
    assert run("--version").returncode == 0
    assert "explain" in run("--help").stdout
