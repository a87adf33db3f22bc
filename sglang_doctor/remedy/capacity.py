"""Capacity explained for a logged start-up, healthy or not (``plan --log``).

From a launch's own figures: where each GiB of a GPU went (weights, KV pool, recurrent-state
pool, CUDA graphs, what was left), what capped ``max_total_num_tokens`` and
``max_running_requests`` and which flags move them, and the planner's prediction beside what
SGLang logged.  The log's figures are SGLang's measurements; the explanation of *why* follows
the release's sizing rules (remedy/planner.py, cited there by file:line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.remedy import planner
from sglang_doctor.remedy.hardware import GPUProfile


@dataclass
class Capacity:
    version: str
    rows: list[tuple[str, float | None, str]]   # (what, GiB or None, source)
    logged: dict[str, Any]
    predicted: dict[str, Any]                   # anchored on the log's figures
    caps: list[str]                             # what limited the two capacities
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"sglang_version": self.version,
                "memory": [{"what": w, "gb": None if g is None else round(g, 3), "source": s}
                           for w, g, s in self.rows],
                "logged": self.logged, "predicted": self.predicted, "caps": list(self.caps),
                "notes": list(self.notes)}


def _figure(launch, name: str, key: str):
    m = launch.milestone(name)
    return m.figures.get(key) if m is not None else None


def explain(launch, model_config: dict | None, hw: GPUProfile, version: str) -> Capacity:
    """The capacity of ``launch`` (a parsed start-up) on ``hw`` with SGLang ``version``."""
    args = dict(launch.server_args or {})
    logged: dict[str, Any] = {}
    for name, key in (("max_total_num_tokens", "max_total_num_tokens"),
                      ("max_total_num_tokens", "max_running_requests"),
                      ("max_total_num_tokens", "context_len"),
                      ("kv_cache", "tokens"), ("mamba_cache", "max_mamba_cache_size")):
        value = _figure(launch, name, key)
        if value is not None:
            same = {"tokens": "max_total_num_tokens", "max_mamba_cache_size": "mamba_cache_size"}
            logged.setdefault(same.get(key, key), value)
    rows: list[tuple[str, float | None, str]] = []
    weights = _figure(launch, "load_weights_end", "mem_usage_gb")
    rows.append(("weights", weights, "Load weight end ... mem usage"))
    init = _figure(launch, "distributed_end", "mem_usage_gb")
    if init is not None:
        rows.insert(0, ("torch distributed / NCCL buffers", init, "Init torch distributed ends ... mem usage"))
    k, v, kv = (_figure(launch, "kv_cache", f) for f in ("k_gb", "v_gb", "kv_gb"))
    if k is not None and v is not None:
        rows.append(("KV cache pool", k + v, "KV Cache is allocated: K size + V size"))
    elif kv is not None:
        rows.append(("KV cache pool", kv, "KV Cache is allocated: KV size"))
    conv, ssm = _figure(launch, "mamba_cache", "conv_state_gb"), _figure(launch, "mamba_cache", "ssm_state_gb")
    if conv is not None and ssm is not None:
        rows.append(("recurrent-state (mamba) pool", conv + ssm, "Mamba Cache is allocated: conv + ssm"))
    graphs = _figure(launch, "cuda_graph_end", "mem_usage_gb")
    if graphs is not None:
        rows.append(("CUDA graphs", graphs, "Capture cuda graph end ... mem usage"))
    left = _figure(launch, "max_total_num_tokens", "available_mem_gb")
    if left is None:
        left = _figure(launch, "cuda_graph_end", "avail_mem_gb")
    if left is not None:
        rows.append(("left free for activations", left, "available_gpu_mem / avail mem after graphs"))

    predicted: dict[str, Any] = {}
    caps: list[str] = []
    notes: list[str] = []
    if model_config is None:
        notes.append("no model config: give --model-config (or make the dump's model_path "
                     "readable) for the prediction and for what capped the capacities")
        return Capacity(version, rows, logged, predicted, caps, notes)
    observed = planner.observed_from_launch(launch)
    plan = planner.plan(model_config, hw, args, version, observed)
    st = plan.settings
    predicted = {"max_total_num_tokens": plan.max_total_num_tokens,
                 "max_running_requests": plan.max_running_requests,
                 "mem_fraction_static": plan.mem_fraction_static,
                 "kv_bytes_per_token": plan.cell_bytes}
    if plan.mamba_cache_size is not None:
        predicted["mamba_cache_size"] = plan.mamba_cache_size
    caps += _token_cap(plan, st, args)
    caps += _running_cap(plan, st, args)
    notes += plan.notes
    return Capacity(version, rows, logged, predicted, caps, notes)


def _token_cap(plan, st, args) -> list[str]:
    if st.max_total_tokens and plan.max_total_num_tokens >= int(st.max_total_tokens) - st.page_size:
        return [f"max_total_num_tokens: --max-total-tokens {st.max_total_tokens} caps it"]
    budget = plan.budget_gb
    return [f"max_total_num_tokens: the pool budget after the weights, {budget:.2f} GiB "
            f"(free after weights minus (1 - mem_fraction_static {plan.mem_fraction_static:.3f}) of "
            f"the {plan.pre_gb:.2f} GiB free before them)"
            + (", less the recurrent-state pool," if plan.mamba_cache_size is not None else "")
            + f" at {plan.cell_bytes} bytes per token; --mem-fraction-static raises it (less "
            "room for activations and graphs), --kv-cache-dtype fp8_e4m3 doubles it"]


def _running_cap(plan, st, args) -> list[str]:
    n = plan.max_running_requests
    if plan.mamba_cache_size is not None and st.mamba_ratio and n == plan.mamba_cache_size // st.mamba_ratio \
            and (st.max_running is None or n < st.max_running):
        per = plan.mamba_slot_bytes / 2**20
        return [f"max_running_requests {n}: the recurrent-state (mamba) pool, "
                f"{plan.mamba_cache_size} slots / {st.mamba_ratio} per request "
                f"({per:.1f} MiB each); --max-mamba-cache-size or --mamba-full-memory-ratio raise "
                f"it, each extra request costing {per * st.mamba_ratio:.1f} MiB of KV tokens "
                f"({int(per * st.mamba_ratio * 2**20 // max(plan.cell_bytes, 1))} tokens)"]
    if args.get("max_running_requests"):
        return [f"max_running_requests {n}: --max-running-requests {args['max_running_requests']}"]
    if st.spec and st.max_running == 48:
        return [f"max_running_requests {n}: speculative decoding ({st.spec}) sets 48 when "
                "--max-running-requests is not given"]
    return [f"max_running_requests {n}: SGLang's default from the KV pool, "
            f"max_total_num_tokens / context length x 512, kept within [2048, 4096]"]


def render_text(cap: Capacity, title: str) -> str:
    lines = [title, "  where each GiB went (per GPU, SGLang's own figures):"]
    for what, gb, source in cap.rows:
        shown = "     n/a" if gb is None else f"{gb:8.2f}"
        lines.append(f"    {what:<36} {shown}   ({source})")
    keys = sorted(set(cap.logged) | set(cap.predicted))
    if cap.predicted:
        lines.append("  predicted beside logged:")
        for key in keys:
            lines.append(f"    {key:<36} predicted {cap.predicted.get(key, 'n/a')!s:>12}   "
                         f"logged {cap.logged.get(key, 'n/a')!s:>12}")
    for cap_line in cap.caps:
        lines.append(f"  {cap_line}")
    lines += [f"  note: {n}" for n in cap.notes]
    return "\n".join(lines)
