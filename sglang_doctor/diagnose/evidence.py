"""Evidence for the best guess, when the line that names a failure's cause is not in the text.

Each collector looks at one kind of thing the text does hold and returns small, named pieces
of evidence: a category, a weight (how far that alone points there) and why.  ``weigh`` adds
the weights up per category; the guess is the category the text's own pieces weigh most for
(the supporting pieces, ``Evidence.support``: the phase's prior and words of the lines around a
failure, only break a tie between them, or decide when the text holds none), its confidence grows with
the agreeing evidence and shrinks with the evidence for other categories, and never passes
``MAX_CONFIDENCE``.  A piece with a negative weight argues against a category (the launch
was still starting, so it was not a crash while serving); it lowers, it never vetoes.  When
the log does not say whether the server had been ready, the confidence is lowered
(``UNKNOWN_CONTEXT``), never the category changed.

The collectors, by name (the weights are stated where each piece is made):

- ``signal:NAME``: a failure line that is not a traceback (NCCL WARN, the OOM killer,
  ``Killed``, a segfault, a CUDA error, an exit status, a ray/k8s wrapper's message).
- ``sigquit:running`` / ``sigquit:launch``: which of SGLang's SIGQUIT handlers logged the
  child's failure (tokenizer_manager.py's running-phase handler after the launch finished;
  engine.py's launch-phase handler while it was starting).
- ``deepest_frame``: the deepest SGLang frame (module and function) looked up in ``WHERE``,
  a table of where SGLang does what; ``outer_frame`` for a frame further out.
- ``library_frame``: the deepest frame below SGLang's own in a library it calls into
  (``LIBRARIES``: torch.distributed, flashinfer's JIT, triton, huggingface_hub, ...).
- ``native_frame``: for a native crash, the Python stack faulthandler printed for the thread
  that crashed (``Current thread ...``): its first SGLang frame in ``WHERE``, or a library.
- ``faulthandler_frames``: faulthandler's own frame shape (``File "...", line N in f``, no comma) or
  thread header with no "Fatal Python error" line in the text: the dump of a fatal signal.
  A fatal-signal dump also turns the frames' "inside a kernel" readings into a crash there
  (``fatal_dump``).
- ``cut_call``: the deepest frame's source line was cut inside the name of the call it
  makes (``self.init_cu``), and that prefix names one place of ``WHERE``.
- ``header``: the process SGLang names in ``<Process> hit an exception`` when it is one that
  works while serving (TokenizerManager, DetokenizerManager, the overlap forward thread).
- ``thread``: the thread the traceback came from (``Exception in thread ... (f):``).
- ``exit_status``: -9 / 137 (SIGKILL) with no Python error.
- ``prior:PHASE``: the phase the text shows (the ready line; the last start-up progress line
  or milestone before the failure; the launch header with no milestone; a deepest frame in
  CUDA graph capture, ``PHASE_PLACES``, or a kernel frame under capture's frames,
  ``CAPTURE_KERNEL_PLACE``; frames of a start-up constructor), read through what
  usually fails in it: one piece per category in proportion to the labelled failures of that
  phase (``phase_prior.py``; the counts come from the tuned corpus parts' labels).
- ``after_header``: the failure (or a text's end) came after the launch's ``server_args`` line and
  before any start-up step: SGLang builds the model's configuration and tokenizer next
  (``AFTER_HEADER``: support pieces for model.unsupported, then model.load).
- ``progress``: the last progress line before the failure shows a JIT kernel build.
- ``weights_read``: the last step line is the checkpoint bar finished (every shard read): the loaded
  weights were being post-processed (quantization repacking, moving to the GPU), a support piece
  for memory.cuda_oom.
- ``pool_allocated``: the last milestone is the KV pool allocated: the pool's sizing ("Not enough
  memory") is behind, a piece against memory.kv_pool; what allocates next (attention workspaces,
  CUDA graphs) runs out of GPU memory, a support piece for memory.cuda_oom.
- ``weights_reading``: the last step line shows the checkpoint being read (a shard bar, the
  fp8 config's notice): the architecture lookup had passed, a piece against model.unsupported.
- ``capability_check``: a cut traceback's deepest line asserts or raises on a device / platform query
  (``is_sm100_supported()``, ``_platform_supports_*()``, get_device's "No accelerator"): the check refused
  this machine, kernel.unsupported_hw.
- ``sync_point``: a cut traceback's deepest line waits for the device (``.cpu()``, ``.item()``, a
  synchronize), where an earlier kernel's CUDA error is reported: runtime.crash (cuda_graph under capture).
- ``argparse_usage``: a text with no failure ends in argparse's usage block, printed only before the
  parser's "error:" line: args.invalid.
- ``cut_type``: the exception line was cut inside its type name (``torch.O``) and every name
  it can complete to names one category (``TYPE_NAMES``).
- ``multi_node``: the launch runs over several nodes (the dump's ``nnodes``, a rank past one node's
  GPUs in SGLang's log prefix): a support piece for nccl, the network between the nodes.
- ``low_memory``: the last milestone, or the CUDA graph capture bar after it, shows almost no free GPU
  memory (also for a text with no failure, fallback.no_incident: what the step after it would have had).
- ``pool_headroom``: the dump's ``mem_fraction_static`` and the free memory before the weights leave almost
  nothing after the pools, and the text stops past them with no free figure of its own (``pool_headroom``).
- ``hardware:setting``: the launch sets an attention backend or KV-cache dtype whose kernels need another
  GPU generation than the one the log names (``SETTING_SM``), before ready.
- ``serving:pool_full``: the scheduler's last batch lines before the failure show its KV / state
  pool (nearly) full, or requests retracted (incidents/serving.py).
- ``hardware:NAME``: what the text says about the machine (diagnose/hardware.py: the GPU's model,
  SM and memory, the GPU count, the platform, the links), agreeing with the failure's own pieces: a
  GPU SGLang's kernels leave out with a kernel's piece (``capability``), torch's warning that it has
  no kernels for the GPU (``torch_arch``), weights larger than the GPUs (``weights``), several GPUs
  on PCIe with a distributed piece (``pcie``).  Weights and conditions: ``from_hardware``.
- ``words:NAME``: a word of ``WORD_SOURCES`` (an architecture, a platform, NCCL, the KV transport,
  an argument, the transformers version, the hub, OOM, the KV pool, CUDA graphs, a kernel
  build, a quantization method, a port) in the failure's own message (full weight), in the
  incident's other lines (half) or, for a fragment with no failure, in its last lines (half;
  a ``server_args`` dump is left out: it names every feature, used or not); the hub's names
  count only in the failure's own message (``OWN_MESSAGE_ONLY``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from sglang_doctor.diagnose import hardware, phase_prior, raise_sites
from sglang_doctor.incidents import milestones, progress
from sglang_doctor.incidents import serving
from sglang_doctor.incidents.milestones import last_before, phase_after
from sglang_doctor.incidents.tracebacks import is_sglang_file, parse_frame, sglang_frames
from sglang_doctor.model import Diagnosis, Frame, Incident

MAX_CONFIDENCE = 0.5
UNKNOWN_CONTEXT = 0.85  # multiplier when the log does not say whether the server had been ready
AGREE_BONUS = 0.05  # per further piece of evidence for the same category


@dataclass(frozen=True)
class Evidence:
    name: str
    category: str
    weight: float
    why: str
    # a piece that only supports: the phase read through the prior (what usually fails there,
    # counted from labelled logs) or a word of the lines around a failure (half weight).  It says
    # nothing of this failure itself, so it only breaks a tie between the categories the text's own
    # pieces name, or decides when the text has none (``weigh``)
    support: bool = False

    def to_json(self) -> dict:
        return {"name": self.name, "category": self.category, "weight": self.weight, "why": self.why}


# The modules that capture CUDA graphs from 0.5.14 (under srt/model_executor/); before it,
# srt/model_executor/cuda_graph_runner.py
CAPTURE_MODULES_0514 = ("runner/decode_cuda_graph_runner", "runner/prefill_cuda_graph_runner",
                        "runner/base_cuda_graph_runner", "runner_backend/")


# The graph runners' functions that run while serving, not while capturing: replaying a captured
# graph for a running batch and getting its inputs, metadata and outputs ready (0.5.9
# cuda_graph_runner.py can_run / replay_prepare / replay; 0.5.23 runner/decode_cuda_graph_runner.py
# can_run_graph / load_batch / _copy_replay_inputs / _init_replay_attn_metadata* /
# _process_output_after_replay, runner/prefill_cuda_graph_runner.py can_replay_locally and the
# *_for_replay steps, runner_backend/*.py replay / replay_session).  A traceback (or a faulthandler
# dump) stopped in one of them crashed in a batch's forward pass, not in capture.
GRAPH_REPLAY_FUNCTIONS = ("replay", "replay_prepare", "replay_session", "can_run", "can_run_graph", "load_batch",
                          "can_replay_locally", "_copy_replay_inputs", "_init_replay_attn_metadata",
                          "_init_replay_attn_metadata_from_view", "_process_output_after_replay",
                          "_prepare_forward_metadata_for_replay", "_prepare_chunked_prefix_replay")
_REPLAY_WHY = ("it stopped replaying a captured CUDA graph, the forward pass of a running batch (the graphs "
               "were captured already)")

# Where a traceback was when its text stopped: (path part after ".../sglang/", function
# names or None for any, category, why).  Tried from the deepest SGLang frame outwards;
# the first that fits names the guess.  Serving loops come last: a failure inside a model's
# forward is only a serving crash when nothing deeper says more.
WHERE: tuple[tuple[str, tuple[str, ...] | None, str, str], ...] = (
    ("srt/server_args", None, "args.invalid", "it stopped in server_args (argument checks)"),
    ("sglang/api.py", ("Runtime", "__init__"), "args.invalid",
     "it stopped in sglang.Runtime(...), which builds the server's arguments from the caller's keywords"),
    # (replaying a captured graph is serving, before the modules' capture entries below)
    ("srt/model_executor/cuda_graph_runner", GRAPH_REPLAY_FUNCTIONS, "runtime.crash", _REPLAY_WHY),
    *(("srt/model_executor/" + part, GRAPH_REPLAY_FUNCTIONS, "runtime.crash", _REPLAY_WHY)
      for part in CAPTURE_MODULES_0514),
    ("srt/model_executor/cuda_graph_runner", None, "cuda_graph", "it stopped while capturing CUDA graphs"),
    # from 0.5.14 capture lives in model_executor/runner/ (DecodeCudaGraphRunner, the prefill
    # graph runner and their base) and the graph back ends of model_executor/runner_backend/
    # (remedy/catalogs/frame-index.json: cuda_graph_runner.py is 0.4.0-0.5.13 only)
    *(("srt/model_executor/" + part, None, "cuda_graph", "it stopped while capturing CUDA graphs")
      for part in CAPTURE_MODULES_0514),
    ("", ("init_cuda_graphs", "init_device_graphs", "capture", "capture_one_batch_size"), "cuda_graph",
     "it stopped while capturing CUDA graphs"),
    # distributed/utils.py's divide -> ensure_divisibility ("{} is not divisible by {}") is the check that the
    # tensor-parallel size splits a layer evenly (heads, experts, vocabulary, hidden size: every parallel
    # linear, embedding and attention layer calls it with the TP size), not a collective: --tp-size
    # against the model (0.4.x-0.5.23 srt/distributed/utils.py, from vLLM's)
    ("srt/distributed/utils", ("ensure_divisibility", "divide"), "args.invalid",
     "it stopped checking that the tensor-parallel size divides a layer's size (heads, experts, hidden size)"),
    ("srt/distributed/", None, "nccl", "it stopped in torch distributed / NCCL set-up"),
    ("", ("init_torch_distributed", "initialize_model_parallel", "init_distributed_environment"), "nccl",
     "it stopped in torch distributed / NCCL set-up"),
    ("srt/mem_cache/", None, "memory.kv_pool", "it stopped in SGLang's memory pools"),
    ("", ("init_memory_pool", "profile_max_num_token"), "memory.kv_pool", "it stopped sizing the memory pools"),
    ("srt/jit_kernel/", None, "kernel.build", "it stopped in a JIT kernel build"),
    ("srt/layers/attention/", None, "kernel.unsupported_hw", "it stopped inside an attention kernel"),
    # RadixAttention.forward (srt/layers/radix_attention.py, every release since 0.2) only hands the
    # layer's q/k/v to the attention backend (forward_batch.attn_backend.forward, from 0.5.2x
    # get_attn_backend().forward): a traceback whose text stops there was entering the backend's kernels
    ("srt/layers/radix_attention", ("forward",), "kernel.unsupported_hw",
     "it stopped in RadixAttention.forward, which hands the layer to the attention backend's kernels"),
    ("srt/layers/quantization/", None, "kernel.unsupported_hw", "it stopped inside a quantization kernel"),
    ("srt/layers/moe/", None, "kernel.unsupported_hw", "it stopped inside a MoE kernel"),
    # building the model class from its config comes before any weight is read: SGLang's
    # get_model_architecture raises "Model architectures [...] are not supported for now" there,
    # and the model's __init__ refuses a variant (a quantization, a head layout) it has no code for
    # (0.1.x-0.2.x: ModelRunner.load_model -> get_model_cls_by_arch_name, which raises "Unsupported
    # architectures: ..." when no model class has the config's architecture)
    ("", ("_initialize_model", "get_model_architecture", "get_architecture_class_name", "resolve_transformers_arch",
          "get_model_cls_by_arch_name"),
     "model.unsupported", "it stopped building the model class from its configuration, before any weight was read "
     "(the architecture lookup and the model's constructor): most often an architecture or variant this release "
     "does not support"),
    # from 0.4.6 every non-draft ModelRunner first resolves the architecture for the expert
    # location table, before load_model: compute_initial_expert_location_metadata -> init_trivial
    # -> _init_common -> ModelConfigForExpertLocation.from_model_config -> get_model_architecture
    # (srt/managers/expert_location.py, srt/eplb/expert_location.py from 0.5)
    ("expert_location", ("compute_initial_expert_location_metadata", "init_trivial", "_init_common",
                         "from_model_config"),
     "model.unsupported", "it stopped building the expert location table, which looks the model's architecture up "
     "first (before any weight is read): most often an architecture this release does not support"),
    ("srt/model_loader/", None, "model.load", "it stopped loading the model"),
    ("srt/models/", ("load_weights",), "model.load", "it stopped in the model's load_weights"),
    ("", ("load_model", "get_model"), "model.load", "it stopped loading the model"),
    # the speculative-decoding draft worker's constructor checks that the draft model, the
    # algorithm and the attention backend it inherits fit together (eagle_worker*.py __init__)
    ("", ("maybe_init_draft_worker", "init_draft_worker"), "args.invalid",
     "it stopped building the speculative-decoding draft worker, whose constructor checks that the draft model, "
     "the algorithm and the attention backend it inherits fit together (launch flags)"),
    ("srt/configs/", None, "model.load", "it stopped reading the model's configuration"),
    ("srt/models/", ("forward",), "kernel.unsupported_hw",
     "it stopped inside a model's forward pass, where kernels for this GPU run"),
    ("srt/managers/tokenizer_manager", None, "runtime.crash", "it stopped in the tokenizer manager while serving"),
    ("srt/managers/detokenizer_manager", None, "runtime.crash", "it stopped in the detokenizer while serving"),
    ("", ("event_loop_normal", "event_loop_overlap", "event_loop_pp", "run_batch", "process_batch_result",
          "forward_thread_func", "forward_thread_func_", "get_next_batch_to_run", "handle_loop",
          # the serving loop of the releases before the Scheduler (0.1.x-0.3.x ModelRpcServer /
          # ModelTpServer: exposed_step -> forward_step -> get_new_prefill_batch / forward_*_batch;
          # the controller's loop_for_forward) and the batch builders of later ones
          "exposed_step", "forward_step", "loop_for_forward", "get_new_prefill_batch", "get_new_batch_prefill",
          "forward_prefill_batch", "forward_decode_batch", "forward_fill_batch", "update_running_batch"),
     "runtime.crash", "it stopped in the scheduler's serving loop"),
)

# A failure line that is not a traceback: (category, weight, why)
SIGNALS: dict[str, tuple[str, float, str]] = {
    "oom_killer": ("memory.host_oom", 0.6, "the kernel's OOM killer killed the process"),
    "killed": ("memory.host_oom", 0.5, "the process was killed (SIGKILL) with no Python error: most often the "
               "kernel's OOM killer"),
    "nccl_warn": ("nccl", 0.5, "NCCL warned before the failure"),
    "nccl_error": ("nccl", 0.5, "NCCL reported an error"),
    "nccl_watchdog": ("nccl", 0.5, "torch's NCCL watchdog caught a failed or stuck collective"),
    "c10d_peer_gone": ("nccl", 0.4, "a peer's TCPStore connection broke: another rank or node went away first"),
    "cuda_error": ("runtime.crash", 0.35, "a CUDA error"),
    "watchdog_timeout": ("runtime.crash", 0.35, "SGLang's scheduler watchdog fired: a forward pass hung"),
    "segfault": ("runtime.crash", 0.3, "a native crash (segmentation fault)"),
    "aborted": ("runtime.crash", 0.3, "the process aborted (SIGABRT): a C++ assertion or an uncaught C++ exception "
                "(torch, NCCL, a CUDA library)"),
    "cpp_terminate": ("runtime.crash", 0.3, "a C++ exception terminated the process"),
    "faulthandler": ("runtime.crash", 0.3, "Python's faulthandler reported a fatal error"),
    # (the exit signals below count as they are only when the text gives no exit status: a status
    # of SIGKILL adds ``from_exit_status``'s piece, any other status drops them, see from_signals)
    "scheduler_died": ("memory.host_oom", 0.4, "a scheduler died during initialization with no Python error"),
    "scheduler_dead": ("memory.host_oom", 0.2, "a scheduler process died and the text shows no Python error of it "
                       "and no exit status (a kill from outside leaves none; the status would tell)"),
    "exit_code": ("memory.host_oom", 0.3, "a process exited with no Python error"),
    # 0.5.x's "Scheduler or DataParallelController PID terminated with CODE" (a node that runs
    # only schedulers): the status it captures decides (from_exit_status); this piece counts
    # only for a SIGKILL status, as the other exit signals
    "scheduler_terminated": ("memory.host_oom", 0.3, "a scheduler process terminated with no Python error of it"),
    # a shell's report of a death by a signal of the process's own native code (bash / zsh:
    # "Illegal instruction (core dumped)", "Floating point exception"); SIGILL: see from_signals
    "signal_death": ("runtime.crash", 0.3, "the process died by a signal its own native code raised (a floating-point "
                     "exception, a trap, a bad system call)"),
    "subprocess_crashed": ("memory.host_oom", 0.3, "a subprocess died with no Python error"),
    "transfer_error": ("nccl", 0.35, "a KV-transfer / RDMA / NVSHMEM error"),
    "port_in_use": ("network.port", 0.5, "a port was already in use"),
    "kv_transfer_failed": ("nccl", 0.45, "the KV transfer between the prefill and decode servers failed"),
    "cuda_alloc_oom": ("memory.cuda_oom", 0.5, "torch's caching allocator ran out of GPU memory"),
}
# the failure lines that outweigh where the frames were (they name the failing part itself)
STRONG_SIGNALS = frozenset({"nccl_warn", "nccl_error", "nccl_watchdog", "oom_killer", "killed", "cuda_alloc_oom"})
# What a process's exit status says: multiprocessing's ``exitcode`` (SGLang's "Exit code: N",
# "(exit code: N)") is -N for a death by signal N, a shell's status is 128+N.  SIGKILL (-9 / 137)
# comes from outside, most often the kernel's OOM killer; SIGABRT (-6 / 134) is the process's own
# abort (an uncaught C++ exception, a failed assertion, NCCL's abort) and SIGSEGV (-11 / 139)
# its own native crash: their cause was printed before the status.  Another negative status is
# a death by another signal; a positive one the process's own exit (a Python error, sys.exit).
_EXIT_KILLED = ("-9", "137")
_EXIT_ABORTED = ("-6", "134")
_EXIT_NATIVE = ("-11", "139")


def exit_meaning(code: str | None) -> str | None:
    """``killed`` / ``aborted`` / ``native`` / ``signal`` / ``exited`` for an exit status (see
    above), None when the text gives none (unknown: it says nothing either way)."""
    if code is None:
        return None
    if code in _EXIT_KILLED:
        return "killed"
    if code in _EXIT_ABORTED:
        return "aborted"
    if code in _EXIT_NATIVE:
        return "native"
    return "signal" if code.startswith("-") else "exited"


_EXIT_SIGNALS = frozenset({"exit_code", "subprocess_crashed", "scheduler_died", "scheduler_dead", "scheduler_terminated"})
# SIGILL as a shell reports it: the CPU met an instruction it does not have (a wheel or JIT build
# for a newer instruction set, AVX-512 / AMX, than this host's CPU)
_ILLEGAL_INSTRUCTION = re.compile(r"(?i)illegal (?:hardware )?instruction")
_CALL = re.compile(r"(?:^|[\s.=(])([A-Za-z_]\w*)\(")
_CUT_NAME = re.compile(r"(?:^|[\s.=(])([A-Za-z_]\w{3,})$")  # the name a cut source line ends inside
# wrappers that ran SGLang and said what happened to it (ray, kubernetes), on any line
_WRAPPERS: tuple[tuple[str, str, float, str], ...] = (
    ("OOMKilled", "memory.host_oom", 0.5, "kubernetes says the container was OOMKilled (its memory limit)"),
    ("running low on memory", "memory.host_oom", 0.5, "ray's memory monitor killed a worker: the node ran low on memory"),
    ("ray.exceptions.OutOfMemoryError", "memory.host_oom", 0.5, "ray's memory monitor killed a worker (host RAM)"),
    ("SYSTEM_ERROR", "memory.host_oom", 0.2, "ray says the worker process died (SYSTEM_ERROR): killed from outside, "
     "most often for memory"),
)


def _short(f: Frame) -> str:
    path = f.file.replace("\\", "/")
    return path.split("/sglang/", 1)[-1] if "/sglang/" in path else path.rsplit("/", 1)[-1]


def _called(source: str | None) -> str | None:
    """The function a frame's source line calls (``scheduler.event_loop_normal()``)."""
    if not source:
        return None
    m = _CALL.search(source)
    return m.group(1) if m else None


