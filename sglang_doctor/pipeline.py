"""Wires the stages: bytes -> lines -> incidents -> diagnoses -> remediations -> events.

``StreamPipeline`` is used by every mode: ``explain`` feeds a file's blocks, pipe mode
feeds standard input as it arrives, ``watch`` feeds what the follower delivers and ``run``
feeds the child's output.  Each call returns the CONTRACT.md events it completed, as
dicts; an ``incident`` event carries the ``model.Diagnosis`` under ``"_diagnosis"``
(keys starting with ``_`` are never printed).
"""

from __future__ import annotations

import codecs
import os
import re
import time
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator

from sglang_doctor.incidents import assemble as incidents_mod
from sglang_doctor.incidents import serving
from sglang_doctor.incidents import signals
from sglang_doctor.incidents import survived as survived_mod
from sglang_doctor.diagnose.fallback import unknown_diagnosis
from sglang_doctor.diagnose import hardware as hardware_facts
from sglang_doctor.incidents.tracebacks import parse_frame
from sglang_doctor.model import Diagnosis, Frame, Incident, Launch, Line
from sglang_doctor.read import gutter as gutters
from sglang_doctor.read import records
from sglang_doctor.read.mapped import mapped_blocks, settled
from sglang_doctor.read.scanner import Scanner

BLOCK = 8 << 20
# the first block read is smaller: explain's read-ahead worker hands it over (read and
# searched) sooner, and the caller, which has nothing else to do until then, starts earlier
FIRST_BLOCK = 2 << 20
TAIL_KEEP = 4096
# the source location Triton's compiler gives an MLIR diagnostic: the kernel's file and line
_MLIR_LOC = re.compile(r'\bloc\("(?P<file>[^"\n]+\.py)":(?P<line>\d+):\d+\)')
IDLE_DEFERRALS = 4  # idle gaps an incident waits for a partial last line to be completed
HOLD_LIMIT = 20000  # events held back behind an incident that waits for the whole log (whole_log)
UNASKED_LIMIT = 4096  # lines handed over that wait to be asked together whether they name the machine (_machine)


class InputError(Exception):
    """A file or stream that cannot be read; the message is one line for the user."""


# A failure the log shows after the operator's stop (incidents/assemble.py, captures'
# ``after_stop``: the line of "SIGTERM received", uvicorn's "Shutting down", a Ctrl-C): not what
# a teardown raises, so it is reported, but a stopping server's processes lose their peers and
# their devices under them, so the answer is less sure and says when it came.
AFTER_STOP_FACTOR = 0.6


def _after_stop(diagnosis: Diagnosis) -> None:
    stop_line = diagnosis.incident.captures.get("after_stop")
    if stop_line is None:
        return
    diagnosis.confidence *= AFTER_STOP_FACTOR
    diagnosis.explanation = (diagnosis.explanation.rstrip() + f" It came after the server was asked to stop "
                             f"(line {stop_line}), and is not what a stop's teardown raises; it may still be "
                             f"a consequence of the stop.").lstrip()


# bash's "Killed" with nothing else in the text that says what the server was doing (no launch,
# no start-up step, no ready or batch line; the kernel's own log would be an oom_killer signal):
# an unannounced SIGKILL is most often the OOM killer's, but an operator's kill -9 or a
# supervisor's prints the same.  Unknown stays unknown: a guess at a low confidence.
BARE_KILLED_CONFIDENCE = 0.4


def _bare_killed(diagnosis: Diagnosis) -> None:
    incident = diagnosis.incident
    if incident.kind != "signal" or incident.signal_names != ["killed"] or incident.after_ready_known:
        return
    if diagnosis.confidence <= BARE_KILLED_CONFIDENCE:
        return
    diagnosis.confidence = BARE_KILLED_CONFIDENCE
    diagnosis.explanation = (diagnosis.explanation.rstrip() + " Nothing else in the text shows what the server "
                             "was doing when it was killed: the OOM killer is a guess, an operator's or a "
                             "supervisor's kill -9 prints the same (dmesg tells them apart).").lstrip()


