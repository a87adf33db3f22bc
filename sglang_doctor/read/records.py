"""SGLang's log-record headers.

SGLang's formatter is ``[%(asctime)s{.msecs}{prefix}] %(message)s`` where the prefix is
`` DP{n}``, `` PP{n}``, `` ATTN_CP{n}``, `` MOE_DP{n}``, `` TP{n}``, `` EP{n}`` in that order,
each only when that kind of parallelism is on (sglang-notes §1.1).  Only the first line of a
multi-line message is prefixed: a record begins at a prefixed line and owns the unprefixed
lines after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sglang_doctor.model import Prefix
from sglang_doctor.read.reader import clean_text

_SGLANG = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d{1,6})?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)
# xgrammar and other C++ code: "[15:14:17] /project/cpp/tokenizer_info.cc:146: Warning: ..."
_TIME_ONLY = re.compile(r"\[(\d\d:\d\d:\d\d)(?:\.\d+)?\] ")
_UVICORN = re.compile(r"(INFO|WARNING|ERROR|DEBUG|CRITICAL): {1,6}")

BARE = Prefix(None, (), "", "bare")

# The head another logger writes at the start of each of its records, so a line that opens with
# one is a record's first line, never the middle of some message (incidents/assemble.py: a
# paste's first line that reads as the end of a message whose head was cut):
# - uvicorn's DefaultFormatter: the level name and a colon, padded to nine characters, then a
#   space (``INFO:     ``, ``WARNING:  ``, ``ERROR:    ``, ``CRITICAL: ``): pip's one-space
#   ``ERROR: `` is not it;
# - NCCL's debug header (src/debug.cc ncclDebugLog): ``host:pid:tid [dev] `` then, for a WARN,
#   the source's ``file.cc:line``, then ``NCCL INFO`` / ``NCCL WARN``;
# - glog's and torch's c10 logger's header: the level letter and the date (``I1207 10:05:01.231141
#   58627 ProcessGroupNCCL.cpp:1132] ``, ``[W1207 10:00:01.123456789 socket.cpp:464] ``, torch's
#   ``[rank0]:`` before it, or the older ``[W socket.cpp:464] ``).
OWN_RECORD_HEAD = re.compile(
    r"(?:(?:INFO|WARNING|ERROR|DEBUG):\s{2,}|CRITICAL: )\S"
    r"|[\w.-]+:\d+:\d+ \[\d+\] (?:[\w/.-]+:\d+ )?NCCL (?:INFO|WARN) "
    r"|(?:\[rank\d+\]:)?\[?[IWEF](?:\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+)?)? ?[\w.-]+\.(?:cpp|cc|h|hpp|cu):\d+\] ")


def opens_record(text: str) -> bool:
    """Whether ``text`` starts with another logger's record head (``OWN_RECORD_HEAD``)."""
    return OWN_RECORD_HEAD.match(text) is not None


def parse_prefix(text: str) -> Prefix:
    """Split a line into its SGLang header (if any) and message."""
    if text.startswith("["):
        prefix = sglang_prefix(text)
        if prefix is not None:
            return prefix
        m = _TIME_ONLY.match(text)
        if m:
            return Prefix(m.group(1), (), text[m.end():], "time_only")
    elif _UVICORN.match(text):
        return Prefix(None, (), text, "uvicorn")
    return Prefix(None, (), text, "bare")


# A structured header written before EVERY line of a record, its multi-line message's lines
# too (field31/003, sgl-project/sglang#21170, a deployment of March 2026's main): the time with
# milliseconds, the level name, the process id, then in brackets the parallel ranks as
# SGLang's own prefix names them and the logging call's ``file.py:line``:
# ``2026-03-23 01:10:21.463 ERROR 502747 [ ATTN_CP4 TP4 scheduler.py:3468] Scheduler hit ...``.
# SGLang's own configure_logger writes ``[%(asctime)s{.msecs}{prefix}] %(message)s`` (0.5.23;
# main's logs of June 2026 still show ``[2026-06-17 11:51:53 PP1 ATTN_CP0 TP0]``, #28525): this
# shape is a deployment's logging config (SGLANG_LOGGING_CONFIG_PATH's dictConfig replaces
# SGLang's, or a wrapper's formatter that repeats the header per line).  A record is the run of lines whose header is
# the same (one call formats all its lines at one instant): the first starts the record, the
# others are its message's lines (incidents/assemble.py).
_STRUCTURED = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d{1,6})? +"
    r"(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) +(\d{1,10}) +"
    r"\[ ?((?:(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+ )*)([\w.-]+\.py:\d+) ?\] ?"
)


