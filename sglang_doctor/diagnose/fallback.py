"""The honest fallback: what is said when no rule knew the failure, or when the line that
names the cause is not in the text.

It says what is missing ("the traceback was cut above its last line"; "only the parent's
sigquit is here: the child's error is above it or in another file"), gives the best guess
with its confidence and the evidence it rests on (the diagnosis of a rule layer when one
matched; else the frames, the signals, the phase), and the one command that gets the missing
part.  ``LOG`` in a command stands for the log file on the server.
"""

from __future__ import annotations

import re
from typing import Any

from sglang_doctor.incidents.milestones import phase_after
from sglang_doctor.incidents.tracebacks import sglang_frames
from sglang_doctor.model import Diagnosis, Frame, Incident, Launch

# Where a traceback was when its text stopped: (path part after ".../sglang/", function
# names or None for any, category, why).  Tried from the deepest SGLang frame outwards;
# the first that fits names the guess.  Serving loops come last: a failure inside a model's
# forward is only a serving crash when nothing deeper says more.
_WHERE: tuple[tuple[str, tuple[str, ...] | None, str, str], ...] = (
    ("srt/server_args", None, "args.invalid", "it stopped in server_args (argument checks)"),
    ("srt/model_executor/cuda_graph_runner", None, "cuda_graph", "it stopped while capturing CUDA graphs"),
    ("", ("init_cuda_graphs", "init_device_graphs", "capture", "capture_one_batch_size"), "cuda_graph",
     "it stopped while capturing CUDA graphs"),
    ("srt/distributed/", None, "nccl", "it stopped in torch distributed / NCCL set-up"),
    ("", ("init_torch_distributed", "initialize_model_parallel", "init_distributed_environment"), "nccl",
     "it stopped in torch distributed / NCCL set-up"),
    ("srt/mem_cache/", None, "memory.kv_pool", "it stopped in SGLang's memory pools"),
    ("", ("init_memory_pool", "profile_max_num_token"), "memory.kv_pool", "it stopped sizing the memory pools"),
    ("srt/jit_kernel/", None, "kernel.build", "it stopped in a JIT kernel build"),
    ("srt/layers/attention/", None, "kernel.unsupported_hw", "it stopped inside an attention kernel"),
    ("srt/layers/quantization/", None, "kernel.unsupported_hw", "it stopped inside a quantization kernel"),
    ("srt/layers/moe/", None, "kernel.unsupported_hw", "it stopped inside a MoE kernel"),
    ("srt/model_loader/", None, "model.load", "it stopped loading the model"),
    ("srt/models/", ("load_weights",), "model.load", "it stopped in the model's load_weights"),
    ("", ("load_model", "_initialize_model", "get_model"), "model.load", "it stopped loading the model"),
    ("srt/configs/", None, "model.load", "it stopped reading the model's configuration"),
    ("srt/models/", ("forward",), "kernel.unsupported_hw",
     "it stopped inside a model's forward pass, where kernels for this GPU run"),
    ("srt/managers/tokenizer_manager", None, "runtime.crash", "it stopped in the tokenizer manager while serving"),
    ("srt/managers/detokenizer_manager", None, "runtime.crash", "it stopped in the detokenizer while serving"),
    ("", ("event_loop_normal", "event_loop_overlap", "event_loop_pp", "run_batch", "process_batch_result",
          "forward_thread_func", "forward_thread_func_", "get_next_batch_to_run", "handle_loop"),
     "runtime.crash", "it stopped in the scheduler's serving loop"),
)
_SIGNAL_GUESS: dict[str, tuple[str, float, str]] = {
    "oom_killer": ("memory.host_oom", 0.6, "the kernel's OOM killer killed the process"),
    "killed": ("memory.host_oom", 0.5, "the process was killed (SIGKILL) with no Python error: most often the "
               "kernel's OOM killer"),
    "exit_code": ("memory.host_oom", 0.35, "a process exited with no Python error"),
    "scheduler_died": ("memory.host_oom", 0.4, "a scheduler died during initialization with no Python error"),
    "scheduler_dead": ("memory.host_oom", 0.35, "a scheduler process died with no Python error"),
    "subprocess_crashed": ("memory.host_oom", 0.3, "a subprocess died with no Python error"),
    "nccl_warn": ("nccl", 0.5, "NCCL warned before the failure"),
    "nccl_error": ("nccl", 0.5, "NCCL reported an error"),
    "nccl_watchdog": ("nccl", 0.5, "torch's NCCL watchdog caught a failed or stuck collective"),
    "c10d_peer_gone": ("nccl", 0.4, "a peer's TCPStore connection broke: another rank or node went away first"),
    "segfault": ("runtime.crash", 0.3, "a native crash (segmentation fault)"),
    "cuda_error": ("runtime.crash", 0.35, "a CUDA error"),
    "cpp_terminate": ("runtime.crash", 0.3, "a C++ exception terminated the process"),
    "faulthandler": ("runtime.crash", 0.3, "Python's faulthandler reported a fatal error"),
    "watchdog_timeout": ("runtime.crash", 0.35, "SGLang's scheduler watchdog fired: a forward pass hung"),
}
_EXIT_KILLED = ("-9", "137")
_CALL = re.compile(r"(?:^|[\s.=(])([A-Za-z_]\w*)\(")
_TERMINAL = ("sigquit_launch", "sigquit_running")


