"""``run --via ssh ...`` against a real OpenSSH server on 127.0.0.1 (issue 11, findings 2 and 3).

The test starts its own ``sshd`` (Debian's openssh-server, installed by scripts/test) with a
throwaway host key and client key and ``AuthorizedKeysFile`` in the test's directory, on a
free port of 127.0.0.1.  The "remote" side is this machine, so /proc shows its processes:
after every exit path no process whose command line holds the test's marker may be left
(the local ssh client included).  Values with spaces arrive whole; ``$(...)``, ``;`` and
backticks in any field are never executed (a canary file must not appear).

Without sshd the tests skip, except in CI (``CI=true``) or with
``SGLANG_DOCTOR_REQUIRE_SSH=1``, where they fail.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, doctor_cmd, processes_mentioning


STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


def _require_ssh() -> bool:
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("SGLANG_DOCTOR_REQUIRE_SSH") == "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ssh_prefix(tmp_path_factory) -> list[str]:
    if SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        if _require_ssh():
            pytest.fail("sshd/ssh are not installed (scripts/test installs openssh-server)")
        pytest.skip("OpenSSH server not installed")
    d = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / 'sshd.pid'}\nStrictModes no\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"
        "LogLevel ERROR\nMaxStartups 100\nMaxSessions 100\n")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=open(d / "sshd.err", "wb"))
    prefix = ["ssh", "-p", str(port), "-i", str(d / "client_key"), "-o", "StrictHostKeyChecking=no",
              "-o", f"UserKnownHostsFile={d / 'known_hosts'}", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
              f"{getpass.getuser()}@127.0.0.1"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, capture_output=True).returncode == 0:
            break
        if sshd.poll() is not None:
            break
        time.sleep(0.2)
    else:
        sshd.kill()
        pytest.fail(f"sshd did not come up: {(d / 'sshd.err').read_text()[-2000:]}")
    if sshd.poll() is not None:
        pytest.fail(f"sshd exited: {(d / 'sshd.err').read_text()[-2000:]}")
    yield prefix
    sshd.terminate()
    sshd.wait(timeout=10)


def left(marker: str, timeout: float = 20) -> list[str]:
    """Processes (remote ones and the local ssh client) still holding the marker."""
    deadline = time.monotonic() + timeout
    while processes_mentioning(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    out = []
    for pid in processes_mentioning(marker):
        try:
            out.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()[:200])
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return out


def hostile_command(tmp_path: Path, marker: str, port: int, *extra: str) -> tuple[list[str], Path]:
    """The stand-in with a model path holding spaces and a load format full of shell syntax."""
    canary = tmp_path / "canary"
    c = shlex.quote(str(canary))
    return [sys.executable, STANDIN, "--model-path", f"/models/my model {marker}",
            "--load-format", f"$(touch {c});touch {c};`touch {c}`|x>y&", "--host", "127.0.0.1",
            "--port", str(port), *extra], canary


def doctor(tmp_path: Path, via: list[str], command: list[str], *opts: str, env: dict | None = None,
           timeout: float = 120):
    log = tmp_path / "server.log"
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--settle", "1",
                           "--stop-grace", "3", "--via", shlex.join(via), *opts, "--", *command],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    events = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    return proc, events, hist


@pytest.mark.slow
def test_until_ready_over_ssh_values_arrive_whole_and_nothing_is_left(ssh_prefix, tmp_path):
    marker = f"via-ready-{os.getpid()}"
    command, canary = hostile_command(tmp_path, marker, free_port())
    proc, events, hist = doctor(tmp_path, ssh_prefix, command, "--until-ready")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (launch,) = [e for e in events if e["event"] == "launch"]
    assert launch["server_args"]["model_path"] == f"/models/my model {marker}"  # whole, spaces and all
    assert launch["server_args"]["load_format"] == command[command.index("--load-format") + 1]  # literal
    assert [e for e in events if e["event"] == "healthy"]
    assert hist["outcome"] == "ready"
    assert left(marker) == []
    assert not canary.exists()


@pytest.mark.slow
def test_health_check_over_ssh_never_uses_a_hostile_dump_host(ssh_prefix, tmp_path):
    marker = f"via-host-{os.getpid()}"
    canary = tmp_path / "canary"
    port = free_port()
    command = [sys.executable, STANDIN, "--model-path", f"/models/{marker}", "--port", str(port)]
    dump_host = f"127.0.0.1;touch {canary};echo $(touch {canary}) `touch {canary}`"
    # ssh does not pass our environment: the far side's stand-in gets it inside the command
    proc, events, hist = doctor(tmp_path, ssh_prefix, ["env", f"STANDIN_DUMP_HOST={dump_host}", *command],
                                "--until-ready")
    assert any(e["event"] == "launch" and e["server_args"].get("host") == dump_host for e in events)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (healthy,) = [e for e in events if e["event"] == "healthy"]
    assert healthy["url"] == f"http://127.0.0.1:{port}/health"
    assert not canary.exists()
    assert left(marker) == []


@pytest.mark.slow
def test_relaunch_over_ssh_leaves_one_server_at_a_time_and_none_after(ssh_prefix, tmp_path):
    marker = f"via-relaunch-{os.getpid()}"
    command = ["env", "STANDIN_MIN_MFS=0.8", sys.executable, STANDIN, "--model-path", f"/models/{marker}",
               "--host", "127.0.0.1", "--port", str(free_port()), "--mem-fraction-static", "0.5"]
    proc, events, hist = doctor(tmp_path, ssh_prefix, command, "--until-ready", "--yes")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [a["outcome"] for a in hist["attempts"]] == ["failed", "ready"]
    second = hist["attempts"][1]["command"]
    assert float(second[second.index("--mem-fraction-static") + 1]) > 0.8
    assert left(marker) == []


@pytest.mark.slow
def test_give_up_over_ssh_exits_1_and_leaves_nothing(ssh_prefix, tmp_path):
    marker = f"via-giveup-{os.getpid()}"
    command = ["env", "STANDIN_MIN_MFS=0.99", sys.executable, STANDIN, "--model-path", f"/models/{marker}",
               "--port", str(free_port()), "--mem-fraction-static", "0.5"]
    proc, events, hist = doctor(tmp_path, ssh_prefix, command, "--until-ready", "--yes", "--max-attempts", "2")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert hist["outcome"] == "gave_up"
    assert left(marker) == []


def _background(tmp_path: Path, via: list[str], command: list[str]) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "server.log"
    proc = subprocess.Popen([*doctor_cmd(), "run", "--format", "json", "--log", str(log), "--stop-grace", "3",
                             "--via", shlex.join(via), "--", *command], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and "Load weight begin" in log.read_text(errors="replace"):
            return proc, log
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the remote stand-in did not start")


@pytest.mark.slow
@pytest.mark.parametrize("how,code", [("ctrl-c", 130), ("sigterm", 143), ("sigkill", -9)])
@pytest.mark.parametrize("shape", ["direct", "bash"])
def test_every_way_the_doctor_ends_stops_the_remote_server(ssh_prefix, tmp_path, how, code, shape):
    marker = f"via-{how}-{shape}-{os.getpid()}"
    base = [sys.executable, STANDIN, "--model-path", f"/models/{marker}", "--port", str(free_port())]
    command = ["env", "STANDIN_START_DELAY=120", *base]
    if shape == "bash":
        command = ["bash", "-c", shlex.join(command) + "; echo exited"]
    proc, log = _background(tmp_path, ssh_prefix, command)
    remote = [p for p in processes_mentioning(marker) if b"sglang_standin" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert remote, "the remote server runs"
    proc.send_signal({"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}[how])
    proc.wait(timeout=60)
    assert proc.returncode == code, proc.stderr.read().decode()[-2000:]
    assert left(marker) == [], f"left after {how}"
    if how != "sigkill":
        hist = json.loads(Path(f"{log}.attempts.json").read_text())
        assert hist["outcome"] == "interrupted"


@pytest.mark.slow
def test_a_program_missing_on_the_far_side_is_one_line_and_exit_2(ssh_prefix, tmp_path):
    log = tmp_path / "server.log"
    proc = subprocess.run([*doctor_cmd(), "run", "--log", str(log), "--via", shlex.join(ssh_prefix), "--",
                           "/nonexistent/sglang-python", "-m", "sglang.launch_server"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "command not found" in proc.stderr
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    assert hist["outcome"] == "error" and hist["attempts"][0]["outcome"] == "error"


@pytest.mark.parametrize("via,quote,shell", [("ssh -p 2222 root@gpu-box", "auto", True),
                                             ("/usr/bin/ssh gpu-box pct exec 129 --", "auto", True),
                                             ("pct exec 129 --", "auto", False),
                                             ("docker exec -i sglang", "none", False),
                                             ("my-remote-shell gpu-box", "shell", True)])
def test_dry_run_shows_what_the_prefix_receives(tmp_path, via, quote, shell):
    """Not slow, no sshd: the quoting rule on its own (README: which prefixes get quoting)."""
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/models/my model", "--served-model-name",
               "$(touch x);`id`"]
    proc = subprocess.run([*doctor_cmd(), "run", "--format", "json", "--dry-run", "--via", via, "--via-quote", quote,
                           "--log", str(tmp_path / "s.log"), "--", *command], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    (event,) = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    prefix = shlex.split(via)
    assert event["command"][:len(prefix)] == prefix
    rest = event["command"][len(prefix):]
    assert rest == ([shlex.join(command)] if shell else command)
    if shell:
        assert shlex.split(rest[0]) == command  # the remote shell gets every element back whole
