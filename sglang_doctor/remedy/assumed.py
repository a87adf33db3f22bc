"""The value a flag had when the log does not say: the release's default, stated as assumed.

A pasted fragment rarely holds the launch's ``server_args`` dump, and ``explain`` is often run
without the user's command, yet a stepping remedy ("lower --mem-fraction-static by 0.05")
needs a value to step from.  SGLang's own default is then the best estimate, and the answer
says it is one ("your command's value is not in the log; SGLang 0.5.23's default is 0.83").

Two kinds of default:

* a fixed one from the release's flag catalogue (``--watchdog-timeout`` 300);
* an automatic one that SGLang computes from the GPU's memory and the parallel sizes when the
  flag is left unset (the catalogue's default is ``None``): ``--mem-fraction-static``,
  ``--chunked-prefill-size``, ``--cuda-graph-max-bs`` / ``--cuda-graph-max-bs-decode``.  Those
  come from the memory planner's copy of SGLang's rules (``planner.resolve``: 0.4.0-0.5.2
  ``ServerArgs.__post_init__``, 0.5.9 server_args.py:936-1068, 0.5.23
  arg_groups/memory_hook.py:88-405), for the ``--gpus`` profile and the parallel sizes the
  log shows (tp 1 when it shows none), or the GPU size torch's OOM message reports.

No value here is read from log text: the log only selects the release (through the caller's
version), the parallel sizes of a dump when there is one, and the GPU-size tier of SGLang's
rules when torch printed the GPU's capacity; the value is the catalogue's or the planner's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

# Flags whose default SGLang computes at start-up (the catalogue has None): the planner's
# Settings field that holds the computed value.
AUTO = {
    "mem_fraction_static": "mfs",
    "chunked_prefill_size": "chunked_prefill",
    "cuda_graph_max_bs": "graph_bs",
    "cuda_graph_max_bs_decode": "graph_bs",
}


# How the release was chosen, when the log did not name it (flags.resolve_version's sources).
_RELEASE_WORDS = {
    "newest catalogue": " (the newest known; the log does not name the release)",
    "installed": " (the one installed here; the log does not name the release)",
    "log style": " (guessed from the log's style)",
    "dump fields": " (the newest release whose settings match the log's dump)",
    "rule spelling": " (the newest release with that spelling; the log does not name the release)",
    "frame paths": " (the newest release the log's traceback frames fit; the log does not name the release)",
    "message wording": " (the newest release that words its message so; the log does not name the release)",
}


@dataclass(frozen=True)
class Assumed:
    value: Any
    why: str  # one clause for the note and the trade-off


@dataclass
class _UnknownModel:
    """The model as the planner's default rules see it when no config.json is given: the
    defaults above depend on the model only for MLA, vision towers and hybrid models."""

    arch: str = ""
    model_type: str = ""
    context_len: int = 0
    mla: Any = None
    is_multimodal: bool = False
    hybrid: bool = False
    vision: dict = field(default_factory=dict)


# torch's CUDA OOM message (c10/cuda/CUDACachingAllocator.cpp) names the failing GPU's size
_TOTAL = re.compile(r"GPU \d+ has a total capacity of (\d+(?:\.\d+)?) GiB")


def gpu_total_gib(texts: Iterable[str]) -> float | None:
    """The GPU size torch printed in an OOM message of the incident, if any (a planner input:
    it picks the tier of SGLang's default rules, never a value of its own)."""
    for text in texts:
        m = _TOTAL.search(text)
        if m:
            size = float(m.group(1))
            return size if 1.0 <= size <= 4096.0 else None
    return None


def default_for(spec: Any, version: str, hardware: Any, server_args: dict[str, Any],
                model_config: dict | None = None, version_source: str | None = None,
                gpu_gib: float | None = None) -> Assumed | None:
    """SGLang ``version``'s default for ``spec``'s flag, or None when it has none to give.

    ``version_source`` is ``flags.resolve_version``'s: when the log did not name the release
    the sentence says which one was assumed.  ``gpu_gib``: the GPU size the log's own OOM
    message reports, used instead of the ``--gpus`` profile's."""
    shown = _shown(spec)
    release = f"SGLang {version}" + _RELEASE_WORDS.get(version_source or "", "")
    if spec.default is not None and spec.dest not in AUTO:
        if spec.default is False or not spec.takes_value:
            return None  # a switch left off: nothing to step from
        return Assumed(spec.default, f"your command's value of {spec.name} is not in the log; "
                                     f"{release}'s default is {shown(spec.default)}")
    attr = AUTO.get(spec.dest)
    if attr is None or hardware is None:
        return None
    try:
        from sglang_doctor.remedy import planner

        shape = planner.model_shape(model_config) if model_config else _UnknownModel()
        args = {k: v for k, v in server_args.items() if v is not None}
        args.pop(spec.dest, None)
        if gpu_gib is not None:
            hardware = replace(hardware, total_gb=gpu_gib, usable_gb=max(gpu_gib - 0.5, 0.5))
        settings = planner.resolve(shape, hardware, args, version)
    except Exception:  # noqa: BLE001 - no assumption is better than a wrong one
        return None
    value = getattr(settings, attr, None)
    if value is None or (attr == "graph_bs" and not settings.cuda_graph):
        return None
    tp = settings.tp
    gpu = (f"the {gpu_gib:g} GiB GPU torch reports" if gpu_gib is not None
           else f"a {hardware.total_gb:.0f} GiB GPU ({hardware.gpu_name})" if getattr(hardware, "source", "") == "log"
           else f"a {hardware.total_gb:.0f} GiB GPU (--gpus {hardware.name})")
    on = (f"for {gpu} "
          f"at tp {tp}{'' if server_args.get('tp_size') else ' (tp not in the log either)'}")
    return Assumed(value, f"your command's value of {spec.name} is not in the log; {release} "
                          f"chooses {shown(value)} by default {on}")


def _shown(spec: Any):
    def render(value: Any) -> str:
        if spec.type == "float":
            return f"{float(value):.3g}"
        return str(value)

    return render
