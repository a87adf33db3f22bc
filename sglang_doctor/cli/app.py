"""The command line (CONTRACT.md).  Only wiring lives here: no log logic."""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

import click

from sglang_doctor import __version__
from sglang_doctor.exit_codes import ExitCode
from sglang_doctor.pipeline import InputError, StreamPipeline, open_log
from sglang_doctor.report import FORMATS, Reporter


class DoctorGroup(click.Group):
    """Turns our own input errors into one line and exit 2, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"sglang-doctor: {exc}", err=True)
            ctx.exit(ExitCode.INPUT_ERROR)
        except KeyboardInterrupt:
            ctx.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:
            _quiet_broken_pipe()
            ctx.exit(ExitCode.OK)


def _quiet_broken_pipe() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def common_options(f):
    f = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                     help="Output format (default: rich on a terminal, text otherwise).")(f)
    f = click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False),
                     help="Extra rule directory (repeatable; later overrides earlier by rule id).")(f)
    f = click.option("--gpus", default="a6000x2", show_default=True, help="Hardware profile name, or 'auto'.")(f)
    f = click.option("--model-config", type=click.Path(dir_okay=False),
                     help="The model's config.json when the log's model path is not readable.")(f)
    f = click.option("--sglang-version", default=None, help="Target SGLang version for flag validation.")(f)
    return f


_RULESETS: dict[tuple, object] = {}


def load_ruleset(rule_dirs) -> object | None:
    """The rule pack plus ``--rules`` directories, loaded once per process."""
    key = tuple(rule_dirs)
    if key not in _RULESETS:
        _RULESETS[key] = _load_ruleset(rule_dirs)
    return _RULESETS[key]


def _load_ruleset(rule_dirs) -> object | None:
    try:
        from sglang_doctor.diagnose import rules_engine
    except ImportError:
        return None
    try:
        return rules_engine.RuleSet.load([Path(d) for d in rule_dirs])
    except rules_engine.RuleLoadError as exc:
        raise InputError(f"bad rule file: {str(exc).splitlines()[0]}") from None


def load_hardware(name: str):
    try:
        from sglang_doctor.remedy import hardware
    except ImportError:
        return None
    try:
        return hardware.get_profile(name)
    except ValueError as exc:
        raise InputError(str(exc).splitlines()[0]) from None


def load_model_config(path: str | None) -> dict | None:
    if not path:
        return None
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable config.json ({exc})") from None


def make_pipeline(rule_dirs, gpus, model_config, sglang_version, **kw) -> StreamPipeline:
    return StreamPipeline(
        load_ruleset(rule_dirs),
        version=sglang_version,
        hardware=load_hardware(gpus),
        model_config=load_model_config(model_config),
        **kw,
    )


@click.group(cls=DoctorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sglang-doctor")
def main():
    """Read SGLang server logs, name why a launch died, and give the flag change that fixes it."""


@main.command()
@click.argument("logfiles", nargs=-1, required=True)
@common_options
def explain(logfiles, fmt, rule_dirs, gpus, model_config, sglang_version):
    """Read finished log(s) and diagnose every incident."""
    reporter = Reporter(fmt)
    total = 0
    for path in logfiles:
        if path.endswith(".attempts.json"):
            _explain_history(path, reporter)
            continue
        pipe = make_pipeline(rule_dirs, gpus, model_config, sglang_version)
        if len(logfiles) > 1:
            reporter.message(f"# {path}", style="bold")
        for block in open_log(path):
            for ev in pipe.feed(block):
                _explain_event(reporter, ev)
        for ev in pipe.finish():
            _explain_event(reporter, ev)
        summary = pipe.summary()
        if len(logfiles) > 1:
            summary["file"] = path
        reporter.event(summary)
        for warning in pipe.warnings:
            click.echo(f"sglang-doctor: warning: {warning}", err=True)
        total += pipe.incident_count
    sys.exit(ExitCode.INCIDENTS if total else ExitCode.OK)


def _explain_event(reporter: Reporter, ev: dict) -> None:
    if ev["event"] == "milestone" and reporter.format != "json":
        return
    reporter.event(ev)


def _explain_history(path: str, reporter: Reporter) -> None:
    from sglang_doctor.run import history

    try:
        doc = history.load(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable attempts history ({exc})") from None
    if reporter.format == "json":
        reporter.event({"event": "history", **doc})
    else:
        reporter.message(history.render(doc))


@main.command("-")
@click.option("--flush-after", type=float, default=1.0, show_default=True,
              help="Seconds of silence after which an open incident is reported.")
@common_options
def pipe_mode(flush_after, fmt, rule_dirs, gpus, model_config, sglang_version):
    """Read standard input as it streams (tail -f log | sglang-doctor -)."""
    reporter = Reporter(fmt, progress=True)
    pipe = make_pipeline(rule_dirs, gpus, model_config, sglang_version)
    fd = sys.stdin.fileno()
    _install_sigterm_as_interrupt()
    try:
        dirty = False
        while True:
            ready, _, _ = select.select([fd], [], [], flush_after if dirty else None)
            if not ready:
                for ev in pipe.flush_idle():
                    reporter.event(ev)
                dirty = pipe.idle_deferred > 0  # mid-line: ask again after another gap
                continue
            data = os.read(fd, 1 << 20)
            if not data:
                break
            for ev in pipe.feed(data):
                reporter.event(ev)
            dirty = True
        for ev in pipe.finish():
            reporter.event(ev)
    except KeyboardInterrupt:
        for ev in pipe.finish():
            reporter.event(ev)
        sys.exit(ExitCode.INTERRUPTED)
    sys.exit(ExitCode.INCIDENTS if pipe.incident_count else ExitCode.OK)


@main.command()
@click.argument("logfile")
@click.option("--flush-after", type=float, default=1.0, show_default=True,
              help="Seconds of silence after which an open incident is reported.")
@click.option("--poll", is_flag=True, help="Poll the file instead of using inotify (network or container mounts).")
@click.option("--poll-interval", type=float, default=1.0, show_default=True)
@click.option("--from-end", is_flag=True, help="Start at the end of an existing file instead of its beginning.")
@click.option("--exit-on-incident", is_flag=True, help="Stop after the first incident (exit 1).")
@common_options
def watch(logfile, flush_after, poll, poll_interval, from_end, exit_on_incident, fmt, rule_dirs, gpus,
          model_config, sglang_version):
    """Follow a log (before it exists, across truncation, rotation and relaunches)."""
    from sglang_doctor.read import follow

    reporter = Reporter(fmt, progress=True)
    pipe = make_pipeline(rule_dirs, gpus, model_config, sglang_version)
    _install_sigterm_as_interrupt()
    try:
        follower = follow.Follower(logfile, poll_interval=poll_interval, use_inotify=not poll,
                                   start_at_end=from_end)
    except follow.FollowError as exc:
        raise InputError(str(exc)) from None
    last_data = None
    try:
        with follower:
            while True:
                try:
                    got = follower.read()
                except follow.FollowError as exc:
                    raise InputError(str(exc)) from None
                for fev in got:
                    if fev.kind == "data":
                        events = pipe.feed(fev.data)
                        last_data = time.monotonic()
                    elif fev.kind in ("truncated", "rotated", "deleted"):
                        events = pipe.reset(fev.kind)
                        reporter.event({"event": "status", "text": f"{logfile}: {fev.detail or fev.kind}"})
                    else:
                        events = []
                        if fev.detail:
                            reporter.event({"event": "status", "text": fev.detail})
                    for ev in events:
                        reporter.event(ev)
                        if exit_on_incident and ev["event"] == "incident":
                            sys.exit(ExitCode.INCIDENTS)
                if got:
                    continue
                if last_data is not None and time.monotonic() - last_data >= flush_after:
                    for ev in pipe.flush_idle():
                        reporter.event(ev)
                        if exit_on_incident and ev["event"] == "incident":
                            sys.exit(ExitCode.INCIDENTS)
                    last_data = time.monotonic() if pipe.idle_deferred else None  # mid-line: wait again
                timeout = poll_interval if last_data is None else max(0.01, flush_after - (time.monotonic() - last_data))
                follower.wait(timeout)
    except KeyboardInterrupt:
        # what the log already holds is reported, not dropped (an incident in its --flush-after gap)
        for ev in pipe.finish():
            reporter.event(ev)
        sys.exit(ExitCode.INTERRUPTED)


def _install_sigterm_as_interrupt() -> None:
    """Ctrl-C and SIGTERM end a following command cleanly (exit 130).

    SIGINT is set explicitly: a process started in the background of a non-interactive
    shell inherits SIGINT as ignored, and Python then never raises KeyboardInterrupt.
    """
    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:
        pass


def _register_commands() -> None:
    """The subcommands that live in their own modules (they import this one for its helpers)."""
    from sglang_doctor.cli.plan import plan
    from sglang_doctor.cli.rules import rules
    from sglang_doctor.cli.run import run

    for command in (rules, plan, run):
        main.add_command(command)
    from sglang_doctor.cli.check import check  # issue 14
    from sglang_doctor.cli.flags import flags_command  # issue 14
    main.add_command(flags_command)
    main.add_command(check)


_register_commands()
