"""Start-up milestones in the wording of every SGLang release from 0.4.0 to 0.5.23.

Each line is either copied from a real log in fixtures/startup/ (the file is named) or is the
release's own f-string filled in (the release range and file that print it are named; found by
reading the logger calls of every wheel's model_runner.py, memory_pool.py, scheduler.py and
their later homes).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.incidents import milestones
from sglang_doctor.pipeline import read_incidents
from sglang_doctor.remedy import capacity

STARTUP = Path(__file__).resolve().parents[2] / "fixtures" / "startup"

CASES = [
    # -- Load weight end ------------------------------------------------------------------
    # 0.4.0-0.4.3.post2 model_runner.py: no mem usage (sglang_docs_0_4_1_llama3_1_8b_h100.log)
    ("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.72 GB", "load_weights_end",
     {"model_class": "LlamaForCausalLM", "dtype": "torch.bfloat16", "avail_mem_gb": 63.72}),
    # 0.4.3.post3-0.5.8.post1 (llms_in_clouds_0_4_3_qwq32b_l4x4.log)
    ("Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=6.09 GB, mem usage=15.54 GB.",
     "load_weights_end", {"avail_mem_gb": 6.09, "mem_usage_gb": 15.54}),
    # 0.5.9: elapsed + dtype (sglang_docs_0_5_9_qwen2_5_0_5b_h100_flag_caps.log)
    ("Load weight end. elapsed=0.38 s, type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=77.45 GB, "
     "mem usage=0.98 GB.", "load_weights_end", {"elapsed_s": 0.38, "avail_mem_gb": 77.45, "mem_usage_gb": 0.98}),
    # 0.5.10+: quant string instead of dtype (gsma_0_5_18_qwen3x_27b_fp8_h100.log)
    ("Load weight end. elapsed=429.52 s, type=Qwen3_5ForConditionalGeneration, quant=fp8, fmt=e4m3, "
     "avail mem=50.01 GB, mem usage=28.47 GB.", "load_weights_end",
     {"quant": "fp8", "quant_fmt": "e4m3", "avail_mem_gb": 50.01, "mem_usage_gb": 28.47}),
    # 0.5.10+ get_quantization_config_log_str: quant=, bits=, quant_algo=
    ("Load weight end. elapsed=12.00 s, type=Qwen3ForCausalLM, quant=gptq, bits=4, avail mem=60.17 GB, "
     "mem usage=9.40 GB.", "load_weights_end", {"quant": "gptq", "quant_bits": 4, "mem_usage_gb": 9.4}),
    ("Load weight end. elapsed=787.55 s, type=Qwen3ForCausalLM, quant=modelopt_fp4, quant_algo=NVFP4, "
     "avail mem=29.01 GB, mem usage=82.97 GB.", "load_weights_end",
     {"quant": "modelopt_fp4", "quant_algo": "NVFP4", "avail_mem_gb": 29.01, "mem_usage_gb": 82.97}),
    # 0.5.18+ startup_weight_load.py: a second "Load weight end" with no memory figures
    ("Load weight end. Committed real weights after CUDA graph capture in 1.20 s (capture overlap window "
     "0.80 s, startup overlap total 3.10 s)", "weights_committed", {"elapsed_s": 1.2}),
    # -- distributed init -----------------------------------------------------------------
    # 0.4.3.post3-0.5.8.post1: no elapsed (llms_in_clouds_0_4_3_qwq32b_l4x4.log)
    ("Init torch distributed ends. mem usage=0.13 GB", "distributed_end", {"mem_usage_gb": 0.13}),
    ("Init torch distributed ends. elapsed=0.84 s, mem usage=0.09 GB", "distributed_end",
     {"elapsed_s": 0.84, "mem_usage_gb": 0.09}),
    # -- KV cache -------------------------------------------------------------------------
    # 0.4.1.post6-0.4.3.post2 memory_pool.py: no #tokens (sglang_docs_0_4_1_llama3_1_8b_h100.log)
    ("KV Cache is allocated. K size: 27.13 GB, V size: 27.13 GB.", "kv_cache", {"k_gb": 27.13, "v_gb": 27.13}),
    ("KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB", "kv_cache",
     {"tokens": 46611, "k_gb": 1.42}),
    # 0.4.5.post3-0.5.12 MLATokenToKVPool: one KV size
    ("KV Cache is allocated. #tokens: 1226984, KV size: 9.21 GB", "kv_cache", {"tokens": 1226984, "kv_gb": 9.21}),
    # 0.5.13+: dtype first
    ("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 330323, K size: 10.08 GB, V size: 10.08 GB",
     "kv_cache", {"dtype": "torch.bfloat16", "tokens": 330323, "k_gb": 10.08}),
    ("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1912896, KV size: 14.37 GB", "kv_cache",
     {"tokens": 1912896, "kv_gb": 14.37}),
    # 0.5.16+ labelled pools and the post-capture address-space reservation
    ("MiniMax MSA-v1 main NVFP4 KV Cache is allocated. dtype: torch.uint8, #tokens: 100000, KV size: 3.00 GB",
     "kv_cache", {"pool": "MiniMax MSA-v1 main NVFP4", "tokens": 100000, "kv_gb": 3.0}),
    ("KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 900000, K size: 20.00 GB, V size: 20.00 GB",
     "kv_cache_upper_bound", {"tokens": 900000, "k_gb": 20.0}),
    # 0.5.3.post3-0.5.17 SWAKVPool (a user's Gemma log: "SWAKVPool mem usage: 79.94 GB, ...")
    ("SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846", "swa_kv_cache",
     {"kv_gb": 79.94, "swa_tokens": 798276, "tokens": 997846}),
    # -- mamba ----------------------------------------------------------------------------
    # 0.5.2-0.5.3.post1: no max_mamba_cache_size
    ("Mamba Cache is allocated. conv_state size: 0.07GB, ssm_state size: 3.38GB ", "mamba_cache",
     {"conv_state_gb": 0.07, "ssm_state_gb": 3.38}),
    # 0.5.3.post2-0.5.15 with speculative decoding: the intermediate caches too
    ("Mamba Cache is allocated. max_mamba_cache_size: 48, conv_state size: 0.07GB, ssm_state size: 3.38GB "
     "intermediate_ssm_state_cache size: 13.50GB intermediate_conv_window_cache size: 0.28GB ", "mamba_cache",
     {"max_mamba_cache_size": 48, "intermediate_ssm_gb": 13.5, "intermediate_conv_gb": 0.28}),
    # 0.5.17+ kv_cache_configurator.py warning
    ("max_running_requests is capped to 24 by the mamba state cache (max_mamba_cache_size=124, 5 state slots "
     "per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the "
     "state size with --mamba-ssm-dtype bfloat16.", "mamba_running_cap",
     {"max_running_requests": 24, "max_mamba_cache_size": 124, "slots_per_request": 5}),
    # -- CUDA graphs ----------------------------------------------------------------------
    # 0.4.0-0.4.3.post2: no memory figures
    ("Capture cuda graph begin. This can take up to several minutes.", "cuda_graph_begin", {}),
    ("Capture cuda graph end. Time elapsed: 6.57 s", "cuda_graph_end", {"elapsed_s": 6.57}),
    # 0.4.3.post3-0.4.6: avail before usage
    ("Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.", "cuda_graph_end",
     {"avail_mem_gb": 0.53, "mem_usage_gb": 0.93}),
    # 0.4.6.post1-0.5.13: usage before avail
    ("Capture cuda graph end. Time elapsed: 1.01 s. mem usage=0.07 GB. avail mem=76.95 GB.", "cuda_graph_end",
     {"avail_mem_gb": 76.95, "mem_usage_gb": 0.07}),
    # 0.5.6-0.5.13 piecewise graphs
    ("Capture piecewise CUDA graph end. Time elapsed: 30.10 s. mem usage=0.52 GB. avail mem=10.40 GB.",
     "cuda_graph_end", {"graph": "piecewise", "elapsed_s": 30.1, "mem_usage_gb": 0.52}),
    # 0.5.14+ (gsma_0_5_18_qwen3x_27b_fp8_h100.log)
    ("Capture target decode CUDA graph end. elapsed=4.76 s, mem usage=0.10 GB, avail mem=8.90 GB.",
     "cuda_graph_end", {"graph": "target decode", "mem_usage_gb": 0.1, "avail_mem_gb": 8.9}),
    # 0.5.14-0.5.15 and 0.5.22+ on devices whose graph name is lower case; 0.5.22 adds bs=[...]
    ("Capture target decode cuda graph end. bs=[1, 2, 4, 8], elapsed=3.00 s, mem usage=0.40 GB, avail mem=9.00 GB.",
     "cuda_graph_end", {"graph": "target decode", "mem_usage_gb": 0.4}),
    # -- the scheduler's summary ----------------------------------------------------------
    # 0.4.0-0.4.1.post7: no chunked_prefill_size (sglang_docs_0_4_1_llama3_1_8b_h100.log)
    ("max_total_num_tokens=444500, max_prefill_tokens=16384, max_running_requests=2049, context_len=131072",
     "max_total_num_tokens", {"max_total_num_tokens": 444500, "max_running_requests": 2049, "context_len": 131072}),
    # 0.4.2-0.4.6: no available_gpu_mem
    ("max_total_num_tokens=46611, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=2049, "
     "context_len=131072", "max_total_num_tokens", {"chunked_prefill_size": 2048, "max_running_requests": 2049}),
    ("max_total_num_tokens=2658165, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, "
     "context_len=32768, available_gpu_mem=4.46 GB", "max_total_num_tokens", {"available_mem_gb": 4.46}),
    # lines that carry "max_total_num_tokens=" without being the scheduler's summary
    ("Post-capture KV sizing: max_total_num_tokens=300000, free memory=3.20 GB", "post_capture_kv",
     {"max_total_num_tokens": 300000, "avail_mem_gb": 3.2}),
    ("[unified-memory-pool] total_bytes=1073741824, max_total_num_tokens=8192, max_mamba_cache_size=64, "
     "max_num_reqs=21, speculative_num_draft_tokens=None", "unified_memory_pool",
     {"total_bytes": 1073741824, "max_total_num_tokens": 8192, "max_num_reqs": 21}),
    ("Use sliding window memory pool. full_layer_tokens=997846, swa_layer_tokens=798276", "swa_pool",
     {"full_layer_tokens": 997846, "swa_layer_tokens": 798276}),
]


@pytest.mark.parametrize("text,name,figures", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_each_releases_wording_gives_its_figures(text, name, figures):
    got = milestones.match(text)
    assert got is not None and got[0] == name, got
    for key, value in figures.items():
        assert got[1].get(key) == value, (key, got[1])


def test_the_new_names_have_a_description_and_a_phase():
    for name in ("weights_committed", "post_capture_kv", "unified_memory_pool", "swa_pool", "mamba_running_cap"):
        assert name in milestones.DESCRIPTIONS
        assert milestones.phase_after(name) != "unknown"


LOGS = sorted(p.name for p in STARTUP.glob("*.log"))


@pytest.mark.parametrize("log", LOGS)
def test_every_real_startup_log_yields_its_memory_figures(log):
    """Whatever the release's wording, each memory line the log has becomes a figure."""
    text = (STARTUP / log).read_text()
    launches, _ = read_incidents(STARTUP / log)
    figures = capacity.log_figures(launches[-1])
    expected = {"Load weight end. ": "weights_gb", "KV Cache is allocated": "kv_gb",
                "max_total_num_tokens=": "max_total_num_tokens", "Load weight begin": "pre_gb",
                "Mamba Cache is allocated": "mamba_state_gb"}
    for needle, key in expected.items():
        if needle in text:
            assert key in figures, (needle, figures)
