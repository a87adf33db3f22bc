"""Incident assembly: lines in, launches / milestones / whole incidents out.

A record begins at a prefixed line and owns the unprefixed lines after it.  A traceback is
a record whose text holds ``Traceback (most recent call last):`` anywhere (SGLang puts it
after ``Scheduler hit an exception: ``), or an unprefixed ``  File "..."`` line with no
header (a log cut off at the top).  Tracebacks and failure signals of several ranks that
fail together, with the parent's ``Received sigquit ...``, form one incident.  A new
``server_args=`` dump starts a new launch and closes whatever is open: incidents never mix
launches.

The assembler is a pure state machine: ``feed(line)`` returns the events that line
completes, ``flush()`` completes whatever is open (end of input, or an idle gap in pipe
and watch modes).  ``active`` tells the block scanner whether a line without any trigger
literal could matter; when it is False such a line is a no-op and may be skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.incidents import milestones
from sglang_doctor.read import records
from sglang_doctor.incidents import server_args
from sglang_doctor.incidents import signals
from sglang_doctor.incidents import tracebacks
from sglang_doctor.model import Incident, Launch, Line, Milestone

# unprefixed lines that continue a signal record (faulthandler dumps, C++ stacks)
_SIGNAL_CONTINUATION = re.compile(
    r"^(?:\s+\S|Current thread 0x|Thread 0x|Extension modules:|Exception raised from|frame #\d+|"
    r"Fatal Python error|Python runtime state|Stack \(most recent call first\))"
)
_CANCEL_TYPES = ("KeyboardInterrupt", "CancelledError", "SystemExit")
# what a shell or supervisor prints after SGLang's own SIGKILL of its process tree
_AFTERMATH = ("killed", "exit_code")
_MAX_BARE_CONTINUATION = 200  # lines a signal-only incident may collect from unprefixed output

TRIGGER_LITERALS: tuple[str, ...] = tuple(
    sorted(
        set(milestones.LITERALS)
        | set(signals.LITERALS)
        | {tracebacks.HEADER, 'File "', server_args.MARKER, "Error: ", "Exception: ", "Error\n"}
    )
)


@dataclass
class Event:
    kind: str  # "launch" | "milestone" | "ready" | "incident"
    launch: Launch
    milestone: Milestone | None = None
    incident: Incident | None = None
    line: int = 0


@dataclass
class _Record:
    """The record the next unprefixed line belongs to."""

    ranks: tuple[str, ...]
    kind: str  # "traceback" | "signal" | "normal"
    builder: tracebacks.TracebackBuilder | None = None


@dataclass
class _Group:
    """An incident being assembled."""

    lines: list[Line] = field(default_factory=list)
    ranks: list[str] = field(default_factory=list)
    builders: list[tracebacks.TracebackBuilder] = field(default_factory=list)
    signal_lines: list[Line] = field(default_factory=list)
    signal_names: list[str] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)

    def add_ranks(self, ranks: tuple[str, ...]) -> None:
        label = records.rank_label(ranks)
        if label and label not in self.ranks:
            self.ranks.append(label)


class Assembler:
    def __init__(self, extra_signals: tuple[signals.Signal, ...] = ()):
        self.launches: list[Launch] = [Launch(index=0, line=None)]
        self._extra = extra_signals
        self._record: _Record | None = None
        self._group: _Group | None = None
        self._held: list[Line] = []  # blank lines a traceback builder holds back
        self._stopping = False  # the operator stopped the current launch
        self._went_down = False  # the current launch's parent reacted to a failed child

    # -- public ------------------------------------------------------------------------

    @property
    def launch(self) -> Launch:
        return self.launches[-1]

    @property
    def active(self) -> bool:
        return self._group is not None or self._held != [] or (
            self._record is not None and self._record.kind != "normal"
        )

    def feed(self, line: Line) -> list[Event]:
        events: list[Event] = []
        text = line.text
        if records.is_record_start(text):
            self._start_record(line, events)
        else:
            self._continue_record(line, events)
        return events

    def flush(self) -> list[Event]:
        events: list[Event] = []
        self._release_held(events)
        self._close_group(events)
        self._record = None
        return events

    # -- records -----------------------------------------------------------------------

    def _start_record(self, line: Line, events: list[Event]) -> None:
        prefix = records.parse_prefix(line.text)
        self._release_held(events)
        message = prefix.message
        if self._record and self._record.builder:
            self._record.builder.finish()
        dump = server_args.find_dump(message) if server_args.MARKER in message else None
        if dump is not None:
            self._close_group(events)
            self._new_launch(line, dump, events)
            self._record = _Record(prefix.ranks, "normal")
            return
        if tracebacks.HEADER in message:
            self._start_traceback(line, prefix.ranks, events, headless=False)
            return
        sig = self._classify(message)
        if sig is not None:
            self._signal(line, prefix.ranks, sig, events)
            return
        self._record = _Record(prefix.ranks, "normal")
        self._normal(line, prefix.ranks, message, events)

    def _continue_record(self, line: Line, events: list[Event]) -> None:
        text = line.text
        rec = self._record
        if rec is not None and rec.builder is not None:
            taken = rec.builder.offer(text)
            if taken:
                self._take_held_into_group(taken - 1)
                self._group.lines.append(line)
                return
            if not text.strip():
                self._held.append(line)
                return
            # the traceback ended before this line (and before any held blank lines)
            rec.builder.finish()
            rec.builder.release()
            self._release_held(events)
            self._record = _Record(rec.ranks, "normal")
        elif rec is not None and rec.kind == "signal":
            if _SIGNAL_CONTINUATION.match(text) or (not text.strip() and self._group is not None):
                self._group.lines.append(line)
                return
            self._record = _Record(rec.ranks, "normal")
        self._bare(line, events)

    def _bare(self, line: Line, events: list[Event]) -> None:
        """An unprefixed line that no open record claims."""
        text = line.text
        ranks = self._record.ranks if self._record else ()
        if tracebacks.HEADER in text:
            self._start_traceback(line, ranks, events, headless=False)
            return
        if 'File "' in text and tracebacks.is_frame(text):
            self._start_traceback(line, ranks, events, headless=True)
            return
        sig = self._classify(text)
        if sig is not None:
            self._signal(line, ranks, sig, events)
            return
        exc = tracebacks.strict_exception(text.strip()) if (":" in text and not text[:1].isspace()) else None
        if exc is not None and exc.message and not exc.type.endswith("Warning"):
            builder = tracebacks.TracebackBuilder(text, headless=True)
            builder.offer(text)
            self._open_group(events)
            self._group.builders.append(builder)
            self._group.add_ranks(ranks)
            self._group.lines.append(line)
            self._record = _Record(ranks, "traceback", builder)
            return
        group = self._group
        if (group is not None and group.signal_lines and not group.builders and text.strip()
                and len(group.lines) < _MAX_BARE_CONTINUATION and milestones.match(text) is None):
            # Native libraries (NCCL, torch's c10 logger) print several unprefixed lines per
            # failure ("NCCL INFO ... -> 6", "Exception ... detected by watchdog"): they
            # belong to the failure they follow, until the next prefixed record.
            group.lines.append(line)
            return
        self._normal(line, ranks, text, events)

    def _normal(self, line: Line, ranks: tuple[str, ...], message: str, events: list[Event]) -> None:
        found = milestones.match(message)
        if found is not None:
            name, figures = found
            ms = Milestone(name, line.number, records.rank_label(ranks) or None, figures, message)
            self.launch.milestones.append(ms)
            events.append(Event("milestone", self.launch, milestone=ms, line=line.number))
            if name == "ready" and self.launch.ready_line is None:
                self.launch.ready_line = line.number
                events.append(Event("ready", self.launch, line=line.number))
        group = self._group
        if group is not None and not self._group_waits_for(ranks):
            self._close_group(events)

    def _group_waits_for(self, ranks: tuple[str, ...]) -> bool:
        """An open incident stays open for records of ranks that have not failed yet."""
        label = records.rank_label(ranks)
        return bool(label) and bool(self._group.ranks) and label not in self._group.ranks

    # -- tracebacks and signals --------------------------------------------------------

    def _start_traceback(self, line: Line, ranks: tuple[str, ...], events: list[Event], *, headless: bool) -> None:
        builder = tracebacks.TracebackBuilder(line.text, headless=headless)
        self._open_group(events)
        self._group.builders.append(builder)
        self._group.add_ranks(ranks)
        self._group.lines.append(line)
        self._record = _Record(ranks, "traceback", builder)

    def _classify(self, message: str):
        found = signals.classify(message)
        if found is None and self._extra:
            for sig in self._extra:
                if any(lit in message for lit in sig.literals):
                    m = sig.regex.search(message)
                    if m:
                        return sig, {k: v for k, v in m.groupdict().items() if v is not None}
        return found

    def _signal(self, line: Line, ranks: tuple[str, ...], found, events: list[Event]) -> None:
        sig, captures = found
        if sig.role == "stop" or sig.role == "benign":
            self._stopping = True
            self._record = _Record(ranks, "normal")
            if self._group is not None and not self._group.builders:
                self._group = None  # evidence that turned out to be the operator's stop
            return
        if self._stopping and sig.role == "terminal":
            self._record = _Record(ranks, "normal")
            return
        if self._stopping and sig.name == "subprocess_crashed":
            self._record = _Record(ranks, "normal")
            return
        if self._went_down and self._group is None and sig.name in _AFTERMATH:
            # SGLang kills its own process tree after "Received sigquit" (0.5.9 with
            # include_parent=True): the shell's "Killed" / exit 137 that follows is the
            # end of the incident already reported, not a new failure.
            self._record = _Record(ranks, "normal")
            return
        self._open_group(events)
        group = self._group
        group.lines.append(line)
        group.signal_lines.append(line)
        group.signal_names.append(sig.name)
        for k, v in captures.items():
            group.captures.setdefault(k, v)
        group.add_ranks(ranks)
        self._record = _Record(ranks, "signal")
        if sig.role == "terminal":
            self._close_group(events)
            self._went_down = True
            self._record = _Record(ranks, "normal")

    # -- groups ------------------------------------------------------------------------

    def _open_group(self, events: list[Event]) -> None:
        if self._group is None:
            self._group = _Group()

    def _take_held_into_group(self, n: int) -> None:
        if n and self._held:
            self._group.lines.extend(self._held[-n:])
            del self._held[-n:]

    def _release_held(self, events: list[Event]) -> None:
        """Blank lines held back by a traceback that ended before them: ordinary lines."""
        self._held = []

    def _close_group(self, events: list[Event]) -> None:
        group = self._group
        if group is None:
            return
        self._group = None
        for b in group.builders:
            b.finish()
        incident = self._incident(group)
        if incident is not None:
            events.append(Event("incident", self.launch, incident=incident, line=incident.last_line))

    def _incident(self, group: _Group) -> Incident | None:
        launch = self.launch
        builders = group.builders
        primary = next((b for b in builders if b.complete), builders[0] if builders else None)
        if self._stopping and primary is not None and not group.signal_lines:
            exc = primary.chain[-1] if primary.chain else None
            if exc is None or exc.type.rsplit(".", 1)[-1] in _CANCEL_TYPES:
                return None
        lines = group.lines
        incident = Incident(
            kind="traceback" if builders else "signal",
            first_line=lines[0].number,
            last_line=lines[-1].number,
            lines=lines,
            ranks=list(group.ranks),
            signals=list(group.signal_lines),
            launch_index=launch.index,
            after_ready=launch.ready_line is not None and launch.ready_line < lines[0].number,
        )
        if primary is not None:
            incident.chain = primary.chain
            incident.exception = incident.chain[-1] if incident.chain else None
            incident.frames = primary.frames
            incident.truncated = not primary.complete
            incident.truncated_top = primary.truncated_top
        incident.signal_names = list(group.signal_names)
        incident.captures = dict(group.captures)
        return incident

    # -- launches ----------------------------------------------------------------------

    def _new_launch(self, line: Line, dump: str, events: list[Event]) -> None:
        try:
            fields, form = server_args.parse_dump(dump)
        except server_args.DumpError:
            fields, form = {}, None
        current = self.launch
        if current.line is None and not current.milestones:
            launch = current
            launch.line = line.number
        else:
            launch = Launch(index=len(self.launches), line=line.number)
            self.launches.append(launch)
        launch.server_args = fields
        launch.server_args_form = form
        launch.server_args_complete = form is not None and server_args.dump_is_complete(dump)
        launch.version_hint = "0.5.9-style" if form == "dataclass" else ("0.5.23-style" if form == "dict" else None)
        self._stopping = False
        self._went_down = False
        events.append(Event("launch", launch, line=line.number))


def launch_json(launch: Launch) -> dict[str, Any]:
    return {
        "event": "launch",
        "line": launch.line,
        "index": launch.index,
        "server_args": launch.server_args,
        "sglang_version": launch.sglang_version,
        "log_style": launch.version_hint,
    }
