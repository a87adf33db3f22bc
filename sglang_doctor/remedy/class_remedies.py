"""Class-level remedies: the standard change for a *kind* of failure, when no specific rule
knew the exact message (rules/classes.yaml) and only where it failed is known.

Two operations, each a named entry a rule's ``remedy`` list can use:

- ``switch_backend``: the failure is in a kernel backend (an attention backend's module, a
  backend's own refusal): pick another backend of the rule's ranked ``choices`` than the one
  the launch used.  The one in use is the launch's own setting (command or dump), else the
  backend whose module the traceback's frames pass through, else the one the message names
  ("FlashAttention v3 Backend requires ..."); it is only used to *skip* a
  choice, so log text never becomes the value (every value is a rule's, validated against
  the target release's catalogue: docs/CONTRACT.md "Trust").
- ``drop_feature``: the failure is inside an optional feature the launch turned on (LoRA,
  HiCache, speculative decoding, a MoE runner backend, a quantization override): remove the
  flags that turn it on.  With the launch's settings known, only the ones it set (a value
  other than the release's default); unknown settings are not "off", so then the removal is
  proposed on the condition that the launch sets them, ranked after unconditional changes.

Both are suggestions for the class of failure, never applied unattended (``safe`` False):
the rule's confidence is already below a specific rule's, and the note says it is a
class-level suggestion.  Threads that confirm them: docs/FIXES-SEEN.md.
"""

from __future__ import annotations

import re
from typing import Any

from sglang_doctor.model import Remediation
from sglang_doctor.remedy import hardware, trust
from sglang_doctor.remedy.remedies import Context, _equal, remedy

# srt/layers/attention/<module> -> the --attention-backend value that runs it
_BACKEND_MODULES: tuple[tuple[str, str], ...] = (
    ("flashinfer_mla_backend", "flashinfer"),
    ("flashinfer_backend", "flashinfer"),
    ("trtllm_mla_backend", "trtllm_mla"),
    ("trtllm_mha_backend", "trtllm_mha"),
    ("flashattention_backend", "fa3"),
    ("flashmla_backend", "flashmla"),
    ("cutlass_mla_backend", "cutlass_mla"),
    ("torch_native_backend", "torch_native"),
    ("aiter_backend", "aiter"),
    ("wave_backend", "wave"),
    ("triton_backend", "triton"),
    ("triton_ops/", "triton"),
)
# the installed package's attention modules, for the backends that ship as their own package
# (flashinfer's sampling, all-reduce or GEMM modules are not the attention backend)
_BACKEND_PACKAGES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"/flashinfer/(?:prefill|decode|attention|mla|cascade|sparse|page|pod|jit/attention)"), "flashinfer"),
)
_ROCM = re.compile(r"\b(?:rocm|hip(?:BLAS|_runtime)?|gfx9\d\d|aiter|MI[123]\d\d[XA]?)\b", re.IGNORECASE)

CLASS_NOTE = "a class-level suggestion, from where the failure happened rather than from a known message"


def _backend_in_use(ctx: Context, flag: str) -> str | None:
    """The backend the failed launch ran: its own setting, else the deepest attention-backend
    module among the traceback's frames (only ever compared with the rule's choices)."""
    stated = ctx.stated(flag)
    if isinstance(stated, str) and stated:
        return stated
    return _frames_backend(ctx) or _message_backend(ctx)


def _frames_backend(ctx: Context) -> str | None:
    for frame in reversed(ctx.diagnosis.incident.frames):
        path = frame.file.replace("\\", "/")
        if "layers/attention/" in path:
            tail = path.split("layers/attention/", 1)[1]
            for module, backend in _BACKEND_MODULES:
                if module in tail:
                    return backend
        for package, backend in _BACKEND_PACKAGES:
            if package.search(path) and "/sglang/" not in path:
                return backend
    return None


# the words of a message that name the attention backend it is about (the backend in use)
_MESSAGE_BACKENDS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\btrt-?llm[ _]?mla\b", re.IGNORECASE), "trtllm_mla"),
    (re.compile(r"\btrt-?llm[ _]?mha\b", re.IGNORECASE), "trtllm_mha"),
    (re.compile(r"\bflash[ _-]?infer\b|\bFlashInferAttnBackend\b", re.IGNORECASE), "flashinfer"),
    (re.compile(r"\bfa4\b|flash[ _-]?attention[ _-]?(?:v|version )?4\b", re.IGNORECASE), "fa4"),
    (re.compile(r"\bfa3\b|flash[ _-]?attention[ _-]?(?:v|version )?3\b|FlashAttentionBackend", re.IGNORECASE), "fa3"),
    (re.compile(r"\bTritonAttnBackend\b|\btriton attention backend\b", re.IGNORECASE), "triton"),
)


def _message_backend(ctx: Context, *, about_attention: bool = False) -> str | None:
    """The attention backend the failure's message is about, when it names one
    (``about_attention``: only when the message also speaks of attention or a backend)."""
    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    text = (text or "")[:2000]
    if about_attention and not re.search(r"attention|attn|backend", text, re.IGNORECASE):
        return None
    # the backend named first is the subject ("FA3 requires ...; use flashinfer" is about FA3)
    found = [(m.start(), backend) for pattern, backend in _MESSAGE_BACKENDS if (m := pattern.search(text))]
    return min(found)[1] if found else None


