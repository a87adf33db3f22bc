"""SGLang's start-up milestones and the figures they carry (sglang-notes §1.3).

Each entry: a name, a literal that must be in the message (cheap prefilter, also a trigger
for the block scanner), and a regex whose named groups become figures.  Figures named
``*_gb`` are floats (SGLang prints GiB and calls them GB), ``tokens``-like ones ints.
"""

from __future__ import annotations

import re
from typing import Any

# (name, literal, regex) in start-up order
_TABLE: list[tuple[str, str, str]] = [
    ("distributed_begin", "Init torch distributed begin", r"Init torch distributed begin"),
    ("distributed_begin", "Init parallel begin", r"Init parallel begin"),
    # 0.4.6-0.5.3: "Init torch distributed ends. mem usage=0.63 GB"; 0.5.4+ adds elapsed=
    ("distributed_end", "Init torch distributed ends",
     r"Init torch distributed ends\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? mem usage=(?P<mem_usage_gb>-?[\d.]+) GB"),
    ("distributed_end", "Init parallel ends", r"Init parallel ends\. elapsed=(?P<elapsed_s>[\d.]+) s"),
    ("memory_baseline", "Memory baseline taken", r"Memory baseline taken\. mem usage=(?P<mem_usage_gb>-?[\d.]+) GB"),
    ("load_weights_begin", "Load weight begin", r"Load weight begin\. avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    # 0.4.0-0.4.5: "type=X, dtype=Y, avail mem=A GB" (no mem usage); 0.4.6-0.5.3 add
    # "mem usage=U GB."; 0.5.4+ start with "elapsed=E s,"; 0.5.10+ replace dtype= with the
    # quantization string when the checkpoint is quantized ("quant=fp8, fmt=e4m3",
    # "quant=gptq, bits=4": ModelConfig.get_quantization_config_log_str).
    ("load_weights_end", "Load weight end",
     r"Load weight end\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? type=(?P<model_class>\w+),"
     r"(?: dtype=(?P<dtype>[\w.]+),)?(?: quant=(?P<quant>[\w.-]+),)?(?P<quant_details>(?: \w+=[^,=]+,)*?)"
     r" avail mem=(?P<avail_mem_gb>-?[\d.]+) GB(?:, mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?"),
    ("mamba_cache", "Mamba Cache is allocated",
     r"Mamba Cache is allocated\. max_mamba_cache_size: (?P<max_mamba_cache_size>\d+), conv_state size: "
     r"(?P<conv_state_gb>[\d.]+) ?GB, ssm_state size: (?P<ssm_state_gb>[\d.]+) ?GB"),
    # 0.4.3-0.4.5: "K size: .. GB, V size: .. GB." without #tokens; 0.4.6+ "#tokens: N, ";
    # 0.5.1x+ "dtype: torch.bfloat16, " first; MLA models print one "KV size".
    ("kv_cache", "KV Cache is allocated",
     r"KV Cache is allocated\.(?: dtype: (?P<dtype>[\w.]+),)?(?: #tokens: (?P<tokens>\d+),)?"
     r"(?: K size: (?P<k_gb>[\d.]+) GB, V size: (?P<v_gb>[\d.]+) GB| KV size: (?P<kv_gb>[\d.]+) GB)"),
    ("memory_pool_end", "Memory pool end", r"Memory pool end\. avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    ("cuda_graph_begin", "Capture cuda graph begin",
     r"Capture cuda graph begin\..*?avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    ("cuda_graph_begin", "CUDA graph begin",
     r"Capture (?P<graph>[\w ]+?) CUDA graph begin\..*?avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    # 0.4.0-0.4.5: "Capture cuda graph end. Time elapsed: E s" alone
    ("cuda_graph_end", "Capture cuda graph end",
     r"Capture cuda graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s(?:\. mem usage=(?P<mem_usage_gb>-?[\d.]+) GB\. avail mem=(?P<avail_mem_gb>-?[\d.]+) GB)?"),
    ("cuda_graph_end", "CUDA graph end",
     r"Capture (?P<graph>[\w ]+?) CUDA graph end\..*?elapsed=(?P<elapsed_s>[\d.]+) s, mem usage=(?P<mem_usage_gb>-?[\d.]+) GB, avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    # 0.4.0-0.4.5 have no chunked_prefill_size; 0.4.10+ add available_gpu_mem (0.5.x: _cpu_
    # on CPU)
    ("max_total_num_tokens", "max_total_num_tokens=",
     r"max_total_num_tokens=(?P<max_total_num_tokens>\d+),(?: chunked_prefill_size=(?P<chunked_prefill_size>-?\d+),)? "
     r"max_prefill_tokens=(?P<max_prefill_tokens>\d+), max_running_requests=(?P<max_running_requests>\d+), "
     r"context_len=(?P<context_len>\d+)(?:, available_(?:gpu|cpu)_mem=(?P<available_mem_gb>-?[\d.]+) GB)?"),
    ("startup_timings", "Engine startup timings", r"Engine startup timings \(s\): (?P<timings>.*)"),
    ("http_server_up", "Uvicorn running on", r"Uvicorn running on (?P<url>\S+)"),
    ("ready", "The server is fired up and ready to roll", r"The server is fired up and ready to roll"),
]

_COMPILED = [(name, literal, re.compile(rx)) for name, literal, rx in _TABLE]

LITERALS: tuple[str, ...] = tuple(sorted({literal for _, literal, _ in _TABLE}))

# human text for progress displays
DESCRIPTIONS = {
    "distributed_begin": "initialising torch distributed",
    "distributed_end": "distributed ready",
    "memory_baseline": "memory baseline taken",
    "load_weights_begin": "loading weights",
    "load_weights_end": "weights loaded",
    "mamba_cache": "mamba state cache allocated",
    "kv_cache": "KV cache allocated",
    "memory_pool_end": "memory pools ready",
    "cuda_graph_begin": "capturing CUDA graphs",
    "cuda_graph_end": "CUDA graphs captured",
    "max_total_num_tokens": "scheduler ready",
    "startup_timings": "engine started",
    "http_server_up": "HTTP server up, warming up",
    "ready": "ready",
}


def match(message: str) -> tuple[str, dict[str, Any]] | None:
    """(name, figures) when the message is a milestone, else None."""
    for name, literal, rx in _COMPILED:
        if literal in message:
            m = rx.search(message)
            if m is None:
                return name, {}
            return name, _figures(m.groupdict())
    return None


def _figures(groups: dict[str, str | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    details = groups.pop("quant_details", None)
    if details and groups.get("quant"):  # " fmt=e4m3, bits=4," after quant=
        for item in details.strip().rstrip(",").split(","):
            key, _, value = item.strip().partition("=")
            if key and value and key.isidentifier():
                groups[f"quant_{key}"] = value
    for key, value in groups.items():
        if value is None:
            continue
        if key.endswith("_gb") or key.endswith("_s"):
            try:
                out[key] = float(value)
            except ValueError:  # "[\d.]+" also matches ".46.79": keep the text, never crash
                out[key] = value.strip()
        elif value.lstrip("-").isdigit():
            out[key] = int(value)
        else:
            out[key] = value.strip()
    return out


def phase_after(name: str | None) -> str:
    """The start-up phase a failure falls in, given the last milestone seen before it."""
    if name is None:
        return "startup.args"
    return {
        "distributed_begin": "startup.distributed",
        "distributed_end": "startup.load_weights",
        "memory_baseline": "startup.load_weights",
        "load_weights_begin": "startup.load_weights",
        "load_weights_end": "startup.memory_pool",
        "mamba_cache": "startup.memory_pool",
        "kv_cache": "startup.memory_pool",
        "memory_pool_end": "startup.cuda_graph",
        "cuda_graph_begin": "startup.cuda_graph",
        "cuda_graph_end": "startup.warmup",
        "max_total_num_tokens": "startup.warmup",
        "startup_timings": "startup.warmup",
        "http_server_up": "startup.warmup",
        "ready": "serving",
    }.get(name, "unknown")
