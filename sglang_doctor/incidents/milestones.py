"""SGLang's start-up milestones and the figures they carry (sglang-notes §1.3).

Each entry: a name, a literal that must be in the message (cheap prefilter, also a trigger
for the block scanner), and a regex whose named groups become figures.  Figures named
``*_gb`` are floats (SGLang prints GiB and calls them GB), ``tokens``-like ones ints.
"""

from __future__ import annotations

import re
from typing import Any

_NUM = r"-?[\d.]+"
# Load weight end: 0.4.0-0.4.3.post2 `type=, dtype=, avail mem=N GB` (no usage); 0.4.3.post3-0.5.8
# add `mem usage=`; 0.5.9 adds `elapsed=`; 0.5.10+ drop dtype for an optional `quant=fp8, fmt=e4m3`
# (ModelConfig.get_quantization_config_log_str: quant=, bits=, quant_algo=, fmt=).
_QUANT = (r"(?: quant=(?P<quant>[^,]+),(?: bits=(?P<quant_bits>[^,]+),)?(?: quant_algo=(?P<quant_algo>[^,]+),)?"
          r"(?: fmt=(?P<quant_fmt>[^,]+),)?)?")

# (name, literal, regex) in start-up order.  Where two entries share a name, the first whose
# literal is in the message decides; more specific literals come first.
_TABLE: list[tuple[str, str, str]] = [
    ("distributed_begin", "Init torch distributed begin", r"Init torch distributed begin"),
    ("distributed_begin", "Init parallel begin", r"Init parallel begin"),
    # 0.4.3.post3-0.5.8: `Init torch distributed ends. mem usage=N GB` (no elapsed); 0.5.9-0.5.20 with it
    ("distributed_end", "Init torch distributed ends",
     rf"Init torch distributed ends\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? mem usage=(?P<mem_usage_gb>{_NUM}) GB"),
    ("distributed_end", "Init parallel ends", r"Init parallel ends\. elapsed=(?P<elapsed_s>[\d.]+) s"),
    ("memory_baseline", "Memory baseline taken", r"Memory baseline taken\. mem usage=(?P<mem_usage_gb>-?[\d.]+) GB"),
    ("load_weights_begin", "Load weight begin", r"Load weight begin\. avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    # 0.5.18+ startup_weight_load.py: real weights committed after graph capture (no memory figures)
    ("weights_committed", "Load weight end. Committed",
     r"Load weight end\. Committed real weights after CUDA graph capture in (?P<elapsed_s>[\d.]+) s"),
    ("load_weights_end", "Load weight end",
     r"Load weight end\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? type=(?P<model_class>\w+),(?: dtype=(?P<dtype>[\w.]+),)?"
     + _QUANT + rf" avail mem=(?P<avail_mem_gb>{_NUM}) GB(?:, mem usage=(?P<mem_usage_gb>{_NUM}) GB)?"),
    # 0.5.2-0.5.3.post1 without max_mamba_cache_size; 0.5.3-0.5.15 add the speculative intermediate caches
    ("mamba_cache", "Mamba Cache is allocated",
     r"Mamba Cache is allocated\.(?: max_mamba_cache_size: (?P<max_mamba_cache_size>\d+),)? conv_state size: "
     r"(?P<conv_state_gb>[\d.]+) ?GB, ssm_state size: (?P<ssm_state_gb>[\d.]+) ?GB"
     r"(?: intermediate_ssm_state_cache size: (?P<intermediate_ssm_gb>[\d.]+) ?GB)?"
     r"(?: intermediate_conv_window_cache size: (?P<intermediate_conv_gb>[\d.]+) ?GB)?"),
    # 0.4.1.post6-0.4.3.post2: `K size: N GB, V size: N GB.` without #tokens; 0.5.13+ add `dtype:`;
    # MLA pools print one `KV size:` (memory_pool.py, MLATokenToKVPool)
    # 0.5.16+ post-capture sizing first reserves address space only ("KV Cache VA upper bound.")
    ("kv_cache_upper_bound", "KV Cache VA upper bound",
     r"KV Cache VA upper bound\.(?: dtype: (?P<dtype>[\w.]+),)?(?: #tokens: (?P<tokens>\d+),)?"
     r"(?: K size: (?P<k_gb>[\d.]+) GB, V size: (?P<v_gb>[\d.]+) GB| KV size: (?P<kv_gb>[\d.]+) GB)"),
    # 0.5.3.post3-0.5.17 SWAKVPool (sliding-window models): both pools in one figure
    ("swa_kv_cache", "SWAKVPool mem usage",
     r"SWAKVPool mem usage: (?P<kv_gb>[\d.]+) GB, swa size: (?P<swa_tokens>\d+), full size: (?P<tokens>\d+)"),
    # 0.5.16+ may prefix a pool label ("{label} KV Cache is allocated", memory_pool.py _finalize_allocation_log)
    ("kv_cache", "KV Cache is allocated",
     r"(?:(?P<pool>[\w .-]+?) )?KV Cache is allocated\.(?: dtype: (?P<dtype>[\w.]+),)?(?: #tokens: (?P<tokens>\d+),)?"
     r"(?: K size: (?P<k_gb>[\d.]+) GB, V size: (?P<v_gb>[\d.]+) GB| KV size: (?P<kv_gb>[\d.]+) GB)"),
    ("memory_pool_end", "Memory pool end", r"Memory pool end\. avail mem=(?P<avail_mem_gb>-?[\d.]+) GB"),
    # 0.4.0-0.4.3.post2: no avail mem; 0.5.9-0.5.13 `Capture {cuda|cpu|npu} graph begin`
    ("cuda_graph_begin", "Capture cuda graph begin",
     r"Capture cuda graph begin\.(?:.*?avail mem=(?P<avail_mem_gb>-?[\d.]+) GB)?"),
    ("cuda_graph_begin", "CUDA graph begin",
     r"Capture (?P<graph>[\w ]+?) CUDA graph begin\.(?:.*?avail mem=(?P<avail_mem_gb>-?[\d.]+) GB)?"),
    ("cuda_graph_begin", "cuda graph begin",
     r"Capture (?P<graph>[\w ]+?) cuda graph begin\.(?:.*?avail mem=(?P<avail_mem_gb>-?[\d.]+) GB)?"),
    # 0.4.0-0.4.3.post2 `Time elapsed: N s` only; 0.4.3.post3-0.4.6 avail before usage; later usage first
    ("cuda_graph_end", "Capture cuda graph end",
     r"Capture cuda graph end\. Time elapsed: (?P<elapsed_s>[\d.]+) s"
     rf"(?:\. (?:avail mem=(?P<avail_mem_gb>{_NUM}) GB\. mem usage=(?P<mem_usage_gb>{_NUM}) GB"
     rf"|mem usage=(?P<mem_usage_gb_>{_NUM}) GB\. avail mem=(?P<avail_mem_gb_>{_NUM}) GB))?"),
    # 0.5.6-0.5.13 `Capture piecewise CUDA graph end. Time elapsed: N s. mem usage=..`; 0.5.14+ `elapsed=N s,`;
    # 0.5.14-0.5.15 and 0.5.22+ `Capture target decode cuda|CUDA graph end. [bs=[..], ]elapsed=..`
    ("cuda_graph_end", "CUDA graph end",
     r"Capture (?P<graph>[\w ]+?) CUDA graph end\..*?(?:elapsed=|Time elapsed: )(?P<elapsed_s>[\d.]+) s[.,] "
     rf"mem usage=(?P<mem_usage_gb>{_NUM}) GB[.,] avail mem=(?P<avail_mem_gb>{_NUM}) GB"),
    ("cuda_graph_end", "cuda graph end",
     r"Capture (?P<graph>[\w ]+?) cuda graph end\..*?(?:elapsed=|Time elapsed: )(?P<elapsed_s>[\d.]+) s[.,] "
     rf"mem usage=(?P<mem_usage_gb>{_NUM}) GB[.,] avail mem=(?P<avail_mem_gb>{_NUM}) GB"),
    # lines that also carry "max_total_num_tokens=" but are not the scheduler's summary
    ("post_capture_kv", "Post-capture KV sizing",
     r"Post-capture KV sizing: max_total_num_tokens=(?P<max_total_num_tokens>\d+), free memory=(?P<avail_mem_gb>-?[\d.]+) GB"),
    ("unified_memory_pool", "[unified-memory-pool]",
     r"\[unified-memory-pool\] total_bytes=(?P<total_bytes>\d+)(?:, max_total_num_tokens=(?P<max_total_num_tokens>\d+), "
     r"max_mamba_cache_size=(?P<max_mamba_cache_size>\d+), max_num_reqs=(?P<max_num_reqs>\d+))?"),
    ("swa_pool", "Use sliding window memory pool",
     r"Use sliding window memory pool\. full_layer_tokens=(?P<full_layer_tokens>\d+), swa_layer_tokens=(?P<swa_layer_tokens>\d+)"),
    # 0.5.17+ kv_cache_configurator.py warns when the mamba pool caps concurrency
    ("mamba_running_cap", "by the mamba state cache",
     r"max_running_requests is capped to (?P<max_running_requests>\d+) by the mamba state cache"
     r"(?: \(max_mamba_cache_size=(?P<max_mamba_cache_size>\d+), (?P<slots_per_request>\d+) state slots per request\))?"),
    # 0.4.0-0.4.1: no chunked_prefill_size; before 0.4.7: no available_gpu_mem
    ("max_total_num_tokens", "max_total_num_tokens=",
     r"max_total_num_tokens=(?P<max_total_num_tokens>\d+),(?: chunked_prefill_size=(?P<chunked_prefill_size>-?\d+),)? "
     r"max_prefill_tokens=(?P<max_prefill_tokens>\d+), max_running_requests=(?P<max_running_requests>\d+), "
     r"context_len=(?P<context_len>\d+)(?:, available_(?:gpu|cpu)_mem=(?P<available_mem_gb>-?[\d.]+) GB)?"),
    ("startup_timings", "Engine startup timings", r"Engine startup timings \(s\): (?P<timings>.*)"),
    ("http_server_up", "Uvicorn running on", r"Uvicorn running on (?P<url>\S+)"),
    ("ready", "The server is fired up and ready to roll", r"The server is fired up and ready to roll"),
    # NVIDIA Dynamo runs SGLang's Engine in its own worker (no HTTP server, so no line above): once the
    # engine is up and the model registered it lets the queued requests through and says so
    # (Dynamo's SGLang component, after register_llm_with_runtime_config sets its readiness gate:
    # "Model registration succeeded; processing queued requests"), the worker's ready line
    ("ready", "Model registration succeeded; processing queued requests",
     r"Model registration succeeded; processing queued requests"),
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
    "weights_committed": "real weights committed after graph capture",
    "mamba_cache": "mamba state cache allocated",
    "kv_cache": "KV cache allocated",
    "kv_cache_upper_bound": "KV cache address space reserved (sized after graph capture)",
    "swa_kv_cache": "sliding-window KV pools allocated",
    "memory_pool_end": "memory pools ready",
    "cuda_graph_begin": "capturing CUDA graphs",
    "cuda_graph_end": "CUDA graphs captured",
    "post_capture_kv": "KV pool resized after graph capture",
    "unified_memory_pool": "unified memory pool allocated",
    "swa_pool": "sliding-window KV pool sized",
    "mamba_running_cap": "max_running_requests capped by the mamba state pool",
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
        key = key.rstrip("_")  # a figure spelled twice in one regex (two orders of the same line)
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


def last_before(launch, line: int):
    """The last start-up milestone of ``launch`` logged before ``line``, or None."""
    last = None
    for ms in launch.milestones:
        if ms.line < line:
            last = ms
    return last


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
        "weights_committed": "startup.warmup",
        "mamba_cache": "startup.memory_pool",
        "unified_memory_pool": "startup.memory_pool",
        "swa_pool": "startup.memory_pool",
        "mamba_running_cap": "startup.memory_pool",
        "kv_cache": "startup.memory_pool",
        "kv_cache_upper_bound": "startup.memory_pool",
        "swa_kv_cache": "startup.memory_pool",
        "memory_pool_end": "startup.cuda_graph",
        "cuda_graph_begin": "startup.cuda_graph",
        "cuda_graph_end": "startup.warmup",
        "post_capture_kv": "startup.warmup",
        "max_total_num_tokens": "startup.warmup",
        "startup_timings": "startup.warmup",
        "http_server_up": "startup.warmup",
        "ready": "serving",
    }.get(name, "unknown")
