"""What a change costs, for the changes whose rule entry does not say it.

Every fix the tool proposes states its trade-off (issue 12, "each with its trade-off").  A rule
entry may write its own (``tradeoff:``); when it does not, the cost of the change is the
same whatever the failure, so it is written once here, per flag (and direction) or per
environment variable, in the words of what the user gives up.
"""

from __future__ import annotations

from typing import Any

# flag -> {direction: text}; direction "lower" / "raise" for numeric steps, "set" for a
# value or switch given, "unset" for a removal, or the value itself ("disabled")
FLAGS: dict[str, dict[str, str]] = {
    "--mem-fraction-static": {
        "lower": "a smaller KV cache pool: fewer tokens and requests in flight; more room for activations",
        "raise": "less memory left for activations and CUDA graphs: an OOM while serving becomes likelier",
    },
    "--chunked-prefill-size": {
        "lower": "smaller prefill chunks: long prompts take more steps to prefill",
        "raise": "larger prefill chunks: more activation memory per step",
    },
    "--cuda-graph-max-bs": {"lower": "batches above it run without CUDA graphs: slower decode at high concurrency; "
                                     "frees graph memory"},
    "--cuda-graph-max-bs-decode": {"lower": "batches above it run without CUDA graphs: slower decode at high "
                                            "concurrency; frees graph memory"},
    "--cuda-graph-max-bs-prefill": {"lower": "longer prefills run without a prefill CUDA graph: slower short prefills"},
    "--piecewise-cuda-graph-max-tokens": {"lower": "prefill batches above it run without a piecewise CUDA graph: "
                                                   "slower prefill of those batches; frees graph memory"},
    "--torch-compile-max-bs": {"lower": "batches above it run without torch.compile: slower decode at high "
                                        "concurrency; shorter compile"},
    "--cuda-graph-backend-decode": {"disabled": "no decode CUDA graphs: decode typically 20-40% slower"},
    "--cuda-graph-backend-prefill": {"disabled": "no prefill CUDA graphs: slower short prefills"},
    "--disable-piecewise-cuda-graph": {"set": "no piecewise (prefill) CUDA graphs: slower short prefills; decode "
                                              "graphs stay on"},
    "--max-running-requests": {"lower": "fewer requests served at once: lower throughput under load"},
    "--max-total-tokens": {"unset": "the pool is sized from memory again (the cap you set is gone)"},
    "--watchdog-timeout": {"raise": "a server that really hangs is killed later"},
    "--context-length": {"set": "a shorter maximum context: longer prompts are refused"},
    "--attention-backend": {"set": "another attention kernel: speed differs, and some features (speculative "
                                   "decoding modes, sliding window, MLA) may not be supported by it"},
    "--decode-attention-backend": {"unset": "decode uses the --attention-backend choice"},
    "--prefill-attention-backend": {"unset": "prefill uses the --attention-backend choice"},
    "--moe-runner-backend": {"set": "another MoE kernel: slower than the tuned one on GPUs that support it"},
    "--fp8-gemm-backend": {"set": "SGLang picks the FP8 GEMM kernel this GPU supports; speed may differ"},
    "--quantization": {"unset": "the checkpoint's own quantization (its config) is used"},
    "--disable-overlap-schedule": {"set": "no CPU/GPU overlap in the scheduler: a few % lower throughput"},
    "--disable-custom-all-reduce": {"set": "NCCL all-reduce instead of SGLang's custom kernel: slightly slower TP decode"},
    "--disable-radix-cache": {"set": "no prefix caching: repeated prompt prefixes are recomputed"},
    "--trust-remote-code": {"set": "runs the Python code shipped in the model repository: trust its source"},
    "--host": {"set": "listens on that address: on 0.0.0.0 it is reachable from the network (firewall or --api-key)"},
    "--skip-server-warmup": {"set": "the first request pays the warm-up cost, and a broken server is noticed only then"},
    "--mamba-ssm-dtype": {"set": "the recurrent state in that dtype: bfloat16 halves its memory at a small accuracy cost"},
    "--mamba-radix-cache-strategy": {"set": "changes how hybrid models cache prefixes: no_buffer keeps no state "
                                            "snapshots (needs --disable-overlap-schedule)"},
    "--swa-full-tokens-ratio": {"raise": "more of the pool for the full-attention layers, less for the sliding-window ones"},
    "--cpu-offload-gb": {"raise": "weights offloaded to host memory: much slower decode"},
    "--speculative-algorithm": {"set": "another speculative-decoding algorithm: its acceptance rate, and so its "
                                       "speed-up, differ"},
}

ENV: dict[str, str] = {
    "NCCL_P2P_DISABLE": "GPU-to-GPU traffic goes through host memory: slower all-reduce",
    "NCCL_SHM_DISABLE": "no shared-memory transport between local ranks: NCCL falls back to P2P or sockets, slower",
    "NCCL_IB_DISABLE": "NCCL uses TCP sockets instead of InfiniBand/RoCE: much slower between nodes",
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "a context longer than the model was trained for: quality may "
                                                 "degrade past its trained length",
    "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "skips the check only: the rank with less free memory may run out "
                                               "while serving",
}

_STEP = {"raise_flag": "raise", "lower_flag": "lower", "lower_prefill_budget": "lower"}


def default_for(rem: Any) -> str | None:
    """The trade-off of ``rem``'s changes, joined, or None when none is known."""
    parts: list[str] = []
    direction = _STEP.get(rem.remedy or "")
    for flag, value in rem.set.items():
        table = FLAGS.get(flag, {})
        text = table.get(direction) if direction else None
        text = text or (table.get(value) if isinstance(value, str) else None) or table.get("set")
        if text and text not in parts:
            parts.append(text)
    for flag in rem.unset:
        text = FLAGS.get(flag, {}).get("unset")
        if text and text not in parts:
            parts.append(text)
    for name in rem.env:
        text = ENV.get(name)
        if text and text not in parts:
            parts.append(text)
    return "; ".join(parts) or None
