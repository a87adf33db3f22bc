"""I/O failures and bad options of ``run``: one line, exit 2, nothing launched (issue 11, finding 7).

The permission case runs the doctor as an unprivileged user (``setpriv``) because root
passes every permission check; the read-only and full-disk cases mount a small tmpfs (they
skip where mounting is not allowed).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd, processes_mentioning

STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def standin(marker: str) -> list[str]:
    return [sys.executable, STANDIN, "--model-path", f"/models/{marker}", "--port", str(free_port())]


def run(*args: str, prefix: tuple[str, ...] = (), cwd: str | None = None):
    return subprocess.run([*prefix, *doctor_cmd(), "run", "--format", "json", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, cwd=cwd)


def one_line_exit_2(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture
def tmpfs(tmp_path):
    """A mount point for a small tmpfs, unmounted afterwards."""
    mounted = []

    def mount(options: str) -> Path:
        point = tmp_path / f"mnt{len(mounted)}"
        point.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


@pytest.mark.parametrize("args,words", [
    (["--ready-timeout", "0"], ["--ready-timeout", "> 0"]),
    (["--health-timeout", "-1"], ["--health-timeout"]),
    (["--ready-timeout", "nan"], ["--ready-timeout"]),
    (["--stop-grace", "-5"], ["--stop-grace"]),
    (["--health-url", "ftp://127.0.0.1:1/health"], ["--health-url", "http"]),
    (["--health-url", "http://127.0.0.1;touch x:80/health"], ["--health-url"]),
    (["--health-url", "http://127.0.0.1:99999/health"], ["--health-url"]),
    (["--pid-file", "/nonexistent-dir/x.pid", "--detach"], ["--pid-file", "does not exist"]),
    (["--pid-file", "x.pid"], ["--pid-file", "--detach"]),
    (["--log", "/nonexistent-dir/s.log"], ["--log", "does not exist"]),
    (["--via", "no-such-prefix-program host"], ["--via", "not found"]),
])
def test_bad_options_are_refused_before_anything_is_launched(tmp_path, args, words):
    marker = f"io-opts-{os.getpid()}"
    log_args = [] if "--log" in args else ["--log", str(tmp_path / "s.log")]
    proc = run(*log_args, *args, "--", *standin(marker), cwd=str(tmp_path))
    one_line_exit_2(proc, *words)
    assert not processes_mentioning(marker)
    assert not (tmp_path / "s.log").exists()


def test_a_log_directory_without_write_permission(tmp_path):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to run the doctor as another user")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="sglang-doctor-io-", dir="/tmp"))  # others may traverse /tmp
    os.chmod(base, 0o755)
    locked = base / "locked"
    locked.mkdir(mode=0o555)
    proc = run("--log", str(locked / "s.log"), "--", *standin("io-eacces"),
               prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"), cwd="/")
    try:
        one_line_exit_2(proc, "--log", "Permission denied")
    finally:
        shutil.rmtree(base)


def test_a_read_only_log_directory(tmpfs):
    ro = tmpfs("ro,size=64k")
    proc = run("--log", str(ro / "s.log"), "--", *standin("io-erofs"))
    one_line_exit_2(proc, "--log", "Read-only")


def test_a_full_disk_under_the_history_is_one_line_and_stops_the_server(tmpfs):
    full = tmpfs("size=32k")
    try:
        with open(full / "filler", "wb") as fh:  # fill it to the last byte
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError:
        pass
    marker = f"io-enospc-{os.getpid()}"
    proc = run("--log", str(full / "s.log"), "--until-ready", "--", *standin(marker))
    one_line_exit_2(proc, "No space left")
    assert not processes_mentioning(marker)
