"""What a fragment's own failure says about whether the server was still starting.

A fragment with no ready line, no launch header and no start-up milestone does not say
whether the server had been ready (``Incident.after_ready_known`` is False).  The failure
itself often does:

- ``frames``: a frame of a start-up constructor (``in_startup_constructor``), a frame whose
  source line builds one (``scheduler = Scheduler(``), a launcher's frame waiting for the
  server to come up (``_wait_and_warmup``, ``_wait_for_scheduler_ready``, a wrapper's
  ``_wait_server_healthy``), or a frame that runs at import time
  (``<module>``, a class body, a ``def`` / ``class`` / ``import`` statement): code that runs
  before the server serves anything.  This is as good as a milestone: the incident is known
  to be before ready.
- ``words``: the failure's message names something a launch meets at start-up or in its
  first forward pass, not while serving a request: an unsupported GPU architecture or compute
  capability, a missing attribute / name / module (a version mismatch between packages),
  an out-of-memory while allocating.  This is weaker: it only stops a rule that *assumes*
  the server had been ready (``after_ready: true`` on a fragment) from naming the failure a
  crash while serving.
"""

from __future__ import annotations

import re

from sglang_doctor.incidents.tracebacks import in_startup_constructor, is_sglang_file
from sglang_doctor.model import Frame, Incident

# a source line that builds a start-up object: ``scheduler = Scheduler(`` in run_scheduler_process
_BUILDS = re.compile(r"(?:^|[=\s(])(?:Scheduler|TpModelWorker\w*|ModelRunner|ModelTpServer|DataParallelController)\(")
# functions only a launch runs, in the step that names them (distributed set-up, model loading,
# memory pools, CUDA graph capture): a traceback through one of them was not serving
_STARTUP_STEPS = frozenset({"init_torch_distributed", "initialize_model_parallel", "init_distributed_environment",
                            "load_model", "_initialize_model", "get_model", "init_memory_pool", "profile_max_num_token",
                            "init_cuda_graphs", "init_device_graphs", "capture_one_batch_size",
                            # 0.5.9 cuda_graph_runner / 0.5.23 runner/decode_ and prefill_cuda_graph_runner:
                            # the capture loop SGLang runs once from the runner's constructor (not the
                            # vision encoders' _capture_graph, which captures on a first request)
                            "_capture_one_stream", "_capture_graph_size",
                            # 0.5.14-0.5.23 runner/*_cuda_graph_runner.py capture_one_shape (one size
                            # under capture); the piecewise (prefill) graphs' compile and warm-up before
                            # their capture, once from the runner's constructor: 0.5.5
                            # warmup_and_capture, 0.5.9 warmup_torch_compile, 0.5.10-0.5.13
                            # warmup_compile, 0.5.14+ tc_piecewise backend _run_compile_pass, and
                            # model_runner's init_piecewise_cuda_graphs (0.5.6-0.5.13)
                            "capture_one_shape", "warmup_and_capture", "warmup_torch_compile", "warmup_compile",
                            "_run_compile_pass", "init_piecewise_cuda_graphs",
                            # the engine's launcher (0.4.x-0.5.23 entrypoints/engine.py): it starts the
                            # scheduler / detokenizer processes and returns once they report ready, so
                            # what raises inside it (its own "Initialization failed. Please see the error
                            # messages above.", a dead rank's EOFError) is a launch that never came up;
                            # an offline sgl.Engine(...) call or a wrapper's (verl, slime) passes it
                            "_launch_subprocesses", "_launch_scheduler_processes"})
# the modules that build and check the launch arguments (ServerArgs and its groups, the
# launcher that calls them): they run once, before any worker starts
# (and the diffusion server's own: sglang/multimodal_gen/runtime/server_args.py prepare_server_args,
# called from multimodal_gen/runtime/launch_server.py's module body)
_ARGS_MODULES = ("/srt/server_args.py", "/srt/arg_groups/", "/srt/server_args_config_parser.py", "/sglang/launch_server.py",
                 "/multimodal_gen/runtime/server_args.py", "/multimodal_gen/runtime/launch_server.py")
