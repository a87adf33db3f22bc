"""The launched server: start it under its wrapper, stop it, make sure nothing is left.

SGLang's main process starts one scheduler per GPU rank and a detokenizer in its own process
group (sglang-notes §5); a user's command may also be a wrapper (``bash -c '...'``) that
forks the server.  The server is never the doctor's direct child: ``wrapper.WRAPPER`` (a
POSIX sh program, run locally or on the far side of ``--via``) starts it in a session and
process group of its own, keeps its pid in a private run directory, and holds a pipe from
the doctor.  That pipe is the server's lifeline: when it reaches end-of-file (the doctor
exited, was SIGKILLed, or its ssh connection dropped) the wrapper sends SIGTERM to the
server and SIGKILL to its whole group after the grace period; so every exit path of the
doctor takes the whole tree down, wrappers and lingering schedulers included.

Stopping on purpose: SIGTERM to the server's main process (SGLang drains and reaps its
children; a group SIGTERM makes the schedulers log a misleading "crashed with exit code
-15"), then SIGKILL to the whole group after the grace period.  Each is sent both through
the pipe and, behind ``--via``, as a separate command through the same prefix (by the pid
file), so a stop works even when the wrapper's input is no longer connected.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import IO, Callable

from sglang_doctor.run import wrapper


class Child:
    """One launch of the server."""

    def __init__(self, argv: list[str], log: IO[bytes], env: dict[str, str] | None = None,
                 *, cwd: str | None = None, tied: bool = True, via: list[str] | None = None,
                 quoting: str = "auto", grace: float = 30.0, reap: float = 5.0):
        self.argv = list(argv)
        self.via = list(via or [])
        self.quoting = quoting
        self.token = wrapper.new_token()
        self.started = time.monotonic()
        full_env = dict(os.environ)
        command = list(argv)
        if env and self.via:  # the far side does not see our environment: pass the remedy's own
            command = ["env", *(f"{k}={v}" for k, v in env.items()), *command]
        elif env:
            full_env.update(env)
        self.launch_argv = wrapper.launch_argv(command, self.token, grace, self.via, quoting, reap)
        try:
            self.proc = subprocess.Popen(
                self.launch_argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=full_env,
                cwd=cwd, start_new_session=True,
            )
        except OSError as exc:
            raise LaunchError(f"cannot start {self.launch_argv[0]}: {exc.strerror or exc}") from None
        if tied:
            self._send("watch")
        self._server_pid: int | None = None

    # -- what is running ----------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The local process the doctor started (the wrapper, or the ssh client)."""
        return self.proc.pid

    @property
    def run_dir(self) -> str | None:
        """The wrapper's run directory when it is on this machine."""
        if self.via:
            return None
        return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"sglang-doctor.{self.token}")

    def server_pid(self, wait: float = 5.0) -> int | None:
        """The server's own pid (its process group and session id), from the wrapper's pid file."""
        if self._server_pid is not None:
            return self._server_pid
        deadline = time.monotonic() + wait
        while True:
            pid = self._read_pid()
            if pid is not None or time.monotonic() >= deadline or self.proc.poll() is not None:
                self._server_pid = pid
                return pid
            time.sleep(0.02)

    def _read_pid(self) -> int | None:
        if self.via:
            try:
                out = subprocess.run(wrapper.stop_argv(self.token, "pid", self.via, self.quoting),
                                     capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired):
                return None
            text = out.stdout.strip()
        else:
            try:
                with open(os.path.join(self.run_dir, "pid"), encoding="ascii") as fh:
                    text = fh.read().strip()
            except OSError:
                return None
        return int(text) if text.isdigit() else None

    def exit_code(self) -> int | None:
        """The server's exit status (128+N when signal N killed it), None while it or any
        member of its group runs.  255 from ssh: the connection failed."""
        return self.proc.poll()

    def group_alive(self) -> bool:
        """The wrapper exits only after the server's whole group is gone."""
        return self.proc.poll() is None

    # -- stopping -------------------------------------------------------------------------------

    def _send(self, command: str) -> bool:
        try:
            self.proc.stdin.write(f"{command}\n".encode())
            self.proc.stdin.flush()
            return True
        except (OSError, ValueError):
            return False

    def _signal(self, action: str) -> None:
        """``term`` / ``kill`` through the wrapper's input and, directly or through the prefix, by pid."""
        self._send(action)
        if self.via:
            try:
                subprocess.run(wrapper.stop_argv(self.token, action, self.via, self.quoting), timeout=30,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired):
                pass
            return
        pid = self._server_pid if self._server_pid is not None else self._read_pid()
        if pid is None:
            return
        try:
            if action == "term":
                os.kill(pid, signal.SIGTERM)
            else:
                os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 30.0, hurry: Callable[[], bool] = lambda: False) -> int | None:
        """Stop the server: SIGTERM to its main process, SIGKILL to its group after ``grace``
        (or as soon as ``hurry()`` turns true: a second Ctrl-C)."""
        if self.proc.poll() is None:
            self._signal("term")
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not hurry():
            if self.proc.poll() is not None:
                return self.proc.returncode
            time.sleep(0.05)
        return self.kill()

    def kill(self, wait: float = 10.0) -> int | None:
        """SIGKILL the server's whole group and wait until the wrapper reports it gone."""
        if self.proc.poll() is None:
            self._signal("kill")
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            # the wrapper (or the connection to it) is stuck: drop it; its watcher sees EOF
            self.proc.kill()
            self.proc.wait()
            if self.via:
                self._signal("kill")
        self.close()
        return self.proc.returncode

    def reap_group(self, grace: float = 5.0) -> None:
        """After the main process exited the wrapper reaps the group itself before it exits."""
        try:
            self.proc.wait(timeout=grace + 15)
        except subprocess.TimeoutExpired:
            self.kill()
        self.close()

    def detach(self) -> None:
        """Leave the server running on purpose: the wrapper stops watching our pipe."""
        self._send("detach")
        self.close()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass


class LaunchError(Exception):
    """The command could not be started at all (one line for the user)."""