def machine_platform(ctx: Context) -> str | None:
    """The platform the log's lines about the machine show (diagnose/hardware.py: an NVIDIA GPU's
    name, ``ROCM available``, a ``+rocm`` torch, an Ascend NPU ...): ``cuda`` / ``rocm`` / ``npu`` /
    ``xpu`` / ``jetson``, or None when they show none.  Read only to choose among the rule's own
    choices, never to name a value."""
    from sglang_doctor.diagnose import evidence

    return evidence.machine(ctx.diagnosis).get("platform")


def _on_rocm(ctx: Context) -> bool:
    vendor = str(getattr(ctx.hardware, "vendor", "") or "").lower()
    if vendor:
        return vendor in ("amd", "rocm")
    platform = machine_platform(ctx)
    if platform is not None:
        return platform == "rocm"
    inc = ctx.diagnosis.incident
    text = "\n".join(line.text for line in inc.lines[:400]) + "\n" + "\n".join(f.file for f in inc.frames)
    return bool(_ROCM.search(text))


@remedy("switch_backend")
def switch_backend(ctx: Context, params: dict) -> Remediation | None:
    """``{flag: --attention-backend, choices: [flashinfer, triton], cuda_only: [flashinfer]}``:
    the first choice that is not the backend in use, exists in the target release and passes
    its choices; a CUDA-only choice is skipped on ROCm.  ``when_frames``: only when the
    traceback passes through an attention backend's module or the message names an attention
    backend (for a rule whose class also covers failures elsewhere).  (Any entry's
    ``when_modules``, remedies._passes_modules, limits it to tracebacks through those paths:
    ``flag: --sampling-backend`` with ``when_modules: [flashinfer/sampling]``.)"""
    flag = ctx.flag(params.get("flag") or "--attention-backend")
    if flag is None:
        return None
    if params.get("when_frames") and _frames_backend(ctx) is None and _message_backend(ctx, about_attention=True) is None:
        return None  # neither a backend's module nor a backend named in the message: not this fix
    choices = [str(c) for c in params.get("choices") or ("flashinfer", "triton")]
    cuda_only = {str(c) for c in params.get("cuda_only") or ("flashinfer",)}
    if flag == ctx.flag("--attention-backend"):
        in_use = _backend_in_use(ctx, flag)
    else:  # another kind of backend (sampling): only the launch's own setting says which
        stated = ctx.stated(flag)
        in_use = stated if isinstance(stated, str) and stated else None
    # named in the note only when it is one of the release's own choices (log text is never echoed)
    shown = in_use if in_use is not None and ctx.catalog.validate(flag, in_use) is None else None
    rocm = _on_rocm(ctx)
    for choice in choices:
        if choice == in_use or (rocm and choice in cuda_only) or hardware.refuses_backend(ctx.hardware, choice):
            continue
        if _equal(ctx.stated(flag), choice):
            continue
        if ctx.catalog.validate(flag, choice) is not None:
            continue
        was = f"the {shown} backend failed here" if shown else "the backend in use failed here"
        note = f"set {flag} {choice}: {was}; {CLASS_NOTE}"
        if params.get("plain_note"):  # a guarded step: the guess's own wording says the rest
            note = f"set {flag} {choice}" + (f" (the {shown} backend is the one in use)" if shown else "")
        if choice in cuda_only and getattr(ctx.hardware, "gpu_name", None) is None \
                and machine_platform(ctx) not in ("cuda", "jetson"):
            # the platform is not known from the incident alone (ROCm's marks are often elsewhere)
            note += f" (if these are NVIDIA GPUs: {choice} is CUDA-only; on ROCm use triton or aiter)"
        rem = Remediation(set={flag: choice}, safe=False, note=note,
                          tradeoff=params.get("tradeoff") or f"{choice} kernels may be slower for this model; "
                                                             "check the model card's recommended backend")
        return trust.declare(rem, "rule")
    return None


@remedy("drop_feature")
def drop_feature(ctx: Context, params: dict) -> Remediation | None:
    """``{flags: [...], feature: WORDS}``: remove the flags that turn the feature on.  A flag
    is "on" when the launch states a value other than False and the release's default."""
    wanted = [f for f in (ctx.flag(str(name)) for name in params.get("flags") or []) if f is not None]
    flags = list(dict.fromkeys(wanted))
    if not flags:
        return None
    feature = params.get("feature") or "the feature"
    tradeoff = params.get("tradeoff") or f"the launch runs without {feature}; turn it back on once the rest works"
    if ctx.settings_unknown:
        rem = Remediation(unset=flags, safe=False, tradeoff=tradeoff,
                          note=f"launch without {feature}: remove {' '.join(flags)} if your launch sets it "
                               f"(the launch's settings are not in the log); {CLASS_NOTE}")
        ctx.conditional.append(rem)
        return trust.declare(rem, "rule")
    on = []
    for flag in flags:
        value = ctx.stated(flag)
        spec = ctx.catalog.spec(flag)
        default = spec.default if spec is not None else None
        if value is None or value is False or _equal(value, default) or value in ("", [], "none", "None"):
            continue
        on.append(flag)
    if not on:
        return None
    rem = Remediation(unset=on, safe=False, tradeoff=tradeoff,
                      note=f"launch without {feature}: remove {' '.join(on)} (set in this launch); {CLASS_NOTE}")
    return trust.declare(rem, "rule")