class StreamPipeline:
    def __init__(
        self,
        ruleset: Any = None,
        *,
        command: list[str] | None = None,
        version: str | None = None,
        hardware: Any = None,
        model_config: dict | None = None,
        keep_raw: bool = False,
        fast: bool = True,
        remediate: bool = True,
        whole_log: bool = False,
        capacity: bool = False,
    ):
        self.ruleset = ruleset
        self.command = command
        self.version = version
        self.hardware = hardware
        self.model_config = model_config
        self._model_configs: dict[str, dict | None] = {}  # config.json by the dumps' model_path
        self.remediate = remediate
        # whole_log (explain on a finished log): every launch is evidence, the later ones too,
        # so incidents are remedied at the end and held back (with what follows them) until then.
        self.whole_log = whole_log
        self._outcomes: dict[int, list[str]] = {}  # launch index -> rule ids of its incidents
        self._pending: list[dict] = []  # incident events still to be remedied (whole_log)
        # whole_log: incident events before their launch's ready line, held until that launch
        # prints it (then a warning it survived, incidents/survived.py), starts over or the log ends
        self._before_ready: list[dict] = []
        # whole_log: incident events after ready that show no death, held until the launch logs
        # survived.SERVING_PROOF batch lines after them (a warning it survived), a death, or ends
        self._while_serving: list[dict] = []
        self._deaths: dict[int, list[int]] = {}  # launch index -> first lines of incidents that show a death
        # launch index -> its KV-transport incidents in order: (a request's failed transfer's
        # bootstrap rooms or None for the transport's own error, first line, its text); and the
        # launches where they say the transport, not one request (_note_transport)
        self._transport: dict[int, list[tuple[frozenset[str] | None, int, str]]] = {}
        self._transport_broken: set[int] = set()
        self.survived_count = 0  # incidents the launch came up after: reported as warnings
        self.capacity = capacity  # explain: a "capacity" event after each launch that sized its pools
        self._capacity_done: set[int] = set()
        extra: tuple[signals.Signal, ...] = ()
        rule_literals: tuple[str, ...] = ()
        literals = set(incidents_mod.TRIGGER_LITERALS) | set(hardware_facts.LITERALS)
        self._machine_lines: list[str] = []  # lines that name the machine (diagnose/hardware.py), the first KEEP
        # the lines handed over since, not yet asked whether they name it: asked together (_machine)
        self._unasked: list[str] = []
        if ruleset is not None and hasattr(ruleset, "line_literals"):
            rule_literals = tuple(sorted(ruleset.line_literals()))
            literals |= set(rule_literals)
            if rule_literals:
                extra = tuple(signals.extra_signal(name, lits, rx) for name, lits, rx in ruleset.line_signals()) \
                    if hasattr(ruleset, "line_signals") else tuple(
                    signals.extra_signal(f"rule_literal:{lit}", (lit,), _escape(lit)) for lit in rule_literals)
        failure_words = tuple(sorted(ruleset.failure_words())) if hasattr(ruleset, "failure_words") else ()
        self.assembler = incidents_mod.Assembler(extra_signals=extra, failure_words=failure_words,
                                                 reads_as_message=getattr(ruleset, "reads_as_message", None))
        self._events: list[dict] = []
        self._released = 0  # live stream: how many of _events a line-by-line feed has printed (_on_line)
        weak, weak_heads = incidents_mod.weak_literals(rule_literals)
        # the literals the block scanner passes a line for (a record-start line: the strong ones
        # only): the assembler holds a folded piece only when the scanner passes it too
        self.assembler.wrap_literals = (tuple(sorted(literals - set(weak) - set(weak_heads))), tuple(sorted(literals)))
        self.scanner = Scanner(self._on_line, lambda: self.assembler.active, literals, keep_raw=keep_raw, fast=fast,
                               weak=weak, weak_heads=weak_heads,
                               keep=(serving.NEEDLE, serving.BATCH_BYTES, serving.KEEP))
        self.incident_count = 0
        self.started = time.monotonic()
        self.warnings: list[str] = _UniqueList()
        self._partial = False  # the bytes so far end mid-line
        self._tail = b""  # the input's last bytes (fallback.no_incident looks at the last line)
        self._line: Line | None = None
        self.idle_deferred = 0  # idle gaps that flush_idle let pass because of a partial line
        self._wrap_judged = False
        self._wrap_head: list[bytes] = []  # whole_log: the first blocks, until the fold width is judged
        self._wrap_size = 0

    # -- feeding -----------------------------------------------------------------------

    def feed(self, data: bytes) -> list[dict]:
        if not self._wrap_judged:
            if not self.whole_log:
                self._wrap_judged = True  # a live stream (pipe, watch, run): never folded
            else:
                # a finished text (explain) may be a copy of a terminal that folded its long
                # lines: judged on its first WRAP_SAMPLE bytes, however they come in blocks
                # (a gzip member, a pipe), so the answer never depends on the block sizes;
                # the assembler joins the pieces back.  Until then the blocks wait here.
                self._wrap_head.append(data)
                self._wrap_size += len(data)
                if self._wrap_size < records.WRAP_SAMPLE:
                    return []
                return self._judge_wrap()
        return self._feed(data)

    def _judge_wrap(self) -> list[dict]:
        """Judge the fold width on the blocks held so far, then feed them (the last one as it
        came: a block searched ahead keeps its search, read/scanner.py)."""
        blocks, self._wrap_head, self._wrap_size = self._wrap_head, [], 0
        self._wrap_judged = True
        sample = b"".join(blocks)[:records.WRAP_SAMPLE]
        self.assembler.wrap_width = records.wrap_width(sample)
        self.assembler.gutter = gutters.gutter(sample)  # line numbers / list markers of a paste
        events = self._feed(b"".join(blocks[:-1])) if len(blocks) > 1 else []
        return events + self._feed(blocks[-1])

    def _feed(self, data: bytes) -> list[dict]:
        if data:
            self._partial = not data.endswith(b"\n")
            self._tail = (self._tail + data[-TAIL_KEEP:])[-TAIL_KEEP:]  # the last lines, for the summary
            self.idle_deferred = 0
        self.scanner.feed(data)
        self._machine()
        return self._take()

    def read_ahead(self, blocks: Iterable[bytes], prepare: bool = False) -> Iterator[bytes]:
        """``blocks`` (a finished file's), read and searched by a worker thread ahead of
        ``feed``; feed each block yielded, in order (read/scanner.py, Scanner.read_ahead).
        ``prepare`` (explain on a big file): the stages after the reading are imported while
        the worker reads and searches the first block, when this thread would only wait."""
        return self.scanner.read_ahead(blocks, meanwhile=self._prepare if prepare else None)

    def _prepare(self) -> None:
        """Import what remediation will need (10-12 ms of CPU at load 10 that came in the
        serial tail of explain, after the last block)."""
        try:
            if self.remediate and self.ruleset is not None:
                from sglang_doctor.remedy import guarded, remedies  # noqa: F401
        except ImportError:  # as where they are used: no remedies then
            pass

    def flush_idle(self) -> list[dict]:
        """Complete what is open after an idle gap (the partial last line stays pending).

        While the input stops mid-line the writer is not done (a block-buffered stdout
        flushes whatever 4 KB it holds), so the first IDLE_DEFERRALS gaps only count:
        ``idle_deferred`` is then > 0 and the caller asks again after another gap.
        """
        if self._partial and self.idle_deferred < IDLE_DEFERRALS:
            self.idle_deferred += 1
            return []
        self.idle_deferred = 0
        self.scanner.hand_over_kept()  # the batch lines a provisional incident waits for
        self._convert(self.assembler.flush())
        return self._take()

    def finish(self) -> list[dict]:
        early = self._judge_wrap() if self._wrap_head else []
        self.assembler.ends_mid_line = self._partial  # the last line is cut (Incident.cut_at_end)
        self._partial = False
        self.idle_deferred = 0
        self.scanner.finish()
        self._convert(self.assembler.flush())
        self._release_before_ready()  # a launch whose log ends before its ready line: unknown stays unknown
        self._remedy_pending()
        for launch in self.launches:  # launches whose log ends before the ready line
            self._add_capacity(launch)
        return early + self._take()

    def reset(self, reason: str) -> list[dict]:
        """The source was truncated or replaced: close what is open, keep counting lines."""
        self._partial = False
        self.idle_deferred = 0
        self.scanner.finish()
        self._convert(self.assembler.flush())
        return self._take()

    @property
    def launches(self) -> list[Launch]:
        return [launch for launch in self.assembler.launches if launch.line is not None or launch.milestones]

    @property
    def lines_seen(self) -> int:
        return self.scanner.lines_seen

    def summary(self) -> dict:
        out = {"event": "summary", "incidents": self.incident_count, "launches": len(self.launches),
               "lines": self.lines_seen}
        if self.survived_count:
            out["survived"] = self.survived_count
        if self.incident_count == 0:
            # no failure in the text: for a fragment, say so and where its cause would be
            from sglang_doctor.diagnose.fallback import no_incident

            if self.assembler.launches:
                self.assembler.launches[-1].machine_lines = list(self._machine())
            note = no_incident(self.assembler.launches, self._tail, self.lines_seen)
            if note is not None:
                guarded = self._guarded_step(note)
                if guarded is not None:
                    note["guarded"] = guarded
                out["fallback"] = note
        return out

    # A text that shows the server serving, and no failure, is most often a healthy paste: turning
    # features off on the guess "if it crashed while serving" alone would be advice on a healthy log.
    _NO_ADVICE_WITHOUT_A_FAILURE = ("runtime.crash",)

    def _guarded_step(self, note: dict) -> dict | None:
        """The guarded next step of a no-incident text's best guess (remedy/guarded.py), the
        same one an incident no rule knew gets: "if this is X (a best guess): try Y", always
        ``needs_human``.  None when the guess's category has no usual change, or when this
        pipeline gives no remedies."""
        if not (self.remediate and self.ruleset is not None):
            return None
        try:
            from sglang_doctor.remedy import guarded
        except ImportError:
            return None
        category, _ = guarded.guess_of(note)
        if category in self._NO_ADVICE_WITHOUT_A_FAILURE or not guarded.entries(category):
            return None
        launches = self.assembler.launches
        launch = launches[-1] if launches else None
        # no failure is in the text: an incident of the text's last lines stands for the one the
        # guess is about, so the remedies that read the text (the attention backend its frames show,
        # ROCm's marks, a feature's words) read what it shows
        diagnosis = Diagnosis(incident=self._tail_incident(), rule="unknown",
                              category="other", phase="unknown", launch=launch, layer="fallback", fallback=note)
        self._add_remediation(diagnosis)
        rem = diagnosis.remediation
        if rem is None:
            return None
        for step in [rem, *rem.alternatives]:  # no failure is in the text: the step holds only if one came
            step.note = _if_it_failed(step.note)
            step.tradeoff = _if_it_failed(step.tradeoff)
        return rem.to_json()

    def _tail_incident(self) -> Incident:
        """The stand-in incident of a no-incident text's guarded step: the input's last lines
        (``_tail``, at most TAIL_KEEP bytes, a first line the cut began inside left out) and the
        frames they show, Python's (incidents/tracebacks.parse_frame, a traceback's or
        faulthandler's shape) and the source locations of Triton's MLIR diagnostics
        ('loc("<path>.py":L:C): error: ...': the kernel being compiled).  Log text, read as an
        incident's is: remedies take only their own values from it (CONTRACT.md "Trust")."""
        last = max(self.lines_seen, 1)
        first, texts = self._tail_lines()
        if len(self._tail) >= TAIL_KEEP and texts and first > 1:
            texts, first = texts[1:], first + 1  # the tail's first line may be cut
        lines = [Line(number=first + i, text=t.rstrip("\r").rsplit("\r", 1)[-1]) for i, t in enumerate(texts)]
        frames = []
        for line in lines:
            frame = parse_frame(line.text) if 'File "' in line.text else None
            if frame is None and (m := _MLIR_LOC.search(line.text)) is not None:
                frame = Frame(file=m.group("file"), line=int(m.group("line")), function="?")
            if frame is not None:
                frames.append(frame)
        return Incident(kind="signal", first_line=lines[0].number if lines else last, last_line=last,
                        lines=lines, frames=frames)

    # -- internals ---------------------------------------------------------------------

    def _on_line(self, line: Line) -> None:
        if not self.whole_log:
            # a live stream fed line by line has printed what the lines before this one gave
            # (but for a held incident and what follows it): a ``confirmed`` event decided from
            # now on comes after those, however the bytes came in (one read or byte by byte)
            self._released = self._release_point()
        if len(self._machine_lines) < hardware_facts.KEEP and len(line.text) <= hardware_facts.LONGEST:
            self._unasked.append(line.text)  # (a longer line names no machine: hardware.names_machine)
            if len(self._unasked) >= UNASKED_LIMIT:
                self._machine()
        self._line = line  # the line whose events are being converted (the ready line's time)
        self._convert(self.assembler.feed(line))
        self._line = None
        if self._before_ready and not self.whole_log:
            self._decide_before_ready()  # on the line that brings the evidence, as while serving
        if self._while_serving:
            # decided on the line that brings the evidence, not when the block ends: the
            # launch keeps only its last serving.KEEP batch lines, so a later look could take
            # a later batch line for the proof (and a death before it for a crash), and the
            # answer would depend on how the bytes came in (block sizes, read-ahead)
            self._decide_while_serving()

    def _machine(self) -> list[str]:
        """The lines so far that name the machine (the first ``hardware.KEEP``): the lines handed
        over since the last call are asked together (hardware.naming_lines: one search of them
        all, per block or per diagnosis, instead of a pattern over each line as it comes)."""
        unasked, self._unasked = self._unasked, []
        if unasked and len(self._machine_lines) < hardware_facts.KEEP:
            for i in hardware_facts.naming_lines(unasked):
                self._machine_lines.append(unasked[i])
                if len(self._machine_lines) == hardware_facts.KEEP:
                    break
        return self._machine_lines

    def _timestamp_of(self, number: int | None) -> str | None:
        """The log's time on line ``number`` when it is the line being converted."""
        line = self._line
        if line is None or line.number != number:
            return None
        return records.parse_prefix(line.text).timestamp

    def _take(self) -> list[dict]:
        self._decide_before_ready()
        if (self._pending or self._before_ready or self._while_serving) and len(self._events) > HOLD_LIMIT:
            # memory stays bounded: held incidents stay incidents; a live stream, which reported
            # them as provisional, says so (a ``confirmed`` event each: its consumers, the
            # exporter's gauge and ``watch --exit-on-incident``, would wait for ever otherwise)
            for ev in self._before_ready + self._while_serving:
                self._confirm(ev, None, f"more than {HOLD_LIMIT} events came after it before the evidence that "
                                        f"would decide it; held no longer (memory stays bounded), assumed to stand "
                                        f"(unknown whether the server survived it)", unresolved=True)
            self._before_ready = []
            self._while_serving = []
            self._remedy_pending()  # and are remedied with the launches seen so far
        first = self._release_point()
        out, self._events = self._events[:first], self._events[first:]
        self._released = 0
        return out

    def _release_point(self) -> int:
        """How many of the events held here can go out now: all, or those before the first
        unremedied or (whole_log) undecided incident, since what comes after it waits with it."""
        held = self._pending[:1]
        if self.whole_log:  # a live stream reported them at once, as provisional (_hold_before_ready)
            held += self._before_ready[:1] + self._while_serving[:1]
        if held:  # (the first one found: a scan stopping there, not one over every event held,
            # which was ~95k steps per GiB run once the first incident held the rest back)
            ids = {id(ev) for ev in held}
            return next(i for i, ev in enumerate(self._events) if id(ev) in ids)
        return len(self._events)

    def _decide_before_ready(self) -> None:
        """Held incidents whose launch has printed its ready line since: each either a warning
        the launch survived (incidents/survived.py) or, when something says the ready line is
        a relaunch's, an incident as before.  Every line up to the ready line has been read, and
        the ready line closed any incident open before it."""
        self._decide_while_serving()
        if not self._before_ready:
            return
        launches = self.assembler.launches
        keep = []
        for ev in self._before_ready:
            diagnosis = ev["_diagnosis"]
            incident = diagnosis.incident
            launch = launches[incident.launch_index] if incident.launch_index < len(launches) else None
            deaths = self._deaths.get(incident.launch_index, [])
            died = next((d for d in deaths if d > incident.first_line), None)
            if died is not None and (launch is None or launch.ready_line is None or died < launch.ready_line):
                # a death of the launch after it: its ready line, if one comes, is a relaunch's
                self._confirm(ev, died, f"launch {incident.launch_index + 1} died after it (line {died})")
            elif launch is None or launch.ready_line is None:
                keep.append(ev)
            elif survived_mod.survived(incident, launch, deaths):
                self._to_survived(ev, launch)
            elif self._goes_on_after(ev):
                pass  # _goes_on_after made it a warning (a thread goes on after it), whichever launch is ready
            else:
                self._confirm(ev, launch.ready_line, f"the ready line at line {launch.ready_line} does not show "
                                                     f"launch {launch.index + 1} survived it (its start-up began "
                                                     f"again in between)")
        self._before_ready = keep

    def _decide_while_serving(self) -> None:
        """Held incidents after ready: a warning the launch survived once it has logged
        survived.SERVING_PROOF batch lines after one (incidents/survived.py), an incident when a
        death of the launch came first; the others wait."""
        if not self._while_serving:
            return
        launches = self.assembler.launches
        keep = []
        for ev in self._while_serving:
            incident = ev["_diagnosis"].incident
            launch = launches[incident.launch_index] if incident.launch_index < len(launches) else None
            deaths = self._deaths.get(incident.launch_index, [])
            verdict = survived_mod.survived_serving(incident, launch, deaths)
            if verdict is None:
                keep.append(ev)
            elif verdict:
                self._to_survived(ev, launch, serving=True)
            else:
                died = next((d for d in deaths if d > incident.last_line), incident.last_line)
                self._confirm(ev, died, f"launch {incident.launch_index + 1} died after it (line {died}) before "
                                        f"it logged {survived_mod.SERVING_PROOF} batch lines")
        self._while_serving = keep

    def _release_before_ready(self, launch_index: int | None = None, at: int | None = None) -> None:
        """Held incidents of launches other than ``launch_index`` (all when None) stay
        incidents: their launch started over (a new launch at line ``at``) or the log ended
        before its ready line (before its batch lines, for one while serving)."""
        self._decide_before_ready()
        for held in (self._before_ready, self._while_serving):
            for ev in held:
                if launch_index is not None and ev["launch"] == launch_index:
                    continue
                if self._goes_on_after(ev):
                    continue  # a thread's warning, no death of its launch after it (survived.goes_on_after)
                if at is not None:
                    self._confirm(ev, at, f"a new launch began at line {at}")
                elif held is self._while_serving and self._request_level_at_end(ev):
                    continue  # one request's handled failure: a request-level warning
                else:  # unknown stays unknown: the conservative outcome, said as such
                    if self.whole_log and held is self._while_serving:
                        self._unproved(ev)  # explain: not yet printed (a live stream's confirmed event says it)
                    evidence = "batch lines" if ev.get("provisional") == "serving" else "ready line"
                    self._confirm(ev, None, f"the input ended before launch {ev['launch'] + 1}'s {evidence} after it: "
                                            f"unknown whether the server survived it", unresolved=True)
        self._before_ready = [ev for ev in self._before_ready
                              if launch_index is not None and ev["launch"] == launch_index]
        self._while_serving = [ev for ev in self._while_serving
                               if launch_index is not None and ev["launch"] == launch_index]

    def _goes_on_after(self, ev: dict) -> bool:
        """A held incident made only of lines a thread prints and goes on after (NCCL's proxy
        thread, torch's heartbeat monitor: incidents/survived.py ``goes_on_after``), with no
        death of its launch after it, is a warning when its launch ends or the input does: turn
        it into one and say True."""
        inc = self._held_incident(ev)
        if inc is None:
            return False
        what = survived_mod.goes_on_after(inc)
        if what is None or any(d > inc.first_line for d in self._deaths.get(inc.launch_index, [])):
            return False
        self._to_survived(ev, self.assembler.launches[inc.launch_index], goes_on=what)
        return True

    def _held_incident(self, ev: dict):
        """The incident of the held event ``ev`` when it is one of a launch the assembler knows;
        else None."""
        diagnosis = ev.get("_diagnosis")
        if diagnosis is None or ev.get("event") != "incident":
            return None
        inc = diagnosis.incident
        if inc.launch_index is None or inc.launch_index >= len(self.assembler.launches):
            return None
        return inc

    def _request_level_at_end(self, ev: dict) -> bool:
        """The input ended after the held serving incident ``ev`` with nothing that decides it:
        when it is a failure SGLang handles for one request (incidents/survived.py, "one request's
        handled failure"), turn it into a request-level warning and say True."""
        inc = self._held_incident(ev)
        if inc is None:
            return False
        request = survived_mod.request_event(inc)
        if request is None or inc.launch_index in self._transport_broken:
            answer = survived_mod.client_error_answer(inc, self._lines_after(inc.last_line))
            if answer is None:
                return False
            exc = inc.exception
            request = {"id": None, "reason": f"{exc.type}: {exc.message.splitlines()[0] if exc.message else ''}".strip(),
                       "answer": answer}
        self._to_survived(ev, self.assembler.launches[inc.launch_index], request=request)
        return True

    def _tail_lines(self) -> tuple[int, list[str]]:
        """The input's last lines as ``_tail`` holds them (its first one maybe cut inside), and
        the number of that first line."""
        lines = self._tail.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the input ended with a line end
        return self.lines_seen - len(lines) + 1, lines

    def _lines_after(self, number: int) -> list[str]:
        """The input's lines after line ``number``, when its last bytes (``_tail``) still hold
        them all; else []."""
        first, lines = self._tail_lines()
        if first > number:
            return []  # the tail does not reach back to the line after it
        return [t.rstrip("\r") for t in lines[number - first + 1:]]

    def _unproved(self, ev: dict) -> None:
        """The input ended after the serving incident ``ev`` before the batch lines (or a death)
        that would decide it: it stays an incident, with its confidence lowered to
        survived.UNPROVED_CONFIDENCE and the assumption said (incidents/survived.py)."""
        diagnosis = ev.get("_diagnosis")
        if diagnosis is None or ev.get("event") != "incident":
            return
        diagnosis.confidence = survived_mod.unproved(diagnosis.confidence)
        if survived_mod.UNPROVED_ASSUMPTION not in diagnosis.assumed:
            diagnosis.assumed.append(survived_mod.UNPROVED_ASSUMPTION)
            diagnosis.explanation = (diagnosis.explanation.rstrip() + " Unknown whether the server survived it: "
                                     + survived_mod.UNPROVED_ASSUMPTION + ".").lstrip()
        ev["confidence"] = round(diagnosis.confidence, 3)
        ev["assumed"] = list(diagnosis.assumed)
        ev["explanation"] = diagnosis.explanation

    def undecided(self) -> list[dict]:
        """A live stream's provisional incidents still waiting for the log's evidence (the ready
        line, batch lines, a death, a new launch), oldest first; explain's are held, not reported."""
        if self.whole_log:
            return []
        return [ev for ev in self._before_ready + self._while_serving if ev.get("provisional")]

    def catch_up(self) -> list[dict]:
        """The batch lines the scanner keeps (flush_idle hands them over after an idle gap) go to
        the launches now, and whatever they decide is decided: a bounded wait (confirm_wait.py)
        then judges by all the input read, not by what is still kept."""
        self.scanner.hand_over_kept()
        return self._take()

    def stand(self, ev: dict, quiet_s: float) -> list[dict]:
        """The held provisional incident ``ev`` stands after ``quiet_s`` seconds with no new
        evidence (confirm_wait.py): a ``confirmed`` event that says so and what it assumed; one
        request's handled failure becomes a request-level warning instead (_request_level_at_end).
        Decided once: a ready line or batch lines that come later do not take it back."""
        if not any(ev is held for held in self._before_ready + self._while_serving):
            return self._take()
        if any(ev is held for held in self._while_serving) and self._request_level_at_end(ev):
            # one request's handled failure and a quiet server since: an idle server, not a death
            self._while_serving = [held for held in self._while_serving if held is not ev]
            return self._take()
        n = int(quiet_s) if float(quiet_s).is_integer() else quiet_s
        launch = ev["launch"] + 1 if isinstance(ev.get("launch"), int) else "?"
        if ev.get("provisional") == "serving":
            why = (f"no batch line of launch {launch} for {n} s after it; assumed to stand: an idle server and a "
                   f"hung one look alike in the log (unknown whether it still serves)")
        else:
            why = (f"no ready line and no new log output for {n} s after it; assumed to stand: a start-up whose "
                   f"log stops has stalled or died (unknown whether launch {launch} would still come up)")
        self._confirm(ev, None, why, unresolved=True, extra={"after_quiet_s": n})
        self._before_ready = [held for held in self._before_ready if held is not ev]
        self._while_serving = [held for held in self._while_serving if held is not ev]
        return self._take()

    def _confirm(self, ev: dict, decided: int | None, why: str, unresolved: bool = False,
                 extra: dict | None = None) -> None:
        """A live stream's provisional incident ``ev`` stands: say so with a ``confirmed`` event
        (docs/CONTRACT.md), placed in the log's order after line ``decided`` (None: at the end).
        explain holds its incidents back until they are decided and prints nothing more."""
        if self.whole_log or not ev.get("provisional"):
            return
        diagnosis = ev["_diagnosis"]
        inc = diagnosis.incident
        lines = f"line {inc.first_line}" if inc.first_line == inc.last_line else f"lines {inc.first_line}-{inc.last_line}"
        out = {"event": "confirmed", "confirms": {"rule": diagnosis.rule, "lines": [inc.first_line, inc.last_line]},
               "rule": diagnosis.rule, "category": diagnosis.category, "phase": diagnosis.phase,
               "launch": ev.get("launch"), "provisional": ev["provisional"],
               "message": f"the provisional incident reported at {lines} ({diagnosis.rule}) stands: {why}"}
        if unresolved:
            out["unresolved"] = True
        if extra:
            out.update(extra)
        if decided is not None:
            out["line"] = decided
        at = len(self._events) if decided is None else next(
            (i for i, e in enumerate(self._events) if _event_line(e) > decided), len(self._events))
        self._events.insert(max(at, min(self._released, len(self._events))), out)

    def answered(self, url: str) -> list[dict]:
        """``run``'s proof for a live stream's provisional incidents while serving: the server
        still answered ``url`` after them.  Each is taken back as batch lines would take it back
        (a ``withdraws`` warning, so a metrics gauge of undecided incidents falls again), and is
        decided: batch lines that come later do not take it back twice."""
        launches = self.assembler.launches
        keep = []
        for ev in self._while_serving:
            index = ev["_diagnosis"].incident.launch_index
            if ev.get("provisional") == "serving" and index is not None and index < len(launches):
                self._to_survived(ev, launches[index], serving=True, answered=url)
            else:
                keep.append(ev)
        self._while_serving = keep
        return self._take()

    def _to_survived(self, ev: dict, launch: Launch, serving: bool = False, answered: str | None = None,
                     request: dict | None = None, goes_on: str | None = None) -> None:
        """Turn the incident event ``ev`` (in place: it keeps its place among the events) into
        a warning: the launch came up after it (``serving``: went on serving after it, shown by
        its batch lines, or by ``answered``: the URL that still answered, run's probe), or
        ``request``: it is one request's failure SGLang handled, and the input ended after it
        with nothing of a death (``_request_level_at_end``)."""
        diagnosis = ev["_diagnosis"]
        inc = diagnosis.incident
        self.incident_count -= 1
        self.survived_count += 1
        rules = self._outcomes.get(launch.index)
        if rules and diagnosis.rule in rules:
            rules.remove(diagnosis.rule)
        self._pending = [p for p in self._pending if p is not ev]
        what = diagnosis.title or diagnosis.rule
        lines = f"line {inc.first_line}" if inc.first_line == inc.last_line else f"lines {inc.first_line}-{inc.last_line}"
        if request is not None:
            kind = "request_failed"
            ids = request.get("ids") or ([request["id"]] if request.get("id") else [])
            rid = f" {ids[0]}" if len(ids) == 1 else (f"s {', '.join(ids)}" if ids else "")
            reason = (f" ({request['reason']})" if request.get("reason") else
                      " (the text gives no reason or cut it: a reason that names the peer or the transport, which "
                      "would make it the PD pair's failure, is not ruled out)")
            how = (f"answered to its client with \"{request['answer']}\"" if request.get("answer") else
                   "aborted with an error (SGLang's disaggregation code logs it, aborts that request and goes on)")
            message = (f"{lines}: request{rid} failed{reason} ({diagnosis.rule}), {how}; the input ends "
                       f"after it with nothing of a death of launch {launch.index + 1}: a request-level event, "
                       f"not a launch incident")
        elif goes_on is not None:
            kind = "nonfatal_warning"
            message = (f"{lines}: {what} ({diagnosis.rule}): only warnings of {goes_on}, which logs them and "
                       f"goes on, and nothing of a death of launch {launch.index + 1} after them: not a failure by "
                       f"themselves (a failure would show its own error)")
        elif answered is not None:
            kind = "survived_while_serving"
            message = (f"{lines}: {what} ({diagnosis.rule}) while serving, yet launch {launch.index + 1} still "
                       f"answered {answered} after it: a failure the server handled and survived, not a crash")
        elif serving:
            after = [n for n in launch.batch_lines if n > inc.last_line]
            kind = "survived_while_serving"
            message = (f"{lines}: {what} ({diagnosis.rule}) while serving, yet launch {launch.index + 1} went on "
                       f"serving after it (batch line {after[survived_mod.SERVING_PROOF - 1]}): a failure the server "
                       f"handled and survived, not a crash")
        else:
            kind = "survived_before_ready"
            message = (f"{lines}: {what} ({diagnosis.rule}), yet launch {launch.index + 1} came up after it "
                       f"(ready line {launch.ready_line}): a warning the server survived, not the launch's cause")
        warning = {
            "event": "warning", "kind": kind, "message": message,
            "rule": diagnosis.rule, "category": diagnosis.category, "phase": diagnosis.phase,
            "lines": [inc.first_line, inc.last_line], "ranks": list(inc.ranks),
            "exception": inc.exception.to_json() if inc.exception else None,
            "launch": launch.index, "ready_line": launch.ready_line,
        }
        if request is not None:
            warning["request"] = dict(request)
        if self.whole_log:
            ev.clear()
            ev.update(warning)
            return
        # a live stream reported the incident already, as provisional: say it is taken back
        warning["withdraws"] = {"rule": diagnosis.rule, "lines": [inc.first_line, inc.last_line]}
        warning["message"] = (("one request's failure" if request is not None else "a thread's warning, not a failure"
                               if goes_on is not None else "the server went on serving"
                               if serving else "the server came up anyway")
                              + f": the provisional incident reported at {message}")
        if answered is not None or request is not None or goes_on is not None:  # decided now: after everything read so far
            self._events.append(warning)
            return
        # in the log's order: before the first event of a later line than the one that decided
        decided = after[survived_mod.SERVING_PROOF - 1] if serving else launch.ready_line
        at = next((i for i, e in enumerate(self._events) if _event_line(e) > decided), len(self._events))
        self._events.insert(at, warning)

    def _remedy_pending(self) -> None:
        """The whole log is read: remedy the held incidents with every launch as evidence."""
        pending, self._pending = self._pending, []
        for ev in pending:
            diagnosis = ev["_diagnosis"]
            self._add_remediation(diagnosis)
            ev["remediation"] = diagnosis.remediation.to_json() if diagnosis.remediation else None

    def evidence(self, current: Launch | None) -> list:
        """The other launches of this log that failed, with how: what a remedy must not repeat."""
        from sglang_doctor.remedy.remedies import EarlierLaunch

        out = []
        for launch in self.assembler.launches:
            if launch is current or not launch.server_args:
                continue
            rules = self._outcomes.get(launch.index)
            if rules:
                out.append(EarlierLaunch(launch.index + 1, dict(launch.server_args), tuple(rules)))
        return out

    def _convert(self, events: list[incidents_mod.Event]) -> None:
        for ev in events:
            if ev.kind == "launch":
                if self._before_ready or self._while_serving:
                    self._release_before_ready(ev.launch.index, at=ev.launch.line)
                out = incidents_mod.launch_json(ev.launch)
                out["_timestamp"] = self._timestamp_of(ev.launch.line)  # the log's own time (export uses it)
                found = _release_range(ev.launch)  # issue 14: the releases its dump fits
                if found is not None:
                    out["sglang_version_range"] = found.spec
                self._events.append(out)
            elif ev.kind == "milestone":
                ms = ev.milestone
                out = {"event": "milestone", "line": ms.line, "name": ms.name, "launch": ev.launch.index}
                if ms.rank:
                    out["rank"] = ms.rank
                out.update(ms.figures)
                self._events.append(out)
            elif ev.kind == "ready":
                self._events.append({"event": "ready", "line": ev.line, "launch": ev.launch.index,
                                     "seconds": round(time.monotonic() - self.started, 3),
                                     "_timestamp": self._timestamp_of(ev.line)})
                self._add_capacity(ev.launch)
            elif ev.kind == "death":  # a process's end the assembler folded into a reported incident
                if ev.launch is not None:
                    self._deaths.setdefault(ev.launch.index, []).append(ev.line)
            elif ev.kind == "incident":
                self._note_transport(ev.incident, ev.launch)
                diagnosis = self.diagnose(ev.incident, ev.launch)
                held = ev.launch is not None and self._holds(ev.incident, ev.launch)
                self.incident_count += 1
                if ev.launch is not None:
                    self._outcomes.setdefault(ev.launch.index, []).append(diagnosis.rule)
                out = diagnosis.to_json()
                out["_diagnosis"] = diagnosis
                if held and not self.whole_log:
                    # a live stream cannot take an incident back: it says at once that this one
                    # may be a warning SGLang survives, and withdraws it if the launch comes up
                    # (or goes on serving) after it (_to_survived)
                    out["provisional"] = "serving" if self._may_survive_serving(ev.incident) else "ready"
                self._events.append(out)
                if self.whole_log and self.remediate and self.ruleset is not None:
                    self._pending.append(out)
                if ev.launch is not None:
                    self._hold_before_ready(out, ev.incident, ev.launch)

    def _note_transport(self, incident: Incident, launch: Launch | None) -> None:
        """PD disaggregation's KV transport in ``launch`` (incidents/survived.py
        ``request_transfer``): a request's failed transfer for a reason of its own is that
        request's error, another request's too, until the transport's own error in the launch
        (with another failure) or every request failing for a long span
        (survived.every_request_failed) makes every failed transfer of the launch the
        transport's: the held ones stand (confirmed), later ones are not held."""
        if launch is None:
            return
        rooms = survived_mod.request_transfer(incident)
        if rooms is None and not survived_mod.is_transport(incident):
            return
        seen = self._transport.setdefault(launch.index, [])
        seen.append((rooms, incident.first_line, incident.signals[0].text if incident.signals else ""))
        if launch.index in self._transport_broken:
            return
        if any(r is None for r, _, _ in seen):  # the transport's own error, and another failure
            if len(seen) < survived_mod.TRANSFER_REPEAT:
                return
        elif not survived_mod.every_request_failed(seen, launch.batch_lines):
            return  # requests failing one by one, each for a reason of its own: each its own
        self._transport_broken.add(launch.index)
        keep = []
        for ev in self._while_serving:
            inc = ev["_diagnosis"].incident
            if inc.launch_index == launch.index and survived_mod.request_transfer(inc) is not None:
                self._confirm(ev, incident.first_line, f"another KV-transport failure of launch {launch.index + 1} "
                                                       f"at line {incident.first_line}: the transport, not one request")
            else:
                keep.append(ev)
        self._while_serving = keep

    def _may_survive_serving(self, incident: Incident) -> bool:
        """survived.may_survive_serving, and not a failed KV transfer of a launch whose
        transport failed more than one request (_note_transport)."""
        if not survived_mod.may_survive_serving(incident):
            return False
        return not (incident.launch_index in self._transport_broken
                    and survived_mod.request_transfer(incident) is not None)

    def _holds(self, incident: Incident, launch: Launch) -> bool:
        """Whether the launch's later lines may show ``incident`` survived (_hold_before_ready)."""
        return self._may_survive_serving(incident) or survived_mod.may_survive_startup(incident, launch)

    def _hold_before_ready(self, out: dict, incident: Incident, launch: Launch) -> None:
        """An incident before its launch's ready line waits for it, one after it for the
        launch's next batch lines (_take decides): whole_log holds the events back with it, a
        live stream has reported it as provisional."""
        if survived_mod.is_death(incident):
            self._deaths.setdefault(launch.index, []).append(incident.first_line)
        elif self._may_survive_serving(incident):
            self._while_serving.append(out)
        elif not incident.after_ready and (launch.ready_line is None or incident.first_line < launch.ready_line):
            if self.whole_log or survived_mod.may_survive_startup(incident, launch):
                self._before_ready.append(out)

    def diagnose(self, incident: Incident, launch: Launch) -> Diagnosis:
        if launch is not None:
            launch.machine_lines = list(self._machine())  # what the log said of the machine so far
        if self.ruleset is not None:
            diagnosis = self.ruleset.diagnose(incident, launch)
            rule_warnings = getattr(self.ruleset, "warnings", None)
            if rule_warnings:  # e.g. a rule too slow: the user must hear of it (explain prints these)
                self.warnings += rule_warnings
                rule_warnings.clear()
        else:
            diagnosis = unknown_diagnosis(incident, launch)
        diagnosis.launch = launch
        _after_stop(diagnosis)
        _bare_killed(diagnosis)
        if self.remediate and self.ruleset is not None and not self.whole_log:
            self._add_remediation(diagnosis)
        return diagnosis

    def _add_remediation(self, diagnosis: Diagnosis) -> None:
        try:
            from sglang_doctor.remedy import flags
            from sglang_doctor.remedy import remedies
        except ImportError:
            return
        try:
            launch = diagnosis.launch
            log_version = launch.sglang_version if launch else None
            hint = launch.version_hint if launch is not None else None
            if launch is not None and launch.sglang_version_range is not None:
                hint = f"{launch.sglang_version_range.newest}-fields"  # newest release the dump fits
            frames = None
            if not log_version and not self.version and hint is None:
                frames = _frame_range(diagnosis)  # no header, no dump: what the traceback's frames say
                if frames is not None:
                    hint = f"{frames.newest}-frames"
                # the matched rule's text is printed only by some releases (its ``versions``)
                wording = _wording_range(self.ruleset, diagnosis, frames)
                if wording is not None:
                    frames, hint = wording, f"{wording.newest}-wording"
                # a flag SGLang's message advises exists in the release that printed it
                advised = _advised_range(diagnosis, frames)
                if advised is not None:
                    frames, hint = advised, f"{advised.newest}-wording"
            version, source = flags.resolve_version(log_version, self.version, hint)
            catalog = flags.load_catalog(version, prefer_shipped=True)
            diagnosis.remediation = remedies.remediate(
                diagnosis, command=self.command, version=catalog.version, catalog=catalog,
                hardware=self.hardware, model_config=self._model_config_for(launch), warnings=self.warnings,
                evidence=self.evidence(launch), version_source=source,
                version_range=frames.releases if frames is not None and source in ("frame paths", "message wording") else None,
            )
            if diagnosis.remediation is not None:
                diagnosis.remediation.target = {"sglang_version": catalog.version, "version_source": source,
                                                "flags_from": catalog.source}
                if frames is not None and source in ("frame paths", "message wording"):
                    # inferred, and from what (docs/DESIGN.md "SGLang releases")
                    diagnosis.remediation.target["inferred_range"] = frames.to_json()
        except Exception as exc:  # a remedy must never take the diagnosis down with it
            self.warnings.append(f"remediation failed for {diagnosis.rule}: {type(exc).__name__}: {exc}")

    def _add_capacity(self, launch: Launch) -> None:
        """Where a launch's memory went and what capped it (remedy/capacity.py), once per launch."""
        if not self.capacity or launch.index in self._capacity_done:
            return
        self._capacity_done.add(launch.index)
        try:
            from sglang_doctor.remedy import capacity

            version = self.version or launch.sglang_version
            try:
                from sglang_doctor.remedy import flags

                version = flags.resolve_version(launch.sglang_version, self.version, launch.version_hint)[0]
            except Exception:  # noqa: BLE001 - without catalogues: the log's or the option's version
                pass
            cap = capacity.from_launch(launch, self._model_config_for(launch), version, self.hardware)
        except Exception as exc:  # the explanation must never take the report down with it
            self.warnings.append(f"capacity of launch {launch.index + 1} failed: {type(exc).__name__}: {exc}")
            return
        if cap is not None:
            out = cap.to_json()
            out["_capacity"] = cap
            self._events.append(out)

    def _model_config_for(self, launch: Launch | None) -> dict | None:
        """--model-config, else the config.json at the dump's model_path when readable."""
        if self.model_config is not None:
            return self.model_config
        model_path = (launch.server_args.get("model_path") if launch else None) or None
        if not isinstance(model_path, str):
            return None
        if model_path not in self._model_configs:  # read once per model, not per incident
            import json

            try:
                with open(os.path.join(model_path, "config.json"), encoding="utf-8") as fh:
                    value = json.load(fh)
            except (OSError, ValueError):
                value = None
            if value is not None:
                from sglang_doctor.remedy import model_config

                why = model_config.problem(value)
                if why:
                    self.warnings.append(f"{model_path}/config.json is {why}; pass --model-config")
                    value = None
            self._model_configs[model_path] = value
        return self._model_configs[model_path]