def unknown_diagnosis(incident: Incident, launch: Launch | None) -> Diagnosis:
    """What is said of an incident no rule knows."""
    exc = incident.exception
    if exc is not None and (exc.type or exc.message):
        first = exc.message.splitlines()[0] if exc.message else ""
        title = f"{exc.type}: {first}".strip().rstrip(":") if exc.type else first.strip()
    elif incident.signals:
        title = incident.signals[0].text.strip()[:200]
    elif incident.kind == "traceback":
        title = "A traceback whose exception line is missing"
    else:
        title = "A failure with no exception line"
    deepest = sglang_frames(incident.frames)
    where = ""
    if deepest:
        f = deepest[-1]
        where = f" The deepest SGLang frame is {f.function} ({f.file.split('/sglang/')[-1]}:{f.line})."
    phase = "serving" if incident.after_ready else "unknown"
    if launch is not None and not incident.after_ready:
        last = None
        for ms in launch.milestones:
            if ms.line < incident.first_line:
                last = ms.name
        phase = phase_after(last) if (launch.line is not None or launch.milestones) else "unknown"
    return Diagnosis(
        incident=incident,
        rule="unknown",
        category="runtime.crash" if incident.after_ready else "other",
        phase=phase,
        title=title,
        explanation=f"No rule knew this failure.{where}",
        confidence=0.2,
        launch=launch,
        layer="fallback",
    )


# -- what is missing ---------------------------------------------------------------------


def missing_part(incident: Incident) -> str | None:
    """What the text lacks to name the cause, or None when the cause line is there."""
    if incident.kind == "traceback":
        ours = sglang_frames(incident.frames)
        if ours and ours[-1].function.endswith("sigquit_handler") and incident.exception is None:
            return ("only the parent's sigquit handler is here: the child's error is above these lines "
                    "or in another log (the scheduler's own output)")
        if incident.exception is None or not (incident.exception.type or incident.exception.message):
            if not incident.frames:
                return "the traceback was cut right after its first line: no frame and no exception line"
            return "the traceback was cut above its last line: the exception that names the cause is missing"
        if incident.exception.message.strip().lower() in ("", "error", "error:", "failed", "none"):
            return (f"the exception line ({incident.exception.type}: {incident.exception.message.strip()}) says "
                    "nothing beyond its type: the cause is in the lines printed before it")
        return None
    names = set(incident.signal_names)
    if names and names <= set(_TERMINAL) | {"exit_code", "subprocess_crashed", "scheduler_dead", "scheduler_died"}:
        if names & set(_TERMINAL):
            return ("only the parent's sigquit is here: the child's error is above these lines "
                    "or in another log (the scheduler's own output)")
        return "only an exit status is here: the error that made the process exit is not in the text"
    if names & {"killed", "oom_killer"}:
        return "no Python error: the process was killed from outside, so its own log stops without a cause"
    if "segfault" in names:
        return "a native crash: the Python side printed nothing, and the native backtrace does not name the cause"
    if "c10d_peer_gone" in names and not names & {"nccl_warn", "nccl_error"}:
        return "a peer went away first: the cause is in the log of the rank or node that died"
    return None