# a module in the traceback -> the optional feature (remedies.FEATURES) that runs it
FRAME_FEATURES: tuple[tuple[str, str], ...] = (
    ("device_communicators/custom_all_reduce", "custom_all_reduce"),
    ("model_executor/cuda_graph_runner", "cuda_graph"),
    ("torch/_inductor/", "torch_compile"),
    ("torch/_dynamo/", "torch_compile"),
    # (not the overlap worker thread, tp_worker_overlap_thread: on every forward path while the
    # overlap scheduler is on, the default, so it names nothing)
    # the prefix cache's trees (not the hierarchical cache's, FRAME_DROPS below)
    ("mem_cache/radix_cache", "radix_cache"),
    ("mem_cache/mamba_radix_cache", "radix_cache"),
    ("mem_cache/swa_radix_cache", "radix_cache"),
    # constrained decoding's on-disk FSM cache and jump-forward (0.1.x-0.4.x)
    ("srt/constrained/disk_cache", "disk_cache"),
    ("srt/constrained/jump_forward", "jump_forward"),
)

# the same, for modules named by a pattern: transformers' fast image processors
# (models/<model>/image_processing_<model>_fast.py, image_processing_utils_fast.py), which SGLang
# uses by default for multimodal models; the base processor is SGLang's own switch away from them
FRAME_FEATURE_PATTERNS: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"transformers/(?:models/[^/]+/)?image_processing_\w*fast\.py$"), "fast_image_processor",
     "the fast image processor"),
)


# a frame whose own source line calls into an optional feature (the traceback cut before the
# feature's module): the scheduler's call of jump-forward decoding (0.1.x-0.4.x
# ``batch.check_for_jump_forward(...)``, ``jump_forward_and_retokenize``)
FRAME_SOURCE_FEATURES: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"\b(?:check_for_jump_forward|jump_forward_and_retokenize)\("), "jump_forward", "jump-forward decoding"),
)


def _frame_feature(frame: Any, allowed: set[str]) -> tuple[str, str] | None:
    """The optional feature (of ``allowed``) whose module ``frame`` is in (or whose call its
    source line is), and the module in words."""
    path = frame.file.replace("\\", "/")
    for module, feature in FRAME_FEATURES:
        if feature in allowed and module in path:
            return feature, module.rsplit("/", 1)[-1] or module
    for pattern, feature, words in FRAME_FEATURE_PATTERNS:
        if feature in allowed and pattern.search(path):
            return feature, words
    for pattern, feature, words in FRAME_SOURCE_FEATURES:
        if feature in allowed and frame.source and pattern.search(frame.source):
            return feature, words
    return None


