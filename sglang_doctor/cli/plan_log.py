"""``sglang-doctor plan --log LOG``: where the memory of a logged start-up went.

    sglang-doctor plan --log sglang-serve.log [--model-config config.json] [--sglang-version V]
                       [--format rich|text|json] [-- FLAGS the log does not show]

For every launch of LOG that sized its pools: the per-GPU budget from the log's own figures
(weights, mamba state, KV pool, CUDA graphs, what stayed free), what capped
``max_running_requests`` and ``max_total_num_tokens``, the flags that raise them and at what
cost, and the planner's prediction beside what SGLang logged (with ``--model-config``, or the
config.json at the dump's model path when it is readable here).  Flags after ``--`` complete
an excerpt whose ``server_args`` dump is missing (``--mem-fraction-static 0.85``).
Exit 0 when at least one launch was explained, 2 when LOG cannot be read or sized no pool.
"""

from __future__ import annotations

import json
import os
import sys

import click

from sglang_doctor.exit_codes import ExitCode


def _fail(message: str) -> int:
    click.echo(f"sglang-doctor plan: {message}", err=True)
    return ExitCode.INPUT_ERROR


def _load_config(path: str) -> dict:
    """A config.json the planner can read (ValueError with a one-line reason if not)."""
    from sglang_doctor.cli.app import load_model_config
    from sglang_doctor.pipeline import InputError

    try:
        return load_model_config(path)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _model_config(path: str | None, launch) -> dict | None:
    if path:
        return _load_config(path)
    model_path = (launch.server_args or {}).get("model_path")
    if isinstance(model_path, str) and os.path.isfile(os.path.join(model_path, "config.json")):
        try:
            return _load_config(os.path.join(model_path, "config.json"))
        except ValueError:
            return None
    return None


def _version(launch, cli_version: str | None) -> tuple[str | None, str]:
    if cli_version:
        return cli_version, "option"
    try:
        from sglang_doctor.remedy import flags

        return flags.resolve_version(launch.sglang_version, None, launch.version_hint)
    except Exception:  # noqa: BLE001 - no catalogue module: the log's own version or none
        return launch.sglang_version, "log"


def run(log_path: str, model_config: str | None, gpus: str, sglang_version: str | None, fmt: str | None,
        extra_flags: list[str]) -> int:
    from sglang_doctor.cli.plan import parse_flags
    from sglang_doctor.pipeline import InputError, read_incidents
    from sglang_doctor.remedy import capacity, hardware

    if not os.path.isfile(log_path):
        return _fail(f"cannot read {log_path}: no such file")
    try:
        launches, _ = read_incidents(log_path)
        hw = hardware.get_profile(gpus)
    except (InputError, OSError, ValueError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else f"cannot read {log_path}")
    found = []
    for launch in launches:
        version, source = _version(launch, sglang_version)
        try:
            if extra_flags:
                launch.server_args = {**(launch.server_args or {}), **parse_flags(extra_flags, version or "0.5.23")}
            cfg = _model_config(model_config, launch)
        except ValueError as exc:
            return _fail(str(exc))
        cap = capacity.from_launch(launch, cfg, version, hw)
        if cap is not None:
            if source != "option" and version:
                cap.notes.append(f"SGLang {version} ({source}); --sglang-version sets it")
            found.append(cap)
    if not found:
        return _fail(f"{log_path}: no launch in it sized its memory pools (no 'KV Cache is allocated' or "
                     "'max_total_num_tokens=' line)")
    fmt = fmt or ("rich" if sys.stdout.isatty() else "text")
    if fmt == "json":
        click.echo(json.dumps({"log": log_path, "capacity": [c.to_json() for c in found]}, indent=2, default=str))
    else:
        from sglang_doctor.report import terminal_safe  # figures and names come from the log

        click.echo(terminal_safe("\n\n".join(capacity.render_text(c, indent="") for c in found)))
    return ExitCode.OK
