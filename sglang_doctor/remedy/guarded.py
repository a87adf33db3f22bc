"""Guarded next steps for a failure whose cause is not in the text ("if this is X, try Y").

When no rule knew a failure, the fallback (diagnose/fallback.py) names a best-guess category
with its confidence.  For the categories where one flag or variable change is what
maintainers usually give for that kind of failure, this module proposes it, worded as a
condition on the guess and always as advice: every change is ``needs_human`` and not
``safe`` (``run`` never relaunches on an ``unknown`` rule anyway, run/supervisor.py).  A
category with no usual flag change (host memory, arguments, ports) gets none:
the fallback's one command that fetches the missing part stays the answer.

The entries are rule-file remedy entries (remedies.REGISTRY names), so the flags are spelled
and validated for the target release like any rule's.
"""

from __future__ import annotations

from typing import Any

# best-guess category -> (what the guess means, in words; the remedy entries, best first)
GUARDED: dict[str, tuple[str, list[dict[str, Any]]]] = {
    # torch OOM at prefill, graph capture or a big request: more room for activations
    "memory.cuda_oom": ("a CUDA out-of-memory", [
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
        {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}},
    ]),
    # the pool did not fit: more of the GPU for the pool, or the planner's sizes
    "memory.kv_pool": ("a KV cache pool that did not fit", [
        {"raise_flag": {"flag": "--mem-fraction-static", "by": 0.03, "max": 0.93, "from_log": True}},
        {"plan_memory": {"goal": "fit_pools"}},
    ]),
    # a failed capture: SGLang's own "Possible solutions" for the release (CUDA_GRAPH_BY_RELEASE
    # below), in the order the advice-tail rules give them when the cause line is missing; this
    # list is the 0.4.6-0.5.13 one, for a caller that names no release
    "cuda_graph": ("a CUDA graph capture failure", [
        {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8}},
        {"disable_feature": {"feature": "torch_compile"}},
        {"disable_feature": {"feature": "cuda_graph"}},
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
    ]),
    # one machine's GPUs talking over PCIe: SGLang's own all-reduce, then NCCL's P2P path
    "nccl": ("a GPU-to-GPU communication failure on one machine", [
        {"disable_feature": {"feature": "custom_all_reduce"}},
        {"set_env": {"name": "NCCL_P2P_DISABLE", "value": "1", "pcie_only": True,
                     "tradeoff": "GPU-to-GPU traffic goes through host memory: slower all-reduce on PCIe"}},
    ]),
    # an attention kernel this GPU cannot run: the portable Triton backend, then FlashInfer
    # (what SGLang's own refusals of FA3 and TRT-LLM kernels name: "Please use
    # `--attention-backend flashinfer`"; sglang#9140 "use a different backend"), not when
    # FlashInfer is the backend in use or on ROCm (switch_backend skips both)
    # the other backend than the one the text shows failing (its frames, its message, the
    # launch's setting): Triton first, FlashInfer when Triton's own kernel is the one that failed
    "kernel.unsupported_hw": ("an attention kernel this GPU does not support", [
        {"switch_backend": {"choices": ["triton", "flashinfer"], "plain_note": True,
                            "tradeoff": "Triton attention runs on every CUDA GPU; usually a little slower than FlashInfer/FA3"}},
        {"switch_backend": {"choices": ["flashinfer"], "plain_note": True,
                            "tradeoff": "FlashInfer runs on SM75-SM120 NVIDIA GPUs; it needs its JIT cache or AOT "
                                        "wheel and is not available on ROCm"}},
    ]),
    # a FlashInfer JIT build that failed: an attention backend that needs no JIT build
    "kernel.build": ("a failed JIT kernel build (FlashInfer's, or Triton's)", [
        # a DeepGEMM JIT build (its package or wrapper in the frames, or its name in the words):
        # SGLang's own switch off, SGLANG_ENABLE_JIT_DEEPGEMM=0 (nothing otherwise; session 21)
        {"deepgemm_off": {}},
        # Triton's attention (no nvcc build), unless Triton's own attention kernel is the one the
        # text shows failing to compile: then FlashInfer's, which ships prebuilt kernels
        {"switch_backend": {"choices": ["triton"], "plain_note": True,
                            "tradeoff": "Triton attention needs no nvcc build; usually a little slower than FlashInfer"}},
        {"switch_backend": {"choices": ["flashinfer"], "plain_note": True,
                            "tradeoff": "FlashInfer uses its prebuilt kernels (flashinfer-cubin / jit-cache wheels) or "
                                        "JIT-builds them with nvcc; CUDA only"}},
    ]),
    # a model that did not load: the one flag change model-loading failures take most often is
    # the checkpoint's own code (transformers' "requires you to execute the configuration file
    # ... set trust_remote_code=True"; docs/FIXES-SEEN.md); a wrong path, a gated repo or a
    # partial download need the user, which the next step's command shows
    "model.load": ("a model that failed to load", [
        {"set_flag": {"flag": "--trust-remote-code", "value": True,
                      "tradeoff": "runs the Python code shipped with the checkpoint: only for a repository you trust; "
                                  "no help for a wrong path, a gated repo (HF_TOKEN) or a partial download"}},
        # the other change model-loading failures take: a gated repository's token (the Hub's
        # 401/403 "Access to model ... is restricted"; tuned corpus fresh/021), a value only
        # the user has, so it is asked for, never filled in
        {"set_env": {"name": "HF_TOKEN", "ask": "a Hugging Face token of an account that accepted the model's licence",
                     "tradeoff": "only for a gated repository: the server's environment holds a secret; "
                                 "a local copy of the model (huggingface-cli download) needs none"}},
    ]),
    # a model class SGLang does not implement (or whose config it refuses): SGLang's fallback to
    # the model's transformers implementation, which maintainers give for "Model architectures
    # [...] are not supported for now" (docs/FAILURES-SEEN.md #5; --model-impl from 0.4.9.post3,
    # validated for the release: older ones get none), then the checkpoint's own code (a custom
    # architecture's config / modelling code lives in the repository)
    "model.unsupported": ("a model architecture this SGLang release does not implement", [
        {"set_flag": {"flag": "--model-impl", "value": "transformers",
                      "tradeoff": "the model runs through transformers' implementation: slower than a native SGLang "
                                  "model, some features (CUDA graphs on some layers, quantized kernels) may not apply; "
                                  "a newer SGLang release may implement the architecture natively"}},
        {"set_flag": {"flag": "--trust-remote-code", "value": True,
                      "tradeoff": "runs the Python code shipped with the checkpoint: only for a repository you trust"}},
    ]),
    # the server's port is taken: the next free one, tested on this machine ("if the port taken
    # is the server's own": SGLang's other ports are set apart), never applied unattended
    "network.port": ("a port that was already taken", [
        {"change_port": {"unsure": True}},
    ]),
    # a crash in the forward pass while serving: what the launch turned on, then the
    # scheduler's overlap and CUDA graphs, each to narrow it down
    "runtime.crash": ("a crash in the model's forward pass while serving", [
        # raised inside an attention backend's module (its frames are in the text): the other
        # backend (the isolation step stays the first alternative)
        {"switch_backend": {"when_frames": True, "plain_note": True}},
        # raised inside an optional feature's own module (custom all-reduce, torch.compile;
        # speculative decoding, LoRA, HiCache, DP attention, ...): that feature off
        # (class_remedies.FRAME_FEATURES / FRAME_DROPS), only when the frames pass it; the
        # radix tree, on by default, after the off-by-default switches
        {"disable_in_frames": {"features": ["custom_all_reduce", "torch_compile", "fast_image_processor",
                                            "disk_cache", "jump_forward"]}},
        {"drop_in_frames": {}},
        {"isolate_features": {}},
        {"disable_in_frames": {"features": ["radix_cache"]}},
        {"disable_feature": {"feature": "overlap_schedule"}},
        {"disable_feature": {"feature": "cuda_graph"}},
    ]),
}


