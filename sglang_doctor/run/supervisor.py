"""``run``: launch the server, follow its log, diagnose a failure, relaunch with the fix.

One attempt = one launch.  The child writes its output to the attempt's log file, which is
read back through the same ``StreamPipeline`` as ``watch`` (milestones shown live).  The
attempt ends when the server is ready and healthy, when its process group has exited, or
when an incident was reported and the server did not exit by itself within ``settle``
seconds (SGLang hangs after some failures, e.g. a port it cannot bind).  The next command
is the diagnosis's remediation applied to the current command: an argv list built from
validated flag changes only, never run through a shell, never one already tried.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from sglang_doctor import interrupts
from sglang_doctor.run import child as child_mod
from sglang_doctor.run import health
from sglang_doctor.run import history
from sglang_doctor.remedy import launch_command
from sglang_doctor.remedy import trust
from sglang_doctor.model import Diagnosis, Remediation

IDLE_FLUSH_S = 1.0
POLL_S = 0.05


@dataclass
class RunOptions:
    command: list[str]
    log: Path
    via: list[str] = field(default_factory=list)
    max_attempts: int = 4
    yes: bool = False
    mode: str = "foreground"  # "foreground" | "detach" | "until_ready"
    health_url: str | None = None
    ready_timeout: float = 3600.0
    health_timeout: float = 180.0
    settle: float = 20.0
    stop_grace: float = 30.0
    pid_file: Path | None = None
    via_quote: str = "auto"  # "auto" (quote for ssh), "shell" (always), "none" (the prefix passes argv on)


@dataclass
class Outcome:
    status: str  # "ready" | "gave_up" | "interrupted" | "stopped"
    reason: str
    exit_code: int


class Supervisor:
    """The launch → diagnose → relaunch loop.  ``make_pipeline(command)`` builds a fresh reader."""

    def __init__(self, opts: RunOptions, make_pipeline: Callable[[list[str]], Any], report: Callable[[dict], None],
                 confirm: Callable[[str], bool] | None, catalog: Any = None):
        self.opts = opts
        self.make_pipeline = make_pipeline
        self.report = report
        self.confirm = confirm  # None: not on a terminal, cannot ask
        self.catalog = catalog
        self.attempts: list[dict[str, Any]] = []
        self.tried: set[tuple] = set()
        self.child: child_mod.Child | None = None
        self.started = time.monotonic()
        self.changes: list[str] = []
        self._hurry = False

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> Outcome:
        command, env = list(self.opts.command), {}
        previous_signal = signal.signal(signal.SIGTERM, self._interrupted)
        # inherited as ignored when started in the background of a script: Ctrl-C must still stop
        previous_int = signal.signal(signal.SIGINT, self._interrupted)
        try:
            while True:
                number = len(self.attempts) + 1
                self.tried.add(_key(command, env))
                result = self._attempt(number, command, env)
                if result.status in ("ready", "stopped"):
                    # CONTRACT: 0 once ready and healthy, whatever status the server stops with
                    return self._finish(Outcome(result.status, result.reason, 0))
                diagnosis = result.diagnosis
                if diagnosis is None:
                    return self._finish(Outcome("gave_up", result.reason, 1))
                if len(self.attempts) >= self.opts.max_attempts:
                    return self._finish(Outcome("gave_up", f"no attempt left (--max-attempts {self.opts.max_attempts}); "
                                                           f"last failure: {diagnosis.rule}", 1))
                choice, why_not = self._next_change(diagnosis, command, env)
                if choice is None and self._restartable(diagnosis):
                    # this configuration served before it died of something no flag fixes: start it again
                    self.attempts[-1]["change"] = ["restart (same command)"]
                    self._save()
                    self.report({"event": "relaunch", "attempt": number + 1, "changes": [], "command": command,
                                 "env": env, "note": f"restart after: {diagnosis.title}"})
                    continue
                if choice is None:
                    return self._finish(Outcome("gave_up", why_not, 1))
                new_command = choice.command if choice.command is not None else command
                new_env = {**env, **choice.env}
                lines = launch_command.diff(command, new_command, self.catalog) if self.catalog else []
                lines += [f"+ env {k}={v}" for k, v in choice.env.items() if env.get(k) != v]
                self.attempts[-1]["change"] = lines
                untrusted = trust.check(choice, diagnosis, self.catalog)  # the one place it is enforced
                if untrusted:
                    self.attempts[-1]["untrusted"] = untrusted
                self._save()
                if not self._approved(choice, lines, new_command, new_env, untrusted):
                    if self.confirm is not None:
                        why = "relaunch not approved"
                    elif untrusted:
                        why = ("the change is advice only, not applied by --yes: " + "; ".join(untrusted))
                    else:
                        why = "a relaunch needs approval: rerun with --yes to relaunch unattended"
                    return self._finish(Outcome("gave_up", why, 1))
                self.changes.extend(lines)
                self.report({"event": "relaunch", "attempt": number + 1, "changes": lines,
                             "command": new_command, "env": new_env, "note": choice.note})
                command, env = new_command, new_env
        except KeyboardInterrupt as exc:
            # another Ctrl-C or SIGTERM while stopping: no more grace, SIGKILL the group now
            signal.signal(signal.SIGINT, self._hurry_up)
            signal.signal(signal.SIGTERM, self._hurry_up)
            self._stop_child()
            if self.attempts and self.attempts[-1]["outcome"] in ("running", "serving"):
                self.attempts[-1]["outcome"] = "interrupted"
            code = 143 if isinstance(exc, interrupts.Terminated) else 130
            return self._finish(Outcome("interrupted", "interrupted: the server was stopped", code))
        except child_mod.LaunchError as exc:  # the command cannot start at all (not found on the far side)
            self._stop_child()
            if self.attempts:
                self.attempts[-1]["outcome"] = "error"
                self.attempts[-1]["reason"] = str(exc)
            self._finish(Outcome("error", str(exc), 2))
            raise
        except OSError as exc:  # the log or the history cannot be written: stop, say so, exit 2
            self._stop_child()
            if self.attempts and self.attempts[-1]["outcome"] in ("running", "serving"):
                self.attempts[-1]["outcome"] = "error"
            try:
                self._finish(Outcome("error", f"I/O error: {exc.filename or ''}: {exc.strerror or exc}", 2))
            except OSError:
                pass  # the history itself is what cannot be written
            raise
        finally:
            self._stop_child()
            signal.signal(signal.SIGTERM, previous_signal)
            signal.signal(signal.SIGINT, previous_int)

    def _interrupted(self, signum, frame) -> None:
        """The first Ctrl-C or SIGTERM stops the run.  Later ones only hurry the stop: the
        handlers are switched before ``Interrupted`` is raised, so a second signal can
        never raise inside the unwinding (e.g. in a ``__del__``, where Python prints it as an
        "Exception ignored" traceback)."""
        signal.signal(signal.SIGINT, self._hurry_up)
        signal.signal(signal.SIGTERM, self._hurry_up)
        interrupts.raise_for(signum, frame)

    def _hurry_up(self, signum, frame) -> None:
        self._hurry = True

    def _finish(self, outcome: Outcome) -> Outcome:
        self._save(outcome)
        self.report({"event": "run_summary", "outcome": outcome.status, "reason": outcome.reason,
                     "attempts": len(self.attempts), "seconds": round(time.monotonic() - self.started, 1),
                     "changes": self.changes, "log": str(self.opts.log),
                     "history": str(history.history_path(self.opts.log))})
        return outcome

    # -- one attempt ------------------------------------------------------------------------

    def _attempt(self, number: int, command: list[str], env: dict[str, str]) -> "_AttemptResult":
        log = self.opts.log
        history.rotate_logs(log)
        record: dict[str, Any] = {"attempt": number, "command": list(command), "env": dict(env), "log": str(log),
                                  "outcome": "running", "started": time.time()}
        self.attempts.append(record)
        for older in self.attempts[:-1]:  # the previous attempts' logs moved one number up
            older["log"] = _shifted(older["log"], log)
        self._save()
        self.report({"event": "attempt", "attempt": number, "command": command, "env": env, "log": str(log)})
        pipe = self.make_pipeline(command)
        t0 = time.monotonic()
        with open(log, "wb") as out, open(log, "rb") as reader:
            self.child = child_mod.Child(command, out, env, tied=True, via=self.opts.via, quoting=self.opts.via_quote,
                                         grace=self.opts.stop_grace)
            record["pid"] = self.child.server_pid()
            if self.opts.via:
                record["via"] = list(self.opts.via)
            self._save()
            result = self._follow(pipe, reader, t0, record)
        record["seconds"] = round(time.monotonic() - t0, 2)
        record["outcome"] = result.status
        record["exit_code"] = result.exit_code
        if result.diagnosis is not None:
            record["incident"] = _incident_summary(result.diagnosis)
        if result.reason and result.status != "ready":
            record["reason"] = result.reason
        self._save()
        return result

    def _follow(self, pipe: Any, reader, t0: float, record: dict) -> "_AttemptResult":
        child = self.child
        seen = _Seen(self.report, *_host_port(record["command"], self.catalog))
        last_data = time.monotonic()
        dirty = False
        while True:
            data = reader.read(1 << 20)
            if data:
                seen.consume(pipe.feed(data))
                last_data, dirty = time.monotonic(), True
                continue
            code = child.exit_code()
            if code is not None:
                seen.drain(pipe, reader)
                child.reap_group()
                missing = _not_found(self.opts.log) if code == 127 else None
                if missing:
                    raise child_mod.LaunchError(f"{missing}: command not found"
                                                + (f" (through --via {shlex.join(self.opts.via)})" if self.opts.via else ""))
                if seen.first is not None:
                    return _AttemptResult("failed", seen.first, code, "")
                if seen.ready:
                    return _AttemptResult("stopped", None, code, f"the server exited (code {code}) with no incident")
                return _AttemptResult("failed", None, code,
                                      f"the server exited with code {code} and its log names no cause: see {self.opts.log}")
            now = time.monotonic()
            if dirty and now - last_data >= IDLE_FLUSH_S:
                seen.consume(pipe.flush_idle())
                dirty = False
            if seen.settled(self.opts.settle):
                # SGLang reported a failure but keeps running (e.g. after a bind error): stop it.
                self._stop_child()
                seen.drain(pipe, reader)
                return _AttemptResult("failed", seen.first, child.exit_code(), "")
            if seen.ready and seen.first is None:
                url = self.opts.health_url or health.url_for(seen.host, seen.port)
                result = health.wait_healthy(url, deadline_s=self.opts.health_timeout, via=self.opts.via or None,
                                             quoting=self.opts.via_quote,
                                             alive=lambda: child.exit_code() is None)
                seen.consume(pipe.feed(reader.read()))
                if result.ok:
                    return self._on_ready(pipe, reader, t0, record, url, seen)
                if child.exit_code() is None and seen.first is None:
                    self._stop_child()
                    seen.drain(pipe, reader)
                    if seen.first is None:
                        return _AttemptResult("failed", None, child.exit_code(),
                                              f"the server said it was ready but {url} answered {result.detail}")
                seen.ready = False  # the loop sees the exit or the incident next
                continue
            if now - t0 > self.opts.ready_timeout:
                self._stop_child()
                seen.consume(pipe.finish())
                return _AttemptResult("failed", seen.first, child.exit_code(),
                                      f"not ready after {self.opts.ready_timeout:.0f} s (--ready-timeout)")
            time.sleep(POLL_S)

    def _on_ready(self, pipe: Any, reader, t0: float, record: dict, url: str, seen: "_Seen") -> "_AttemptResult":
        seconds = round(time.monotonic() - t0, 1)
        record["ready_seconds"] = seconds
        self.report({"event": "healthy", "url": url, "seconds": seconds, "attempt": record["attempt"]})
        if self.opts.mode == "until_ready":
            self._stop_child()
            return _AttemptResult("ready", None, self.child.exit_code(), f"ready after {seconds} s, then stopped")
        if self.opts.mode == "detach":
            if self.opts.pid_file:
                history.atomic_write(self.opts.pid_file, f"{self.child.server_pid()}\n".encode())
            pid = self.child.server_pid()
            self.child.detach()
            self.child = None  # left running on purpose
            return _AttemptResult("ready", None, None, f"ready after {seconds} s; server pid {pid} left running")
        # foreground: supervise the serving server; a crash now is a runtime incident.
        record["outcome"] = "serving"
        self._save()
        return self._serve(pipe, reader, url, seen)

    def _still_healthy(self, url: str) -> bool:
        return health.check_once(url, self.opts.via or None, timeout=10.0, quoting=self.opts.via_quote).ok

    def _serve(self, pipe: Any, reader, url: str, seen: "_Seen") -> "_AttemptResult":
        """Supervise a serving server; ``seen`` carries what was read while /health was polled."""
        child = self.child
        dirty, last = False, time.monotonic()
        while True:
            data = reader.read(1 << 20)
            if data:
                seen.consume(pipe.feed(data))
                dirty, last = True, time.monotonic()
            elif dirty and time.monotonic() - last >= IDLE_FLUSH_S:
                seen.consume(pipe.flush_idle())
                dirty = False
            code = child.exit_code()
            if code is None and seen.settled(self.opts.settle) and self._still_healthy(url):
                # an incident while serving, yet the server runs and answers: not a crash
                # (e.g. a logged request whose text looks like an error); keep serving.  The
                # provisional ones are taken back in the event stream (the exporter's gauge of
                # undecided incidents falls again); one reported as standing is only not acted on.
                seen.consume(pipe.answered(url))
                if seen.first is not None:
                    self.report({"event": "warning", "message": f"incident {seen.first.rule} while serving, but "
                                                                f"the server still answers {url}: not stopped"})
                seen.forget()
                continue
            if code is not None or seen.settled(self.opts.settle):
                if code is None:
                    self._stop_child()
                seen.drain(pipe, reader)
                child.reap_group()
                code = child.exit_code()
                if seen.first is None and _stopped_on_purpose(self.opts.log):
                    return _AttemptResult("stopped", None, code, f"the server was stopped (exit code {code})")
                if seen.first is None:  # died without a word: never a silent success
                    seen.first = crash_diagnosis(code, pipe)
                    self.report(seen.first.to_json())
                return _AttemptResult("failed", seen.first, code, "")
            if not data:
                time.sleep(POLL_S)

    # -- choosing the next launch ---------------------------------------------------------------

    def _next_change(self, diagnosis: Diagnosis, command: list[str], env: dict) -> tuple[Remediation | None, str]:
        rem = diagnosis.remediation
        what = f"{diagnosis.rule} ({diagnosis.category})"
        if diagnosis.rule == "unknown":
            return None, "no rule knows this failure, so no configuration change is known to fix it"
        if rem is None:
            return None, f"{what}: no remedy applies to this launch"
        if rem.needs_human:
            return None, f"{what} needs a human: {rem.note}"
        untried = []
        for option in [rem, *rem.alternatives]:
            if option.needs_human or (option.command is None and not option.env):
                continue
            new_command = option.command if option.command is not None else command
            if _key(new_command, {**env, **option.env}) in self.tried:
                continue
            untried.append(option)
        if not untried:
            return None, f"{what}: every remedy was tried already"
        if self.opts.yes:  # unattended: the best option --yes may apply, else the best one (to show)
            for option in untried:
                if option.safe and not trust.check(option, diagnosis, self.catalog):
                    return option, ""
        return untried[0], ""

    def _restartable(self, diagnosis: Diagnosis) -> bool:
        """The restart policy: a crash while serving that no remedy addresses (a SIGKILL, an
        unknown runtime failure) restarts the same command while attempts are left."""
        rem = diagnosis.remediation
        return (self.opts.mode == "foreground" and self.attempts[-1].get("ready_seconds") is not None
                and diagnosis.incident.after_ready
                # an unknown rule's remediation is only the guarded advice of a best guess
                # (remedy/guarded.py): it does not stop the restart
                and (diagnosis.rule == "unknown" or rem is None))

    def _approved(self, choice: Remediation, lines: list[str], command: list[str], env: dict,
                  untrusted: list[str]) -> bool:
        if self.opts.yes and choice.safe and not untrusted:
            return True
        if self.confirm is None:
            return False
        text = "relaunch with:\n  " + "\n  ".join(lines or ["(environment only)"]) + "\n  " + shlex.join(command)
        if untrusted:
            text += "\n  advice only, from the log (check it yourself):\n    " + "\n    ".join(untrusted)
        return self.confirm(text)

    # -- bookkeeping ----------------------------------------------------------------------------

    def _stop_child(self) -> None:
        if self.child is not None:
            self.child.stop(self.opts.stop_grace, hurry=lambda: self._hurry)

    def _save(self, outcome: Outcome | None = None) -> None:
        meta: dict[str, Any] = {"command": self.opts.command, "log": str(self.opts.log)}
        if outcome is not None:
            meta.update(outcome=outcome.status, reason=outcome.reason)
        history.save(history.history_path(self.opts.log), self.attempts, **meta)


@dataclass
class _AttemptResult:
    status: str
    diagnosis: Diagnosis | None
    exit_code: int | None
    reason: str


def _key(command: list[str], env: dict) -> tuple:
    return tuple(command), tuple(sorted(env.items()))


def _shifted(path: str, log: Path) -> str:
    """Where an attempt's log went when a new attempt rotated ``log``."""
    if path == str(log):
        return f"{log}.1"
    prefix = f"{log}."
    if path.startswith(prefix) and path[len(prefix):].isdigit():
        return f"{log}.{int(path[len(prefix):]) + 1}"
    return path


