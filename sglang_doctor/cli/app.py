"""The command line (CONTRACT.md).  Only wiring lives here: no log logic."""

from __future__ import annotations

import atexit
import gc
import os
import select
import sys
import time
from pathlib import Path

# before the imports below compile their ~180 `re` patterns: re's programs from the cache
# (18-20 ms of the start-up's Python otherwise; cli/re_programs.py)
from sglang_doctor.cli import re_programs

re_programs.install()

import click  # noqa: E402

from sglang_doctor import __version__, interrupts  # noqa: E402
from sglang_doctor.interrupts import Terminated  # noqa: E402
from sglang_doctor.exit_codes import ExitCode  # noqa: E402
from sglang_doctor.pipeline import InputError, StreamPipeline, open_log  # noqa: E402
from sglang_doctor.cli.metrics_options import metrics_options, start_metrics  # noqa: E402
from sglang_doctor.report import FORMATS, Reporter  # noqa: E402


TERMINATED = 143  # 128 + SIGTERM, as `run` and shells report it
STOP_CHECK = 0.25  # seconds: the longest a live mode blocks before it looks for a Ctrl-C / SIGTERM

EXIT_CODES_HELP = ("Exit codes: 0 no incident; 1 at least one incident; 2 usage or input error\n"
                   "(one line on stderr); 130 interrupted (Ctrl-C); 143 stopped by SIGTERM.")




class DoctorGroup(click.Group):
    """Turns our own input errors and usage errors into one line and exit 2, never a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        interrupts.replace_default_sigint()
        try:
            rv = super().main(args, prog_name or "sglang-doctor", complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            _one_line_usage_error(exc)
            sys.exit(ExitCode.INPUT_ERROR)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            sys.exit(ExitCode.INTERRUPTED)
        except click.ClickException as exc:
            click.echo(f"sglang-doctor: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"sglang-doctor: {exc}", err=True)
            ctx.exit(ExitCode.INPUT_ERROR)
        except Terminated:
            ctx.exit(TERMINATED)
        except KeyboardInterrupt:
            ctx.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:
            _quiet_broken_pipe()
            ctx.exit(ExitCode.OK)


def _one_line_usage_error(exc: click.UsageError) -> None:
    """click's usage error as one line: which command, what is wrong, where help is."""
    ctx = exc.ctx
    where = ctx.command_path if ctx is not None else "sglang-doctor"
    message = " ".join(exc.format_message().split())
    click.echo(f"{where}: {message} (see {where} --help)", err=True)


def _quiet_broken_pipe() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


GPUS_HELP = ("The GPUs the planner sizes for: a6000, a100-40, a100-80, h100-80, l40s, rtx3090 or rtx4090 with "
             "an xN count (a6000x2 = 2x RTX A6000); a custom per-GPU capacity such as 23034MiBx4 or 48GiBx2; "
             "or auto (read them with NVML/torch).")
GPU_SM_HELP = ("The GPUs' compute capability (e.g. 8.6 for A6000/3090, 8.9 for L40S/4090, 9.0 for H100). "
               "Give it with a custom --gpus capacity: without it no FP8/FA3 support is assumed and 0.5.23's "
               "prefill CUDA-graph reserve is left out of the plan. Overrides a profile's.")


def common_options(f):
    f = click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                     help="Output format: rich (panels, colour), text (plain lines) or json (JSON Lines, one "
                          "event per line). Default: rich on a terminal, text otherwise.")(f)
    f = click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False),
                     help="Extra rule directory, added to the built-in pack and ~/.config/sglang-doctor/rules/ "
                          "(repeatable; later overrides earlier by rule id).")(f)
    f = click.option("--gpus", default="a6000x2", show_default=True, help=GPUS_HELP)(f)
    f = click.option("--gpu-sm", default=None, metavar="X.Y", help=GPU_SM_HELP)(f)
    f = click.option("--model-config", type=click.Path(dir_okay=False),
                     help="The model's config.json, for the memory planner when the log's model path is not "
                          "readable here.")(f)
    f = click.option("--sglang-version", default=None, metavar="X.Y.Z",
                     help="The SGLang version whose flags a fix uses, when the log does not say (e.g. 0.5.9).")(f)
    return f


