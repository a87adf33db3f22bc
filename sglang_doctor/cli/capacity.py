"""``sglang-doctor plan --log LOG [--model-config C]``: capacity explained for a logged start-up.

Wiring only; the explanation is ``sglang_doctor.remedy.capacity``.  The launch read is the last
one in the log with SGLang's memory figures; its version is the log's, else ``--sglang-version``,
else the newest release its dump's fields fit (``remedy.release_range``).
"""

from __future__ import annotations

import json
import os
import sys

import click

from sglang_doctor.exit_codes import ExitCode


def plan_log(log_path: str, model_config: str | None, gpus: str, sglang_version: str | None,
             fmt: str | None) -> int:
    from sglang_doctor.cli.check import load_model_config
    from sglang_doctor.pipeline import InputError, read_incidents
    from sglang_doctor.remedy import capacity, flags, hardware, release_range

    try:
        launches, _ = read_incidents(log_path)
        figured = [l for l in launches if l.milestone("load_weights_end") or l.milestone("kv_cache")]
        if not figured:
            raise ValueError(f"{log_path}: no start-up with SGLang's memory figures "
                             "(Load weight end / KV Cache is allocated)")
        launch = figured[-1]
        found = (release_range.release_range(launch.server_args, launch.server_args_complete)
                 if launch.server_args else None)
        hint = f"{found.newest}-fields" if found is not None else launch.version_hint
        version, source = flags.resolve_version(launch.sglang_version, sglang_version, hint)
        cfg = load_model_config(model_config) if model_config else _config_at(launch)
        hw = hardware.from_log(launch) if gpus == "auto-from-log" else hardware.get_profile(gpus)
        if hw is None:
            raise ValueError("--gpus auto-from-log: the log has no avail-mem figures")
        result = capacity.explain(launch, cfg, hw, version)
    except (ValueError, KeyError, TypeError, InputError, OSError) as exc:
        click.echo(f"sglang-doctor plan: {exc}", err=True)
        return ExitCode.INPUT_ERROR
    title = (f"Capacity of the start-up at line {launch.line} of {log_path}: SGLang {version} "
             f"({source}{', dump fits ' + found.spec if found else ''}), {hw.count} x {hw.gpu_name}")
    if (fmt or ("rich" if sys.stdout.isatty() else "text")) == "json":
        click.echo(json.dumps({"log": log_path, "line": launch.line, "version_source": source,
                               "sglang_version_range": found.spec if found else None,
                               **result.to_json()}, default=str))
    else:
        click.echo(capacity.render_text(result, title))
    return ExitCode.OK


def _config_at(launch) -> dict | None:
    path = launch.server_args.get("model_path") if launch.server_args else None
    if not isinstance(path, str):
        return None
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
            value = json.load(fh)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