def next_step(incident: Incident, missing: str | None, fragment: bool) -> str:
    """The one command that gets the missing part (``LOG`` = the server's log file)."""
    names = set(incident.signal_names)
    if names & {"killed", "oom_killer"} or (incident.captures.get("exit_code") in _EXIT_KILLED):
        return "sudo dmesg -T | grep -i -E 'killed process|out of memory'   # on the server: was it the OOM killer?"
    if "segfault" in names:
        return "rerun with NCCL_DEBUG=INFO and PYTHONFAULTHANDLER=1, then: grep -n -B5 -A40 -E 'Fatal Python|NCCL WARN' LOG"
    if "c10d_peer_gone" in names or "nccl_watchdog" in names:
        return "grep -n -B2 -A80 -E 'Traceback|NCCL WARN' LOG   # on every node: the first rank that failed has the cause"
    if (names & set(_TERMINAL) and incident.kind == "signal") or (missing or "").startswith("only the parent's sigquit"):
        return "grep -n -B2 -A80 'hit an exception' LOG   # the child's traceback, above the sigquit line"
    if incident.kind == "traceback" and missing:
        if fragment:  # a tail or a paste: the file it came from has the rest
            return "sglang-doctor explain LOG   # the whole log file, not a tail (or: grep -n -B2 -A80 'Traceback' LOG)"
        return "grep -n -B2 -A80 'Traceback (most recent call last)' LOG   # the whole traceback, on the server"
    if fragment:
        return "sglang-doctor explain LOG   # on the whole log file, not a tail of it"
    return "grep -n -B2 -A80 'Traceback (most recent call last)' LOG"


# -- the best guess --------------------------------------------------------------------


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


def guess_from_frames(frames: list[Frame]) -> tuple[str, float, str] | None:
    ours = sglang_frames(frames)
    for depth, f in enumerate(reversed(ours)):
        path = f.file.replace("\\", "/")
        called = _called(f.source) if depth == 0 else None
        for part, functions, category, why in _WHERE:
            if called and functions is not None and not part and _fits(path, called, part, functions):
                # the deepest frame's source line shows what it was calling when the text stopped
                return category, 0.35, f"{why} ({f.function} was calling {called}, {_short(f)})"
            if not _fits(path, f.function, part, functions):
                continue
            confidence = 0.4 if depth == 0 else 0.3
            return category, confidence, f"{why} ({f.function} in {_short(f)})"
    return None


def best_guess(diagnosis: Diagnosis) -> dict[str, Any]:
    inc = diagnosis.incident
    if diagnosis.layer != "fallback":
        return {"category": diagnosis.category, "confidence": round(diagnosis.confidence, 3),
                "why": f"rule {diagnosis.rule} matched what the text holds"}
    names = inc.signal_names
    if "segfault" in names and any("==== backtrace" in line.text or "ucs" in line.text.lower().split()
                                   for line in inc.signals):
        return {"category": "nccl", "confidence": 0.3,
                "why": "a segmentation fault reported by UCX's handler (\"==== backtrace\"): UCX carries the "
                       "communication libraries (NCCL over IB, KV transfer)"}
    for name in names:  # evidence the text does hold, in order
        if name in ("nccl_warn", "nccl_error", "nccl_watchdog", "oom_killer", "killed", "segfault", "cuda_error"):
            category, conf, why = _SIGNAL_GUESS[name]
            return {"category": category, "confidence": conf, "why": why}
    found = guess_from_frames(inc.frames)
    if found is None and inc.captures.get("thread_func"):
        func = inc.captures["thread_func"]
        found = next(((cat, 0.3, f"{why} (the traceback came from thread function {func})")
                      for part, functions, cat, why in _WHERE if not part and _fits("", func, part, functions)), None)
    if found is not None:
        category, conf, why = found
        if inc.after_ready and category not in ("runtime.crash",):
            why += "; the server had been ready"
        return {"category": category, "confidence": conf, "why": why}
    if inc.captures.get("exit_code") in _EXIT_KILLED:
        return {"category": "memory.host_oom", "confidence": 0.5,
                "why": "exit code -9 / 137 (SIGKILL) with no Python error: most often the kernel's OOM killer"}
    for name in names:
        if name in _SIGNAL_GUESS:
            category, conf, why = _SIGNAL_GUESS[name]
            return {"category": category, "confidence": conf, "why": why}
    if inc.after_ready:
        return {"category": "runtime.crash", "confidence": 0.3, "why": "the server had been ready before it failed"}
    launch = diagnosis.launch
    if launch is not None and (launch.line is not None or launch.milestones):
        phase = diagnosis.phase if diagnosis.phase != "unknown" else None
        category = {"startup.distributed": "nccl", "startup.load_weights": "model.load",
                    "startup.memory_pool": "memory.kv_pool", "startup.cuda_graph": "cuda_graph",
                    "startup.args": "args.invalid", "serving": "runtime.crash"}.get(phase or "")
        if category:
            return {"category": category, "confidence": 0.25, "why": f"the last start-up step seen points at {phase}"}
    return {"category": diagnosis.category, "confidence": round(min(diagnosis.confidence, 0.2), 3),
            "why": "nothing in the text points anywhere more precise"}


