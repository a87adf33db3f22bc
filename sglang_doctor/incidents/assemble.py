"""Incident assembly: lines in, launches / milestones / whole incidents out.

A record begins at a prefixed line and owns the unprefixed lines after it.  A traceback is
a record whose text holds ``Traceback (most recent call last):`` anywhere (SGLang puts it
after ``Scheduler hit an exception: ``), or an unprefixed ``  File "..."`` line with no
header (a log cut off at the top).  Tracebacks and failure signals of several ranks that
fail together, with the parent's ``Received sigquit ...``, form one incident; a bare exception
line (one logged with no traceback) joins a traceback after it only when it is that
traceback's message or the record it was logged under (Assembler._close_group).  A new
``server_args=`` dump starts a new launch and closes whatever is open: incidents never mix
launches.

The assembler is a pure state machine: ``feed(line)`` returns the events that line
completes, ``flush()`` completes whatever is open (end of input, or an idle gap in pipe
and watch modes).  ``active`` tells the block scanner whether a line without any trigger
literal could matter; when it is False such a line is a no-op and may be skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from sglang_doctor.incidents import cut_match, milestones
from sglang_doctor.incidents import progress
from sglang_doctor.read import gutter as gutters
from sglang_doctor.read import records
from sglang_doctor.read.reader import clean_text
from sglang_doctor.read.scanner import LiteralIndex
from sglang_doctor.incidents import server_args
from sglang_doctor.incidents import request_errors
from sglang_doctor.incidents import serving
from sglang_doctor.incidents import signals
from sglang_doctor.incidents import startup_hints
from sglang_doctor.incidents import survived
from sglang_doctor.incidents import tracebacks
from sglang_doctor.model import Incident, Launch, Line, Milestone

# unprefixed lines that continue a signal record (faulthandler dumps, C++ stacks; a c10::Error's
# native backtrace ends "<omitting python frames>" where torch leaves out the Python frames it
# would interleave, and the "Fatal Python error: Aborted" dump of the std::terminate that such an
# error caused is the same failure of the same process)
_SIGNAL_CONTINUATION = re.compile(
    r"^(?:\s+\S|Current thread 0x|Thread 0x|Extension modules:|Exception raised from|frame #\d+|"
    r"<omitting python frames>|"
    r"Fatal Python error|Python runtime state|Stack \(most recent call first\))"
)
_CANCEL_TYPES = ("KeyboardInterrupt", "CancelledError", "SystemExit")
# what a stopped server's processes raise on the way down: a cancelled task, a pipe or socket
# whose other end has exited (a scheduler's or detokenizer's ZMQ / multiprocessing peer), ZMQ's
# context terminated under a blocked call
_TEARDOWN_TYPES = _CANCEL_TYPES + ("BrokenPipeError", "ConnectionResetError", "ConnectionAbortedError",
                                   "EOFError", "ContextTerminated")
# SGLang's scheduler watchdog (a hard one: its line is a failure) logs, with its "watchdog timeout"
# line, the batch it waited on and a py-spy dump of every scheduler: 0.4.x scheduler.py
# watchdog_thread logs "Watchdog timeout (...)" first, then "self.cur_batch.batch_size()=...",
# then pyspy_dump_schedulers' "Pyspy dump for PID N:" (or "Pyspy failed to dump PID N. Error:
# ...") records; 0.5.x utils/watchdog.py logs "<name> debug info:", the dumps ("Pyspy dump for
# PID N (py-spy dump --native --pid N):", "Pyspy failed (...)", "All pyspy dump attempts failed
# for PID N.") and only then its "watchdog timeout (...)" line.  The dump names where each
# thread hung (a collective, a kernel's JIT build lock): it is the failure's evidence, part of
# its incident, however the versions order them.
_WATCHDOG_LINE = re.compile(r"[Ww]atchdog timeout \(self\.watchdog_timeout=|Scheduler watchdog timeout")
_WATCHDOG_DUMP = re.compile(r"^(?:self\.cur_batch\b|Pyspy (?:dump for|failed)|All pyspy dump attempts failed|"
                            r"\S+ debug info:)")
_MAX_WATCHDOG_DUMP = 400  # lines of dumps kept for the watchdog line that comes after them (0.5.x)
# The tokenizer manager's crash dump (0.5.x tokenizer_manager.py dump_requests_before_crash, run
# by its SIGQUIT handler when a child failed, and on SIGTERM after a failed health check): the
# lines it prints while the failed ranks are still writing their tracebacks belong to that death
# and do not end its incident (sgl-project/sglang#28396: a rank's exception, "Sleeping 5 seconds
# before crash diagnostics", then TP7's "Scheduler hit an exception").
_CRASH_DUMP = re.compile(r"Dumping requests before crash\.|Dumped \d+ finished and \d+ unfinished requests before crash |"
                         r"Sleeping \d+ seconds before crash diagnostics|crash dump already performed, skipping")
# a native death's report (signals.py: terminate, abort, segfault, faulthandler) that a stop's teardown prints
_TEARDOWN_NATIVE = frozenset({"cpp_terminate", "aborted", "segfault", "faulthandler"})
# what a shell or supervisor prints after SGLang's own SIGKILL of its process tree
_AFTERMATH = ("killed", "exit_code")
# a supervisor's record of a process that a SIGKILL / SIGTERM ended (docker compose "NAME exited
# with code 137", systemd "Main process exited, code=killed, status=9/KILL", a shell's exit
# status): after the operator's stop, the stop's own end (rule literals of memory.host_oom.exit_137
# read these too)
_STOP_EXIT = re.compile(r"(?:exited with code|exit code|exit status)[ :=]+(?:137|143|-9|-15)\b|"
                        r"code=killed, status=(?:9/KILL|15/TERM)")
# A request SGLang rejected or failed while the server went on (CONTRACT: not an incident).
# (tokenizer_manager._validate_one_request, 0.4.6 to 0.5.23: "Requested token count exceeds the
# model's maximum context length of N tokens. You requested a total of ..." for input plus
# max_new_tokens over the context)
_REQUEST_LEVEL = re.compile(
    r"is longer than the model's context length|exceeds the maximum allowed length|"
    r"is longer than the context length|Input length \(\d+ tokens\) exceeds|"
    r"Requested token count exceeds the model's maximum context length")
REQUEST_ERROR_LITERAL = "Error in request"
# The OpenAI-compatible layer's request handler (OpenAIServingBase.handle_request)
# catches every exception of one request, logs it ("Error in request: ...", with its traceback)
# and answers that request with an error: a traceback through it is one request's, even when
# the paste lost the "Error in request" line above it.
_REQUEST_HANDLER = "entrypoints/openai/serving_base.py"
# The HTTP stack's per-request dispatch: uvicorn's HTTP protocol (run_asgi answers 500 and logs
# "Exception in ASGI application"), starlette's route handling and its exception wrapper.  Only
# requests pass there; start-up (the ASGI lifespan) goes through routing.py's ``lifespan``.
_HTTP_REQUEST_FRAMES = (("uvicorn/protocols/http/", None), ("starlette/routing.py", "handle"),
                        ("starlette/_exception_handler.py", "wrapped_app"))
# The tokenizer manager's per-request coroutine (TokenizerManager.generate_request, 0.4.x to
# 0.5.23), which the HTTP handlers and the offline Engine's generate / async_generate await for
# each request: what it raises is that request's (its validation -- input longer than the
# context, a feature the launch did not enable -- or its abort finish reason,
# _handle_abort_finish_reason), raised to the request's caller.  A scheduler that dies does not
# raise here: the parent gets SIGQUIT ("Received sigquit from a child process") and the process
# tree is killed, which are their own signals.
_REQUEST_COROUTINE = ("managers/tokenizer_manager.py", "generate_request")


# A test's own assertion: unittest's assert*/fail raise it (pytest's rewritten asserts pass
# _pytest/); SGLang's CustomTestCase wraps each test in srt/utils/common.py's retry(), whose
# "retry() exceed maximum number of retries" chains onto it. A server under test runs in its own
# process, so its failures have their own tracebacks; this one only says a check of the test
# (a throughput threshold, an expected answer) did not hold.  unittest's own ERROR report of the
# test drops its case.py frames (TestResult._is_relevant_tb_level), so there the deepest frame is
# CustomTestCase's call into the test method (python/sglang/test/test_utils.py, its retry lambda).
_TEST_RUNNER = ("/unittest/case.py", "/_pytest/", "/sglang/test/test_utils.py")
_TEST_RETRY = "/sglang/srt/utils/common.py"


# A "Traceback (most recent call last):" line with nothing before it but a record's prefix
# (a date, a time, a level, a rank tag; or their cut remains): no message such as "Scheduler hit
# an exception: Traceback ..." that says a process failed (nor, on the line above, Python's
# "Exception in thread Thread-3 (forward_thread_func):": the group's thread_func capture).
_BARE_TRACEBACK_HEADER = re.compile(
    r"^[\s\d\-:.,/\[\]()T]*(?:(?:INFO|ERROR|WARNING|TP|DP|EP|PP|CP|rank)[\s\d\-:.,/\[\]()=]*)*"
    r"Traceback \(most recent call last\):\s*$")


def _is_value_error(etype: str) -> bool:
    """``ValueError``, or what a paste cut at the line's head left of it (``…ueError``, ``Error``:
    a search excerpt or a terminal copy that starts mid-word keeps only the name's tail)."""
    name = etype.rsplit(".", 1)[-1].lstrip(tracebacks.CUT_MARK)  # (the mark of cut_head_exception)
    return bool(tracebacks.cut_type_matches(tracebacks.CUT_MARK + name, ("ValueError",), min_tail=5))


def _path(frame) -> str:
    return frame.file.replace("\\", "/")


def _test_assertion(builders) -> bool:
    """A test's AssertionError raised in the test runner, with no SGLang frame but retry()."""
    paths = [_path(f) for b in builders for f in b.frames]
    if not paths or any("/sglang/srt/" in p and not p.endswith(_TEST_RETRY) for p in paths):
        return False
    return any(part.exception is not None and part.frames
               and part.exception.type.rsplit(".", 1)[-1] == "AssertionError"
               and any(r in _path(part.frames[-1]) for r in _TEST_RUNNER)
               for b in builders for part in b.parts)


def _request_exception_group(builders) -> bool:
    """An exception group whose sub-exception's traceback went through one HTTP request's
    dispatch: starlette / anyio raise ``ExceptionGroup: unhandled errors in a TaskGroup`` around
    what a request's handler raised, and Python prints the group's own traceback first, then each
    sub-exception's (``+-+---- 1 ----`` / ``| Traceback ...``) as a traceback of its own, where the
    request's frames (uvicorn's run_asgi, starlette's route) are."""
    if len(builders) < 2 or not builders[0].chain:
        return False
    if not builders[0].chain[-1].type.rsplit(".", 1)[-1].endswith("ExceptionGroup"):
        return False
    return any(_request_frame(f) for b in builders[1:] for f in b.frames)


# The ASGI stack's own packages: uvicorn's server, starlette / FastAPI's app and middleware, anyio's
# task groups under them
_HTTP_STACK = ("/uvicorn/", "/starlette/", "/fastapi/", "/anyio/")


