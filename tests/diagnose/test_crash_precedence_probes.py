"""Crash precedence probes: SGLang's (and torch's, CUDA's, triton's, transformers') own messages
for a category, pasted the ways people paste them, must not come out runtime.crash (or
unknown) when the text holds the true category's evidence.

Each probe is one failure: the frames SGLang raises it from and its exception text (verbatim from
the source named in its comment).  Each shape is one way it arrives: the bare exception, the
whole traceback, in a "Scheduler hit an exception" block, under ``[rank0]:`` / docker / ray
prefixes, cut to its last frames, with torch's CUDA-DSA trailer, and with the main process's
echo of the child's death (``Rank 0 scheduler is dead`` + its EOFError traceback).  At the end
of session 24 (main 26f2064) 36 of the 229 texts expected to pass were missed: 9 answered
runtime.crash (8 by class.runtime.after_ready on an assumed ready line, 1 by
runtime.crash.illegal_memory_access), 27 left unknown; all were CUDA graph capture failures.
"""

from __future__ import annotations

import pytest

SG = "/usr/local/lib/python3.12/dist-packages/"
START = [("sglang/srt/managers/scheduler.py", "run_scheduler_process", "scheduler = Scheduler("),
         ("sglang/srt/managers/scheduler.py", "__init__", "self.init_model_worker()"),
         ("sglang/srt/managers/tp_worker.py", "__init__", "self.model_runner = ModelRunner("),
         ("sglang/srt/model_executor/model_runner.py", "__init__", "self.initialize(min_per_gpu_memory)")]
SERVE = [("sglang/srt/managers/scheduler.py", "run_scheduler_process", "scheduler.event_loop_overlap()"),
         ("sglang/srt/managers/scheduler.py", "event_loop_overlap", "batch_result = self.run_batch(batch)"),
         ("sglang/srt/managers/tp_worker.py", "forward_batch_generation", "logits_output = self.model_runner.forward(")]