@dataclass(frozen=True, slots=True)
class Structured:
    """One line's structured header (see above) and the text after it."""

    header: str  # the header as written: equal headers mean one record
    timestamp: str
    level: str
    pid: int
    ranks: tuple[str, ...]
    location: str  # the logging call's file.py:line
    message: str

    def prefix(self) -> Prefix:
        """The record header SGLang's own format would have given the record's first line."""
        kind = "uvicorn" if _UVICORN.match(self.message) else "sglang"
        return Prefix(self.timestamp, self.ranks, self.message, kind)


def parse_structured(text: str) -> Structured | None:
    """The structured header a line starts with, or None (see above)."""
    m = _STRUCTURED.match(text)
    if m is None:
        return None
    return Structured(text[:m.end()].rstrip(), m.group(1), m.group(2), int(m.group(3)),
                      tuple(m.group(4).split()), m.group(5), text[m.end():])


# A paste that starts inside a record's header keeps only its tail: ``TP0] ValueError: ...``,
# ``0:12:03 TP1] Scheduler hit an exception: ...``, ``25-03-26 17:10:21 TP5] ...`` (a search
# excerpt, a selection begun inside the time stamp).  Such a tail is the text up to the first
# ``]`` when it is the end of some header: the header's pattern matched backwards from that
# ``]`` (``regex``'s reverse matching), cut short where the line starts (partial matching).
CUT_HEADER_MIN = 3  # "P0]", ":03]": shorter ("0]", "]") is any text's bracket
_CUT_HEADER_SPAN = 40  # the longest header tail looked for ("2025-03-26 17:10:21.123 DP0 TP1]")
_rx_header_tail = None
_RANK = re.compile(r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+")


def _header_tail_rx():
    global _rx_header_tail
    if _rx_header_tail is None:
        import regex

        _rx_header_tail = regex.compile(_SGLANG.pattern.removesuffix(" ?"), regex.REVERSE)
    return _rx_header_tail


def parse_cut_prefix(text: str) -> Prefix | None:
    """The record header's tail a line starts with when the paste began inside the header
    (see above), split off like parse_prefix's; None when the line does not start so.  The
    time stamp is lost; a rank is kept only when it is whole (``TP1``, not ``P1``)."""
    end = text.find("] ", 0, _CUT_HEADER_SPAN)
    if end + 1 < CUT_HEADER_MIN or text.startswith("["):
        return None
    tail = text[:end + 1]
    if _header_tail_rx().fullmatch(tail, partial=True) is None:
        return None
    ranks = tuple(r for r in tail[:-1].split() if _RANK.fullmatch(r))
    message = text[end + 2:]
    return Prefix(None, ranks, message, "uvicorn" if _UVICORN.match(message) else "sglang")


def sglang_prefix(text: str) -> Prefix | None:
    """parse_prefix's split when SGLang's own header starts the line, else None.

    One match of the header where the assembler's reading of a line used to try it three
    times (outer_prefix_end, is_record_start, parse_prefix): a line it returns a Prefix for
    has no outer prefix (outer_prefix_end is 0) and starts a record."""
    if not text.startswith("["):
        return None
    m = _SGLANG.match(text)
    if m is None:
        return None
    ranks = tuple(m.group(2).split()) if m.group(2) else ()
    message = text[m.end():]
    return Prefix(m.group(1), ranks, message, "uvicorn" if _UVICORN.match(message) else "sglang")


def is_record_start(text: str) -> bool:
    """True for a line that starts a new record (it carries a header)."""
    return text.startswith("[") and (_SGLANG.match(text) is not None or _TIME_ONLY.match(text) is not None)


# The same two headers over raw bytes (``\d`` is ASCII there): a match at a line's start
# means the decoded line starts a record too, and ends where its message starts.  The block
# scanner uses it to judge a line without decoding it.
# ``HEADER_BYTES.match(buf, at)`` ends where the message starts.
HEADER_BYTES = re.compile(f"(?:{_SGLANG.pattern})|(?:{_TIME_ONLY.pattern})".encode())


def message_start(buf: bytes, at: int) -> int:
    """Where the message of the record whose header starts at ``buf[at]`` begins, or -1
    when no header starts there (bytes; see is_record_start)."""
    m = HEADER_BYTES.match(buf, at)
    return m.end() if m is not None else -1


def rank_label(ranks: tuple[str, ...]) -> str:
    return " ".join(ranks)


# -- prefixes that something else put in front of SGLang's lines -------------------------
# Containers, log shippers and launchers add their own header before SGLang's: docker
# compose (``sglang-1  | ``), kubectl --timestamps (RFC 3339), the CRI container log files
# that node log shippers read (``2025-07-25T07:53:08.21+08:00 stdout F ``: RFC 3339 time,
# stream, F for a full line or P for a partial one), Kibana / OpenSearch Discover's date
# column (``May 16, 2026 @ 20:46:57.892``, their default dateFormat), journald
# (``May 09 10:00:01 host sglang[123]: ``, or without the host: ``Mar 18 11:23:46 sglang[123]: ``), Ray (``(SchedulerActor pid=123) ``), mpirun
# --tag-output (``[1,0]<stderr>:``), srun --label (``0: ``), Google Cloud Logging exports (``ERROR 2025-...Z ``),
# kubectl logs --prefix (``[pod/sglang-0/sglang] ``), colour codes whose ESC byte a copy-paste lost (``[36m``), and markdown's quote mark
# (``> ``, ``>`` alone on an empty line: GitHub's "Quote reply" of a comment that held a log),
# and the kernel's own log (dmesg's ``[ 8123.456789] ``, ``dmesg -T``'s ``[Sat Dec  6 10:00:01
# 2025] ``, ``journalctl -k``'s ``Dec 06 10:00:01 host kernel: ``) pasted next to SGLang's output.  They are taken off before
# anything else looks at the line, so a dump, a milestone or a traceback behind them is seen
# as if SGLang had written it straight to the terminal.

_OUTER = re.compile(
    r"(?:"
    r"\[\d{1,3}(?:;\d{1,3})*m ?"                                            # ANSI remnant: [36m, [0m
    r"|[A-Za-z0-9][\w.-]{0,62}\s+\| ?"                                       # docker compose: name  |
    # kubectl --timestamps: the stamp and one space (the line's own indentation stays); a
    # tracing format's padding before its level word ("...Z  INFO") goes too
    r"|\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\]?[ \t]"
    r"(?:[ \t]+(?=(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR)\b))?"
    r"(?:std(?:out|err) [FP] )?"                                             #  + CRI log file: stream, F/P tag
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}, \d{4} @ "
    r"\d\d:\d\d:\d\d\.\d{3}[ \t]+"                                           # Kibana / OpenSearch Discover column
    r"|(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) "
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z "                            # cloud logging export
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d "
    r"(?:[\w.-]+ [\w.@/-]+(?:\[\d+\])?|[\w.@/-]+\[\d+\]):(?: |$)"                # journald / syslog (host, or none before ident[pid]; an empty message)
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d kernel: "  # journalctl -k, host left out
    # the kernel's ring buffer (dmesg): seconds since boot "[ 8123.456789] ", dmesg -T's
    # "[Sat Dec  6 10:00:01 2025] " (a locale's day and month words too), dmesg -H's
    # "[Nov19 10:33] " / "[  +0.000388] "
    r"|\[ *\d{1,8}\.\d{6}\] ?"
    r"|\[[^\]\s\d]{1,9} +[^\]\s]{1,9} +\d{1,2} \d\d:\d\d:\d\d \d{4}\] ?"
    r"|\[[^\W\d_]{3,4}[ \d]\d \d\d:\d\d\] ?|\[ *\+\d+\.\d{6}\] ?"
    r"|\((?:[A-Za-z_][\w.]* )?pid=\d+(?:, ip=[\w.:]+)?\) ?"                  # ray: (pid=N), (Actor pid=N)
    r"|\((?:raylet|gcs_server|autoscaler)(?:, ip=[\w.:]+)?\) ?"              # ray's own daemons
    r"|\[(?:default)?rank\d+\]: ?(?=\S| {2}| {4})"                             # torchrun --tee: [rank0]:
    r"|[A-Za-z0-9][\w.-]{0,100}(?: [\w.-]{1,100})? >> ?"                       # stern / kubetail: pod [container] >>
    r"|\[pod/[a-z0-9][\w.-]{0,252}/[a-z0-9][\w.-]{0,62}\] ?"                  # kubectl logs --prefix: [pod/name/container]
    r"|(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})?"
    r"\[\d+,\d+\]<std(?:out|err)>:"                                          # mpirun --tag-output
    r"|>(?: |$)"                                                             # markdown quote: > text
    # srun --label (-l): the task number and ": " before every line of that task's output;
    # taken off only before what a log line starts with (a bracketed header, indentation, a
    # capitalised word, a dotted exception name), not before any "3: " a message may hold
    r"|\d{1,5}: (?=\[|\s|[A-Z][A-Za-z]|[a-z_][\w.]*(?:Error|Exception|Warning)\b)"
    r")"
)
# first characters an outer prefix can start with (a cheap test before the regex)
_OUTER_FIRST = frozenset("[(>ADEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789BC")


