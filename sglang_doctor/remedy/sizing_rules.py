"""Which pool-sizing rule each SGLang release from 0.5.3 on follows (read in every wheel).

The planner (``planner.py``) asks ``sizing_rules(version)`` instead of comparing versions
itself.  Each field names a rule and the release range it holds for, cited by file:line in
the wheels of the first and last release of the range (paths under ``sglang/srt/``).  The
releases before 0.5.3 choose the default fraction by other rules (``planner.mfs_era``) and size
their pools like 0.5.9.

* ``draft_before_sizing`` — the draft model is loaded before the pools are sized, so its
  weights come out of the pool budget ("draft weights are now counted") and an EAGLE/MTP
  draft's KV is part of the target's bytes per token; the default fraction keeps no
  speculative reserve.  0.5.14 on: 0.5.14 model_executor/model_runner_kv_cache_mixin.py:85-120
  and model_executor/pool_configurator.py:128-145, 0.5.23 mem_cache/kv_cache_configurator.py:
  2990-3060 and model_executor/pool_configurator.py.  Before: 0.5.13
  model_runner_kv_cache_mixin.py:66-80 (the draft worker is sized after the target).
* ``mamba_split`` — how the recurrent-state pool takes its share of the budget:
  ``"fixed"`` up to 0.5.3: max_mamba_cache_size, else max_running_requests, else 512 slots,
  taken off the budget (0.5.3 model_runner.py:357-371, 1290-1297);
  ``"draft_ratio"`` 0.5.4-0.5.6: with the radix cache K = budget x r/(1+r) // per // (1 + D)
  and the pool holds K x per x (1 + D), without it the fixed rule (0.5.4 model_runner.py:
  1433-1480, 0.5.6 :1450-1497);
  ``"reserve_in_ratio"`` 0.5.7: the fixed rule without the radix cache or with
  --max-mamba-cache-size, else max_running_requests x D states (not divided by dp) come off
  before the ratio split (0.5.7 model_runner_kv_cache_mixin.py:145-199);
  ``"reserve_first_512"`` 0.5.8: the states first, then the fixed rule or the split (0.5.8
  :146-204);
  ``"reserve_first"`` 0.5.9-0.5.12: the speculative intermediate states for
  max_running_requests are taken off first, then K = budget x r/(1+r) / per-slot (0.5.9
  model_runner_kv_cache_mixin.py:151-210, 0.5.12 :78-137);
  ``"joint"`` 0.5.13-0.5.16: K solved together with the intermediate states,
  K = budget // (per x (1 + D/ratio)) (0.5.13 :82-184, 0.5.16 mem_cache/kv_cache_configurator.py:
  1703-1813);
  ``"joint_padded"`` 0.5.17 on: the same with each pool's padding slot, (K+1) x per (0.5.17
  kv_cache_configurator.py:1816-1982, 0.5.23 :3229-3409).
* ``running_cap`` — max_running_requests from the finalized token count:
  ``"flag"`` up to 0.5.9: the flag, else the estimate clamped to 2048..4096 (0.5.9
  model_runner_kv_cache_mixin.py:344-370);
  ``"flag_vs_estimate"`` 0.5.10-0.5.13: min(flag // dp, estimate), else min(estimate,
  tokens // 2) (0.5.10 model_runner_kv_cache_mixin.py:840-859, 0.5.13 :876-908);
  ``"flag_vs_half_tokens"`` 0.5.14 on: min(flag // dp, tokens // 2) (0.5.14 :981-1018; 0.5.23
  kv_cache_configurator.py:3119-3172 adds max(1, ...)).
* ``mamba_auto`` — what ``--mamba-scheduler-strategy auto`` becomes: ``"no_buffer"`` up to
  0.5.13 (0.5.9 server_args.py:874-877, 0.5.13 :1225-1228); ``"extra_buffer"`` 0.5.14 on for
  models that support it with the overlap scheduler, else no_buffer without overlap (0.5.14
  server_args.py:4385-4394, 0.5.23 arg_groups/overrides.py:477-486).
* ``extra_slots`` — the extra_buffer strategy's extra state slots per request (state slots per
  running request are 3 + these with the radix cache, 1 without): ``"none"`` up to 0.5.6 (0.5.4
  model_runner.py:1657-1665); ``"unless_spec_extra"`` 0.5.7: 2 for every strategy, 1 for
  extra_buffer with speculative decoding (0.5.7 model_runner_kv_cache_mixin.py:289-303);
  ``"spec"`` 0.5.8-0.5.9: extra_buffer only, 1 with speculative decoding, else 2 (0.5.9
  kv_cache_mixin.py:356-366);
  ``"overlap"`` 0.5.10 on: 2 with the overlap scheduler, else 1 (0.5.10
  model_runner_kv_cache_mixin.py:373-385, 0.5.23 kv_cache_configurator.py:3062-3088).
* ``hybrid_spec_radix`` — a hybrid model with speculative decoding under no_buffer and the
  radix cache on: ``"disable"`` 0.5.9 turns the radix cache off (0.5.9 server_args.py:
  1760-1763), ``"disable_mamba2"`` 0.5.8 only for Nemotron-H (0.5.8 server_args.py:1438-1442); ``"error"`` 0.5.10-0.5.13 refuses the launch with a ValueError
  (0.5.10 server_args.py:2204-2209, 0.5.13 likewise); 0.5.14 on picks extra_buffer instead
  (``"n/a"``; before 0.5.8 nothing checks).  ``radix_forced_off``: up to 0.5.3 every hybrid
  GDN model runs without the radix cache (0.5.3 model_runner.py:357-358), 0.5.4-0.5.6 every
  Mamba2 model (0.5.4 model_runner.py:402-405, 0.5.6 :447-450).
* ``mm_reserve_mib`` — multimodal models: SGLANG_VLM_CACHE_SIZE_MB (100) is taken off the KV
  budget from 0.5.18 (0.5.18 mem_cache/kv_cache_configurator.py:130-148, used at :1785-1789;
  0.5.23 :202-220, :3034-3038); 0.5.17's _profile_available_bytes (:1614-1657) has no such
  term.
* ``mid_tier`` — (chunked_prefill_size, decode graph max bs below / from tp 4) for 20-35 GiB
  GPUs: (2048, 16, 80) 0.5.3-0.5.4 (0.5.4 server_args.py:685-692), (2048, 24, 80) 0.5.4.post1-0.5.19
  (0.5.4.post1 server_args.py:669-677, 0.5.9 :936-1000, 0.5.19 arg_groups/memory_hook.py),
  (4096, 48, 160) from 0.5.20 (0.5.20 arg_groups/memory_hook.py:
  100-116).
* ``graph_bs_capped_by_running`` — a default decode graph max bs above --max-running-requests
  is lowered to it: 0.5.22 on (0.5.22 arg_groups/memory_hook.py:83, :182-189).
* ``graph_reserve`` — ``cuda_graph_max_bs x 2`` MiB in the default fraction: ``"always"``
  0.5.3-0.5.14, also under --disable-cuda-graph (0.5.9 server_args.py:1029, 0.5.10.post1 :1290,
  0.5.14 :3285); ``"when_enabled"`` 0.5.15 on (0.5.15 server_args.py:3639-3643, 0.5.16
  reserve_for_graph_mb :4164-4196, 0.5.23 arg_groups/memory_hook.py:357-399).
* ``prefill_graph`` — the prefill (piecewise) CUDA graph and its reserve (MLA 1.5 GiB, else
  8 MiB per captured size): ``"opt_in"`` 0.5.3-0.5.9 (--enable-piecewise-cuda-graph, 0.5.9 server_args.py:1044);
  ``"piecewise"`` 0.5.10-0.5.13: on unless --disable-piecewise-cuda-graph, speculative decoding,
  DP attention, pp > 1, LoRA or a multimodal model (0.5.10 server_args.py:1078-1139, reserve
  :1300-1308; --disable-cuda-graph does not turn it off); ``"tc_piecewise"`` 0.5.14: on unless
  --disable-cuda-graph, DP attention, pp > 1, LoRA or a multimodal model (0.5.14
  server_args.py:2941-2944, 2997-3058); ``"breakable"`` 0.5.15 on, CUDA only: off under
  --disable-cuda-graph, for MLA models 0.5.15-0.5.17 (0.5.15 server_args.py:3352, 0.5.17
  :4468-4472) and for multimodal models outside SGLang's list from 0.5.16 (0.5.16
  server_args.py:3804, 0.5.23 arg_groups/cuda_graph_hook.py:170-240).
* ``spec_reserve_mib`` — (EAGLE-like, STANDALONE) reserve in the default fraction: (2048,
  6144) 0.5.3-0.5.9 (0.5.9 server_args.py:1051-1057), (4096, 6144) 0.5.10-0.5.13 (0.5.10
  server_args.py:1316-1323, 0.5.13 :1627-1634), none from 0.5.14 (0.5.14 :3276-3320).
* ``graph_key`` — the flag that sets the decode graph max bs: --cuda-graph-max-bs-decode from
  0.5.14 (flag catalogues), --cuda-graph-max-bs before.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizingRules:
    draft_before_sizing: bool
    mamba_split: str
    running_cap: str
    mamba_auto: str
    extra_slots: str
    hybrid_spec_radix: str
    radix_forced_off: str
    mm_reserve_mib: int
    mid_tier: tuple[int, int, int]
    graph_bs_capped_by_running: bool
    graph_reserve: str
    prefill_graph: str
    spec_reserve_mib: tuple[int, int]
    graph_key: str


def _key(version: str) -> tuple:
    from sglang_doctor.remedy.flags import version_key

    v = "0.5.9" if str(version).startswith("0.0.0") else str(version)  # a dev build: 0.5.9's rules
    try:
        return version_key(v)
    except ValueError:
        return version_key("0.5.9")


def at_least(version: str, release: str) -> bool:
    return _key(version) >= _key(release)


def sizing_rules(version: str) -> SizingRules:
    def since(release: str) -> bool:
        return at_least(version, release)

    return SizingRules(
        draft_before_sizing=since("0.5.14"),
        mamba_split=("joint_padded" if since("0.5.17") else "joint" if since("0.5.13") else "reserve_first"
                     if since("0.5.9") else "reserve_first_512" if since("0.5.8") else "reserve_in_ratio"
                     if since("0.5.7") else "draft_ratio" if since("0.5.4") else "fixed"),
        running_cap=("flag_vs_half_tokens" if since("0.5.14") else "flag_vs_estimate" if since("0.5.10")
                     else "flag"),
        mamba_auto="extra_buffer" if since("0.5.14") else "no_buffer",
        extra_slots=("overlap" if since("0.5.10") else "spec" if since("0.5.8") else "unless_spec_extra"
                     if since("0.5.7") else "none"),
        hybrid_spec_radix=("n/a" if since("0.5.14") else "error" if since("0.5.10") else "disable"
                           if since("0.5.9") else "disable_mamba2" if since("0.5.8") else "n/a"),
        radix_forced_off="none" if since("0.5.7") else "mamba2" if since("0.5.4") else "all",
        mm_reserve_mib=100 if since("0.5.18") else 0,
        mid_tier=(4096, 48, 160) if since("0.5.20") else (2048, 24, 80) if since("0.5.4.post1") else (2048, 16, 80),
        graph_bs_capped_by_running=since("0.5.22"),
        graph_reserve="when_enabled" if since("0.5.15") else "always",
        prefill_graph=("breakable" if since("0.5.15") else "tc_piecewise" if since("0.5.14")
                       else "piecewise" if since("0.5.10") else "opt_in"),
        spec_reserve_mib=(0, 0) if since("0.5.14") else (4096, 6144) if since("0.5.10") else (2048, 6144),
        graph_key="cuda_graph_max_bs_decode" if since("0.5.14") else "cuda_graph_max_bs",
    )


# multimodal architectures that keep the breakable prefill graph (0.5.16
# configs/model_config.py:1785-1788; 0.5.23 :2501-2514 adds newer ones)
BREAKABLE_MULTIMODAL = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
                        "InternS2MobiusForConditionalGeneration", "KimiK25ForConditionalGeneration")
