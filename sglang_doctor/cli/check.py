"""``sglang-doctor check``: would this launch work?  A pre-flight, nothing is launched.

    sglang-doctor check [--gpus a6000x2] [--model-config config.json] [--sglang-version 0.5.9]
                        [--format text|json] -- python -m sglang.launch_server FLAGS...

Flags valid for the target release (a typo names the closest real flag), values in range,
hardware compatibility (quantization and attention backends against the GPU's SM, custom
all-reduce on PCIe) and, with --model-config, the memory plan (fits / which pool does not /
the smallest change that fits).  Exit 0: the launch should work; 1: it would fail (and why);
2: usage.  The logic is in ``sglang_doctor.remedy.preflight``.
"""

from __future__ import annotations

import json
import sys

import click

from sglang_doctor.exit_codes import ExitCode

_MARK = {"error": "FAIL", "warning": "warn", "note": "note"}


def load_model_config(path: str) -> dict:
    """A config.json as a dict; ValueError (one line) when it cannot be."""
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(cfg, dict) or "num_hidden_layers" not in (cfg.get("text_config") or cfg):
        raise ValueError(f"{path} does not look like a model config.json (no num_hidden_layers)")
    return cfg


def run_check(command: list[str], gpus: str, model_config: str | None,
              sglang_version: str | None, gpu_sm: str | None = None):
    """The pre-flight report; ValueError for bad input."""
    from sglang_doctor.remedy import flags, hardware, preflight

    version, source = flags.resolve_version(None, sglang_version)
    hw = hardware.get_profile(gpus, sm=gpu_sm)
    cfg = load_model_config(model_config) if model_config else None
    return preflight.check(list(command), version, source, hw, cfg), hw


def _launcher_follows(command: list[str]) -> bool:
    """A launch command further on: what comes before it are options given to check itself."""
    return "--" in command or any(
        w.rsplit("/", 1)[-1] in ("python", "sglang", "sglang.launch_server") or w.rsplit("/", 1)[-1].startswith("python3")
        for w in command[1:])


def text_report(report, hw) -> str:
    lines = [f"Pre-flight for SGLang {report.version} ({report.version_source}; flags from "
             f"{report.flags_from}) on {hw.count} x {hw.gpu_name}"]
    for finding in report.findings:
        lines.append(f"  {_MARK[finding.level]} [{finding.topic}] {finding.message}")
        if finding.fix:
            lines.append(f"       fix: {finding.fix}")
    for candidate in report.candidates[1:3]:
        changes = " ".join(f"{k}={v}" for k, v in candidate.changes.items())
        lines.append(f"       or: {changes} ({candidate.tradeoff})")
    verdict = ("the launch should work" if report.ok
               else "the launch would fail: " + "; ".join(
                   f.topic for f in report.findings if f.level == "error"))
    lines.append(f"  => {verdict}")
    return "\n".join(lines)


CHECK_EPILOG = """\b
Examples:
  sglang-doctor check -- python -m sglang.launch_server --model-path M --tp-size 2 --mem-fraction-static 0.85
  sglang-doctor check --gpus h100-80x8 --sglang-version 0.5.9 -- python -m sglang.launch_server \\
      --model-path M --tp-size 8 --quantization fp8
  sglang-doctor check --model-config fixtures/models/qwen3_6_27b_like.json --format json -- \\
      python -m sglang.launch_server --model-path M --tp-size 2 --context-length 65536

\b
Nothing is launched. Exit codes: 0 the launch should work; 1 it would fail (the reasons and
fixes are printed); 2 usage or input error (one line on stderr).
"""


@click.command("check", epilog=CHECK_EPILOG, context_settings={"ignore_unknown_options": True,
                                                              "allow_interspersed_args": False})
@click.option("--gpus", default="a6000x2", show_default=True,
              help="The GPUs: a profile (a6000, a100-40, a100-80, h100-80, l40s, rtx3090, rtx4090) with an "
                   "xN count, a custom per-GPU capacity such as 23034MiBx4 or 48GiBx2, or auto.")
@click.option("--gpu-sm", default=None, metavar="X.Y",
              help="Compute capability of a custom --gpus capacity (8.6 A6000/3090, 8.9 L40S/4090, 9.0 H100): "
                   "what FP8 and FA3 support is judged on. Overrides a profile's.")
@click.option("--model-config", type=click.Path(dir_okay=False), default=None,
              help="The model's config.json (enables the memory plan).")
@click.option("--sglang-version", default=None,
              help="Target SGLang release (default: the installed one, else the newest catalogue).")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="text: the verdict and its reasons; json: one JSON document.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def check(gpus, gpu_sm, model_config, sglang_version, fmt, command):
    """Would this SGLang launch work?  Checks flags, values, hardware and memory; launches nothing."""
    from sglang_doctor.cli import app as cli

    if command and command[0].startswith("-") and _launcher_follows(command):  # an option check lacks
        option = command[0].split("=", 1)[0]
        raise click.UsageError(f"no such option: {option}; the launch command goes after --",
                               ctx=click.get_current_context())
    cli.check_version(sglang_version)  # the same one-line errors, naming the option, as explain's
    cli.load_model_config(model_config)
    try:
        report, hw = run_check(list(command), gpus, model_config, sglang_version, gpu_sm)
    except (ValueError, KeyError, TypeError) as exc:
        click.echo(f"sglang-doctor check: {exc}", err=True)
        sys.exit(ExitCode.INPUT_ERROR)
    if fmt == "json":
        click.echo(json.dumps({"gpus": hw.to_json(), **report.to_json()}, default=str))
    else:
        click.echo(text_report(report, hw))
    sys.exit(ExitCode.OK if report.ok else ExitCode.INCIDENTS)


def preflight_for_run(command: list[str], gpus: str, model_config: str | None,
                      sglang_version: str | None, gpu_sm: str | None = None):
    """``run``'s pre-flight before its first launch: the report when the launch would fail,
    else None.  A command that is not an SGLang launch (a wrapper script) is not checked."""
    from sglang_doctor.remedy import preflight

    try:
        preflight.launch_argv(list(command))
    except ValueError:
        return None
    report, hw = run_check(list(command), gpus, model_config, sglang_version, gpu_sm)
    return None if report.ok else (report, hw)
