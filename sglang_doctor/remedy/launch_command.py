"""The launch command as an argv list: parse it, rebuild it from a dump, apply a remediation.

The command is always a list of strings and is never passed through a shell.  Only flag
names a catalogue knows and values that passed ``Catalog.validate`` are ever added to it;
everything else in the user's own command is kept exactly as the user wrote it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

# How a launch is started when the log is all we have (both 0.5.9 and 0.5.23 accept it).
DEFAULT_PROGRAM = ["python", "-m", "sglang.launch_server"]

# Fields SGLang fills in at start-up from other fields or at random: pinning them in a
# rebuilt command would change nothing or change something on purpose left open.
_DERIVED_WHEN_EQUAL_TO_MODEL_PATH = ("tokenizer_path", "served_model_name", "speculative_draft_model_path")
# Filled in by ServerArgs.__post_init__ (0.5.9 and 0.5.23 server_args.py) from the platform
# or from other fields when left unset; they carry no user intent, and pinning them would
# make the rebuilt command long and tie it to one machine.
_NEVER_PINNED = (
    "random_seed", "device", "sampling_backend", "grammar_backend", "page_size", "load_balance_method",
    "file_storage_path", "encoder_transfer_backend", "expert_distribution_recorder_buffer_size",
    "hicache_ratio", "hicache_mem_layout", "hicache_storage_prefetch_policy", "speculative_moe_runner_backend",
    "swa_full_tokens_ratio", "cuda_graph_bs", "cuda_graph_bs_decode", "cuda_graph_config",
    "fp4_gemm_runner_backend", "fp8_gemm_runner_backend", "nsa_decode_backend", "nsa_prefill_backend", "nsa_prefill_cp_mode",
    "piecewise_cuda_graph_tokens", "piecewise_cuda_graph_max_tokens", "mamba_scheduler_strategy",
    "mamba_radix_cache_strategy", "moe_runner_backend", "moe_a2a_backend",
)
# Shown first in a rebuilt command; the rest follow in alphabetical order of their flags.
_FIRST = ("model_path", "tp_size", "dp_size", "pp_size", "ep_size")


class CommandError(ValueError):
    """The command cannot be changed as asked (one line for the user)."""


@dataclass
class Token:
    """One flag occurrence in an argv: where it is and what it holds."""

    start: int  # index of the flag token
    end: int  # index after its last value token
    written: str  # the option as the user wrote it (maybe an abbreviation or alias)
    canonical: str | None  # the catalogue's name, None if the catalogue does not know it
    values: list[str]
    inline: bool  # written as --flag=value


def program_end(argv: list[str]) -> int:
    """Index of the first launch flag: everything before it starts the program.

    ``python -m sglang.launch_server --x``, ``sglang serve --x``, ``ssh h -- python ...``
    all end their program part at the first token that starts with ``--``.
    """
    for i, tok in enumerate(argv):
        if tok.startswith("--"):
            return i
    return len(argv)


def tokens(argv: list[str], catalog: Any) -> list[Token]:
    """The flags of ``argv`` with their values, in order."""
    out: list[Token] = []
    i = program_end(argv)
    while i < len(argv):
        tok = argv[i]
        if not tok.startswith("--") or tok == "--":
            i += 1
            continue
        written, inline_value = (tok.split("=", 1) + [None])[:2] if "=" in tok else (tok, None)
        spec = catalog.spec(written) if catalog is not None else None
        canonical = spec.name if spec is not None else None
        values: list[str] = []
        j = i + 1
        if inline_value is not None:
            values = [inline_value]
        elif spec is None or spec.takes_value:
            many = spec is not None and spec.nargs in ("+", "*")
            while j < len(argv) and not _looks_like_flag(argv[j]):
                values.append(argv[j])
                j += 1
                if not many:
                    break
        out.append(Token(i, j, written, canonical, values, inline_value is not None))
        i = j
    return out


def _looks_like_flag(tok: str) -> bool:
    if not tok.startswith("-"):
        return False
    try:
        float(tok)  # a negative number is a value
        return False
    except ValueError:
        return True


def parse(argv: list[str], catalog: Any) -> dict[str, Any]:
    """Flag -> value of an argv (canonical names where known; True for bare flags)."""
    result: dict[str, Any] = {}
    for t in tokens(argv, catalog):
        key = t.canonical or t.written
        if not t.values:
            result[key] = True
        elif len(t.values) == 1:
            result[key] = t.values[0]
        else:
            result[key] = list(t.values)
    return result


def value_of(argv: list[str] | None, flag: str, catalog: Any) -> Any:
    """The value ``flag`` has in ``argv`` (None when absent)."""
    if not argv:
        return None
    want = catalog.canonical(flag) if catalog is not None else flag
    for t in tokens(argv, catalog):
        if (t.canonical or t.written) == want:
            if not t.values:
                return True
            return t.values[0] if len(t.values) == 1 else list(t.values)
    return None


def render_value(value: Any) -> list[str]:
    """The argv tokens for one flag value (empty for True: a bare flag)."""
    if value is True:
        return []
    if isinstance(value, (list, tuple)):
        return [render_scalar(v) for v in value]
    return [render_scalar(value)]


def render_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(round(value, 6))
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def from_server_args(server_args: dict[str, Any], catalog: Any, program: list[str] | None = None) -> list[str]:
    """A launch command equivalent to a dump: the fields that differ from the defaults.

    Auto-resolved values in the dump (a computed ``mem_fraction_static``, a chunked prefill
    size chosen from GPU memory) are pinned as they were: the rebuilt command reproduces the
    launch that failed, which is what a remediation changes.
    """
    defaults = catalog.defaults()
    field_defaults = catalog.field_defaults() if hasattr(catalog, "field_defaults") else {}
    model_path = server_args.get("model_path")
    chosen: list[tuple[str, Any]] = []
    for dest, value in server_args.items():
        spec = catalog.by_dest(dest)
        if spec is None or value is None or dest in _NEVER_PINNED:
            continue
        if dest in _DERIVED_WHEN_EQUAL_TO_MODEL_PATH and value == model_path:
            continue
        if isinstance(value, (list, tuple, dict)) and not value:
            continue
        if _same(value, defaults.get(dest)) or (dest in field_defaults and _same(value, field_defaults[dest])):
            continue
        if not spec.takes_value:
            # store_true flags appear when True; a store_false flag appears when False.
            default = defaults.get(dest)
            if isinstance(value, bool) and value != bool(default):
                chosen.append((spec.name, True))
            continue
        if isinstance(value, dict):
            if spec.type != "json":
                continue
            import json

            value = json.dumps(value, separators=(",", ":"), sort_keys=True)
        if isinstance(value, str) and catalog.validate(spec.name, value) is not None:
            continue  # raw non-literal text from the dump: never put it in a command
        if isinstance(value, (list, tuple)) and spec.nargs not in ("+", "*"):
            continue
        chosen.append((spec.name, value))

    order = {catalog.by_dest(d).name: i for i, d in enumerate(_FIRST) if catalog.by_dest(d)}
    chosen.sort(key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    argv = list(program or DEFAULT_PROGRAM)
    for flag, value in chosen:
        argv.append(flag)
        argv.extend(render_value(value))
    return argv


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) < 1e-9
        except (TypeError, ValueError):
            return False
    return a == b


def apply(argv: list[str], remediation: Any, catalog: Any) -> list[str]:
    """``argv`` with the remediation's ``set`` and ``unset`` applied.

    A flag that is set replaces every occurrence of the same option (however the user
    spelled it: alias, abbreviation, ``--flag=value``), at the place of the first one; a new
    flag goes at the end.  ``unset`` removes every occurrence.  Each flag must be known to
    the catalogue and each value valid, or ``CommandError`` is raised.
    """
    set_flags: dict[str, Any] = {}
    for flag, value in (remediation.set or {}).items():
        canonical = catalog.canonical(flag)
        if canonical is None:
            raise CommandError(f"{flag} is not a flag of SGLang {catalog.version}")
        if value is False:
            set_flags[canonical] = None  # "set to false" for a bare flag = remove it
            continue
        reason = catalog.validate(canonical, value)
        if reason is not None:
            raise CommandError(f"{flag} {value!r}: {reason}")
        set_flags[canonical] = value
    unset = set()
    for flag in remediation.unset or ():
        canonical = catalog.canonical(flag)
        unset.add(canonical or flag)

    toks = tokens(argv, catalog)
    head = argv[: program_end(argv)]
    out = list(head)
    done: set[str] = set()
    pos = program_end(argv)
    for t in toks:
        out.extend(argv[pos:t.start])  # stray positional tokens stay where they were
        pos = t.end
        key = t.canonical or t.written
        if key in unset:
            continue
        if key in set_flags:
            if key in done:
                continue
            done.add(key)
            if set_flags[key] is None:
                continue
            out.append(key)
            out.extend(render_value(set_flags[key]))
            continue
        out.extend(argv[t.start:t.end])
    out.extend(argv[pos:])
    for key, value in set_flags.items():
        if key not in done and value is not None:
            out.append(key)
            out.extend(render_value(value))
    return out


def diff(before: list[str], after: list[str], catalog: Any) -> list[str]:
    """Human lines describing how two commands differ, flag by flag."""
    a, b = parse(before, catalog), parse(after, catalog)
    lines = []
    for key in a:
        if key not in b:
            lines.append(f"- {key}" + ("" if a[key] is True else f" {_show(a[key])}"))
        elif a[key] != b[key]:
            lines.append(f"~ {key} {_show(a[key])} -> {_show(b[key])}")
    for key in b:
        if key not in a:
            lines.append(f"+ {key}" + ("" if b[key] is True else f" {_show(b[key])}"))
    return lines


def _show(value: Any) -> str:
    if value is True:
        return "(on)"
    if isinstance(value, list):
        return " ".join(value)
    return str(value)


def shell_quote(argv: list[str]) -> str:
    """The command as one line a user can paste into a shell."""
    return shlex.join(argv)