def _fits(path: str, function: str, part: str, functions: tuple[str, ...] | None) -> bool:
    if part and part not in path:
        return False
    if functions is None:
        return True
    name = function.rsplit(".", 1)[-1]
    return name in functions or (name.startswith("event_loop") and "event_loop_normal" in functions)


# -- the collectors ------------------------------------------------------------------------


# A peer's TCPStore connection that broke after the launcher's notice that a scheduler died
# (engine.py "Rank N scheduler is dead." / "... died during initialization"): torch.distributed's
# TCPStore is served from rank 0's process, and every other rank's blocking store read
# (recvValue / recvBytes) fails with "Connection reset by peer" the moment a process on the other
# end is gone.  After the death notice that line is the death's echo on the surviving ranks, not a
# broken network: it names no cause, and its 'c10d' is no word of the failure.
_DEATH_NOTICES = ("scheduler_dead", "scheduler_died")


def echo_of_death(inc: Incident) -> set[int]:
    """The line numbers of the incident's c10d peer-gone lines that come after a scheduler
    death notice of the same incident (see above)."""
    death, out = None, set()
    for line, name in zip(inc.signals, inc.signal_names):
        if name in _DEATH_NOTICES and death is None:
            death = line.number
        elif name == "c10d_peer_gone" and death is not None and line.number > death:
            out.add(line.number)
    return out


def from_signals(inc: Incident) -> list[Evidence]:
    out: list[Evidence] = []
    names = inc.signal_names
    echoes = echo_of_death(inc)
    if echoes and all(line.number in echoes for line, name in zip(inc.signals, names) if name == "c10d_peer_gone"):
        names = [name for name in names if name != "c10d_peer_gone"]
    if "segfault" in names and any("==== backtrace" in line.text or "ucs" in line.text.lower().split()
                                   for line in inc.signals):
        out.append(Evidence("signal:segfault_ucx", "nccl", 0.4,
                            "a segmentation fault reported by UCX's handler (\"==== backtrace\"): UCX carries the "
                            "communication libraries (NCCL over IB, KV transfer)"))
    seen = set()
    code = _exit_code(inc)
    for name in names:
        if name in SIGNALS and name not in seen:
            seen.add(name)
            category, weight, why = SIGNALS[name]
            if name == "segfault" and out:
                continue  # the UCX reading above says more
            if name in _EXIT_SIGNALS and code is not None and code not in _EXIT_KILLED:
                continue  # an exit status of its own (1, 255): a Python error elsewhere, not a kill
            if name == "signal_death" and any(_ILLEGAL_INSTRUCTION.search(line.text) for line, n
                                              in zip(inc.signals, inc.signal_names) if n == name):
                out.append(Evidence("signal:illegal_instruction", "kernel.unsupported_hw", 0.35,
                                    "the process died of an illegal instruction (SIGILL): a binary built for an "
                                    "instruction set this CPU does not have"))
                continue
            out.append(Evidence(f"signal:{name}", category, weight, why))
    if "sigquit_running" in names:
        # tokenizer_manager.py SignalHandler.running_phase_sigquit_handler ("SIGQUIT received.
        # signum=..."): installed by auto_create_handle_loop once the server is up
        out.append(Evidence("sigquit:running", "runtime.crash", 0.35,
                            "SGLang's running-phase SIGQUIT handler logged it: the launch had finished when a child "
                            "failed"))
    elif "sigquit_launch" in names and not inc.after_ready:
        # engine.py launch_phase_sigquit_handler: the child failed while the launch was under way
        out.append(Evidence("sigquit:launch", "runtime.crash", -0.2,
                            "SGLang's launch-phase sigquit handler logged it: the server was still starting"))
    text = " ".join(line.text for line in inc.lines[-40:])
    for literal, category, weight, why in _WRAPPERS:
        if literal in text:
            out.append(Evidence("wrapper", category, weight, why))
            break
    return out


def _cut_function(inc: Incident, ours: list[Frame]) -> str | None:
    """The deepest frame's whole function name when its ``File ...`` line was cut inside it
    (``in _in``) and the frame above it shows the call (``model = _initialize_model(``)."""
    if not inc.truncated or len(ours) < 2 or ours[-1] is not inc.frames[-1] or ours[-1].source:
        return None
    prefix = ours[-1].function.rsplit(".", 1)[-1]
    called = _called(ours[-2].source)
    if called and prefix and prefix.isidentifier() and called.startswith(prefix) and called != prefix:
        return called
    return None


# Places of ``WHERE`` that say which start-up step was under way rather than what failed in it:
# CUDA graph capture runs every attention, MoE and quantization kernel for the first time, so a
# traceback cut inside cuda_graph_runner is as often a kernel with no code for this GPU or a
# kernel build as a capture failure (of the labelled tracebacks cut there, none was a capture
# failure: scripts/guess_prior.py).  Such a frame gives the phase, read through the prior.
PHASE_PLACES = {"cuda_graph": "startup.cuda_graph"}
# The same holds one frame further in: a traceback cut inside a kernel place (an attention, MoE or
# quantization kernel, a model's forward) whose outer SGLang frames are CUDA graph capture
# (cuda_graph_runner's capture -> capture_one_batch_size -> run_once -> the model's forward -> the
# backend) stopped in a kernel that capture was running for the first time: the place says which step
# (startup.cuda_graph, read through the prior), not that the kernel has no code for this GPU.  Of the
# no-cause tracebacks of the tuned parts cut in a kernel under capture frames (dev/089, field/028,
# field9/002), two were cuda_graph and one kernel.build; the kernel places with no capture frame above
# them keep their weight.
CAPTURE_KERNEL_PLACE = "capture_kernel"


# ServerArgs' construction itself (server_args.py: from_cli_args -> the dataclass __init__ ->
# __post_init__), as the deepest SGLang frame of a traceback cut there: from 0.5 __post_init__ does
# more than check arguments (get_device_memory_capacity probes the GPU, _handle_model_specific_
# adjustments reads the model's config through transformers, the _handle_*_backend steps import
# and choose kernels), so the place says "while the launch's settings were being resolved", not
# "an invalid argument".  A named check below it (_handle_kv4_compatibility, ...) keeps the full
# weight (args.invalid).  Tuned parts: the 3 no-cause tracebacks cut at the construction were other,
# kernel.unsupported_hw and model.unsupported; the 2 with a named check deeper were args.invalid.
# Such a place names the phase (startup.args, before any start-up milestone), read through the
# prior like PHASE_PLACES, and no category of its own.
ARGS_CONSTRUCTION = ("from_cli_args", "prepare_server_args", "__post_init__", "__init__")
ARGS_CONSTRUCTION_PLACE = "args_construction"


def _importing(frames: list[Frame], deepest: Frame) -> bool:
    """Whether ``deepest`` (an SGLang frame) runs a module's body because it was being
    imported: its function is ``<module>`` and the frame that called it is an ``import`` /
    ``from ... import`` line or importlib's machinery (not runpy starting a script)."""
    if deepest.function != "<module>" or deepest not in frames:
        return False
    i = frames.index(deepest)
    if i == 0:
        return False
    caller = frames[i - 1]
    src = (caller.source or "").strip()
    return src.startswith(("from ", "import ")) or "importlib" in caller.file


# A KV / state pool allocating its buffers on the device (srt/mem_cache/memory_pool.py: every pool
# class's ``_create_buffers``, 0.4.1-0.5.23; ``_create_buffers_normal`` 0.5.16+; the mamba state pool's
# ``_init_mamba_pool`` 0.5.3.post3+; the compressed K pool's ``_init_kpool_compress_tail_buffers``
# 0.5.20+; remedy/catalogs/frame-index.json), all called while the pools are built at start-up (not
# ``_alloc_ping_pong_buffer``: a request's mamba track slots while serving, whose failure is its "Not
# enough space for mamba ping pong idx" assert, corpus/late/047).  Their work is
# ``torch.zeros`` / ``torch.empty`` of the size the pool's sizing chose; that sizing, and SGLang's "Not
# enough memory ... --mem-fraction-static" (memory.kv_pool, CONTRACT: "SGLang's own pool sizing
# failed"), ran before the pool was built (0.4.x-0.5.9 model_runner.py ``init_memory_pool`` ->
# ``profile_max_num_token``, 0.5.2x mem_cache/kv_cache_configurator.py).  What else these functions
# raise is a configuration check (a KV layout, a dtype, a ring length: ``raise ValueError`` /
# ``RuntimeError``, ``assert``), which a cut traceback shows as its deepest source line.  So a traceback
# cut in one of them at any other line was allocating the pool's buffers, and the exception it lost is
# most often CUDA running out of memory, not the pool's sizing (the place "srt/mem_cache/" of ``WHERE``,
# which names memory.kv_pool).  Tuned parts (--cut-check): the traceback cut at ``_init_mamba_pool``
# (corpus/field26/007) was a CUDA OOM; the two cut at a pool's check line (field17/001's dtype assert,
# sealed10/024's import) were not, and keep the module's reading.
POOL_BUFFER_FUNCTIONS = ("_create_buffers", "_create_buffers_normal", "_init_mamba_pool", "_init_kpool_compress_tail_buffers")
_CHECK_LINE = re.compile(r"^\s*(?:assert\b|raise\b)")


def _pool_buffers(f: Frame) -> Evidence | None:
    """The deepest SGLang frame ``f`` is a memory pool allocating its buffers (``POOL_BUFFER_FUNCTIONS``)
    at a line that is not one of its checks: a piece for memory.cuda_oom at the place's weight."""
    path = f.file.replace("\\", "/")
    if "srt/mem_cache/" not in path or f.function.rsplit(".", 1)[-1] not in POOL_BUFFER_FUNCTIONS:
        return None
    if f.source and _CHECK_LINE.match(f.source):
        return None
    return Evidence("deepest_frame", "memory.cuda_oom", 0.4,
                    f"it stopped while a memory pool allocated its buffers on the GPU ({f.function} in {_short(f)}); "
                    "SGLang sizes the pool, and raises its 'Not enough memory', before it builds it: most often the "
                    "allocation ran out of GPU memory")