def _incident_summary(d: Diagnosis) -> dict[str, Any]:
    out = {"rule": d.rule, "category": d.category, "phase": d.phase, "title": d.title,
           "lines": [d.incident.first_line, d.incident.last_line]}
    if d.remediation is not None:
        out["remediation"] = d.remediation.to_json()
    return out


def _host_port(command: list[str], catalog: Any) -> tuple[str | None, int | None]:
    """--host and --port of the command, however spelled (aliases, abbreviations, --x=y)."""
    host = launch_command.value_of(command, "--host", catalog)
    port = launch_command.value_of(command, "--port", catalog)
    return (host if health.valid_host(host) else None), (int(port) if health.valid_port(port) else None)


class _Seen:
    """What the log of one launch has said so far; every event goes to ``report`` first."""

    def __init__(self, report: Callable[[dict], None], host: str | None = None, port: int | None = None):
        self.report = report
        self.first: Diagnosis | None = None  # the incident the attempt is judged by
        self.incident_at: float | None = None
        self.ready = False
        self.host, self.port = host, port
        # (diagnosis, provisional: "ready" | "serving" | None) of the incidents not withdrawn
        self._live: list[tuple[Diagnosis | None, str | None]] = []
        self.waiting_for_ready = False  # the first incident may yet prove a warning the launch survived

    def consume(self, events: list[dict]) -> None:
        for ev in events:
            self.report(ev)
            if ev["event"] == "incident":
                self._live.append((ev.get("_diagnosis"), ev.get("provisional")))
                self._judge()
            elif ev["event"] == "warning" and ev.get("withdraws"):
                # the launch came up (or went on serving) after a provisional incident: not a failure
                lines = ev["withdraws"].get("lines")
                self._live = [(d, p) for d, p in self._live
                              if d is None or [d.incident.first_line, d.incident.last_line] != lines]
                self._judge()
            elif ev["event"] == "confirmed":  # a provisional incident stands: no longer waited for
                lines = (ev.get("confirms") or {}).get("lines")
                self._live = [(d, None if d is not None and [d.incident.first_line, d.incident.last_line] == lines
                               else p) for d, p in self._live]
                self._judge()
            elif ev["event"] == "ready":
                self.ready = True
            elif ev["event"] == "launch":  # the dump fills in only what the command left out
                args = ev.get("server_args") or {}
                if self.host is None and health.valid_host(args.get("host")):
                    self.host = args["host"]
                if self.port is None and health.valid_port(args.get("port")):
                    self.port = int(args["port"])
        if self.ready and any(p == "ready" for _, p in self._live):
            # the ready line came and the pipeline did not withdraw it (in the same events, right
            # after the ready event): the ready line is a relaunch's, the incident stands
            self._live = [(d, None if p == "ready" else p) for d, p in self._live]
            self._judge()

    def forget(self) -> None:
        """The incidents so far did not stop the server (it still answers): judge anew."""
        self._live = []
        self._judge()

    def _judge(self) -> None:
        """The incident the attempt is judged by: the first one, unless a later one is one a
        rule knows or the first is only provisional and a later one is not."""
        first = None
        for diag, provisional in self._live:
            if first is None or (first[0] is not None and first[0].rule == "unknown" and diag is not None
                                 and diag.rule != "unknown") or (first[1] and not provisional):
                first = (diag, provisional)
        self.first = first[0] if first else None
        self.waiting_for_ready = bool(first and first[1] == "ready")
        if self.first is None:
            self.incident_at = None
        else:
            self.incident_at = self.incident_at or time.monotonic()

    def drain(self, pipe: Any, reader) -> None:
        """Everything left in the log, then whatever the pipeline still holds open."""
        self.consume(pipe.feed(reader.read()))
        self.consume(pipe.finish())

    def settled(self, settle_s: float) -> bool:
        """An incident was reported ``settle_s`` ago and the server is still running (not one
        that the launch's ready line may yet show survived: that waits for the ready line, the
        server's exit or --ready-timeout)."""
        if self.waiting_for_ready:
            return False
        return self.first is not None and self.incident_at is not None and time.monotonic() - self.incident_at >= settle_s