@remedy("disable_in_frames")
def disable_in_frames(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    """Turn off the optional feature whose own module the traceback passes through (deepest
    first): SGLang's custom all-reduce, CUDA graphs, torch.compile.  ``features``: the subset
    of ``FRAME_FEATURES``' names to consider (all by default).  The way to turn it off is
    ``disable_feature``'s, spelled for the target release."""
    from sglang_doctor.remedy.remedies import disable_feature

    allowed = set(params.get("features") or [name for _, name in FRAME_FEATURES]
                  + [name for _, name, _ in (*FRAME_FEATURE_PATTERNS, *FRAME_SOURCE_FEATURES)])
    for frame in reversed(ctx.diagnosis.incident.frames):
        found = _frame_feature(frame, allowed)
        if found is None:
            continue
        feature, where = found
        result = disable_feature(ctx, {"feature": feature, "tradeoff": params.get("tradeoff")}
                                 if params.get("tradeoff") else {"feature": feature})
        for rem in result if isinstance(result, list) else [result] if result else []:
            rem.note += f" (the failure is in {where}; {CLASS_NOTE})"
            rem.safe = False
            trust.declare(rem, "rule")
        return result
    return None


# "set SGLANG_X=1", "export NCCL_P2P_DISABLE=1", "setting SGLANG_X=true": a message that names
# its own fix as an environment variable of SGLang's, torch's or NCCL's
_ENV_ADVISED = re.compile(
    # "set X=v", and the requirement a check states: "DFLASH with dp attention requires
    # SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION=0" (0.5.23 speculative_hook.py:314)
    r"\b(?:set|export|setting|by setting|use|with|requires?|needs?)\s+[`'\"]?((?:SGLANG|SGL|NCCL|GLOO|TORCH|PYTORCH|CUDA|MC|HF)_[A-Z0-9_]{2,60})"
    r"\s*=\s*[`'\"]?([A-Za-z0-9_.:,-]{1,40})", re.IGNORECASE)
_ENV_NEGATED = re.compile(r"\b(?:not|cannot|can't|don't|do not|never|unset)\b[^.;:\n]*$", re.IGNORECASE)


def env_advised(text: str) -> tuple[str, str] | None:
    """The first environment variable and value ``text`` tells the user to set (``_ENV_ADVISED``),
    a known prefix, upper case, a short plain value (``remedies._safe_env``), not negated."""
    from sglang_doctor.remedy.remedies import _safe_env

    text = (text or "")[:4000]
    for m in _ENV_ADVISED.finditer(text):
        name, value = m.group(1), m.group(2).rstrip(".,")
        if name != name.upper() or not value or not _safe_env(name, value):
            continue
        if _ENV_NEGATED.search(text[max(0, m.start() - 60):m.start()]):
            continue
        return name, value
    return None


@remedy("env_named")
def env_named(ctx: Context, params: dict) -> Remediation | None:
    """The environment variable and value a failure's message tells the user to set.

    The name must look like one of SGLang's, torch's, NCCL's or CUDA's variables (upper case,
    a known prefix) and the value a short plain token (``remedies._safe_env``); the log chose
    both, so the change is advice (``declare_log_named``: ``run --yes`` never applies it)."""
    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    found = env_advised(text)
    if found is not None:
        name, value = found
        rem = Remediation(env={name: value}, safe=False,
                          note=f"set {name}={value} in the server's environment: the message names it as the way out; "
                               f"{CLASS_NOTE}",
                          tradeoff=params.get("tradeoff") or "the message's own work-around: it usually skips a check "
                                                             "or switches a path off; read what the message says it costs")
        return trust.declare_log_named(rem, value_from="log")
    return None


# a module in the traceback -> (the flags that turn its optional feature on, the feature in words)
FRAME_DROPS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("srt/speculative/", ("--speculative-algorithm",), "speculative decoding"),
    ("srt/lora/", ("--enable-lora", "--lora-paths"), "LoRA adapters"),
    ("srt/mem_cache/hicache", ("--enable-hierarchical-cache",), "the hierarchical cache"),
    ("srt/mem_cache/hiradix_cache", ("--enable-hierarchical-cache",), "the hierarchical cache"),
    ("srt/mem_cache/storage/", ("--enable-hierarchical-cache", "--hicache-storage-backend"), "the hierarchical cache's storage"),
    ("srt/managers/cache_controller", ("--enable-hierarchical-cache",), "the hierarchical cache"),
    # 0.4.10+ --moe-a2a-backend (layers/moe/token_dispatcher/); 0.4.4-0.5.3 --enable-deepep-moe
    # (0.4.x: layers/moe/ep_moe/token_dispatcher.py): the release's own spelling is removed
    ("srt/layers/moe/token_dispatcher/", ("--moe-a2a-backend", "--enable-deepep-moe"), "the expert-parallel all-to-all backend"),
    ("srt/layers/moe/ep_moe/token_dispatcher", ("--enable-deepep-moe", "--moe-a2a-backend"), "the expert-parallel all-to-all backend"),
    ("srt/eplb/", ("--enable-eplb",), "expert-parallel load balancing"),
    # DP attention's gathers and scatters (layers/dp_attention.py) run only with
    # --enable-dp-attention; two-batch overlap's splitter only with its switch
    ("srt/layers/dp_attention", ("--enable-dp-attention",), "DP attention"),
    ("srt/two_batch_overlap", ("--enable-two-batch-overlap",), "two-batch overlap"),
    ("srt/batch_overlap/two_batch_overlap", ("--enable-two-batch-overlap",), "two-batch overlap"),
    ("srt/batch_overlap/single_batch_overlap", ("--enable-single-batch-overlap",), "single-batch overlap"),
)


# a draft model's own module: SGLang builds these only as the draft of speculative decoding
# (0.5.23 srt/models/: llama_eagle3.py, qwen2_eagle.py, deepseek_nextn.py, qwen3_5_mtp.py, ...),
# so a traceback through one is inside speculative decoding even when no srt/speculative/ frame
# is in the text
_DRAFT_MODEL = re.compile(r"srt/models/\w*(?:eagle|nextn|_mtp)\w*\.py$")
# the speculative algorithms that draft a tree of --speculative-eagle-topk candidates per step
# (NEXTN / MTP are EAGLE under another name); NGRAM, LOOKAHEAD, DFLASH, DSPARK do not read it
_TOPK_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE", "FROZEN_KV_MTP")
TOPK_TRADEOFF = (
    "chain drafting (one candidate per draft step) instead of a tree of --speculative-eagle-topk candidates: "
    "usually a somewhat shorter accepted length, but the path every attention backend supports (SGLang "
    "0.5.x refuses topk > 1 with trtllm_mha, rejection sampling, DFLASH / DSpark, and with page_size > 1 "
    "outside flashinfer / fa3 / triton, and sets --speculative-num-draft-tokens to num-steps + 1 itself)")