def check_version(version: str | None) -> None:
    """--sglang-version must look like a release (0.5.9, 0.5.10.post1, 0.5.10rc1)."""
    import re

    if version is None:
        return
    if not re.fullmatch(r"v?\d+\.\d+(\.\d+)*((\.|-)?(post|dev|rc|a|b)\d*)*", version.strip()):
        raise InputError(f"--sglang-version {version}: not an SGLang version (expected e.g. 0.5.9 or 0.5.23)")


def check_rule_dirs(rule_dirs) -> None:
    for d in rule_dirs:
        p = Path(d)
        if not p.exists():
            raise InputError(f"--rules {d}: no such directory")
        if not p.is_dir():
            raise InputError(f"--rules {d}: not a directory")


def check_common(rule_dirs, gpus, gpu_sm, model_config, sglang_version):
    """Every common option checked before any work: (ruleset, hardware, model config)."""
    check_version(sglang_version)
    check_rule_dirs(rule_dirs)
    hw = load_hardware(gpus, gpu_sm)
    config = load_model_config(model_config)
    return load_ruleset(rule_dirs), hw, config


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
        ruleset = rules_engine.RuleSet.load([Path(d) for d in rule_dirs])
    except rules_engine.RuleLoadError as exc:
        raise InputError(f"bad rule file: {str(exc).splitlines()[0]}") from None
    for warning in getattr(ruleset, "load_warnings", ()):  # a bad user rule file is skipped, not fatal
        click.echo(f"sglang-doctor: warning: {warning}", err=True)
    return ruleset


def load_hardware(name: str, sm: str | None = None):
    try:
        from sglang_doctor.remedy import hardware
    except ImportError:
        return None
    try:
        return hardware.get_profile(name, sm=sm)
    except ValueError as exc:
        raise InputError(str(exc).splitlines()[0]) from None