def _place(inc: Incident) -> Evidence | None:
    """Where the traceback was when its text stopped: the deepest SGLang frame in ``WHERE``."""
    ours = sglang_frames(inc.frames)
    if ours and _importing(inc.frames, ours[-1]):
        # a traceback that stopped while importing one of SGLang's modules: the module's own
        # code at import time (a missing or mismatched package, a registration clash, a cache
        # file it opens), not anything the launch's flags chose
        return Evidence("import_frame", "other", 0.4, f"it stopped while Python imported SGLang's module "
                                                      f"{_short(ours[-1])}: a package or the environment, "
                                                      "not the launch's settings")
    whole = _cut_function(inc, ours)
    if ours and not whole and (pool := _pool_buffers(ours[-1])) is not None:
        return pool
    for depth, f in enumerate(reversed(ours)):
        path = f.file.replace("\\", "/")
        called = _called(f.source) if depth == 0 else None
        if depth == 0 and whole:
            f = Frame(file=f.file, line=f.line, function=whole, source=f.source)
        for part, functions, category, why in WHERE:
            if called and functions is not None and not part and _fits(path, called, part, functions):
                # the deepest frame's source line shows what it was calling when the text stopped
                return Evidence("deepest_frame", category, 0.35, f"{why} ({f.function} was calling {called}, {_short(f)})")
            if not _fits(path, f.function, part, functions):
                continue
            if depth == 0 and part == "srt/server_args" and f.function.rsplit(".", 1)[-1] in ARGS_CONSTRUCTION:
                return Evidence(ARGS_CONSTRUCTION_PLACE, category, 0.0,
                                f"it stopped in ServerArgs' construction ({f.function} in {_short(f)}) with no named "
                                "check below it: the launch's settings were being resolved, which also reads the model's "
                                "configuration, probes the GPU and picks kernel backends")
            if depth == 0 and category == "kernel.unsupported_hw" and _under_capture(ours[:-1]):
                return Evidence(CAPTURE_KERNEL_PLACE, "cuda_graph", 0.0,
                                f"{why} ({f.function} in {_short(f)}), called from CUDA graph capture, which runs "
                                "every kernel for the first time")
            if depth == 0:
                return Evidence("deepest_frame", category, 0.4, f"{why} ({f.function} in {_short(f)})")
            return Evidence("outer_frame", category, 0.3, f"{why} ({f.function} in {_short(f)}, {depth} frame(s) "
                                                          "above the deepest)")
    return None


_CAPTURE_FUNCTIONS = ("init_cuda_graphs", "init_device_graphs", "capture", "capture_one_batch_size")


def _under_capture(outer: list[Frame]) -> bool:
    """Some of these SGLang frames are CUDA graph capture (cuda_graph_runner, or its capture steps)."""
    return any((any("srt/model_executor/" + part in f.file.replace("\\", "/")
                    for part in ("cuda_graph_runner", *CAPTURE_MODULES_0514))
                and f.function.rsplit(".", 1)[-1] not in GRAPH_REPLAY_FUNCTIONS)
               or f.function.rsplit(".", 1)[-1] in _CAPTURE_FUNCTIONS for f in outer)


def from_frames(inc: Incident) -> list[Evidence]:
    place = _place(inc)
    if place is None or place.category in PHASE_PLACES or place.name in (ARGS_CONSTRUCTION_PLACE,
                                                                          CAPTURE_KERNEL_PLACE):
        return []  # (a place that names a phase is read by from_context, through the prior)
    return [place]


def frame_phase(inc: Incident) -> tuple[str, str] | None:
    """The start-up step the deepest SGLang frame shows (``PHASE_PLACES``), and why."""
    place = _place(inc)
    if place is not None and place.name == ARGS_CONSTRUCTION_PLACE:
        return "startup.args", place.why
    if place is not None and place.name == CAPTURE_KERNEL_PLACE:
        return "startup.cuda_graph", place.why
    if place is None or place.category not in PHASE_PLACES:
        return None
    return PHASE_PLACES[place.category], place.why


# Libraries SGLang calls into, by a part of the frame's path: when the traceback went on below
# SGLang's own frames into one of them, that library is where it failed.
LIBRARIES: tuple[tuple[str, str, float, str], ...] = (
    ("/torch/distributed/", "nccl", 0.35, "it failed inside torch.distributed (a collective or the process group)"),
    ("/torch/cuda/graphs.py", "cuda_graph", 0.35, "it failed inside torch's CUDA graph capture"),
    ("/torch/utils/cpp_extension.py", "kernel.build", 0.4, "it failed building a C++/CUDA extension"),
    ("/flashinfer/jit/", "kernel.build", 0.4, "it failed in flashinfer's JIT build"),
    ("/tvm_ffi/", "kernel.build", 0.35, "it failed loading or building a JIT kernel (tvm-ffi)"),
    ("/torch/_inductor/", "kernel.build", 0.35, "it failed in torch.compile (inductor)"),
    ("/torch/_dynamo/", "kernel.build", 0.3, "it failed in torch.compile (dynamo)"),
    ("/triton/", "kernel.build", 0.3, "it failed in Triton (compiling or launching a kernel)"),
    ("/huggingface_hub/", "model.load", 0.4, "it failed in huggingface_hub (downloading or finding the model)"),
    ("/safetensors/", "model.load", 0.4, "it failed reading safetensors weights"),
    ("/transformers/", "model.load", 0.3, "it failed in transformers (config, tokenizer or processor loading)"),
    ("/torch/cuda/__init__.py", "kernel.unsupported_hw", 0.3, "it failed initialising CUDA in torch"),
    ("/starlette/", "runtime.crash", 0.25, "it failed handling an HTTP request (the server was serving)"),
    ("/fastapi/", "runtime.crash", 0.25, "it failed handling an HTTP request (the server was serving)"),
)


def from_library_frames(inc: Incident) -> list[Evidence]:
    """The deepest frame below SGLang's own frames that is in a library of ``LIBRARIES``."""
    frames = inc.frames
    ours = [i for i, f in enumerate(frames) if is_sglang_file(f.file)]
    start = ours[-1] + 1 if ours else 0
    for f in reversed(frames[start:]):
        path = f.file.replace("\\", "/")
        for part, category, weight, why in LIBRARIES:
            if part in path:
                short = path.split("/site-packages/", 1)[-1].split("/dist-packages/", 1)[-1]
                return [Evidence("library_frame", category, weight, f"{why} ({f.function} in {short})")]
    return []


# The calls that bind a listening socket to an address: pyzmq's Socket.bind (SGLang's IPC and the
# PD/KV bootstrap servers, 0.4.x-0.5.x get_zmq_socket / disaggregation common/conn.py
# _bind_server_socket) and bind_to_random_port, the standard library's socketserver
# server_bind, uvicorn's Config.bind_socket.  A traceback whose deepest frame is one of them and
# whose exception line is cut off failed to bind: the address or port was taken (EADDRINUSE) or
# is not this host's (EADDRNOTAVAIL).
BIND_CALLS = frozenset({"bind", "bind_to_random_port", "server_bind", "bind_socket"})
# a bare "bind" only in a socket library's file (inspect.Signature.bind binds call arguments)
_SOCKET_FILES = ("zmq", "socket", "uvicorn", "asyncio")


def from_bind_frame(inc: Incident) -> list[Evidence]:
    """The deepest frame of a traceback that lost its exception line is a socket bind."""
    if not inc.frames or (inc.exception is not None and inc.exception.type):
        return []
    f = inc.frames[-1]
    name = f.function.rsplit(".", 1)[-1]
    if name not in BIND_CALLS or (name == "bind" and not any(p in f.file.lower() for p in _SOCKET_FILES)):
        return []
    return [Evidence("bind_frame", "network.port", 0.4,
                     f"the traceback stops inside {f.function} ({_short(f)}), which binds a socket to an address: "
                     "a port that was taken or an address that is not this host's")]


# transformers' AutoConfig.from_pretrained looks the checkpoint's model_type up in its registry
# ("config_class = CONFIG_MAPPING[config_dict["model_type"]]", configuration_auto.py, 4.x); the
# lookup raises only KeyError, for a model type this transformers (and SGLang's own registered
# configs, in this process) does not know, which it turns into "... does not recognize this
# architecture" (model.unsupported.transformers_config_mapping).  A traceback cut below that line,
# before its exception, failed there: the architecture is unknown, not the files unreadable.
_CONFIG_LOOKUP = re.compile(r"CONFIG_MAPPING\[\s*config_dict\[\s*[\"']model_type[\"']\s*\]\s*\]")
# The same refusal one line on: a traceback of the ValueError AutoConfig.from_pretrained re-raises
# (Python shows the ``raise ValueError(`` line of the except block as its last frame).  In
# transformers 5.x from_pretrained raises ValueError only there and for "Unrecognized model in ..."
# (a config.json without model_type): both an architecture this transformers cannot name; 4.x adds
# only a check of its own keyword arguments (``token`` and ``use_auth_token`` both given), which
# SGLang's get_config never passes.
_CONFIG_RAISE = re.compile(r"^\s*raise ValueError\(")


def from_config_lookup_frame(inc: Incident) -> list[Evidence]:
    """A traceback that lost its exception line went through transformers' model-type lookup."""
    if not inc.frames or (inc.exception is not None and inc.exception.type):
        return []
    for f in inc.frames[-2:]:
        if "configuration_auto" in f.file and f.source and _CONFIG_LOOKUP.search(f.source):
            return [Evidence("config_lookup_frame", "model.unsupported", 0.45,
                             f"the traceback stops in transformers' model-type lookup ({f.source.strip()} in "
                             f"{f.function}), which fails only for a model type it does not know")]
    last = inc.frames[-1]
    if ("configuration_auto" in last.file and last.function.rsplit(".", 1)[-1] == "from_pretrained"
            and last.source and _CONFIG_RAISE.search(last.source)):
        return [Evidence("config_lookup_frame", "model.unsupported", 0.45,
                         "the traceback stops at AutoConfig.from_pretrained's ValueError, raised for a model "
                         "type (or a config.json without one) this transformers does not know")]
    return []


_CURRENT_THREAD = re.compile(r"^\s*Current thread 0x[0-9a-fA-F]+ \(most recent call first\):")


def native_stack(inc: Incident) -> list[Frame]:
    """The Python stack faulthandler printed for the thread that crashed ("Current thread 0x...
    (most recent call first):", then ``File "...", line N in f`` lines), the most recent frame
    first; [] when the incident holds no such dump.  Other threads' stacks say nothing of it."""
    stack: list[Frame] = []
    inside = False
    for line in inc.lines:
        if _CURRENT_THREAD.match(line.text):
            inside, stack = True, []
            continue
        if inside:
            frame = parse_frame(line.text) if 'File "' in line.text else None
            if frame is None:
                if stack:
                    break
                continue
            stack.append(frame)
    return stack


def from_native_stack(inc: Incident) -> list[Evidence]:
    """Where a native crash happened, from the crashing thread's Python stack (``native_stack``):
    the first SGLang frame looked up in ``WHERE``, or a library of ``LIBRARIES`` it had called
    into."""
    if not set(inc.signal_names) & {"faulthandler", "segfault", "aborted"}:
        return []
    stack = native_stack(inc)
    if not stack:
        return []
    for f in stack:  # the most recent first
        path = f.file.replace("\\", "/")
        if is_sglang_file(path):
            for part, functions, category, why in WHERE:
                if _fits(path, f.function, part, functions):
                    return [Evidence("native_frame", category, 0.4,
                                     f"{why}: the crashing thread's stack is in {f.function} ({_short(f)})")]
            return []
        for part, category, weight, why in LIBRARIES:
            if part in path:
                short = path.split("/site-packages/", 1)[-1].split("/dist-packages/", 1)[-1]
                return [Evidence("native_frame", category, weight, f"{why}: the crashing thread's stack is in "
                                                                   f"{f.function} ({short})")]
    return []


# faulthandler's dump of a fatal signal.  SGLang's scheduler (and the DP controller) call
# faulthandler.enable() first thing (run_scheduler_process, 0.4.x-0.5.23), which installs it for
# SIGSEGV, SIGFPE, SIGABRT, SIGBUS and SIGILL; it writes "Fatal Python error: <signal>", then each
# thread as "Thread 0x... (most recent call first):" ("Current thread 0x..." for the one that
# crashed) and its frames as ``  File "<path>", line <n> in <function>`` -- CPython's
# traceback.c dump_frame, no comma before "in", no source line, unlike a traceback's frame.  A
# paste that lost the "Fatal Python error" line (a title, an excerpt cut above it) still shows a
# process killed by a fatal signal by that frame shape.  (dump_traceback_later, a hang, writes
# the same frames after "Timeout (0:05:00)!": the server never calls it, only pytest's
# faulthandler_timeout does, and that line does not join the incident, so it is not told apart.)
_FAULTHANDLER_FRAME = re.compile(r'File "[^"\n]+", line \d+ in [A-Za-z_<][\w<>.]*')
_FAULTHANDLER_THREAD = re.compile(r"^\s*(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):")
_FATAL_SIGNALS = frozenset({"faulthandler", "segfault", "aborted"})
# SIGILL: the CPU met an instruction it does not have (a binary built for another CPU), which is
# the hardware's refusal (from_signals reads a shell's "Illegal instruction" so)
_FATAL_ILLEGAL = re.compile(r"(?i)illegal (?:hardware )?instruction")


def faulthandler_shape(inc: Incident) -> bool:
    """The incident's lines show faulthandler's frames or thread headers (see above)."""
    return any(_FAULTHANDLER_THREAD.match(line.text) or _FAULTHANDLER_FRAME.search(line.text) for line in inc.lines)


def fatal_dump(inc: Incident) -> bool:
    """The process died of a fatal signal of its own (a segfault, an abort, a bus error, a
    floating-point trap; not SIGILL): a line names it, or faulthandler's dump shows it."""
    if any(_FATAL_ILLEGAL.search(line.text) for line in inc.signals):
        return False
    return bool(set(inc.signal_names) & _FATAL_SIGNALS) or faulthandler_shape(inc)


def from_faulthandler_frames(inc: Incident) -> list[Evidence]:
    """faulthandler's dump with no line of the text naming the fatal signal (``faulthandler_shape``)."""
    if set(inc.signal_names) & (_FATAL_SIGNALS | {"cpp_terminate", "signal_death"}) or not fatal_dump(inc):
        return []
    return [Evidence("faulthandler_frames", "runtime.crash", SIGNALS["faulthandler"][1],
                     "faulthandler's frames ('File \"...\", line N in f', no comma): SGLang's scheduler enables "
                     "faulthandler, which prints them when a fatal signal (a segfault, an abort) kills the process; "
                     "the 'Fatal Python error' line that names it is not in the text")]


# Where the frames of a fatal-signal dump were: "inside a kernel" (an attention, MoE or
# quantization kernel, a model's forward) reads a Python exception as the kernel refusing this GPU
# (SGLang's and the libraries' checks raise, Triton and CUDA errors come back as exceptions); a
# process killed by a signal in that code crashed there, which is a crash of the forward pass
FRAME_PLACES = ("deepest_frame", "outer_frame", "native_frame")


def _crashed_in(piece: Evidence) -> Evidence:
    return Evidence(piece.name, "runtime.crash", piece.weight,
                    f"a fatal signal killed the process there, not a kernel's refusal of the GPU (which raises a Python "
                    f"exception): {piece.why}", piece.support)


# A native stack symbolized in Python's traceback shape, one ``File "<unknown>", line 0, in
# <symbol>`` line per C++ frame, the last one the stack's bottom (``in 0xffffffffffffffff``):
# torch's fatal-signal handler prints it ("!!!!!!! Segfault encountered !!!!!!!", then
# CapturedTraceback's frames), as do the C++ stacks torch symbolizes for a crashing process.  A
# process that printed its own native stack crashed in native code: it was not killed from
# outside (a SIGKILL leaves no stack), which is what a bare scheduler death would otherwise
# suggest.
_SYMBOLIZED_NATIVE_FRAME = re.compile(r'^\s*>?\s*File "<unknown>", line 0, in \S')


def from_symbolized_native_stack(inc: Incident) -> list[Evidence]:
    if set(inc.signal_names) & {"faulthandler", "segfault", "aborted", "cpp_terminate"}:
        return []  # the crash is named already
    if not any(_SYMBOLIZED_NATIVE_FRAME.match(line.text) for line in inc.lines):
        return []
    return [Evidence("native_stack", "runtime.crash", 0.3,
                     "a symbolized native stack ('File \"<unknown>\", line 0, in ...' frames): the process crashed "
                     "in native code and printed its C++ stack, it was not killed from outside")]


def _completions(prefix: str) -> set[tuple[str, str, str]]:
    """(category, why, name) of the function names of ``WHERE`` that ``prefix`` begins."""
    return {(category, why, name) for part, functions, category, why in WHERE if not part and functions
            for name in functions if name.startswith(prefix) and name != prefix}


# ModelRunner's start-up steps as its constructor calls them (model_executor/model_runner.py,
# ``__init__`` 0.3.x-0.4.x, ``initialize`` 0.5.x; the same lines in every release): a deepest frame's
# source line cut before the called name is complete ("min_per_gpu_memory = s", "self.init_m") still
# names the step when it begins exactly one of these lines.
STEP_CALL_LINES: tuple[str, ...] = (
    "min_per_gpu_memory = self.init_torch_distributed()",
    "self.load_model()",
    "self.init_memory_pool(",
    "self.init_cuda_graphs()",
)
_STEP_CALL_MIN = 8  # a shorter cut ("self.", "min_") begins too little to name a line