def speculative_topk_step(ctx: Context) -> Remediation | None:
    """The gentler step before launching without speculative decoding, for a failure inside it:
    ``--speculative-eagle-topk 1``.  Tree drafting (topk > 1) is the path SGLang supports on the
    fewest backends and features (0.5.23 arg_groups/speculative_hook.py raises for trtllm_mha,
    rejection sampling and page_size > 1 outside flashinfer / fa3 / triton; DFLASH / DSpark force
    1); chain drafting keeps speculative decoding on.  Nothing when the launch states topk 1 or an
    algorithm that does not read it, or when the release has no such flag; with the settings
    unknown it is proposed on the condition that the launch sets topk above 1.  A
    ``--speculative-num-draft-tokens`` the launch states follows (num-steps + 1, the chain's size)
    when the launch also states the steps."""
    flag = ctx.flag("--speculative-eagle-topk")
    if flag is None or ctx.catalog.validate(flag, 1) is not None:
        return None
    algo_flag = ctx.flag("--speculative-algorithm")
    algorithm = ctx.stated(algo_flag) if algo_flag else None
    if isinstance(algorithm, str) and algorithm.upper() not in _TOPK_ALGORITHMS:
        return None
    if ctx.settings_unknown:
        rem = Remediation(set={flag: 1}, safe=False, tradeoff=TOPK_TRADEOFF,
                          note=f"draft a chain, not a tree: {flag} 1 if your launch sets it above 1 (the launch's "
                               f"settings are not in the log); {CLASS_NOTE}")
        ctx.conditional.append(rem)
        return trust.declare(rem, "rule")
    topk = ctx.stated(flag)
    try:
        topk = int(topk) if topk is not None else None
    except (TypeError, ValueError):
        return None
    if topk is None or topk <= 1:
        return None  # chain drafting already (or the release's own choice): nothing to step back
    changes: dict[str, Any] = {flag: 1}
    steps_flag, tokens_flag = ctx.flag("--speculative-num-steps"), ctx.flag("--speculative-num-draft-tokens")
    steps = ctx.stated(steps_flag) if steps_flag else None
    tokens = ctx.stated(tokens_flag) if tokens_flag else None
    if isinstance(steps, int) and tokens is not None and not _equal(tokens, steps + 1) \
            and ctx.catalog.validate(tokens_flag, steps + 1) is None:
        changes[tokens_flag] = steps + 1
    rem = Remediation(set=changes, safe=False, tradeoff=TOPK_TRADEOFF,
                      note=f"draft a chain, not a tree: {flag} 1 (this launch drafts {topk} candidates per step); "
                           f"speculative decoding stays on; {CLASS_NOTE}")
    return trust.declare(rem, "rule")


