"""The plain data that flows through sglang-doctor.

source -> Line -> Incident -> Diagnosis -> Remediation -> report / relaunch

Each stage is a module of its own; this one only holds the shapes they pass along,
so that every stage can be tested on its own and none has to import another's logic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Line:
    """One line of the input.

    ``text`` is what rules match: decoded (invalid UTF-8 replaced), ANSI escapes removed,
    a ``\\r`` progress-bar rewrite reduced to its last segment, no line terminator.
    ``raw`` is the original bytes of the line without its terminator, or None where the
    reader was asked not to keep them.  ``cut`` counts the bytes dropped from the middle
    of a pathological line (see reader.MAX_LINE_BYTES); 0 for every ordinary line.
    """

    number: int
    text: str
    raw: bytes | None = None
    cut: int = 0


@dataclass(slots=True)
class Prefix:
    """SGLang's log-record header: ``[2026-05-09 09:16:24 TP0] message``."""

    timestamp: str | None
    ranks: tuple[str, ...]
    message: str
    kind: str  # "sglang" | "uvicorn" | "time_only" | "bare"


@dataclass(slots=True)
class Frame:
    file: str
    line: int | None
    function: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


@dataclass(slots=True)
class ExceptionInfo:
    type: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


@dataclass
class Milestone:
    """A start-up step SGLang announced, with the figures the line gave."""

    name: str
    line: int
    rank: str | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    text: str = ""


@dataclass
class Launch:
    """What the log says about one launch (one ``server_args=`` dump and what followed)."""

    index: int  # 0-based, in order of appearance
    line: int | None  # line of the dump; None for lines before any dump
    server_args: dict[str, Any] = field(default_factory=dict)
    server_args_form: str | None = None  # "dataclass" (0.5.9 style) | "dict" (newer) | None
    sglang_version: str | None = None
    version_hint: str | None = None  # "0.5.9-style" / "0.5.23-style" when only the log style says
    server_args_complete: bool = False  # the dump reached its closing bracket
    sglang_version_range: Any = None  # remedy.release_range.ReleaseRange, attached by the pipeline
    milestones: list[Milestone] = field(default_factory=list)
    ready_line: int | None = None
    first_timestamp: str | None = None
    # line numbers of the launch's last scheduler batch lines (incidents/serving.py, at most
    # serving.KEEP): after ready, lines that show it still serving (incidents/survived.py)
    batch_lines: list[int] = field(default_factory=list)
    # the log's lines so far that name the machine (a GPU's model or capability, its memory, the
    # platform: diagnose/hardware.py), attached by the pipeline before a failure is diagnosed; the
    # best guess reads them as evidence (diagnose/evidence.py from_hardware)
    machine_lines: list[str] = field(default_factory=list)

    def milestone(self, name: str) -> Milestone | None:
        """The last milestone of that name (several ranks may each report it)."""
        for m in reversed(self.milestones):
            if m.name == name:
                return m
        return None

    @property
    def last_milestone(self) -> Milestone | None:
        return self.milestones[-1] if self.milestones else None


@dataclass
class Incident:
    """One whole failure, before any rule has looked at it.

    ``kind`` is "traceback" (at least one Python traceback, possibly several ranks' and
    chained parts) or "signal" (a failure that left no traceback: OOM kill, NCCL WARN,
    ``Killed``, an exit status, a C++ terminate, a faulthandler dump).
    """

    kind: str
    first_line: int
    last_line: int
    lines: list[Line] = field(default_factory=list)  # every line that belongs, in input order
    ranks: list[str] = field(default_factory=list)
    exception: ExceptionInfo | None = None  # the final (outermost) exception
    chain: list[ExceptionInfo] = field(default_factory=list)  # every exception, first to last
    frames: list[Frame] = field(default_factory=list)  # frames of every part, in order
    truncated: bool = False  # the end of the traceback is missing
    truncated_top: bool = False  # the start (header, first frames) is missing
    signals: list[Line] = field(default_factory=list)  # non-traceback evidence lines
    signal_names: list[str] = field(default_factory=list)  # signals.SIGNALS names, in order
    captures: dict[str, str] = field(default_factory=dict)  # named groups of the signal lines
    launch_index: int = 0
    after_ready: bool = False  # the launch had announced ready before this failure
    # whether the log says so: False for a fragment with no ready line, no launch header and
    # no start-up milestone before the failure (then after_ready is only a default)
    after_ready_known: bool = True
    # the input ends inside this incident's last line (a paste or search excerpt cut mid-line):
    # its last exception's message may have lost its end
    cut_at_end: bool = False
    # the scheduler's last batch lines before the failure (incidents/serving.py: usage, running
    # and queued requests, a retraction, seconds from the last batch to the failure), or None
    serving: dict[str, Any] | None = None

    @property
    def traceback(self) -> str:
        return "\n".join(line.text for line in self.lines)

    def text_lines(self) -> list[str]:
        return [line.text for line in self.lines]


