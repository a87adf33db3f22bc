"""``sglang-doctor run [options] -- CMD ARGS...``: the click front end of the supervisor."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from sglang_doctor.cli.metrics_options import metrics_options, start_metrics
from sglang_doctor.exit_codes import ExitCode
from sglang_doctor.pipeline import InputError

DEFAULT_LOG = "sglang-doctor-run.log"


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--log", "log_path", default=DEFAULT_LOG, show_default=True,
              help="The server's log; earlier attempts rotate to LOG.1, LOG.2, ...")
@click.option("--max-attempts", type=click.IntRange(1, 100), default=4, show_default=True)
@click.option("--yes", "-y", is_flag=True, help="Relaunch without asking (only changes marked safe).")
@click.option("--dry-run", is_flag=True, help="Print what would be run, run nothing.")
@click.option("--detach", is_flag=True, help="Exit 0 once ready and leave the server running.")
@click.option("--until-ready", is_flag=True, help="Exit 0 once ready, after stopping the server cleanly.")
@click.option("--pid-file", type=click.Path(dir_okay=False), help="With --detach: where to write the server's pid.")
@click.option("--via", default="", help='A command prefix that runs the launch elsewhere, e.g. "ssh root@host pct exec 129 --".')
@click.option("--via-quote", type=click.Choice(("auto", "shell", "none")), default="auto", show_default=True,
              help="How the command crosses --via: shell = quoted for a remote shell (ssh), none = passed on as "
                   "argv (pct exec, docker exec -i); auto = shell when the prefix starts with ssh.")
@click.option("--health-url", default=None, help="Health check URL (default: http://HOST:PORT/health of the command).")
@click.option("--ready-timeout", type=float, default=3600.0, show_default=True, help="Seconds to wait for ready.")
@click.option("--health-timeout", type=float, default=180.0, show_default=True,
              help="Seconds after the ready line for /health to answer 200.")
@click.option("--settle", type=float, default=20.0, show_default=True,
              help="Seconds a failed server may take to exit by itself before it is stopped.")
@click.option("--stop-grace", type=float, default=30.0, show_default=True,
              help="Seconds between SIGTERM and SIGKILL when stopping the server.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--format", "fmt", type=click.Choice(("rich", "text", "json")), default=None)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False))
@click.option("--gpus", default="a6000x2", show_default=True)
@click.option("--gpu-sm", default=None, metavar="X.Y")
@click.option("--model-config", type=click.Path(dir_okay=False))
@click.option("--sglang-version", default=None)
@click.option("--no-check", is_flag=True, help="Skip the pre-flight check (sglang-doctor check) before the first launch.")
@metrics_options
def run(log_path, max_attempts, yes, dry_run, detach, until_ready, pid_file, via, via_quote, health_url, ready_timeout,
        health_timeout, settle, stop_grace, command, fmt, rule_dirs, gpus, gpu_sm, model_config, sglang_version, no_check,
        metrics_port, metrics_host, node):
    """Launch an SGLang server, diagnose a failed launch, fix its flags and relaunch."""
    from sglang_doctor.cli import app as cli
    from sglang_doctor.run import supervisor
    from sglang_doctor.report import Reporter

    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise InputError("run needs the launch command after --, e.g. run -- python -m sglang.launch_server ...")
    if command[0].startswith("-"):  # an option run does not have: click took it as the command's start
        raise click.UsageError(_unknown_option(command[0]), ctx=click.get_current_context())
    if detach and until_ready:
        raise InputError("--detach and --until-ready exclude each other")
    try:
        via_prefix = shlex.split(via)
    except ValueError as exc:
        raise InputError(f"--via: {exc}") from None
    _validate(log_path, pid_file, detach, health_url, None if dry_run else command, via_prefix,
              {"--ready-timeout": ready_timeout, "--health-timeout": health_timeout},
              {"--settle": settle, "--stop-grace": stop_grace})
    mode = "detach" if detach else "until_ready" if until_ready else "foreground"
    opts = supervisor.RunOptions(
        command=command, log=Path(log_path), via=via_prefix, max_attempts=max_attempts, yes=yes, mode=mode,
        health_url=health_url, ready_timeout=ready_timeout, health_timeout=health_timeout, settle=settle,
        stop_grace=stop_grace, pid_file=Path(pid_file) if pid_file else None, via_quote=via_quote,
    )
    # every common option checked before anything, --dry-run included (one line, exit 2)
    ruleset, hw, config = cli.check_common(rule_dirs, gpus, gpu_sm, model_config, sglang_version)
    reporter = Reporter(fmt, progress=True)
    if dry_run:
        from sglang_doctor.run import wrapper

        # behind --via: what the prefix receives (for ssh, the command as one quoted word)
        shown = wrapper.through(via_prefix, command, via_quote)
        reporter.event({"event": "dry_run", "command": shown, "log": log_path})
        reporter.message(f"would run: {shlex.join(shown)}\nlog: {log_path}")
        sys.exit(ExitCode.OK)
    if not no_check:  # issue 14: stop a launch that would fail before the model loads
        from sglang_doctor.cli.check import preflight_for_run, text_report

        try:
            blocked = preflight_for_run(command, gpus, model_config, sglang_version, gpu_sm)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if blocked:
            report_, hw_ = blocked
            reporter.event({"event": "preflight", **report_.to_json()})
            reporter.message(text_report(report_, hw_) + "\n(not launched; --no-check launches anyway)")
            sys.exit(ExitCode.INCIDENTS)
    reporter.otel.log_path = str(Path(log_path).resolve())
    start_metrics(reporter, metrics_port, metrics_host, node)
    catalog = _catalog(sglang_version)

    def make_pipeline(cmd):
        from sglang_doctor.pipeline import StreamPipeline

        return StreamPipeline(ruleset, command=cmd, version=sglang_version, hardware=hw, model_config=config)

    def report(ev):
        if ev["event"] in ("attempt", "relaunch", "healthy", "run_summary", "dry_run") and reporter.format != "json":
            reporter.notify(ev)
            reporter.message(_text(ev), style="bold")
        else:
            reporter.event(ev)

    confirm = None
    if sys.stdin.isatty() and not yes:
        def confirm(text):
            return click.confirm(text + "\nrelaunch?", default=False, err=True)

    reporter.message(f"logging the server's output to {log_path}")
    sup = supervisor.Supervisor(opts, make_pipeline, report, confirm, catalog)
    try:
        outcome = sup.run()
    except supervisor.child_mod.LaunchError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:  # the log or the history cannot be written (EACCES, EROFS, ENOSPC, ...)
        raise InputError(_io_error(exc, log_path)) from None
    sys.exit(outcome.exit_code if outcome.status != "stopped" else ExitCode.OK)


def _unknown_option(option: str) -> str:
    """The message for an option ``run`` does not have, with the closest one it has."""
    import difflib

    name = option.split("=", 1)[0]
    known = [o for p in run.params for o in p.opts if o.startswith("--")]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"no such option: {name}{hint}; the launch command and its flags go after --"


def _validate(log_path: str, pid_file: str | None, detach: bool, health_url: str | None, command: list[str] | None,
              via: list[str], positive: dict[str, float], non_negative: dict[str, float]) -> None:
    """Every option checked before anything is launched (one line and exit 2 otherwise)."""
    import math
    import os
    import shutil

    from sglang_doctor.run import health

    for name, value in positive.items():
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"{name} {value}: must be a number of seconds > 0")
    for name, value in non_negative.items():
        if not math.isfinite(value) or value < 0:
            raise InputError(f"{name} {value}: must be a number of seconds >= 0")
    if health_url is not None and health.check_url(health_url) is not None:
        raise InputError(f"--health-url {health_url}: {health.check_url(health_url)}")
    _writable_place("--log", log_path)
    if pid_file is not None:
        if not detach:
            raise InputError("--pid-file goes with --detach (it names the server left running)")
        _writable_place("--pid-file", pid_file)
    if command is None:  # --dry-run: nothing is run, so nothing needs to exist
        return
    if via:
        if shutil.which(via[0]) is None:
            raise InputError(f"--via: {via[0]}: command not found")
    elif shutil.which(command[0]) is None:
        raise InputError(f"{command[0]}: command not found" + ("" if "/" in command[0] else " (not on PATH)"))


def _writable_place(option: str, path: str) -> None:
    """``path`` can be created or replaced: its directory exists and takes a new file."""
    import os
    import stat

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        if stat.S_ISDIR(os.stat(p).st_mode):
            raise InputError(f"{option} {path}: is a directory")
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise InputError(f"{option} {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISDIR(os.stat(parent).st_mode):
            raise InputError(f"{option} {path}: {parent} is not a directory")
    except FileNotFoundError:
        raise InputError(f"{option} {path}: the directory {parent} does not exist") from None
    except OSError as exc:
        raise InputError(f"{option} {path}: {parent}: {exc.strerror or exc}") from None
    # ask the file system itself: root passes access(), a read-only mount or a full disk does not
    probe = parent / f".sglang-doctor-probe-{os.getpid()}"
    try:
        with open(probe, "wb"):
            pass
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write in {parent}: {exc.strerror or exc}") from None


def _io_error(exc: OSError, log_path: str) -> str:
    where = exc.filename or log_path
    return f"run: cannot write {where}: {exc.strerror or exc}; the server was stopped"


def _catalog(version):
    try:
        from sglang_doctor.remedy import flags
    except ImportError:
        return None
    resolved, _source = flags.resolve_version(None, version)
    return flags.load_catalog(resolved, prefer_shipped=True)


def _text(ev: dict) -> str:
    kind = ev["event"]
    if kind == "attempt":
        return f"attempt {ev['attempt']}: {shlex.join(ev['command'])}" + (
            "  (env " + " ".join(f"{k}={v}" for k, v in ev["env"].items()) + ")" if ev.get("env") else "")
    if kind == "relaunch":
        return "relaunching with:\n  " + "\n  ".join(ev["changes"] or ["(no flag change)"]) + (
            f"\n  ({ev['note']})" if ev.get("note") else "")
    if kind == "healthy":
        return f"healthy: {ev['url']} answered 200, {ev['seconds']} s after launch"
    if kind == "run_summary":
        from sglang_doctor.report import run_summary_text

        return run_summary_text(ev)
    return str(ev)