@remedy("drop_in_frames")
def drop_in_frames(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    """``drop_feature`` for the optional feature whose own package the traceback passes
    (deepest first): speculative decoding, LoRA, the hierarchical cache, the EP all-to-all
    backend, EPLB.  Only flags the launch set (non-default); unknown settings: conditional.
    Speculative decoding (its package or a draft model's module) is first stepped back to chain
    drafting (``speculative_topk_step``), then dropped."""
    for frame in reversed(ctx.diagnosis.incident.frames):
        path = frame.file.replace("\\", "/")
        if _DRAFT_MODEL.search(path):
            path = "srt/speculative/"  # a draft model's module: speculative decoding's code
        for module, flags, feature in FRAME_DROPS:
            if module in path:
                dropped = drop_feature(ctx, {"flags": list(flags), "feature": feature,
                                             "tradeoff": params.get("tradeoff")
                                             or f"the launch runs without {feature} while the crash is narrowed down"})
                step = speculative_topk_step(ctx) if module == "srt/speculative/" else None
                return [r for r in (step, dropped) if r is not None] or None
    return None


# the words of a failure (its message or its frames' modules) that put it in the quantized KV
# cache's code: the KV cache dtype is then the setting to step back
_KV_DTYPE_WORDS = re.compile(r"kv_?fp4|KVFP4|kv_?fp8|fp8_kv|kv[_ ]cache[_ ]dtype|kv_cache_quant", re.IGNORECASE)
# a Triton attention kernel compiled for e4m3 (fp8e4nv) on a GPU without it: the KV cache is
# e4m3 (attention kernels read the cache; FP8 weights go through GEMM / MoE kernels instead)
_E4M3_REFUSED = re.compile(r"fp8e4nv not supported", re.IGNORECASE)
# the step down from each KV cache dtype: a 4-bit cache to 8 bits, e4m3 to e5m2 (Triton on
# SM80/SM86 has e5m2 only), then the model's own dtype
_KV_LADDER: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = (
    (re.compile(r"fp4|nvfp4|mxfp4", re.IGNORECASE), ("fp8_e4m3", "auto")),
    (re.compile(r"fp8_e4m3|e4m3", re.IGNORECASE), ("fp8_e5m2", "auto")),
    (re.compile(r"fp8|mxfp8|e5m2", re.IGNORECASE), ("auto",)),
)
_KV_TRADEOFF = {
    "fp8_e4m3": "an 8-bit cache instead of 4-bit: about twice the KV memory per token (fewer tokens fit)",
    "fp8_e5m2": "e5m2 keeps 2 mantissa bits instead of 3: a slightly less precise cache, same memory",
    "auto": "the cache in the model's dtype: two to four times the KV memory per token (fewer tokens fit)",
}


def _kv_dtype_evidence(ctx: Context) -> str | None:
    """The KV cache dtype the failure points at ("fp4", "fp8_e4m3", "kv": quantized, which
    one unknown), or None when the failure is not in the quantized KV cache's code.  Only
    ever used to pick among the ladder's own values."""
    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    text = (text or "")[:4000]
    paths = [f.file.replace("\\", "/") for f in inc.frames]
    words = text + "\n" + "\n".join(paths)
    if _E4M3_REFUSED.search(text) and any("layers/attention/" in p for p in paths):
        return "fp8_e4m3"
    m = _KV_DTYPE_WORDS.search(words)
    if m is None:
        return None
    return "fp4" if "fp4" in m.group(0).lower() else "fp8" if "fp8" in m.group(0).lower() else "kv"


@remedy("kv_cache_dtype_step")
def kv_cache_dtype_step(ctx: Context, params: dict) -> "list[Remediation] | None":
    """Step the KV cache dtype back when the failure is in the quantized KV cache's code (its
    message or frames name the KV quantization: ``kvfp4``, ``KVFP4QuantizeUtil``,
    ``kv_cache_dtype``; or a Triton attention kernel refused e4m3 on this GPU): fp4 -> fp8_e4m3
    -> auto, e4m3 -> fp8_e5m2 -> auto.  The dtype in use is the launch's own setting, else what
    the evidence names; it only picks the rung, every value is the ladder's and passes the
    target release's choices (log text never becomes the value).  Advice (``safe`` False)."""
    flag = ctx.flag("--kv-cache-dtype")
    if flag is None:
        return None
    evidence = _kv_dtype_evidence(ctx)
    if evidence is None:
        return None
    stated = ctx.stated(flag)
    in_use = stated if isinstance(stated, str) and stated and stated != "auto" else evidence
    ladder: tuple[str, ...] = ("auto",)
    for pattern, steps in _KV_LADDER:
        if pattern.search(in_use):
            ladder = steps
            break
    out: list[Remediation] = []
    for choice in ladder:
        if _equal(stated, choice) or ctx.catalog.validate(flag, choice) is not None:
            continue
        # the launch's value is named only when it is one of the release's own choices
        shown = isinstance(stated, str) and stated and ctx.catalog.validate(flag, stated) is None
        was = f"the {stated} KV cache" if shown else "the quantized KV cache"
        why = CLASS_NOTE if str(ctx.diagnosis.rule or "").startswith("class.") else "the refused kernel reads the KV cache"
        rem = Remediation(set={flag: choice}, safe=False,
                          note=f"set {flag} {choice}: the failure is in {was}'s code; {why}",
                          tradeoff=params.get("tradeoff") or _KV_TRADEOFF.get(choice, ""))
        out.append(trust.declare(rem, "rule"))
    return out or None


# A MoE layer's experts being built (the model's ``self.experts = get_moe_impl_class()(...)`` /
# ``FusedMoE(...)`` / ``EPMoE(...)``, or the MoE quantization method's ``create_weights``): a
# check raised there is about how tensor parallelism splits every expert (block-FP8 / INT8
# scales, divisibility of the expert's intermediate size by the split)
_EXPERT_BUILD_SOURCE = re.compile(r"\bself\.experts\s*=|get_moe_impl_class\(|\b(?:FusedMoE|EPMoE|DeepEPMoE)\(")
_EXPERT_BUILD_MODULES = ("layers/moe/fused_moe_triton/layer.py", "layers/moe/ep_moe/layer.py",
                         "layers/moe/fused_moe_triton/__init__.py")


def _experts_being_built(ctx: Context) -> bool:
    """The traceback's frames show a MoE layer's experts being constructed (during weight
    creation, not the forward pass: a frame of ``__init__`` / ``create_weights``)."""
    for frame in ctx.diagnosis.incident.frames:
        path = frame.file.replace("\\", "/")
        function = frame.function or ""
        if function in ("__init__", "create_weights") and any(m in path for m in _EXPERT_BUILD_MODULES):
            return True
        if "/models/" in path and function in ("__init__", "<lambda>") and _EXPERT_BUILD_SOURCE.search(frame.source or ""):
            return True
    return False


@remedy("expert_parallel")
def expert_parallel(ctx: Context, params: dict) -> Remediation | None:
    """Shard a MoE model's experts over the ranks (expert parallelism) instead of splitting
    every expert over them (tensor parallelism): each rank then holds whole experts, whose
    intermediate size is no longer divided by --tp-size (SGLang's fused MoE layer:
    ``intermediate_size_per_partition = intermediate_size // moe_tp_size`` with ``moe_tp_size =
    tp_size // ep_size``), so a block-FP8 / INT8 check on that size passes.

    Spelled for the release: 0.4.0.post1-0.4.x ``--enable-ep-moe`` (it sets ``ep_size`` to
    ``tp_size`` itself), later releases ``--ep-size`` equal to the launch's ``--tp-size`` (asked
    for when the log does not show it).  ``when_frames``: only when the frames show the experts
    being built (``_experts_being_built``).  Nothing when the launch already runs EP."""
    if params.get("when_frames") and not _experts_being_built(ctx):
        return None
    # a class-level suggestion when the frames chose it; a rule's own when its message did
    why = f"; {CLASS_NOTE}" if params.get("when_frames") else ""
    tradeoff = params.get("tradeoff") or (
        "expert parallelism: each rank holds whole experts; uneven expert load can leave some GPUs busier "
        "(--enable-eplb balances it on releases that have it)")
    ep_flag, old_flag = ctx.flag("--ep-size"), ctx.catalog.canonical("--enable-ep-moe")
    if old_flag is None and ep_flag is None:
        ctx.warnings.append(f"no expert-parallel flag in SGLang {ctx.version}")
        return None
    ep = ctx.stated(ep_flag) if ep_flag else None
    if (old_flag and ctx.stated(old_flag) is True) or (isinstance(ep, int) and ep > 1):
        return None  # the launch already shards its experts
    if old_flag is not None:
        rem = Remediation(set={old_flag: True}, safe=False, tradeoff=tradeoff,
                          note=f"shard the experts over the ranks: {old_flag} (ep_size follows --tp-size){why}")
        return trust.declare(rem, "rule")
    tp_flag = ctx.flag("--tp-size")
    tp = ctx.stated(tp_flag) if tp_flag else None
    if isinstance(tp, int) and tp > 1 and ctx.catalog.validate(ep_flag, tp) is None:
        rem = Remediation(set={ep_flag: tp}, safe=False, tradeoff=tradeoff,
                          note=f"shard the experts over the ranks: {ep_flag} {tp} (the launch's --tp-size){why}")
        return trust.declare(rem, "rule")
    rem = Remediation(set={ep_flag: "<your --tp-size>"}, needs_human=True, safe=False, tradeoff=tradeoff,
                      note=f"shard the experts over the ranks: {ep_flag} equal to your launch's --tp-size (not in "
                           f"the log){why}")
    return trust.declare(rem, "rule")


# DeepGEMM (FP8 block GEMMs and grouped MoE GEMMs, JIT-compiled with nvcc on first use, for
# SM90 / SM100 only): its own package or SGLang's wrapper around it in the traceback, or its name
# in the failure's words ("Failed to compile .../deep_gemm/...", "DeepGEMM ...").  SGLang reads
# SGLANG_ENABLE_JIT_DEEPGEMM (0.5.23 environ.py EnvBool(True); deep_gemm_wrapper/configurer.py
# turns DeepGEMM off when it is false) -- 0.4.x spelt it SGL_ENABLE_JIT_DEEPGEMM -- and falls back
# to its Triton / CUTLASS FP8 kernels; its own messages name the switch ("... or has been disabled
# via SGLANG_ENABLE_JIT_DEEPGEMM=0", fp8_utils.py).
_DEEPGEMM_MODULES = ("/deep_gemm/", "/deep_gemm_wrapper/", "quantization/deep_gemm.py", "layers/deep_gemm.py")
_DEEPGEMM_WORDS = re.compile(r"deep_?gemm", re.IGNORECASE)
# DeepGEMM's JIT compiler (csrc/jit/compiler.hpp) prints nvcc's output after its own words
# "NVCC compilation failed: " (sgl-project/sglang#9340, deepseek-ai/DeepGEMM#173); FlashInfer's
# and tvm-ffi's builds report through ninja ("FAILED:", "ninja exited with status") and torch's
# as "Error building extension", so in an SGLang log these words are DeepGEMM's (case kept)
_DEEPGEMM_NVCC = re.compile(r"\bNVCC compilation failed: ")
DEEPGEMM_ENV = ("SGLANG_ENABLE_JIT_DEEPGEMM", "SGL_ENABLE_JIT_DEEPGEMM")
DEEPGEMM_TRADEOFF = (
    "SGLang's Triton / CUTLASS FP8 kernels instead of DeepGEMM: no nvcc JIT build at start-up, somewhat slower "
    "FP8 prefill on Hopper / Blackwell; both spellings are set because releases before the rename read "
    "SGL_ENABLE_JIT_DEEPGEMM")


def _deepgemm_failed(ctx: Context) -> bool:
    for frame in ctx.diagnosis.incident.frames:
        path = frame.file.replace("\\", "/")
        if any(m in path for m in _DEEPGEMM_MODULES):
            return True
    from sglang_doctor.diagnose.evidence import failure_words

    inc = ctx.diagnosis.incident
    root = f"{inc.exception.type}: {inc.exception.message}" if inc.exception is not None else ""
    words = failure_words(inc)[:20000]
    return bool(_DEEPGEMM_WORDS.search(root[:20000]) or _DEEPGEMM_WORDS.search(words) or _DEEPGEMM_NVCC.search(words))


@remedy("deepgemm_off")
def deepgemm_off(ctx: Context, params: dict) -> Remediation | None:
    """``SGLANG_ENABLE_JIT_DEEPGEMM=0`` (and the 0.4.x spelling) when the failure is in DeepGEMM:
    its package or SGLang's wrapper in the frames, or its name in the failure's own words (the
    words only decide whether the step applies; the variable and value are this operation's).
    ``known: true``: the rule's own match is DeepGEMM's failure (its JIT compiler's assertion,
    ``.../jit/compiler.hpp``, names no package), so no further evidence is asked for.  Nothing
    otherwise.  Advice (``safe`` False): a class-level step, as the others here."""
    if not (params.get("known") or _deepgemm_failed(ctx)):
        return None
    rem = Remediation(env={name: "0" for name in DEEPGEMM_ENV}, safe=False,
                      tradeoff=params.get("tradeoff") or DEEPGEMM_TRADEOFF,
                      note=f"the failure is in DeepGEMM's JIT kernels: turn them off with "
                           f"{DEEPGEMM_ENV[0]}=0 in the server's environment; {CLASS_NOTE}")
    return trust.declare(rem, "rule")


# the shapes of argument checks' refusals (refusal_fix) register themselves on import
from sglang_doctor.remedy import refusals as _refusals  # noqa: E402,F401


# the words a launch writes for a switch's state ("--enable-x=true", "--disable-y=False")
_TRUE_WORDS = frozenset({"true", "1", "yes", "on", "y", "t"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off", "n", "f", "none", ""})


@remedy("written_switch")
def written_switch(ctx: Context, params: dict) -> "list[Remediation] | None":
    """``{flag: "{flag}", value: "{value}"}``: argparse refused a value given to a switch
    ("argument --x: ignored explicit argument 'true'").  The flag is the one the parser's line
    names and must be a switch of the target release (its catalogue); the written value only
    picks between its two states: a true word -> the switch alone, a false word -> the switch
    left out, anything else -> both, left out first.  Advice (log-named, never applied
    unattended)."""
    import re as _re

    named = _re.search(r"--[A-Za-z0-9][\w-]*", str(ctx.fill(params.get("flag")) or ""))
    flag = ctx.flag(named.group(0)) if named else None
    spec = ctx.catalog.spec(flag) if flag is not None else None
    if spec is None or spec.takes_value:
        return None
    word = str(ctx.fill(params.get("value")) or "").strip().lower()
    on = Remediation(set={flag: True}, safe=False, note=f"write {flag} alone: a switch takes no value",
                     tradeoff="none: the same setting, written as the parser reads it")
    off = Remediation(unset=[flag], safe=False, note=f"leave {flag} out: a switch is off when absent",
                      tradeoff=f"{flag} stays off")
    if word in _TRUE_WORDS:
        chosen = [on]
    elif word in _FALSE_WORDS:
        chosen = [off]
    else:  # a value meant for another flag, or a state in words the parser does not read
        off.note += "; if the value was meant for another flag, give it there"
        chosen = [off, on]
    return [trust.declare_log_named(rem) for rem in chosen]


@remedy("choice_elsewhere")
def choice_elsewhere(ctx: Context, params: dict) -> Remediation | None:
    """``{flag: "{flag}", value: "{value}"}``: argparse refused a value of a flag with fixed
    choices ("invalid choice: 'fa4'").  The shipped catalogues say which releases' parsers take
    that value for the same setting (its spelling followed across releases): the value belongs to
    another release, and the note names the range to install.  The value is only compared with
    the catalogues' choices, never emitted; nothing when no shipped release takes it.  Advice
    (needs a human: another release, not a flag change)."""
    import re as _re

    from sglang_doctor.remedy import flags as flags_mod

    named = _re.search(r"--[A-Za-z0-9][\w-]*", str(ctx.fill(params.get("flag")) or ""))
    value = str(ctx.fill(params.get("value")) or "")
    if named is None or not value or len(value) > 64:
        return None
    taking: list[str] = []
    for version in flags_mod.KNOWN_VERSIONS:
        catalog = flags_mod.shipped_catalog(version)
        spelled = flags_mod.translate(named.group(0), catalog)
        spec = catalog.spec(spelled) if spelled is not None else None
        if spec is not None and spec.choices is not None and value in map(str, spec.choices):
            taking.append(version)
    if not taking:
        return None
    known = list(flags_mod.KNOWN_VERSIONS)
    contiguous = known.index(taking[-1]) - known.index(taking[0]) + 1 == len(taking)
    span = (taking[0] if len(taking) == 1 else f"{taking[0]} to {taking[-1]}" if contiguous
            else f"{len(taking)} releases from {taking[0]} to {taking[-1]}")
    newest = taking[-1]
    after = flags_mod.version_key(newest) > flags_mod.version_key(ctx.version) if ctx.version else True
    how = (f"pip install -U 'sglang>={taking[0]}'" if after and newest == flags_mod.KNOWN_VERSIONS[-1]
           else f"pip install 'sglang=={newest}'")
    return Remediation(needs_human=True, safe=False,
                       note=f"the value the parser refused for {named.group(0)} is one of its choices in SGLang {span} "
                            f"(the shipped catalogues): to keep it, run such a release ({how})",
                       tradeoff="another SGLang release: other flags and defaults may differ")
