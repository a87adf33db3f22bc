"""Checks a launch's flags before anything runs: known to the release, well-typed, in range.

SGLang's argument parser checks spelling, types and choices; it lets through values that can
never work (``--mem-fraction-static 1.5``, ``--tp-size 0``) and only fails on them minutes
later.  ``check_argv`` runs both: the release's catalogue (a typo names the closest real
flag) and the ranges below.  ``check_layout`` compares the ranks a launch needs with the GPUs
it has.  Every problem is one line that starts with the flag it is about.

Used by ``plan``, ``run --dry-run`` and anything else that must refuse a launch up front.
"""

from __future__ import annotations

import math
from typing import Any

# dest -> (low, high, low_open, high_open, what the value is); None = unbounded.
# Each bound is what SGLang needs for the launch to start, not a style preference.
RANGES: dict[str, tuple[float | None, float | None, bool, bool, str]] = {
    "mem_fraction_static": (0.0, 1.0, True, True, "a fraction of each GPU's memory"),
    "tp_size": (1, None, False, False, "a number of GPUs"),
    "pp_size": (1, None, False, False, "a number of pipeline stages"),
    "dp_size": (1, None, False, False, "a number of data-parallel replicas"),
    "ep_size": (1, None, False, False, "a number of expert-parallel ranks"),
    "nnodes": (1, None, False, False, "a number of nodes"),
    "context_length": (1, None, False, False, "tokens"),
    "max_running_requests": (1, None, False, False, "requests"),
    "max_total_tokens": (1, None, False, False, "tokens"),
    "max_prefill_tokens": (1, None, False, False, "tokens"),
    "page_size": (1, None, False, False, "tokens per page"),
    "cuda_graph_max_bs": (1, None, False, False, "a batch size"),
    "max_mamba_cache_size": (1, None, False, False, "request slots"),
    "mamba_full_memory_ratio": (0.0, None, True, False, "a ratio"),
    "speculative_num_steps": (1, None, False, False, "draft steps"),
    "speculative_eagle_topk": (1, None, False, False, "a top-k"),
    "speculative_num_draft_tokens": (1, None, False, False, "tokens"),
    "port": (1, 65535, False, False, "a TCP port"),
}


def check_value(flag: str, dest: str, value: Any) -> str | None:
    """A one-line reason when ``value`` is out of SGLang's working range for ``dest``."""
    if dest == "chunked_prefill_size":  # -1 turns chunking off; 0 and other negatives never work
        number = finite_number(value)
        if number is not None and number != -1 and number < 1:
            return f"{flag} {_show(value)}: must be -1 (no chunking) or >= 1"
        return None
    bounds = RANGES.get(dest)
    number = finite_number(value)
    if bounds is None or number is None:
        return None
    low, high, low_open, high_open, what = bounds
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and (number >= high if high_open else number > high)
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        rng = f"{'>' if low_open else '>='} {_show(low)} and {'<' if high_open else '<='} {_show(high)}"
    elif low is not None:
        rng = f"{'>' if low_open else '>='} {_show(low)}"
    else:
        rng = f"{'<' if high_open else '<='} {_show(high)}"
    return f"{flag} {_show(value)}: must be {rng} ({what})"


def check_argv(argv: list[str], catalog: Any) -> list[str]:
    """Problems with the launch flags in ``argv`` (the program part before the first ``--x``
    is skipped), each one line naming the flag; empty when the launch may be tried."""
    from sglang_doctor.remedy import launch_command

    problems: list[str] = []
    for tok in launch_command.tokens(argv, catalog):
        if tok.written == "--":
            continue
        if tok.canonical is None:
            reason = catalog.validate(tok.written, True) if catalog is not None else None
            problems.append(reason or f"{tok.written}: not a flag of SGLang")
            continue
        spec = catalog.spec(tok.canonical)
        if not spec.takes_value:
            if tok.inline:
                problems.append(f"{tok.written} is a switch and takes no value")
            continue
        if not tok.values:
            problems.append(f"{tok.written} needs a value")
            continue
        value: Any = tok.values if spec.nargs in ("+", "*") or isinstance(spec.nargs, int) else tok.values[0]
        reason = catalog.validate(spec.name, value, ours=False)  # the user's own values
        if reason is None and not isinstance(value, list):
            reason = check_value(tok.written, spec.dest, value)
        if reason:
            problems.append(reason)
    return problems


def is_sglang_launch(argv: list[str]) -> bool:
    """``python -m sglang.launch_server ...`` or ``sglang serve ...`` (what the catalogue describes)."""
    for i, tok in enumerate(argv):
        if tok.startswith("--"):
            return False
        if tok == "sglang.launch_server" or tok.endswith("/sglang.launch_server"):
            return True
        if tok.rsplit("/", 1)[-1] == "sglang" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return True
    return False


def ranks_needed(args: dict[str, Any]) -> int:
    """GPUs per node a launch uses: tp x pp, times dp when DP attention does not share them."""
    tp, pp = _int(args.get("tp_size"), 1), _int(args.get("pp_size"), 1)
    dp = _int(args.get("dp_size"), 1)
    nodes = max(_int(args.get("nnodes"), 1), 1)
    total = tp * pp * (1 if args.get("enable_dp_attention") else dp)
    return math.ceil(total / nodes)


def check_layout(args: dict[str, Any], gpus: Any) -> str | None:
    """One line when the launch needs more GPUs than the profile has."""
    need = ranks_needed(args)
    have = getattr(gpus, "count", None)
    if have is None or need <= have:
        return None
    parts = [f"--tp-size {_int(args.get('tp_size'), 1)}"]
    if _int(args.get("pp_size"), 1) > 1:
        parts.append(f"--pp-size {_int(args.get('pp_size'), 1)}")
    if _int(args.get("dp_size"), 1) > 1 and not args.get("enable_dp_attention"):
        parts.append(f"--dp-size {_int(args.get('dp_size'), 1)}")
    return (f"{' '.join(parts)} needs {need} GPUs but --gpus {gpus.name} has {have} "
            f"(give a profile with x{need}, e.g. --gpus {_base(gpus.name)}x{need})")


def _base(name: str) -> str:
    head, sep, tail = name.rpartition("x")
    return head if sep and tail.isdigit() else name


def _int(value: Any, default: int) -> int:
    number = finite_number(value)
    return int(number) if number is not None else default


def finite_number(value: Any) -> float | None:
    """A finite float from a flag value (number or text), else None; booleans are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _show(value: Any) -> str:
    number = finite_number(value)
    if number is not None and number == int(number) and not (isinstance(value, str) and "." in value):
        return str(int(number))
    return str(value)