class _UniqueList(list):
    """A warnings list that keeps each text once: one warning once, however many incidents."""

    def append(self, item) -> None:  # type: ignore[override]
        if item not in self:
            super().append(item)

    def __iadd__(self, items):  # type: ignore[override]
        for item in items:
            self.append(item)
        return self


def _release_range(launch: Launch):
    """The shipped releases whose ServerArgs fields match the launch's dump (remedy stage:
    it needs the catalogues); also kept on the launch.  None when unknown."""
    if not launch.server_args:
        return None
    try:
        from sglang_doctor.remedy import release_range
    except ImportError:
        return None
    try:
        found = release_range.release_range(launch.server_args, launch.server_args_complete)
    except Exception:  # noqa: BLE001 - a version guess must never take the reading down
        return None
    launch.sglang_version_range = found
    return found


def _frame_range(diagnosis: Diagnosis):
    """The releases the SGLang frames of an incident's lines fit (remedy/frame_releases.py),
    for a log that names no release and has no dump.  None when they say nothing."""
    try:
        from sglang_doctor.remedy import frame_releases
    except ImportError:
        return None
    try:
        return frame_releases.frame_range(line.text for line in diagnosis.incident.lines)
    except Exception:  # noqa: BLE001 - a version guess must never take the reading down
        return None


