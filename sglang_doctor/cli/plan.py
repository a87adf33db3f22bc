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

from sglang_doctor.cli.app import GPU_SM_HELP, GPUS_HELP
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
    """SGLang launch flags -> {dest: value}.  ValueError (one line naming the flag) on bad input:
    a flag the release does not have, a value of the wrong type or out of range."""
    from sglang_doctor.remedy import launch_check

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
            raise ValueError(catalog.validate(name, True) or f"unknown SGLang {version} flag {name}")
        takes_value = spec.takes_value if spec is not None else None
        dest = spec.dest if spec is not None else name[2:].replace("-", "_")
        if eq:
            value: Any = inline
        elif takes_value is False:
            value = True
        elif i + 1 < len(argv) and not _is_flag(argv[i + 1]):
            i += 1
            value = argv[i]
        elif takes_value:
            raise ValueError(f"{name} needs a value")
        else:
            value = True
        if spec is not None and takes_value:
            reason = catalog.validate(spec.name, value)
            if reason:
                raise ValueError(reason)
        reason = launch_check.check_value(name, dest, value)
        if reason:
            raise ValueError(reason)
        if isinstance(value, str):
            value = _number(value)
        if spec is not None and takes_value is False and value is True and getattr(spec, "default", None) is True:
            value = False  # a store_false flag
        out[dest] = value
        i += 1
    return out


def _is_flag(token: str) -> bool:
    if not token.startswith("-"):
        return False
    try:
        float(token)  # a negative number is a value (--chunked-prefill-size -1)
        return False
    except ValueError:
        return True


def flag_text(dest: str, value: Any, version: str) -> str:
    """A planner change as the flag one pastes: ``--mem-fraction-static 0.84``."""
    from sglang_doctor.remedy.launch_command import render_scalar

    catalog = _catalog(version)
    spec = catalog.by_dest(dest) if catalog is not None else None
    flag = spec.name if spec is not None else "--" + dest.replace("_", "-")
    if value is None or value is False:
        return f"without {flag}"
    if value is True:
        return flag
    return f"{flag} {render_scalar(value)}"


def running_reason(p) -> str | None:
    """Which max_running_requests SGLang will use, and why (the cap that wins)."""
    st = p.settings
    if st is None:
        return None
    n = p.max_running_requests
    if st.max_running is None:
        start = "SGLang derives it from the KV pool (tokens / context length x 512, within 2048-4096)"
    elif any("defaults to 48" in note for note in st.notes):
        start = "speculative decoding makes the default 48"
    else:
        start = f"--max-running-requests asks for {st.max_running}"
    asked = st.max_running
    if p.mamba_cache_size is not None and st.mamba_ratio and (asked is None or p.mamba_cache_size // st.mamba_ratio < asked) \
            and n == p.mamba_cache_size // st.mamba_ratio:
        per = (f"{st.mamba_ratio} state slots per running request (the radix cache keeps extra state; "
               "--disable-radix-cache makes it 1)" if st.mamba_ratio > 1 else "1 state slot per running request")
        return (f"max_running_requests: SGLang will use {n}: {start}, but the mamba state pool has "
                f"{p.mamba_cache_size} slots at {per}; --max-mamba-cache-size or a higher "
                f"--mamba-full-memory-ratio raise it, at the KV pool's expense")
    if asked is not None and n < asked and n == p.max_total_num_tokens // 2:
        return (f"max_running_requests: SGLang will use {n}: {start}, but the KV pool "
                f"({p.max_total_num_tokens} tokens) caps it at half its tokens")
    return f"max_running_requests: SGLang will use {n}: {start}"


def _verdict(p) -> str:
    return "fits" if p.fits else f"does NOT fit ({p.failing}): {p.error}"


def _text_report(p, hw, version: str) -> str:
    lines = [f"Per-GPU memory budget (GiB): {hw.count} x {hw.gpu_name} ({hw.usable_gb:.1f} GiB usable), SGLang {version}"]
    for name, gb in _rows(p):
        lines.append(f"  {name:<52} {gb:8.2f}")
    lines.append(f"  => {_verdict(p)}")
    lines.append(f"  max_total_num_tokens={p.max_total_num_tokens} max_running_requests={p.max_running_requests}"
                 + (f" mamba slots={p.mamba_cache_size}" if p.mamba_cache_size is not None else ""))
    reason = running_reason(p)
    if reason:
        lines.append(f"  {reason}")
    lines += [f"  note: {n}" for n in p.notes if "defaults to 48" not in n or not reason]
    return "\n".join(lines)


def _rows(p) -> list[tuple[str, float]]:
    return [("free after init (pre)", p.pre_gb),
            (f"pool budget: avail - pre x (1 - {p.mem_fraction_static:.3f})", p.budget_gb), *p.rows]


def _rich_report(p, hw, version: str, candidates, console) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"Per-GPU memory budget: {hw.count} x {hw.gpu_name}, SGLang {version}", title_justify="left")
    table.add_column("item", overflow="fold")
    table.add_column("GiB", justify="right", no_wrap=True)
    for name, gb in _rows(p):
        table.add_row(name, f"{gb:.2f}", style="red" if name.startswith("free headroom") and gb < 0 else None)
    console.print(table)
    console.print(Text("=> " + _verdict(p), style="bold green" if p.fits else "bold red"))
    console.print(f"max_total_num_tokens={p.max_total_num_tokens} max_running_requests={p.max_running_requests}"
                  + (f" mamba slots={p.mamba_cache_size}" if p.mamba_cache_size is not None else ""))
    reason = running_reason(p)
    if reason:
        console.print(Text(reason))
    for n in p.notes:
        if "defaults to 48" not in n or not reason:
            console.print(Text(f"note: {n}", style="dim"))
    for c in candidates:
        console.print(Text(_candidate_line(c, version)))