def outer_prefix_end(text: str) -> int:
    """Where the line's own text starts once container/shipper/launcher prefixes (and
    colour-code remnants) are taken off; 0 when there are none."""
    if not text or text[0] not in _OUTER_FIRST:
        return 0
    if text[0] == "[" and _SGLANG.match(text) is not None:
        return 0  # SGLang's own header: the common case, nothing to take off
    pos = 0
    for _ in range(4):  # ray inside compose, colour codes around a ray prefix, ...
        m = _OUTER.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        if text.startswith("[", pos) and _SGLANG.match(text, pos) is not None:
            break
    return pos


# The part of an outer prefix that says the line is the kernel's (dmesg's clock, dmesg -T's
# date, dmesg -H's, journalctl's "kernel: " ident): the GPU driver's and the OOM killer's word,
# on a clock of its own (seconds since boot unless dmesg -T gave a date)
_KERNEL_PREFIX = re.compile(r"(?:^|\s)kernel: |\[ *\+?\d{1,8}\.\d{6}\] ?$|\[[^\]\s\d]{1,9} +[^\]\s]{1,9} +\d{1,2} "
                            r"\d\d:\d\d:\d\d \d{4}\] ?$|\[[^\W\d_]{3,4}[ \d]\d \d\d:\d\d\] ?$")


