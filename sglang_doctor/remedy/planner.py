"""The memory planner: where each GiB of a GPU goes at launch, computed the way SGLang does.

SGLang sizes its pools at start-up from three measurements and a handful of flags:

* ``pre``   — free GPU memory after distributed init (the log's ``Load weight begin. avail mem=``),
* ``avail`` — free memory once the weights are in (``Load weight end. avail mem=``),
* ``mem_fraction_static`` (mfs) — the share of ``pre`` that weights + pools may use; the rest,
  ``pre * (1 - mfs)``, is left for activations, CUDA graphs and other runtime buffers.

``avail - pre*(1-mfs)`` is the pool budget.  Hybrid linear-attention models first carve out a
recurrent-state ("mamba") pool and, with speculative decoding, per-draft-token intermediate
states; what is left becomes KV tokens at ``cell_size`` bytes each.  The two versions differ:

* 0.5.9  — ``ModelRunnerKVCacheMixin`` (srt/model_executor/model_runner_kv_cache_mixin.py:116-210,
  339-420); draft weights/KV/graphs come out of the ``(1-mfs)`` headroom afterwards.
* 0.5.23 — ``KVCacheConfigurator._profile_available_bytes`` / ``_handle_max_mamba_cache`` /
  ``resolve_max_num_reqs`` (srt/mem_cache/kv_cache_configurator.py:2990-3060, 3119-3172,
  3229-3410) and ``DefaultPoolConfigurator`` (srt/model_executor/pool_configurator.py:219-332):
  draft weights are loaded before sizing and the draft's KV is part of ``cell_size``.

Every release from 0.5.9 to 0.5.23 was read: where a rule changed between them, the planner
asks ``sizing_rules(version)`` (sizing_rules.py, each rule with its release range and
file:line).  When the log's own figures are given (``observed``) they replace the estimates,
so the prediction is SGLang's arithmetic on SGLang's measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.remedy.hardware import GPUProfile
from sglang_doctor.remedy.sizing_rules import BREAKABLE_MULTIMODAL, at_least, sizing_rules

GIB = 1 << 30
MIB = 1 << 20
_DTYPE_BYTES = {"float32": 4, "float": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2,
                "half": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8": 1, "fp4_e2m1": 0.5}
# Free memory taken by torch distributed init + NCCL + custom all-reduce buffers: the seed log
# (2x A6000, tp=2, 0.5.9, custom all-reduce on) shows "Init torch distributed ends. ... mem
# usage=0.63 GB".  SGLang turns custom all-reduce off on more than two GPUs without full NVLink
# ("not supported on more than two PCIe-only GPUs": 0.4.3.post4 custom_all_reduce.py:232-240,
# 0.5.9 :146-152, 0.5.23 custom_all_reduce_utils.py:489-497) and NCCL then has no peer-to-peer
# buffers on the GPUs: 0.13 GB in a 4x L4 log (llms-in-clouds, 0.4.3.post4).
_INIT_GB_MULTI, _INIT_GB_MULTI_PCIE, _INIT_GB_SINGLE = 0.63, 0.13, 0.1


def _init_gb(hw: GPUProfile, tp: int, pp: int, args: dict) -> float:
    """Free memory distributed init takes per GPU (see _INIT_GB_*)."""
    if tp * pp <= 1:
        return _INIT_GB_SINGLE
    if args.get("disable_custom_all_reduce") or (tp > 2 and not hw.nvlink):
        return _INIT_GB_MULTI_PCIE
    return _INIT_GB_MULTI
_GDN_ARCHS = ("Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
              "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM")
_EAGLE_LIKE = ("EAGLE", "EAGLE3", "NEXTN", "MTP")


def _vtuple(version: str) -> tuple[int, ...]:
    out = []
    for part in str(version).split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def is_new_sizing(version: str) -> bool:
    """True when the version sizes pools like 0.5.23 (kv_cache_configurator), False like 0.5.9."""
    return _vtuple(rules_version(version)) >= (0, 5, 10)


def rules_version(version: str) -> str:
    """The release whose sizing rules ``version`` follows.  A source build reports
    ``0.0.0.devN`` (no tag to derive a version from); its dump and figures match 0.5.9's
    rules, so it is sized as 0.5.9 (issue 14)."""
    return "0.5.9" if str(version).startswith("0.0.0") else str(version)


def _vkey(version: str) -> tuple:
    from sglang_doctor.remedy.flags import version_key

    try:
        return version_key(rules_version(version))
    except ValueError:
        return version_key("0.5.9")


# The default-fraction rules of ServerArgs.__post_init__ by release range (each read in the
# wheels; line numbers are of `if self.mem_fraction_static is None:`):
#   "tp_table"      0.4.0 server_args.py:158 .. 0.4.5.post2 :232   fixed by tp_size
#   "tp_table_13g"  0.4.5.post3 :224 .. 0.4.6.post1 :224           same table up to 80 GiB
#                                                                   GPUs, else (mem-13 GiB)/mem
#   "ps_table_96g"  0.4.6.post2 :226 .. 0.4.6.post5 :247           table by tp*pp; >96 GiB GPUs
#                                                                   min(f + 48 GiB(1-f)/mem,
#                                                                   (mem-18 GiB)/mem)
#   "ps_table_spec" 0.4.7 :253                                      + >180 GB -> 0.79; spec x0.95
#   "reserved_table" 0.4.7.post1 :261 .. 0.5.2 :452                 reserve (2.8+ps/10) GiB under
#                                                                   35 GiB, (9.5+ps/2) under 90,
#                                                                   (12+ps/2) under 160, else 32;
#                                                                   +2 GiB spec, +4 GiB DP attn
#   "reserved_formula" 0.5.3 :637 on                                512 MiB + 1.5 x chunk + ...
_ERAS = (("0.4.5.post3", "tp_table"), ("0.4.6.post2", "tp_table_13g"), ("0.4.7", "ps_table_96g"),
         ("0.4.7.post1", "ps_table_spec"), ("0.5.3", "reserved_table"))


def mfs_era(version: str) -> str:
    key = _vkey(version)
    for below, era in _ERAS:
        if key < _vkey(below):
            return era
    return "reserved_formula"


def _tp_table(n: int) -> float:
    return 0.79 if n >= 16 else 0.81 if n >= 8 else 0.85 if n >= 4 else 0.87 if n >= 2 else 0.88


def legacy_mem_fraction(era: str, gpu_mib: float, tp: int, pp: int, spec: str | None,
                        dp_attn: bool, version: str = "0.5.2") -> tuple[float, float | None]:
    """(default mem_fraction_static, reserve MiB or None) of the releases before 0.5.3."""
    ps = tp * pp
    if era == "tp_table":
        return _tp_table(tp), None
    if era == "tp_table_13g":
        return (_tp_table(tp), None) if gpu_mib <= 81920 else ((gpu_mib - 13 * 1024) / gpu_mib, 13 * 1024.0)
    if era in ("ps_table_96g", "ps_table_spec"):
        mfs = _tp_table(ps) if gpu_mib <= 81920 else 0.88
        if era == "ps_table_spec" and gpu_mib > 180 * 1000:
            return 0.79, None
        if gpu_mib > 96 * 1024:
            reserve = 18 * 1024 if (era == "ps_table_96g" or not spec) else 20 * 1024
            return min(mfs + 48 * 1024 * (1 - mfs) / gpu_mib, (gpu_mib - reserve) / gpu_mib), None
        if era == "ps_table_spec" and spec:
            mfs *= 0.95
        return mfs, None
    # reserved_table
    if gpu_mib < 35 * 1024:
        reserved = (2.8 + ps / 10) * 1024
    elif gpu_mib < 90 * 1024:
        reserved = (9.5 + ps / 2) * 1024
    elif gpu_mib < 160 * 1024:
        reserved = (12 + ps / 2) * 1024
    else:
        reserved = 32 * 1024
    if spec:  # draft model and larger graphs; 0.5.2 (:452+) gives a STANDALONE draft 6 GiB
        standalone = spec == "STANDALONE" and _vkey(version) >= _vkey("0.5.2")
        reserved += 6 * 1024 if standalone else 2 * 1024
    if dp_attn:
        reserved += 4 * 1024
    return round((gpu_mib - reserved) / gpu_mib, 3), reserved


# --------------------------------------------------------------------------------------------
# The model, read from config.json
# --------------------------------------------------------------------------------------------

@dataclass
class LinearState:
    """Recurrent-state shape of the linear-attention layers (Mamba2StateShape.create inputs)."""

    kind: str  # "gdn" | "mamba2"
    layers: int
    intermediate_size: int
    n_groups: int
    num_heads: int
    head_dim: int
    state_size: int
    conv_kernel: int
    config_ssm_dtype: str | None


@dataclass
class ModelShape:
    arch: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    vocab: int
    tie_embeddings: bool
    intermediate: int
    context_len: int
    full_attention_layers: int  # layers that hold KV
    linear: LinearState | None
    mla: tuple[int, int] | None  # (kv_lora_rank, qk_rope_head_dim)
    mtp_layers: int
    weight_bytes: float  # bytes per weight of the linear layers (bf16 2, fp8 1, int4 ~0.53)
    is_multimodal: bool
    vision: dict[str, Any] = field(default_factory=dict)
    text: dict[str, Any] = field(default_factory=dict)

    @property
    def hybrid(self) -> bool:
        return self.linear is not None


def _quant_bytes(cfg: dict) -> float:
    q = cfg.get("quantization_config") or (cfg.get("text_config") or {}).get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower()
    if not method:
        return 2.0
    bits = q.get("bits") or q.get("w_bit") or (8 if "fp8" in method else None)
    if "fp8" in method or bits == 8:
        return 1.0
    if bits == 4 or method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        group = q.get("group_size") or q.get("q_group_size") or 128
        return 0.5 + 4.0 / max(int(group), 1)  # fp16 scale + packed zero per group
    return 2.0


def model_shape(config: dict) -> ModelShape:
    """The sizes the planner needs, from a HF config.json (VLMs: the text_config part)."""
    text = dict(config.get("text_config") or config.get("llm_config") or config)
    arch = (config.get("architectures") or text.get("architectures") or ["unknown"])[0]
    model_type = str(text.get("model_type") or config.get("model_type") or "")
    hidden = int(text["hidden_size"])
    layers = int(text["num_hidden_layers"])
    heads = int(text.get("num_attention_heads") or 1)
    kv_heads = int(text.get("num_key_value_heads") or heads)
    head_dim = int(text.get("head_dim") or text.get("attention_head_dim") or hidden // heads)
    mla = None
    v_head_dim = head_dim
    if text.get("kv_lora_rank"):
        mla = (int(text["kv_lora_rank"]), int(text["qk_rope_head_dim"]))
        v_head_dim = int(text.get("v_head_dim") or head_dim)
    linear = None
    full_layers = layers
    pattern = text.get("hybrid_override_pattern")
    if pattern:  # Nemotron-H: M = mamba2, * = attention, - = MLP, E = MoE (configs/nemotron_h.py:283-296)
        full_layers = pattern.count("*")
        nh = int(text["mamba_num_heads"])
        hd = int(text["mamba_head_dim"])
        linear = LinearState("mamba2", pattern.count("M"), nh * hd, int(text.get("n_groups", 1)), nh, hd,
                             int(text["ssm_state_size"]), int(text.get("conv_kernel", 4)),
                             text.get("mamba_ssm_dtype"))
    elif text.get("linear_num_value_heads") or arch in _GDN_ARCHS:
        # layers_block_type: full when (i+1) % full_attention_interval == 0 (configs/qwen3_next.py:255-263)
        types = text.get("layer_types")
        if types:
            full_layers = sum(1 for t in types[:layers] if t == "full_attention")
        else:
            interval = int(text.get("full_attention_interval", 4))
            full_layers = sum(1 for i in range(layers) if (i + 1) % interval == 0)
        vh, dv = int(text["linear_num_value_heads"]), int(text["linear_value_head_dim"])
        # configs/qwen3_next.py:290-298: intermediate = dv*Vh, n_groups = Kh, state_size = dk
        linear = LinearState("gdn", layers - full_layers, dv * vh, int(text["linear_num_key_heads"]), vh, dv,
                             int(text["linear_key_head_dim"]), int(text.get("linear_conv_kernel_dim", 4)),
                             text.get("mamba_ssm_dtype"))
    mtp = int(text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers") or 0)
    tie = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))
    ctx = int(text.get("max_position_embeddings") or config.get("max_position_embeddings") or 4096)
    vision = dict(config.get("vision_config") or {})
    return ModelShape(arch, model_type, hidden, layers, heads, kv_heads, head_dim, v_head_dim,
                      int(text.get("vocab_size") or config.get("vocab_size")), tie,
                      int(text.get("intermediate_size") or 4 * hidden), ctx, full_layers, linear, mla, mtp,
                      _quant_bytes(config), bool(vision), vision, text)


# --------------------------------------------------------------------------------------------
# Weights per GPU
# --------------------------------------------------------------------------------------------

def _attention_params(s: ModelShape, tp: int) -> float:
    """Parameters of one full-attention layer on one rank (kv heads replicated when < tp)."""
    t = s.text
    if s.mla:
        kv_lora, rope = s.mla
        nope = int(t.get("qk_nope_head_dim", s.head_dim))
        q_lora = t.get("q_lora_rank")
        q = (s.hidden * q_lora + q_lora * s.heads * (nope + rope) / tp) if q_lora else s.hidden * s.heads * (nope + rope) / tp
        return q + s.hidden * (kv_lora + rope) + kv_lora * s.heads * (nope + s.v_head_dim) / tp + s.heads * s.v_head_dim * s.hidden / tp
    q_out = s.heads * s.head_dim * (2 if t.get("attn_output_gate") else 1)
    kv_rank = max(1, s.kv_heads // tp) * s.head_dim
    params = s.hidden * q_out / tp + 2 * s.hidden * kv_rank + s.heads * s.head_dim * s.hidden / tp
    if t.get("attention_bias") or s.model_type in ("qwen2", "qwen2_moe"):
        params += q_out / tp + 2 * kv_rank
    return params


def _linear_params(s: ModelShape, tp: int) -> float:
    """Parameters of one linear-attention (GDN or Mamba2) layer on one rank."""
    ls = s.linear
    assert ls is not None
    if ls.kind == "gdn":
        key_dim, value_dim = ls.n_groups * ls.state_size, ls.intermediate_size
        proj = s.hidden * (2 * key_dim + 2 * value_dim + 2 * ls.num_heads)  # qkvz + ba
        conv = (2 * key_dim + value_dim) * ls.conv_kernel
        return (proj + conv + value_dim * s.hidden + 2 * ls.num_heads) / tp + ls.head_dim
    inter, ng = ls.intermediate_size, ls.n_groups * ls.state_size
    proj = s.hidden * (2 * inter + 2 * ng + ls.num_heads)
    conv = (inter + 2 * ng) * ls.conv_kernel
    return (proj + conv + inter * s.hidden + 3 * ls.num_heads + inter) / tp


def _num_experts(t: dict) -> int:
    return int(t.get("num_experts") or t.get("n_routed_experts") or t.get("num_local_experts") or 0)


def _mlp_params(s: ModelShape, tp: int, layer: int, kind: str = "") -> float:
    """Parameters of one MLP/MoE block on one rank (experts split by TP or EP alike)."""
    t = s.text
    gated = 2 if s.model_type == "nemotron_h" else 3  # Nemotron-H uses relu2 (up, down only)
    experts = _num_experts(t)
    dense_layers = int(t.get("first_k_dense_replace") or 0)
    step = int(t.get("decoder_sparse_step") or 1)
    mlp_only = set(t.get("mlp_only_layers") or [])
    is_moe = experts > 0 and (kind == "E" if kind else (layer >= dense_layers and layer not in mlp_only
                                                         and (layer + 1) % step == 0))
    if not is_moe:
        return gated * s.hidden * s.intermediate / tp
    moe_inter = int(t.get("moe_intermediate_size") or s.intermediate)
    shared = int(t.get("shared_expert_intermediate_size") or t.get("moe_shared_expert_intermediate_size") or 0)
    if not shared and t.get("n_shared_experts"):
        shared = int(t["n_shared_experts"]) * moe_inter
    params = experts * gated * s.hidden * moe_inter / tp + s.hidden * experts
    if shared:
        params += gated * s.hidden * shared / tp + (s.hidden if t.get("shared_expert_intermediate_size") else 0)
    return params


def _vision_params(v: dict) -> float:
    """A ViT tower of the Qwen2/3-VL kind (blocks + patch embed + merger), from vision_config."""
    if not v:
        return 0.0
    h = int(v.get("hidden_size") or v.get("embed_dim") or 1024)
    depth = int(v.get("depth") or v.get("num_hidden_layers") or 24)
    inter = int(v.get("intermediate_size") or 4 * h)
    out = int(v.get("out_hidden_size") or h)
    m = int(v.get("spatial_merge_size") or 2)
    block = 4 * h * h + 2 * h * inter + 9 * h + inter
    patch = int(v.get("in_channels", 3)) * int(v.get("temporal_patch_size", 1)) * int(v.get("patch_size", 14)) ** 2 * h
    merger = (h * m * m) ** 2 + h * m * m * out
    deepstack = len(v.get("deepstack_visual_indexes") or [])
    return depth * block + patch + int(v.get("num_position_embeddings") or 0) * h + merger * (1 + deepstack)


def weights_gb(s: ModelShape, tp: int = 1, dtype_bytes: float | None = None, attn_tp: int | None = None) -> float:
    """Target-model weights on one GPU, GiB (MTP/NEXTN draft layers excluded; see draft_weights_gb).

    Everything is split by TP except norms; under DP attention the attention layers and the
    vocabulary embedding/head are split only over the attention-TP group (attn_tp = tp / dp),
    which the real log of sglang PR #17392 confirms (Qwen3-30B-A3B, tp=dp=4: 16.39 GiB/rank).
    """
    wb = s.weight_bytes if dtype_bytes is None else dtype_bytes
    atp = tp if attn_tp is None else attn_tp
    pattern = s.text.get("hybrid_override_pattern")
    linear = 0.0
    for i in range(s.layers):
        kind = pattern[i] if pattern else ""
        if pattern:
            if kind == "M":
                linear += _linear_params(s, tp)
            elif kind == "*":
                linear += _attention_params(s, atp)
            else:
                linear += _mlp_params(s, tp, i, kind)
            continue
        is_full = s.linear is None or _is_full_layer(s, i)
        linear += _attention_params(s, atp) if is_full else _linear_params(s, atp)
        linear += _mlp_params(s, tp, i)
    embed = s.vocab * s.hidden / atp * (1 if s.tie_embeddings else 2)
    norms = (2 * s.layers + 1) * s.hidden
    vision = _vision_params(s.vision) / tp
    return (linear * wb + (embed + norms + vision) * 2 + _allocator_rounding(s, tp, atp, wb) + _rope_cache_bytes(s)) / GIB


def _rope_cache_bytes(s: ModelShape) -> float:
    """RotaryEmbedding's cos_sin_cache buffer, one per model, kept in float32 on CUDA
    ("cache needs to be in FP32 for numerical stability": 0.4.7 layers/rotary_embedding.py:82-93,
    0.5.9 :120-147): max_position_embeddings x rotary_dim x 4 bytes (Llama-3.1: 64 MiB)."""
    t = s.text
    rotary = int(s.mla[1]) if s.mla else int(s.head_dim * float(t.get("partial_rotary_factor") or 1.0))
    return int(t.get("max_position_embeddings") or s.context_len) * rotary * 4


_MIB2 = 2 * MIB


def _rounded_up(nbytes: float) -> float:
    """What torch's CUDA caching allocator keeps beyond a tensor of ``nbytes``: an allocation
    over kMinLargeAlloc (10 MiB) gets its own segment rounded up to kRoundLarge (2 MiB), and
    the rest of that segment is split off only when it exceeds kSmallSize (1 MiB), to be
    reused by another allocation of 1-2 MiB, which loading never makes (PyTorch
    c10/cuda/CUDACachingAllocator.cpp, get_allocation_size / should_split).  Smaller
    tensors are packed into shared 2 MiB / 20 MiB segments."""
    if nbytes <= 10 * MIB:
        return 0.0
    return math.ceil(nbytes / _MIB2) * _MIB2 - nbytes


def _allocator_rounding(s: ModelShape, tp: int, atp: int, wb: float) -> float:
    """Bytes the large weight tensors of one rank occupy beyond their size.

    SGLang's ``Load weight end ... mem usage=`` is free memory before minus after loading
    (torch.cuda.mem_get_info after empty_cache, 0.4.7 model_runner.py:512-593), so it counts
    whole allocator segments: ~1 MiB per large tensor whose per-rank size is not a multiple of
    2 MiB, which is what TP splits make (Qwen3-14B at tp 4: 160 tensors, +0.18 GiB).  The
    fused tensors of SGLang's layers are counted (qkv_proj, o_proj, gate_up_proj, down_proj,
    the MoE w13/w2 and shared expert, embedding and head); MLA and linear-attention
    projections are left out.
    """
    t = s.text
    per_layer_attn = 0.0
    if not s.mla:
        q_out = s.heads * s.head_dim * (2 if t.get("attn_output_gate") else 1)
        kv_rank = max(1, s.kv_heads // atp) * s.head_dim
        per_layer_attn = (_rounded_up(s.hidden * (q_out / atp + 2 * kv_rank) * wb)
                          + _rounded_up(s.heads * s.head_dim / atp * s.hidden * wb))
    experts = _num_experts(t)
    moe_inter = int(t.get("moe_intermediate_size") or s.intermediate)
    shared = int(t.get("shared_expert_intermediate_size") or t.get("moe_shared_expert_intermediate_size") or 0)
    if not shared and t.get("n_shared_experts"):
        shared = int(t["n_shared_experts"]) * moe_inter
    dense = _rounded_up(2 * s.hidden * s.intermediate / tp * wb) + _rounded_up(s.hidden * s.intermediate / tp * wb)
    moe = (_rounded_up(experts * 2 * moe_inter / tp * s.hidden * wb) + _rounded_up(experts * moe_inter / tp * s.hidden * wb)
           + (_rounded_up(2 * shared / tp * s.hidden * wb) + _rounded_up(shared / tp * s.hidden * wb) if shared else 0.0))
    pattern = t.get("hybrid_override_pattern")
    dense_layers = int(t.get("first_k_dense_replace") or 0)
    step = int(t.get("decoder_sparse_step") or 1)
    mlp_only = set(t.get("mlp_only_layers") or [])
    total = 0.0
    for i in range(s.layers):
        if pattern:
            continue  # Nemotron-H: projections of several kinds, not modelled
        if s.linear is None or _is_full_layer(s, i):
            total += per_layer_attn
        is_moe = experts > 0 and i >= dense_layers and i not in mlp_only and (i + 1) % step == 0
        total += moe if is_moe else dense
    total += _rounded_up(s.vocab * s.hidden / atp * 2) * (1 if s.tie_embeddings else 2)
    return total


def _is_full_layer(s: ModelShape, i: int) -> bool:
    types = s.text.get("layer_types")
    if types:
        return types[i] == "full_attention"
    return (i + 1) % int(s.text.get("full_attention_interval", 4)) == 0


def draft_weights_gb(s: ModelShape, tp: int, algorithm: str | None) -> float:
    """MTP/NEXTN draft layers (one decoder layer + the 2h->h fusion each; embed/head shared)."""
    if not algorithm or algorithm.upper() not in _EAGLE_LIKE:
        return 0.0
    n = max(s.mtp_layers, 1)
    per = _attention_params(s, tp) + _mlp_params(s, tp, s.layers) + 2 * s.hidden * s.hidden / tp + 4 * s.hidden
    return n * per * s.weight_bytes / GIB


# --------------------------------------------------------------------------------------------
# Per-token and per-request sizes
# --------------------------------------------------------------------------------------------

def kv_bytes(kv_cache_dtype: str | None, model_dtype_bytes: float = 2) -> float:
    d = str(kv_cache_dtype or "auto").lower()
    if d == "auto":
        return model_dtype_bytes
    return _DTYPE_BYTES.get(d, model_dtype_bytes)


def cell_size(s: ModelShape, attn_tp: int, kv_dtype: str | None, layers: int | None = None) -> int:
    """KV bytes per token on one GPU: get_cell_size_per_token (0.5.9 kv_cache_mixin.py:47-114).

    MLA: (kv_lora_rank + qk_rope_head_dim) * L * bytes; else max(1, kv_heads // attn_tp) *
    (head_dim + v_head_dim) * L * bytes (ModelConfig.get_num_kv_heads, model_config.py:624-631),
    L = full-attention layers only for hybrid models (kv_cache_mixin.py:128-134).
    """
    L = s.full_attention_layers if layers is None else layers
    b = kv_bytes(kv_dtype)
    if s.mla:
        return int((s.mla[0] + s.mla[1]) * L * b)
    return int(max(1, s.kv_heads // attn_tp) * (s.head_dim + s.v_head_dim) * L * b)


def mamba_state_bytes(s: ModelShape, attn_tp: int, ssm_dtype: str | None) -> tuple[int, int, int]:
    """(conv bytes, ssm bytes, total) of one request slot across all linear layers.

    Mamba2StateShape.create (configs/mamba_utils.py:146-170) and mamba_cache_per_req (:116-125):
    n_groups is padded to tp when not divisible; conv = (conv_dim/tp) x (K-1) in bf16
    (SGLANG_MAMBA_CONV_DTYPE), ssm = (heads/tp) x head_dim x state in --mamba-ssm-dtype >
    config mamba_ssm_dtype > float32 (mamba2_state_dtype, :47-107).
    """
    ls = s.linear
    if ls is None:
        return 0, 0, 0
    ng = ls.n_groups
    if ng % attn_tp != 0:
        ng += attn_tp - ng  # extra_groups_for_head_shards (mamba_utils.py:29-38)
    conv_dim = ls.intermediate_size + 2 * ng * ls.state_size
    conv = (conv_dim // attn_tp) * (ls.conv_kernel - 1) * 2
    ssm_b = _DTYPE_BYTES.get(str(ssm_dtype or ls.config_ssm_dtype or "float32").lower(), 4)
    ssm = int((ls.num_heads // attn_tp) * ls.head_dim * ls.state_size * ssm_b)
    return conv * ls.layers, ssm * ls.layers, (conv + ssm) * ls.layers


# --------------------------------------------------------------------------------------------
# Launch settings with SGLang's defaults filled in
# --------------------------------------------------------------------------------------------

def _get(args: dict, key: str, default: Any = None) -> Any:
    value = args.get(key)
    return default if value is None else value


def _decode_graph_bs(args: dict) -> int | None:
    cfg = args.get("cuda_graph_config")
    if isinstance(cfg, dict) and isinstance(cfg.get("decode"), dict):  # 0.5.23 dump
        return cfg["decode"].get("max_bs")
    return args.get("cuda_graph_max_bs_decode") or args.get("cuda_graph_max_bs")


def _capacity_defaults(gpu_mib: int, tp: int, version: str = "0.5.9") -> tuple[int, int]:
    """(chunked_prefill_size, decode graph max bs) by GPU memory.

    0.4.0-0.4.6.post5 server_args.py (`if self.chunked_prefill_size is None`): 2048 under
    25000 MiB else 8192; graph bs 8 (80 from tp 4; 0.4.0: 8) under 25000 MiB else 160.
    0.4.7: 16384 above 180000 MiB.  0.4.7.post1-0.5.2: 2048 under 35 GiB, 8192 under 160 GiB,
    else 16384; graph bs 8 / 80 under 35 GiB, else SGLang's capture list up to 160.
    0.5.3+: 0.5.9 server_args.py:936-1000; 0.5.23 arg_groups/memory_hook.py:88-180 (the
    20-35 GiB tier moved from 2048/24 to 4096/48 in 0.5.20, sizing_rules ``mid_tier``).
    """
    era = mfs_era(version)
    if era != "reserved_formula":
        small = 25_000 if era in ("tp_table", "tp_table_13g", "ps_table_96g", "ps_table_spec") else 35 * 1024
        if era == "reserved_table":
            chunk = 2048 if gpu_mib < small else (8192 if gpu_mib < 160 * 1024 else 16384)
        else:
            chunk = 16384 if (era == "ps_table_spec" and gpu_mib > 180_000) else (2048 if gpu_mib < small else 8192)
        if gpu_mib < small:
            graph = 8 if (tp < 4 or _vkey(version) < _vkey("0.4.0.post1")) else 80
        else:
            graph = 160
        return chunk, graph
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        chunk, small_tp, large_tp = sizing_rules(version).mid_tier
        return chunk, small_tp if tp < 4 else large_tp
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def _prefill_graph_buckets(max_tokens: int) -> int:
    """len(generate_prefill_cuda_graph_batch_sizes(max_bs)) (0.5.23 arg_groups/cuda_graph_hook.py:480-497)."""
    sizes = (list(range(4, 33, 4)) + list(range(48, 257, 16)) + list(range(288, 513, 32))
             + list(range(576, 1025, 64)) + list(range(1280, 4097, 256)) + list(range(4608, max_tokens + 1, 512)))
    return sum(1 for x in sizes if x <= max_tokens)


def vlm_factor(s: ModelShape) -> float:
    """adjust_mem_fraction_for_vlm (0.5.9 server_args.py:5483; 0.5.23 memory_hook.py:417-459)."""
    v = s.vision
    if not v:
        return 1.0
    layers = int(v.get("num_hidden_layers", 24))  # Qwen3.5 has "depth", not num_hidden_layers -> 24
    hidden = int(v.get("hidden_size", 1024))
    ratio = layers * hidden ** 2 / (24 * 1024 ** 2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


@dataclass
class Settings:
    """The launch as SGLang will resolve it (defaults filled in), plus where each value came from."""

    version: str
    tp: int
    pp: int
    attn_tp: int
    attn_dp: int
    context_len: int
    mfs: float
    chunked_prefill: int
    graph_bs: int
    cuda_graph: bool
    prefill_graph: bool
    spec: str | None
    draft_tokens: int
    max_running: int | None
    kv_dtype: str
    ssm_dtype: str | None
    mamba_ratio_r: float
    max_mamba_cache_size: int | None
    disable_radix: bool
    mamba_ratio: int  # state slots per running request
    max_total_tokens: int | None
    page_size: int
    reserved_mb: float | None  # SGLang's own reserve when it chose mfs
    notes: list[str] = field(default_factory=list)
    arg_error: str | None = None  # SGLang refuses these arguments (ServerArgs raises)


def resolve(s: ModelShape, hw: GPUProfile, args: dict, version: str) -> Settings:
    """Fill the launch's unset fields the way SGLang's argument resolution does."""
    rules = sizing_rules(version)
    notes: list[str] = []
    arg_error = None
    tp, pp = int(_get(args, "tp_size", 1)), int(_get(args, "pp_size", 1))
    dp = int(_get(args, "dp_size", 1))
    dp_attn = bool(args.get("enable_dp_attention")) and dp > 1
    attn_tp = tp // dp if dp_attn else tp
    spec = args.get("speculative_algorithm")
    spec = str(spec).upper() if spec else None
    gpu_mib = hw.total_mib
    chunk_d, bs_d = _capacity_defaults(gpu_mib, tp, version)
    chunk = int(_get(args, "chunked_prefill_size", chunk_d))
    disable_graph = bool(args.get("disable_cuda_graph"))
    graph_bs = int(_decode_graph_bs(args) or bs_d)
    if rules.graph_bs_capped_by_running and args.get("max_running_requests") and _decode_graph_bs(args) is None:
        graph_bs = min(graph_bs, int(args["max_running_requests"]))  # 0.5.23 memory_hook.py:182-189
    prefill_graph = _prefill_graph_on(s, hw, args, version, spec, dp_attn, pp)
    # speculative defaults: auto_choose_speculative_params (0.5.9 server_args.py:5741-5775)
    steps_d, topk_d, d_d = (5, 4, 8) if s.arch == "LlamaForCausalLM" and spec != "STANDALONE" else (3, 1, 4)
    steps = int(_get(args, "speculative_num_steps", steps_d))
    topk = int(_get(args, "speculative_eagle_topk", topk_d))
    draft_tokens = int(_get(args, "speculative_num_draft_tokens", d_d))
    if spec and topk == 1:
        draft_tokens = steps + 1  # server_args.py:2448 / speculative_hook.py:1260
    max_running = args.get("max_running_requests")
    if spec and max_running is None:
        max_running = 48  # server_args.py:2365 / speculative_hook.py:1093
        notes.append("max_running_requests defaults to 48 with speculative decoding")
    mfs = args.get("mem_fraction_static")
    reserved = None
    if mfs is None:
        era = mfs_era(version)
        if era == "reserved_formula":
            mfs, reserved = default_mem_fraction(s, gpu_mib, tp, pp, chunk, graph_bs, spec,
                                                 prefill_graph, dp_attn, dp, args, version)
        else:
            mfs, reserved = legacy_mem_fraction(era, gpu_mib, tp, pp, spec, dp_attn, version)
            if s.is_multimodal and at_least(version, "0.4.9.post3"):
                # adjust_mem_fraction_for_vlm on the default (0.4.9.post3 server_args.py:345-349, 1872)
                mfs *= vlm_factor(s)
        notes.append(f"mem_fraction_static {mfs:.3f} is SGLang {version}'s default for {gpu_mib} MiB "
                     f"GPUs ({era.replace('_', ' ')} rule)")
    if s.is_multimodal and not at_least(version, "0.4.4.post4"):
        # 0.4.0-0.4.4.post3: ModelRunner takes 5 % off any fraction, the flag's or the default,
        # after the dump is logged (0.4.0 model_runner.py:113-118, 0.4.4.post3 :253-254)
        mfs = float(mfs) * 0.95
        notes.append(f"SGLang {version} lowers mem_fraction_static to {mfs:.3f} for a multimodal model")
    disable_radix = bool(args.get("disable_radix_cache"))
    ratio = 1
    if s.hybrid:
        strategy = str(args.get("mamba_radix_cache_strategy") or args.get("mamba_scheduler_strategy") or "auto")
        overlap = not bool(args.get("disable_overlap_schedule"))
        forced = rules.radix_forced_off  # sizing_rules radix_forced_off
        if not disable_radix and (forced == "all" or (forced == "mamba2" and s.linear.kind == "mamba2")):  # type: ignore[union-attr]
            disable_radix = True
            notes.append(f"SGLang {version} runs this hybrid model without the radix cache")
        if strategy == "auto":  # sizing_rules mamba_auto
            paging = int(_get(args, "page_size", 1)) > 1
            if rules.mamba_auto == "extra_buffer" and (overlap or paging) and s.arch in _GDN_ARCHS:
                strategy = "extra_buffer"
            else:
                strategy = "no_buffer"
                overlap = overlap and rules.mamba_auto == "no_buffer"
        if strategy == "no_buffer" and spec and not disable_radix:  # sizing_rules hybrid_spec_radix
            if rules.hybrid_spec_radix == "disable" or (rules.hybrid_spec_radix == "disable_mamba2"
                                                         and s.linear.kind == "mamba2"):  # type: ignore[union-attr]
                disable_radix = True
                notes.append(f"SGLang {version} disables the radix cache for hybrid models with speculative decoding")
            elif rules.hybrid_spec_radix == "error":
                arg_error = (f"Speculative decoding for {s.arch} is not compatible with radix cache when using "
                             "--mamba-scheduler-strategy no_buffer (SGLang's ValueError before anything loads)")
        extra = 0  # sizing_rules extra_slots
        if rules.extra_slots == "unless_spec_extra":
            extra = 1 if (strategy == "extra_buffer" and spec) else 2
        elif strategy == "extra_buffer" and rules.extra_slots == "spec":
            extra = 1 if spec else 2
        elif strategy == "extra_buffer" and rules.extra_slots == "overlap":
            extra = 2 if overlap else 1
        ratio = 1 if disable_radix else 3 + extra
    return Settings(
        version=version, tp=tp, pp=pp, attn_tp=attn_tp, attn_dp=dp if dp_attn else 1,
        context_len=int(_get(args, "context_length", s.context_len)), mfs=float(mfs), chunked_prefill=chunk,
        graph_bs=graph_bs, cuda_graph=not disable_graph, prefill_graph=prefill_graph, spec=spec,
        draft_tokens=draft_tokens if spec else 0, max_running=int(max_running) if max_running else None,
        kv_dtype=str(_get(args, "kv_cache_dtype", "auto")), ssm_dtype=args.get("mamba_ssm_dtype"),
        mamba_ratio_r=float(_get(args, "mamba_full_memory_ratio", 0.9)),
        max_mamba_cache_size=args.get("max_mamba_cache_size"), disable_radix=disable_radix, mamba_ratio=ratio,
        max_total_tokens=args.get("max_total_tokens"), page_size=int(_get(args, "page_size", 1)),
        reserved_mb=reserved, notes=notes, arg_error=arg_error)


def _prefill_graph_on(s: ModelShape, hw: GPUProfile, args: dict, version: str, spec: str | None,
                      dp_attn: bool, pp: int) -> bool:
    """Whether SGLang captures prefill (piecewise/breakable) CUDA graphs: sizing_rules ``prefill_graph``."""
    rule = sizing_rules(version).prefill_graph
    if rule == "opt_in":
        return bool(args.get("enable_piecewise_cuda_graph"))
    if hw.compute_capability == (0, 0):  # not CUDA
        return False
    lora = bool(args.get("lora_paths") or args.get("enable_lora"))
    if rule == "piecewise":  # 0.5.10 server_args.py:1078-1139
        return not (args.get("disable_piecewise_cuda_graph") or spec or dp_attn or pp > 1 or lora
                    or s.is_multimodal or args.get("enable_torch_compile"))
    if args.get("disable_cuda_graph") or _prefill_backend(args) == "disabled":
        return False
    if rule == "tc_piecewise":  # 0.5.14 server_args.py:2997-3058
        return not (dp_attn or pp > 1 or lora or s.is_multimodal or args.get("enable_torch_compile"))
    # breakable: 0.5.15-0.5.17 not for MLA; from 0.5.16 not for multimodal models outside the list
    if s.mla and not at_least(version, "0.5.18"):
        return False
    if s.is_multimodal and s.arch not in BREAKABLE_MULTIMODAL and at_least(version, "0.5.16"):
        return False
    return True


def _prefill_backend(args: dict) -> str:
    cfg = args.get("cuda_graph_config")
    if isinstance(cfg, dict) and isinstance(cfg.get("prefill"), dict):
        return str(cfg["prefill"].get("backend") or "breakable")
    if args.get("disable_prefill_cuda_graph"):
        return "disabled"
    return str(args.get("cuda_graph_backend_prefill") or "breakable")


def default_mem_fraction(s: ModelShape, gpu_mib: int, tp: int, pp: int, chunk: int, graph_bs: int,
                         spec: str | None, prefill_graph: bool, dp_attn: bool, dp: int,
                         args: dict, version: str = "0.5.9") -> tuple[float, float]:
    """SGLang's default mem_fraction_static and the reserve (MiB) behind it, 0.5.3 on.

    512 MiB + 1.5 MiB per prefill token + tp*pp/8 GiB, the decode graph (2 MiB per batch size),
    DP-attention padding, the prefill graph, a 10 GiB floor above 60 GiB, then the speculative
    reserve; which of these apply is per release (sizing_rules ``graph_reserve``,
    ``prefill_graph``, ``spec_reserve_mib``): 0.5.9 server_args.py:1020-1068, 0.5.10.post1
    :1281-1325, 0.5.13 :1592-1640, 0.5.14 :3276-3320, 0.5.15 :3623-3690, 0.5.16 :4054-4085 +
    reserve_for_graph_mb :4164-4196, 0.5.23 arg_groups/memory_hook.py:281-405.
    """
    rules = sizing_rules(version)
    tokens = max(chunk, 2048) if chunk > 0 else max(int(_get(args, "max_prefill_tokens", 16384)), 2048)
    reserved = 512 + tokens * 1.5 + tp * pp / 8 * 1024
    if rules.graph_reserve == "always" or not args.get("disable_cuda_graph"):
        reserved += graph_bs * 2
    if dp_attn:
        reserved += graph_bs * dp * 3 + (graph_bs * dp * 1.5 if graph_bs > 300 else 0)
    if prefill_graph and (rules.prefill_graph != "opt_in" or at_least(version, "0.5.8")):
        if s.mla and rules.prefill_graph != "opt_in":
            reserved += 1536  # "the memory overhead is much higher than expected with fa3"
        else:
            max_tokens = chunk
            if rules.prefill_graph == "piecewise":  # 0.5.10 server_args.py:1256-1279
                if args.get("max_total_tokens"):
                    max_tokens = min(max_tokens, int(args["max_total_tokens"]))
                if "llama-2" in str(args.get("model_path") or "").lower():
                    max_tokens = min(max_tokens, 4096)
            reserved += _prefill_graph_buckets(max_tokens) * 8
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    eagle, standalone = rules.spec_reserve_mib
    if spec:
        reserved += standalone if spec == "STANDALONE" else (0 if spec == "NGRAM" else eagle)
    if prefill_graph and rules.prefill_graph == "opt_in" and not at_least(version, "0.5.8"):
        # --enable-piecewise-cuda-graph before 0.5.8: max tokens / 4 (0.5.6 server_args.py:856-857,
        # max tokens 4096 by default) or / 8 (0.5.7 :944-945, max tokens = chunk) after the floor;
        # nothing in 0.5.4-0.5.5
        if at_least(version, "0.5.7"):
            reserved += int(_get(args, "piecewise_cuda_graph_max_tokens", chunk)) // 8
        elif at_least(version, "0.5.6"):
            reserved += int(_get(args, "piecewise_cuda_graph_max_tokens", 4096)) // 4
    mfs = round((gpu_mib - reserved) / gpu_mib, 3)
    if s.is_multimodal and not args.get("language_only"):
        mfs *= vlm_factor(s)
    return mfs, reserved


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------

@dataclass
class Plan:
    rows: list[tuple[str, float]]
    fits: bool
    headroom_gb: float
    failing: str | None
    max_total_num_tokens: int
    max_running_requests: int
    mamba_cache_size: int | None
    pre_gb: float = 0.0
    budget_gb: float = 0.0  # avail - pre*(1-mfs): what the pools may use
    mem_fraction_static: float = 0.0
    cell_bytes: int = 0
    mamba_slot_bytes: int = 0
    error: str | None = None  # the message SGLang would raise, if it would
    notes: list[str] = field(default_factory=list)
    settings: Settings | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "per_gpu_gb": [{"name": n, "gb": round(v, 3)} for n, v in self.rows],
            "fits": self.fits, "headroom_gb": round(self.headroom_gb, 3), "failing": self.failing,
            "max_total_num_tokens": self.max_total_num_tokens, "max_running_requests": self.max_running_requests,
            "mamba_cache_size": self.mamba_cache_size, "pre_gb": round(self.pre_gb, 3),
            "pool_budget_gb": round(self.budget_gb, 3), "mem_fraction_static": round(self.mem_fraction_static, 4),
            "kv_bytes_per_token": self.cell_bytes, "mamba_bytes_per_request": self.mamba_slot_bytes,
            "error": self.error, "notes": list(self.notes), "sources": dict(self.sources),
            # the same GiB figures under names that say the unit (the *_gb names above are kept
            # for existing readers; they were always GiB)
            "per_gpu_gib": [{"name": n, "gib": round(v, 3)} for n, v in self.rows],
            "headroom_gib": round(self.headroom_gb, 3), "pre_gib": round(self.pre_gb, 3),
            "pool_budget_gib": round(self.budget_gb, 3),
        }


def observed_from_launch(launch) -> dict:
    """The log's own figures for a launch: min over ranks, target worker only (before its pools)."""
    out: dict[str, Any] = {}
    begins, ends = [], []
    for m in launch.milestones:
        if m.name in ("kv_cache", "mamba_cache", "memory_pool_end"):
            break
        if m.name == "load_weights_begin" and "avail_mem_gb" in m.figures:
            begins.append(m.figures["avail_mem_gb"])
        if m.name == "load_weights_end" and "avail_mem_gb" in m.figures:
            ends.append(m)
    if begins:
        out["avail_mem_before_weights_gb"] = min(begins)
    if ends:
        out["avail_mem_after_weights_gb"] = min(m.figures["avail_mem_gb"] for m in ends)
        out["weights_gb"] = max(m.figures.get("mem_usage_gb", 0.0) for m in ends)
    for name, key, fig in (("kv_cache", "kv_tokens", "tokens"), ("max_total_num_tokens", "max_total_num_tokens",
                           "max_total_num_tokens"), ("mamba_cache", "mamba_cache_size", "max_mamba_cache_size")):
        m = launch.milestone(name)
        if m is not None and fig in m.figures:
            out[key] = m.figures[fig]
    return out


def plan(model_config: dict, hw: GPUProfile, server_args: dict, version: str,
         observed: dict | None = None) -> Plan:
    """Per-GPU budget of a launch, following SGLang's sizing code for ``version``."""
    s = model_shape(model_config)
    st = resolve(s, hw, server_args or {}, version)
    return _plan(s, hw, st, observed or {}, server_args or {})


def _plan(s: ModelShape, hw: GPUProfile, st: Settings, obs: dict, args: dict) -> Plan:
    rules = sizing_rules(st.version)
    draft_first = rules.draft_before_sizing
    notes = list(st.notes)
    sources: dict[str, str] = {}
    tp_pp = st.tp * st.pp
    pre = obs.get("avail_mem_before_weights_gb")
    sources["pre"] = "log" if pre is not None else "profile"
    if pre is None:
        pre = hw.usable_gb - _init_gb(hw, st.tp, st.pp, args)
    w_est = weights_gb(s, st.tp, attn_tp=st.attn_tp) / st.pp
    weights = obs.get("weights_gb")
    avail = obs.get("avail_mem_after_weights_gb")
    if weights is None and avail is not None:
        weights = pre - avail
    sources["weights"] = "log" if weights is not None else "config estimate"
    if weights is None:
        weights = w_est
    if avail is None:
        avail = pre - weights
    draft_w = draft_weights_gb(s, st.tp, st.spec)
    if draft_first:
        avail -= draft_w  # 0.5.14+ load the draft before sizing (sizing_rules draft_before_sizing)
    slack = pre * (1 - st.mfs)
    # mm_runtime_reservation_gb, SGLANG_VLM_CACHE_SIZE_MB=100 (sizing_rules mm_reserve_mib, 0.5.18+)
    mm = rules.mm_reserve_mib / 1024 if s.is_multimodal else 0.0
    rest = avail - slack - mm
    failing, error = None, None
    if rest <= 0:
        failing = "weights"
        need = 1 - avail / pre if pre > 0 else 2.0
        error = (f"weights ({weights:.2f} GiB) leave no room for pools under mem_fraction_static={st.mfs:.3f}; "
                 + (f"the smallest fraction that leaves any is {need:.3f}" if need < 0.99 else
                    f"they do not fit in the {pre:.2f} GiB free per GPU at any --mem-fraction-static: "
                    "more GPUs (--tp-size) or a quantized model"))
    _, _, per = mamba_state_bytes(s, st.attn_tp, st.ssm_dtype)
    D = st.draft_tokens
    inter_gb = state_gb = 0.0
    K = None
    if s.hybrid and failing is None:
        K, inter_gb, rest = _mamba_split(st, rest, per, rules.mamba_split)
        state_gb = (K + (1 if rules.mamba_split == "joint_padded" else 0)) * per / GIB
        if K <= 0 or rest <= 0:
            failing = "mamba_pool"
            error = (f"recurrent state for {s.linear.layers} linear-attention layers "  # type: ignore[union-attr]
                     f"({per / MIB:.1f} MiB per request) takes {state_gb + inter_gb:.2f} GiB of a "
                     f"{avail - slack - mm:.2f} GiB pool budget")
    cell = cell_size(s, st.attn_tp, st.kv_dtype, (s.full_attention_layers if s.hybrid else s.layers) // st.pp)
    draft_cell = 0
    if st.spec in _EAGLE_LIKE or st.spec == "STANDALONE":
        draft_cell = int(cell * max(s.mtp_layers, 1) / max(s.full_attention_layers // st.pp, 1))
        if draft_first:
            cell += draft_cell  # 0.5.14 pool_configurator.py:128-145, 0.5.23 :259-300
    tokens = int(rest * GIB) // cell if failing is None else 0
    if st.max_total_tokens:
        tokens = min(tokens, int(st.max_total_tokens))
    tokens = tokens // st.page_size * st.page_size
    if failing is None and tokens <= 0:
        failing, error = "kv_pool", "Not enough memory for even one page of KV cache"
    kv_gb = tokens * cell / GIB
    running = _max_running(st, tokens, K, rules.running_cap)
    if failing is None and s.hybrid and running <= 0:
        failing, error = "mamba_pool", "mamba state cache too small to serve any request"
    # Runtime buffers that live in the (1-mfs) headroom.  These are estimates (SGLang itself only
    # reserves a rule of thumb, memory_hook.py:281-335): req_to_token is exact; graphs take a
    # fixed private pool plus ~4 MiB per captured batch size; activations are the physical
    # peak of one chunk (residual, qkv, gated MLP) doubled for allocator fragmentation, plus
    # 512 MiB of attention-backend metadata; VLMs keep what SGLang's own VLM factor sets aside.
    r2t = (running * (st.context_len + 4 + D) * 4) / GIB  # req_to_token int32 (memory_pool.py:144/406)
    graphs = 0.0
    if st.cuda_graph:
        graphs = 0.25 + st.graph_bs * 4 * (1 + (D if st.spec else 0)) / 1024
        if st.prefill_graph:
            graphs += _prefill_graph_buckets(st.chunked_prefill) * 8 / 1024
    act = (2 * st.chunked_prefill * (4 * s.hidden + 3 * s.intermediate // st.tp) * 2 + 512 * MIB) / GIB
    vision_ws = pre * (1 - vlm_factor(s)) if s.is_multimodal else 0.0
    draft_after = 0.0
    if not draft_first and st.spec in _EAGLE_LIKE:
        draft_after = draft_w + tokens * draft_cell / GIB  # up to 0.5.13: draft worker after the target pool
    leftover = rest - tokens * cell / GIB if failing is None else 0.0
    headroom = slack + mm + leftover - r2t - graphs - act - vision_ws - draft_after
    rows: list[tuple[str, float]] = [("weights", weights)]
    if draft_w:
        rows.append(("draft weights (MTP/NEXTN)", draft_w))
    if s.hybrid:
        rows.append((f"mamba state pool ({K or 0} slots x {per / MIB:.1f} MiB)", max(state_gb, 0.0)))
        if inter_gb:
            rows.append((f"mamba spec intermediate (x{D} draft tokens)", inter_gb))
    rows.append((f"KV cache pool ({tokens} tokens x {cell} B)", kv_gb))
    if draft_after - draft_w > 0:
        rows.append(("draft KV pool", draft_after - draft_w))
    if mm:
        rows.append(("multimodal reservation", mm))
    rows += [("req_to_token pool", r2t), ("cuda graphs", graphs), ("activations (chunked prefill)", act)]
    if vision_ws:
        rows.append(("vision encoder workspace", vision_ws))
    rows.append(("free headroom", headroom))
    if st.arg_error:
        failing, error = "server_args", st.arg_error
    fits = failing is None and headroom >= 0
    if failing is None and headroom < 0:
        failing = "headroom"
        error = (f"runtime buffers need {r2t + graphs + act + vision_ws + draft_after:.2f} GiB but (1-mfs) leaves "
                 f"{slack + mm + leftover:.2f} GiB: CUDA OOM likely during graph capture or prefill")
    if failing is None and tokens < st.context_len:
        notes.append(f"KV pool ({tokens} tokens) is smaller than one full-context request ({st.context_len})")
    if sources["weights"] == "log" and abs(w_est - weights) > 0.1 * weights:
        notes.append(f"config estimate of weights {w_est:.2f} GiB differs from the log's {weights:.2f} GiB")
    return Plan(rows=rows, fits=fits, headroom_gb=headroom, failing=failing, max_total_num_tokens=max(tokens, 0),
                max_running_requests=max(running, 0), mamba_cache_size=K, pre_gb=pre, budget_gb=avail - slack,
                mem_fraction_static=st.mfs, cell_bytes=cell, mamba_slot_bytes=per, error=error, notes=notes,
                settings=st, sources=sources)


def _mamba_split(st: Settings, rest: float, per: int, rule: str) -> tuple[int, float, float]:
    """(K slots, spec intermediate GiB, rest after both): the mamba pool's share of the budget,
    by sizing_rules ``mamba_split``."""
    D = st.draft_tokens
    dp = st.attn_dp
    mrr = st.max_running
    r = st.mamba_ratio_r
    ratio = st.mamba_ratio
    inter = 0.0
    if rule in ("fixed", "draft_ratio", "reserve_in_ratio", "reserve_first_512"):  # 0.5.3-0.5.8, sizing_rules
        if rule == "draft_ratio":  # every slot holds 1 + D states; with the radix cache the ratio
            # split sets K even over --max-mamba-cache-size (0.5.4 model_runner.py:1443-1480)
            if st.disable_radix:
                K = int(st.max_mamba_cache_size or mrr or 512) // dp
            else:
                K = int(rest * r / (1 + r) * GIB) // per // (1 + D) // dp
            inter = K * per * D / GIB
            return K, inter, rest - K * per * (1 + D) / GIB
        if rule == "reserve_first_512" and st.spec:
            inter = per * (mrr or 48) // dp * D / GIB
            rest -= inter
        if rule == "fixed" or st.disable_radix or st.max_mamba_cache_size is not None:
            K = int(st.max_mamba_cache_size or mrr or 512) // dp
            return K, inter, rest - K * per / GIB
        if rule == "reserve_in_ratio" and st.spec:
            inter = per * (mrr or 48) * D / GIB
            rest -= inter
        K = int(rest * r / (1 + r) * GIB) // per
        return K, inter, rest - K * per / GIB
    if rule == "reserve_first":  # handle_max_mamba_cache (0.5.9 kv_cache_mixin.py:151-210, 0.5.12 :78-137)
        if st.spec:
            inter = per * (mrr or 48) // dp * D / GIB
            rest -= inter
        if st.max_mamba_cache_size is not None:
            K = int(st.max_mamba_cache_size) // dp
        elif st.disable_radix and mrr is not None:
            K = mrr // dp
        else:
            K = int(rest * r / (1 + r) * GIB) // per
        return K, inter, rest - K * per / GIB
    pad = 1 if rule == "joint_padded" else 0  # +1 padding slot per pool from 0.5.17
    reqs = max(1, (mrr or 0) // dp) if mrr else 1
    if st.max_mamba_cache_size is not None:
        K = int(st.max_mamba_cache_size) // dp
        if st.spec:
            inter = per * (min(reqs, K // ratio) + pad) * D / GIB
    elif st.disable_radix and mrr is not None:
        K = max(1, mrr // dp)
        if st.spec:
            inter = per * (K + pad) * D / GIB
    else:
        budget = rest * r / (1 + r) * GIB
        if st.spec:  # ratio split (0.5.13 kv_cache_mixin.py:127-161; 0.5.23 kv_cache_configurator.py:3345-3386)
            K = int((budget - pad * per * (1 + D)) // (per * (1 + D / ratio)))
            inter = per * (min(reqs, max(K, 0) // ratio) + pad) * D / GIB
        else:
            K = int((budget - pad * per) // per)
    rest -= inter
    return K, inter, rest - (K + pad) * per / GIB


def _max_running(st: Settings, tokens: int, K: int | None, rule: str) -> int:
    """max_running_requests as the scheduler will use it, by sizing_rules ``running_cap``
    (0.5.9 kv_cache_mixin.py:344-370; 0.5.10 :840-859; 0.5.14 :981-1018; 0.5.23
    kv_cache_configurator.py:3119-3172)."""
    est = min(max(int(tokens / st.context_len * 512), 2048), 4096)
    if rule == "flag":
        n = st.max_running if st.max_running else est
    elif not st.max_running:
        n = min(est, tokens // 2)
    elif rule == "flag_vs_estimate":
        n = min(st.max_running // st.attn_dp, est)
    else:
        n = min(max(1, st.max_running // st.attn_dp), tokens // 2)
    if _vtuple(st.version) < (0, 4, 7):
        # 0.4.0-0.4.6.post5: ReqToTokenPool(size=max_num_reqs + 1) (0.4.1.post7 model_runner.py:618,
        # 0.4.6.post2 :824) and the worker caps at that size: min(tokens // 2 or the flag, size)
        # (0.4.1.post7 tp_worker.py:101-109) -> the logged 2049 of a default launch
        n = min(st.max_running if st.max_running else tokens // 2, est + 1)
    if K is not None:
        n = min(n, K // st.mamba_ratio)
    return n


# --------------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------------

@dataclass
class Candidate:
    changes: dict[str, Any]
    plan: Plan
    tradeoff: str
    gave_up: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"changes": dict(self.changes), "tradeoff": self.tradeoff, "gave_up": list(self.gave_up),
                "plan": self.plan.to_json()}


# one-line trade-offs of each knob
_TRADEOFF = {
    "mem_fraction_static": "less (1-mfs) headroom for activations and CUDA graphs",
    "max_running_requests": "fewer concurrent requests",
    "mamba_ssm_dtype": "bf16 recurrent state: half the state memory, slightly less exact",
    "chunked_prefill_size": "smaller prefill chunks: slower long-prompt prefill",
    "cuda_graph_max_bs": "decode batches above the cap run without CUDA graphs",
    "cuda_graph_max_bs_decode": "decode batches above the cap run without CUDA graphs",
    "mamba_full_memory_ratio": "more memory to recurrent state, less to KV tokens",
    "kv_cache_dtype": "fp8 KV cache: twice the tokens, small accuracy cost",
    "context_length": "shorter maximum request length",
    "speculative_algorithm": "no speculative decoding: lower single-stream decode speed",
    "disable_cuda_graph": "no CUDA graphs: decode ~20-40% slower",
    "disable_radix_cache": "no prefix caching: repeated prompt prefixes are recomputed",
}


def search(model_config: dict, hw: GPUProfile, server_args: dict, version: str,
           observed: dict | None = None, margin_gb: float = 1.0) -> list[Candidate]:
    """Launches that fit with ``margin_gb`` of headroom, best first.

    Tier 0 keeps context length and features and only retunes sizes (mfs, running requests,
    state dtype, chunk, graph bs); tier 1 shortens the context; tier 2 drops speculative
    decoding; tier 3 disables CUDA graphs.  Within a tier: more concurrency and KV tokens, fewer
    and cheaper changes.
    """
    s = model_shape(model_config)
    args = dict(server_args or {})
    obs = dict(observed or {})
    base = resolve(s, hw, args, version)
    graph_key = sizing_rules(version).graph_key
    want_running = base.max_running or 48
    mfs_values = sorted({round(x / 100, 2) for x in range(70, 95)} | {round(base.mfs, 3)})
    running_values = sorted({v for v in (base.max_running, 64, 32, 16, 8, 4, 2, 1) if v}, reverse=True)
    ssm_values = [None, "bfloat16"] if s.hybrid and (base.ssm_dtype or s.linear.config_ssm_dtype or "float32") != "bfloat16" else [None]  # type: ignore[union-attr]
    chunk_values = [None] + [c for c in (2048, 1024) if c < base.chunked_prefill]
    graph_values = [None] + [b for b in (16, 8) if b < base.graph_bs]
    tiers: list[tuple[dict[str, Any], list[str]]] = [({}, [])]
    if base.context_len > 8192:
        for ctx in (base.context_len // 2, base.context_len // 4):
            tiers.append(({"context_length": ctx}, [f"context length {base.context_len} -> {ctx}"]))
    if base.spec:
        tiers.append(({"speculative_algorithm": None}, [f"speculative decoding ({base.spec})"]))
    tiers.append(({"disable_cuda_graph": True}, ["CUDA graphs"]))
    if base.arg_error and s.hybrid:  # 0.5.10-0.5.13 refuse spec + radix cache under no_buffer
        tiers = [({**forced, "disable_radix_cache": True}, gave_up + ["radix (prefix) cache"])
                 for forced, gave_up in tiers]
    found: list[tuple[tuple, Candidate]] = []
    for tier, (forced, gave_up) in enumerate(tiers):
        for mfs in mfs_values:
            for mrr in running_values:
                for ssm in ssm_values:
                    for chunk in chunk_values:
                        for gbs in graph_values:
                            changes = dict(forced)
                            if abs(mfs - base.mfs) > 1e-6:
                                changes["mem_fraction_static"] = mfs
                            if mrr != base.max_running:
                                changes["max_running_requests"] = mrr
                            if ssm:
                                changes["mamba_ssm_dtype"] = ssm
                            if chunk:
                                changes["chunked_prefill_size"] = chunk
                            if gbs:
                                changes[graph_key] = gbs
                            trial = _apply(args, changes, graph_key)
                            st = resolve(s, hw, trial, version)
                            p = _plan(s, hw, st, _observed_for(obs, changes), trial)
                            if not p.fits or p.headroom_gb < margin_gb or p.max_running_requests < 1:
                                continue
                            if p.max_total_num_tokens < st.context_len:
                                continue  # not even one full-length request would fit
                            score = _score(tier, p, st, changes, want_running)
                            found.append((score, Candidate(changes, p, _tradeoff_line(changes), list(gave_up))))
        if found:
            break
    found.sort(key=lambda x: x[0], reverse=True)
    out: list[Candidate] = []
    seen: set = set()
    for _, cand in found:
        key = tuple(sorted(k for k in cand.changes))
        if key in seen:
            continue
        seen.add(key)
        out.append(cand)
        if len(out) >= 5:
            break
    return out


def _apply(args: dict, changes: dict, graph_key: str) -> dict:
    trial = dict(args)
    for k, v in changes.items():
        if k == graph_key:
            trial.pop("cuda_graph_config", None)
            trial["cuda_graph_max_bs"] = v
        trial[k] = v
    return trial


def _observed_for(obs: dict, changes: dict) -> dict:
    """The log's figures stay valid unless a change alters what was loaded (the draft model)."""
    if "speculative_algorithm" in changes:
        return {k: v for k, v in obs.items() if k in ("avail_mem_before_weights_gb", "avail_mem_after_weights_gb",
                                                       "weights_gb")}
    return obs


_COST = {"mem_fraction_static": 0.2, "max_running_requests": 0.3, "mamba_ssm_dtype": 0.3,
         "chunked_prefill_size": 0.4, "cuda_graph_max_bs": 0.4, "cuda_graph_max_bs_decode": 0.4}


def _score(tier: int, p: Plan, st: Settings, changes: dict, want_running: int) -> tuple:
    conc = min(p.max_running_requests, want_running)
    value = math.log2(conc + 1) + 0.5 * math.log2(max(p.max_total_num_tokens, 1) / max(st.context_len, 1) + 1)
    value -= sum(_COST.get(k, 0.5) for k in changes)
    value += min(p.headroom_gb, 4.0) * 0.05
    return (-tier, round(value, 6))


def _tradeoff_line(changes: dict) -> str:
    parts = [_TRADEOFF[k] for k in changes if k in _TRADEOFF]
    return "; ".join(parts) if parts else "no trade-off"


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

def render(p: Plan, title: str | None = None):
    """A rich Table of the per-GPU budget (imported lazily: rich is only needed for reports)."""
    from rich.table import Table

    table = Table(title=title or "Per-GPU memory budget", show_lines=False)
    table.add_column("item")
    table.add_column("GiB", justify="right")
    table.add_row("free after init (pre)", f"{p.pre_gb:.2f}")
    table.add_row(f"pool budget: avail - pre x (1 - {p.mem_fraction_static:.3f})", f"{p.budget_gb:.2f}")
    for name, gb in p.rows:
        style = "red" if (name.startswith("free headroom") and gb < 0) else None
        table.add_row(name, f"{gb:.2f}", style=style)
    verdict = "fits" if p.fits else f"does NOT fit: {p.failing}"
    table.caption = (f"{verdict}; max_total_num_tokens={p.max_total_num_tokens}, "
                     f"max_running_requests={p.max_running_requests}"
                     + (f", mamba slots={p.mamba_cache_size}" if p.mamba_cache_size is not None else ""))
    return table