# a launcher waiting for the server to come up: what raises inside it is the server dying (or
# not answering) before it was ready.  SGLang's own: http_server._wait_and_warmup (0.4.x to
# 0.5.2x), engine._wait_for_scheduler_ready (0.5.2x), utils.wait_for_server /
# wait_for_http_ready, test_utils._wait_for_server_health; and the same wait in the programs
# that launch SGLang (slime's SGLangEngine._wait_server_healthy, wait_server_ready, ...).
# Only waits on the server, its HTTP endpoint or its schedulers: a queue's or a buffer's
# wait_until_ready (shm_broadcast) is no launch.
_LAUNCH_WAIT = re.compile(
    r"^_*(?:a?wait(?:_for|_until)?_(?:server|http|scheduler|engine)s?(?:_\w*)?|wait_and_warmup)$")
# a source line Python runs when it imports a module or defines a class
_IMPORT_TIME = re.compile(r"^\s*(?:def |async def |class |import |from \S+ import |@)")
# exception types that name code that does not fit together (a package version mismatch):
# they show up when the code first runs, at start-up or in the first forward pass
_MISMATCH_TYPES = frozenset({"AttributeError", "NameError", "ImportError", "ModuleNotFoundError"})
_STARTUP_WORDS = re.compile(
    r"unsupported (?:gpu |cuda )?architecture|compute capability|not supported on (?:this|your) (?:gpu|device|platform)|"
    r"no kernel image is available|\bsm_?\d{2,3}a?\b|requires (?:sm|compute)|is not supported on|"
    r"out of memory|outofmemoryerror|allocation failed with oom|"
    # SGLang's launcher on a scheduler that did not report ready (engine.py _launch_subprocesses /
    # _wait_for_scheduler_ready) or on a failed warm-up request (http_server.py _wait_and_warmup):
    # both before the ready line
    r"Initialization failed\. (?:Please see the error messages above|warmup error)",
    re.IGNORECASE)


def _import_time(f: Frame) -> bool:
    name = f.function.strip()
    if name == "<module>":
        return True
    if name[:1].isupper() and name.isidentifier():
        return True  # a class body: "in MultiLayerEagleWorker"
    return bool(f.source) and _IMPORT_TIME.match(f.source) is not None


def frames_reason(frames: list[Frame]) -> str | None:
    """Why the frames say the server was starting, or None."""
    if in_startup_constructor(frames):
        return "its traceback runs through a start-up constructor (Scheduler / TpModelWorker / ModelRunner)"
    for f in frames:
        path = f.file.replace("\\", "/")
        if is_sglang_file(path) and any(part in path for part in _ARGS_MODULES):
            return f"a frame checks the launch arguments ({f.function} in {path.rsplit('/', 1)[-1]}), before any worker runs"
        if is_sglang_file(path) and f.function.rsplit(".", 1)[-1] in _STARTUP_STEPS:
            return f"a frame is in a start-up step ({f.function})"
        if f.source and _BUILDS.search(f.source):
            return f"a frame builds a start-up object ({f.source.strip()[:60]})"
        if _LAUNCH_WAIT.match(f.function.rsplit(".", 1)[-1].strip()):
            return (f"a frame waits for the server to come up ({f.function} in {path.rsplit('/', 1)[-1]}): "
                    "it failed before the server was ready")
    if frames and _import_time(frames[-1]):
        f = frames[-1]
        return f"its deepest frame runs at import time ({f.function} in {f.file.rsplit('/', 1)[-1]})"
    return None


def words_reason(incident: Incident) -> str | None:
    """Why the failure's words point to start-up or a first forward pass, or None."""
    exc = incident.exception
    if exc is not None:
        last = exc.type.rsplit(".", 1)[-1]
        if last in _MISMATCH_TYPES and "'NoneType' object" not in exc.message:
            # (an attribute of None is a state bug, which serving meets as well)
            return f"a {last} names code that does not fit together, which shows when it first runs"
        m = _STARTUP_WORDS.search(f"{exc.type}: {exc.message}")
        if m:
            return f"its message names {m.group(0)!r}, which a launch meets at start-up or in its first forward pass"
    for line in incident.signals:
        m = _STARTUP_WORDS.search(line.text)
        if m:
            return f"a failure line names {m.group(0)!r}, which a launch meets at start-up"
    return None