def _wording_range(ruleset: Any, diagnosis: Diagnosis, frames: Any):
    """The releases that print the text the diagnosis's rule matched (its ``versions``),
    within the frames' range when there is one; None when the rule dates nothing."""
    rule = ruleset.get(diagnosis.rule) if ruleset is not None and hasattr(ruleset, "get") else None
    versions = getattr(rule, "versions", None)
    if not versions:
        return None
    try:
        from sglang_doctor.remedy import release_range
    except ImportError:
        return None
    try:
        return release_range.wording_range(rule.id, versions, frames.releases if frames is not None else None)
    except Exception:  # noqa: BLE001 - a version guess must never take the reading down
        return None


def _advised_range(diagnosis: Diagnosis, frames: Any):
    """The releases that have every flag the incident's message advises ("please use
    --x"), within what the frames or the wording allow; None when it dates nothing."""
    try:
        from sglang_doctor.remedy import release_range
    except ImportError:
        return None
    try:
        return release_range.advised_flag_range((line.text for line in diagnosis.incident.lines), diagnosis.rule,
                                                frames.releases if frames is not None else None)
    except Exception:  # noqa: BLE001 - a version guess must never take the reading down
        return None


def _event_line(ev: dict) -> int:
    """The first log line an event is about (0 when it names none)."""
    line = ev.get("line")
    if isinstance(line, int):
        return line
    lines = ev.get("lines")
    return lines[0] if isinstance(lines, list) and lines and isinstance(lines[0], int) else 0