def _http_stack_sub_traceback(builders) -> bool:
    """A paste cut inside an exception group's sub-traceback (its ``|``-prefixed frames), where
    every frame left is the ASGI stack's (uvicorn, starlette, FastAPI, anyio) and none SGLang's:
    the group is starlette's / anyio's TaskGroup around one HTTP request's handling
    (collapse_excgroups in starlette's BaseHTTPMiddleware and StreamingResponse, which only a
    request passes; the lifespan of start-up is no task group), printed under uvicorn's
    "Exception in ASGI application" with the header and the request's own frames lost."""
    frames = [f for b in builders for f in b.frames]
    return (bool(frames) and any(b.grouped for b in builders)
            and all(any(part in _path(f) for part in _HTTP_STACK) for f in frames))


def _request_frame(frame) -> bool:
    """A frame that only one HTTP request's handling passes through."""
    path = _path(frame)
    if frame.function == "handle_request" and path.endswith(_REQUEST_HANDLER):
        return True
    if frame.function == _REQUEST_COROUTINE[1] and path.endswith(_REQUEST_COROUTINE[0]):
        return True
    return any(part in path and (function is None or frame.function == function)
               for part, function in _HTTP_REQUEST_FRAMES)
# uvicorn's logger.error for an exception one request's handler raised: it answers that request
# with a 500 and goes on serving, so the traceback under it is one request's (like SGLang's own
# "Error in request"); a server that died says so elsewhere (its scheduler's traceback, sigquit)
ASGI_ERROR_LITERAL = "Exception in ASGI application"
# Python's threading excepthook: "Exception in thread Thread-3 (forward_thread_func):"
_THREAD_HEADER = re.compile(r"^Exception in thread [^(]*?(?:\((?P<thread_func>\w+)\))?:\s*$")
THREAD_HEADER_LITERAL = "Exception in thread"
# Python's "Exception ignored in: <function X.__del__ ...>": an error it printed and ignored
# (often at interpreter exit, after a clean stop); the traceback under it is not a failure
IGNORED_LITERAL = "Exception ignored in"
_MAX_BARE_CONTINUATION = 200  # lines a signal-only incident may collect from unprefixed output
# The name prefix of the signals a rule's line/literal match contributes (pipeline.py)
RULE_LITERAL_SIGNAL = "rule_literal:"
# The bare word a line's "Error: ..." parses as (tracebacks.strict_exception): not a class
# anything in SGLang's stack raises, see Assembler._bare.
BARE_ERROR_WORD = "Error"
# Ranks that fail together log their tracebacks within a few lines of each other (a surviving
# rank's records in between); an open incident that waited longer than this for another rank
# is closed, so two failures far apart are two incidents (issue 11 item 13).
MAX_GROUP_GAP = 500
# the parent's "Received sigquit" this many lines after the launch's last reported incident is
# that incident's end (a watchdog's batch and py-spy dumps come between them), not a new one
TERMINAL_AFTER_REPORTED = 200
# A rank that only lost its peer: gloo's TCP pair (torch.distributed's CPU group, which SGLang's
# ranks use to pass requests and pipeline metadata) raises "[.../gloo/transport/tcp/pair.cc:N]
# Connection closed by peer [ip]:port. This is typically caused by a remote worker crashing",
# or "Read error [ip]:port: Connection reset by peer", when the process at the other end died.
# Such a traceback this close after the launch's last reported incident is that failure's
# aftermath on the ranks it left waiting (a pipeline stage, the other TP ranks), not a new one.
_PEER_LOST = re.compile(
    r"gloo/transport/tcp/pair\.cc:\d+\] (?:Connection closed by peer|Read error [^\n]*Connection reset by peer)")
# torch_npu raises "RuntimeError: The Inner error is reported as above. The process exits for
# this inner error, and the current working operator name is X." (torch_npu's NPU_CHECK_ERROR /
# ASCEND error path) after it has logged the device-side error itself (an ACL/ATB error code,
# "NPU out of memory. ..."): a traceback ending in it this close after the launch's last
# reported incident is that incident's own Python side, not a second failure.
_INNER_ERROR_ABOVE = "The Inner error is reported as above"
INNER_ERROR_AFTER_REPORTED = 5
# ... and only when that incident is a device-side error torch_npu (or the device runtime under
# it) logged: torch_npu's c10 log line ("[E... compiler_depend.ts:N] NPU out of memory. ...",
# "NPU function error: ..."), CANN / ACL's own report ("[ERROR] <date> (PID:N, Device:N, ...)
# ERR00100 PTA call acl api failed", an "EZ9999: Inner Error!" / "EL0004: ..." error code, "Kernel
# task happen error, retCode=0x.."), an ATB / aclnn failure, or a CUDA error / device-side
# assert.  The words point "above" at such a report; after any other incident (a request's
# error, a warning's traceback) the traceback is a failure of its own.
_DEVICE_SIDE = re.compile(
    r"NPU out of memory|NPU function error|\bE[A-Z]\d{4}:|\bERR\d{5}\b|retCode=0x"
    r"|Kernel task happen error|\[ERROR\] \d{4}-\d\d-\d\d-[\d:]+ \(PID:\d+, Device:|\b(?:aclnn\w*|ATB\w*|acl\w*) "
    r"(?:api )?failed|CUDA error|CUDA Error|device-side assert|Assertion `")
# Lines of the kernel's log (records.is_kernel_prefix) that read as nothing, this close after an
# open incident's last line, keep it open: the driver's context lines ("NVRM: GPU at PCI:...",
# the OOM killer's task table) come between the failure and the kernel's fault line.
KERNEL_LOG_JOIN = 60
# A line that is only a log viewer's header for the next line (a date-time and a pod or
# container name, nothing after them): some web UIs put it on a line of its own above every
# line they show.  It holds no text of SGLang's, so it neither ends a traceback nor starts
# anything.
# Python's logging of another program that ran SGLang and logged its output, one logger
# line per output line: "2025-04-03 12:06:29,955 - __main__ - INFO - <text>" (logging's
# common format), "2024-06-02 00:26:10 | ERROR | stderr | <text>" (FastChat).  The fields
# hold a level name; one space after the last separator belongs to the format, the rest
# (a traceback's indentation) to the text.
_FOREIGN_LOGGING = re.compile(
    r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: ?[|-] [\w.<>]+){0,2} ?[|-] "
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)(?: [|-] [\w.<>]+)? [|-] ")
_HEADER_ONLY = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s+[\w.]+-[\w.-]+\s*$")

# Literals that matter only on a line that does not start a record (a headless frame or
# exception line, see _bare): on a record-start line they change nothing, so the scanner
# may skip a record-start line whose only literals are these (read/scanner.py, "weak").
BARE_ONLY_LITERALS: tuple[str, ...] = ('File "', tracebacks.STRIPPED_FRAME_LITERAL, "Error: ", "Exception: ", "Error\n")
# Literals that matter on a record-start line only when the record's message starts as the
# regex says (and on any line that does not start a record): every built-in signal they
# trigger is anchored at the message's start (signals.py: argparse's ``PROG: error: ...``,
# a compiler's ``file.py:1:2: error: ...``), so a warning that merely holds ``: error: ``
# after other words is a no-op the scanner may skip.  Each regex matches every message its
# signals' regexes match (tests/incidents/test_incidents.py holds it to that).
HEAD_ONLY_LITERALS: dict[str, str] = {": error: ": r"loc\(|\S+(?: serve)?: error: "}
# A record-start line whose message *is* an exception line ("[... TP0] ValueError: ...",
# "[... TP1] torch.OutOfMemoryError: ...", behind any outer prefix) opens an incident
# (_record_exception).  Matched at the message's start: a (dotted) type ending in
# Error/Exception, a wrapper's "(Inner)", or a dotted module path and a class
# (triton.runtime.errors.OutOfResources), then ": " and a message.
RECORD_EXCEPTION_HEAD = (r"(?:(?:[A-Za-z_][\w]*\.)*[A-Za-z_][\w]*(?:Error|Exception)(?:\([A-Za-z_][\w.]*\))?"
                         r"|(?:[a-z_][a-z0-9_]*\.)+[A-Z][\w]*): \S")
_RECORD_EXCEPTION = re.compile(RECORD_EXCEPTION_HEAD)
# What the block scanner searches for such a line: the end of SGLang's header ("] ") and a
# builtin exception type, or a library's dotted one ("torch.OutOfMemoryError").  A trigger of
# its own, so the bare-only "Error: " stays a certain drop on the (many) record-start lines that
# hold it later in a warning's message (a head condition on it cost every such line a regex).
RECORD_EXCEPTION_LITERALS: tuple[str, ...] = tuple(
    [f"] {name}: " for name in (
        "Exception", "ValueError", "RuntimeError", "AssertionError", "TypeError", "KeyError", "AttributeError",
        "ImportError", "ModuleNotFoundError", "OSError", "IOError", "IndexError", "NotImplementedError",
        "FileNotFoundError", "PermissionError", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
        "BrokenPipeError", "TimeoutError", "MemoryError", "NameError", "ZeroDivisionError", "RecursionError",
        "SystemError", "OverflowError", "EOFError", "UnicodeDecodeError", "LookupError", "ArithmeticError")]
    + [f".{name}: " for name in (
        "OutOfMemoryError", "DistBackendError", "DistNetworkError", "DistStoreError", "DistError", "ZMQError",
        "HFValidationError", "RepositoryNotFoundError", "GatedRepoError", "LocalEntryNotFoundError", "SafetensorError",
        "CompilationError", "RayTaskError", "RaySystemError")])



def _device_side(incident: Incident) -> bool:
    """The incident is a device-side error (_DEVICE_SIDE in its signal lines or its exception)."""
    texts = [line.text for line in incident.signals]
    if incident.exception is not None:
        texts.append(incident.exception.message or "")
    return any(_DEVICE_SIDE.search(t) for t in texts)


# The generic types a launcher wraps a failure in, naming it in the message: a wrapper that
# re-raises ``Exception(f"{type(e).__name__}: {e}")`` or ``RuntimeError(f"...{e!r}")`` (an RL
# framework starting ``sgl.Engine``, a serving platform's runner, a test harness).
_WRAPPER_TYPES = frozenset({"Exception", "RuntimeError", "BaseException"})


def _with_wrapped(chain: list) -> list:
    """``chain`` with the exception a launcher's wrapper names in its message read as the failure
    (after it, where the rules read the root exception): ``Exception: ValueError: Unsupported
    architectures: ...`` fails as that ValueError, as a reporter's ``Error: ValueError: ...`` does
    (Assembler._bare).  Only a generic wrapper (_WRAPPER_TYPES) whose message starts with another
    exception's ``Type: message`` (a type ending Error/Exception, no warning, not the bare word
    ``Error``); the wrapper stays in the chain, before it."""
    if not chain or chain[-1].type.rsplit(".", 1)[-1] not in _WRAPPER_TYPES:
        return chain
    inner = tracebacks.bare_exception((chain[-1].message or "").strip())
    if inner is None or inner.type == BARE_ERROR_WORD or inner.type.endswith("Warning") \
            or not inner.type.rsplit(".", 1)[-1].endswith(("Error", "Exception")) \
            or inner.type.rsplit(".", 1)[-1] == chain[-1].type.rsplit(".", 1)[-1]:
        return chain
    return list(chain) + [inner]


def _record_exception(message: str) -> tracebacks.ExceptionInfo | None:
    """The exception a record's message is (``ValueError: ...`` after SGLang's prefix), or
    None: a warning type, or a message that merely holds an exception's words later on."""
    if not _RECORD_EXCEPTION.match(message):
        return None
    exc = tracebacks.bare_exception(message.strip())
    if exc is None or exc.type.endswith("Warning"):
        return None
    return exc