# What a failed CUDA graph capture takes differs by release, and SGLang says so itself: every
# failed decode capture prints its "Possible solutions" list, whose order and flags changed twice
# (rules/cuda_graph.yaml's advice-tail rules hold each list and date it by its ``versions``):
#   0.4.0-0.4.5: 1. --disable-cuda-graph 2. smaller --mem-fraction-static 3. no torch compile
#                4. smaller --cuda-graph-max-bs (cuda_graph_runner.py: graphs off first)
#   0.4.6-0.5.13: 1. smaller --mem-fraction-static 2. smaller --cuda-graph-max-bs 3. no torch compile
#                4. --disable-cuda-graph ("Not recommended")
#   0.5.14-: 1. smaller --mem-fraction-static 2. smaller --cuda-graph-max-bs-decode
#                3. --cuda-graph-backend-decode=disabled (runner_backend_utils/__init__.py)
# The list is for every cause, and the cause line (what picks the item) is what a guess lacks:
# from 0.4.6 the two places read first cover both kinds of cause, a smaller largest captured
# batch (an out-of-memory capture, or one failing at the larger sizes) and then no decode graphs
# (any other cause, which the threads confirm most often for this category); more headroom,
# which helps only an out-of-memory error, after them (rules/cuda_graph.yaml, session 24).
# A cuda_graph guess takes the list of the release the remedy is spelled for (the log's, the
# option's, or the newest the dump / frames / wording allow), as a rule matching that release's
# list does; a test keeps these in step with the rules.  (first release, entries), oldest first;
# a release before the first takes the first list (the oldest shipped catalogue is 0.4.0).
CUDA_GRAPH_BY_RELEASE: tuple[tuple[str, list[dict[str, Any]]], ...] = (
    ("0.4.0", [
        {"disable_feature": {"feature": "cuda_graph"}},
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
        {"disable_feature": {"feature": "torch_compile"}},
        {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8}},
    ]),
    ("0.4.6", GUARDED["cuda_graph"][1]),
    ("0.5.14", [
        {"lower_flag": {"flag": "--cuda-graph-max-bs-decode", "factor": 0.5, "min": 8}},
        # SGLang's own --cuda-graph-backend-decode=disabled, through disable_feature: a release
        # guessed from a range that reaches before 0.5.14 gets the spelling all of it accepts
        # (--disable-cuda-graph), as the other lists do
        {"disable_feature": {"feature": "cuda_graph"}},
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
    ]),
)