def _escape(literal: str) -> str:
    import re

    return re.escape(literal)


# -- sources ---------------------------------------------------------------------------


def open_log(path: str | os.PathLike, mapped: bool = False) -> Iterator[bytes]:
    """Blocks of a log file (gzip read transparently); InputError with one line on failure.

    ``mapped`` (explain on a big file): a settled regular file's blocks after the first are
    read-only mappings of the page cache instead of copies (read/mapped.py): a block is then
    a ``MappedBlock``, not ``bytes``, with the same bytes."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p}: is a directory")
        fh = open(p, "rb")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"{p}: cannot open: {exc.strerror or exc}") from None
    return _blocks(fh, p, mapped)


def _blocks(fh, p: Path, mapped: bool = False) -> Iterator[bytes]:
    """The file's text as UTF-8 blocks: gunzipped, UTF-16 transcoded, a UTF-8 BOM dropped.

    Never seeks, so a FIFO (``explain <(zcat old.log.gz)``) reads like a file.
    """
    with fh:
        try:
            head = fh.read(FIRST_BLOCK)
            # (a gzip or UTF-16 file is transformed block by block: read as before)
            mapped = mapped and len(head) == FIRST_BLOCK and not head.startswith(b"\x1f\x8b") \
                and decode_utf16(head) is None and settled(fh)
            raw = _raw_blocks(head, fh, mapped)
            if head.startswith(b"\x1f\x8b"):
                raw = _gunzip(raw, p)
            yield from _as_utf8(raw)
        except OSError as exc:
            raise InputError(f"{p}: read failed: {exc.strerror or exc}") from None


def _raw_blocks(head: bytes, fh, mapped: bool = False) -> Iterator[bytes]:
    if head:
        yield head
    if mapped:
        yield from mapped_blocks(fh, BLOCK)  # (then read() from where they end: a file that grew)
    while True:
        block = fh.read(BLOCK)
        if not block:
            return
        yield block


def _gunzip(blocks: Iterator[bytes], p: Path) -> Iterator[bytes]:
    """Decompress gzip incrementally (several concatenated members, as ``cat a.gz b.gz``)."""
    dec = zlib.decompressobj(wbits=31)
    fed = False  # the current member has had input
    for block in blocks:
        while block:
            fed = True
            try:
                out = dec.decompress(block, BLOCK)
            except zlib.error as exc:
                raise InputError(f"{p}: not a readable gzip file: {exc}") from None
            if out:
                yield out
            if dec.eof:
                block = dec.unused_data
                dec, fed = zlib.decompressobj(wbits=31), False
            else:
                block = dec.unconsumed_tail
    if fed and not dec.eof:
        raise InputError(f"{p}: not a readable gzip file: it ends before its compressed stream does")


def _as_utf8(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """UTF-16 (by its byte-order mark) becomes UTF-8; a UTF-8 BOM is dropped; else as is."""
    first = b""
    for block in blocks:
        first += block
        if len(first) >= 3:
            break
    codec = decode_utf16(first)
    if codec is None:
        if first.startswith(b"\xef\xbb\xbf"):
            first = first[3:]
        if first:
            yield first
        yield from blocks
        return
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    text = decoder.decode(first[2:])
    if text:
        yield text.encode("utf-8")
    for block in blocks:
        text = decoder.decode(block)
        if text:
            yield text.encode("utf-8")
    text = decoder.decode(b"", final=True)
    if text:
        yield text.encode("utf-8")


def decode_utf16(first: bytes) -> str | None:
    """Name of the UTF-16 flavour when the data starts with its byte-order mark."""
    if first.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if first.startswith(b"\xfe\xff"):
        return "utf-16-be"
    return None


def read_incidents(path: str | os.PathLike, ruleset: Any = None) -> tuple[list[Launch], list[Incident]]:
    """Every launch and incident of a finished log file (no rules needed)."""
    pipe = StreamPipeline(ruleset, remediate=False)
    found: list[Incident] = []
    for block in open_log(path):
        for ev in pipe.feed(block):
            if ev["event"] == "incident":
                found.append(ev["_diagnosis"].incident)
    for ev in pipe.finish():
        if ev["event"] == "incident":
            found.append(ev["_diagnosis"].incident)
    return pipe.assembler.launches, found


def diagnose_file(path: str | os.PathLike, ruleset: Any = None, **kwargs) -> list[Diagnosis]:
    """The diagnoses of a finished log read as a stream: its incidents, less the provisional
    ones a later line of the log took back (a ``withdraws`` warning: the server came up or
    went on serving after it), as explain reports them."""
    pipe = StreamPipeline(ruleset, **kwargs)
    events: list[dict] = []
    for block in open_log(path):
        events += pipe.feed(block)
    events += pipe.finish()
    withdrawn = {(ev["withdraws"]["rule"], tuple(ev["withdraws"]["lines"])) for ev in events if ev.get("withdraws")}
    out: list[Diagnosis] = []
    for ev in events:
        if ev["event"] != "incident":
            continue
        inc = ev["_diagnosis"].incident
        if not ev.get("provisional") or (ev["_diagnosis"].rule, (inc.first_line, inc.last_line)) not in withdrawn:
            out.append(ev["_diagnosis"])
    return out


def _if_it_failed(text: str | None) -> str | None:
    """A guarded step's "if this is X" for a text with no failure in it: "if the server did
    fail after these lines and that is X"."""
    if not text:
        return text
    for start in ("if this is ", "only if this is "):
        if text.startswith(start):
            return start.replace("this is ", "the server did fail after these lines and that was ") + text[len(start):]
    return text