def weak_literals(rule_literals=()) -> tuple[list[str], dict[str, str]]:
    """What the block scanner may treat as weak: (literals that never matter on a
    record-start line, {literal: regex its message must match there to matter}).

    A rule's literal is a signal on any line that is not a warning (signals.extra_signal):
    a weak literal that is also a rule's matters on every record-start line but warnings."""
    rules = set(rule_literals)
    bare = [lit for lit in BARE_ONLY_LITERALS if lit not in rules]
    heads = {lit: rx for lit, rx in HEAD_ONLY_LITERALS.items()}
    for lit in BARE_ONLY_LITERALS:
        if lit in rules:
            heads[lit] = signals.WARNING_LINE_BYTES
    for lit in HEAD_ONLY_LITERALS:
        if lit in rules:
            heads[lit] = f"{heads[lit]}|{signals.WARNING_LINE_BYTES}"
    return bare, heads

TRIGGER_LITERALS: tuple[str, ...] = tuple(
    sorted(
        set(milestones.LITERALS)
        | set(signals.LITERALS)
        | set(signals.PROCESS_DEATH_LITERALS)
        | set(progress.LITERALS)
        | set(serving.LITERALS)
        | {tracebacks.HEADER, tracebacks.IPYTHON_HEADER_TEXT, 'File "', tracebacks.STRIPPED_FRAME_LITERAL, server_args.MARKER, "Error: ", "Exception: ", "Error\n",
           tracebacks.CUT_HEADER_LITERAL, "OutOfResources: ", "Error(", REQUEST_ERROR_LITERAL, THREAD_HEADER_LITERAL,
           IGNORED_LITERAL, ASGI_ERROR_LITERAL}
        | set(request_errors.LITERALS)
        | set(RECORD_EXCEPTION_LITERALS)
    )
)
_WRAP_LITERALS = (tuple(lit for lit in TRIGGER_LITERALS if lit not in BARE_ONLY_LITERALS and lit not in HEAD_ONLY_LITERALS),
                  TRIGGER_LITERALS)


@dataclass
class Event:
    kind: str  # "launch" | "milestone" | "ready" | "incident" | "death" (a dropped group's end of a process)
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
    request_level: bool = False  # a traceback SGLang logged for one failed request
    awaits_child: bool = False  # only the parent's sigquit so far: the child's traceback may follow
    bare: int = 0  # builders opened by a bare exception line (_exception_line), no traceback above it
    logs_traceback: bool = False  # (set aside for a traceback's group) the traceback was logged under its last line

    def add_ranks(self, ranks: tuple[str, ...]) -> None:
        label = records.rank_label(ranks)
        if label and label not in self.ranks:
            self.ranks.append(label)


def _same_exception(a: tracebacks.ExceptionInfo, b: tracebacks.ExceptionInfo) -> bool:
    """Two exception lines that are the same exception: the same message (one may be cut short,
    or span more lines than the other kept) and the same type, or a type one of them lost the
    head of (tracebacks.CUT_MARK) or the dotted module path of."""
    ma, mb = " ".join(a.message.split()), " ".join(b.message.split())
    short, long_ = sorted((ma, mb), key=len)
    if not (short == long_ or (len(short) >= 16 and long_.startswith(short))):
        return False
    ta = a.type.rsplit(".", 1)[-1].lstrip(tracebacks.CUT_MARK)
    tb = b.type.rsplit(".", 1)[-1].lstrip(tracebacks.CUT_MARK)
    return ta == tb or (a.type.startswith(tracebacks.CUT_MARK) and tb.endswith(ta)) \
        or (b.type.startswith(tracebacks.CUT_MARK) and ta.endswith(tb))


def _repeated_in(builders: list[tracebacks.TracebackBuilder], group: _Group) -> bool:
    """The exception of one of ``builders`` (bare exception lines) is one of the group's."""
    bare = [b.chain[-1] for b in builders if b.chain]
    return any(_same_exception(e, x) for e in bare for b in group.builders for x in b.chain)


def _merged(aside: _Group, group: _Group, *, lines_first: bool) -> _Group:
    """The group with the bare exception lines set aside for it, their lines first; their
    builders first when ``lines_first`` (the line is what the record logged, the traceback under
    it), else the tracebacks' (the line repeats a traceback's exception: the primary is the
    traceback, with its frames)."""
    builders = aside.builders + group.builders if lines_first else group.builders + aside.builders
    merged = _Group(lines=aside.lines + group.lines, builders=builders,
                    signal_lines=list(group.signal_lines), signal_names=list(group.signal_names),
                    captures={**group.captures, **aside.captures}, request_level=group.request_level,
                    awaits_child=group.awaits_child, bare=group.bare + aside.bare)
    for label in aside.ranks + group.ranks:
        if label not in merged.ranks:
            merged.ranks.append(label)
    return merged


def _cut_signal(text: str, extra: tuple[signals.Signal, ...]):
    """A failure signal whose line the paste began inside (``le creating shared memory
    segment /dev/shm/nccl-...``: its literal's head lost), as _classify's (signal, captures):
    a built-in evidence or terminal signal whose pattern, matched backwards, is cut short
    where the line starts (cut_match.tail_match), or a rule's literal (``extra``) whose end
    the line starts with (cut_match.starts_with_literal_tail); None when it is neither."""
    for sig in signals.SIGNALS:
        if sig.role not in ("evidence", "terminal") or cut_match.held_words(sig.regex.pattern, text) < _CUT_MIN * 2 // 3:
            continue
        if cut_match.tail_match(sig.regex, text, _CUT_MIN) is not None:
            return sig, {}
    for sig in extra:
        if any(cut_match.starts_with_literal_tail(text, lit) for lit in sig.literals):
            return sig, {}
    return None


def _type_lost(text: str) -> tracebacks.ExceptionInfo:
    """The exception of a first line that began inside its message, its type lost: marked
    tracebacks.CUT_MARK, followed by the built-in exception the message's end is CPython's
    words for (tracebacks.python_message_tail: ``…TypeError`` for ``pack non-iterable X
    object``).  The rules read such a message as cut at its start (rules_engine._match)."""
    named = tracebacks.python_message_tail(text)
    return tracebacks.ExceptionInfo(tracebacks.CUT_MARK + (named or ""), text.strip())


# A first line that starts with one space and then a word: a paste cut just before that space
# (a traceback's frames are indented by two, their source lines by four; a tab is indentation).
_CUT_BEFORE_A_SPACE = re.compile(r"^ (?=[^\s])")

# HTML's escapes of the characters a log's text holds (what GitHub's pages and API bodies
# write for ``"``, ``'``, ``<``, ``>``, ``&``); no SGLang record writes them itself
_HTML_CHARS = {"&quot;": '"', "&#34;": '"', "&#39;": "'", "&#x27;": "'", "&apos;": "'",
               "&lt;": "<", "&gt;": ">", "&amp;": "&"}
_HTML_ESCAPE = re.compile("|".join(map(re.escape, _HTML_CHARS)))

def as_written(text: str) -> str:
    """A line's text as SGLang wrote it, when a paste or a log store wrapped it: a container's
    log file as Docker's json-file driver writes it (the line's own text), markdown's inline
    code around it (`RuntimeError: ...`, its backticks left on the first and last lines), HTML's
    escapes left in by a copy from a web page's source or an API body (``File &quot;/usr/...``).
    An incident's lines carry this text; everything else is the reader's."""
    if text.startswith('{"log":') and (logged := _docker_json_log(text)) is not None:
        text = logged
    if "`" in text and (unquoted := _markdown_code_span(text)) is not None:
        text = unquoted
    if "&" in text and _HTML_ESCAPE.search(text):
        text = _HTML_ESCAPE.sub(lambda m: _HTML_CHARS[m.group(0)], text)
    return text


def _markdown_code_span(text: str) -> str | None:
    """``text`` without the backticks of markdown's inline code that a paste left on it: a
    pair around the whole line, or one opening the line (not a fence's ```) or closing it when
    the line holds an odd number of them (a message's own `--flag` quotes come in pairs); None
    when there are none."""
    if text.startswith("``") or text.endswith("``"):
        return None
    if len(text) > 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1]
    if text.count("`") % 2 == 0:
        return None
    if text.startswith("`"):
        return text[1:]
    return text[:-1] if text.endswith("`") else None


# the parent's sigquit: a child failed with an exception it logged just before (not the
# "scheduler died during initialization" of a child killed by a signal)
# a folded piece that ends inside a quoted value (``host='10.2`` of "HTTPConnection(host='10.20.0.5',
# port=8998)"): the terminal cut the value, so the next piece is its rest even when it starts as a
# line of its own would (``0.0.5', port=...`` reads like a date to records.starts_own_line)
_OPEN_VALUE = re.compile(r"""[=(\[{,:]\s*(?P<q>['"])(?:(?!(?P=q)).)*$""")


def _cut_inside_a_value(held: str, text: str) -> bool:
    """``held`` ends inside a quoted value that ``text`` closes, and ``text`` is no record's start."""
    m = _OPEN_VALUE.search(held)
    return (m is not None and m.group("q") in text and text[:1] not in (" ", "\t", "")
            and not records.is_record_start(text))