def attach(diagnosis: Diagnosis) -> Diagnosis:
    """Add the fallback block when the cause line is missing or no rule knew the failure."""
    inc = diagnosis.incident
    missing = missing_part(inc)
    if missing is None and diagnosis.layer != "fallback":
        return diagnosis
    launch = diagnosis.launch
    fragment = launch is None or (launch.line is None and not launch.milestones)
    guess = best_guess(diagnosis)
    if diagnosis.layer == "fallback":
        # the guess becomes the incident's category only when the cause line is missing and
        # evidence points somewhere; a cause line no rule knows stays "other"
        if missing and guess["category"] not in ("other",) and guess["confidence"] >= 0.25:
            diagnosis.category = guess["category"]
            diagnosis.confidence = min(max(diagnosis.confidence, guess["confidence"]), 0.5)
        where = "the cause line is not in the text" if missing else "no rule knew this failure"
        diagnosis.explanation = (f"{diagnosis.explanation} Best guess ({where}): {guess['category']}, "
                                 f"confidence {guess['confidence']}.").strip()
    diagnosis.fallback = {"missing": missing, "best_guess": guess, "next_step": next_step(inc, missing, fragment)}
    return diagnosis


# -- a text with no failure in it ---------------------------------------------------------
# What the last line of a fragment shows the server doing: (substring, phase).
_LAST_LINE: tuple[tuple[str, str], ...] = (
    ("Decode batch", "serving"), ("Prefill batch", "serving"), ("HTTP/1.1", "serving"),
    ("Application startup complete", "serving"), ("Started server process", "serving"),
    ("Waiting for application startup", "serving"), ("Uvicorn running on", "serving"),
    ("Capturing batches", "startup.cuda_graph"), ("Capture cuda graph", "startup.cuda_graph"),
    ("Loading safetensors checkpoint shards", "startup.load_weights"), ("Load weight", "startup.load_weights"),
    ("Detected fp8 checkpoint", "startup.load_weights"), ("Loading pt checkpoint shards", "startup.load_weights"),
    ("Init torch distributed ends", "startup.load_weights"), ("Init torch distributed", "startup.distributed"), ("KV Cache is allocated", "startup.memory_pool"),
    ("Memory pool end", "startup.cuda_graph"),
)
_PHASE_CATEGORY = {"startup.distributed": "nccl", "startup.load_weights": "model.load",
                   "startup.memory_pool": "memory.kv_pool", "startup.cuda_graph": "cuda_graph",
                   "startup.warmup": "runtime.crash", "serving": "runtime.crash"}


def _last_lines(tail: bytes, n: int = 3) -> list[str]:
    """The last n non-empty lines, last first (a paste often cuts its very last line short)."""
    out = []
    for raw in reversed(tail.split(b"\n")):
        text = raw.decode("utf-8", "replace").strip()
        if text:
            out.append(text)
            if len(out) == n:
                break
    return out


def no_incident(launches: list[Launch], tail: bytes, lines: int) -> dict[str, Any] | None:
    """For a text with no failure in it that is not a whole launch (no ``server_args`` dump
    followed by the ready line): say that no failure is here, where its cause would be if the
    server did fail, and the best guess from the last thing the text shows.  None for an empty
    input and for a whole healthy launch."""
    if lines == 0:
        return None
    launch = launches[-1] if launches else None
    if launch is not None and launch.line is not None and launch.ready_line is not None:
        return None  # a whole launch that became ready: nothing is missing
    phase, last = None, ""
    for text in _last_lines(tail):
        phase = next((p for lit, p in _LAST_LINE if lit in text), None)
        if phase is not None:
            last = text
            break
    why = None
    if phase is not None:
        why = f"the text ends while the server is at {phase} ({last[:80]!r})"
    elif launch is not None and launch.ready_line is not None:
        phase, why = "serving", "the server had been ready"
    elif launch is not None and launch.milestones:
        phase = phase_after(launch.milestones[-1].name)
        why = f"the last start-up step seen is {launch.milestones[-1].name}"
    category = _PHASE_CATEGORY.get(phase or "")
    guess = ({"category": category, "confidence": 0.25, "why": why + "; if it failed, it failed there"}
             if category else {"category": "other", "confidence": 0.1, "why": "the text shows no failure and no phase"})
    return {
        "missing": (f"no failure is in these {lines} lines: if the server failed, its error comes after the last "
                    "line (the text ends there) or is in another log"),
        "best_guess": guess,
        "next_step": "sglang-doctor explain LOG   # on the whole log file; or: grep -n -B2 -A80 'Traceback' LOG",
    }