def _step_call(source: str) -> str | None:
    """The start-up step (a function of ``WHERE``) the cut source line ``source`` can only be calling:
    it begins exactly one of ``STEP_CALL_LINES`` and is shorter than it."""
    cut = source.strip()
    if len(cut) < _STEP_CALL_MIN:
        return None
    lines = [line for line in STEP_CALL_LINES if line.startswith(cut) and line != cut]
    if len(lines) != 1:
        return None
    m = _CALL.search(lines[0])
    return m.group(1) if m else None


def from_cut_call(inc: Incident) -> list[Evidence]:
    """The text stops inside a name: the deepest frame's source line cut inside the call it
    makes (``self.init_cu``; before the name, in one of ModelRunner's step lines,
    ``STEP_CALL_LINES``), or its ``File ...`` line cut inside the function's name
    (``in forward_t``).  Evidence only when every completion names one category."""
    if not inc.truncated or not inc.frames:
        return []
    last = inc.frames[-1]
    if "/sglang/" not in last.file.replace("\\", "/"):
        return []
    step = _step_call(last.source) if last.source and "model_runner" in last.file else None
    if step is not None:
        hits = {(category, why) for part, functions, category, why in WHERE if not part and functions and step in functions}
        if len({h[0] for h in hits}) == 1:
            category, why = sorted(hits)[0]
            return [Evidence("cut_call", category, 0.35,
                             f"{why}: the text stops inside the line {last.source.strip()!r} in {last.function} "
                             f"({_short(last)}), which can only be ModelRunner's call of {step}")]
    if last.source:
        m = _CUT_NAME.search(last.source.rstrip())
        if m is None or "(" in last.source:
            return []
        prefix, where = m.group(1), f"the call {m.group(1)}... in {last.function} ({_short(last)})"
    else:
        prefix = last.function.rsplit(".", 1)[-1]
        if not prefix or not prefix.isidentifier():
            return []
        where = f"the frame line's function name {prefix}... ({_short(last)})"
    hits = _completions(prefix) if last.source or len(prefix) >= 5 else set()
    if not hits and not last.source:
        # the places of WHERE named by this file's path complete even a short cut name
        # (sglang/api.py "in R" -> Runtime)
        path = last.file.replace("\\", "/")
        hits = {(category, why, name) for part, functions, category, why in WHERE if part and part in path and functions
                for name in functions if name.startswith(prefix) and name != prefix}
    if len({h[0] for h in hits}) != 1:
        return []
    category, why, name = sorted(hits)[0]
    return [Evidence("cut_call", category, 0.35, f"{why}: the text stops inside {where}, which can only be {name}")]


# SGLang's "<Process> hit an exception: Traceback ..." names the process that failed; these run
# the serving side (tokenizer_manager.py / detokenizer_manager.py handle loops, the overlap
# scheduler's forward thread in tp_worker_overlap_thread.py), so their failures are crashes
# while serving (or warming up).  The scheduler and the DP controller also fail at start-up.
_SERVING_PROCESSES = ("TokenizerManager", "DetokenizerManager", "TpModelWorkerClient", "MultiTokenizerRouter",
                      "GrpcRequestManager")
_HEADER = re.compile(r"\b(?P<process>[A-Za-z]\w*) hit an exception")


def from_header(inc: Incident) -> list[Evidence]:
    for line in inc.lines[:3]:
        m = _HEADER.search(line.text)
        if m is not None:
            if m.group("process") in _SERVING_PROCESSES:
                return [Evidence("header", "runtime.crash", 0.25,
                                 f"the {m.group('process')} logged it: that process does its work while serving")]
            return []
    return []


# Allocating a tensor on the device: torch's factory functions, the DeviceContext every torch
# call goes through inside ``with torch.device(...)`` (torch/utils/_device.py, how models are
# built on the GPU), a quantization method's create_weights.
_ALLOCATING = re.compile(r"\btorch\.(?:empty|zeros|ones|full|randn|rand|empty_like|zeros_like|empty_strided)\(|"
                         r"\.create_weights\(")
# torch's ops that allocate their output (of the size of their input) through the caching allocator, which
# raises torch.OutOfMemoryError synchronously in the op that asked for the memory: a linear layer's
# ``F.linear`` (cuBLAS's output), an embedding's lookup, a matmul, a concatenation, a contiguous copy (an
# attention output's ``.transpose(1, 2).contiguous()``).  What a long prefill or a large batch runs out
# of memory in while serving.  Only as the deepest line: the line above one is any layer's call.
_OUTPUT_ALLOCATING = re.compile(r"\bF\.(?:linear|embedding)\(|\btorch\.(?:embedding|matmul|mm|bmm|cat|concat|stack)\(|"
                                r"\.contiguous\(\)|\.clone\(\)")
# A line that copies to the host or waits for the device is where an *asynchronous* CUDA error (an
# illegal memory access of a kernel launched earlier) surfaces, whatever else the line does:
# corpus/field27/008 (a runtime.crash) stops at ``torch.concat((self.free_slots, free_index.cpu()))``.
_SYNCHRONIZING = re.compile(r"\.(?:cpu|item|tolist|numpy)\(\)|synchronize\(")
# torch's ``Module.to(device)`` / ``.cuda()``: ``Module._apply`` calls ``convert`` on every parameter and
# buffer (torch/nn/modules/module.py, ``return t.to(device, ...)``, since torch 2.4 split over lines as
# ``return t.to(``): a model moved to the GPU as a whole allocates its weights there.
_MODULE_CONVERT = ("/torch/nn/modules/module.py", "convert")


# Exception classes as a traceback prints them, each with the category its type alone names (None:
# the type names no part of a launch), to complete a type name a paste cut short: a traceback whose
# last line is "torch.O" lost "torch.OutOfMemoryError: CUDA out of memory ..." (torch raises
# torch.OutOfMemoryError, an alias of torch.cuda.OutOfMemoryError, when the caching allocator fails;
# torch.distributed's DistBackendError / DistNetworkError / DistStoreError are NCCL's and the store's).
# The builtins are listed so that a cut "Runtim" is known for cut, and names nothing.
TYPE_NAMES: dict[str, str | None] = {
    "torch.OutOfMemoryError": "memory.cuda_oom", "torch.cuda.OutOfMemoryError": "memory.cuda_oom",
    "torch.distributed.DistBackendError": "nccl", "torch.distributed.DistNetworkError": "nccl",
    "torch.distributed.DistStoreError": "nccl",
    **{name: None for name in ("RuntimeError", "ValueError", "AssertionError", "KeyError", "TypeError", "AttributeError",
                               "ImportError", "ModuleNotFoundError", "NotImplementedError", "IndexError", "OSError",
                               "FileNotFoundError", "PermissionError", "ConnectionError", "TimeoutError",
                               "StopIteration", "SystemExit", "ZeroDivisionError", "NameError")},
}
CUT_TYPE_MIN = 5  # characters a cut type name needs before it is completed (``torch`` alone is not)


def cut_type(inc: Incident) -> list[str] | None:
    """The exception names a type cut short could be (``torch.O`` -> torch.OutOfMemoryError), when
    the exception line holds only a type that is not a name of ``TYPE_NAMES`` but begins one; else None."""
    exc = inc.exception
    if exc is None or not exc.type or exc.message.strip() or exc.type in TYPE_NAMES:
        return None
    names = [name for name in TYPE_NAMES if name.startswith(exc.type)]
    return names or None


def from_cut_type(inc: Incident) -> list[Evidence]:
    """An exception type cut inside its name that can only be one category's (``TYPE_NAMES``)."""
    names = cut_type(inc)
    if not names or len(inc.exception.type) < CUT_TYPE_MIN:  # (names: the exception has a type)
        return []
    categories = {TYPE_NAMES[n] for n in names}
    if len(categories) != 1 or None in categories:
        return []
    return [Evidence("cut_type", categories.pop(), 0.45,
                     f"the exception line was cut inside its type name ({inc.exception.type}...), which can only be "
                     f"{' or '.join(names)}")]


# The weight of an allocation that is the very line the traceback was executing when its text
# stopped (the deepest frame's own source line, or torch's device context under it): what the process
# was doing, which says more than the module it was doing it in (a place of ``WHERE``, 0.4: a
# GroupCoordinator's ``torch.ones(..., device=...)`` in parallel_state.py is an allocation, not a
# collective; a quantization method's ``torch.empty(`` for its weights is not its kernel).  An
# allocation in the frame above the deepest (the deepest is a helper it called) keeps 0.3.  Of the
# tuned parts' failures, no-cause fragments and texts cut above their cause line (bench/guess_cv.py
# --cut-check), the allocation piece fired only on CUDA OOMs (9 texts); at 0.3-0.35 it lost four of
# them to the module's place (nccl, kernel.unsupported_hw) or a class rule on that module.
ALLOCATION_AT_DEEPEST = 0.45


def _operator_call(frames) -> bool:
    """The frame (a one-item list, or empty) is torch's operator dispatch (torch/_ops.py ``__call__``): a
    kernel's op such as ``torch.ops.sgl_kernel.rmsnorm``, which the device context (torch/utils/_device.py)
    passes on unchanged; it gives a device only to the tensor constructors (``_device_constructors``), so an
    op under it is a kernel launched, not an allocation (corpus/field27/014, a runtime.crash, cut there)."""
    return bool(frames) and frames[0].file.replace("\\", "/").endswith("/torch/_ops.py")


def from_allocation(inc: Incident) -> list[Evidence]:
    """The traceback was cut in the middle of allocating device memory: where a cut traceback
    stops at an allocation, the exception it lost is most often CUDA running out of memory."""
    cut = cut_type(inc) is not None
    if not (inc.truncated or cut) or not inc.frames or (inc.exception is not None and inc.exception.type and not cut):
        return []
    last = inc.frames[-1]
    path = last.file.replace("\\", "/")
    if path.endswith("/torch/utils/_device.py") and not _operator_call(inc.frames[-2:-1]):
        return [Evidence("allocation", "memory.cuda_oom", ALLOCATION_AT_DEEPEST,
                         "the traceback stops in torch's device context (torch/utils/_device.py), which every tensor "
                         "allocation on the GPU goes through while a model is built: most often it ran out of memory")]
    if path.endswith(_MODULE_CONVERT[0]) and last.function == _MODULE_CONVERT[1]:
        return [Evidence("allocation", "memory.cuda_oom", ALLOCATION_AT_DEEPEST,
                         "the traceback stops in torch's Module._apply -> convert (torch/nn/modules/module.py), which "
                         "moves every weight of a module to the GPU: most often it ran out of memory")]
    if last.source and _OUTPUT_ALLOCATING.search(last.source) and not _SYNCHRONIZING.search(last.source):
        return [Evidence("allocation", "memory.cuda_oom", ALLOCATION_AT_DEEPEST,
                         f"the line the traceback was executing when it stops is a torch op that allocates its output "
                         f"({last.source.strip()[:60]!r} in {last.function}, {_short(last)}), where torch's caching "
                         "allocator raises an out-of-memory error; a CUDA error of an earlier kernel surfaces at a "
                         "copy to the host or a synchronize instead")]
    for depth, f in enumerate(reversed(inc.frames[-2:])):
        if f.source and _ALLOCATING.search(f.source):
            if depth == 0:
                return [Evidence("allocation", "memory.cuda_oom", ALLOCATION_AT_DEEPEST,
                                 f"the line the traceback was executing when it stops allocates GPU memory "
                                 f"({f.source.strip()[:60]!r} in {f.function}, {_short(f)}): what it was doing says "
                                 "more than the module it was in; most often it ran out of memory")]
            return [Evidence("allocation", "memory.cuda_oom", 0.3,
                             f"the traceback stops at an allocation ({f.source.strip()[:60]!r} in {f.function}): "
                             "most often it ran out of memory")]
    return []


# A CUDA kernel runs asynchronously: its error (an illegal memory access, an illegal instruction, a
# device-side assert) is reported by the next call that waits for the device -- a copy to the host
# (``.cpu()``, ``.item()``, ``.tolist()``, ``.numpy()``) or a synchronize (``_SYNCHRONIZING``) -- not by the
# launch (CUDA's programming guide, "Asynchronous execution"; torch's "CUDA kernel errors might be
# asynchronously reported at some other API call" notice).  A cut traceback whose deepest line is such a
# call was reporting an earlier kernel's fault: a crash (runtime.crash, after ready by definition;
# ``collect`` drops it for a text known to be starting).  Under CUDA graph capture a call that waits for
# the device is itself refused ("operation not permitted when stream is capturing",
# cudaErrorStreamCaptureUnsupported): cuda_graph.  Over the tuned parts' texts (whole, no-cause and cut
# above their cause line) such a deepest line is a runtime.crash's three times and, under capture frames,
# a cuda_graph failure's once.
SYNC_POINT = ALLOCATION_AT_DEEPEST


def from_sync_point(inc: Incident) -> list[Evidence]:
    """A cut traceback that stops at a call waiting for the device (see ``SYNC_POINT``)."""
    if not inc.truncated or not inc.frames:
        return []
    last = inc.frames[-1]
    if not last.source or not _SYNCHRONIZING.search(last.source):
        return []
    shown = f"{last.source.strip()[:60]!r} in {last.function.rsplit('.', 1)[-1]}, {_short(last)}"
    if _under_capture(sglang_frames(inc.frames)):
        return [Evidence("sync_point", "cuda_graph", SYNC_POINT,
                         f"the line the traceback was executing when it stops waits for the device ({shown}) under "
                         "CUDA graph capture, which does not permit it")]
    return [Evidence("sync_point", "runtime.crash", SYNC_POINT,
                     f"the line the traceback was executing when it stops waits for the device ({shown}): where an "
                     "earlier kernel's CUDA error (an illegal memory access) is reported")]


# The device and platform queries SGLang's checks refuse a machine with (0.5.x srt/utils/common.py
# is_cuda / is_hip / is_npu / is_xpu / is_hpu / is_musa / is_mps, get_device, get_device_capability,
# get_device_sm, is_sm90_supported / is_sm100_supported / is_sm120 ..., is_blackwell*, is_gfx95_supported
# ...; the modules' ``_is_cuda = is_cuda()`` copies; a platform plugin's ``current_platform.is_*``;
# 0.5.23 arg_groups/mamba_hook.py ``_platform_supports_mamba_cache_extra_buffer``).  A check that refuses
# the GPU or the platform asserts or raises on one of them: ``assert is_sm100_supported(), ...``,
# ``assert _platform_supports_mamba_cache_extra_buffer(), (...)``, and get_device() itself raises "No
# accelerator (CUDA, XPU, HPU, ...) is available".  The same names in an ``if`` line are ordinary
# dispatch (every module branches on ``_is_cuda``), so only an assert / raise line counts, or the
# query's own function as the deepest frame.
_DEVICE_QUERY = (r"\b(?:_?is_(?:cuda|cuda_alike|hip|npu|xpu|hpu|musa|mps)\b|_?is_sm\d+\w*|_?is_blackwell\w*|"
                 r"_?is_hopper\w*|_?is_gfx\d+\w*|get_device_(?:capability|sm)\w*|get_device\(|"
                 r"current_platform\.is_\w+|_?platform_supports\w*|(?:device|compute)_capability)")
_CHECK_ON_DEVICE = re.compile(r"^\s*(?:assert|raise)\b.*" + _DEVICE_QUERY)
_QUERY_FUNCTIONS = re.compile(r"^(?:get_device|get_device_capability|get_device_sm|_?is_sm\d+\w*|"
                              r"_?is_blackwell\w*|_?is_hopper\w*|_?is_gfx\d+\w*|_?platform_supports\w*)$")
# what the line a cut traceback was executing says of the machine weighs as what it was doing (an
# allocation, ``ALLOCATION_AT_DEEPEST``): more than the module the check sits in (server_args,
# arg_groups, a model's constructor)
CAPABILITY_CHECK = ALLOCATION_AT_DEEPEST


def from_capability_check(inc: Incident) -> list[Evidence]:
    """A traceback cut at a check that asks what the machine is: its deepest line asserts or raises on
    a device or platform query (``_CHECK_ON_DEVICE``), or it stops inside one (``_QUERY_FUNCTIONS``):
    the check refused this GPU or platform, kernel.unsupported_hw.  Over the tuned parts' texts (whole,
    no-cause, and cut above their cause line) it fires only on kernel.unsupported_hw failures."""
    if not inc.truncated or not inc.frames:
        return []
    last = inc.frames[-1]
    function = last.function.rsplit(".", 1)[-1]
    if last.source and _CHECK_ON_DEVICE.search(last.source):
        shown = f"{last.source.strip()[:60]!r} in {function}, {_short(last)}"
    elif _QUERY_FUNCTIONS.match(function) and is_sglang_file(last.file):
        shown = f"inside {function}, {_short(last)}"
    else:
        return []
    return [Evidence("capability_check", "kernel.unsupported_hw", CAPABILITY_CHECK,
                     f"the line the traceback was executing when it stops is a check on the GPU or platform ({shown}): "
                     "most often it refused this machine")]


