"""Progress lines: what SGLang (and the libraries it drives) print while a start-up step is
under way, when that step has no milestone of its own.

A traceback pasted without its cause often follows one of them (``Loading safetensors
checkpoint shards:  0% Completed``, ``Capturing batches (bs=256 ...)``, ``flashinfer.jit:
Loading JIT ops``): the step the server was in when it failed.  The assembler keeps the last
one it saw and hands it to the incident that follows (captures ``progress_phase`` and
``progress_line``); the fallback weighs it as evidence, and the summary of a text with no
failure in it uses the same table for its last line.

Each entry: a literal (plain substring, also a trigger of the block scanner) and the phase
the server is in while it prints it (one of model.PHASES, or JIT_BUILD).  More specific literals come first.
"""

from __future__ import annotations

import re

# not a start-up phase of its own (a JIT build happens in whichever phase first runs the
# kernel): the fallback reads it as kernel-build evidence
JIT_BUILD = "jit_build"

PROGRESS: tuple[tuple[str, str], ...] = (
    # weights: model_loader/weight_utils.py's tqdm bars (safetensors, pt, multithread), the
    # fp8 checkpoint notice of ModelConfig, the loaders' start
    ("Loading safetensors checkpoint shards", "startup.load_weights"),
    ("Loading pt checkpoint shards", "startup.load_weights"),
    ("Multi-thread loading", "startup.load_weights"),  # "... shards", "... pt checkpoint shards"
    ("Detected fp8 checkpoint", "startup.load_weights"),
    ("Using model weights format", "startup.load_weights"),
    # CUDA graphs: cuda_graph_runner.py's tqdm bar ("Capturing batches (bs=8 avail_mem=...)")
    ("Capturing batches", "startup.cuda_graph"),
    # JIT kernels being built or loaded: flashinfer.jit's "Loading JIT ops: NAME", DeepGEMM's
    # "Try DeepGEMM JIT Compiling for <GEMM_...>" (srt/layers/deep_gemm_wrapper)
    ("Loading JIT ops", JIT_BUILD),
    ("DeepGEMM JIT Compiling", JIT_BUILD),
    # Triton < 3.2 compiling SGLang's decode-attention kernel prints the MLIR diagnostic
    # 'loc("...decode_attention.py":L:C): error: operation scheduled before its operands' (harmless:
    # signals.py triton_ignorable_diagnostic); it shows a Triton kernel being compiled right then
    ("error: operation scheduled before its operands", JIT_BUILD),
    # (not the serving batch logs, "Prefill batch" / "Decode batch": they are most of a serving
    # log, and as triggers every one of them would go through the assembler; the ready line
    # says "serving" already, and the no-incident summary reads them from the last lines)
)

LITERALS: tuple[str, ...] = tuple(sorted({lit for lit, _ in PROGRESS}))


def phase_of(text: str) -> str | None:
    """The phase a progress line shows, or None when the line is not one."""
    for literal, phase in PROGRESS:
        if literal in text:
            return phase
    return None


# the end of a tqdm bar: its "[elapsed<remaining, rate]" field ("[00:00<?, ?it/s]",
# "[00:19<01:17,  9.66s/it]")
_BAR_END = re.compile(r"\[[0-9:]+<[^\]\n]*(?:it/s|s/it)\]")


def bar_run_into(text: str) -> str | None:
    """The phase of a progress bar that the next message was written onto, or None.

    tqdm ends its bar with a carriage return, not a line end; what the process writes next (a
    C++ "terminate called after throwing ...", a Python warning, a log line) lands on the same
    line, after the bar.  Such a line shows the step the server was in when that message came:
    the bar at its start, then more text after the bar's "[elapsed<remaining, rate]" field."""
    stripped = text.lstrip()
    for literal, phase in PROGRESS:
        if stripped.startswith(literal):
            end = _BAR_END.search(stripped)
            return phase if end is not None and stripped[end.end():].strip() else None
    return None
