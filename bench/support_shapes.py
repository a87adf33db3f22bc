#!/usr/bin/env python3
"""Model-support and hardware-capability messages of the libraries under SGLang, in paste shapes.

``bench/site_shapes.py`` renders SGLang's OWN failure sites (the inventory) in the shapes pastes
have.  Launches die as often in the libraries SGLang calls: transformers (AutoConfig,
AutoTokenizer, remote code), torch (the CUDA runtime, cpp_extension's JIT builds, the capability
warning), triton, flash-attn, vLLM's quantization layers, the ROCm runtime.  This is the same
measure for their messages: each message below is copied from the library's source (the
``source`` field names the file and the release read; the real-SGLang venv's transformers
5.19.0, torch 2.13 and triton 3.9, the SGLang wheels 0.4.3.post2-0.5.23) with sample values in its
placeholders, and rendered as

- ``bare``: the exception line alone (a message with a blank line in it keeps its blank line,
  as the paste has it: transformers' "does not recognize this architecture" is one);
- ``traceback``: SGLang's ``Scheduler hit an exception: Traceback`` with the library's own frame
  under SGLang's calling frame, then the exception line;
- ``tail``: a traceback whose head was cut: the library's frame and the exception line only;
- ``wrapped``: the message inside another exception: torch's ``ProcessRaisedException`` of an
  ``mp.spawn``-started ``sgl.Engine`` (RL frameworks) for start-up messages, SGLang's
  ``Capture cuda graph failed`` (cuda_graph_runner.py) for a kernel that first runs there;
- ``prefixed``: the traceback behind docker compose's ``sglang-1  | `` prefix;
- ``logged``: a message the library prints as a log or warning line (torch's capability
  warning, a compiler's ``fatal`` line), with SGLang's ``[time TP0]`` header or as the
  compiler printed it.

A shape is right when the engine (every layer in rules/) names the message's category on it.

``--inventory`` does the same over the shipped inventories instead of the hand list: every
failure site of the libraries (data/inventory/external-*.json, scripts/inventory_external.py)
and of SGLang's releases (data/inventory/sglang-*.json) whose right answer is model.unsupported,
kernel.unsupported_hw or kernel.build and is named by the message (a rule's or a class's by
message words; not a class that names a site by its frames), rendered with its first filling
in the shapes those inventories' own measures leave out: ``tail``, ``wrapped`` (the spawn
wrapper) and ``prefixed``, and ``bare`` for a message whose text spans lines.

No corpus file is read.  Usage: ``python bench/support_shapes.py [--verbose] [--json]
[--family NAME] [--inventory]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAMP = "2026-01-01 00:00:30"
SITE = "/usr/local/lib/python3.12/dist-packages/"
SHAPES = ("bare", "traceback", "tail", "wrapped", "prefixed", "ray", "stamped", "journald", "unindented", "ray_task", "logged")
# the collectors' prefixes: docker compose, Ray's worker-output prefix, `docker logs -t`, journald
PREFIXES = {"prefixed": "sglang-1  | ", "ray": "(WorkerDict pid=52310) ", "stamped": "2026-01-01T00:00:30.123456789Z ",
            "journald": "Jan 01 00:00:30 gpu-node-3 python[52310]: "}

TF_ARCH = (
    "The checkpoint you are trying to load has model type `qwen3_next` but Transformers does not "
    "recognize this architecture. This could be because of an issue with the checkpoint, or because "
    "your version of Transformers is out of date.\n\nYou can update Transformers with the command "
    "`pip install --upgrade transformers`. If this does not work, and the checkpoint is very new, then "
    "there may not be a release version that supports this model yet. In this case, you can get the "
    "most up-to-date code by installing Transformers from source with the command "
    "`pip install git+https://github.com/huggingface/transformers.git`")

CUDA_TAIL = ("\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
             "stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")

# (family, library, source, category, exception, message, library frame (file, line, function,
#  code), stage: "startup" | "kernel" (a kernel that runs first in the forward: wrapped in the
#  cuda-graph capture) | "build", logged line (None: not a logged message))
MESSAGES: list[dict] = [
    # ---- transformers: the model type, the architecture, the tokenizer, remote code
    dict(family="tf_model_type", library="transformers", category="model.unsupported",
         source="transformers 5.19.0 models/auto/configuration_auto.py:430 AutoConfig.from_pretrained",
         exception="ValueError", message=TF_ARCH,
         frame=("transformers/models/auto/configuration_auto.py", 430, "from_pretrained",
                "raise ValueError("), stage="startup"),
    dict(family="tf_config_mapping_keyerror", library="transformers", category="model.unsupported",
         source="transformers 4.51.1 models/auto/configuration_auto.py _LazyConfigMapping.__getitem__ (raise KeyError(key))",
         exception="KeyError", message="'qwen3_next'",
         frame=("transformers/models/auto/configuration_auto.py", 795, "__getitem__",
                "raise KeyError(key)"), stage="startup"),
    dict(family="tf_unrecognized_config_class", library="transformers", category="model.unsupported",
         source="transformers 5.19.0 models/auto/auto_factory.py:415 _BaseAutoModelClass.from_pretrained",
         exception="ValueError",
         message=("Unrecognized configuration class <class 'transformers_modules.Foo.configuration_foo.FooConfig'> "
                  "for this kind of AutoModel: AutoModelForCausalLM.\nModel type should be one of "
                  "AriaTextConfig, BambaConfig, BartConfig, BertConfig."),
         frame=("transformers/models/auto/auto_factory.py", 415, "from_pretrained", "raise ValueError("),
         stage="startup"),
    # a tokenizer that cannot be loaded is model.load by docs/CONTRACT.md, whatever made it so
    dict(family="tf_tokenizer_class_missing", library="transformers", category="model.load",
         source="transformers 4.44-4.57 models/auto/tokenization_auto.py AutoTokenizer.from_pretrained",
         exception="ValueError",
         message="Tokenizer class Qwen2Tokenizer does not exist or is not currently imported.",
         frame=("transformers/models/auto/tokenization_auto.py", 909, "from_pretrained",
                "raise ValueError("), stage="startup"),
    dict(family="tf_require_version", library="transformers", category="model.unsupported",
         source="transformers 5.19.0 utils/versions.py:44 _compare_versions (require_version)",
         exception="ImportError",
         message=("transformers>=4.56.0 is required for a normal functioning of this module, "
                  "but found transformers==4.51.1."),
         frame=("transformers/utils/versions.py", 44, "_compare_versions", "raise ImportError("),
         stage="startup"),
    dict(family="tf_trust_remote_code", library="transformers", category="model.load",
         source="transformers 5.19.0 dynamic_module_utils.py:787 resolve_trust_remote_code",
         exception="ValueError",
         message=("The repository /models/Foo-7B contains custom code which must be executed to correctly "
                  "load the model. You can inspect the repository content at https://hf.co//models/Foo-7B.\n"
                  "Please pass the argument `trust_remote_code=True` to allow custom code to be run."),
         frame=("transformers/dynamic_module_utils.py", 787, "resolve_trust_remote_code",
                "raise ValueError("), stage="startup"),
    # the same check for another package is the environment's (transformers' import-time
    # dependency check), not the model's: the counter-case of tf_require_version
    dict(family="tf_require_version_other_package", library="transformers", category="other",
         source="transformers 5.19.0 dependency_versions_check.py -> utils/versions.py:44 (require_version_core)",
         exception="ImportError",
         message=("tokenizers>=0.21,<0.22 is required for a normal functioning of this module, "
                  "but found tokenizers==0.20.3."),
         frame=("transformers/utils/versions.py", 44, "_compare_versions", "raise ImportError("),
         stage="startup"),
    dict(family="tf_cannot_import_config", library="transformers", category="model.unsupported",
         source="sglang 0.5.23 srt/configs/__init__.py (from transformers import ...Config) under an older transformers",
         exception="ImportError",
         message=("cannot import name 'Qwen3NextConfig' from 'transformers' "
                  "(/usr/local/lib/python3.12/dist-packages/transformers/__init__.py)"),
         frame=("sglang/srt/configs/qwen3_next.py", 20, "<module>",
                "from transformers import Qwen3NextConfig"), stage="startup"),
    dict(family="tf_rope_scaling_old", library="transformers", category="model.unsupported",
         source="transformers 4.40-4.42 models/llama/configuration_llama.py LlamaConfig._rope_scaling_validation",
         exception="ValueError",
         message=("`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got "
                  "{'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, "
                  "'original_max_position_embeddings': 8192, 'rope_type': 'llama3'}"),
         frame=("transformers/models/llama/configuration_llama.py", 182, "_rope_scaling_validation",
                "raise ValueError("), stage="startup"),
    dict(family="tokenizers_untagged_enum", library="tokenizers", category="model.load",
         source="tokenizers (Rust serde) Tokenizer.from_file: a tokenizer.json newer than the installed tokenizers",
         exception="Exception",
         message="data did not match any variant of untagged enum ModelWrapper at line 757443 column 3",
         frame=("transformers/tokenization_utils_fast.py", 115, "__init__",
                "fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)"), stage="startup"),
    # ---- SGLang's own model registry / multimodal processors (0.4.3.post2-0.5.23)
    dict(family="sglang_arch_not_supported", library="sglang", category="model.unsupported",
         source="sglang 0.4.3.post2-0.5.23 srt/models/registry.py _raise_for_unsupported",
         exception="ValueError",
         message=("Model architectures ['FooForCausalLM'] are not supported for now. Supported "
                  "architectures: dict_keys(['LlamaForCausalLM', 'Qwen2ForCausalLM'])"),
         frame=("sglang/srt/models/registry.py", 64, "_raise_for_unsupported", "raise ValueError("),
         stage="startup"),
    dict(family="sglang_no_mm_processor", library="sglang", category="model.unsupported",
         source="sglang 0.4.6.post5-0.5.23 srt/managers/multimodal_processor.py get_mm_processor",
         exception="ValueError",
         message=("No processor registered for architecture: ['FooVLForConditionalGeneration'].\n"
                  "Registered architectures: ['Qwen2VLForConditionalGeneration', 'LlavaForConditionalGeneration']"),
         frame=("sglang/srt/managers/multimodal_processor.py", 86, "get_mm_processor", "raise ValueError("),
         stage="startup"),
    dict(family="sglang_arch_not_supported_line", library="sglang", category="model.unsupported",
         source="sglang 0.4.3.post2-0.5.23 srt/models/registry.py _raise_for_unsupported, its words without 'ValueError: '",
         exception=None, message=None,
         logged=("[2026-01-01 00:00:30 TP0] Model architectures ['FooForCausalLM'] are not supported for now. "
                 "Supported architectures: dict_keys(['LlamaForCausalLM'])\n"),
         frame=None, stage="startup"),
    # ---- torch / CUDA: the GPU's architecture
    dict(family="cuda_no_kernel_image", library="torch", category="kernel.unsupported_hw",
         source="c10/cuda/CUDAException.cpp (cudaErrorNoKernelImageForDevice) through torch",
         exception="RuntimeError",
         message="CUDA error: no kernel image is available for execution on the device" + CUDA_TAIL,
         frame=("sglang/srt/layers/layernorm.py", 80, "forward_cuda", "out = rmsnorm(x, self.weight.data, self.variance_epsilon)"),
         stage="kernel"),
    dict(family="torch_capability_warning", library="torch", category="kernel.unsupported_hw",
         source="torch 2.13 cuda/__init__.py:427 _check_cubins (warnings.warn)",
         exception=None, message=None,
         key='NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.',
         logged=(SITE + "torch/cuda/__init__.py:287: UserWarning: \n"
                 "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
                 "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.\n"
                 "If you want to use the NVIDIA GeForce RTX 5090 GPU with PyTorch, please check the instructions at https://pytorch.org/get-started/locally/\n\n"
                 "  warnings.warn(\n"),
         frame=None, stage="startup"),
    dict(family="torch_no_cuda_build", library="torch", category="kernel.unsupported_hw",
         source="torch 2.13 cuda/__init__.py:522 _lazy_init",
         exception="AssertionError", message="Torch not compiled with CUDA enabled",
         frame=("torch/cuda/__init__.py", 522, "_lazy_init",
                'raise AssertionError("Torch not compiled with CUDA enabled")'), stage="startup"),
    dict(family="flash_attn_ampere", library="flash-attn", category="kernel.unsupported_hw",
         source="flash-attention csrc/flash_attn/flash_api.cpp mha_fwd (TORCH_CHECK is_sm8x || is_sm90)",
         exception="RuntimeError", message="FlashAttention only supports Ampere GPUs or newer.",
         frame=("flash_attn/flash_attn_interface.py", 51, "_flash_attn_forward",
                "out, q, k, v, out_padded, softmax_lse, S_dmask, rng_state = flash_attn_cuda.fwd("),
         stage="kernel"),
    dict(family="triton_fp8_dtype", library="triton", category="kernel.unsupported_hw",
         source="triton 3.9 language/core.py:599 dtype.to_ir",
         exception="ValueError",
         message=("type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
                  "('fp8e4b15', 'fp8e5')"),
         frame=("triton/language/core.py", 599, "to_ir",
                "raise ValueError(f'type {self} not supported in this architecture. '"), stage="kernel"),
    dict(family="quant_min_capability", library="sglang / vllm", category="kernel.unsupported_hw",
         source="sglang 0.4.3.post2-0.5.23 srt/model_loader/loader.py _get_quantization_config (vLLM's model_loader/utils.py the same)",
         exception="ValueError",
         message=("The quantization method fp8 is not supported for the current GPU. Minimum "
                  "capability: 80. Current capability: 75."),
         frame=("sglang/srt/model_loader/loader.py", 262, "_get_quantization_config", "raise ValueError("),
         stage="startup"),
    dict(family="hip_invalid_device_function", library="torch (ROCm)", category="kernel.unsupported_hw",
         source="c10/hip (hipErrorInvalidDeviceFunction): the ROCm twin of no kernel image",
         exception="RuntimeError",
         message="HIP error: invalid device function\nHIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing AMD_SERIALIZE_KERNEL=3\n",
         frame=("sglang/srt/layers/layernorm.py", 80, "forward_hip", "out = rmsnorm(x, self.weight.data, self.variance_epsilon)"),
         stage="kernel"),
    dict(family="torch_no_driver", library="torch", category="kernel.unsupported_hw",
         source="ATen cuda/detail/CUDAHooks.cpp (cudaErrorNoDevice / InsufficientDriver) through torch._C._cuda_init",
         exception="RuntimeError",
         message=("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
                  "installed a driver from http://www.nvidia.com/Download/index.aspx"),
         frame=("torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()"), stage="startup"),
    dict(family="torch_no_cuda_gpus", library="torch", category="kernel.unsupported_hw",
         source="ATen cuda/detail/CUDAHooks.cpp (cudaErrorNoDevice) through torch._C._cuda_init",
         exception="RuntimeError", message="No CUDA GPUs are available",
         frame=("torch/cuda/__init__.py", 372, "_lazy_init", "torch._C._cuda_init()"), stage="startup"),
    dict(family="torch_scaled_mm_capability", library="torch", category="kernel.unsupported_hw",
         source="ATen native/cuda/Blas.cpp _scaled_mm_out_cuda (TORCH_CHECK _scaled_mm_allowed_device)",
         exception="RuntimeError",
         message=("torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 "
                  "or 8.9, or ROCm MI300+"),
         frame=("sglang/srt/layers/quantization/fp8_utils.py", 600, "apply_fp8_linear",
                "output = torch._scaled_mm("), stage="kernel"),
    dict(family="flashinfer_jit_no_arch", library="flashinfer", category="kernel.unsupported_hw",
         source="flashinfer jit/core.py CompilationContext.get_nvcc_flags_list (supported_major_versions)",
         exception="RuntimeError", message="No supported CUDA architectures found for major versions [10].",
         frame=("flashinfer/jit/core.py", 88, "get_nvcc_flags_list", "raise RuntimeError("), stage="kernel"),
    dict(family="hip_no_binary_for_gpu", library="ROCm HIP runtime", category="kernel.unsupported_hw",
         source="ROCm clr hipamd/src/hip_code_object.cpp (hipErrorNoBinaryForGpu), printed then abort()",
         exception=None, message=None,
         key='"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
         logged='"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)\n',
         frame=None, stage="startup"),
    dict(family="cuda_system_not_ready", library="torch / CUDA runtime", category="kernel.unsupported_hw",
         source="CUDA runtime cudaErrorSystemNotReady (802) through c10's CUDA check",
         exception="RuntimeError",
         message="CUDA error: system not yet initialized" + CUDA_TAIL,
         frame=("torch/cuda/__init__.py", 569, "set_device", "torch._C._cuda_setDevice(device)"), stage="startup"),
    dict(family="cuda_system_not_ready_warning", library="torch", category="kernel.unsupported_hw",
         source="pytorch c10/cuda/CUDAFunctions.cpp device_count_impl, warned by torch.cuda.is_available()",
         exception=None, message=None,
         key='RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized',
         logged=(SITE + "torch/cuda/__init__.py:182: UserWarning: CUDA initialization: Unexpected error from "
                 "cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might "
                 "have already set an error? Error 802: system not yet initialized (Triggered internally at "
                 "/pytorch/c10/cuda/CUDAFunctions.cpp:109.)\n  return torch._C._cuda_getDeviceCount() > 0\n"),
         frame=None, stage="startup"),
    dict(family="hip_no_device", library="torch (ROCm)", category="kernel.unsupported_hw",
         source="ROCm clr hipamd/src/hip_error.cpp hipErrorNoDevice through c10's HIP check",
         exception="RuntimeError", message="HIP error: no ROCm-capable device is detected",
         frame=("torch/cuda/__init__.py", 569, "set_device", "torch._C._cuda_setDevice(device)"), stage="startup"),
    dict(family="libcuda_missing", library="dynamic loader", category="kernel.unsupported_hw",
         source="glibc dlopen of the driver's libcuda.so.1 (sgl_kernel common_ops, triton's driver)",
         exception="ImportError", message="libcuda.so.1: cannot open shared object file: No such file or directory",
         frame=("sgl_kernel/__init__.py", 5, "<module>", "from sgl_kernel import common_ops"), stage="startup"),
    dict(family="torch_capability_too_old", library="torch", category="kernel.unsupported_hw",
         source="torch 2.0-2.5 cuda/__init__.py _check_capability (old_gpu_warn)",
         exception=None, message=None,
         key='    Found GPU0 Tesla K80 which is of cuda capability 3.7.',
         logged=(SITE + "torch/cuda/__init__.py:262: UserWarning: \n    Found GPU0 Tesla K80 which is of cuda "
                 "capability 3.7.\n    PyTorch no longer supports this GPU because it is too old.\n    The minimum "
                 "cuda capability supported by this library is 5.0.\n    \n  warnings.warn(\n"),
         frame=None, stage="startup"),
    dict(family="torch_capability_cc_list", library="torch", category="kernel.unsupported_hw",
         source="torch 2.13 cuda/__init__.py _warn_unsupported_code",
         exception=None, message=None,
         logged=(SITE + "torch/cuda/__init__.py:420: UserWarning: Found GPU0 NVIDIA GeForce RTX 5090 which is of "
                 "compute capability (CC) 12.0.\nThe following list shows the CCs this version of PyTorch was built "
                 "for and the hardware CCs it supports:\n- 9.0 which supports hardware CC >=9.0,<10.0\n"),
         frame=None, stage="startup"),
    # ---- builds: torch cpp_extension, triton's launcher, nvcc
    dict(family="ninja_missing", library="torch", category="kernel.build",
         source="torch 2.13 utils/cpp_extension.py:2562 verify_ninja_availability",
         exception="RuntimeError", message="Ninja is required to load C++ extensions (pip install ninja to get it)",
         frame=("torch/utils/cpp_extension.py", 2562, "verify_ninja_availability", "raise RuntimeError("),
         stage="build"),
    dict(family="cuda_home_unset", library="torch", category="kernel.build",
         source="torch 2.13 utils/cpp_extension.py:3302 _join_cuda_home",
         exception="OSError",
         message="CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
         frame=("torch/utils/cpp_extension.py", 3302, "_join_cuda_home", "raise OSError('CUDA_HOME environment variable is not set. '"),
         stage="build"),
    dict(family="extension_build_failed", library="torch", category="kernel.build",
         source="torch 2.13 utils/cpp_extension.py:2546 _jit_compile -> _run_ninja_build(error_prefix=\"Error building extension '{name}'\")",
         exception="RuntimeError", message="Error building extension 'flashinfer_jit_batch_prefill'",
         frame=("torch/utils/cpp_extension.py", 2546, "_run_ninja_build", "raise RuntimeError(message) from e"),
         stage="build"),
    dict(family="triton_no_c_compiler", library="triton", category="kernel.build",
         source="triton 3.9 runtime/build.py:33 _build",
         exception="RuntimeError",
         message="Failed to find C compiler. Please specify via CC environment variable or set triton.knobs.build.impl.",
         frame=("triton/runtime/build.py", 33, "_build", "raise RuntimeError("), stage="build"),
    dict(family="nvcc_unsupported_arch", library="nvcc", category="kernel.build",
         source="nvcc (a CUDA toolkit older than the GPU) under a JIT build (flashinfer, deep_gemm)",
         exception=None, message=None,
         logged="nvcc fatal   : Unsupported gpu architecture 'compute_120a'\n", frame=None, stage="build"),
    dict(family="ninja_called_process", library="torch", category="kernel.build",
         source="torch 2.13 utils/cpp_extension.py _run_ninja_build (subprocess.run(check=True)): the cut paste's last line",
         exception="subprocess.CalledProcessError",
         message="Command '['ninja', '-v']' returned non-zero exit status 1.",
         frame=("/usr/lib/python3.12/subprocess.py", 571, "run",
                "raise CalledProcessError(retcode, process.args,"), stage="build"),
    dict(family="triton_python_h", library="triton / gcc", category="kernel.build",
         source="triton 3.9 runtime/build.py _build (gcc on the launcher stub; python3-dev missing)",
         exception=None, message=None,
         key="/tmp/tmpq1w2e3r4/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory",
         logged=("/tmp/tmpq1w2e3r4/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory\n"
                 "    6 | #include <Python.h>\n      |          ^~~~~~~~~~\ncompilation terminated.\n"),
         frame=None, stage="build"),
    dict(family="triton_ld_lcuda", library="triton / ld", category="kernel.build",
         source="triton 3.9 runtime/build.py _build (links -lcuda; libcuda.so not on the linker path)",
         exception=None, message=None,
         logged=("/usr/bin/ld: cannot find -lcuda: No such file or directory\n"
                 "collect2: error: ld returned 1 exit status\n"),
         frame=None, stage="build"),
    dict(family="inductor_backend_failed", library="torch", category="kernel.build",
         source="torch 2.13 _dynamo/output_graph.py call_user_compiler (BackendCompilerFailed)",
         exception="torch._dynamo.exc.BackendCompilerFailed",
         message=("backend='inductor' raised:\nCalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpx/main.c', "
                  "'-O3', '-shared', '-fPIC', '-o', '/tmp/tmpx/cuda_utils.so', '-lcuda']' returned non-zero exit status 1."),
         frame=("torch/_dynamo/output_graph.py", 1446, "call_user_compiler",
                "raise BackendCompilerFailed(self.compiler_fn, e) from e"), stage="build"),
    dict(family="triton_helper_cc_failed", library="triton", category="kernel.build",
         source="triton 3.9 runtime/build.py _build (subprocess.check_call of [cc, '{name}.c', '-O3', '-shared', '-fPIC', ...])",
         exception="subprocess.CalledProcessError",
         message=("Command '['/usr/bin/gcc', '/tmp/tmpk3j9x2a1/cuda_utils.c', '-O3', '-shared', '-fPIC', '-Wno-psabi', "
                  "'-o', '/tmp/tmpk3j9x2a1/cuda_utils.cpython-312-x86_64-linux-gnu.so', '-lcuda', "
                  "'-I/usr/include/python3.12']' returned non-zero exit status 1."),
         frame=("triton/runtime/build.py", 83, "_build", "subprocess.check_call(cc_cmd, stdout=subprocess.DEVNULL)"),
         stage="build"),
]

SCHED_HEAD = (f"[{STAMP} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              f'  File "{SITE}sglang/srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
              "    scheduler = Scheduler(server_args, port_args)\n")
KERNEL_HEAD = (f"[{STAMP} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
               f'  File "{SITE}sglang/srt/model_executor/model_runner.py", line 1950, in forward\n'
               "    return self.forward_extend(forward_batch)\n")
BUILD_HEAD = (f"[{STAMP} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              f'  File "{SITE}sglang/srt/layers/attention/flashinfer_backend.py", line 120, in __init__\n'
              "    self.prefill_wrapper = BatchPrefillWithPagedKVCacheWrapper(\n")
HEADS = {"startup": SCHED_HEAD, "kernel": KERNEL_HEAD, "build": BUILD_HEAD}

TORCH_SPAWN = SITE + "torch/multiprocessing/spawn.py"


def exc_line(m: dict) -> str:
    return f"{m['exception']}: {m['message']}".rstrip("\n") + "\n"


def frame_text(m: dict) -> str:
    path, line, func, code = m["frame"]
    return f'  File "{SITE}{path}", line {line}, in {func}\n    {code}\n'


def traceback_text(m: dict) -> str:
    return HEADS[m["stage"]] + frame_text(m) + exc_line(m)


def wrapped(m: dict) -> str:
    if m["stage"] == "kernel":
        # cuda_graph_runner.py (0.4.x-0.5.23): raise Exception(f"Capture cuda graph failed: {e}\n" ...)
        inner = ("Traceback (most recent call last):\n"
                 f'  File "{SITE}sglang/srt/model_executor/cuda_graph_runner.py", line 380, in __init__\n'
                 "    self.capture()\n" + frame_text(m) + exc_line(m))
        return (inner + "\nDuring handling of the above exception, another exception occurred:\n\n"
                + SCHED_HEAD
                + f'  File "{SITE}sglang/srt/model_executor/cuda_graph_runner.py", line 382, in __init__\n'
                "    raise Exception(\n"
                f"Exception: Capture cuda graph failed: {m['message'].splitlines()[0]}\n"
                "Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
                "3. disable torch compile by not using --enable-torch-compile\n"
                "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
                "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n\n")
    # torch/multiprocessing/spawn.py ProcessContext.join: the child's traceback inside the parent's
    return ("Traceback (most recent call last):\n"
            '  File "/workspace/rollout.py", line 41, in <module>\n'
            "    mp.spawn(run_engine, args=(cfg,), nprocs=2)\n"
            f'  File "{TORCH_SPAWN}", line 215, in join\n'
            "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
            "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
            "-- Process 0 terminated with the following error:\n"
            "Traceback (most recent call last):\n"
            f'  File "{TORCH_SPAWN}", line 90, in _wrap\n'
            "    fn(i, *args)\n"
            '  File "/workspace/rollout.py", line 22, in run_engine\n'
            "    engine = sgl.Engine(**cfg)\n" + frame_text(m) + exc_line(m))


def render(shape: str, m: dict) -> str | None:
    if m["message"] is None:  # a logged-only message
        if shape == "logged":
            return m["logged"]
        if shape in PREFIXES:
            return "".join(PREFIXES[shape] + ln + "\n" for ln in m["logged"].splitlines())
        if shape == "unindented":
            return "".join(ln.lstrip() + "\n" for ln in m["logged"].splitlines())
        if shape == "bare":  # the one line that names it (``key``; else the first), alone
            return (m.get("key") or next(ln for ln in m["logged"].splitlines() if ln.strip())) + "\n"
        return None
    if shape == "bare":
        return exc_line(m)
    if shape == "traceback":
        return traceback_text(m) + "\n"
    if shape == "tail":
        return frame_text(m) + exc_line(m)
    if shape == "wrapped":
        return wrapped(m)
    if shape in PREFIXES:
        return "".join(PREFIXES[shape] + ln + "\n" for ln in traceback_text(m).splitlines())
    if shape == "unindented":  # a paste that lost the frames' indentation (a web page's copy)
        return "".join(ln.lstrip() + "\n" for ln in traceback_text(m).splitlines())
    if shape == "ray_task":
        # ray/exceptions.py RayTaskError: the remote traceback under "ray::Actor.method()" (an
        # SGLang engine inside a Ray actor: verl, OpenRLHF), re-raised as RayTaskError(Type)
        return (f"ray.exceptions.RayTaskError({m['exception'].rsplit('.', 1)[-1]}): ray::WorkerDict.init_model() "
                "(pid=52310, ip=10.0.0.3, actor_id=3f2a, repr=<WorkerDict object at 0x7f>)\n"
                + "".join(ln + "\n" for ln in traceback_text(m).splitlines()[1:]))
    if shape == "logged":
        return None
    raise ValueError(shape)


def run(shapes=SHAPES, family: str | None = None, verbose: bool = False, extra_rules=()) -> dict:
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(extra_rules, builtin=True, user=False)
    per_shape = {s: {"cases": 0, "right": 0} for s in shapes}
    per_family: dict[str, dict] = {}
    misses = []
    for m in MESSAGES:
        if family and m["family"] != family:
            continue
        fam = per_family.setdefault(m["family"], {"cases": 0, "right": 0, "category": m["category"]})
        for shape in shapes:
            text = render(shape, m)
            if text is None:
                continue
            pipe = StreamPipeline(ruleset, remediate=False)
            events = pipe.feed(text.encode()) + pipe.finish()
            got = [(ev["category"], ev.get("rule")) for ev in events if ev["event"] == "incident"]
            right = m["category"] in [c for c, _ in got]
            per_shape[shape]["cases"] += 1
            fam["cases"] += 1
            if right:
                per_shape[shape]["right"] += 1
                fam["right"] += 1
            else:
                misses.append((m["family"], shape, m["category"], got[-1] if got else ("no incident", "-")))
            if verbose:
                mark = "ok  " if right else "MISS"
                print(f"{mark} {m['family']:30s} {shape:9s} want {m['category']:22s} got {got}")
    return {"shapes": per_shape, "families": per_family,
            "misses": [dict(family=f, shape=s, want=w, got=g[0], rule=g[1]) for f, s, w, g in misses]}


WANTED = ("model.unsupported", "kernel.unsupported_hw", "kernel.build")


def inventory_cases():
    """(label, category, message dict) for every inventoried site (libraries and SGLang) whose
    right answer is one of WANTED and which its message names."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import inventory_external as ext
    import inventory_failures as invf
    from sglang_doctor.diagnose.rules_engine import RuleSet

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = invf.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    class_by_phase = invf.class_phase_categories()
    disp_sglang = invf.Dispositions.load()
    disp_ext = invf.Dispositions.load(ext.DISPOSITIONS)
    paths = sorted((ROOT / "data" / "inventory").glob("external-*-*.json"))
    paths = [p for p in paths if p.name != "external-measured.json"]
    paths += sorted((ROOT / "data" / "inventory").glob("sglang-*.json"))
    seen = set()
    for path in paths:
        inv = json.loads(path.read_text(encoding="utf-8"))
        external = path.name.startswith("external-")
        disp = disp_ext if external else disp_sglang
        for site in invf.iter_sites(inv):
            if site["disposition"] in ext.WHERE_CLASSES or site["disposition"].split(":")[0] not in ("rule", "class"):
                continue
            phase = disp.phase(site)
            want = invf.right_answer(site, disp, categories, phase, class_by_phase)
            if want not in WANTED:
                continue
            if site["kind"].startswith("log"):
                continue
            message = invf.fillings(site.get("full") or site["template"])[0]
            if not message.strip():
                continue
            key = (want, message)
            if key in seen:
                continue
            seen.add(key)
            exc = {"assert": "AssertionError"}.get(site["kind"], site["exception"] or "RuntimeError")
            top = "" if external else "sglang/"
            yield (f"{path.stem}:{site['file']}:{site['line']}", want, dict(
                family=f"{path.stem}:{site['file'].rsplit('/', 1)[-1]}:{site['line']}", category=want,
                exception=exc, message=message,
                frame=(top + site["file"], site["line"], site["function"].rsplit(".", 1)[-1],
                       "assert ..." if site["kind"] == "assert" else "raise ..."),
                stage="startup"))