# The raise statement a cut traceback stops at (diagnose/raise_sites.py, session 36): a traceback whose
# exception line was cut off and whose deepest frame is SGLang's own ``raise X(`` / ``assert`` raised right
# there, one of the failure sites of that function the inventories of five releases list.  What those sites
# fail as (their right answers: the rule or class that names their message, at the site's phase) is what the
# line was doing, weighed as the other readings of the last line (``ALLOCATION_AT_DEEPEST``) times the share
# of the sites the line can be that fail so, when that is more than half; internal checks (the step's
# category), a request's rejection and a waiver's ``other`` name nothing and only lower the share.  A line
# that asks what the machine is (``_CHECK_ON_DEVICE``) is read by ``from_capability_check`` instead, and
# transformers' model-type lookup by ``from_config_lookup_frame`` (``collect``).  Read from SGLang's and the
# libraries' source (their failure-site inventories), not from a log.
RAISE_SITE = ALLOCATION_AT_DEEPEST
RAISE_SITE_MIN_SHARE = 0.5


def from_raise_site(inc: Incident) -> list[Evidence]:
    """The deepest frame of a cut traceback is one of SGLang's raise / assert statements: the category
    most of the sites it can be fail as (``raise_sites.reading``)."""
    if not inc.truncated or not inc.frames or (inc.exception is not None and inc.exception.type):
        return []
    last = inc.frames[-1]
    if last.source and _CHECK_ON_DEVICE.search(last.source):
        return []  # (a check that asks what the machine is: its own condition says more, from_capability_check)
    found = raise_sites.reading(last)
    if found is None or found.share <= RAISE_SITE_MIN_SHARE:  # (an even split names neither)
        return []
    which = ("the site its message begins as" if found.narrowed else
             f"{found.sites} site(s) of that kind in its module (the function has none)" if found.module else
             f"{found.sites} site(s) of that kind there")
    return [Evidence("raise_site", found.category, round(RAISE_SITE * found.share, 3),
                     f"the traceback stops at SGLang's own {found.statement} in {last.function} ({_short(last)}): of "
                     f"{which} in the inventoried releases, {found.share:.0%} fail as {found.category}")]


def from_thread(inc: Incident) -> list[Evidence]:
    func = inc.captures.get("thread_func")
    if not func and inc.frames and inc.frames[0].function in ("_bootstrap_inner", "_bootstrap") \
            and inc.frames[0].file.replace("\\", "/").endswith("threading.py"):
        # a thread's own traceback (threading's _bootstrap_inner at its top): SGLang's threads
        # (the overlap scheduler's forward thread, the watchdog, the detokenizer's and the
        # tokenizer manager's loops) do their work while serving
        return [Evidence("thread", "runtime.crash", 0.2,
                         "the traceback is a background thread's (threading's _bootstrap_inner at its top): SGLang's "
                         "threads do their work while serving")]
    if not func:
        return []
    for part, functions, category, why in WHERE:
        if not part and _fits("", func, part, functions):
            return [Evidence("thread", category, 0.3, f"{why} (the traceback came from thread function {func})")]
    return []


# 0.5.10+ engine.py _scheduler_died_error raises the status in its exception's message
_DIED_MESSAGE = re.compile(r"scheduler died during initialization \(exit code: (-?\d+)\)")


def _exit_code(inc: Incident) -> str | None:
    for key in ("exit_code", "status", "rc"):
        if inc.captures.get(key):
            return inc.captures[key]
    for exc in reversed(inc.chain):
        m = _DIED_MESSAGE.search(exc.message or "")
        if m:
            return m.group(1)
    return None


def exit_code(inc: Incident) -> str | None:
    """The exit status the incident's text gives (``Exit code: -6``, ``(exit code: -9)``,
    ``rc=137``), or None."""
    return _exit_code(inc)


# the launcher's notice that a scheduler died before it was ready (engine.py: 0.4.x-0.5.9 "Rank N
# scheduler is dead." in _launch_subprocesses / _wait_for_scheduler_ready, 0.5.10+ "Rank N
# scheduler died during initialization"): only the launch waits on the schedulers this way
_LAUNCHER_DEATH = re.compile(r"scheduler (?:is dead|died during initialization)")


def launcher_death(inc: Incident) -> bool:
    """The incident is the launcher's notice that a scheduler died during the launch."""
    if {"scheduler_dead", "scheduler_died"} & set(inc.signal_names):
        return True
    return any(_LAUNCHER_DEATH.search(e.message or "") for e in inc.chain)


def from_exit_status(inc: Incident) -> list[Evidence]:
    code = _exit_code(inc)
    meaning = exit_meaning(code)
    if meaning == "killed":
        return [Evidence("exit_status", "memory.host_oom", 0.5,
                         "exit code -9 / 137 (SIGKILL) with no Python error: most often the kernel's OOM killer")]
    if meaning in ("aborted", "native") and launcher_death(inc):
        return []  # a death during the launch: a crash of its own, not one while serving (its cause is above)
    if meaning == "aborted":
        return [Evidence("exit_status", "runtime.crash", 0.3,
                         f"exit code {code} (SIGABRT): the process aborted itself (an uncaught C++ exception, a failed "
                         "assertion, NCCL's abort), not a kill from outside; its message was printed before the status")]
    if meaning == "native":
        return [Evidence("exit_status", "runtime.crash", 0.3,
                         f"exit code {code} (SIGSEGV): a native crash of the process itself, not a kill from "
                         "outside")]
    return []


def context_phase(diagnosis: Diagnosis) -> tuple[str, str] | None:
    """The phase the text shows for an incident and how (``phase_prior.observed_phase``; a
    deepest frame in a start-up step of ``PHASE_PLACES`` names the step when no milestone
    does), or None."""
    found = phase_prior.observed_phase(diagnosis)
    if found is None or found[0] == phase_prior.STARTUP:
        found = frame_phase(diagnosis.incident) or found
    return found


def from_context(diagnosis: Diagnosis) -> list[Evidence]:
    """The phase the text shows (the ready line, the last milestone or progress line, start-up
    frames), read through what usually fails in it (``phase_prior``), and what the last
    milestone and progress line say beyond it (almost no free memory; a JIT build)."""
    inc = diagnosis.incident
    found = context_phase(diagnosis)
    out: list[Evidence] = phase_prior.pieces(*found) if found else []
    launch = diagnosis.launch
    lines = [line.text for line in inc.lines] + [m.text for m in (launch.milestones if launch is not None else ())]
    out += multi_node(launch.server_args if launch is not None else None, lines)
    if inc.after_ready:
        return out
    if launch is not None:
        last = last_before(launch, inc.first_line)
        if last is not None:
            out += low_memory(last, phase_after(last.name))
            out += pool_headroom(launch, last)
            out += pool_allocated(last)
            out += pool_budget(launch, last)
        elif (found and found[0] == "startup.args" and launch.line is not None and launch.line < inc.first_line
              and not inc.captures.get("progress_phase")):
            out += after_header("the failure came after the launch's server_args line, before any start-up step")
    if inc.captures.get("progress_phase") == "startup.load_weights" and found and found[0] == "startup.load_weights":
        out += past_architecture(inc.captures.get("progress_text", ""))
        out += weights_read(inc.captures.get("progress_text", ""))
    if inc.captures.get("progress_phase") == "startup.cuda_graph" and not any(ev.name == "low_memory" for ev in out):
        out += low_capture_memory(inc.captures.get("progress_text", ""),
                                  f"the last progress line before it, line {inc.captures.get('progress_line', '?')}")
    if inc.captures.get("progress_phase") == progress.JIT_BUILD:
        out.append(Evidence("progress", "kernel.build", 0.3,
                            f"the last progress line before it (line {inc.captures.get('progress_line', '?')}) "
                            "shows a JIT kernel build under way"))
    return out


# What SGLang does right after it logs the launch's ``server_args`` line: the line is printed only
# once the arguments were parsed and checked (entrypoints/engine.py ``_launch_subprocesses``: 0.4.6
# ``check_server_args()`` then ``logger.info(f"{server_args=}")``; 0.5.9 and 0.5.23 the same order),
# and the next step is building the model's configuration and tokenizer (the tokenizer manager in the
# main process, ``Scheduler.__init__``'s ``init_model_config`` / ``init_tokenizer`` in each scheduler:
# transformers' ``AutoConfig`` with the model's ``model_type`` and ``architectures``, the tokenizer's
# files from the hub) before the first start-up milestone, "Init torch distributed begin".  A failure
# (or a text's end) after that line and before any step line is most often a model whose configuration
# this transformers / SGLang does not know (model.unsupported), else its files (model.load); an
# argument parser's complaint (the ``startup.args`` prior's commonest labelled failures, printed
# before the line) is past.  On the tuned parts' labels, of the failures whose text holds a
# server_args line and no start-up step line, 5 of 13 were model.unsupported, no other category more
# than 2.  The pieces are support: they place the failure, they say nothing of it.
AFTER_HEADER: tuple[tuple[str, float], ...] = (("model.unsupported", 0.12), ("model.load", 0.06))


def after_header(how: str) -> list[Evidence]:
    """The pieces of ``AFTER_HEADER`` (``how``: how the text shows it ended or failed after the line)."""
    return [Evidence("after_header", category, weight,
                     f"{how}: SGLang prints it once the arguments were checked, and builds the model's configuration "
                     "and tokenizer next (transformers' AutoConfig; the hub's files)", support=True)
            for category, weight in AFTER_HEADER]


# The weight-loading progress lines (progress.PROGRESS: the checkpoint-shard bars, the loader's
# "Using model weights format", the fp8 quantization config's "Detected fp8 checkpoint") come after
# the architecture lookup: DefaultModelLoader.load_model first calls _initialize_model, which looks
# the architecture up (get_model_architecture: "Model architectures [...] are not supported for
# now"), then builds the quantization config (Fp8Config prints its notice) and the model class; only
# then does load_weights iterate the checkpoint's shards.  A text whose last step line is one of
# them has passed the check that makes most start-up model.unsupported failures, so the weight
# phase's prior (model.load and model.unsupported nearly level, docs/GUESS-MISSES.md) leans to the
# weights themselves.  On the tuned parts, no labelled failure whose last step line before it is a
# weight-loading progress line was model.unsupported (model.load 2, other 2, cuda_graph, nccl,
# runtime.crash: the failure came later); a shape mismatch of a variant the model code does not
# fit still can be, so the piece lowers, it never vetoes.
WEIGHTS_READING = tuple(lit for lit, phase in progress.PROGRESS if phase == "startup.load_weights")
PAST_ARCHITECTURE = -0.1


def past_architecture(line: str) -> list[Evidence]:
    """A piece against model.unsupported when ``line`` (the last step line before the failure, or
    the line a text with no failure ends with) shows the weights being read (``WEIGHTS_READING``)."""
    lit = next((lit for lit in WEIGHTS_READING if lit in line), None)
    if lit is None:
        return []
    return [Evidence("weights_reading", "model.unsupported", PAST_ARCHITECTURE,
                     f"the last step line shows the weights being read ({lit!r}): the model's architecture had been "
                     "looked up before it")]


# The checkpoint bar at its end ("Loading safetensors checkpoint shards: 100% Completed | 8/8", the
# multi-thread loader's "Multi-thread loading shards: 100% Completed | 8/8"): weight_utils.py's shard
# iterators wrap the list of files in tqdm, which shows 100% only once the last file's tensors were all
# handed to the model's ``load_weights``, so the names and shapes of the checkpoint had been matched to
# the model (a missing tensor, a KeyError, a size mismatch come while the bar runs).  What comes next,
# before "Load weight end", is loader.py ``load_weights_and_postprocess``'s second half (0.4.x-0.5.x):
# every quantization method's ``process_weights_after_loading`` (repacking into a kernel's layout,
# Marlin / fp8 requantization, moving a CPU-loaded module onto the GPU, each allocating new tensors on
# the GPU beside the loaded ones: the peak of the weights' memory) and the model's own post-load steps.
# A failure there with its message cut is most often the GPU running out of memory at that peak, not
# the files.  Tuned parts: of the labelled failures whose last step line is a finished checkpoint bar,
# 3 of 4 were memory (2 memory.cuda_oom, 1 memory.host_oom), 1 other.  Support only: it places the
# failure after the reading, it says nothing of the failure; a frame or a word of it still names it.
_SHARD_BAR = re.compile(r"(?:checkpoint shards|loading shards)[^:\r\n]*:\s*(\d+)% Completed \| (\d+)/(\d+)")
WEIGHTS_READ = 0.15


def weights_read(line: str) -> list[Evidence]:
    """A support piece for memory.cuda_oom when ``line`` (the last step line before the failure, or the
    line a text with no failure ends with) shows the checkpoint bar finished (see ``WEIGHTS_READ``): the
    loaded weights were being post-processed (repacked, requantized, moved to the GPU)."""
    bars = _SHARD_BAR.findall(line or "")
    if not bars:
        return []
    percent, done, total = bars[-1]  # tqdm's carriage returns: the newest update is the last
    if percent != "100" or done != total:
        return []
    return [Evidence("weights_read", "memory.cuda_oom", WEIGHTS_READ,
                     f"the last step line shows every checkpoint shard read ({done}/{total}): next, before 'Load weight "
                     "end', the quantization methods post-process the loaded weights (repacking, requantizing, moving "
                     "them to the GPU), the weights' peak of GPU memory", support=True)]


# The KV pool allocated ("KV Cache is allocated. #tokens: ..., K size: ... GB", the sliding-window
# pools' "SWAKVPool mem usage"): model_runner.py ``init_memory_pool`` (0.4.x-0.5.x) sizes the pool from
# the memory left after the weights (``profile_max_num_token``) and raises "Not enough memory. Please try
# to increase --mem-fraction-static" before it builds the pool; memory_pool.py logs the line once the
# pool's buffers are allocated.  Past it the pool's own sizing failure is behind, and what comes next
# (the attention backend's workspaces, ``init_cuda_graphs``' capture, 0.5.16+'s post-capture sizing
# reserves first and prints "KV Cache VA upper bound" instead, left out) allocates from what the pool
# left: a failure there with its message cut is a CUDA allocation failing (memory.cuda_oom), not the
# pool's sizing (memory.kv_pool, which the memory_pool phase's prior names first).  Tuned parts: the one
# labelled text that stops right after the line (no failure after it) was memory.cuda_oom.
POOL_ALLOCATED = ("kv_cache", "swa_kv_cache")


def pool_allocated(last) -> list[Evidence]:
    """When the last milestone ``last`` is the KV pool allocated (``POOL_ALLOCATED``): a piece against
    memory.kv_pool and a support piece for memory.cuda_oom."""
    if last is None or last.name not in POOL_ALLOCATED:
        return []
    where = f"the last start-up line ({last.name}, line {last.line}) shows the KV pool allocated"
    return [Evidence("pool_allocated", "memory.kv_pool", -0.1,
                     f"{where}: SGLang raises its 'Not enough memory' before it allocates the pool"),
            Evidence("pool_allocated", "memory.cuda_oom", WEIGHTS_READ,
                     f"{where}: the attention backend's workspaces and the CUDA graphs allocate next, from what the "
                     "pool left", support=True)]


# A launch over several nodes: the network between them (NCCL over IB / RoCE / TCP, gloo's TCP
# pairs, the TCPStore of ``--dist-init-addr``) is a part of it that a one-node launch does not have,
# and every start-up step after "Init torch distributed" waits on it (the weight loader's and the
# pool sizing's collectives: 0.4.x-0.5.x ModelRunner.init_memory_pool -> profile_max_num_token ->
# get_available_gpu_memory(distributed=True), an all_reduce(MIN) over every rank; the graph runners'
# barriers).  A text of such a launch that holds no failure of its own most often stopped waiting on
# a rank or node that had failed or could not be reached.  The text shows it by the launch's
# ``nnodes`` (the server_args dump) or by a rank past one node's GPUs in SGLang's log prefix (" TP13",
# " EP9": the rank in the tensor- / expert-parallel group, utils/common.py configure_logger, prefixed
# by scheduler.py; eight GPUs a node on HGX / DGX and MI300X boards).  Support only: it places the
# launch, it says nothing of the failure.  Tuned parts: of the 11 labelled failures of launches over
# several nodes, 8 were nccl (the 4 without their cause all nccl).
NODE_GPUS = 8
MULTI_NODE = 0.2
_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?((?: [A-Z_]+\d+)+)\]")
_GROUP_RANK = re.compile(r" (?:TP|EP)(\d+)\b")