def is_kernel_prefix(prefix: str) -> bool:
    """Whether the outer prefix taken off a line (``text[:outer_prefix_end(text)]``) is the
    kernel log's (dmesg, dmesg -T / -H, journalctl -k)."""
    return _KERNEL_PREFIX.search(prefix) is not None


def strip_outer(text: str) -> str:
    """The line without outer prefixes (see outer_prefix_end)."""
    end = outer_prefix_end(text)
    return text[end:] if end else text


# A paste that lost its newlines keeps the launcher's per-line prefix: "... (Worker pid=7)
# [2025-09-18 03:27:45 TP0] Scheduler hit an exception: Traceback ... (Worker pid=7) File ...".
_JOINED_RAY = re.compile(r" (?=\((?:[A-Za-z_][\w.]* )?pid=\d+(?:, ip=[\w.:]+)?\) )")


def split_joined(text: str) -> list[str] | None:
    """The lines of a line that is several Ray-prefixed lines joined by spaces, or None."""
    if text.count(" pid=") < 2:
        return None
    parts = _JOINED_RAY.split(text)
    if len(parts) < 3:
        return None
    return [strip_outer(p) for p in parts]


# -- records whose line ends a copy lost -------------------------------------------------------
# A log copied from a browser page that showed it as wrapped text (a rendered comment without a
# code fence, a web log viewer's cell) comes with runs of lines on one line, two spaces where
# each line break was.  An SGLang record header after two spaces is the start of a line of its
# own: ``... ready to roll!  [2025-06-01 10:00:01 TP0] Scheduler hit an exception: ...``.
_JOINED_RECORD = re.compile(r"  (?=" + _SGLANG.pattern.removesuffix(" ?") + " )")


# The paste's last line may end inside the next record's header (``... Traceback (most recent
# call last):  [2025-``): a header's start from the year on, the text's end inside it.
CUT_END_HEADER_MIN = 6  # "[2025-": shorter ("[20") is any text's bracket
_rx_header_head = None


def _cut_header_at_end(text: str) -> int | None:
    """Where the two spaces before a record header the text ends inside stand, or None."""
    global _rx_header_head
    at = text.rfind("  [")
    tail = text[at + 2:]
    if at < 0 or len(tail) < CUT_END_HEADER_MIN:
        return None
    if _rx_header_head is None:
        import regex

        _rx_header_head = regex.compile(_SGLANG.pattern.removesuffix(" ?"))
    m = _rx_header_head.fullmatch(tail, partial=True)
    return at if m is not None else None


def split_joined_records(text: str) -> list[str] | None:
    """The lines of a line that holds several SGLang records joined by two spaces (the last one
    perhaps cut inside its header), or None."""
    cuts = [m.start() for m in _JOINED_RECORD.finditer(text)]
    if (end := _cut_header_at_end(text)) is not None:
        cuts.append(end)
    if not cuts:
        return None
    return [text[a:b] for a, b in zip([0] + [c + 2 for c in cuts], cuts + [len(text)])]


