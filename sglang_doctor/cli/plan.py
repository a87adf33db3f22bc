"""``sglang-doctor plan``: the per-GPU memory budget of a launch, without a log.

    sglang-doctor plan --model-config config.json [--gpus a6000x2] [--sglang-version 0.5.9]
                       [--format rich|text|json] [-- --tp-size 2 --context-length 65536 ...]

The flags after ``--`` are SGLang launch flags.  They are turned into SGLang's dataclass
field names with the version's flag catalogue (``sglang_doctor.remedy.flags``) when it is available,
which also resolves aliases and argparse abbreviations (``--speculative-algo``); without it,
``--x-y`` becomes ``x_y`` and values are read as int, float or string, a flag without a value
as True.  Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from sglang_doctor.exit_codes import ExitCode

NEWEST_KNOWN = "0.5.23"


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() in ("none", "null"):
        return None
    return text


def _catalog(version: str):
    """The flag catalogue of that version, or None when flags.py is not there (yet)."""
    try:
        from sglang_doctor.remedy import flags
    except ImportError:
        return None
    try:
        return flags.load_catalog(version, prefer_shipped=True)  # no SGLang import for a table
    except Exception:  # noqa: BLE001 - an unknown version falls back to plain conversion
        return None


def parse_flags(argv: list[str], version: str) -> dict[str, Any]:
    """SGLang launch flags -> {dest: value}.  ValueError (one line) on bad input."""
    catalog = _catalog(version)
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--") or arg == "--":
            raise ValueError(f"expected a --flag, got {arg!r}")
        name, eq, inline = arg.partition("=")
        spec = catalog.spec(name) if catalog is not None else None
        if catalog is not None and spec is None:
            hint = catalog.closest(name, 1) if hasattr(catalog, "closest") else []
            raise ValueError(f"unknown SGLang {version} flag {name}" + (f" (did you mean {hint[0]}?)" if hint else ""))
        takes_value = spec.takes_value if spec is not None else None
        dest = spec.dest if spec is not None else name[2:].replace("-", "_")
        if eq:
            value: Any = inline
        elif takes_value is False:
            value = True
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            i += 1
            value = argv[i]
        elif takes_value:
            raise ValueError(f"flag {name} needs a value")
        else:
            value = True
        if isinstance(value, str):
            value = _number(value)
        if spec is not None and takes_value is False and value is True and getattr(spec, "default", None) is True:
            value = False  # a store_false flag
        out[dest] = value
        i += 1
    return out


def _load_config(path: str) -> dict:
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


def _text_report(p, hw, version: str) -> str:
    lines = [f"Per-GPU memory budget: {hw.count} x {hw.gpu_name} ({hw.usable_gb:.1f} GiB usable), SGLang {version}"]
    lines.append(f"  {'free after init (pre)':<52} {p.pre_gb:8.2f}")
    lines.append(f"  {'pool budget: avail - pre x (1 - %.3f)' % p.mem_fraction_static:<52} {p.budget_gb:8.2f}")
    for name, gb in p.rows:
        lines.append(f"  {name:<52} {gb:8.2f}")
    verdict = "fits" if p.fits else f"does NOT fit ({p.failing}): {p.error}"
    lines.append(f"  => {verdict}")
    lines.append(f"  max_total_num_tokens={p.max_total_num_tokens} max_running_requests={p.max_running_requests}"
                 + (f" mamba slots={p.mamba_cache_size}" if p.mamba_cache_size is not None else ""))
    lines += [f"  note: {n}" for n in p.notes]
    return "\n".join(lines)


@click.command("plan", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--model-config", required=False, type=click.Path(dir_okay=False),
              help="The model's config.json (required without --log).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None,
              help="A logged start-up: explain its capacity from SGLang's own figures (issue 14).")
@click.option("--gpus", default="a6000x2", show_default=True, help="Hardware profile (e.g. h100-80x8) or 'auto'.")
@click.option("--sglang-version", default=None, help=f"SGLang version whose sizing to follow (default {NEWEST_KNOWN}).")
@click.option("--format", "fmt", type=click.Choice(("rich", "text", "json")), default=None,
              help="Output format (default: rich on a terminal, text otherwise).")
@click.option("--search/--no-search", "do_search", default=True, help="Also list launches that fit.")
@click.argument("flags", nargs=-1, type=click.UNPROCESSED)
def plan(model_config, log_path, gpus, sglang_version, fmt, do_search, flags):
    """Print the per-GPU memory budget for MODEL_CONFIG and the SGLang FLAGS after '--'."""
    from sglang_doctor.remedy import hardware
    from sglang_doctor.remedy import planner

    if log_path:  # capacity explained for a logged start-up: sglang_doctor/cli/capacity.py
        from sglang_doctor.cli.capacity import plan_log

        sys.exit(plan_log(log_path, model_config, gpus, sglang_version, fmt))
    if not model_config:
        click.echo("sglang-doctor plan: --model-config is required (or --log LOG)", err=True)
        sys.exit(ExitCode.INPUT_ERROR)

    version = sglang_version or NEWEST_KNOWN
    try:
        cfg = _load_config(model_config)
        hw = hardware.get_profile(gpus)
        args = parse_flags(list(flags), version)
        result = planner.plan(cfg, hw, args, version)
        candidates = planner.search(cfg, hw, args, version) if do_search and not result.fits else []
    except (ValueError, KeyError, TypeError) as exc:
        click.echo(f"sglang-doctor plan: {exc}", err=True)
        sys.exit(ExitCode.INPUT_ERROR)
    fmt = fmt or ("rich" if sys.stdout.isatty() else "text")
    if fmt == "json":
        doc = {"gpus": hw.to_json(), "sglang_version": version, "flags": args, "plan": result.to_json(),
               "candidates": [c.to_json() for c in candidates]}
        click.echo(json.dumps(doc, indent=2, default=str))
    elif fmt == "rich":
        from rich.console import Console

        console = Console()
        console.print(planner.render(result, f"{hw.count} x {hw.gpu_name}, SGLang {version}"))
        for n in result.notes:
            console.print(f"note: {n}")
        for c in candidates:
            console.print(_candidate_line(c))
    else:
        click.echo(_text_report(result, hw, version))
        for c in candidates:
            click.echo(_candidate_line(c))
    sys.exit(ExitCode.OK if result.fits else ExitCode.INCIDENTS)


def _candidate_line(c) -> str:
    changes = " ".join(f"{k}={v}" for k, v in c.changes.items())
    gave = f"; had to give: {', '.join(c.gave_up)}" if c.gave_up else ""
    return (f"fits: {changes} -> headroom {c.plan.headroom_gb:.1f} GiB, {c.plan.max_total_num_tokens} tokens, "
            f"{c.plan.max_running_requests} running ({c.tradeoff}{gave})")