_STOP_MESSAGES = ("SIGTERM received", "Received SIGTERM", "Received sigterm")


def _stopped_on_purpose(log: Path) -> bool:
    """The end of the log holds SGLang's own record of a SIGTERM from its operator (a line of
    its logger that starts with it, not text inside another line such as a logged request)."""
    from sglang_doctor.read import records

    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
            tail = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return False
    for text in tail:
        prefix = records.parse_prefix(text)
        if prefix.kind == "sglang" and prefix.message.startswith(_STOP_MESSAGES):
            return True
    return False


def _not_found(log: Path) -> str | None:
    """The program the wrapper could not find (its own one line at the start of the log)."""
    try:
        with open(log, "rb") as fh:
            head = fh.read(65536).decode("utf-8", "replace")
    except OSError:
        return None
    for text in head.splitlines():
        if text.startswith("[sglang-doctor] command not found: "):
            return text.split(": ", 1)[1]
    return None


def crash_diagnosis(code: int | None, pipe: Any) -> Diagnosis:
    """The server exited while serving and its log names no cause (e.g. SIGKILL)."""
    from sglang_doctor.model import Incident, Line

    lines_seen = getattr(pipe, "lines_seen", 0) or 0
    # negative: killed by that signal (a direct child); 128+N: the wrapper's shell reports it so
    signum = -code if code is not None and code < 0 else code - 128 if code is not None and 128 < code < 160 else None
    if signum is not None:
        try:
            how = f"was killed by {signal.Signals(signum).name}"
        except ValueError:
            how = f"was killed by signal {signum}"
    else:
        how = f"exited with code {code}"
    text = f"[sglang-doctor] the server {how} while serving; its log says nothing about why"
    incident = Incident(kind="signal", first_line=lines_seen + 1, last_line=lines_seen + 1,
                        lines=[Line(lines_seen + 1, text)], after_ready=True)
    killed = signum == signal.SIGKILL
    return Diagnosis(
        incident=incident, rule="unknown", category="memory.host_oom" if killed else "runtime.crash",
        phase="serving", title=f"The server {how} while serving",
        explanation=(f"The server {how} after it was ready, and its log names no cause. "
                     + ("A SIGKILL nobody asked for is most often the kernel's OOM killer: "
                        "`dmesg | grep -i -e oom -e 'killed process'` says." if killed else
                        "Look at the end of its log and at the system journal.")),
        confidence=0.5 if killed else 0.4,
    )

