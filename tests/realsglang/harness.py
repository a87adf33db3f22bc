"""Start, health-check and stop a real SGLang 0.5.23 server on this CPU-only machine.

Why this module exists: the slow tier (tests/test_real_sglang.py), the fixture capture
(tests/realsglang/capture.py) and the `run` supervisor's end-to-end test all need the same
few things done the same careful way:

- the launch argv and environment for a CPU launch (``--device cpu --load-format dummy``
  with the stubs of tests/realsglang/stubs/ on ``PYTHONPATH``) on a free port;
- readiness = SGLang's ready line in the log **and** ``GET /health`` answering 200;
- a stop that follows SGLang's own advice (sglang-notes §5): SIGTERM to the main PID only,
  a grace period, then SIGKILL to the whole process group, and a check that the group is
  really gone (``os.killpg(pgid, 0)`` raising ProcessLookupError), so no scheduler child
  is left holding memory.

Only the standard library is used: the tests run in the dev venv, SGLang in its own venv
(``sglang_python()``), so nothing here imports sglang or torch.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
STUBS = HERE / "stubs"
READY_LINE = "The server is fired up and ready to roll!"
DEFAULT_VENV = Path(
    os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache"))
) / "sglang-doctor" / "real-sglang-venv"
SGLANG_VERSION = "0.5.23"

# A small KV pool: without a cap SGLang sizes the pool from host RAM (65 M tokens, 15 GB,
# 40 s of allocation on this machine); 20000 tokens allocate in well under a second.
DEFAULT_FLAGS = ("--max-total-tokens", "20000")


class ServerExited(RuntimeError):
    """The server process ended before it was ready."""

    def __init__(self, returncode: int, log_tail: str):
        super().__init__(f"SGLang exited with code {returncode} before it was ready:\n{log_tail}")
        self.returncode = returncode
        self.log_tail = log_tail


class NotReady(TimeoutError):
    """The server did not become ready in time."""


def venv_dir() -> Path:
    """The venv scripts/install-real-sglang installs into: ``$SGLANG_VENV`` or the default."""
    return Path(os.environ.get("SGLANG_VENV") or DEFAULT_VENV)


def sglang_python() -> Path | None:
    """The interpreter of the real-SGLang venv, or None when SGLang 0.5.23 is not installed
    there.  ``$SGLANG_PYTHON`` names an interpreter directly."""
    explicit = os.environ.get("SGLANG_PYTHON")
    python = Path(explicit) if explicit else venv_dir() / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('sglang'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or probe.stdout.strip() != SGLANG_VERSION:
        return None
    return python


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class Launch:
    """One launch: the argv (a list, never a shell string), its environment and address."""

    argv: list[str]
    env: dict[str, str]
    host: str
    port: int

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def launch_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict:
    """The environment of a CPU launch: the stubs first on PYTHONPATH, unbuffered output."""
    env = dict(os.environ if base is None else base)
    paths = [str(STUBS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def launch_argv(
    model_dir: Path | str,
    port: int,
    *,
    python: Path | str | None = None,
    host: str = "127.0.0.1",
    device: str | None = "cpu",
    extra_args: list[str] | tuple[str, ...] = DEFAULT_FLAGS,
) -> list[str]:
    """``python -m sglang.launch_server ...`` for a CPU launch with dummy weights.

    ``device=None`` leaves ``--device`` out (to reproduce SGLang's "No accelerator" error).
    """
    python = python or sglang_python() or sys.executable
    argv = [str(python), "-m", "sglang.launch_server", "--model-path", str(model_dir)]
    if device:
        argv += ["--device", device]
    argv += ["--load-format", "dummy", "--host", host, "--port", str(port)]
    return argv + list(extra_args)


def build_launch(
    model_dir: Path | str,
    *,
    port: int | None = None,
    python: Path | str | None = None,
    host: str = "127.0.0.1",
    device: str | None = "cpu",
    extra_args: list[str] | tuple[str, ...] = DEFAULT_FLAGS,
    env: dict[str, str] | None = None,
) -> Launch:
    """Argv and environment of a real CPU launch on ``port`` (a free one by default)."""
    port = port or free_port(host)
    argv = launch_argv(
        model_dir, port, python=python, host=host, device=device, extra_args=extra_args
    )
    return Launch(argv=argv, env=launch_env(env), host=host, port=port)


def start(launch: Launch, log_path: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start the server in a new session (its own process group), stdout+stderr to the log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            launch.argv,
            env=launch.env,
            cwd=str(cwd) if cwd else None,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def http_status(url: str, timeout: float = 30.0) -> int | None:
    """The HTTP status of a GET, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, OSError):
        return None


def log_tail(log_path: Path, lines: int = 30) -> str:
    try:
        text = log_path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_for_line(
    proc: subprocess.Popen, log_path: Path, needle: str, timeout: float
) -> bool:
    """Wait until ``needle`` appears in the log; False if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log_path.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return needle in log_path.read_text(errors="replace")
        time.sleep(0.5)
    return False


def wait_ready(
    proc: subprocess.Popen, launch: Launch, log_path: Path, timeout: float = 600.0
) -> float:
    """Block until the ready line is logged and ``/health`` answers 200.

    Returns the seconds waited.  Raises ServerExited if the process ends first, NotReady on
    timeout (the process is left running: the caller stops it).
    """
    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerExited(proc.returncode, log_tail(log_path))
        if READY_LINE in log_path.read_text(errors="replace"):
            if http_status(launch.base_url + "/health") == 200:
                return time.monotonic() - started
        time.sleep(0.5)
    raise NotReady(f"not ready after {timeout:.0f} s:\n{log_tail(log_path)}")


def group_alive(pgid: int) -> bool:
    """True while any process of the group exists (signal 0 delivers nothing)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class StopResult:
    returncode: int | None
    killed_group: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def stop(proc: subprocess.Popen, grace: float = 60.0, group_grace: float = 10.0,
         signum: int = signal.SIGTERM, to_group: bool = False) -> StopResult:
    """Stop a server started by ``start``: SIGTERM to the main PID, then SIGKILL to the group.
    (``signum`` / ``to_group``: another stop to capture, e.g. a terminal's Ctrl-C, SIGINT to
    the whole foreground group.)

    Why not SIGTERM the group: the schedulers would die first and SGLang would log a
    misleading "Subprocess scheduler_0 ... crashed with exit code -15" (sglang-notes §5).
    After the main process has exited its children get ``group_grace`` seconds to follow
    (they watch their parent), then the remaining group is killed.  Returns once no process
    of the group is left.
    """
    started = time.monotonic()
    pgid = proc.pid  # start_new_session=True: the leader's pid is the group id
    result = StopResult(returncode=proc.poll())
    if result.returncode is None:
        try:
            if to_group:
                os.killpg(pgid, signum)
            else:
                proc.send_signal(signum)
        except ProcessLookupError:
            pass
        try:
            result.returncode = proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            result.notes.append(f"main process still alive {grace:.0f} s after {signal.Signals(signum).name}")
    deadline = time.monotonic() + (group_grace if result.returncode is not None else 0)
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if group_alive(pgid):
        result.killed_group = True
        os.killpg(pgid, signal.SIGKILL)
        if result.returncode is None:
            result.returncode = proc.wait(timeout=30)
        kill_deadline = time.monotonic() + 30
        while group_alive(pgid) and time.monotonic() < kill_deadline:
            time.sleep(0.2)
    result.seconds = time.monotonic() - started
    return result


def post_json(url: str, payload: dict, timeout: float = 60.0) -> tuple[int, str]:
    """POST a JSON body; returns (status, body text)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