def nodes_shown(server_args: dict | None, lines) -> str | None:
    """How the text shows a launch over several nodes (see ``MULTI_NODE``), or None."""
    try:
        nnodes = int(str((server_args or {}).get("nnodes", 1)).strip())
    except ValueError:
        nnodes = 1
    if nnodes > 1:
        return f"the launch's server_args give nnodes={nnodes}"
    for text in lines:
        m = _PREFIX.match(text)
        if m is None:
            continue
        rank = max((int(r) for r in _GROUP_RANK.findall(m.group(1))), default=-1)
        if rank >= NODE_GPUS:
            return (f"a log prefix names rank {rank} of a parallel group ({text[1:m.end() - 1].split(' ', 2)[-1]}), "
                    f"more ranks than one node's {NODE_GPUS} GPUs")
    return None


def multi_node(server_args: dict | None, lines) -> list[Evidence]:
    """A support piece for nccl when the text shows a launch over several nodes (``nodes_shown``)."""
    how = nodes_shown(server_args, lines)
    if how is None:
        return []
    return [Evidence("multi_node", "nccl", MULTI_NODE,
                     f"{how}: the launch runs over several nodes, and the network between them is what a start-up "
                     "step's collectives wait on", support=True)]


# Free GPU memory (GB) a start-up line may show before the next step has too little.  Session 25: 1.0 ->
# 1.5, from every tuned labelled log (failures and healthy ones, cause in the text or not) that shows
# the headroom capture started or ran with ("Capture cuda graph begin ... avail mem=", the capture bar's
# "avail_mem="): the CUDA OOMs showed 0.08-1.13 GB, every other failure 1.60 GB or more (a capture on
# SM75 that failed for another cause; then 2.60, 3.65 ...), the healthy launches 5.89 GB or more.  What a
# capture needs on top of the pools is about a GB at the common largest batch sizes (the graphs' own
# memory pool and the activations of the largest batch), which SGLang's own default for
# --mem-fraction-static reserves (server_args.py: more reserved the larger --cuda-graph-max-bs).
LOW_AVAIL_GB = 1.5
# The weight of that reading: the figures separated the tuned parts' labelled failures cleanly (every
# CUDA OOM at or under 1.13 GB, every other failure at 1.60 GB or more), which says more of the failure
# than the module its traceback was cut in (a place of ``WHERE``, 0.4: corpus/field14/019's capture
# began with 1.00 GB free and its traceback stops in an all_gather's output inside capture, a CUDA OOM).
LOW_MEMORY = 0.45


def gpu_memory_free(milestone) -> float | None:
    """The free GPU memory (GB) a start-up line shows: its ``avail mem=`` / ``free memory=``, or the
    scheduler's summary after the model worker is up ("max_total_num_tokens=..., available_gpu_mem=N GB",
    0.4.7+ scheduler.py, logged after capture and before the warm-up request; ``available_cpu_mem`` on a
    CPU device is host memory and is not read)."""
    figures = milestone.figures
    if "avail_mem_gb" in figures:
        return figures["avail_mem_gb"]
    if "available_mem_gb" in figures and "available_gpu_mem=" in (milestone.text or ""):
        return figures["available_mem_gb"]
    return None


def low_memory(last, phase: str) -> list[Evidence]:
    """The last milestone shows almost no free GPU memory (``avail mem=0.41 GB``): the next
    step ran out of it, the KV pool when the pools were being sized (SGLang's "Not enough
    memory"), else an allocation (a CUDA OOM while capturing graphs or warming up)."""
    try:
        avail = float(gpu_memory_free(last))
    except (TypeError, ValueError):
        return []
    if avail >= LOW_AVAIL_GB:
        return []
    category = "memory.kv_pool" if phase == "startup.memory_pool" else "memory.cuda_oom"
    return [Evidence("low_memory", category, LOW_MEMORY,
                     f"the last start-up line before it ({last.name}, line {last.line}) shows only {avail:g} GB of GPU "
                     f"memory free for {phase}")]


# The capture bar's headroom: cuda_graph_runner.py's tqdm description while it captures (0.4.x-0.5.13;
# from 0.5.14 model_executor/runner/*: the same words), "Capturing batches (bs=160 avail_mem=1.03 GB)",
# and the piecewise runner's "Capturing num tokens (num_tokens=512 avail_mem=0.76 GB)": the free GPU
# memory after each graph, newer than the "Capture cuda graph begin" milestone.  Several updates of a
# bar may share one line (tqdm's carriage returns): the last figure is the newest.
_CAPTURE_BAR_MEM = re.compile(r"Capturing (?:batches|num tokens) \([^()]*?avail_mem=(-?\d+(?:\.\d+)?) ?GB\)")


def low_capture_memory(text: str, where: str) -> list[Evidence]:
    """A piece for memory.cuda_oom when the capture bar in ``text`` (the last progress line before the
    failure, or the line a text with no failure ends with: ``where``) last showed less than
    ``LOW_AVAIL_GB`` free: capturing the next batch size had too little memory left."""
    figures = _CAPTURE_BAR_MEM.findall(text or "")
    if not figures:
        return []
    avail = float(figures[-1])
    if avail >= LOW_AVAIL_GB:
        return []
    return [Evidence("low_memory", "memory.cuda_oom", LOW_MEMORY,
                     f"the CUDA graph capture bar ({where}) shows only {avail:g} GB of GPU memory free while capturing")]


# The headroom the launch's own settings leave once the pools are sized, when the text shows no free
# memory after them (the last milestone is the pool allocated, or a capture / warm-up line without an
# ``avail mem=``: 0.4.0-0.4.3's "Capture cuda graph begin"): SGLang sizes the pools from the free memory
# at start-up ("Load weight begin. avail mem=F GB" is that free memory, before the weights) and leaves
# ``F x (1 - mem_fraction_static)`` to everything after them (0.4.6 model_runner.py
# ``profile_max_num_token``, 0.5.9 model_runner_kv_cache_mixin.py, 0.5.23 kv_cache_configurator.py
# ``_profile_available_bytes``: rest = free after the weights - total x (1 - mem_fraction_static)).  What
# capture and the first batches allocate comes from that share.  Checked on the 24 texts of the tuned parts
# and fixtures that print both the free memory before the weights and after the pools ("Memory pool end" /
# "Capture cuda graph begin"; docs/GUESS-MISSES.md session 33): the prediction was within -0.6..+1.4 GB of the
# printed figure on 17, above it by 1.9-22 GB on five (dev/020 on ROCm the most), under it on two (-2.1 GB,
# and a docs log's -65 GB); on the four whose prediction was under 3.5 GB the printed figure was lower every
# time (0.39 -> 0.00, 2.34 -> 0.41, 3.24 -> 2.09, 3.28 -> 3.02).  So a prediction under ``LOW_AVAIL_GB`` is
# read as a printed figure under it would be, weighed as that reading is (``LOW_MEMORY``), not more:
# fixtures/startup/notes_0_4_6_qwen3_0_6b_wsl_4gb.log (a 0.6B model on a 4 GB card, mem_fraction_static 0.88: 0.39 GB predicted, "Memory pool end. avail
# mem=0.00 GB") captured its four small graphs and became ready.  Never before the pools (the pool's own
# sizing is what fails there), never after ready, never on a CPU launch (host memory).
HEADROOM_AFTER = ("startup.cuda_graph", "startup.warmup")


def _fraction(server_args: dict | None) -> float | None:
    """The dump's ``mem_fraction_static`` as a share (0-1), or None when it gives none."""
    try:
        value = float(str((server_args or {}).get("mem_fraction_static")).strip("'\" "))
    except (TypeError, ValueError):
        return None
    return value if 0.0 < value < 1.0 else None


def pool_headroom(launch, last) -> list[Evidence]:
    """A piece for memory.cuda_oom when the launch's ``mem_fraction_static`` and the free memory before its
    weights leave less than ``LOW_AVAIL_GB`` after the pools, and the last milestone ``last`` is past their
    sizing and shows no free memory of its own (see above)."""
    if launch is None or last is None or gpu_memory_free(last) is not None:
        return []
    if last.name not in POOL_ALLOCATED and phase_after(last.name) not in HEADROOM_AFTER:
        return []
    if str((launch.server_args or {}).get("device") or "").strip("'\" ") == "cpu":
        return []  # (a CPU launch's "avail mem=" is host memory)
    fraction = _fraction(launch.server_args)
    begin = next((m for m in launch.milestones if m.name == "load_weights_begin"), None)
    if fraction is None or begin is None:
        return []
    try:
        free = float(begin.figures.get("avail_mem_gb"))
    except (TypeError, ValueError):
        return []
    rest = free * (1.0 - fraction)
    if free <= 0 or rest >= LOW_AVAIL_GB:
        return []
    return [Evidence("pool_headroom", "memory.cuda_oom", LOW_MEMORY,
                     f"the launch's mem_fraction_static={fraction:g} leaves about {rest:.2f} GB of the {free:g} GB free "
                     f"before the weights (line {begin.line}) to what comes after the pools (CUDA graph capture, the "
                     f"first batches); the last start-up line ({last.name}, line {last.line}) is past them")]


# SGLang's own pool-sizing check, from the figures it prints: the KV pool gets what is free after the
# weights less the share of the free memory before them that --mem-fraction-static leaves to
# activations and graphs, ``budget = A - F x (1 - mem_fraction_static)`` (F: "Load weight begin. avail
# mem=F GB", A: "Load weight end. ... avail mem=A GB"; 0.4.x model_runner.py ``profile_max_num_token``,
# 0.5.9 model_runner_kv_cache_mixin.py, 0.5.23 mem_cache/kv_cache_configurator.py
# ``_profile_available_bytes``), and it raises "Not enough memory. Please try to increase
# --mem-fraction-static" (0.5.2x: "Loaded weights leave no GPU memory for the KV cache") when that is not
# positive -- memory.kv_pool (whatever --max-total-tokens says: the cap is applied as min(cap, budget)).  Checked on the real SGLang 0.5.23 runs of fixtures/real and
# fixtures/healthy/real-0.5.23 (CPU: the same check on host memory): --mem-fraction-static 0.01 gives
# -0.77 GB and raised (with --max-total-tokens 20000); the eleven others 3.3-15.4 GB and did not (one raised "Not enough memory" for
# another reason, its --max-total-tokens 0: a cap of no tokens, for which a positive budget says nothing).  So a text
# whose failure (or end) comes after "Load weight end" and before the pool is allocated gets SGLang's own
# verdict: a budget under zero is the pool's sizing failing (memory.kv_pool, at ``LOW_MEMORY``); a positive
# one means that check passed, so the step's next work, allocating the pool's buffers, is what runs out
# (memory.cuda_oom support, ``WEIGHTS_READ``; -0.1 for memory.kv_pool, as ``pool_allocated``).  Within
# ``BUDGET_MARGIN_GB`` of zero it says nothing: the figures are rounded to 0.01 GB and SGLang takes the
# smallest free memory of every rank (get_available_gpu_memory(distributed=True)) where a text shows one
# rank's (ranks' figures differ by up to 0.16 GB in corpus/field14/003).
BUDGET_MARGIN_GB = 0.5


def _figure(milestone, key: str) -> float | None:
    try:
        return float(milestone.figures.get(key))
    except (TypeError, ValueError):
        return None


def _positive_cap(value) -> bool:
    """``--max-total-tokens`` is unset or a positive count: the pool gets min(cap, budget) tokens, more than none
    when the budget is positive (a cap of 0 is SGLang's "Not enough memory" whatever the budget)."""
    text = str(value if value is not None else "None").strip("'\" ")
    if text in ("None", ""):
        return True
    try:
        return int(text) > 0
    except ValueError:
        return False


def pool_budget(launch, last) -> list[Evidence]:
    """SGLang's pool-sizing verdict from the figures, when the last milestone ``last`` is "Load weight end" (the
    pool's sizing comes next): see above."""
    if launch is None or last is None or last.name != "load_weights_end":
        return []
    args = launch.server_args or {}
    fraction = _fraction(args)
    begin = next((m for m in launch.milestones if m.name == "load_weights_begin"), None)
    free, after = (_figure(begin, "avail_mem_gb") if begin is not None else None), _figure(last, "avail_mem_gb")
    if fraction is None or free is None or after is None or free <= 0:
        return []
    budget = after - free * (1.0 - fraction)
    figures = (f"the KV pool's budget from the figures is {after:g} GB free after the weights (line {last.line}) less "
               f"{free:g} GB x (1 - mem_fraction_static={fraction:g}) = {budget:.2f} GB")
    if budget <= -BUDGET_MARGIN_GB:
        return [Evidence("pool_budget", "memory.kv_pool", LOW_MEMORY,
                         f"{figures}: SGLang's own sizing check raises 'Not enough memory' on that")]
    if budget < BUDGET_MARGIN_GB or not _positive_cap(args.get("max_total_tokens")):
        return []
    if str(args.get("device") or "").strip("'\" ") == "cpu":
        return []  # (a CPU launch's pool is host memory: what runs out allocating it is no GPU memory)
    return [Evidence("pool_budget", "memory.kv_pool", -0.1, f"{figures}: SGLang's own sizing check passes on that"),
            Evidence("pool_budget", "memory.cuda_oom", WEIGHTS_READ,
                     f"{figures}: the pool's sizing passed, and allocating its buffers comes next", support=True)]