# A capture whose frames pass DeepEP's dispatcher (the text shows them): DeepEP's normal
# kernels cannot be captured (0.4.6+ turn graphs off themselves for --deepep-mode normal; 'auto'
# switched modes wrongly under graphs until sglang#11666), so the low-latency kernels, the ones
# built for graphs, come before SGLang's general list (rules/cuda_graph.yaml's capture rules do
# the same).  Only with those frames: a text that does not show DeepEP gets none (the launch's
# --deepep-mode is not guessed).
DEEPEP_CAPTURE: dict[str, Any] = {
    "set_flag": {"flag": "--deepep-mode", "value": "low_latency",
                 "when_modules": ["token_dispatcher/deepep", "ep_moe/token_dispatcher"],
                 "tradeoff": "DeepEP's low-latency kernels for prefill too: lower prefill throughput than normal mode"}}
# the other mode that captures: 'auto' (normal kernels for prefill, low-latency ones for the
# captured decode), what the threads confirmed (sglang#6017, #6218; tuned corpus field9/002,
# field13/007), second because auto under graphs failed on some releases (#11666, #19252)
DEEPEP_CAPTURE_AUTO: dict[str, Any] = {
    "set_flag": {"flag": "--deepep-mode", "value": "auto", "unless_current": ["low_latency"], "unknown_not_default": True,
                 "note": "set --deepep-mode auto: a launch that set normal captures decode with the low-latency kernels and keeps the normal ones for prefill",
                 "when_modules": ["token_dispatcher/deepep", "ep_moe/token_dispatcher"],
                 "tradeoff": "DeepEP picks normal kernels for prefill, low-latency ones for the captured decode; "
                             "auto under CUDA graphs failed on some releases (sglang#11666, #19252)"}}


def cuda_graph_entries(version: str | None) -> list[dict[str, Any]]:
    """SGLang's own list for a failed capture in ``version`` (``CUDA_GRAPH_BY_RELEASE``); the
    0.4.6-0.5.13 list when the release is unknown or unreadable."""
    from sglang_doctor.remedy import flags

    try:
        key = flags.version_key(version) if version else None
    except ValueError:
        key = None
    if key is None:
        return list(GUARDED["cuda_graph"][1])
    chosen = CUDA_GRAPH_BY_RELEASE[0][1]
    for first, listed in CUDA_GRAPH_BY_RELEASE:
        if flags.version_key(first) <= key:
            chosen = listed
    return list(chosen)