READY = "[2026-12-05 10:02:00] The server is fired up and ready to roll!\n"
# torch's trailer on every CUDA error it raises (c10/cuda/CUDAException.cpp, torch >= 2.1)
DSA = ("CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
       "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
       "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
# SGLang 0.5.9 cuda_graph_runner.py CUDA_GRAPH_CAPTURE_FAILED_MSG
CAPTURE_ADVICE = ("Possible solutions:\n1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                  "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
                  "3. disable torch compile by not using --enable-torch-compile\n"
                  "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
                  "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ")
# SGLang 0.5.9 model_runner.py init_device_graphs / cuda_graph_runner.py capture's log lines
CAPTURE_BEGIN = ("[2026-12-05 10:01:10 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9.87 GB\n"
                 "[2026-12-05 10:01:10 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32]\n")

MR = "sglang/srt/model_executor/model_runner.py"
CGR = "sglang/srt/model_executor/cuda_graph_runner.py"
CAPTURE = [(MR, "initialize", "self.init_device_graphs()"),
           (MR, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)"),
           (CGR, "__init__", "self.capture()")]
IN_CAPTURE = CAPTURE + [(CGR, "capture", ") = self.capture_one_batch_size(bs, forward)"),
                        (CGR, "capture_one_batch_size", "with torch.cuda.graph(")]
CAPTURED_FORWARD = IN_CAPTURE + [(CGR, "run_once", "logits_output_or_pp_proxy_tensors = forward("),
                                 ("sglang/srt/models/deepseek_v2.py", "forward", "hidden_states = self.model(")]
POOL = [(MR, "initialize", "self.init_memory_pool(min_per_gpu_memory)"),
        ("sglang/srt/model_executor/model_runner_kv_cache_mixin.py", "init_memory_pool", "raise RuntimeError(")]
LOAD = [(MR, "initialize", "self.load_model()"),
        (MR, "load_model", "self.model = self.loader.load_model("),
        ("sglang/srt/model_loader/loader.py", "load_model", "model = _initialize_model("),
        ("sglang/srt/model_loader/loader.py", "_initialize_model", "model_class, _ = get_model_architecture(model_config)"),
        ("sglang/srt/model_loader/utils.py", "get_model_architecture", "return ModelRegistry.resolve_model_cls(architectures)"),
        ("sglang/srt/models/registry.py", "resolve_model_cls", "return self._raise_for_unsupported(architectures)"),
        ("sglang/srt/models/registry.py", "_raise_for_unsupported", "raise ValueError(")]
FWD = [(MR, "forward", "output = self._forward_raw("),
       (MR, "forward_decode", "return self.model.forward("),
       ("sglang/srt/models/llama.py", "forward", "hidden_states = self.model(")]
DIST = [(MR, "init_torch_distributed", "initialize_model_parallel("),
        ("sglang/srt/distributed/parallel_state.py", "initialize_model_parallel", "_TP = init_model_parallel_group("),
        ("sglang/srt/distributed/parallel_state.py", "__init__", "self.pynccl_comm = PyNcclCommunicator("),
        ("sglang/srt/distributed/device_communicators/pynccl.py", "__init__", "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("),
        ("sglang/srt/distributed/device_communicators/pynccl_wrapper.py", "ncclCommInitRank", "self.NCCL_CHECK("),
        ("sglang/srt/distributed/device_communicators/pynccl_wrapper.py", "NCCL_CHECK", 'raise RuntimeError(f"NCCL error: {error_str}")')]
ARGS = [("sglang/launch_server.py", "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
        ("sglang/srt/server_args.py", "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
        ("sglang/srt/server_args.py", "__post_init__", "self._handle_attention_backend_compatibility()"),
        ("sglang/srt/server_args.py", "_handle_attention_backend_compatibility", "raise ValueError(")]
CFG = [(MR, "__init__", "self.model_config = ModelConfig.from_server_args("),
       ("sglang/srt/configs/model_config.py", "__init__", "self.hf_config = get_config("),
       ("sglang/srt/utils/hf_transformers_utils.py", "get_config", "config = AutoConfig.from_pretrained("),
       ("transformers/models/auto/configuration_auto.py", "from_pretrained", "raise ValueError(")]

ALL = ("bare", "rank0_bare", "frames", "scheduler", "rank0", "echo", "cut", "docker", "ray")
WITH_FRAMES = ALL[2:]
BARE = ("bare", "rank0_bare")


def probe(name, cat, exc, frames=(), *, dsa=False, serving=False, pre="", shapes=ALL):
    return dict(name=name, cat=cat, exc=exc, frames=list(frames), dsa=dsa, serving=serving, pre=pre, shapes=shapes)


PROBES = [
    # -- cuda_graph ------------------------------------------------------------------------
    # SGLang's capture wrapper (0.5.9 cuda_graph_runner.py: "Capture cuda graph failed: {e}\n{...MSG}")
    probe("capture_failed_wrapper", "cuda_graph", "Exception: Capture cuda graph failed: CUDA error: operation not "
          "permitted when stream is capturing\n" + CAPTURE_ADVICE, CAPTURE),
    probe("capture_wrapper_illegal_access", "cuda_graph", "Exception: Capture cuda graph failed: CUDA error: an illegal "
          "memory access was encountered\n" + DSA + "\n" + CAPTURE_ADVICE, CAPTURE),
    # torch's CUDAGraph.capture_end (torch/cuda/graphs.py) reporting CUDA's
    # cudaErrorStreamCaptureInvalidated
    probe("torch_graph_capture_end", "cuda_graph", "RuntimeError: CUDA error: operation failed due to a previous error during capture",
          IN_CAPTURE + [("torch/cuda/graphs.py", "__exit__", "self.cuda_graph.capture_end()"),
                        ("torch/cuda/graphs.py", "capture_end", "super().capture_end()")], dsa=True),
    probe("stream_capturing_in_kernel", "cuda_graph", "RuntimeError: CUDA error: operation not permitted when stream is capturing",
          CAPTURED_FORWARD, dsa=True),
    # CUDA's stream-capture errors (cudaGetErrorString), alone or in any frames
    probe("capture_invalidated", "cuda_graph", "RuntimeError: CUDA error: operation failed due to a previous error during capture", dsa=True),
    probe("capture_legacy_stream", "cuda_graph", "RuntimeError: CUDA error: operation would make the legacy stream depend on a "
          "capturing blocking stream", dsa=True),
    probe("capture_unjoined", "cuda_graph", "RuntimeError: CUDA error: capturing stream has unjoined work", dsa=True),
    probe("capture_not_permitted", "cuda_graph", "RuntimeError: CUDA error: operation not permitted when stream is capturing", dsa=True),
    # torch's CUDA generator refusing inside capture (aten CUDAGeneratorImpl.cpp)
    probe("capture_generator_seed", "cuda_graph", "RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph "
          "capture. If you need this call to be captured, please file an issue. Current cudaStreamCaptureStatus: "
          "cudaStreamCaptureStatusActive"),
    # an asynchronous CUDA fault in the forward a graph runner was capturing (its nested run_once)
    probe("illegal_access_in_captured_forward", "cuda_graph", "RuntimeError: CUDA error: an illegal memory access was encountered",
          CAPTURED_FORWARD, dsa=True, shapes=WITH_FRAMES),
    # -- kernel.unsupported_hw ----------------------------------------------------------------
    # torch's cudaErrorNoKernelImageForDevice (a binary without this GPU's architecture)
    probe("no_kernel_image_load", "kernel.unsupported_hw", "RuntimeError: CUDA error: no kernel image is available for execution on the device",
          LOAD[:3], dsa=True),
    probe("no_kernel_image_accelerator_error", "kernel.unsupported_hw",
          "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device", IN_CAPTURE, dsa=True),
    probe("no_kernel_image_serving", "kernel.unsupported_hw", "RuntimeError: CUDA error: no kernel image is available for execution on the device",
          FWD + [("sglang/srt/layers/layernorm.py", "forward_cuda", "out = rmsnorm(x, self.weight.data, self.variance_epsilon)"),
                 ("sgl_kernel/elementwise.py", "rmsnorm", "torch.ops.sgl_kernel.rmsnorm.default(out, input, weight, eps, enable_pdl)")],
          dsa=True, serving=True),
    # triton refuses fp8e4nv below sm89 (triton language/semantic.py)
    probe("triton_fp8e4nv", "kernel.unsupported_hw", "ValueError: type fp8e4nv not supported in this architecture. The supported fp8 "
          "dtypes are ('fp8e4b15', 'fp8e5')",
          FWD + [("sglang/srt/layers/quantization/fp8_kernel.py", "per_token_group_quant_fp8", "_per_token_group_quant_fp8[(M,)]("),
                 ("triton/runtime/jit.py", "run", "kernel = self.compile(src, target=target, options=options.__dict__)"),
                 ("triton/compiler/compiler.py", "compile", "module = src.make_ir(options, codegen_fns, module_map, context)")]),
    # flash-attn's own check
    probe("flash_attn_ampere", "kernel.unsupported_hw", "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
          FWD + [("sglang/srt/layers/attention/flashattention_backend.py", "forward_decode", "result = flash_attn_with_kvcache("),
                 ("sgl_kernel/flash_attn.py", "flash_attn_with_kvcache", "out, softmax_lse, *rest = torch.ops.sgl_kernel.fwd.default(")],
          serving=True),
    # SGLang 0.5.9 server_args.py: a Blackwell-only backend
    probe("trtllm_mla_blackwell", "kernel.unsupported_hw", "ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs "
          "(SM100/SM12x). Please use a different backend.", ARGS),
    # triton runtime/errors.py OutOfResources
    probe("triton_out_of_resources", "kernel.unsupported_hw", "triton.runtime.errors.OutOfResources: out of resource: shared memory, "
          "Required: 147456, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
          FWD + [("sglang/srt/layers/attention/triton_ops/extend_attention.py", "extend_attention_fwd", "_fwd_kernel[grid]("),
                 ("triton/compiler/compiler.py", "_init_handles", 'raise OutOfResources(self.metadata.shared, max_shared, "shared memory")')],
          serving=True),
    # torch's "no accelerator" errors (torch/cuda/__init__.py _lazy_init)
    probe("no_cuda_gpus", "kernel.unsupported_hw", "RuntimeError: No CUDA GPUs are available", shapes=BARE),
    probe("no_nvidia_driver", "kernel.unsupported_hw", "RuntimeError: Found no NVIDIA driver on your system. Please check that you "
          "have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx", shapes=BARE),
    # -- memory.kv_pool (0.5.9 model_runner_kv_cache_mixin.py init_memory_pool) ------------------
    probe("not_enough_memory", "memory.kv_pool", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
          "Current value: self.server_args.mem_fraction_static=0.88", POOL),
    # -- model.unsupported ----------------------------------------------------------------------
    # SGLang 0.5.9 models/registry.py _raise_for_unsupported
    probe("arch_not_supported", "model.unsupported", "ValueError: Model architectures ['Qwen3_5MoeForConditionalGeneration'] are not "
          "supported for now. Supported architectures: dict_keys(['LlamaForCausalLM', 'Qwen2ForCausalLM'])", LOAD),
    # transformers models/auto/configuration_auto.py
    probe("transformers_model_type", "model.unsupported", "ValueError: The checkpoint you are trying to load has model type "
          "`qwen3_5_moe` but Transformers does not recognize this architecture. This could be because of an issue with the "
          "checkpoint, or because your version of Transformers is out of date.", CFG),
    # -- nccl -----------------------------------------------------------------------------------
    # SGLang pynccl_wrapper.py NCCL_CHECK
    probe("pynccl_system_error", "nccl", "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", DIST),
    probe("pynccl_cuda_error", "nccl", "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", shapes=BARE),
    # torch ProcessGroupNCCL
    probe("torch_nccl_backend_error", "nccl", "torch.distributed.DistBackendError: NCCL error in: "
          "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
          "details), NCCL version 2.21.5\nncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
          "device error. \nLast error:\nsocketStartConnect: Connect to 10.0.0.2<43567> failed : Software caused connection abort",
          DIST[:2] + [("torch/distributed/distributed_c10d.py", "barrier", "work = group.barrier(opts=opts)")]),
    probe("nccl_unique_id_store", "nccl", "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
          "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer",
          shapes=BARE),
    # -- args.invalid (0.5.9 server_args.py) ----------------------------------------------------
    probe("server_args_refusal", "args.invalid", "ValueError: TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, "
          "fp4_e2m1, bf16, or auto.", ARGS),
    # -- other (0.5.9 DeepEP's import check: a missing package) -----------------------------------
    probe("deepep_missing", "other", "ImportError: DeepEP is not installed. Please install DeepEP package from "
          "https://github.com/deepseek-ai/deepep.", shapes=BARE),
    # -- runtime.crash: what stays a crash -----------------------------------------------------
    probe("illegal_access_serving", "runtime.crash", "RuntimeError: CUDA error: an illegal memory access was encountered", FWD,
          dsa=True, serving=True, shapes=("bare", "rank0_bare", "frames", "scheduler", "rank0", "docker", "ray")),
    probe("keyerror_serving", "runtime.crash", "KeyError: 17",
          [("sglang/srt/managers/schedule_batch.py", "prepare_for_decode", "self.req_pool_indices[i]")], serving=True,
          shapes=("frames", "scheduler", "rank0", "docker", "ray")),
    # the kernel's own bounds check (class.runtime.device_assert: a crash, also before ready)
    probe("device_assert_bare", "runtime.crash", "RuntimeError: CUDA error: device-side assert triggered", dsa=True, shapes=BARE),
]

# still missed: a bare CUDA fault after the capture's own log lines (no frame says capture; the
# "[rank0]:" variant is read as the crash while serving, the plain one is left unknown)
KNOWN_MISSES = {("illegal_access_after_capture_begin", "bare"), ("illegal_access_after_capture_begin", "rank0_bare"),
                ("misaligned_after_capture_begin", "bare")}
PROBES += [
    probe("illegal_access_after_capture_begin", "cuda_graph", "RuntimeError: CUDA error: an illegal memory access was encountered",
          dsa=True, pre=CAPTURE_BEGIN, shapes=BARE),
    probe("misaligned_after_capture_begin", "cuda_graph", "RuntimeError: CUDA error: misaligned address", dsa=True,
          pre=CAPTURE_BEGIN, shapes=("bare",)),
]


def _frames(frames) -> str:
    return "".join(f'  File "{SG}{path}", line {100 + i * 37}, in {func}\n    {code}\n'
                   for i, (path, func, code) in enumerate(frames))


def render(p: dict, shape: str) -> str:
    exc = p["exc"].rstrip("\n") + "\n" + (DSA if p["dsa"] else "")
    head = READY if p["serving"] else ""
    tb = "Traceback (most recent call last):\n" + _frames((SERVE if p["serving"] else START) + p["frames"]) + exc
    lines = tb.splitlines()
    if shape == "bare":
        return p["pre"] + exc
    if shape == "rank0_bare":
        return p["pre"] + "".join(f"[rank0]: {line}\n" for line in exc.splitlines())
    if shape == "frames":
        return head + tb
    if shape == "scheduler":
        return head + "[2026-12-05 10:05:01 TP0] Scheduler hit an exception: " + tb
    if shape == "rank0":
        return head + "".join(f"[rank0]: {line}\n" for line in lines)
    if shape == "docker":
        return head + "".join(f"sglang-1  | {line}\n" for line in lines)
    if shape == "ray":
        return head + "".join(f"(SGLangEngine pid=4242) {line}\n" for line in lines)
    if shape == "cut":  # the last two frames and the exception, the header cut
        return "".join(line + "\n" for line in lines[-(4 + exc.count("\n")):])
    if shape == "echo":  # the engine's echo of the child's death (0.5.9 engine.py _wait_for_scheduler_ready)
        return (head + "[2026-12-05 10:05:01 TP0] Scheduler hit an exception: " + tb
                + "[2026-12-05 10:05:02] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
                  "[2026-12-05 10:05:02] Exit code: -3\n"
                  "Traceback (most recent call last):\n"
                  f'  File "{SG}sglang/launch_server.py", line 29, in <module>\n    server = launch_server(server_args)\n'
                  f'  File "{SG}sglang/srt/entrypoints/engine.py", line 897, in _wait_for_scheduler_ready\n'
                  "    data = scheduler_pipe_readers[i].recv()\nEOFError\n")
    raise ValueError(shape)


CASES = [pytest.param(p, shape, id=f"{p['name']}-{shape}",
                      marks=[pytest.mark.xfail(strict=True, reason="no frame says capture")] if (p["name"], shape) in KNOWN_MISSES else [])
         for p in PROBES for shape in p["shapes"]]


@pytest.mark.parametrize("p,shape", CASES)
def test_probe_names_its_category(pack, p, shape):
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack, remediate=False)
    incidents = [e for e in pipe.feed(render(p, shape).encode()) + pipe.finish() if e["event"] == "incident"]
    assert incidents, "no incident"
    first = incidents[0]
    assert first["category"] == p["cat"], (first["category"], first["rule"])


def test_a_watchdog_line_reporting_a_cuda_fault_stays_the_crash(pack):
    # torch's ProcessGroupNCCL watchdog reports the CUDA fault it met (ProcessGroupNCCL.cpp
    # "Process group watchdog thread terminated with exception: ..."): the line names who noticed
    # the fault, not where it was raised, so class.nccl.signal's words do not replace the crash's
    # own rule (only a class rule that reads the frames does: class.cuda_graph.in_capture)
    from sglang_doctor.pipeline import StreamPipeline

    text = ("[rank3]:[E416 13:29:57.332110411 ProcessGroupNCCL.cpp:2057] [PG ID 2 PG GUID 3 Rank 3] Process group "
            "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n" + DSA)
    pipe = StreamPipeline(pack, remediate=False)
    first = next(e for e in pipe.feed(text.encode()) + pipe.finish() if e["event"] == "incident")
    assert (first["rule"], first["category"]) == ("runtime.crash.illegal_memory_access", "runtime.crash")