def run_inventory(shapes=("bare", "tail", "wrapped", "prefixed"), verbose: bool = False) -> dict:
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(builtin=True, user=False)
    per = {s: {"cases": 0, "right": 0} for s in shapes}
    misses = Counter()
    for label, want, m in inventory_cases():
        for shape in shapes:
            if shape == "bare" and "\n" not in m["message"].strip():
                continue  # the one-line bare shape is inventory_external's and site_shapes' own
            text = render(shape, m)
            pipe = StreamPipeline(ruleset, remediate=False)
            events = pipe.feed(text.encode()) + pipe.finish()
            got = [(ev["category"], ev.get("rule")) for ev in events if ev["event"] == "incident"]
            per[shape]["cases"] += 1
            if want in [c for c, _ in got]:
                per[shape]["right"] += 1
                continue
            last = got[-1] if got else ("no incident", "-")
            misses[(want, shape, last[0], last[1])] += 1
            if verbose:
                print(f"MISS {shape:9s} want {want:22s} got {last[0]} [{last[1]}] {label} {m['message'][:100]!r}")
    return {"shapes": per, "misses": [dict(want=w, shape=s, got=g, rule=r, n=n)
                                      for (w, s, g, r), n in misses.most_common()]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verbose", action="store_true", help="one line per message and shape")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--family", help="one message family only")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--rules", action="append", default=[], type=Path,
                    help="an extra rule directory (as the CLI's --rules), e.g. to measure rules before they join rules/")
    ap.add_argument("--inventory", action="store_true",
                    help="the inventoried sites of the libraries and SGLang instead of the hand list")
    args = ap.parse_args(argv)
    if args.inventory:
        res = run_inventory(verbose=args.verbose)
        if args.json:
            print(json.dumps(res, indent=1, sort_keys=True))
            return 0
        for shape, r in res["shapes"].items():
            print(f"  {shape:9s} {r['right']:5d}/{r['cases']:<5d}")
        for x in res["misses"]:
            print(f"  {x['n']:4d} {x['shape']:9s} {x['want']} -> {x['got']} [{x['rule']}]")
        return 0
    if args.family and args.family not in {m["family"] for m in MESSAGES}:
        print(f"support_shapes: no message family {args.family!r}", file=sys.stderr)
        return 2
    res = run(tuple(args.shapes), args.family, args.verbose, tuple(args.rules))
    if args.json:
        print(json.dumps(res, indent=1, sort_keys=True))
        return 0
    total = sum(s["cases"] for s in res["shapes"].values())
    right = sum(s["right"] for s in res["shapes"].values())
    print(f"support_shapes: {right}/{total} right")
    for shape, s in res["shapes"].items():
        print(f"  {shape:9s} {s['right']:3d}/{s['cases']:<3d}")
    wrong = Counter((x["want"], x["got"]) for x in res["misses"])
    for (want, got), n in wrong.most_common():
        print(f"  miss {want} -> {got}: {n}")
    for x in res["misses"]:
        print(f"    {x['family']:30s} {x['shape']:9s} -> {x['got']} [{x['rule']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