# A memory guess when the launch's own lines show the KV pool was already allocated ("KV Cache
# is allocated", "Memory pool end", a capture begun): the pools fitted, so whatever ran out of
# memory after them ran in the headroom 1 - mem_fraction_static leaves (CUDA graph capture, the
# first prefill, warm-up), and the fraction goes down, not up (docs/FIXES-SEEN.md session 12;
# SGLang's "Possible solutions" of a failed capture and its FAQ's "CUDA out of memory").
GUARDED_AFTER_POOL: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "memory.kv_pool": ("a memory failure after the KV cache pool was allocated", [
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
        {"lower_flag": {"flag": "--cuda-graph-max-bs-decode", "factor": 0.5, "min": 8}},
        {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8}},
        {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}},
    ]),
}

# the milestones that say the launch's KV pool was allocated (incidents/milestones.py names)
POOL_ALLOCATED = ("kv_cache", "swa_kv_cache", "memory_pool_end", "cuda_graph_begin", "cuda_graph_end",
                  "post_capture_kv")


def pool_allocated(launch: Any) -> bool:
    """The launch's own lines show its KV cache pool allocated (before any failure the text has)."""
    return any(m.name in POOL_ALLOCATED for m in getattr(launch, "milestones", None) or [])


# The same guesses for a failure while serving (the phase is ``serving``: the server had been
# ready, or its batch lines show it serving), where they mean something else: a KV pool that
# filled up under the load (the scheduler's last batch lines show it full, or retracting) is
# relieved by admitting less at once, or by a bigger pool.
GUARDED_SERVING: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "memory.kv_pool": ("a KV cache / state pool that filled up under the load", [
        {"lower_flag": {"flag": "--max-running-requests", "factor": 0.5, "min": 1,
                        "tradeoff": "fewer requests decode at once: lower throughput, the rest wait in the queue"}},
        {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}},
        {"raise_flag": {"flag": "--mem-fraction-static", "by": 0.03, "max": 0.93}},
    ]),
}


# A guess whose category has no usual change (arguments, "other", an unsupported model, ...),
# on a traceback the text does show but no rule knew: where it failed can still name the
# change.  The deepest frames the text holds are in an optional feature's own module (SGLang's
# custom all-reduce, CUDA graph capture, torch.compile; speculative decoding, LoRA, HiCache,
# the EP all-to-all, DP attention, ...: class_remedies.FRAME_FEATURES / FRAME_DROPS), in an
# attention backend's module (the other backend), in the quantized KV cache's code (one dtype
# back), or in a MoE layer's experts being built (a check on how TP splits every expert:
# expert parallelism).
# Each step holds only if the failure is in that code ("if the failure is in ..."); nothing is
# proposed when the frames pass none of them (a text with no frames: nothing).
SITE_WORDS = "a failure in the code its traceback last passes (the deepest frames the text shows)"
SITE_STEPS: list[dict[str, Any]] = [
    {"expert_parallel": {"when_frames": True}},
    # the quantized KV cache's code (its words or frames: kvfp4, kv_cache_dtype, ...): one rung back
    {"kv_cache_dtype_step": {}},
    # DeepGEMM's JIT kernels: SGLang's switch off (class_remedies.deepgemm_off)
    {"deepgemm_off": {}},
    # an attention backend's module: the other backend
    {"switch_backend": {"when_frames": True, "plain_note": True}},
    {"disable_in_frames": {"features": ["custom_all_reduce", "cuda_graph", "torch_compile", "fast_image_processor",
                                        "disk_cache", "jump_forward"]}},
    {"drop_in_frames": {}},
]


# A CUDA out-of-memory guess while the weights load (the phase the text shows: "Load weight
# begin" without its end, or a loader's frames): SGLang has sized no pool yet, so
# --mem-fraction-static does not apply and lowering it cannot help (docs/FIXES-SEEN.md session
# 13 "Left").  What people confirm there is more GPUs per replica or smaller weights: twice the
# launch's --tp-size (stated as assumed when the log does not show it), then host offload.
GUARDED_LOAD_WEIGHTS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "memory.cuda_oom": ("weights that do not fit in GPU memory", [
        {"raise_flag": {"flag": "--tp-size", "factor": 2,
                        "tradeoff": "each replica spans twice the GPUs: only if the machine has them free (nvidia-smi); "
                                    "a quantized checkpoint is the other way"}},
        {"raise_flag": {"flag": "--cpu-offload-gb", "to": 4}},
    ]),
}