@dataclass
class Remediation:
    """A concrete change to the launch, per CONTRACT.md."""

    set: dict[str, Any] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    command: list[str] | None = None
    alternatives: list["Remediation"] = field(default_factory=list)
    tradeoff: str | None = None  # one line, for alternatives
    safe: bool = True  # may be applied by ``run --yes`` without asking
    needs_human: bool = False  # no flag change can fix it (upgrade, free the GPU, ...)
    plan: dict[str, Any] | None = None
    remedy: str | None = None  # the name of the remedy that produced it
    target: dict[str, Any] | None = None  # the SGLang version the flags were checked against
    # Where each change came from (docs/DESIGN.md "Trust"): key = a flag of ``set`` or
    # ``unset``, or "env:NAME"; value = {"source": "command" | "catalogue" | "rule" |
    # "planner" | "log", "line": N (log only, when known), "value_from": "command" | "log"}.
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    untrusted: list[str] = field(default_factory=list)  # why ``run --yes`` must not apply it

    def is_empty(self) -> bool:
        return not (self.set or self.unset or self.env)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "set": dict(self.set),
            "unset": list(self.unset),
            "env": dict(self.env),
            "note": self.note,
            "command": list(self.command) if self.command is not None else None,
            "alternatives": [a.to_json() for a in self.alternatives],
            "safe": self.safe,
            "needs_human": self.needs_human,
        }
        if self.tradeoff is not None:
            out["tradeoff"] = self.tradeoff
        if self.plan is not None:
            out["plan"] = self.plan
        if self.remedy is not None:
            out["remedy"] = self.remedy
        if self.target is not None:
            out["target"] = self.target
        if self.provenance:
            out["provenance"] = {k: dict(v) for k, v in self.provenance.items()}
        if self.untrusted:
            out["untrusted"] = list(self.untrusted)
        return out


@dataclass
class Diagnosis:
    """An incident with the rule that explains it."""

    incident: Incident
    rule: str = "unknown"
    category: str = "other"
    phase: str = "unknown"
    title: str = ""
    explanation: str = ""
    confidence: float = 0.0
    remedies: list[dict[str, Any]] = field(default_factory=list)  # as named by the rule
    captures: dict[str, str] = field(default_factory=dict)
    remediation: Remediation | None = None
    launch: Launch | None = None
    layer: str = "specific"  # "specific" | "class" | "fallback": which layer of rules named it
    assumed: list[str] = field(default_factory=list)  # what the log did not say and was assumed
    # the rule's answer rests on its assumed conditions alone (nothing else it matched names a
    # place or a word of the failure: the catch-all "a crash while serving" on a fragment)
    assumed_only: bool = False
    # the honest fallback when the cause line is missing or no rule knew it:
    # {"missing": str | None, "best_guess": {"category", "confidence", "why", "grounds", "rests_on", ...}, "next_step": str}
    fallback: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        inc = self.incident
        out = {
            "event": "incident",
            "rule": self.rule,
            "category": self.category,
            "phase": self.phase,
            "title": self.title,
            "explanation": self.explanation,
            "confidence": round(self.confidence, 3),
            "lines": [inc.first_line, inc.last_line],
            "ranks": list(inc.ranks),
            "exception": inc.exception.to_json() if inc.exception else None,
            "chain": [e.to_json() for e in inc.chain],
            "frames": [f.to_json() for f in inc.frames],
            "traceback": inc.traceback,
            "truncated": inc.truncated,
            "truncated_top": inc.truncated_top,
            "kind": inc.kind,
            "launch": inc.launch_index,
            "remediation": self.remediation.to_json() if self.remediation else None,
            "layer": self.layer,
            "assumed": list(self.assumed),
        }
        if self.fallback is not None:
            out["fallback"] = self.fallback
        if inc.serving is not None:
            out["serving"] = dict(inc.serving)
        return out


# CONTRACT.md's category and phase names; rules are checked against these.
CATEGORIES = (
    "memory.kv_pool",
    "memory.cuda_oom",
    "memory.host_oom",
    "nccl",
    "model.unsupported",
    "model.load",
    "args.invalid",
    "kernel.build",
    "kernel.unsupported_hw",
    "cuda_graph",
    "network.port",
    "runtime.crash",
    "other",
)

PHASES = (
    "startup.args",
    "startup.distributed",
    "startup.load_weights",
    "startup.memory_pool",
    "startup.cuda_graph",
    "startup.warmup",
    "serving",
    "unknown",
)