def load_model_config(path: str | None) -> dict | None:
    """The --model-config file, checked to be a config the planner can read (InputError if not)."""
    if not path:
        return None
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except FileNotFoundError:
        raise InputError(f"--model-config {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"--model-config {path}: is a directory (give its config.json)") from None
    except OSError as exc:
        raise InputError(f"--model-config {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        msg = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InputError(f"--model-config {path}: not JSON ({msg})") from None
    problem = config_problem(cfg)
    if problem:
        raise InputError(f"--model-config {path}: {problem}")
    return cfg


def config_problem(cfg) -> str | None:
    """Why a parsed JSON value is not a model config.json the planner can use, or None."""
    from sglang_doctor.remedy import model_config

    return model_config.problem(cfg)


def make_pipeline(rule_dirs, gpus, model_config, sglang_version, gpu_sm=None, **kw) -> StreamPipeline:
    ruleset, hw, config = check_common(rule_dirs, gpus, gpu_sm, model_config, sglang_version)
    return StreamPipeline(ruleset, version=sglang_version, hardware=hw, model_config=config, **kw)


MAIN_EPILOG = """\b
Examples:
  sglang-doctor explain --model-config config.json /root/sglang-serve.log
  tail -f /root/sglang-serve.log | sglang-doctor -
  sglang-doctor run --yes --log serve.log -- python -m sglang.launch_server --model-path M --tp-size 2
  sglang-doctor plan --model-config config.json --gpus a6000x2 -- --tp-size 2 --context-length 65536

\b
""" + EXIT_CODES_HELP


@click.group(cls=DoctorGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=MAIN_EPILOG)
@click.version_option(__version__, prog_name="sglang-doctor")
def main():
    """Read SGLang server logs, name why a launch died, and give the flag change that fixes it."""


EXPLAIN_EPILOG = """\b
Examples:
  sglang-doctor explain /root/sglang-serve.log
  sglang-doctor explain --model-config fixtures/models/qwen3_6_27b_like.json fixtures/seed/seed_full.log
  sglang-doctor explain --format json old.log.gz serve.log.attempts.json | jq .rule

\b
Every launch in the log is evidence: a fix is never a change another launch of the same log
already ran and died of the same way. A file that holds no log text (empty, or binary) gives
exit 0 and a hint on stderr.
""" + EXIT_CODES_HELP


@main.command(epilog=EXPLAIN_EPILOG)
@click.argument("logfiles", nargs=-1, required=True, metavar="LOGFILE...")
@common_options
def explain(logfiles, fmt, rule_dirs, gpus, gpu_sm, model_config, sglang_version):
    """Read finished log(s) and diagnose every incident (gzip and run's LOG.attempts.json too)."""
    ruleset, hw, config = check_common(rule_dirs, gpus, gpu_sm, model_config, sglang_version)
    reporter = Reporter(fmt)
    # the modules and the rule pack live to the end: the collector need not walk them again
    # (unfrozen when done: a caller in the same process, e.g. a test, keeps its collector).
    # With them frozen the old generation is nearly empty, so every tenth young collection
    # was a full one; a larger young generation makes them rare (GC_THRESHOLDS)
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        _explain_files(logfiles, reporter, ruleset, hw, config, sglang_version)
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        # ... but at the interpreter's exit they are frozen again: its last collections
        # (after sys.modules is cleared) walked and freed every module, class and rule for
        # nothing, 60-80 ms of CPU after a GiB, 5 ms frozen (the OS takes the memory back)
        atexit.unregister(gc.freeze)
        atexit.register(gc.freeze)


# the collector's thresholds while explain reads (CPython's default: 700, 10, 10): about 10
# young collections per GiB of the v2 benchmark log instead of ~140 young and 13 older ones
# (thread CPU 28 -> 14 ms), peak RSS unchanged within the run-to-run spread
GC_THRESHOLDS = (10_000, 10, 10)


def _explain_files(logfiles, reporter, ruleset, hw, config, sglang_version) -> None:
    total = 0
    shown: set[str] = set()
    for path in logfiles:
        if path.endswith(".attempts.json"):
            _explain_history(path, reporter)
            continue
        pipe = StreamPipeline(ruleset, version=sglang_version, hardware=hw, model_config=config, whole_log=True,
                              capacity=True)
        reporter.otel.log_path = os.path.abspath(path)
        if len(logfiles) > 1:
            reporter.message(f"# {path}", style="bold")
        sniff = _Sniffer()
        # read and searched ahead in a thread; a big file's later stages imported meanwhile,
        # its blocks mapped rather than copied when it is settled (read/mapped.py)
        big = _big_file(path)
        for block in pipe.read_ahead(open_log(path, mapped=big), prepare=big):
            sniff.see(block)
            for ev in pipe.feed(block):
                _explain_event(reporter, ev)
            # dropped before the next one is asked for: the read-ahead reads a block once the
            # last one handed over is taken, and holds three at most when this one is gone
            del block
        for ev in pipe.finish():
            _explain_event(reporter, ev)
        _print_warnings(pipe.warnings, shown)
        hint = sniff.hint(pipe)
        if hint:
            click.echo(f"sglang-doctor: {path}: {hint}", err=True)
        summary = pipe.summary()
        if len(logfiles) > 1:
            summary["file"] = path
        reporter.event(summary)
        total += pipe.incident_count
    sys.exit(ExitCode.INCIDENTS if total else ExitCode.OK)


# a file this big is read in several blocks: the remedy modules are imported while its first
# one is read and searched (a small log, often without an incident, need not pay for them)
PREPARE_BYTES = 32 << 20


def _big_file(path: str) -> bool:
    try:
        return os.stat(path).st_size >= PREPARE_BYTES
    except OSError:  # (open_log says what is wrong with it)
        return False


def _print_warnings(warnings, shown: set[str]) -> None:
    """Each warning once per run (several incidents or files may give the same one)."""
    for warning in warnings:
        if warning not in shown:
            shown.add(warning)
            click.echo(f"sglang-doctor: warning: {warning}", err=True)


class _Sniffer:
    """Notices input that is not log text: empty, or binary (NUL and control bytes)."""

    SAMPLE = 64 * 1024

    def __init__(self) -> None:
        self.head = b""
        self.size = 0

    def see(self, block: bytes) -> None:
        self.size += len(block)
        if len(self.head) < self.SAMPLE:
            self.head += block[: self.SAMPLE - len(self.head)]

    def hint(self, pipe: StreamPipeline) -> str | None:
        if pipe.incident_count or pipe.launches:
            return None
        if self.size == 0:
            return "it is empty: nothing to diagnose"
        controls = sum(1 for b in self.head if b < 32 and b not in (9, 10, 13, 27)) + self.head.count(b"\xff")
        if controls > len(self.head) * 0.05:
            return ("this does not look like a log (binary data); give the server's text log "
                    "(e.g. the file SGLang's output was redirected to)")
        if pipe.lines_seen and not _looks_like_sglang(self.head):
            return "no SGLang launch or traceback found: is this an SGLang server log?"
        return None


def _looks_like_sglang(head: bytes) -> bool:
    return any(word in head for word in (b"sglang", b"server_args", b"Traceback", b"TP0", b"Load weight"))


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


FLUSH_HELP = ("Seconds of silence after which an open incident is reported (> 0; the traceback may "
              "still be growing before that).")


class Seconds(click.ParamType):
    """A finite number of seconds, >= 0 (``positive``: > 0); a bad one (text, negative, ``nan``,
    ``inf``) is click's one-line usage error, exit 2.  (click's FloatRange lets ``nan`` through,
    which a select() or sleep timeout then turns into a spin or a traceback.)"""

    name = "seconds"

    def __init__(self, positive: bool = False):
        self.positive = positive

    def convert(self, value, param, ctx):
        import math

        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number) or number < 0 or (self.positive and number == 0):
            self.fail(f"{value!r} is not a number of seconds {'> 0' if self.positive else '>= 0'}", param, ctx)
        return number


def confirm_options(f):
    """--confirm-after / --confirm-serving-after: the bounded wait for a provisional incident's
    evidence (confirm_wait.py), for watch and pipe mode."""
    from sglang_doctor.confirm_wait import SERVING_S, STARTUP_S

    f = click.option("--confirm-serving-after", type=Seconds(), default=SERVING_S, show_default=True,
                     metavar="SECONDS",
                     help="A provisional incident while serving stands (a 'confirmed' event) after this many "
                          "seconds with no batch line of its launch: an idle server logs none, and the log cannot "
                          "tell idle from hung (>= 0).")(f)
    f = click.option("--confirm-after", type=Seconds(), default=STARTUP_S, show_default=True, metavar="SECONDS",
                     help="A provisional incident before ready (a failure SGLang logs and may go on from) stands "
                          "(a 'confirmed' event) after this many seconds with no new log output and no ready "
                          "line; a start-up that still writes goes on waiting (>= 0; 0: as soon as the input "
                          "available has been read).")(f)
    return f

PIPE_EPILOG = """\b
Examples:
  tail -f /root/sglang-serve.log | sglang-doctor -
  python -m sglang.launch_server --model-path M 2>&1 | tee serve.log | sglang-doctor - --format json
  kubectl logs -f pod/sglang-0 | sglang-doctor - --model-config config.json

\b
Each incident is printed as soon as its traceback is complete; at the end of the input the
warnings and a summary follow. A provisional incident (a failure SGLang logs and may go on
from) is withdrawn or confirmed when the log decides it, or confirmed when the input stays
quiet for --confirm-after / --confirm-serving-after seconds.
""" + EXIT_CODES_HELP


@main.command("-", epilog=PIPE_EPILOG)
@click.option("--flush-after", type=Seconds(positive=True), default=1.0, show_default=True,
              help=FLUSH_HELP)
@confirm_options
@common_options
def pipe_mode(flush_after, confirm_after, confirm_serving_after, fmt, rule_dirs, gpus, gpu_sm, model_config,
              sglang_version):
    """Read standard input as it streams (tail -f log | sglang-doctor -)."""
    from sglang_doctor.confirm_wait import ConfirmWait

    pipe = make_pipeline(rule_dirs, gpus, model_config, sglang_version, gpu_sm=gpu_sm)
    wait = ConfirmWait(pipe, confirm_after, confirm_serving_after)
    reporter = Reporter(fmt, progress=True)
    fd = sys.stdin.fileno()
    interrupts.install()
    sniff = _Sniffer()
    shown: set[str] = set()

    def show(ev) -> None:
        reporter.event(ev)
        if ev["event"] == "incident":  # a warning this incident raised, now and once
            _print_warnings(pipe.warnings, shown)

    try:
        with interrupts.deferred():  # a signal ends the loop at a safe point (as in watch)
            dirty, last_data = False, time.monotonic()
            while True:
                interrupts.check()
                waits = [t for t in (max(0.0, flush_after - (time.monotonic() - last_data)) if dirty else None,
                                     wait.remaining()) if t is not None]
                ready, _, _ = select.select([fd], [], [], min(waits + [STOP_CHECK]))
                if not ready:  # all the input available is read
                    if dirty and time.monotonic() - last_data >= flush_after:
                        for ev in pipe.flush_idle():
                            show(ev)
                        dirty = pipe.idle_deferred > 0  # mid-line: ask again after another gap
                        last_data = time.monotonic() if dirty else last_data
                    for ev in wait.check():  # a provisional incident whose evidence stayed away
                        show(ev)
                    continue
                data = os.read(fd, 1 << 20)
                if not data:
                    break
                sniff.see(data)
                for ev in pipe.feed(data):
                    show(ev)
                wait.saw_input()
                dirty, last_data = True, time.monotonic()
            for ev in pipe.finish():
                show(ev)
    except KeyboardInterrupt as exc:
        for ev in pipe.finish():
            show(ev)
        reporter.close()
        _print_warnings(pipe.warnings, shown)
        reporter.event(pipe.summary())
        sys.exit(TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED)
    stopped = interrupts.take()  # a signal during the last reading: the input is complete all the same
    reporter.close()
    _print_warnings(pipe.warnings, shown)
    hint = sniff.hint(pipe)
    if hint:
        click.echo(f"sglang-doctor: standard input: {hint}", err=True)
    reporter.event(pipe.summary())
    if stopped is not None:
        sys.exit(TERMINATED if issubclass(stopped, Terminated) else ExitCode.INTERRUPTED)
    sys.exit(ExitCode.INCIDENTS if pipe.incident_count else ExitCode.OK)


WATCH_EPILOG = """\b
Examples:
  sglang-doctor watch /root/sglang-serve.log
  sglang-doctor watch --poll --from-end /mnt/nfs/serve.log
  sglang-doctor watch --exit-on-incident --format json serve.log > incident.json

\b
Follows the file by name until Ctrl-C or SIGTERM (exit 130 / 143); with --exit-on-incident it
stops at the first incident that stands (exit 1): a provisional one (a failure SGLang logs and
may go on from) stops it once confirmed, and following goes on when it is withdrawn. When the
log goes quiet after one, it stands after --confirm-after (before ready) or
--confirm-serving-after (while serving) seconds.
""" + EXIT_CODES_HELP


@main.command(epilog=WATCH_EPILOG)
@click.argument("logfile")
@click.option("--flush-after", type=Seconds(positive=True), default=1.0, show_default=True,
              help=FLUSH_HELP)
@click.option("--poll", is_flag=True, help="Poll the file instead of using inotify (network or container mounts).")
@click.option("--poll-interval", type=Seconds(positive=True), default=1.0, show_default=True,
              help="Seconds between checks of the file when polling, and between checks for it to appear "
                   "(> 0).")
@click.option("--from-end", is_flag=True, help="Start at the end of an existing file instead of its beginning.")
@click.option("--exit-on-incident", is_flag=True,
              help="Stop after the first incident that stands (exit 1); a provisional one once it is confirmed "
                   "(by the log, or by --confirm-after / --confirm-serving-after).")
@confirm_options
@metrics_options
@common_options
def watch(logfile, flush_after, poll, poll_interval, from_end, exit_on_incident, confirm_after, confirm_serving_after,
          metrics_port, metrics_host, node, fmt, rule_dirs, gpus, gpu_sm, model_config, sglang_version):
    """Follow a log (before it exists, across truncation, rotation and relaunches)."""
    from sglang_doctor.confirm_wait import ConfirmWait
    from sglang_doctor.read import follow

    pipe = make_pipeline(rule_dirs, gpus, model_config, sglang_version, gpu_sm=gpu_sm)
    wait = ConfirmWait(pipe, confirm_after, confirm_serving_after)
    reporter = Reporter(fmt, progress=True)
    reporter.otel.log_path = os.path.abspath(logfile)
    start_metrics(reporter, metrics_port, metrics_host, node)
    interrupts.install()
    last_data = None
    following = f"still following {logfile} (Ctrl-C to stop)"
    shown: set[str] = set()

    def show(ev) -> None:
        reporter.event(ev)
        if ev["event"] == "incident":
            _print_warnings(pipe.warnings, shown)  # a warning this incident raised, now and once
            if exit_on_incident and not ev.get("provisional"):
                sys.exit(ExitCode.INCIDENTS)
            if exit_on_incident:  # the launch may yet survive it: stop once it is confirmed
                option, seconds = (("--confirm-serving-after", confirm_serving_after)
                                   if ev.get("provisional") == "serving" else ("--confirm-after", confirm_after))
                reporter.message("--exit-on-incident: waiting for this provisional incident to be confirmed "
                                 "(then exit 1) or withdrawn (then following on); it stands after "
                                 f"{seconds:g} s with no evidence ({option})", style="dim")
            reporter.message(following, style="dim")
        elif ev["event"] == "confirmed" and exit_on_incident:  # a provisional incident stands
            sys.exit(ExitCode.INCIDENTS)

    try:
        # a signal ends the loop at a safe point (interrupts.deferred): never half-way through
        # the follower (its wake-up lock left held: close() would wait for ever) or the pipeline
        with interrupts.deferred():
            try:
                follower = follow.Follower(logfile, poll_interval=poll_interval, use_inotify=not poll,
                                           start_at_end=from_end)
            except follow.FollowError as exc:
                raise InputError(str(exc)) from None
            with follower:
                while True:
                    interrupts.check()
                    try:
                        got = follower.read()
                    except follow.FollowError as exc:
                        raise InputError(str(exc)) from None
                    for fev in got:
                        if fev.kind == "data":
                            events = pipe.feed(fev.data)
                            wait.saw_input()
                            last_data = time.monotonic()
                        elif fev.kind in ("truncated", "rotated", "deleted"):
                            events = pipe.reset(fev.kind)
                            reporter.event({"event": "status", "text": f"{logfile}: {fev.detail or fev.kind}"})
                        else:
                            events = []
                            if fev.detail:
                                reporter.event({"event": "status", "text": fev.detail})
                        for ev in events:
                            show(ev)
                    if got:
                        continue
                    if last_data is not None and time.monotonic() - last_data >= flush_after:
                        for ev in pipe.flush_idle():
                            show(ev)
                        last_data = time.monotonic() if pipe.idle_deferred else None  # mid-line: wait again
                    for ev in wait.check():  # all the input available is read: what stayed without evidence
                        show(ev)
                    timeout = poll_interval if last_data is None else max(0.01, flush_after - (time.monotonic() - last_data))
                    due = wait.remaining()
                    if due is not None:
                        timeout = min(timeout, max(0.01, due))
                    follower.wait(min(timeout, STOP_CHECK))  # a signal waits at most this long
    except KeyboardInterrupt as exc:
        # what the log already holds is reported, not dropped (an incident in its --flush-after gap)
        for ev in pipe.finish():
            reporter.event(ev)
        reporter.close()
        _print_warnings(pipe.warnings, shown)
        sys.exit(TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED)


def _register_commands() -> None:
    """The subcommands that live in their own modules (they import this one for its helpers)."""
    from sglang_doctor.cli.plan import plan
    from sglang_doctor.cli.rules import rules
    from sglang_doctor.cli.run import run

    _describe_run(run)
    for command in (rules, plan, run):
        main.add_command(command)
    from sglang_doctor.cli.check import check  # issue 14
    from sglang_doctor.cli.flags import flags_command  # issue 14
    main.add_command(flags_command)
    main.add_command(check)


RUN_EPILOG = """\b
Examples:
  sglang-doctor run --yes --log /root/sglang-serve.log -- python -m sglang.launch_server \\
      --model-path /root/models/Qwen3.6-27B --tp-size 2 --mem-fraction-static 0.85
  sglang-doctor run --dry-run -- python -m sglang.launch_server --model-path M --tp-size 2
  sglang-doctor run --until-ready --via "ssh root@gpu-host --" --health-url http://gpu-host:30000/health \\
      -- python -m sglang.launch_server --model-path M --host 0.0.0.0

\b
Everything after -- is the launch command, run as an argv list (no shell).
Exit codes: 0 the server became ready (--until-ready / --detach: and was stopped or left
running); 1 gave up, the server is not ready; 2 usage or input error (one line on stderr);
130 interrupted (Ctrl-C); 143 stopped by SIGTERM. The server's process group is stopped first.
"""

_RUN_OPTION_HELP = {
    "gpu_sm": GPU_SM_HELP,
    "fmt": "Output format: rich, text or json (JSON Lines, one event per line). Default: rich on a terminal, "
           "text otherwise.",
    "rule_dirs": "Extra rule directory, added to the built-in pack (repeatable; later overrides earlier by id).",
    "gpus": GPUS_HELP,
    "model_config": "The model's config.json, for the memory planner when the --model-path directory is not "
                    "readable here.",
    "sglang_version": "The SGLang version whose flags a fix uses, when neither the log nor the installed "
                      "SGLang says (e.g. 0.5.9).",
    "max_attempts": "Launches at most, the first included.",
}


def _describe_run(command: click.Command) -> None:
    """Describe run's options that its module leaves undescribed, and show `--` in its usage.

    Only fills what is missing: run's own texts win."""
    for param in command.params:
        if isinstance(param, click.Option) and not param.help and param.name in _RUN_OPTION_HELP:
            param.help = _RUN_OPTION_HELP[param.name]
        if isinstance(param, click.Argument) and param.name == "command":
            param.metavar = "-- CMD [ARGS]..."
    if not command.epilog:
        command.epilog = RUN_EPILOG
    _check_dry_run_flags(command)


def _check_dry_run_flags(command: click.Command) -> None:
    """`run --dry-run` refuses an SGLang launch whose flags cannot work (a typo, a value out of
    range), one line and exit 2, instead of showing it as what would run."""
    callback = command.callback

    def checked(*args, **kwargs):
        argv = list(kwargs.get("command") or ())
        if argv and argv[0] == "--":
            argv = argv[1:]
        if kwargs.get("dry_run") and argv:
            _refuse_bad_launch_flags(argv, kwargs.get("sglang_version"))
        return callback(*args, **kwargs)

    command.callback = checked


def _refuse_bad_launch_flags(argv: list[str], version: str | None) -> None:
    from sglang_doctor.remedy import flags, launch_check

    if not launch_check.is_sglang_launch(argv):
        return
    check_version(version)
    resolved, _source = flags.resolve_version(None, version)
    problems = launch_check.check_argv(argv, flags.load_catalog(resolved, prefer_shipped=True))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"the launch command: {problems[0]}{more}")


_register_commands()