# -- a line written onto a progress bar's ---------------------------------------------------
# tqdm ends each redraw of its bar with a carriage return, not a line end: what the process (or
# another one writing to the same terminal or ``tee``'d file) writes next lands on the bar's
# line, after its ``n/total [elapsed<remaining, rate]`` field (the reader keeps a ``\r``
# rewrite's last segment, reader.clean_text): ``Loading safetensors checkpoint shards:  75%
# Completed | 6/8 [00:12<00:04,  1.52it/s][2025-06-01 10:00:00 TP0] Scheduler hit an
# exception: ...``, ``Capturing batches (bs=4 ...):  50%|█████     | 26/52 [00:03<00:03,
# 7.2it/s]RuntimeError: ...``.  That text is a line of its own.
_BAR_THEN_TEXT = re.compile(r"\d{1,3}%[^\n]{0,200}?\d+/\d+ \[[0-9:]+<[^\]\n]{0,40}?(?:it/s|s/it)\](?=\s*\S)")


def split_bar(text: str) -> tuple[str, str] | None:
    """(the progress bar, the text written onto its line after it), or None (see above)."""
    m = _BAR_THEN_TEXT.search(text)
    if m is None:
        return None
    return text[:m.end()], text[m.end():]


# -- lines hard-wrapped at a terminal's width ----------------------------------------------
# A log copied from tmux/screen, a narrow ``kubectl logs`` window or a web console comes with
# a real newline wherever the terminal folded a long line: every line longer than the width W
# is split into pieces of exactly W characters and a shorter last piece.  A text where several
# lines have exactly the text's greatest length, each followed by a line that does not start
# one of its own, was folded at that width; its pieces are joined back (incidents/assemble.py).

WRAP_MIN_WIDTH = 80  # a terminal's classic width; no narrower one is assumed
WRAP_MIN_PIECES = 2  # folded lines that differ in more than their numbers (two ranks' copies of a line do not)
WRAP_SAMPLE = 1 << 20  # bytes of the text's start the width is judged on


# what starts a line of its own: a bracket or a time stamp (a record's, a log viewer's), an
# upper-case word and a colon (``INFO:``, ``FAILED:``, ``WARNING:``), a traceback, a frame, a
# box-drawing border (rich's traceback box: its rows all have the box's width, none is a fold)
_OWN_START = re.compile(r"[\[(<│╭╰┃┏┗]|\d{1,4}[-/:.]\d|[A-Z][A-Z_]+:|Traceback \(|File \"|During handling|The above exception")


def starts_own_line(text: str, previous: str = "") -> bool:
    """A line that cannot be the rest of a folded line: a blank or indented one (a source
    line), one that starts as ``_OWN_START`` says (behind any outer prefix), or as the line
    above does (the next record of the same kind: a progress bar, a batch line)."""
    if not text.strip() or text.startswith(("  ", "\t")):
        return True
    body = strip_outer(text)
    if body is not text and (not body.strip() or body.startswith(("  ", "\t"))):
        return True
    return _OWN_START.match(body) is not None or (len(previous) >= 4 and text[:4] == previous[:4])


_DIGITS = re.compile(r"\d+")


def wrap_width(data: bytes) -> int | None:
    """The width the text was hard-wrapped at, or None (see above): its greatest line length
    W >= WRAP_MIN_WIDTH (in the characters the reader gives, read/reader.clean_text), with at
    least WRAP_MIN_PIECES lines of exactly W characters, different beyond their numbers, each
    followed by a line that does not start a line of its own."""
    raws = data.split(b"\n")[:-1]  # whole lines only
    if len(raws) < 2:
        return None
    # A line's text is never longer than its bytes (a character per valid sequence or
    # replaced byte; escapes, NULs and rewritten parts removed), so only the lines whose
    # bytes are at least as long as the longest text so far are decoded: the longest first.
    lens = [len(raw) for raw in raws]
    texts: dict[int, str] = {}

    def text(i: int) -> str:
        got = texts.get(i)
        if got is None:
            raw = raws[i]
            got = texts[i] = clean_text(raw[:-1] if raw.endswith(b"\r") else raw)
        return got

    width = 0
    for i in sorted(range(len(raws)), key=lens.__getitem__, reverse=True):
        if lens[i] <= width:
            break
        width = max(width, len(text(i)))
    if width < WRAP_MIN_WIDTH:
        return None
    pieces: set[str] = set()
    for i in range(len(raws) - 1):
        if lens[i] >= width and len(text(i)) == width and not starts_own_line(text(i + 1), text(i)):
            pieces.add(_DIGITS.sub("0", text(i)))
            if len(pieces) >= WRAP_MIN_PIECES:
                return width
    return None