# A CUDA out-of-memory guess while the decode CUDA graphs were being captured (the phase the
# text shows: the pool allocated, "Capture cuda graph begin" or "Capturing batches" without its
# end): the capture's buffers come out of the headroom 1 - mem_fraction_static leaves, and
# SGLang's own advice for a failed capture is more headroom, then a smaller largest captured
# batch (its "Possible solutions" 1 and 2; rules' memory.cuda_oom.cuda_graph_capture).  The
# threads confirm both for a capture that ran out of memory (the batch size: sglang#5285, tuned
# corpus dev/002 and field21/012; the fraction: field14/019); the prefill chunk, which the
# default cuda_oom guess offers second, sizes the prefill after the capture, not the capture.
# Not when the launch turned the graphs off (no capture then; the default guess stays).
GUARDED_CAPTURE: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "memory.cuda_oom": ("a CUDA out-of-memory while the CUDA graphs were captured", [
        {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5, "from_log": True}},
        {"lower_flag": {"flag": "--cuda-graph-max-bs-decode", "factor": 0.5, "min": 8}},
        {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8}},
        {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}},
    ]),
}


def graphs_off(launch: Any) -> bool:
    """The launch's settings show its decode CUDA graphs off (0.5.9 --disable-cuda-graph,
    0.5.23 --cuda-graph-backend-decode disabled)."""
    args = getattr(launch, "server_args", None) or {}
    return (str(args.get("disable_cuda_graph")).lower() == "true"
            or str(args.get("cuda_graph_backend_decode")).lower() == "disabled")


def _table(phase: str | None, category: str | None, launch: Any = None) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    if phase == "serving" and category in GUARDED_SERVING:
        return GUARDED_SERVING
    if phase == "startup.load_weights" and category in GUARDED_LOAD_WEIGHTS:
        return GUARDED_LOAD_WEIGHTS
    if phase == "startup.cuda_graph" and category in GUARDED_CAPTURE and not graphs_off(launch):
        return GUARDED_CAPTURE
    if category in GUARDED_AFTER_POOL and pool_allocated(launch):
        return GUARDED_AFTER_POOL
    return GUARDED


def entries(category: str | None, phase: str | None = None, launch: Any = None,
            version: str | None = None) -> list[dict[str, Any]]:
    """The remedy entries to try when the best guess is ``category`` (none when unknown);
    ``phase`` ``serving`` picks the serving-time meaning of the guess where it differs, a
    ``launch`` whose KV pool was allocated the after-the-pool meaning of a pool guess, and
    ``version`` (the release the flags are spelled for) SGLang's own list for a failed capture
    in that release (``CUDA_GRAPH_BY_RELEASE``)."""
    table = _table(phase, category, launch)
    if category == "cuda_graph" and table is GUARDED:
        return [DEEPEP_CAPTURE, DEEPEP_CAPTURE_AUTO, *cuda_graph_entries(version)]
    if category in table:
        return list(table[category][1])
    # no usual change for the category: the steps the traceback's own sites name (SITE_STEPS)
    return list(SITE_STEPS) if category else []


def guess_of(fallback: dict[str, Any] | None) -> tuple[str | None, float]:
    guess = (fallback or {}).get("best_guess") or {}
    try:
        confidence = float(guess.get("confidence") or 0.0)
    except (TypeError, ValueError):
        confidence = 0.0
    return guess.get("category"), confidence


def guard(rem: Any, category: str, confidence: float, phase: str | None = None, launch: Any = None) -> Any:
    """Word ``rem`` as a step that holds only if the guess is right, and make it advice."""
    table = _table(phase, category, launch)
    words = table[category][0] if category in table else SITE_WORDS
    rem.needs_human, rem.safe = True, False
    rem.note = (f"if this is {words} (a best guess, confidence {confidence:.2f}: the cause line is not in "
                f"the text; check it first with the next step): {rem.note}")
    rem.tradeoff = f"only if this is {words} (a guess); {rem.tradeoff}" if rem.tradeoff else f"only if this is {words} (a guess)"
    return rem
