"""The ``--mem-fraction-static`` step computed from the log's own memory figures (issue 12).

A rule entry ``raise_flag`` / ``lower_flag`` on ``--mem-fraction-static`` with ``from_log: true``
moves the fraction by what the log's numbers say is needed, instead of a fixed step:

- **up** (the KV pool did not fit after the weights loaded): SGLang reserves
  ``pre * (1 - mem_fraction_static)`` of the memory it measured free before loading (``pre``),
  and sizes the pools from what is left of the memory free after loading (``avail``):
  ``rest = avail - pre * (1 - f)`` (0.4.x-0.5.9 ``profile_max_num_token``, 0.5.2x
  ``kv_cache_configurator``).  The ``Load weight end. ... avail mem=A GB, mem usage=U GB`` line
  gives ``avail = A`` and ``pre = A + U``, so the pool is empty unless ``f > 1 - A / (A + U)``;
  the step goes past that bound by a margin for the pool itself.
- **down** (torch ran out of memory outside the pools: graph capture, prefill, warm-up):
  torch's message gives the allocation that failed, what was free and the GPU's size; the
  fraction goes down by the missing memory plus a margin, as a share of the GPU.

The figures are log text, used only as numbers in this arithmetic: the value proposed is the
planner's (rounded, bounded by the entry's ``min`` / ``max`` and validated against the release's
flag catalogue like any step), never a string copied from the log (docs/CONTRACT.md "Trust").
None when the log lacks the figures: the entry's fixed step applies then.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sglang_doctor.remedy.launch_check import finite_number

FLAG = "--mem-fraction-static"

# the pool's own share above SGLang's bound (a few percent of the GPU holds a usable KV pool)
_UP_MARGIN = 0.03
# memory another allocation next to the failed one may need (GiB)
_DOWN_MARGIN_GIB = 0.5
_MIN_STEP = 0.02

_TRIED = re.compile(r"Tried to allocate (\d+(?:\.\d+)?) (GiB|MiB|KiB)")
_FREE = re.compile(r"total capacity of (\d+(?:\.\d+)?) GiB of which (\d+(?:\.\d+)?) (GiB|MiB|KiB) is free")
_GIB = {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / (1024 * 1024)}


def _up(x: float) -> float:
    return math.ceil(round(x * 100, 6)) / 100


def weights_bound(diagnosis: Any) -> tuple[float, str] | None:
    """The smallest fraction under which the weights leave the pools any memory, from the
    tightest rank's ``Load weight end`` line before the failure, with the sentence saying so."""
    launch = getattr(diagnosis, "launch", None)
    first = getattr(getattr(diagnosis, "incident", None), "first_line", None)
    best = None
    for m in getattr(launch, "milestones", None) or []:
        if m.name != "load_weights_end" or (first is not None and m.line > first):
            continue
        avail, usage = finite_number(m.figures.get("avail_mem_gb")), finite_number(m.figures.get("mem_usage_gb"))
        if avail is None or usage is None or avail < 0 or usage <= 0 or avail + usage > 4096:
            continue
        bound = 1.0 - avail / (avail + usage)
        if best is None or bound > best[0]:
            best = (bound, avail, usage, m.line)
    if best is None:
        return None
    bound, avail, usage, line = best
    why = (f"after the weights, {avail:g} of the {avail + usage:g} GB free before loading was left "
           f"(line {line}); SGLang reserves (1 - fraction) of the latter, so the pools stay empty "
           f"unless the fraction passes {bound:.3f}")
    return bound, why


def raise_target(diagnosis: Any) -> tuple[float, str] | None:
    """The fraction to raise to: past the weights' bound by the pool's margin."""
    found = weights_bound(diagnosis)
    if found is None:
        return None
    bound, why = found
    return _up(bound + _UP_MARGIN), why


def lower_step(diagnosis: Any) -> tuple[float, str] | None:
    """How far to lower the fraction: the memory torch missed, plus a margin, as a share of the GPU."""
    incident = getattr(diagnosis, "incident", None)
    for line in getattr(incident, "lines", None) or []:
        text = getattr(line, "text", "")
        tried, free = _TRIED.search(text), _FREE.search(text)
        if not (tried and free):
            continue
        want = float(tried.group(1)) * _GIB[tried.group(2)]
        total = float(free.group(1))
        have = float(free.group(2)) * _GIB[free.group(3)]
        if not (1.0 <= total <= 4096.0) or want <= 0:
            return None
        missing = max(want - have, 0.0) + _DOWN_MARGIN_GIB
        step = max(_MIN_STEP, _up(missing / total))
        why = (f"torch missed {max(want - have, 0.0):.2f} GiB of a {total:g} GiB GPU (line {line.number}); "
               f"the step frees that and {_DOWN_MARGIN_GIB} GiB more")
        return step, why
    return None