PLAN_EPILOG = """\b
Examples:
  sglang-doctor plan --model-config config.json -- --tp-size 2 --context-length 65536
  sglang-doctor plan --model-config fixtures/models/qwen3_6_27b_like.json --sglang-version 0.5.9 -- \\
      --tp-size 2 --mem-fraction-static 0.85 --speculative-algo NEXTN --speculative-num-steps 3
  sglang-doctor plan --model-config config.json --gpus 23034MiBx4 --gpu-sm 8.6 --format json -- --tp-size 4
  sglang-doctor plan --log /root/sglang-serve.log --model-config config.json

\b
The flags after -- are checked against that SGLang release (a typo names the closest flag)
and for range (--mem-fraction-static between 0 and 1, --tp-size x --pp-size within --gpus).
Exit codes: 0 the launch fits; 1 it does not (the launches that fit follow); 2 usage or input
error (one line on stderr).
"""


@click.command("plan", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
               epilog=PLAN_EPILOG)
@click.option("--model-config", required=False, type=click.Path(dir_okay=False),
              help="The model's config.json (from its Hugging Face repository or model directory); "
                   "required unless --log is given.")
@click.option("--log", "log_path", default=None, type=click.Path(dir_okay=False),
              help="A start-up log: where its memory went and what capped its capacity (cli/plan_log.py).")
@click.option("--gpus", default="a6000x2", show_default=True, help=GPUS_HELP)
@click.option("--gpu-sm", default=None, metavar="X.Y", help=GPU_SM_HELP)
@click.option("--sglang-version", default=None, metavar="X.Y.Z",
              help=f"SGLang version whose sizing and flags to follow (default {NEWEST_KNOWN}).")
@click.option("--format", "fmt", type=click.Choice(("rich", "text", "json")), default=None,
              help="Output format: rich, text or json (one JSON document). Default: rich on a terminal, "
                   "text otherwise.")
@click.option("--search/--no-search", "do_search", default=True,
              help="When the launch does not fit, also list launches that do (default: on).")
@click.argument("flags", nargs=-1, type=click.UNPROCESSED, metavar="[-- FLAGS...]")
def plan(model_config, log_path, gpus, gpu_sm, sglang_version, fmt, do_search, flags):
    """Print the per-GPU memory budget of a launch: the model's config.json and the SGLang FLAGS after --."""
    if log_path is not None:
        from sglang_doctor.cli import plan_log

        sys.exit(plan_log.run(log_path, model_config, gpus, sglang_version, fmt, list(flags)))
    if model_config is None:
        click.echo("sglang-doctor plan: --model-config is required (or --log LOG)", err=True)
        sys.exit(ExitCode.INPUT_ERROR)
    from sglang_doctor.cli import app
    from sglang_doctor.remedy import launch_check
    from sglang_doctor.remedy import planner

    def refuse(message: str):
        click.echo(f"sglang-doctor plan: {message}", err=True)
        sys.exit(ExitCode.INPUT_ERROR)

    try:
        app.check_version(sglang_version)
        cfg = app.load_model_config(model_config)
        hw = app.load_hardware(gpus, gpu_sm)
    except app.InputError as exc:
        refuse(str(exc))
    version = sglang_version or NEWEST_KNOWN
    flags = list(flags)
    if flags and flags[0] == "--":
        flags = flags[1:]
    try:
        args = parse_flags(flags, version)
    except ValueError as exc:
        refuse(str(exc).splitlines()[0])
    layout = launch_check.check_layout(args, hw)
    if layout:
        refuse(layout)
    try:
        result = planner.plan(cfg, hw, args, version)
        candidates = planner.search(cfg, hw, args, version) if do_search and not result.fits else []
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        refuse(f"the planner cannot size this launch ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    fmt = fmt or ("rich" if sys.stdout.isatty() else "text")
    if fmt == "json":
        doc = {"gpus": hw.to_json(), "sglang_version": version, "flags": args, "plan": result.to_json(),
               "max_running_requests_reason": running_reason(result),
               "candidates": [dict(c.to_json(), flags=[flag_text(k, v, version) for k, v in c.changes.items()])
                              for c in candidates]}
        click.echo(json.dumps(doc, indent=2, default=str))
    elif fmt == "rich":
        from rich.console import Console

        _rich_report(result, hw, version, candidates, Console(highlight=False))
    else:
        click.echo(_text_report(result, hw, version))
        for c in candidates:
            click.echo(_candidate_line(c, version))
    sys.exit(ExitCode.OK if result.fits else ExitCode.INCIDENTS)


def _candidate_line(c, version: str = NEWEST_KNOWN) -> str:
    changes = " ".join(flag_text(k, v, version) for k, v in c.changes.items())
    gave = f"; had to give: {', '.join(c.gave_up)}" if c.gave_up else ""
    return (f"fits: {changes} -> headroom {c.plan.headroom_gb:.1f} GiB, {c.plan.max_total_num_tokens} tokens, "
            f"{c.plan.max_running_requests} running ({c.tradeoff}{gave})")