def _docker_json_log(text: str) -> str | None:
    """The line a record of Docker's json-file log driver holds (/var/lib/docker/containers/<id>/
    <id>-json.log: one JSON object per line, ``{"log": "<the line>\\n", "stream": "stderr",
    "time": "..."}``), or None when ``text`` is not one."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    logged = record.get("log") if isinstance(record, dict) else None
    if not isinstance(logged, str) or "\n" in logged.rstrip("\r\n"):
        return None
    # the decoded line as a terminal shows it, as the reader makes of a line's bytes
    # (read/reader.clean_text): colour codes (``\u001b[31m``, written as escapes in the JSON
    # string, so the reader saw no ESC byte), NUL bytes and ``\r`` rewrites taken off
    return clean_text(logged.rstrip("\r\n").encode("utf-8", "surrogatepass"))


_CHILD_FAILED = frozenset({"sigquit_launch", "sigquit_running"})

_CUT_MIN = 24  # characters of a signal's match a cut first line must hold (as rules' messages)


def _split_after_batch(text: str) -> list[str] | None:
    """[the batch line, the line joined after it] of a batch line a copy joined the next line
    onto with two spaces (bench/robustness.py browser_join), or None.  SGLang writes a batch
    line's fields separated by ", " (scheduler_metrics_mixin's "Prefill batch, #new-seq: ...",
    "Decode batch, #running-req: ..."), never two spaces."""
    message = serving.batch_message(text)
    if message is None or (k := message.find("  ")) < 0 or not message[k:].strip():
        return None
    at = len(text) - len(message) + k
    return [text[:at], text[at + 2:]]


# how much of the last record's text _logged_by keeps (its end: the words before the traceback)
PREV_RECORD_CHARS = 600
# SGLang's record header inside a line (behind whatever prefix a paste put before it)
_RECORD_IN_LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?(?: [A-Z_]+\d+)*\] ")


class Assembler:
    def __init__(self, extra_signals: tuple[signals.Signal, ...] = (), failure_words: tuple[str, ...] = (),
                 reads_as_message: Callable[[str], bool] | None = None):
        self.launches: list[Launch] = [Launch(index=0, line=None)]
        self._extra = extra_signals
        # lower-case words of failures the rule pack knows by their message (RuleSet.failure_words):
        # a bare "Error: ..." line counts as a failure only when it holds one (see _bare)
        self._failure_words = tuple(w for w in failure_words if w)
        self._cut_exception: tracebacks.ExceptionInfo | None = None  # see _cut_first_line
        # the input's first line when it read as nothing, until another non-blank line comes:
        # followed by the parent's sigquit, it is the end of the failed child's exception
        # (see _first_line_before_sigquit)
        self._first_unread: tuple[Line, tuple[str, ...]] | None = None
        # whether a paste's first line is the end of a message the rule pack knows
        # (RuleSet.reads_as_message): the paste began inside it, its exception type lost
        self._reads_as_message = reads_as_message
        # set by the caller before flush: the input ended without a line end (its last line is
        # cut); the incident holding that line says so (Incident.cut_at_end)
        self.ends_mid_line = False
        self._last_number = 0  # the number of the last line fed
        # _classify: which signals a message's literals point at, found in one automaton pass
        self._signals = signals.SIGNALS + signals.PROCESS_DEATHS + tuple(extra_signals)
        self._by_literal: dict[str, list[int]] = {}
        for i, sig in enumerate(self._signals):
            for lit in sig.literals + signals.cut_heads(sig):
                self._by_literal.setdefault(lit, []).append(i)
        self._literals = LiteralIndex(set(self._by_literal) | set(milestones.LITERALS) | set(progress.LITERALS)
                                      | set(serving.LITERALS))
        self._retract_literals = frozenset(serving.LITERALS)
        self._milestone_literals = frozenset(milestones.LITERALS)
        self._progress_literals = frozenset(progress.LITERALS)
        self._record: _Record | None = None
        self._group: _Group | None = None
        # a group of bare exception lines set aside when a traceback of another record came after
        # it: that traceback's group decides at its close whether they are one failure (_close_group)
        self._aside: _Group | None = None
        self._held: list[Line] = []  # blank lines a traceback builder holds back
        self._stopping = False  # the operator stopped the current launch
        self._stop_line: int | None = None  # the line that said so (a failure after it says it came after a stop)
        self._went_down = False  # the current launch's parent reacted to a failed child
        self._watchdog_dump: list[Line] = []  # py-spy dump lines no incident holds yet (_WATCHDOG_DUMP)
        self._last_reported: int | None = None  # last line of the launch's last reported incident
        self._last_reported_device = False  # ... and whether it was a device-side error (_DEVICE_SIDE)
        self._dropped_death: int | None = None  # first line of a group _incident dropped that showed a death
        # (launch index, message text) of the rule-literal lines already reported alone: the same
        # line again (a warm-up polling its own address every second) is the same failure
        self._reported_rule_lines: set[tuple[int, str]] = set()
        self._operator_killed: set[str] = set()  # pids the operator's own kill -9 named
        self._operator_patterns: set[str] = set()  # what the operator's own pkill -9 / killall -9 matched
        self._request_error: int | None = None  # line of the last "Error in request:" record
        # the lines right after that record are read even when nothing else is open: blank
        # lines between it and its traceback (a viewer that doubles line breaks) move it on
        self._request_error_next = False
        self._request_error_blank = False  # a blank line moved it: a record of its own unties it
        self._thread: tuple[int, str] | None = None  # (line, function) of "Exception in thread ... (f):"
        self._progress: tuple[int, str, str] | None = None  # (line, phase, message) of the last progress line
        # the launch's last serving.KEEP batch lines (line, text) and last retraction line: the
        # block scanner hands over the last ones of the text it skips (serving.py)
        self._batches: list[tuple[int, str]] = []
        self._retraction: tuple[int, str] | None = None
        # a text hard-wrapped at a terminal's width (records.wrap_width, set by the pipeline):
        # a line of exactly that width is held until the piece after it is seen and joined
        self.wrap_width: int | None = None
        # line numbers or a list marker a paste put before every line (read/gutter.py, set by
        # the pipeline): taken off each line before anything reads it
        self.gutter: re.Pattern | None = None
        self._wrapped: tuple[Line, int] | None = None  # (the line so far, its last piece's number)
        # (literals a record-start line is passed for, literals any other line is passed for)
        self.wrap_literals: tuple[tuple[str, ...], tuple[str, ...]] = _WRAP_LITERALS
        # the line fed last and how it was read ("plain": no signal, "signal"), with its
        # message: the one a text cut mid-line ends with is read again at flush (cut_match.py)
        self._last_fed: tuple[Line, tuple[str, ...], str, str] | None = None
        # the text of the last record read, if nothing but its own ordinary lines (a message's
        # further lines, a wrapped part, blank lines) came after it: the record a traceback
        # right below it was logged with (_logged_by)
        self._prev_plain: str | None = None
        self._kernel_line = False  # the line being read had the kernel log's prefix (records.is_kernel_prefix)
        self._structured: str | None = None  # the structured header of the record being read (records.parse_structured)
        # the normalized messages of the last records read as handled (cut_match.repeats_handled)
        self._handled: list[str] = []
        self._rich = tracebacks.RichBox()  # rich's traceback box, read as Python's lines (tracebacks.RichBox)
        # a wrapper's logger prefix before every line it relayed (tracebacks.logger_prefix), while it lasts
        self._logger_prefix: re.Pattern | None = None
        self._logged = False  # lines were read with that prefix taken off
        self._bar_line: tuple[int, str] | None = None  # (line, bar) of the last line split after a bar (records.split_bar)

    # -- public ------------------------------------------------------------------------

    @property
    def launch(self) -> Launch:
        return self.launches[-1]

    @property
    def active(self) -> bool:
        return self._group is not None or self._held != [] or self._wrapped is not None or (
            self._record is not None and self._record.kind != "normal"
        ) or self._first_unread is not None or self._request_error_next or (  # every line until the next non-blank one
            self._logger_prefix is not None) or (  # a wrapper's logger prefix: whether a line has it decides
            self._watchdog_dump != [] and len(self._watchdog_dump) < _MAX_WATCHDOG_DUMP)  # a py-spy dump's lines

    def feed(self, line: Line) -> list[Event]:
        self._last_number = line.number
        if self.gutter is not None:
            line = Line(line.number, gutters.strip(self.gutter, line.text), line.raw, line.cut)
        if self._request_error_next:
            if not line.text.strip():
                # a blank line between a request's error record ("Exception in ASGI
                # application", "Error in request:") and its traceback: the traceback is still
                # the next thing that record printed
                self._request_error = line.number
                self._request_error_blank = True
            else:
                self._request_error_next = False
        if self.wrap_width is not None:
            return self._unwrap(line)
        return self._feed_line(line)

    def _unwrap(self, line: Line) -> list[Event]:
        """Join the pieces of a line the terminal folded at ``wrap_width`` (a piece of exactly
        that width, then the piece after it unless that one starts a line of its own: see
        records.starts_own_line) and feed the whole line; nothing is dropped."""
        width = self.wrap_width
        events: list[Event] = []
        if self._wrapped is not None:
            held, last = self._wrapped
            self._wrapped = None
            if line.number == last + 1 and (not records.starts_own_line(line.text, held.text)
                                            or _cut_inside_a_value(held.text, line.text)):
                raw = held.raw + line.raw if held.raw is not None and line.raw is not None else held.raw
                joined = Line(held.number, held.text + line.text, raw, held.cut + line.cut)
                if len(line.text) == width:
                    self._wrapped = (joined, line.number)
                    return events
                return self._feed_line(joined)
            events = self._feed_line(held)
        if len(line.text) == width and self._passed_alone(line.text):
            self._wrapped = (line, line.number)
            return events
        return events + self._feed_line(line)

    def _passed_alone(self, text: str) -> bool:
        """Whether the block scanner hands this line over whatever came before it: while an
        incident or a traceback is open, or for a literal it holds (read/scanner.py).  Only
        such a piece is held, so the lines the scanner skips are judged the same either way."""
        if self.active:
            return True
        strong, every = self.wrap_literals
        return any(lit in text for lit in (strong if records.is_record_start(text) else every))

    def _feed_line(self, line: Line) -> list[Event]:
        if (text := as_written(line.text)) != line.text:
            line = Line(line.number, text, line.raw, line.cut)
        if "batch" in line.text and "  " in line.text and (parts := _split_after_batch(line.text)) is not None:
            # a batch line with the next line a copy joined onto it: each as its own line
            return [ev for part in parts for ev in self._feed_line(Line(line.number, part, line.raw, line.cut))]
        if "batch" in line.text and serving.is_batch(line.text):
            batches = self._batches
            if not batches or batches[-1][0] < line.number:
                batches.append((line.number, line.text))
                if len(batches) > serving.KEEP:
                    del batches[0]
                numbers = self.launch.batch_lines
                if not numbers or numbers[-1] < line.number:
                    numbers.append(line.number)
                    del numbers[:-serving.KEEP]
        if ("it/s]" in line.text or "s/it]" in line.text) and (bar := records.split_bar(line.text)) is not None:
            # a line written onto a progress bar's line: the bar (a progress line), then the line;
            # inside an open traceback the bar is another writer's (a rank's loading bar in a
            # tee'd log), no line of the traceback
            self._bar_line = (line.number, bar[0])
            in_traceback = self._record is not None and self._record.builder is not None
            parts = bar[1:] if in_traceback else bar
            return [ev for part in parts for ev in self._feed_line(Line(line.number, part, line.raw, line.cut))]
        if "  [" in line.text and (joined := records.split_joined_records(line.text)) is not None:
            # records a copy joined with two spaces: each as its own line
            return [ev for part in joined for ev in self._feed_line(Line(line.number, part, line.raw, line.cut))]
        if " pid=" in line.text:
            parts = records.split_joined(line.text)
            if parts is not None:  # a paste that lost its newlines: each part as its own line
                return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        if "arning" in line.text and (parts := signals.split_after_warning(line.text)) is not None:
            # a compiler's diagnostic written onto a warning's line: each as its own line
            return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        if "\\n" in line.text and (parts := tracebacks.split_escaped_traceback(line.text)) is not None:
            # a traceback pasted as a string literal (a JSON body, a repr): its escaped lines
            return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        if "|" in line.text and (parts := tracebacks.split_joined_group(line.text)) is not None:
            # an exception group's traceback whose lines a copy joined with two spaces
            return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        if ('File "' in line.text or tracebacks.HEADER in line.text) \
                and (parts := tracebacks.split_joined_traceback(line.text)) is not None:
            # a traceback whose newlines the paste lost: each of its lines as its own line
            return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        if "  " in line.text and self._reading_frames() \
                and (parts := tracebacks.split_source_and_exception(line.text)) is not None:
            # a frame's source line with the exception line a copy joined onto it (or the
            # exception line with the line below it)
            return [ev for part in parts for ev in self._feed(Line(line.number, part, line.raw, line.cut))]
        return self._feed(line)

    def _reading_frames(self) -> bool:
        """A traceback is open and its frames are being read (one frame at least)."""
        rec = self._record
        builder = rec.builder if rec is not None else None
        return builder is not None and not builder.complete and bool(builder.parts[-1].frames)

    def _logged_line(self, line: Line, events: list[Event]) -> Line:
        """The line without the logger prefix a wrapper's logger put before every line it relayed
        (tracebacks.logger_prefix, learnt from a traceback header's line or an SGLang record's);
        a line without it, or one that starts another traceback, ends it."""
        text = line.text
        if self._logger_prefix is not None and text.strip():
            m = self._logger_prefix.match(text)
            if m is not None and tracebacks.HEADER not in text[m.end():]:
                self._logged = True  # a line of the logged traceback was read
                return Line(line.number, text[m.end():], line.raw, line.cut)
            self._logger_prefix = None
            rec = self._record
            if self._logged and rec is not None and rec.builder is not None and rec.builder.complete:
                self._end_traceback(events)  # what the logger wrote next is not the exception's message
        self._logged = False
        learnt = tracebacks.logger_prefix(text)
        if learnt is None or records.outer_prefix_end(text) >= learnt[0].match(text).end():
            return line  # (a container's or launcher's prefix that records.outer_prefix_end takes off anyway)
        self._logger_prefix, before_record = learnt
        if before_record:  # the line is SGLang's record, its logger prefix taken off
            m = self._logger_prefix.match(text)
            return Line(line.number, text[m.end():], line.raw, line.cut)
        return line

    def _feed(self, line: Line) -> list[Event]:
        events: list[Event] = []
        self._last_fed = None
        if self._logger_prefix is not None or tracebacks.HEADER in line.text or (
                line.text[:1] != "[" and "[" in line.text and tracebacks.has_record_inside(line.text)):
            line = self._logged_line(line, events)
        # SGLang's own header at the line's start, the common case: no outer prefix, no
        # leading space, no digit; a record starts (one match of the header, not three)
        prefix = records.sglang_prefix(line.text)
        text = line.text
        self._kernel_line = False
        structured, self._structured = self._structured, None
        if prefix is None:
            end = records.outer_prefix_end(text)
            if end:  # docker compose, kubectl, journald, ray, mpirun: seen as SGLang wrote it
                self._kernel_line = records.is_kernel_prefix(text[:end])
                line = Line(line.number, text[end:], line.raw, line.cut)
            if line.number == 1 and _CUT_BEFORE_A_SPACE.match(line.text):
                # the paste began just before a space inside a line (``' fp8e4nv not supported
                # ...'``): one space is no indentation Python or SGLang prints; read it from its word
                line = Line(line.number, line.text[1:], line.raw, line.cut)
            text = line.text
            if (self._rich.open or text.lstrip()[:1] == "╭") and (unboxed := self._rich.line(text)) is not None:
                line = Line(line.number, unboxed, line.raw, line.cut)
                text = unboxed
            if text[:1].isdigit():
                if _HEADER_ONLY.match(text):
                    return events  # a viewer's header line for the line below it
                if (header := records.parse_structured(text)) is not None:
                    # a structured header on every line of a record: the first line starts the
                    # record, the lines under the same header are its message's lines
                    self._structured = header.header
                    line = Line(line.number, header.message, line.raw, line.cut)
                    text = line.text
                    if header.header != structured:
                        prefix = header.prefix()
                m = _FOREIGN_LOGGING.match(text)
                if m:  # another program's logger around SGLang's output: its text as SGLang wrote it
                    line = Line(line.number, text[m.end():], line.raw, line.cut)
                    text = line.text
            if prefix is None and records.is_record_start(text):
                prefix = records.parse_prefix(text)
        if prefix is not None:
            self._start_record(line, events, prefix)
        elif line.number == 1 and (cut := records.parse_cut_prefix(text)) is not None:
            # the paste starts inside the first record's header (``TP0] ValueError: ...``):
            # that record, its time stamp lost
            self._start_record(line, events, cut)
        else:
            self._continue_record(line, events)
        if self._first_unread is not None and line.number > 1 and text.strip():
            self._first_unread = None
        return events

    def flush(self) -> list[Event]:
        events: list[Event] = []
        if self._wrapped is not None:  # a folded line's last piece was exactly the width
            held, self._wrapped = self._wrapped[0], None
            events += self._feed_line(held)
        self._read_cut_line(events)
        self._release_held(events)
        self._close_group(events)
        self._record = None
        return events

    def _read_cut_line(self, events: list[Event]) -> None:
        """The input ended inside its last line (ends_mid_line): that line was read as far as
        it goes; read it again with what the rest of the text and the signals' own words say
        of its lost end (cut_match.py)."""
        last = self._last_fed
        if not self.ends_mid_line or last is None or last[0].number != self._last_number:
            return
        line, ranks, how, message = last
        if how == "plain":
            found = cut_match.complete_literal(message, self._signals)
            if found is not None:
                sig, captures, literal = found
                captures["cut_literal"] = literal
                self._signal(line, ranks, (sig, captures), events)
            return
        group = self._group
        if (group is not None and not group.builders and group.signal_lines
                and all(sl.number == line.number for sl in group.signal_lines)
                and cut_match.repeats_handled(line.text, self._handled)):
            # another rank's complete record of the same event was handled (a client's abort)
            self._group = None
            self._record = _Record(ranks, "normal")

    # -- records -----------------------------------------------------------------------

    def _start_record(self, line: Line, events: list[Event], prefix=None) -> None:
        prefix = prefix or records.parse_prefix(line.text)
        if self._request_error_blank:
            # a record of its own after the blank lines: not what the request's error printed
            self._request_error, self._request_error_blank = None, False
        self._release_held(events)
        message = prefix.message
        if self._record and self._record.builder:
            self._record.builder.finish()
        dump = server_args.find_dump(message) if server_args.MARKER in message else None
        if dump is not None:
            self._prev_plain = None
            self._close_group(events)
            self._new_launch(line, dump, events)
            self._record = _Record(prefix.ranks, "normal")
            return
        request_header = request_errors.is_header(message)
        if (tracebacks.HEADER in message and not tracebacks.echoes_traceback(message)) \
                or tracebacks.is_cut_header(message):
            # a request's handled error may carry its traceback in the record itself (0.4.x
            # openai_api/adapter.py: "error: Traceback (most recent call last): ...")
            self._start_traceback(line, prefix.ranks, events, headless=False, request_level=request_header)
            return
        # a record starts that is no traceback's header line (a logger's prefix on each line of
        # one: the same record): _normal takes its text
        self._prev_plain = None
        if request_header:
            # one request's handled error: its text (the request's exception, any words) is
            # not a failure signal; the traceback below it is that request's (request_errors.py)
            self._record = _Record(prefix.ranks, "normal")
            self._normal(line, prefix.ranks, message, events, set(), request_header=True)
            return
        found = self._literals.found(message)
        sig = self._classify(message, found)
        # an exception line logged behind SGLang's own prefix with no traceback above it
        # ("[... TP0] ValueError: ..."): an incident of its own, like the unprefixed one
        exc = _record_exception(message)
        if sig is not None and (exc is None or sig[0].role != "evidence"):
            self._signal(line, prefix.ranks, sig, events)
            return
        if exc is not None:
            self._exception_line(Line(line.number, message, line.raw, line.cut), prefix.ranks, sig, events)
            return
        self._record = _Record(prefix.ranks, "normal")
        if self._group is None and _WATCHDOG_DUMP.match(message):
            # (0.5.x) a watchdog's dump before its line: kept for that line's incident
            self._watchdog_dump.append(line)
        else:
            self._watchdog_dump = []
        self._normal(line, prefix.ranks, message, events, found, request_header=False)

    def _end_traceback(self, events: list[Event]) -> None:
        """The open record's traceback ended before the line being read."""
        rec = self._record
        rec.builder.finish()
        rec.builder.release()
        self._release_held(events)
        self._record = _Record(rec.ranks, "normal")

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
            self._end_traceback(events)  # it ended before this line (and before any held blank lines)
            self._bare(line, events, ended=rec.builder)
            return
        elif rec is not None and rec.kind == "signal":
            if _SIGNAL_CONTINUATION.match(text) or (not text.strip() and self._group is not None):
                self._group.lines.append(line)
                return
            self._record = _Record(rec.ranks, "normal")
        self._bare(line, events)

    def _bare(self, line: Line, events: list[Event], ended: tracebacks.TracebackBuilder | None = None) -> None:
        """An unprefixed line that no open record claims; ``ended``: the traceback (or bare
        exception line) whose record this line continues, which ended right above it."""
        text = line.text
        # (the kernel's lines are no rank's, whatever record came before them)
        ranks = self._record.ranks if self._record and not self._kernel_line else ()
        if text.startswith(IGNORED_LITERAL):
            self._request_error = line.number  # the traceback that follows was ignored by Python
            self._request_error_next, self._request_error_blank = True, False
        if text.startswith(THREAD_HEADER_LITERAL):
            m = _THREAD_HEADER.match(text)
            if m is not None and m.group("thread_func"):
                self._thread = (line.number, m.group("thread_func"))
        if (tracebacks.HEADER in text and not tracebacks.echoes_traceback(text)) or tracebacks.is_cut_header(text) \
                or tracebacks.is_ipython_header(text):
            self._start_traceback(line, ranks, events, headless=False, continues=ended)
            return
        if ('File "' in text or tracebacks.STRIPPED_FRAME_LITERAL in text) and tracebacks.is_frame(text):
            self._start_traceback(line, ranks, events, headless=True)
            return
        if not text[:1].isspace() and request_errors.is_header(text):
            self._normal(line, ranks, text, events, set())  # one request's handled error (request_errors.py)
            return
        found = self._literals.found(text)
        sig = self._classify(text, found)
        # an indented line is inside a traceback or a message, except the text's first line:
        # nothing is above it, so its indent is the paste's (an exception line quoted with
        # markdown indentation in an issue's prose)
        exc = (tracebacks.bare_exception(text.strip())
               if ((":" in text or "(" in text) and (not text[:1].isspace() or line.number == 1)) else None)
        if exc is None and text.endswith((":", ": ")) and not text[:1].isspace():
            exc = tracebacks.open_exception(text.strip())  # "ImportError: " + message lines below
        if exc is not None and exc.type.endswith("Warning"):
            exc = None
        if line.number == 1 and not text[:1].isspace():
            nccl_tail = survived.NONFATAL_NCCL_TAIL.search(text) is not None
            if nccl_tail and "NCCL " not in text:
                # the end of an NCCL line whose code goes on (survived.py), its head and its
                # "NCCL INFO"/"NCCL WARN" cut off: whatever failure words it quotes (dlopen's
                # error in the plugin probe), it is that line (a whole WARN line stays a
                # warning that goes on: survived.goes_on_after)
                sig = exc = None
            exc = self._cut_first_line(text, exc, sig)
            if exc is None and sig is None and not nccl_tail:
                sig = _cut_signal(text.strip(), self._extra)
        if exc is not None and exc.type == BARE_ERROR_WORD:
            # "Error: <text>" at column 0 with no traceback above it: no Python class of
            # SGLang's stack is named Error (it raises RuntimeError/ValueError/Exception), so
            # this is another program's message (a CI wrapper's "Error: Pod logs ended ...",
            # a CLI's "Error: ...") or a reporter's "Error: " in front of what they pasted.
            # Only what follows the word can name a failure: an exception line (taken as
            # that exception), a signal's words (sig, classified on the whole line) or the
            # words of a failure the rule pack knows by its message ("NPU out of memory"
            # behind a reporter's "Error: "); then the line stays an exception incident as
            # before.  Otherwise it is another program's message, not a failure of its own.
            inner = tracebacks.bare_exception(exc.message.strip())
            if inner is not None and inner.type != BARE_ERROR_WORD and not inner.type.endswith("Warning"):
                line = Line(line.number, exc.message.strip(), line.raw, line.cut)
            elif sig is None and not self._names_failure(exc.message) \
                    and not (line.number == 1 and self._knows_message(exc.message)):
                # (on the input's first line, ``Error: `` is also what a paste that began inside
                # the type left of ``AssertionError: ``: a message a rule knows keeps it one)
                self._normal(line, ranks, text, events, found)
                return
        if sig is not None and (exc is None or sig[0].role != "evidence"):
            self._cut_exception = None
            self._signal(line, ranks, sig, events)
            return
        if exc is not None:
            if text[:1].isspace():  # the first line's paste indent (above)
                line = Line(line.number, text.strip(), line.raw, line.cut)
            self._exception_line(line, ranks, sig, events)
            return
        group = self._group
        if (group is not None and group.signal_lines and not group.builders and text.strip()
                and not group.awaits_child
                and len(group.lines) < _MAX_BARE_CONTINUATION and milestones.match(text) is None):
            # Native libraries (NCCL, torch's c10 logger) print several unprefixed lines per
            # failure ("NCCL INFO ... -> 6", "Exception ... detected by watchdog"): they
            # belong to the failure they follow, until the next prefixed record.
            group.lines.append(line)
            return
        if group is None and self._watchdog_dump and len(self._watchdog_dump) < _MAX_WATCHDOG_DUMP:
            self._watchdog_dump.append(line)  # a line of the dump a watchdog line will follow
            return
        if line.number == 1 and text.strip() and not text[:1].isspace() and (
                self._bar_line is None or self._bar_line[1] != text):  # (a bar split off its line is no message's end)
            self._first_unread = (line, ranks)
        self._normal(line, ranks, text, events, found)

    def _first_line_before_sigquit(self, events: list[Event]) -> None:
        """The parent's sigquit right after the input's first line, which read as nothing
        (blank lines aside): SGLang's child logs its traceback and then signals the parent
        (scheduler.py run_scheduler_process: ``Scheduler hit an exception: {traceback}``, then
        SIGQUIT to the parent; 0.4.x to 0.5.2x), so the line just above the parent's
        ``Received sigquit`` / ``SIGQUIT received`` is the end of the child's exception: a
        paste that began inside its message lost the type with the head.  That line opens the
        incident as an exception with its type lost (tracebacks.CUT_MARK)."""
        line, ranks = self._first_unread
        self._first_unread = None
        self._cut_exception = _type_lost(line.text)
        self._exception_line(Line(line.number, line.text.strip(), line.raw, line.cut), ranks, None, events)

    def _cut_first_line(self, text: str, exc, sig):
        """The input's first line, when the paste starts inside an exception line's type
        (``rror: CUDA out of memory. ...``, ``ueError: ...``): the exception with its type
        marked as a tail (tracebacks.CUT_MARK), when the line holds a failure's words or a
        signal's; otherwise what the line read as before."""
        if exc is None and sig is None and survived.NONFATAL_NCCL_TAIL.search(text):
            return None  # the tail of an NCCL warning whose thread goes on (survived.py)
        cut = tracebacks.cut_head_exception(text.strip())
        if cut is None and exc is None and sig is None and records.opens_record(text):
            return None  # another logger's record starts here (uvicorn's, NCCL's, glog's): no message's middle
        if cut is None and exc is None and sig is None and self._reads_as_message is not None \
                and self._reads_as_message(text.strip()):
            # the paste began inside the message: the type went with its head (``of memory.
            # Tried to allocate 2.00 GiB ...``); what is left is a message the pack knows
            self._cut_exception = tracebacks.ExceptionInfo(tracebacks.CUT_MARK, text.strip())
            return self._cut_exception
        if cut is None and exc is None and sig is None and tracebacks.python_message_tail(text) is not None:
            # the end of a message CPython gives a built-in exception (``pe' object has no
            # attribute 'cpu'``): that exception, its type gone with the message's head
            self._cut_exception = _type_lost(text)
            return self._cut_exception
        if cut is not None and cut.type == tracebacks.CUT_MARK + BARE_ERROR_WORD \
                and tracebacks.bare_exception(cut.message.strip()) is not None:
            return exc  # "Error: ValueError: ...": a reporter's word before the exception (below)
        if cut is None or (exc is not None and exc.type.rsplit(".", 1)[-1] != cut.type.rsplit(".", 1)[-1].lstrip(tracebacks.CUT_MARK)):
            return exc
        if sig is None and not self._names_failure(cut.message) and not tracebacks.telling_tail(cut.type):
            named = tracebacks.python_message_type(cut.type, cut.message.strip())
            if named is not None:  # its message as CPython words it names the type
                cut = tracebacks.ExceptionInfo(tracebacks.CUT_MARK + named, cut.message)
            elif (exc is None or exc.type == BARE_ERROR_WORD) and not self._knows_message(cut.message):
                return exc  # (a message a specific rule knows keeps the short tail an exception)
        self._cut_exception = cut
        return cut

    def _knows_message(self, message: str) -> bool:
        """Whether ``message`` (a cut first line's, after its type's tail) is a message a
        specific rule knows, whole or its end (RuleSet.reads_as_message)."""
        return self._reads_as_message is not None and bool(message.strip()) \
            and self._reads_as_message(message.strip())

    def _names_failure(self, message: str) -> bool:
        """Whether ``message`` holds the words of a failure the rule pack knows by its message."""
        low = message.lower()
        return any(w in low for w in self._failure_words)

    def _exception_line(self, line: Line, ranks: tuple[str, ...], sig, events: list[Event]) -> None:
        """A bare exception line (``line.text`` is the exception, any prefix gone) opens an
        incident; when it also holds a failure signal's words ("DistBackendError: NCCL error
        in: ...") the exception names the failure and the signal's name joins it as evidence."""
        text = line.text
        builder = tracebacks.TracebackBuilder(text, headless=True)
        builder.offer(text)
        if self._cut_exception is not None:
            if builder.parts[-1].exception is not None:  # the first line's type read as a tail
                builder.parts[-1].exception = self._cut_exception
            self._cut_exception = None
        group = self._group
        if group is not None and group.builders and (group.request_level or self._request_rejected(builder)) \
                and not _repeated_in([builder], group):
            # one request's error and a failure are never one incident (as in _start_traceback):
            # a request's traceback, then a failure's exception line; or a failure, then one
            # request's error line (taken for the failure's exception when its traceback was cut)
            self._close_group(events)
        self._open_group(events, line)
        self._group.builders.append(builder)
        self._group.bare += 1
        self._group.add_ranks(ranks)
        self._group.lines.append(line)
        if sig is not None:
            self._group.signal_names.append(sig[0].name)
            for k, v in sig[1].items():
                self._group.captures.setdefault(k, v)
        self._record = _Record(ranks, "traceback", builder)

    def _normal(self, line: Line, ranks: tuple[str, ...], message: str, events: list[Event],
                literals: set[str] | None = None, request_header: bool | None = None) -> None:
        """``request_header``: request_errors.is_header(message), when the caller has it."""
        self._last_fed = (line, ranks, "plain", message)
        if message.strip():
            text = message.strip() if self._prev_plain is None else f"{self._prev_plain} {message.strip()}"
            self._prev_plain = text[-PREV_RECORD_CHARS:]
        if request_header is None:
            request_header = request_errors.is_header(message)
        if REQUEST_ERROR_LITERAL in message or ASGI_ERROR_LITERAL in message or request_header:
            self._request_error = line.number
            self._request_error_next, self._request_error_blank = True, False
        if (literals is None or not self._retract_literals.isdisjoint(literals)) \
                and serving.retracted(message) is not None:
            self._retraction = (line.number, message)
        # ``literals``: the literals _classify found in the message; no milestone literal
        # among them means no milestone, without a loop over every milestone literal
        found = None
        if literals is None or not self._milestone_literals.isdisjoint(literals):
            found = milestones.match(message)
        if found is None and self._group is None and (literals is None or not self._progress_literals.isdisjoint(literals)):
            phase = progress.phase_of(message)
            if phase is not None:
                self._progress = (line.number, phase, message[:200])
        if found is not None:
            name, figures = found
            if self._stopping and name != "ready":
                # a start-up step after the stop: the server was launched again (a relaunch
                # whose header the paste or the log's rotation left out); what follows is no
                # longer the stop's teardown
                self._stopping, self._stop_line = False, None
            ms = Milestone(name, line.number, records.rank_label(ranks) or None, figures, message)
            self.launch.milestones.append(ms)
            events.append(Event("milestone", self.launch, milestone=ms, line=line.number))
            if name == "ready" and self.launch.ready_line is None:
                self.launch.ready_line = line.number
                events.append(Event("ready", self.launch, line=line.number))
        group = self._group
        if group is not None and not group.builders and (_WATCHDOG_DUMP.match(message) or not message.strip()) \
                and not self._too_far(line) and any(_WATCHDOG_LINE.search(s.text) for s in group.signal_lines):
            # (0.4.x) the watchdog's batch and py-spy dump after its line, whichever rank's, and
            # the blank lines between the dump's parts: the failure's evidence (the dump's
            # unprefixed lines follow as a signal's do)
            group.lines.append(line)
            return
        if group is not None and self._kernel_line and not self._too_far(line) \
                and line.number - group.lines[-1].number <= KERNEL_LOG_JOIN:
            # the kernel's log pasted right after the failure (dmesg, journalctl -k): its other
            # lines (the driver naming the GPU, the OOM killer's task table) do not end the
            # incident, so the fault the kernel logged (an Xid, the OOM kill) joins the failure
            # it explains.  Nothing is ordered by the kernel's clock: only by where it was pasted.
            return
        if group is not None and (not self._group_waits_for(ranks) or self._too_far(line)) \
                and not (group.builders and _CRASH_DUMP.search(message) and not self._too_far(line)):
            self._close_group(events)

    def _group_waits_for(self, ranks: tuple[str, ...]) -> bool:
        """An open incident stays open for records of ranks that have not failed yet."""
        label = records.rank_label(ranks)
        return bool(label) and bool(self._group.ranks) and label not in self._group.ranks

    # -- tracebacks and signals --------------------------------------------------------

    def _start_traceback(self, line: Line, ranks: tuple[str, ...], events: list[Event], *, headless: bool,
                         request_level: bool = False, continues: tracebacks.TracebackBuilder | None = None) -> None:
        """``continues``: the traceback or bare exception line whose record this header's line
        continues (an unprefixed line right under it, blank lines aside)."""
        builder = tracebacks.TracebackBuilder(line.text, headless=headless)
        # (the record on the line above, or before it on the same line: a copy joined them)
        request_level = request_level or (self._request_error is not None and 0 <= line.number - self._request_error <= 1)
        if self._group is not None and self._group.builders and (request_level or self._group.request_level):
            self._close_group(events)  # a request's traceback is never part of a failure, nor a failure of it
        if self._only_bare_lines(self._group) and not self._too_far(line) and (
                not headless or all(self._request_rejected(b) for b in self._group.builders)):
            # a traceback after bare exception lines (a request's error logged in one line, a
            # rank's exception line): one failure only if it was logged with the last of them (a
            # bare header right under it: logging's exc_info) or one of them is its message,
            # which its end will tell (_close_group).  Frames with no header after the lines (a
            # paste's elision between them) join them as before, unless the lines are one
            # request's error.  (No group is set aside while one of bare lines is open: one is set
            # aside only for a traceback's group, whose close decides it.)
            self._group.logs_traceback = continues in self._group.builders \
                and not line.text.split(tracebacks.HEADER, 1)[0].strip()
            self._aside, self._group = self._group, None
        logged_by = self._logged_by(line)
        self._open_group(events, line)
        if request_level and not self._group.lines:
            self._group.request_level = True
        if not self._group.lines and logged_by:
            self._group.captures.setdefault(survived.HANDLED_CAPTURE, logged_by)
        if self._thread is not None and line.number - self._thread[0] == 1:
            # the thread the traceback came from names where it failed (forward_thread_func)
            self._group.captures.setdefault("thread_func", self._thread[1])
        self._group.builders.append(builder)
        self._group.add_ranks(ranks)
        self._group.lines.append(line)
        self._record = _Record(ranks, "traceback", builder)

    def _logged_by(self, line: Line) -> str | None:
        """The record a traceback starting at ``line`` was logged with: the text before its
        header on the same line (``logger.error(f"...: {traceback.format_exc()}")``), else the
        ordinary line right above it (logging's ``exc_info`` / ``logger.exception`` append the
        traceback below the record's message; ``traceback.print_exc()`` after a print): the last
        record read, when only its own ordinary lines came after it (blank lines, a wrapped part;
        the block scanner skips them and replays the record).  survived.handled_record reads it."""
        before = line.text.split(tracebacks.HEADER, 1)[0]
        record = _RECORD_IN_LINE.search(before) if tracebacks.HEADER in line.text else None
        if record is not None and before[record.end():].strip():
            return before[record.end():].strip()  # (a paste's prefix before the record is not its text)
        return self._prev_plain

    def _classify(self, message: str, found: set[str] | None = None):
        """The first signal (built-in ones, then the rules' extra ones) whose literal is in
        the message and whose regex matches it, with its captures; as signals.classify.
        ``found``: the literals of the message, from the automaton (``LiteralIndex``)."""
        if found is None:
            found = self._literals.found(message)
        if not found:
            return None
        by_literal = self._by_literal
        candidates = sorted({i for lit in found for i in by_literal.get(lit, ())})
        for i in candidates:
            sig = self._signals[i]
            m = sig.regex.search(message)
            if m:
                return sig, signals.decode_wait_status({k: v for k, v in m.groupdict().items() if v is not None})
            if sig.cut_anywhere and (cut := signals.cut_reading(sig, message)) is not None:
                return cut  # a line cut inside its words (signals.Signal.cut_anywhere)
        return None

    def _signal(self, line: Line, ranks: tuple[str, ...], found, events: list[Event]) -> None:
        sig, captures = found
        self._last_fed = (line, ranks, "signal", line.text)
        if sig.role == "operator_kill":
            self._operator_killed.update(captures.get("killed_pids", "").split())
            if (pattern := signals.kill_pattern(captures)) is not None:
                self._operator_patterns.add(pattern)
            self._record = _Record(ranks, "normal")
            return
        if sig.name == "killed" and (captures.get("killed_pid") in self._operator_killed
                                     or f"%{captures.get('killed_job')}" in self._operator_killed
                                     or signals.killed_by_pattern(line.text, self._operator_patterns)):
            # bash reporting the job that the operator's "kill -9 <pid>" (or "%<job>", or a
            # pkill -9 of its command) above ended; when that job is SGLang's server the kill
            # stopped the launch, and the script's report of its end (an exit status 137) after
            # it is that stop's (survived.operator_killed_server, session 35)
            if survived.operator_killed_server(line.text):
                self._stop(line.number)
            self._record = _Record(ranks, "normal")
            return
        if sig.role == "handled":  # what a healthy server reports of one request (a client's abort)
            self._handled.append(cut_match.normalized(line.text))
            del self._handled[:-8]
            if sig.shows_progress:
                # not a failure, but a kernel being compiled: the step the launch was in (progress.py)
                self._normal(line, ranks, line.text, events)
            self._record = _Record(ranks, "normal")
            return
        if sig.role == "stop_request":
            # the HTTP server was asked to exit (signals.py uvicorn_shutdown): a failure open
            # above it is reported as it stands, what follows is the stop's teardown
            self._close_group(events)
            self._stop(line.number)
            self._record = _Record(ranks, "normal")
            return
        if sig.role == "stop" or sig.role == "benign":
            self._stop(line.number)
            self._record = _Record(ranks, "normal")
            if self._group is not None and not self._group.builders:
                self._group = None  # evidence that turned out to be the operator's stop
            return
        if self._stopping and sig.role == "terminal":
            self._record = _Record(ranks, "normal")
            return
        if self._stopping and sig.name in ("subprocess_crashed", "c10d_peer_gone", "nccl_watchdog", "nccl_warn",
                                           "nccl_error"):
            # ranks tearing down after an operator's stop lose their peers: not a failure (NCCL's
            # proxy thread WARNs of the connections the peers closed, "[Service thread] Error
            # encountered progressing operation=Connect, res=3, closing connection", and a
            # collective in flight ends in "NCCL error ... remote process exited")
            self._record = _Record(ranks, "normal")
            return
        if self._stopping and self._group is None and sig.name in _TEARDOWN_NATIVE:
            # a process dying in native code on its way down after the operator's stop: threads
            # still running at exit (libstdc++'s std::thread destructor calls terminate, "terminate
            # called without an active exception", then abort), a library's destructor at
            # interpreter shutdown; the stop is the cause (CONTRACT: a server stopped on purpose
            # is not an incident)
            self._record = _Record(ranks, "normal")
            return
        if sig.role == "terminal" and self._group is None and self._follows_reported(line):
            # the parent's reaction to the child whose failure was just reported: SGLang's 0.4.x
            # scheduler watchdog logs "Watchdog timeout (...)", then the running batch and a py-spy
            # dump of every scheduler, sleeps 5 s and only then sends SIGQUIT to the parent
            # (0.4.6.post1 scheduler.py watchdog_thread); the "Received sigquit" that follows is
            # the end of the incident already reported, not a second failure; still a death of
            # the launch, which decides an incident held for what follows it (pipeline.py)
            self._went_down = True
            self._record = _Record(ranks, "normal")
            events.append(Event("death", self.launch, line=line.number))
            return
        if self._went_down and self._group is None and sig.name in _AFTERMATH:
            # SGLang kills its own process tree after "Received sigquit" (0.5.9 with
            # include_parent=True): the shell's "Killed" / exit 137 that follows is the
            # end of the incident already reported, not a new failure.
            self._record = _Record(ranks, "normal")
            return
        if self._stopping and self._group is None and (sig.name in _AFTERMATH or _STOP_EXIT.search(line.text)):
            # the operator stopped the launch (SGLang logged the SIGTERM): a "Killed" / exit
            # 137 after it is the stop's own SIGKILL once its grace period ran out (docker
            # stop's 10 s, systemd's TimeoutStopSec, Kubernetes' terminationGracePeriodSeconds,
            # ``timeout -k``, a script's kill -9): SGLang's teardown waits for its children and
            # often outlives the grace.  The kernel's OOM-killer lines stay failures.
            self._record = _Record(ranks, "normal")
            return
        if sig.name in _CHILD_FAILED and self._group is None and self._first_unread is not None:
            self._first_line_before_sigquit(events)
        was_open = self._group is not None
        self._open_group(events, line)
        group = self._group
        dump, self._watchdog_dump = self._watchdog_dump, []
        if dump and not group.lines and _WATCHDOG_LINE.search(line.text) and line.number - dump[-1].number <= 3:
            group.lines.extend(dump)  # (0.5.x) the py-spy dump its watchdog logged just before this line
        group.lines.append(line)
        group.signal_lines.append(line)
        group.signal_names.append(sig.name)
        for k, v in captures.items():
            group.captures.setdefault(k, v)
        group.add_ranks(ranks)
        self._record = _Record(ranks, "signal")
        if sig.role == "terminal":
            self._went_down = True
            self._record = _Record(ranks, "normal")
            if was_open:
                self._close_group(events)
            # else: the parent's reaction came first (two processes' output interleaves): the
            # failed child's traceback that follows right after it is the same incident; the
            # next ordinary line closes it as before
            else:
                group.awaits_child = True

    def _stop(self, line_number: int) -> None:
        """The operator stopped the launch at this line (the first such line counts)."""
        if not self._stopping:
            self._stopping, self._stop_line = True, line_number

    def _interrupted_while_serving(self, group: _Group) -> bool:
        """Every traceback of the group ends in KeyboardInterrupt, after this launch's ready line,
        with nothing but the interrupt (and the cancellations it causes) in its chain: an error
        the interrupt came on top of is still that error (survived.operator_interrupt).  A text
        that holds none of the launch's start (no launch header, no start-up milestone: a paste
        of its tail) shows it serving by its batch lines, or by the interrupt surfacing through
        the HTTP server's loop, which runs only once every scheduler is up
        (survived.through_http_loop); where the start is in the text and no ready line came,
        the batches may be the warm-up request of a start-up that hung, which stays an
        incident.  The group's signal lines, if any, are some HTTP client's failed connections
        (a script polling the server as it goes down) or the launcher's report of a child its
        stop killed (survived.stop_lines_only), not a failure of the server's own."""
        launch = self.launch
        first = group.lines[0].number
        serving = launch.ready_line is not None and launch.ready_line < first
        if not serving and launch.ready_line is None and launch.line is None and not launch.milestones:
            serving = (any(n < first for n in launch.batch_lines)
                       or any(survived.through_http_loop(b.frames) for b in group.builders)
                       or survived.answered_request(group.captures.get(survived.HANDLED_CAPTURE)))
        chains = [b.chain for b in group.builders if b.chain]
        return (serving and len(chains) == len(group.builders) and survived.operator_interrupt(chains)
                and survived.stop_lines_only([line.text for line in group.signal_lines]))

    def _peer_loss_after_reported(self, group: _Group, primary) -> bool:
        """Every traceback of ``group`` ends in a lost gloo peer, within TERMINAL_AFTER_REPORTED
        lines of the launch's last reported incident, with no start-up milestone between (a
        relaunch's ranks failing are a new failure).  Batch lines may come between: the other
        pipeline stages log the step they finished before their next exchange fails."""
        last = self._last_reported
        if primary is None or group.signal_lines or last is None or not group.lines:
            return False
        if not 0 < group.lines[0].number - last <= TERMINAL_AFTER_REPORTED:
            return False
        if any(ms.line > last for ms in self.launch.milestones):
            return False
        return all(b.chain and _PEER_LOST.search(b.chain[-1].message or "") for b in group.builders)

    def _inner_error_after_reported(self, group: _Group, primary) -> bool:
        """Every traceback of ``group`` ends in torch_npu's "The Inner error is reported as
        above", within INNER_ERROR_AFTER_REPORTED lines of the launch's last reported incident,
        which is a device-side error (_DEVICE_SIDE: the inner error it points at), with no
        start-up milestone between.  The parent's "Received sigquit" may have joined it: the
        end of that same failure."""
        last = self._last_reported
        if primary is None or last is None or not group.lines or not self._last_reported_device:
            return False
        if not set(group.signal_names) <= {"sigquit_launch", "sigquit_running"}:
            return False
        if not 0 < group.lines[0].number - last <= INNER_ERROR_AFTER_REPORTED:
            return False
        if any(ms.line > last for ms in self.launch.milestones):
            return False
        return all(b.chain and (b.chain[-1].message or "").startswith(_INNER_ERROR_ABOVE) for b in group.builders)

    def _follows_reported(self, line: Line) -> bool:
        """``line`` comes within TERMINAL_AFTER_REPORTED lines of the launch's last reported
        incident, with no start-up milestone or batch line of a server still at work between."""
        last = self._last_reported
        if last is None or not 0 < line.number - last <= TERMINAL_AFTER_REPORTED:
            return False
        if any(ms.line > last for ms in self.launch.milestones):
            return False
        return not (self._batches and self._batches[-1][0] > last)

    # -- groups ------------------------------------------------------------------------

    def _too_far(self, line: Line) -> bool:
        """The open incident's last line is more than MAX_GROUP_GAP lines before ``line``."""
        group = self._group
        return group is not None and bool(group.lines) and line.number - group.lines[-1].number > MAX_GROUP_GAP

    def _open_group(self, events: list[Event], line: Line | None = None) -> None:
        self._prev_plain = None  # (what a failure's lines follow is no record a traceback was logged with)
        if self._group is not None and line is not None and self._too_far(line):
            self._close_group(events)  # a failure this far from the open one is another incident
        if self._group is None:
            self._group = _Group()

    def _take_held_into_group(self, n: int) -> None:
        if n and self._held:
            self._group.lines.extend(self._held[-n:])
            del self._held[-n:]

    def _release_held(self, events: list[Event]) -> None:
        """Blank lines held back by a traceback that ended before them: ordinary lines."""
        self._held = []

    @staticmethod
    def _only_bare_lines(group: _Group | None) -> bool:
        """The group holds bare exception lines and nothing else (no traceback, no signal)."""
        return group is not None and bool(group.builders) and group.bare == len(group.builders) \
            and not group.signal_lines

    def _close_group(self, events: list[Event]) -> None:
        group, aside = self._group, self._aside
        self._group = self._aside = None
        if group is None:
            if aside is not None:
                self._report(aside, events)
            return
        if aside is not None:
            # bare exception lines set aside for this group's traceback (_start_traceback)
            if _repeated_in(aside.builders, group):
                group = _merged(aside, group, lines_first=False)  # one of them is its message: one failure
            elif aside.logs_traceback and not all(self._request_rejected(b) for b in aside.builders):
                # the traceback logged under the line (its record's message, the line first);
                # under one request's error line, a traceback of another exception is no part of
                # that request's (a process's uncaught traceback prints no record of its own)
                group = _merged(aside, group, lines_first=True)
            else:
                self._report(aside, events)  # another failure, or one request's error
        self._report(group, events)

    def _report(self, group: _Group, events: list[Event]) -> None:
        """The closed group's incident (or its death) as an event, unless it is none."""
        for b in group.builders:
            b.finish()
        if self._repeats_a_reported_rule_line(group):
            return
        self._dropped_death = None
        incident = self._incident(group)
        if incident is not None:
            self._last_reported = incident.last_line
            self._last_reported_device = _device_side(incident)
            events.append(Event("incident", self.launch, incident=incident, line=incident.last_line))
        elif self._dropped_death is not None:
            events.append(Event("death", self.launch, line=self._dropped_death))

    def _repeats_a_reported_rule_line(self, group: _Group) -> bool:
        """A group made only of rule-literal signal lines (no traceback) whose every line says
        what such a group already reported in this launch says: the same message repeated (a
        request retried), not another failure.  Remembers the group's lines otherwise."""
        if group.builders or not group.signal_lines or not all(
                n.startswith(RULE_LITERAL_SIGNAL) for n in group.signal_names):
            return False
        keys = {(self.launch.index, records.parse_prefix(line.text).message.strip()) for line in group.signal_lines}
        if keys <= self._reported_rule_lines:
            return True
        self._reported_rule_lines |= keys
        return False

    def _incident(self, group: _Group) -> Incident | None:
        launch = self.launch
        builders = group.builders
        primary = next((b for b in builders if b.complete), builders[0] if builders else None)
        starting = None
        if self._stopping and primary is not None and not group.signal_lines:
            # what a stop's teardown raises (a cancelled task, a pipe or socket the other end
            # closed, a cut traceback that shows no cause) is not a failure; any other exception
            # is reported, marked as one that came after the stop (captures' after_stop)
            exc = primary.chain[-1] if primary.chain else None
            if exc is None or exc.type.rsplit(".", 1)[-1] in _TEARDOWN_TYPES:
                return None
        if self._interrupted_while_serving(group):
            # Ctrl-C (SIGINT) on a server that had come up: every process of the terminal's
            # group prints its KeyboardInterrupt traceback on the way down (SGLang never raises
            # one itself).  The operator's stop, and what follows is its teardown.  Before the
            # ready line it stays an incident: an interrupted start-up may be a hang.
            self._stop(group.lines[0].number)
            return None
        if not group.signal_lines and (group.request_level or self._request_rejected(primary)
                                       or _request_exception_group(builders)
                                       or _http_stack_sub_traceback(builders)):
            return None  # one request failed; the server went on (CONTRACT: not an incident)
        if not group.signal_lines and primary is not None and survived.warning_text(primary.chain, tracebacks.CUT_MARK):
            return None  # a Python warning whose header the paste cut (survived.warning_text)
        if not group.signal_lines and builders and all(not b.frames and not b.chain for b in builders) \
                and _BARE_TRACEBACK_HEADER.match(group.lines[0].text) and "thread_func" not in group.captures:
            # only "Traceback (most recent call last):" headers, their frames and exception lost
            # (the text ends or is cut right below them): no evidence of what happened, or that
            # anything failed -- a request's logged error prints the same header.  Unknown stays
            # unknown: the summary's fallback says no failure is in the text and where its cause
            # would be (fallback.no_incident).
            return None
        if not group.signal_lines and _test_assertion(builders):
            return None  # a test's check failed, not the server
        if self._peer_loss_after_reported(group, primary):
            return None  # the reported failure's peers, left waiting on it
        if self._inner_error_after_reported(group, primary):
            # the Python side of the device error just reported: no second incident, but the
            # process it shows ending ("Scheduler hit an exception", the parent's sigquit) is
            # that failure's death (a "death" event: pipeline.py counts it like an incident's)
            self._dropped_death = group.lines[0].number
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
            # a fragment with no ready line, no launch header and no start-up milestone
            # before the failure does not say whether the server had been ready
            after_ready_known=(launch.ready_line is not None or launch.line is not None
                               or any(ms.line < lines[0].number for ms in launch.milestones)),
        )
        incident.cut_at_end = self.ends_mid_line and lines[-1].number == self._last_number
        self._add_serving(incident, lines)
        if primary is not None:
            incident.chain = _with_wrapped(primary.chain)
            incident.exception = incident.chain[-1] if incident.chain else None
            incident.frames = primary.frames
            incident.truncated = not primary.complete
            incident.truncated_top = primary.truncated_top
            starting = None if incident.after_ready_known else startup_hints.frames_reason(incident.frames)
            if starting:
                # a fragment without ready line or milestones, whose traceback runs through a
                # start-up constructor (Scheduler / TpModelWorker / ModelRunner) or import-time
                # code: not ready yet (the reason goes into the explanation)
                incident.after_ready, incident.after_ready_known = False, True
        in_loop = None
        if primary is not None and not incident.after_ready_known and not any(
                tracebacks.in_startup_constructor(b.frames) for b in builders):
            # the same question the other way: any of the group's tracebacks (the rank whose
            # header and first frames survived, not only the one whose exception did) passes
            # the scheduler's event loop, entered only once the scheduler had started
            in_loop = next((r for r in (tracebacks.event_loop_reason(b.frames) for b in builders) if r), None)
            if in_loop:
                incident.after_ready, incident.after_ready_known = True, True
        incident.signal_names = list(group.signal_names)
        incident.captures = dict(group.captures)
        if self._stopping and self._stop_line is not None and lines[0].number > self._stop_line:
            incident.captures.setdefault("after_stop", str(self._stop_line))
        if primary is not None and starting:
            incident.captures.setdefault("startup_frames", starting)
        if in_loop:
            incident.captures.setdefault("serving_frames", in_loop)
        if not incident.after_ready_known:
            hint = startup_hints.words_reason(incident)
            if hint:
                incident.captures.setdefault("startup_hint", hint)
        first = lines[0].text
        if self._bar_line is not None and self._bar_line[0] == lines[0].number and not first.startswith(self._bar_line[1]):
            first = self._bar_line[1] + first  # the line was written onto this bar (records.split_bar)
        run_into = progress.bar_run_into(first)
        if run_into is not None:
            # the failure's first line was written onto a progress bar (progress.bar_run_into):
            # that bar is the step the server was in, newer than any line before it
            incident.captures.setdefault("progress_phase", run_into)
            incident.captures.setdefault("progress_line", str(lines[0].number))
            incident.captures.setdefault("progress_text", first[:200])
        elif self._progress is not None and self._progress[0] < lines[0].number and not any(
                self._progress_before(ms.line) and ms.line < lines[0].number for ms in launch.milestones):
            # the step the server was in when it failed, when no milestone came after it
            incident.captures.setdefault("progress_phase", self._progress[1])
            incident.captures.setdefault("progress_line", str(self._progress[0]))
            incident.captures.setdefault("progress_text", self._progress[2])
        return incident

    def _progress_before(self, number: int) -> bool:
        """The last progress line came before line ``number``: on an earlier line, or it is the
        bar that line was written onto (records.split_bar)."""
        at = self._progress[0]
        return at < number or (at == number and self._bar_line is not None and self._bar_line[0] == number)

    def _add_serving(self, incident: Incident, lines: list[Line]) -> None:
        """The serving state the launch's last batch lines before the incident show
        (serving.py).  Batch lines of a server that was serving (not only the warm-up's) say it
        had come up, whether or not the text shows the ready line: after ready, and known."""
        first = lines[0]
        batches = [b for b in self._batches if b[0] < first.number]
        if not batches:
            return
        retraction = self._retraction
        if retraction is not None and not batches[0][0] <= retraction[0] < first.number:
            retraction = None
        # the failure's time: its first line that carries SGLang's date and time (a native
        # library's line, torch's "[rank0]:[E1203 ...]", has none)
        timed = next((ln.text for ln in lines[:50] if serving.timestamp(ln.text) is not None), first.text)
        record = serving.state(batches, retraction, timed)
        if record is None:
            return
        record["summary"] = serving.describe(record)
        incident.serving = record
        launch = self.launch
        if record["serving"] and not incident.after_ready:
            # (a launch that shows its start-up but no ready line: an Engine, which never logs
            # one, or a ready line the text lost)
            incident.after_ready, incident.after_ready_known = True, True
            incident.captures.setdefault("serving_from", "batch lines")
        elif not incident.after_ready_known and launch.ready_line is None:
            incident.captures.setdefault("serving_from", "a warm-up-like batch line")

    @staticmethod
    def _request_rejected(primary: tracebacks.TracebackBuilder | None) -> bool:
        """A bare request rejection (input longer than the context, a request body its pydantic
        model refused): no server frame; or a traceback that went through the OpenAI-compatible
        layer's request handler."""
        if primary is None:
            return False
        if any(_request_frame(f) for f in primary.frames):
            return True
        if not primary.chain:
            return False
        exc = primary.chain[-1]
        if any("/managers/scheduler" in f.file for f in primary.frames):
            return False
        # the context-length rejection (words kept since 0.4.x), or a message SGLang's source
        # raises only for one request (request_errors.is_request_message, from the inventory)
        return ((_is_value_error(exc.type) and _REQUEST_LEVEL.search(exc.message) is not None)
                or request_errors.is_request_message(exc.type, exc.message)
                or request_errors.is_request_model_validation(exc.type, exc.message))

    # -- launches ----------------------------------------------------------------------

    def _new_launch(self, line: Line, dump: str, events: list[Event]) -> None:
        try:
            fields, form, complete = server_args.parse_dump_checked(dump)
        except server_args.DumpError:
            fields, form, complete = {}, None, False
        current = self.launch
        if current.line is None and not current.milestones:
            launch = current
            launch.line = line.number
        else:
            launch = Launch(index=len(self.launches), line=line.number)
            self.launches.append(launch)
        launch.server_args = fields
        launch.server_args_form = form
        launch.server_args_complete = complete
        launch.version_hint = "0.5.9-style" if form == "dataclass" else ("0.5.23-style" if form == "dict" else None)
        self._stopping, self._stop_line = False, None
        self._went_down = False
        self._watchdog_dump = []
        self._last_reported = None
        self._progress = None
        self._batches = []
        self._retraction = None
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