# Words that name a part of a launch, wherever they are in the failure's own text (its
# exceptions and failure lines): (name, regex, category, weight, why).  Each is a hint a person
# reading the fragment would take; a word that also shows in healthy start-up output (``nccl``,
# ``rocm``) weighs less, and in the lines around a failure (``from_text``) every word weighs
# half.  Only the first hit of each name counts.
# (compiled on first use, ``words()``: 16 case-blind patterns, 3-4 ms of explain's serial
# start-up, needed only once an incident is diagnosed)
WORD_SOURCES: tuple[tuple[str, str, str, float, str], ...] = (
    ("hardware", r"unsupported (?:gpu |cuda )?architecture|compute capability|no kernel image is available|"
     r"\bsm_?(?:7[05]|8[069]|9[0a]|10[03]|12[01])a?\b|not supported on (?:this|your) (?:gpu|device)|"
     r"requires (?:an? )?(?:sm|hopper|blackwell|ampere)", "kernel.unsupported_hw", 0.4,
     "it names a GPU architecture or compute capability"),
    ("platform", r"\b(?:rocm|hip(?:blas|Error)?|gfx\d{3,4}|mi(?:50|100|210|250|300x?)|ascend|npu|xpu|habana)\b",
     "kernel.unsupported_hw", 0.25, "it names a non-CUDA platform (ROCm/HIP, Ascend, XPU), where kernels differ"),
    ("nccl", r"\bnccl\b|process ?group|all_?reduce|all_?gather|\bgloo\b|c10d|init_process_group",
     "nccl", 0.3, "it names NCCL / torch.distributed"),
    # (also by who prints it: SGLang's PD-disaggregation classes, disaggregation/{base,common,fake,mooncake,
    # nixl,mori,ascend}/conn.py ``<Backend>KVSender`` / ``KVReceiver`` / ``KVManager`` / ``KVBootstrapServer``,
    # and the glog prefix of Mooncake's transfer engine, ``E0521 16:22:21.694042 162 transfer_metadata.cpp:877]``,
    # whose sources are mooncake-transfer-engine/src/transfer_engine*.cpp, transfer_metadata*.cpp and
    # transport/*/<name>_transport.cpp)
    ("transport", r"mooncake|transfer[ _]engine|\brdma\b|kvtransfer|bootstrap (?:server|room)|ibv_|"
     r"kv(?:sender|receiver|manager|bootstrapserver)\b|\btransfer_(?:metadata|engine)\w*\.cpp:\d+\]|"
     r"\b\w+_transport\.cpp:\d+\]",
     "nccl", 0.35, "it names the KV-transfer transport (Mooncake, NIXL, RDMA; SGLang's PD KV sender / receiver)"),
    ("argument", r"\bargument '[a-z_]+':|unrecognized arguments:|invalid choice:|the following arguments are required",
     "args.invalid", 0.4, "it is an argument parser's complaint about a named argument"),
    ("flag", r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+", "args.invalid", 0.3, "it names a launch flag"),
    ("transformers", r"transformers(?:==| version|>=|<)|upgrade (?:your )?transformers|model type .{0,40}not recognized|"
     r"does not recognize this architecture|architectures? .{0,80}not supported",
     "model.unsupported", 0.35, "it names the model's architecture or the transformers version"),
    ("hub", r"huggingface|(?-i:hf_hub)|offlinemodeisenabled|localentrynotfounderror|outgoing traffic has been disabled|"
     r"\b40[13] client error|repository not found|gated repo|local_files_only|"
     r"safetensors|config\.json|tokenizer_config|snapshot_download",
     "model.load", 0.3, "it names model files or the Hugging Face hub"),
    # (and the rest of torch's caching-allocator message, c10/cuda/CUDACachingAllocator.cpp, when a paste kept
    # only its tail: "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB of which 1.2 GiB is free.
    # Including non-PyTorch memory, this process has ... Of the allocated memory ... reserved by PyTorch but
    # unallocated", before torch 2.1 "(GPU 0; 23.69 GiB total capacity; ...; 22.94 GiB reserved in total by
    # PyTorch)"; none of these phrases is in SGLang's own output; and the message's last sentence, its advice
    # on fragmentation, which a wrapped paste may keep on a line of its own: torch 2.1+ "If reserved but
    # unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid
    # fragmentation.", before it "If reserved memory is >> allocated memory try setting max_split_size_mb to
    # avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
    ("cuda_oom", r"out of memory|\boom\b|outofmemoryerror|tried to allocate [\d.]+ ?[gmk]i?b|"
     r"total capacity of [\d.]+ ?[gmk]i?b|[\d.]+ ?[gmk]i?b total capacity|reserved (?:in total )?by pytorch|"
     r"non-pytorch memory|reserved but unallocated memory is large|reserved memory is >> allocated memory|"
     r"max_split_size_mb to avoid fragmentation", "memory.cuda_oom", 0.35, "it names running out of memory"),
    ("kv_pool", r"kv ?cache|mem[-_]fraction[-_]static|max_total_tokens|token_to_kv_pool|memory pool",
     "memory.kv_pool", 0.3, "it names the KV cache / memory pool sizing"),
    ("cuda_graph", r"cuda ?graph|capture_one_batch|graph capture|capturing batches", "cuda_graph", 0.3,
     "it names CUDA graph capture"),
    ("build", r"undefined symbol|\bninja\b|\bnvcc\b|ptxas|cpp_extension|torch_cuda_arch_list|compil(?:e|ing|ation) (?:error|failed)|"
     r"error building extension", "kernel.build", 0.35, "it names a kernel build (JIT, nvcc, ninja, a symbol)"),
    ("quantization", r"\b(?:awq|gptq|marlin|fp8|fp4|nvfp4|mxfp4|int4|w8a8|w4a16|bitsandbytes|bnb|gguf|"
     r"compressed[-_]tensors|modelopt)\b", "kernel.unsupported_hw", 0.2,
     "it names a quantization method, whose kernels exist only for some GPUs"),
    ("weight_name", r"keyerror: '\w+(?:\.\w+)*\.(?:weight|bias|qweight|qzeros|scales|g_idx|weight_scale(?:_inv)?|"
     r"input_scale|k_scale|v_scale)'|size mismatch for [\w.]+: copying a param|"
     r"(?:parameter|weight|tensor) .{0,60}not found in (?:the )?(?:checkpoint|params_dict|state_dict)",
     "model.load", 0.4, "it names a checkpoint tensor the model's parameters do not have (or that does not fit one)"),
    ("shape", r"size of tensor a \(\d+\) must match the size of tensor b \(\d+\)|"
     r"shapes? cannot be multiplied|not aligned with the quantized weight shape|\bshape mismatch\b",
     "model.unsupported", 0.3, "a tensor of the model has another size than the code expects: a checkpoint "
     "variant (a draft head, a quantization) this release's model code does not fit"),
    ("port", r"address already in use|eaddrinuse|errno 98|port .{0,20}(?:in use|not available)", "network.port", 0.45,
     "it names a port already in use"),
)


@functools.lru_cache(maxsize=None)
def words() -> tuple[tuple[str, re.Pattern, str, float, str], ...]:
    """``WORD_SOURCES`` with each regex compiled (case-blind)."""
    return tuple((name, re.compile(rx, re.IGNORECASE), category, weight, why)
                 for name, rx, category, weight, why in WORD_SOURCES)


# a server_args dump (or a wrapped part of one), or the launch command itself: both name every
# flag the user set, whether anything failed or not
_DUMP = re.compile(r"server_args=|ServerArgs\(|^\s*[,)]?\s*\w+=\S*,|"
                   r"-m\s+sglang(?:_router)?\.launch_\w+|\bsglang(?:\.launch_server| serve)\b")


# Lines that announce a step the server reached (a start-up milestone, a progress bar, the
# scheduler's batch lines): the phase the best guess reads (phase_prior) comes from them, and the
# words in them are the step's own name, printed by every healthy launch ("KV Cache is allocated",
# "Capture cuda graph begin", "Loading safetensors checkpoint shards", a batch line's "cuda graph:
# True"), not a word of a failure.  Reading them as words too counted one line twice, for the
# category of the step the server had *reached* (docs/GUESS-MISSES.md, group E/F).
_STEP_LITERALS: tuple[str, ...] = milestones.LITERALS + progress.LITERALS + ("Prefill batch", "Decode batch")


def step_line(text: str) -> bool:
    """The line announces a start-up step or a batch the server ran (see ``_STEP_LITERALS``)."""
    return any(lit in text for lit in _STEP_LITERALS)


# A setting echoed, not a failure: an environment assignment (``HF_HUB_OFFLINE=1``, ``export
# NCCL_DEBUG=INFO``, docker's ``-e TORCH_CUDA_ARCH_LIST=9.0``) names what was set, in every launch
# that sets it, failing or not; and a shell's echo of a command line (a prompt's ``$ env | grep
# NCCL``, ``user@host:~# ...``, set -x's ``+ export ...``) is what was typed, not what happened.
# Their words are no words of a failure (an upper-case ``HF_HUB_*`` name is a variable, the hub's
# own code is ``huggingface_hub`` / ``hf_hub_download``).
_ENV_ASSIGN = re.compile(r"(?<![\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+=(?:\"[^\"]*\"|'[^']*'|\S*)")
_SHELL_ECHO = re.compile(r"^\s*(?:\+{1,3}|\$|[\w.-]+@[\w.-]+:[^\s$#]*[$#])\s")


def echoed(text: str) -> bool:
    """The line is a shell's echo of a command line (see ``_SHELL_ECHO``)."""
    return bool(_SHELL_ECHO.match(text))


AROUND_WORDS = 0.5  # the scale of a word in the lines around a failure (not its own message)
# Words that count only in the failure's own message: the hub's names (``HF_HUB_OFFLINE=1`` and
# ``HF_HUB_ENABLE_HF_TRANSFER`` echoed by a launch script, a model path's ``config.json``, a
# checkpoint's ``safetensors``) are printed by healthy launches too, so in the lines around a
# failure, or at the end of a text with no failure, they say which files the launch reads, not
# that reading them failed.  Measured (bench/guess_cv.py, leave-one-part-out): words:hub from
# the lines around was the cue of 3 guesses, all wrong, on three parts (fresh, field12,
# field13); counted in the message only, 97/165 -> 98/165 (fresh/028 "other", now right).
OWN_MESSAGE_ONLY: frozenset[str] = frozenset({"hub"})


def _words(text: str, scale: float, source: str) -> list[Evidence]:
    out = []
    text = _ENV_ASSIGN.sub(" ", text)
    for name, rx, category, weight, why in words():
        if scale < 1.0 and name in OWN_MESSAGE_ONLY:
            continue
        m = rx.search(text)
        if m:
            out.append(Evidence(f"words:{name}", category, round(weight * scale, 3),
                                f"{why} ({m.group(0).strip()!r} in {source})", support=scale < 1.0))
    return out


# SGLang's own fixed advice inside a failure's message, the same whatever the failure was: a
# word of it is no word of the failure (0.5.10+ engine.py _scheduler_died_error names the OOM
# killer for every exit code: "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.
# Run `dmesg -T | grep -i oom` to check.")
_FIXED_ADVICE = re.compile(r"If exit code is -9 \(SIGKILL\),[^\n]*")


def failure_words(inc: Incident) -> str:
    """The failure's own words: its exceptions (type and message) and its failure lines."""
    echoes = echo_of_death(inc)
    return _FIXED_ADVICE.sub("", "\n".join([f"{e.type}: {e.message}" for e in inc.chain]
                                           + [line.text for line in inc.signals if line.number not in echoes]))


def from_words(inc: Incident) -> list[Evidence]:
    """Words of the failure's own text; the rest of the incident's lines at half weight."""
    own = failure_words(inc)
    out = _words(own, 1.0, "the failure's message") if own.strip() else []
    named = {ev.name for ev in out}
    # (a traceback's indented lines are its code, whose names are variables, not the failure's words)
    code = inc.kind == "traceback"
    rest = "\n".join(line.text for line in inc.lines
                     if line not in inc.signals and 'File "' not in line.text and not _DUMP.search(line.text)
                     and not step_line(line.text) and not (code and line.text[:1].isspace())
                     and not echoed(line.text))
    out += [ev for ev in _words(_FIXED_ADVICE.sub("", rest), AROUND_WORDS, "the incident's lines") if ev.name not in named]
    return out


# argparse's usage block: ``ArgumentParser.error`` prints the usage (``print_usage(sys.stderr)``: "usage: PROG
# [-h] [--flag FLAG] ...", wrapped into indented lines of bracketed options) and then "PROG: error: MESSAGE"
# (unrecognized arguments, an invalid choice, an ambiguous option, a required argument missing), and exits 2;
# ``-h`` prints the whole help instead, whose sections ("options:", "positional arguments:") follow the usage.
# A text that ends inside or right after the usage block, with no section after it, lost the error line
# that follows it: the launch's arguments were refused.  Its lines name every flag of the parser, used or
# not: they are no words of the failure (``usage_line``).
_USAGE_HEAD = re.compile(r"^\s*usage: \S")
_USAGE_WRAP = re.compile(r"^\s*(?:\[-|--?[A-Za-z][\w-]*(?: [A-Z][A-Z0-9_]*)? \[-)")
# wrapped usage lines at the end that say so with no "usage:" line among them: argparse wraps the usage at the
# terminal's width into lines of one to a few bracketed options, indented under the program's name; no other
# line SGLang or its libraries print begins with "[--" (the server_args dump is "ServerArgs(name=...", the -h
# help's option lines begin "--name"), and a paste often keeps only the block's last lines
# (corpus/field14/015: 11 of them and the error line)
USAGE_RUN = 3
ARGPARSE_USAGE = ALLOCATION_AT_DEEPEST  # what the text's last lines were doing: the parser refusing


def usage_line(text: str) -> bool:
    """The line is part of argparse's usage block (its head or a wrapped line of bracketed options)."""
    return bool(_USAGE_HEAD.match(text) or _USAGE_WRAP.match(text))


def argparse_usage(lines: list[str]) -> list[Evidence]:
    """The text (its last ``lines``, in order) ends in argparse's usage block: the "usage:" line and only
    wrapped option lines after it, or at least ``USAGE_RUN`` wrapped option lines (a block longer than the
    lines looked at).  The error line argparse prints after it was cut: args.invalid."""
    run = 0
    for text in reversed(lines):
        if not text.strip():
            continue
        if _USAGE_HEAD.match(text):
            run = max(run, USAGE_RUN)
            break
        if not _USAGE_WRAP.match(text):
            break
        run += 1
    if run < USAGE_RUN:
        return []
    return [Evidence("argparse_usage", "args.invalid", ARGPARSE_USAGE,
                     "the text ends in argparse's usage block, which the parser prints only before its "
                     "'error: ...' line (an unrecognized, ambiguous, missing or invalid argument); that line was cut")]


def from_text(lines: list[str]) -> list[Evidence]:
    """Words of the lines a fragment ends with, when no failure is in them (half weight);
    a ``server_args`` dump names every feature whether it is used or not: left out."""
    return _words("\n".join(t for t in lines if not _DUMP.search(t) and not step_line(t) and not echoed(t)
                            and not usage_line(t)), AROUND_WORDS,
                  "the last lines")


def _known_before_serving(diagnosis: Diagnosis) -> bool:
    """The log says the server was still starting (a start-up milestone before the failure and
    no ready line, or frames of a start-up step) and not yet at its warm-up request."""
    inc = diagnosis.incident
    if not inc.after_ready_known or inc.after_ready:
        return False
    last = None
    if diagnosis.launch is not None:
        for ms in diagnosis.launch.milestones:
            if ms.line < inc.first_line:
                last = ms.name
    if last is None:
        return bool(inc.captures.get("startup_frames"))
    return phase_after(last) not in ("startup.warmup", "serving")


def from_serving(inc: Incident) -> list[Evidence]:
    """What the scheduler's last batch lines before the failure show (incidents/serving.py):
    a full KV / state pool or retracted requests."""
    if not inc.serving:
        return []
    return [Evidence(name, category, weight, why) for name, category, weight, why in serving.evidence(inc.serving)]


# -- what the text says about the machine (diagnose/hardware.py) ----------------------------
#
# A fact about the machine says nothing of a failure by itself: a T4 runs many launches that fail of
# something else, and most held-back fragments name no GPU at all.  So each piece below counts only when
# the failure's own pieces already point the same way (a kernel's place or word, an allocation or a
# model larger than the GPUs, a distributed place or word), and then it agrees: it makes that reading
# more likely than a competing one (a cut traceback in an attention kernel under CUDA graph capture on
# a T4 is the kernel refusing SM75 more often than capture failing).  The one exception is torch's own
# warning that its wheel has no kernels for this GPU: every CUDA kernel of that process fails, whatever
# the failure's shape (torch/cuda/__init__.py ``_check_cubins`` / ``_warn_unsupported_code``).
# Never a veto, never an incident: the pieces are read only where a failure (or a text's end,
# fallback.no_incident) is already being weighed.
HW_CAPABILITY = 0.25  # a GPU (or platform) SGLang's kernels often leave out, with a kernel's piece
HW_TORCH_ARCH = 0.4  # torch's warning that this wheel has no kernels for the GPU
HW_WEIGHTS = 0.3  # a model whose weights alone exceed the GPUs' memory, with a start-up failure
HW_PCIE = 0.15  # several GPUs on PCIe (no NVLink), with a distributed piece
# what this model's weights take per parameter, by the quantization its name or the launch names
_BYTES_PER_PARAM = ((re.compile(r"(?i)awq|gptq|int4|4bit|w4a16|nvfp4|mxfp4|\bfp4\b|bnb|bitsandbytes|q4_"), 0.5),
                    (re.compile(r"(?i)fp8|int8|w8a8|8bit"), 1.0))
# the parameter count a model's name prints ("Qwen2.5-72B-Instruct", "Qwen3-30B-A3B": the total, first)
_PARAMS = re.compile(r"(?<![\w.])(\d{1,4}(?:\.\d)?)[Bb](?![\w.])")
WEIGHTS_FIT = 0.95  # the share of a GPU's memory the weights may take before they cannot fit with the rest


# Launch settings whose kernels exist only for some GPU generations, from SGLang's own checks and the
# kernels' builds: (server_args keys, values, lowest SM, highest SM or None, what refuses it).  Read
# against the SM the log names (diagnose/hardware.py) when a failure before ready is weighed: the launch
# asked this GPU for a kernel it has no code for.  Only where every release that has the value refuses it:
# - fa3: 0.4.x-0.5.23 layers/attention/attention_registry.py (server_args.py before) asserts "FlashAttention
#   v3 Backend requires SM>=80 and SM<=90" (major 8 for non-MLA models, or 9);
# - flashmla: FlashMLA's kernels are Hopper's (SM90) and later datacenter parts' (wgmma / tcgen05);
# - trtllm_mla: 0.5.23 arg_groups/overrides.py "TRTLLM MLA backend is only supported on Blackwell GPUs
#   (SM100/SM12x)" (0.4.x-0.5.x server_args.py: SM100); cutlass_mla: sgl-kernel's cutlass MLA decode is
#   built for SM100 only (vLLM's Sm100CutlassMLABackend is the same kernel);
# - trtllm_mha: 0.5.23 attention_hook.py "requires Hopper (SM90), Blackwell (SM100), or SM120" (earlier
#   releases SM100 only): below SM90 every release refuses it;
# - kv_cache_dtype nvfp4 / fp4_e2m1 / mxfp8: 0.5.23 kv_cache_hook.py "--kv-cache-dtype=nvfp4 requires
#   Blackwell SM100 or SM120", "--kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU".
# (Weight quantizations are not here: fp8 and NVFP4 weights fall back to Marlin's W8A16 / W4A16 kernels on
# SM80-SM90 in the releases that ship them, so a GPU below their native SM runs them.)
_BACKEND_KEYS = ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
SETTING_SM: tuple[tuple[tuple[str, ...], tuple[str, ...], int, int | None, str], ...] = (
    (_BACKEND_KEYS, ("fa3",), 80, 90, "FlashAttention 3 runs on SM80-SM90 only"),
    (_BACKEND_KEYS, ("flashmla",), 90, None, "FlashMLA's kernels need SM90 (Hopper) or newer"),
    (_BACKEND_KEYS, ("trtllm_mla", "cutlass_mla"), 100, None, "the TRT-LLM / CUTLASS MLA kernels need Blackwell (SM100)"),
    (_BACKEND_KEYS, ("trtllm_mha",), 90, None, "the TRT-LLM MHA kernels need SM90 or newer"),
    (("kv_cache_dtype",), ("nvfp4", "fp4_e2m1", "mxfp8"), 100, None, "an FP4 / MXFP8 KV cache needs Blackwell (SM100+)"),
)
HW_SETTING = HW_TORCH_ARCH  # as torch's own warning: every kernel of that choice fails on this GPU


def setting_gap(hw: hardware.Hardware, server_args: dict | None) -> str | None:
    """The first launch setting of ``SETTING_SM`` that the GPU the log names cannot run, said plainly, or
    None (no CUDA SM known, no dump, or every setting fits).  The values are only compared with the
    table's: a log's value chooses nothing."""
    sm = hw.get("sm")
    if not isinstance(sm, int) or hw.get("platform") not in (None, "cuda") or not server_args:
        return None
    for keys, values, low, high, why in SETTING_SM:
        for key in keys:
            value = str(server_args.get(key) or "").strip("'\" ").lower()
            if value in values and (sm < low or (high is not None and sm > high)):
                return f"the launch sets {key}={value} on {hw.gpu_label()}: {why}"
    return None


def machine(diagnosis: Diagnosis) -> hardware.Hardware:
    """The facts about the machine the log's lines that name it (``Launch.machine_lines``), the
    incident's lines, the launch's dump and its milestones give.  A traceback's frame lines and
    indented source lines are code, whose names (``torch_npu.npu_format_cast``) say what the code
    can call, not which machine ran it: left out."""
    inc = diagnosis.incident
    lines = [line.text for line in inc.lines
             if not (inc.kind == "traceback" and (line.text[:1].isspace() or 'File "' in line.text))]
    return launch_machine(diagnosis.launch, lines)


def launch_machine(launch, lines) -> hardware.Hardware:
    """The facts of ``launch`` (its machine lines, dump and milestones; None: none) and ``lines``."""
    if launch is None:
        return hardware.read(lines)
    return hardware.read(list(launch.machine_lines) + list(lines), launch.server_args, launch.milestones)


def weights_per_gpu(hw: hardware.Hardware, server_args: dict | None) -> tuple[float, str] | None:
    """The weights' size on one GPU, estimated from the parameter count the model's name prints, the
    bytes per parameter its quantization takes (bf16: 2) and the GPUs it is split over; None when the
    name prints no count or the text does not give the split.  A log's model name is read for a number
    only: it chooses no value of a remedy."""
    args = server_args or {}
    path = str(args.get("model_path") or "").strip("'\" ")
    name = path.rstrip("/").rsplit("/", 1)[-1]
    m = _PARAMS.search(name)
    gpus = hw.get("gpus_per_model")
    if m is None or not gpus:
        return None
    named = f"{name} {args.get('quantization') or ''} {args.get('dtype') or ''}"
    per = next((b for rx, b in _BYTES_PER_PARAM if rx.search(named)), 2.0)
    return float(m.group(1)) * per / gpus, (f"{name}: {m.group(1)}B parameters x {per:g} bytes over {gpus} GPU(s)")


def _points(pieces: list[Evidence], category: str) -> bool:
    return any(p.category == category and p.weight > 0 and not p.support for p in pieces)


_MEMORY = ("memory.cuda_oom", "memory.kv_pool", "memory.host_oom")


def _in_kernel(inc: Incident, pieces: list[Evidence]) -> bool:
    """The failure's own pieces show a kernel's code: a piece for kernel.unsupported_hw (an attention,
    quantization or MoE place, a word of a capability or a platform), a kernel place under CUDA graph
    capture (``CAPTURE_KERNEL_PLACE``: read as the capture phase), a deepest frame whose name names a
    kernel (``_KERNEL_PLACE_NAMES``), or a CUDA error before ready; not a process killed by a fatal
    signal (a crash there, ``fatal_dump``), nor a failure whose own pieces read as memory (an
    allocation the traceback stopped at: the machine must not outweigh it)."""
    if fatal_dump(inc) or any(_points(pieces, c) for c in _MEMORY):
        return False  # a crash, or a failure its own pieces read as memory: the GPU's generation is not it
    if _points(pieces, "kernel.unsupported_hw"):
        return True
    place = _place(inc)
    if place is not None and place.name == CAPTURE_KERNEL_PLACE:
        return True
    ours = sglang_frames(inc.frames)
    if ours and _KERNEL_PLACE_NAMES.search(f"{_short(ours[-1])} {ours[-1].function}"):
        return True
    return "cuda_error" in inc.signal_names and not inc.after_ready


# A deepest SGLang frame whose module or function names a kernel or the choice of one: the attention
# and linear-attention backends and their resolution (0.5.23 srt/arg_groups/attention_hook.py
# handle_attention_backend_compatibility, server_args' _handle_*_backend steps), quantization and MoE
# kernels, the platform back ends (srt/hardware_backend/*), GEMM / MLA kernels
_KERNEL_PLACE_NAMES = re.compile(r"(?i)attention|attn|quantiz|/moe/|_moe|moe_|backend|kernel|fp8|fp4|mla|gemm|"
                                 r"marlin|flashinfer|triton|cutlass")


def from_hardware(diagnosis: Diagnosis, pieces: list[Evidence]) -> list[Evidence]:
    """What the machine's facts add to the failure's own pieces ``pieces`` (see above)."""
    launch = diagnosis.launch
    hw = machine(diagnosis)
    ours = sglang_frames(diagnosis.incident.frames)
    if ours and "srt/hardware_backend/" in ours[-1].file.replace("\\", "/") and hw.get("platform") not in (None, "cuda"):
        # the platform's own back end (srt/hardware_backend/npu, .../xpu) failing on that platform: its
        # code is meant for it, so the platform is no gap of SGLang's CUDA kernels
        return []
    return machine_pieces(hw, pieces, _in_kernel(diagnosis.incident, pieces),
                          diagnosis.incident.after_ready, launch.server_args if launch is not None else None)


def machine_pieces(hw: hardware.Hardware, pieces: list[Evidence], in_kernel: bool, after_ready: bool,
                   server_args: dict | None) -> list[Evidence]:
    """The ``hardware:*`` pieces for the facts ``hw``, given the failure's pieces ``pieces`` and whether
    they show a kernel's code (``in_kernel``) and a failure after ready (see above)."""
    if not hw.facts:
        return []
    out: list[Evidence] = []
    gap = hardware.capability_gap(hw)
    # (a setting the GPU cannot run counts before ready only: after it, the server had run its kernels here)
    setting = setting_gap(hw, server_args) if not after_ready else None
    if hw.get("torch_lacks_arch") and not after_ready:
        # (after ready the server had run its kernels on this GPU: the warning did not hold, PTX carried it)
        out.append(Evidence("hardware:torch_arch", "kernel.unsupported_hw", HW_TORCH_ARCH,
                            f"{gap}: every CUDA kernel of this process fails on it ({hw.says('torch_lacks_arch')})"))
    elif setting is not None:
        # (the launch's own choice of a kernel this GPU has no code for: more precise than the generation alone)
        out.append(Evidence("hardware:setting", "kernel.unsupported_hw", HW_SETTING,
                            f"{setting} ({hw.says('gpu', 'sm')})"))
    elif gap and in_kernel and not hw.get("torch_lacks_arch"):
        out.append(Evidence("hardware:capability", "kernel.unsupported_hw", HW_CAPABILITY,
                            f"{gap}, and the failure is in a kernel's code ({hw.says('gpu', 'sm', 'platform')})"))
    fit = weights_per_gpu(hw, server_args)
    room = hw.get("free_gb") or hw.get("memory_gb")
    if fit is not None and room and fit[0] > WEIGHTS_FIT * room and not after_ready:
        source = "free before the weights" if hw.get("free_gb") else "of memory"
        out.append(Evidence("hardware:weights", "memory.cuda_oom", HW_WEIGHTS,
                            f"the weights alone take about {fit[0]:.0f} GB a GPU ({fit[1]}), more than the "
                            f"{room:g} GB {source} the log shows ({hw.says('free_gb', 'memory_gb')})"))
    # (a link fact is about several GPUs: nvidia-smi's matrix, SGLang's all-reduce checks between ranks)
    link = hw.get("link")
    several = (hw.get("gpu_count") or 0) > 1 or (hw.get("gpus_per_model") or 0) > 1 or link is not None
    pcie = link in ("pcie", "no_p2p") or (link is None and hw.get("nvlink_capable") is False)
    if several and pcie and _points(pieces, "nccl"):
        how = {"pcie": "the log shows PCIe links only between them",
               "no_p2p": "SGLang found no GPU peer-to-peer access between them"}.get(link, f"{hw.gpu_label()} has no NVLink")
        out.append(Evidence("hardware:pcie", "nccl", HW_PCIE,
                            f"several GPUs and {how}: peer-to-peer over PCIe (or none, through the host) is where "
                            f"NCCL fails most ({hw.says('link', 'gpu', 'gpu_count', 'gpus_per_model')})"))
    return out


def collect(diagnosis: Diagnosis) -> list[Evidence]:
    inc = diagnosis.incident
    pieces = (from_serving(inc) + from_signals(inc) + from_frames(inc) + from_library_frames(inc) + from_native_stack(inc) + from_symbolized_native_stack(inc) + from_cut_call(inc)
              + from_cut_type(inc) + from_allocation(inc) + from_capability_check(inc) + from_raise_site(inc) + from_sync_point(inc) + from_header(inc) + from_thread(inc) + from_exit_status(inc) + from_context(diagnosis) + from_words(inc)
              + from_bind_frame(inc) + from_config_lookup_frame(inc) + from_faulthandler_frames(inc))
    if any(p.name == "config_lookup_frame" for p in pieces):
        # the model-type lookup is the precise reading of the transformers frame the library piece
        # reads generically (transformers: a checkpoint that could not be read), and the raise it stops
        # at (transformers' config readers' sites, most of them a checkpoint's): one frame, one reading
        pieces = [p for p in pieces if p.name not in ("library_frame", "raise_site")]
    pieces += from_hardware(diagnosis, pieces)
    if fatal_dump(inc):
        pieces = [_crashed_in(p) if p.category == "kernel.unsupported_hw" and p.name in FRAME_PLACES else p
                  for p in pieces]
    if _known_before_serving(diagnosis):
        # a crash while serving is after ready by definition (CONTRACT): a native crash, a CUDA
        # error or a faulthandler dump in a start-up step is that step's failure, not one
        pieces = [p for p in pieces if p.category != "runtime.crash" or p.weight <= 0]
    return pieces


# -- weighing ------------------------------------------------------------------------------


def scores(evidence: list[Evidence]) -> dict[str, float]:
    """Each category's summed weight, in the order the categories first appear."""
    score: dict[str, float] = {}
    for ev in evidence:
        score[ev.category] = score.get(ev.category, 0.0) + ev.weight
    return score


def weigh(evidence: list[Evidence], context_known: bool) -> dict | None:
    """The best guess from the evidence, or None when nothing points anywhere."""
    score = scores(evidence)
    order = list(score)
    top: dict[str, float] = {}
    count: dict[str, int] = {}
    for ev in evidence:
        if ev.weight > 0:
            top[ev.category] = max(top.get(ev.category, 0.0), ev.weight)
            count[ev.category] = count.get(ev.category, 0) + 1
    # the strong failure lines name the failing part itself: they win over where the frames were
    strong = [ev for ev in evidence if ev.name.removeprefix("signal:") in STRONG_SIGNALS]
    candidates = [c for c in order if score[c] > 0 and c in top]
    if not candidates:
        return None
    # the text's own pieces (a frame, a failure line, an exit status, a word of the failure's own
    # message, a cut name) name the category; the supporting pieces (the phase read through the
    # prior, words of the lines around) only break a tie between the categories they name, or decide
    # when the text holds none: a prior counted from labelled logs says what usually fails in a phase,
    # not what failed here
    own = scores([ev for ev in evidence if not ev.support])
    named = [c for c in candidates if own.get(c, 0.0) > 0]
    if strong:
        best = strong[0].category
    elif named:
        best = max(named, key=lambda c: (round(own[c], 6), round(score[c], 6), -order.index(c)))
    else:
        best = max(candidates, key=lambda c: (round(score[c], 6), -order.index(c)))
    grounds = "text" if own.get(best, 0.0) > 0 else (
        "phase" if any(ev.category == best and ev.support and _places(ev) and ev.weight > 0
                       for ev in evidence) else "around")
    positive = sum(max(s, 0.0) for s in score.values())
    confidence = min(MAX_CONFIDENCE, top[best] + AGREE_BONUS * (count[best] - 1))
    if positive > 0:
        confidence *= 0.5 + 0.5 * max(score[best], 0.0) / positive  # the rest points elsewhere
    if not context_known:
        confidence *= UNKNOWN_CONTEXT
    used = [ev for ev in evidence if ev.category == best]
    against = [ev for ev in evidence if ev.category != best and ev.weight > 0]
    why = "; ".join(f"{ev.name} ({ev.weight:+.2f}): {ev.why}" for ev in used)
    if against:
        why += "; against it: " + "; ".join(f"{ev.name} for {ev.category} ({ev.weight:+.2f})" for ev in against)
    lowered = [ev for ev in evidence if ev.category != best and ev.weight < 0 and ev.category in top]
    if lowered:
        # a piece that took down another category the text had evidence for
        why += "; lowered: " + "; ".join(f"{ev.category} by {ev.name} ({ev.weight:+.2f}): {ev.why}" for ev in lowered)
    if not context_known:
        why += "; the log does not say whether the server had been ready (confidence lowered)"
    return {"category": best, "confidence": round(confidence, 3), "why": why, "grounds": grounds,
            "rests_on": rests_on(grounds, [ev for ev in evidence if ev.category == best and ev.weight > 0]),
            "evidence": [ev.to_json() for ev in evidence]}


GROUNDS = ("text", "phase", "around", "rule", "none")
# the supporting pieces that place the failure in SGLang's order of work (the phase read through the
# prior, the step after the server_args line), as against words of the lines around it
_PLACING = ("after_header", "weights_read", "pool_allocated")


def _places(ev: Evidence) -> bool:
    """The piece is a reading of where the failure came (``prior:PHASE``, ``_PLACING``)."""
    return ev.name.startswith("prior:") or ev.name in _PLACING


# how the placing pieces other than the prior say where the text stops (``rests_on``)
_STEP_PLACED = {"weights_read": "every checkpoint shard read, before 'Load weight end'",
                "pool_allocated": "the KV pool allocated, before CUDA graph capture"}


def rests_on(grounds: str, used: list[Evidence] | None = None, rule: str | None = None) -> str:
    """What a best guess rests on, said plainly: the text's own pieces, only the phase the text shows
    (read through what usually fails there), only words of the lines around, a rule's answer, or
    nothing (``GROUNDS``)."""
    names = ", ".join(dict.fromkeys(ev.name for ev in used or ()))
    if grounds == "text":
        return f"the text's own evidence ({names})"
    if grounds == "phase":
        phase = next((ev.name.removeprefix("prior:") for ev in used or () if ev.name.startswith("prior:")), None)
        if phase is None and any(ev.name == "after_header" for ev in used or ()):
            return ("only where the text stops (after the launch's server_args line, before any start-up step), read "
                    "through what SGLang does next: no piece of this failure itself is in the text")
        step = next((_STEP_PLACED[ev.name] for ev in used or () if ev.name in _STEP_PLACED), None)
        if phase is None and step is not None:
            return (f"only where the text stops ({step}), read through what SGLang does next: no piece of this "
                    "failure itself is in the text")
        return (f"only the phase the text shows ({phase or '?'}), read through what usually fails there (counted from "
                "labelled logs): no piece of this failure itself is in the text")
    if grounds == "around":
        return f"only words of the lines around the failure ({names}): no piece of the failure itself is in the text"
    if grounds == "rule":
        return f"rule {rule}'s answer" if rule else "a rule's answer"
    return "nothing in the text: no piece of the failure and no phase"
