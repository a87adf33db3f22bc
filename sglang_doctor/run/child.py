"""The launched server as a process group: start it, stop it, make sure nothing is left.

SGLang's main process starts one scheduler per GPU rank and a detokenizer in its own process
group (sglang-notes §5).  The server is started in a new session so that its group is its
own; stopping sends SIGTERM to the main process only (SGLang drains and reaps its children;
a group SIGTERM makes the schedulers log a misleading "crashed with exit code -15"), then
SIGKILL to the whole group after a grace period.  Whatever happens, no member of the group
is left running: a scheduler that outlives its parent keeps holding GPU memory.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from typing import IO

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGKILL the server's main process if the doctor dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Child:
    """One launch of the server."""

    def __init__(self, argv: list[str], log: IO[bytes], env: dict[str, str] | None = None,
                 *, cwd: str | None = None, tied: bool = True):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.argv = list(argv)
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=full_env,
                cwd=cwd, start_new_session=True, preexec_fn=_die_with_parent if tied else None,
            )
        except OSError as exc:
            raise LaunchError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        self.pgid = self.proc.pid  # a new session: the group id is the leader's pid

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_code(self) -> int | None:
        """The main process's exit status (negative = killed by that signal), None if running."""
        return self.proc.poll()

    def group_alive(self) -> bool:
        """True while any process of the server's group exists (zombies of ours excluded)."""
        self.proc.poll()  # reap our direct child if it has exited
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _group_has_live_member(self.pgid)

    def signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 30.0) -> int | None:
        """Stop the server: SIGTERM to the main process, SIGKILL to the group after ``grace``."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not self.group_alive():
                return self.proc.returncode
            time.sleep(0.05)
        return self.kill()

    def kill(self, wait: float = 10.0) -> int | None:
        """SIGKILL every process of the group and wait until none is left."""
        self.signal_group(signal.SIGKILL)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                self.proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
            if not self.group_alive():
                break
            self.signal_group(signal.SIGKILL)
        return self.proc.returncode

    def reap_group(self, grace: float = 5.0) -> None:
        """After the main process exited: give lingering children ``grace`` s, then kill them."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not self.group_alive():
                return
            time.sleep(0.05)
        self.kill()


class LaunchError(Exception):
    """The command could not be started at all (one line for the user)."""


def _group_has_live_member(pgid: int) -> bool:
    """killpg(0) also succeeds for zombies; look in /proc for a member that is not one."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses
        rest = stat[stat.rfind(b")") + 2:].split()
        if len(rest) >= 3 and int(rest[2]) == pgid and rest[0] not in (b"Z", b"X"):
            return True
    return False
