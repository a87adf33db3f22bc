#!/usr/bin/env python3
"""A synthetic set, from the sources, of model.unsupported and cuda_graph failures in the shapes people paste.

Not real data: every case below is rendered here from the message SGLang (or the Transformers
release that SGLang pinned) raises, with the frames that raise it, for the releases that print
it.  The sources read (the wheels in ~/.cache/sglang-doctor/wheels):

- SGLang's model registry, 0.4.0 to 0.5.23 (srt/models/registry.py ``_raise_for_unsupported``:
  "Model architectures [...] are not supported for now. Supported architectures: ..."), its
  Transformers fallback (srt/model_loader/utils.py ``resolve_transformers_arch``: "Cannot find
  model module. ... is not a registered model in the Transformers library"), its multimodal
  processor registry ("No processor registered for architecture: [...]");
- Transformers 4.51.1 (pinned by SGLang 0.4.6) and 5.19.0 (pinned by 0.5.23): AutoConfig's
  refusal of an unknown model_type (``CONFIG_MAPPING[config_dict["model_type"]]`` raising
  ``KeyError(key)``, re-raised as "The checkpoint you are trying to load has model type `x` but
  Transformers does not recognize this architecture ...\\n\\nYou can update Transformers ...");
- the decode CUDA graph runner's "Capture cuda graph failed: {e}" with its advice, in the three
  wordings (0.4.0-0.4.x inline "1. disable cuda graph by --disable-cuda-graph"; 0.4.10-0.5.13
  CUDA_GRAPH_CAPTURE_FAILED_MSG "2. set --cuda-graph-max-bs"; 0.5.14+ "-decode"), the 0.5.4-0.5.9
  piecewise runner's PIECEWISE_CUDA_GRAPH_CAPTURE_FAILED_MSG, the CUDA errors raised inside a
  capture ("operation not permitted when stream is capturing", "operation failed due to a
  previous error during capture"), the prefill graphs' context managers that log and re-raise
  (0.5.10-0.5.13 "Piecewise CUDA Graph failed with error: ..."; 0.5.14+ "Fail when using backend:
  X for prefill runner.") and the breakable prefill runner's traceback (0.5.18+);
- the model's neighbours in those Transformers releases and huggingface_hub: trust_remote_code
  refusals (dynamic_module_utils), a missing tokenizer class / sentencepiece / tiktoken, a
  safetensors header error, HF_HUB_ENABLE_HF_TRANSFER=1 without hf_transfer.

Shapes (what pastes do to them; see bench/robustness.py for the real pastes they copy):
``full`` the scheduler's traceback (``Scheduler hit an exception:``), frames and message;
``bare`` the exception line and its message only; ``first_line`` the exception line alone (the
message's further lines cut); ``frames`` the traceback cut above its exception line (the best
guess is read); ``blank`` a blank line after every line (a web log viewer's copy); ``compose``
docker compose's ``sglang-1  | `` prefix; ``dedent`` indentation lost.

The category right for each case is the shipped rules' convention (an OOM during capture is
the memory rule's, a missing tokenizer class model.load, ...).  A shape is right when the primary
incident's category (or, with no incident or a fallback, the best guess) is the case's.

Usage: ``python bench/surface_check.py [--verbose] [--json] [--only CATEGORY]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sglang_doctor.diagnose.rules_engine import RuleSet  # noqa: E402
from sglang_doctor.pipeline import StreamPipeline  # noqa: E402

SGL = "/usr/local/lib/python3.10/dist-packages/sglang/"
HF = "/usr/local/lib/python3.10/dist-packages/transformers/"
TORCH = "/usr/local/lib/python3.10/dist-packages/torch/"


@dataclass
class Case:
    name: str
    releases: str
    category: str
    frames: list[tuple[str, int, str, str]]  # (path, line, function, source line)
    exception: str
    message: str  # may hold newlines (and blank lines) as the source's message does
    # shapes not judged, and why: what the shape keeps does not decide the category
    skip: tuple[str, ...] = ()
    # lines SGLang logs before the traceback (a context manager's logger.error, then ``raise``):
    # part of the ``full`` / ``blank`` / ``compose`` / ``dedent`` shapes, and alone the ``logged`` shape
    logged: tuple[str, ...] = ()


def _sched(path: str) -> tuple[str, int, str, str]:
    return (f"{SGL}{path}", 2310, "run_scheduler_process", "scheduler = Scheduler(")


def _model_runner_frames(pre: str) -> list[tuple[str, int, str, str]]:
    return [_sched(pre + "managers/scheduler.py"),
            (f"{SGL}srt/managers/scheduler.py", 240, "__init__", "self.tp_worker = TpWorkerClass("),
            (f"{SGL}srt/managers/tp_worker.py", 68, "__init__", "self.model_runner = ModelRunner("),
            (f"{SGL}srt/model_executor/model_runner.py", 187, "__init__", "self.initialize(min_per_gpu_memory)")]


ARCH = "['Qwen3NextForCausalLM']"
SUPPORTED = "dict_keys(['BaichuanForCausalLM', 'ChatGLMModel', 'CohereForCausalLM', 'LlamaForCausalLM', 'Qwen2ForCausalLM'])"
HF_MODEL_TYPE = ("The checkpoint you are trying to load has model type `qwen3_next` but Transformers does not recognize "
                 "this architecture. This could be because of an issue with the checkpoint, or because your version of "
                 "Transformers is out of date.\n\nYou can update Transformers with the command `pip install --upgrade "
                 "transformers`. If this does not work, and the checkpoint is very new, then there may not be a release "
                 "version that supports this model yet. In this case, you can get the most up-to-date code by installing "
                 "Transformers from source with the command `pip install git+https://github.com/huggingface/transformers.git`")
CONFIG_FRAMES_046 = [
    (f"{SGL}srt/configs/model_config.py", 69, "__init__", "self.hf_config = get_config("),
    (f"{SGL}srt/hf_transformers_utils.py", 118, "get_config", "config = AutoConfig.from_pretrained("),
    (f"{HF}models/auto/configuration_auto.py", 1129, "from_pretrained", 'config_class = CONFIG_MAPPING[config_dict["model_type"]]'),
    (f"{HF}models/auto/configuration_auto.py", 831, "__getitem__", "raise KeyError(key)"),
]
CONFIG_FRAMES_0523 = [
    (f"{SGL}srt/configs/model_config.py", 262, "__init__", "self.hf_config = get_config("),
    (f"{SGL}srt/utils/hf_transformers_utils.py", 402, "get_config", "config = AutoConfig.from_pretrained("),
    (f"{HF}models/auto/configuration_auto.py", 428, "from_pretrained", 'config_class = CONFIG_MAPPING[config_dict["model_type"]]'),
    (f"{HF}models/auto/configuration_auto.py", 107, "__getitem__", "raise KeyError(key)"),
]
REGISTRY_FRAMES = [
    (f"{SGL}srt/model_executor/model_runner.py", 400, "load_model", "self.model = get_model("),
    (f"{SGL}srt/model_loader/__init__.py", 22, "get_model", "return loader.load_model("),
    (f"{SGL}srt/model_loader/loader.py", 365, "load_model", "model = _initialize_model("),
    (f"{SGL}srt/model_loader/loader.py", 148, "_initialize_model", "model_class, _ = get_model_architecture(model_config)"),
    (f"{SGL}srt/model_loader/utils.py", 37, "get_model_architecture", "return ModelRegistry.resolve_model_cls(architectures)"),
    (f"{SGL}srt/models/registry.py", 65, "resolve_model_cls", "return self._raise_for_unsupported(architectures)"),
    (f"{SGL}srt/models/registry.py", 33, "_raise_for_unsupported", "raise ValueError("),
]

ADVICE_040 = ("Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n"
              "2. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
              "3. disable torch compile by not using --enable-torch-compile\n"
              "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ")
ADVICE_0410 = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
               "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
               "3. disable torch compile by not using --enable-torch-compile\n"
               "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
               "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ")
ADVICE_0523 = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
               "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
               "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. (Not recommended. Huge performance loss)\n"
               "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ")
ADVICE_PIECEWISE = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                    "2. set --piecewise-cuda-graph-max-tokens to a smaller value (e.g., 512)\n"
                    "3. disable Piecewise CUDA graph by unset --enable-piecewise-cuda-graph\n"
                    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ")
CAPTURE_FRAMES_04 = [
    (f"{SGL}srt/model_executor/model_runner.py", 707, "init_cuda_graphs", "self.cuda_graph_runner = CudaGraphRunner(self)"),
    (f"{SGL}srt/model_executor/cuda_graph_runner.py", 211, "__init__", "raise Exception("),
]
CAPTURE_FRAMES_059 = [
    (f"{SGL}srt/model_executor/model_runner.py", 2301, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)"),
    (f"{SGL}srt/model_executor/cuda_graph_runner.py", 373, "__init__", "raise Exception("),
]
CAPTURE_FRAMES_0523 = [
    (f"{SGL}srt/model_executor/model_runner.py", 2810, "init_device_graphs", "self.graph_runner = DecodeCudaGraphRunner(self)"),
    (f"{SGL}srt/model_executor/runner/decode_cuda_graph_runner.py", 603, "__init__", "raise Exception("),
]
PIECEWISE_FRAMES_059 = [
    (f"{SGL}srt/model_executor/model_runner.py", 2330, "init_piecewise_cuda_graphs", "self.piecewise_cuda_graph_runner = PiecewiseCudaGraphRunner(self)"),
    (f"{SGL}srt/model_executor/piecewise_cuda_graph_runner.py", 281, "__init__", "raise Exception("),
]
IN_CAPTURE_FRAMES = [
    (f"{SGL}srt/model_executor/cuda_graph_runner.py", 380, "capture", "_capture_one_stream()"),
    (f"{SGL}srt/model_executor/cuda_graph_runner.py", 520, "capture_one_batch_size", "run_once()"),
    (f"{SGL}srt/model_executor/cuda_graph_runner.py", 505, "run_once", "logits_output_or_pp_proxy_tensors = forward("),
    (f"{SGL}srt/models/llama.py", 470, "forward", "hidden_states = self.model("),
]

CASES: list[Case] = [
    # -- model.unsupported ------------------------------------------------------------------
    Case("registry_not_supported", "0.4.0-0.5.23", "model.unsupported", _model_runner_frames("srt/") + REGISTRY_FRAMES,
         "ValueError", f"Model architectures {ARCH} are not supported for now. Supported architectures: {SUPPORTED}"),
    # (registry.py's "Model architectures [...] failed to be inspected" is not here: its condition, an
    # architecture among the supported ones that did not resolve, cannot hold, since the registry's
    # supported list is the keys of the classes it resolves from, 0.4.0 to 0.5.23)
    Case("hf_model_type_046", "0.4.6 (transformers 4.51.1)", "model.unsupported",
         _model_runner_frames("srt/")[:1] + [(f"{SGL}srt/managers/scheduler.py", 240, "__init__", "self.model_config = ModelConfig(")]
         + CONFIG_FRAMES_046[:2] + [(f"{HF}models/auto/configuration_auto.py", 1131, "from_pretrained", "raise ValueError(")],
         "ValueError", HF_MODEL_TYPE),
    Case("hf_model_type_0523", "0.5.23 (transformers 5.19.0)", "model.unsupported",
         _model_runner_frames("srt/")[:1] + [(f"{SGL}srt/managers/scheduler.py", 410, "__init__", "self.model_config = ModelConfig.from_server_args(")]
         + CONFIG_FRAMES_0523[:2] + [(f"{HF}models/auto/configuration_auto.py", 430, "from_pretrained", "raise ValueError(")],
         "ValueError", HF_MODEL_TYPE),
    Case("hf_config_mapping_keyerror", "0.4.x-0.5.23 (the KeyError above the re-raise)", "model.unsupported",
         [(f"{HF}models/auto/configuration_auto.py", 1129, "from_pretrained", 'config_class = CONFIG_MAPPING[config_dict["model_type"]]'),
          (f"{HF}models/auto/configuration_auto.py", 831, "__getitem__", "raise KeyError(key)")],
         "KeyError", "'qwen3_next'"),
    Case("hf_no_model_module", "0.4.10-0.5.23", "model.unsupported", REGISTRY_FRAMES[:4] + [
        (f"{SGL}srt/model_loader/utils.py", 112, "get_model_architecture", "architectures = resolve_transformers_arch(model_config, architectures)"),
        (f"{SGL}srt/model_loader/utils.py", 53, "resolve_transformers_arch", "raise ValueError(")],
        "ValueError", "Cannot find model module. 'Qwen3NextForCausalLM' is not a registered model in the Transformers library "
        "(only relevant if the model is meant to be in Transformers) and 'AutoModel' is not present in the model config's 'auto_map' "
        "(relevant if the model is custom)."),
    Case("no_mm_processor", "0.5.x", "model.unsupported", [
        (f"{SGL}srt/managers/tokenizer_manager.py", 260, "__init__", "self.mm_processor = get_mm_processor("),
        (f"{SGL}srt/managers/multimodal_processor.py", 51, "get_mm_processor", "raise ValueError(")],
        "ValueError", "No processor registered for architecture: ['Glm4vMoeForConditionalGeneration'].\n"
        "Registered architectures: ['Qwen2VLForConditionalGeneration', 'LlavaForConditionalGeneration']"),
    Case("unknown_quantization", "0.4.x-0.5.23 (model_config._verify_quantization)", "model.unsupported", [
        (f"{SGL}srt/configs/model_config.py", 112, "__init__", "self._verify_quantization()"),
        (f"{SGL}srt/configs/model_config.py", 397, "_verify_quantization", "raise ValueError(")],
        "ValueError", "Unknown quantization method: mxfp4. Must be one of ['aqlm', 'awq', 'deepspeedfp', 'tpu_int8', 'fp8', "
        "'fbgemm_fp8', 'marlin', 'gguf', 'gptq_marlin_24', 'gptq_marlin', 'awq_marlin', 'gptq', 'compressed-tensors', 'bitsandbytes'].",
        # _verify_quantization raises for four categories (a checkpoint mixing methods, --quantization
        # against the checkpoint, an unknown method, a method ROCm lacks): its frames alone decide none
        skip=("frames",)),
    # the model's neighbours in Transformers, by the shipped rules' conventions: model.load when the
    # checkpoint or its tokenizer cannot be read in this environment, other when a Python package is
    # missing (class.kernel.import_error / package_missing)
    Case("hf_trust_remote_code", "transformers 4.51.1-5.19.0", "model.load", CONFIG_FRAMES_0523[:2] + [
        (f"{HF}models/auto/configuration_auto.py", 1103, "from_pretrained", "trust_remote_code = resolve_trust_remote_code("),
        (f"{HF}dynamic_module_utils.py", 696, "resolve_trust_remote_code", "raise ValueError(")],
        "ValueError", "Loading /models/InternVL3-8B requires you to execute the configuration file in that repo on your local "
        "machine. Make sure you have read the code there to avoid malicious use, then set the option `trust_remote_code=True` "
        "to remove this error."),
    Case("hf_remote_code_prompt", "transformers 4.36-5.19.0 (no TTY to answer the prompt)", "model.load", CONFIG_FRAMES_0523[:2] + [
        (f"{HF}models/auto/configuration_auto.py", 1103, "from_pretrained", "trust_remote_code = resolve_trust_remote_code("),
        (f"{HF}dynamic_module_utils.py", 688, "resolve_trust_remote_code", "raise ValueError(")],
        "ValueError", "The repository for /models/DeepSeek-OCR contains custom code which must be executed to correctly load the "
        "model. You can inspect the repository content at https://hf.co//models/DeepSeek-OCR.\nPlease pass the argument "
        "`trust_remote_code=True` to allow custom code to be run."),
    Case("hf_transfer_missing", "huggingface_hub 0.2x (HF_HUB_ENABLE_HF_TRANSFER=1 without the package)", "other", [
        (f"{SGL}srt/model_loader/weight_utils.py", 380, "download_weights_from_hf", "hf_folder = snapshot_download("),
        ("/usr/local/lib/python3.10/dist-packages/huggingface_hub/file_download.py", 1738, "_download_to_tmp_and_move", "http_get("),
        ("/usr/local/lib/python3.10/dist-packages/huggingface_hub/file_download.py", 415, "http_get", "raise ValueError(")],
        "ValueError", "Fast download using 'hf_transfer' is enabled (HF_HUB_ENABLE_HF_TRANSFER=1) but 'hf_transfer' package is not "
        "available in your environment. Try `pip install hf_transfer`.",
        skip=("frames",)),  # the frames say a download (model.load); only the message says a package is missing
    Case("hf_tokenizer_class_missing", "transformers 4.51.1", "model.load", [
        (f"{SGL}srt/hf_transformers_utils.py", 220, "get_tokenizer", "tokenizer = AutoTokenizer.from_pretrained("),
        (f"{HF}models/auto/tokenization_auto.py", 1005, "from_pretrained", "raise ValueError(")],
        "ValueError", "Tokenizer class Qwen2TokenizerFast does not exist or is not currently imported."),
    Case("hf_sentencepiece_missing", "transformers 4.51.1-5.19.0", "other", [
        (f"{SGL}srt/hf_transformers_utils.py", 220, "get_tokenizer", "tokenizer = AutoTokenizer.from_pretrained("),
        (f"{HF}utils/import_utils.py", 1767, "requires_backends", 'raise ImportError("".join(failed))')],
        "ImportError", "\nLlamaTokenizer requires the SentencePiece library but it was not found in your environment. Check out "
        "the instructions on the\ninstallation page of its repo: https://github.com/google/sentencepiece#installation and follow "
        "the ones\nthat match your environment. Please note that you may need to restart your runtime after installation.",
        skip=("frames",)),  # the frames say the tokenizer (model.load); only the message says a package is missing
    Case("hf_tiktoken_missing", "transformers 4.51.1", "other", [
        (f"{SGL}srt/hf_transformers_utils.py", 220, "get_tokenizer", "tokenizer = AutoTokenizer.from_pretrained("),
        (f"{HF}convert_slow_tokenizer.py", 1589, "extract_vocab_merges_from_model", "raise ValueError(")],
        "ValueError", "`tiktoken` is required to read a `tiktoken` file. Install it with `pip install tiktoken`.",
        skip=("frames",)),
    Case("safetensors_header", "0.4.x-0.5.23", "model.load", REGISTRY_FRAMES[:3] + [
        (f"{SGL}srt/model_loader/weight_utils.py", 430, "safetensors_weights_iterator", "with safe_open(st_file, framework=\"pt\") as f:")],
        "safetensors_rust.SafetensorError", "Error while deserializing header: HeaderTooLarge"),
    # -- cuda_graph ----------------------------------------------------------------------------
    Case("capture_failed_040", "0.4.0-0.4.9", "cuda_graph", _model_runner_frames("srt/") + CAPTURE_FRAMES_04,
         "Exception", "Capture cuda graph failed: CUDA error: an illegal instruction was encountered\n"
         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n\n" + ADVICE_040),
    Case("capture_failed_059", "0.4.10-0.5.13", "cuda_graph", _model_runner_frames("srt/") + CAPTURE_FRAMES_059,
         "Exception", "Capture cuda graph failed: Triton Error [CUDA]: invalid argument\n" + ADVICE_0410),
    Case("capture_failed_0523", "0.5.14-0.5.23", "cuda_graph", _model_runner_frames("srt/") + CAPTURE_FRAMES_0523,
         "Exception", "Capture cuda graph failed: Expected all tensors to be on the same device\n" + ADVICE_0523),
    Case("capture_failed_piecewise_059", "0.5.4-0.5.9", "cuda_graph", _model_runner_frames("srt/") + PIECEWISE_FRAMES_059,
         "Exception", "Capture cuda graph failed: Dynamo failed to run FX node with fake tensors\n" + ADVICE_PIECEWISE),
    Case("stream_capturing", "0.4.x-0.5.23 (inside capture)", "cuda_graph", _model_runner_frames("srt/") + IN_CAPTURE_FRAMES,
         "RuntimeError", "CUDA error: operation not permitted when stream is capturing\n"
         "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
         "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
         skip=("message_tail",)),  # torch's boilerplate lines below a CUDA error name no failure
    Case("capture_invalidated", "0.4.x-0.5.23 (inside capture)", "cuda_graph", _model_runner_frames("srt/") + IN_CAPTURE_FRAMES,
         "RuntimeError", "CUDA error: operation failed due to a previous error during capture\n"
         "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
         "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
         skip=("message_tail",)),  # torch's boilerplate lines below a CUDA error name no failure
    Case("capture_graph_end", "0.4.x-0.5.23 (torch's capture_end)", "cuda_graph", _model_runner_frames("srt/") + IN_CAPTURE_FRAMES[:2] + [
        (f"{TORCH}cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
        (f"{TORCH}cuda/graphs.py", 84, "capture_end", "super().capture_end()")],
         "RuntimeError", "CUDA error: operation not permitted when stream is capturing\n"
         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
         skip=("message_tail",)),
    Case("prefill_breakable_0518", "0.5.18-0.5.23", "cuda_graph", _model_runner_frames("srt/") + [
        (f"{SGL}srt/model_executor/runner/prefill_cuda_graph_runner.py", 410, "capture", "self.capture_one_num_tokens(num_tokens)"),
        (f"{SGL}srt/model_executor/runner_backend_utils/breakable_cuda_graph/context.py", 49, "enable_breakable_cuda_graph", "yield")],
        "RuntimeError", "CUDA error: an illegal memory access was encountered",
        # the message alone is an illegal memory access (runtime.crash): only the frames say capture
        skip=("bare", "first_line")),
    Case("oom_in_capture", "0.4.x-0.5.23 (memory by the rules' convention)", "memory.cuda_oom", _model_runner_frames("srt/") + CAPTURE_FRAMES_059,
         "Exception", "Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
         "47.53 GiB of which 1.06 GiB is free.\n" + ADVICE_0410,
         # frames alone say capture, and so does the advice below the message: only its first line says OOM
         skip=("frames", "message_tail")),
    Case("piecewise_logged_0512", "0.5.10-0.5.13 (compilation/piecewise_context_manager.py logs, then raises)", "cuda_graph",
         _model_runner_frames("srt/") + [
             (f"{SGL}srt/model_executor/piecewise_cuda_graph_runner.py", 313, "__init__", "self.capture()"),
             (f"{SGL}srt/compilation/piecewise_context_manager.py", 46, "enable_piecewise_cuda_graph", "yield")],
         "torch._dynamo.exc.TorchRuntimeError", "Dynamo failed to run FX node with fake tensors",
         logged=("Piecewise CUDA Graph failed with error: Dynamo failed to run FX node with fake tensors\n"
                 "Piecewise CUDA Graph is enabled by default as an experimental feature.\n"
                 "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
                 "Please report this issue at https://github.com/sgl-project/sglang/issues/new/choose",),
         skip=("bare", "first_line")),  # a torch.compile error alone names no graph
    Case("tc_piecewise_logged_0523", "0.5.14-0.5.23 (tc_piecewise context manager logs, then raises)", "cuda_graph",
         _model_runner_frames("srt/") + [
             (f"{SGL}srt/model_executor/runner/prefill_cuda_graph_runner.py", 410, "capture", "self.capture_one_num_tokens(num_tokens)"),
             (f"{SGL}srt/model_executor/runner_backend_utils/tc_piecewise_cuda_graph/context_manager.py", 63, "enable_tc_piecewise_cuda_graph", "yield")],
         "RuntimeError", "CUDA error: operation not permitted when stream is capturing",
         logged=("RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
                 "Fail when using backend: tc_piecewise for prefill runner.\nPossible suggestions:\n"
                 "1. change to breakable by --cuda-graph-backend-prefill=breakable\n"
                 "2. disable the prefill CUDA graph by --cuda-graph-backend-prefill=disabled\n"
                 "3. if it is an OOM problem, set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7) or set "
                 "--cuda-graph-max-bs-prefill to a smaller value (e.g., 2048)\n"
                 "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",)),
]

SHAPES = ("full", "bare", "first_line", "frames", "blank", "compose", "dedent", "message_tail", "logged")


def traceback_lines(case: Case) -> list[str]:
    lines = ["[2025-06-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):"]
    for path, line, function, source in case.frames:
        lines += [f'  File "{path}", line {line}, in {function}', f"    {source}"]
    return lines


def exception_lines(case: Case) -> list[str]:
    return f"{case.exception}: {case.message}".split("\n")


def render(case: Case, shape: str) -> str:
    tb, exc = traceback_lines(case), exception_lines(case)
    logged = [f"[2025-06-01 10:00:05 TP0] {line}" if i == 0 else line
              for i, line in enumerate("\n".join(case.logged).split("\n"))] if case.logged else []
    full = logged + tb + exc
    if shape == "full":
        lines = full
    elif shape == "bare":
        lines = exc
    elif shape == "first_line":
        lines = exc[:1]
    elif shape == "frames":
        lines = tb
    elif shape == "blank":
        lines = [x for line in full for x in (line, "")]
    elif shape == "compose":
        lines = [f"sglang-1  | {line}" for line in full]
    elif shape == "dedent":
        lines = [line.lstrip() for line in full]
    elif shape == "logged":
        if not logged:
            return ""
        lines = logged
    elif shape == "message_tail":
        # a paste that starts below the exception line: the message's further lines only, from its
        # first non-blank line on (a multi-line message: the advice of a capture failure, the second
        # paragraph of transformers' refusal after its blank line)
        rest = exc[1:]
        while rest and not rest[0].strip():
            rest = rest[1:]
        if not rest:
            return ""
        lines = rest
    else:
        raise ValueError(shape)
    return "\n".join(lines) + "\n"


def answer(pack: RuleSet, text: str) -> tuple[str, str]:
    """(category, rule id) the tool names: the primary incident's, or the fallback's best guess."""
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    if not incidents:
        note = pipe.summary().get("fallback")
        return ((note["best_guess"]["category"], "fallback") if note else ("none", "-"))
    ev = max(incidents, key=lambda e: e["confidence"])
    fb = ev.get("fallback")
    if fb:
        return fb["best_guess"]["category"], "fallback"
    return ev["category"], ev.get("rule_id") or ev.get("rule") or "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", help="only the cases of this category")
    args = ap.parse_args(argv)
    pack = RuleSet.load(user=False)
    per_shape: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_category: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for case in CASES:
        if args.only and case.category != args.only:
            continue
        for shape in SHAPES:
            text = render(case, shape)
            if shape in case.skip or not text:
                continue
            got, rule = answer(pack, text)
            ok = got == case.category
            for tally in (per_shape[shape], per_category[case.category]):
                tally[0] += ok
                tally[1] += 1
            if not ok:
                misses.append(f"{case.name} [{shape}] want {case.category} got {got} ({rule})")
    report = {"shapes": dict(per_shape), "categories": dict(per_category), "misses": misses}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print("synthetic (rendered from SGLang's and Transformers' source; not real data)")
    for name, (ok, n) in per_category.items():
        print(f"  {name:20} {ok}/{n}")
    print("  by shape: " + ", ".join(f"{s} {ok}/{n}" for s, (ok, n) in per_shape.items()))
    if args.verbose:
        for line in misses:
            print("  MISS " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
