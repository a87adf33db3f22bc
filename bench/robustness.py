"""Does sglang-doctor keep its answer when a log is pasted the way people really paste it?

Real pastes are degraded copies of what SGLang wrote: cut above the last line, indentation
lost, lines hard-wrapped at the terminal's width, container/launcher prefixes in front of
every line, colour codes, ``[...]`` elisions, markdown quote marks, Windows line ends,
several ranks' records interleaved.  This bench takes the files the tool already gets right
and degrades each one with every transform below (seeded, deterministic), then checks that
the answer survives.

Inputs (never the sealed parts):

- the cause-in-text files (``evidence_in_log: true``) of the tuned corpus parts ``dev``,
  ``fresh``, ``late`` (the TUNE split) and ``field``, ``field9``, ``field10`` .. ``field35`` (the
  UNTUNED split, widened in session 19 from field/field9, field19 added in session 20, field20 in
  session 21, field21 .. field35 in session 33: report it, do not tune on its per-file details);
- the rule fixtures of ``fixtures/EXPECTED.yaml`` that expect an incident (TUNE split);
- healthy texts (corpus files labelled ``none`` and ``fixtures/healthy/``): a transform must
  not turn them into incidents (false alarms).

For each input the tool's answer on the original is taken first (``explain --format json``,
read with bench/accuracy.py's helpers); only the files it gets right are kept (corpus: the
primary incident's category is the label's; fixtures: it is one of EXPECTED.yaml's).  Then,
per transform: **category kept** (the primary incident's category is still the right one),
**fix kept** (for corpus files whose label gives a fix the original hit: still hit), and
**false alarms** (healthy texts that now give an incident).

Each transform keeps the key line's words (the label's ``key_line``; for a fixture, the last
line of its primary incident): it may wrap, prefix or re-indent that line, never drop it.
The cut transforms (``excerpt``, ``cut_key_head``, ``cut_key_tail``) cut the key line itself
the way search excerpts are cut, but keep what a person still reads the failure from: the
message whole when the head is cut (only the type's module path and part of its name go),
its first four words and at least half of it when the tail is cut.  On healthy texts they
cut around a seeded line.

Usage: ``python bench/robustness.py [--split tune|untuned|all] [--transform NAME ...]
[--verbose] [--json] [--subprocess] [--corpus-only]`` (``--corpus-only``: no rule fixtures).  By default the tool runs in this process (the same
click command ``python -m sglang_doctor explain --format json`` runs, with the rule pack
loaded once); ``--subprocess`` runs the real CLI per text as bench/accuracy.py does (slow).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy  # noqa: E402  (bench/accuracy.py: run_tool, parse_events, primary_incident, fix_hit)

ROOT = accuracy.ROOT
CORPUS = accuracy.CORPUS
TUNE_PARTS = ("dev", "fresh", "late")
UNTUNED_PARTS = ("field", "field9", "field10", "field11", "field12", "field13", "field14", "field15",
                 "field16", "field17", "field18", "field19", "field20") + tuple(f"field{n}" for n in range(21, 36))
SEED = 20261204


# -- the transforms --------------------------------------------------------------------------
# Each takes the text's lines (no line ends), the index of the key line and a seeded RNG, and
# returns the degraded text.  None: the transform does not apply to this text.


@dataclass
class Sample:
    name: str  # "dev/012-....log" or "fixtures/memory/x.log"
    split: str  # "tune" | "untuned"
    lines: list[str]
    key: int  # index of the key line in lines
    category: str  # the right category ("none" for a healthy text)
    fix_flags: dict = field(default_factory=dict)
    fix_env: dict = field(default_factory=dict)
    healthy: bool = False
    orig_fix_hit: bool | None = None


def t_crlf(lines, key, rng):
    """Windows line ends (``\\r\\n``): a log saved on Windows or pasted from a Windows browser
    into an issue form (GitHub keeps the ``\\r`` in attachments and in API bodies)."""
    return "\r\n".join(lines) + "\r\n"


def t_tabs(lines, key, rng):
    """Leading indentation turned into tabs (one tab per 2-4 spaces), as editors with
    ``expandtab`` off and some web log viewers re-indent a pasted traceback."""
    out = []
    for line in lines:
        body = line.lstrip(" ")
        n = len(line) - len(body)
        out.append("\t" * ((n + 3) // 4) + body if n else line)
    return "\n".join(out) + "\n"


def t_dedent(lines, key, rng):
    """Indentation lost: every line's leading whitespace removed, as when a log is pasted into
    a GitHub issue without a code fence and copied back from the rendered page (markdown folds
    leading spaces); corpus dev/025 and dev/026 were pasted so ("lost-indent")."""
    return "\n".join(line.lstrip() for line in lines) + "\n"


def _fold(lines, width):
    """Every line longer than ``width`` split into ``width``-column pieces (a terminal's hard wrap)."""
    out = []
    for line in lines:
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return out


def t_wrap(lines, key, rng):
    """Hard-wrapped at the terminal's width (80-140 columns, seeded): a long line copied from
    tmux/screen, a narrow ``kubectl logs`` window or a CI console is split into 2-3 physical
    lines (real newlines where the terminal folded it); the key exception line is long, so it
    is among the split ones.  Real: corpus fresh/046 was pasted folded at 120 columns (frame
    lines split before their function name)."""
    width = rng.randint(80, 140)
    return "\n".join(_fold(lines, width)) + "\n"


def t_compose(lines, key, rng):
    """docker compose's service prefix, ``sglang-1  | `` (padded to the longest service name),
    on every line: ``docker compose up`` / ``docker compose logs`` output pasted as is (corpus
    dev/007, dev/028, dev/104)."""
    name = rng.choice(["sglang-1", "sglang_server_1", "llm-sglang-1"])
    pad = " " * rng.randint(1, 4)
    return "\n".join(f"{name}{pad}| {line}" for line in lines) + "\n"


def t_kubectl(lines, key, rng):
    """``kubectl logs --timestamps``: an RFC 3339 stamp with nanoseconds before every line
    (corpus dev/047)."""
    out = []
    s = rng.randint(0, 50)
    for i, line in enumerate(lines):
        out.append(f"2025-06-01T08:{15 + (s + i) // 60 % 40:02d}:{(s + i) % 60:02d}.{rng.randint(0, 999999999):09d}Z {line}")
    return "\n".join(out) + "\n"


def t_journald(lines, key, rng):
    """``journalctl -u sglang`` output: ``Jun 01 08:15:02 gpu-node-3 python3[4012]: `` before
    every line (a systemd unit running the server)."""
    host = rng.choice(["gpu-node-3", "dgx01", "ip-10-0-1-17"])
    pid = rng.randint(1000, 99999)
    return "\n".join(f"Jun 01 08:15:{i % 60:02d} {host} python3[{pid}]: {line}" for i, line in enumerate(lines)) + "\n"


def t_ray(lines, key, rng):
    """Ray's worker prefix, ``(SchedulerActor pid=4012) `` (optionally ``, ip=...``), on every
    line: SGLang run inside a Ray actor (verl, slime, AReaL rollouts; corpus dev/041, dev/100)."""
    actor = rng.choice(["SGLangEngine", "WorkerDict", "RolloutWorker", ""])
    ip = rng.choice(["", ", ip=10.0.0.12"])
    pref = f"({actor + ' ' if actor else ''}pid={rng.randint(1000, 99999)}{ip}) "
    return "\n".join(pref + line for line in lines) + "\n"


def t_ansi(lines, key, rng):
    """Ray's coloured prefix with the ESC bytes lost in the copy: ``[36m(pid=4012)[0m `` (the
    form a browser copy of a coloured terminal leaves); every other text also keeps real ESC
    sequences, ``\\x1b[36m(pid=N)\\x1b[0m ``, as a ``tee``'d log file does."""
    pid = rng.randint(1000, 99999)
    esc = "\x1b" if rng.random() < 0.5 else ""
    pref = f"{esc}[36m(WorkerDict pid={pid}){esc}[0m "
    return "\n".join(pref + line for line in lines) + "\n"


def t_quote(lines, key, rng):
    """Markdown quote marks, ``> `` before every line: GitHub's "Quote reply" of another
    comment's log, pasted into a new issue."""
    return "\n".join(("> " + line) if line else ">" for line in lines) + "\n"


def t_details(lines, key, rng):
    """GitHub's collapsed ``<details>`` block with its fence left in the copy:
    ``<details><summary>full log</summary>`` / ```` ``` ```` around the log, as issue bodies
    that fold a long log are downloaded raw."""
    head = ["<details>", "<summary>Full log</summary>", "", "```"]
    tail = ["```", "", "</details>"]
    return "\n".join(head + lines + tail) + "\n"


def t_interleave(lines, key, rng):
    """Several ranks' records interleaved: every SGLang record of ``TP0`` followed by the same
    record from ``TP1`` (each rank logs its own copy of a collective failure, and records from
    several processes reach one terminal in turn).  Only texts with rank headers."""
    rx = re.compile(r"^(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?:DP|PP|ATTN_CP|MOE_DP|EP)\d+)*) TP0([ \]])")
    if not any(rx.match(line) for line in lines):
        return None
    out: list[str] = []
    record: list[str] = []

    def flush():
        if record:
            out.extend(record)
            out.extend(rx.sub(r"\1 TP1\2", line) for line in record)
            record.clear()

    for line in lines:
        if line.startswith("[") and re.match(r"\[\d{4}-\d\d-\d\d ", line):
            flush()
            if rx.match(line):
                record.append(line)
            else:
                out.append(line)
        elif record:
            record.append(line)
        else:
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


def t_blank(lines, key, rng):
    """A blank line after every line: a copy from a web log viewer (Kibana, Cloud console,
    some CI UIs) that renders each log line as a paragraph, doubling the line breaks."""
    return "\n".join(line + "\n" for line in lines) + "\n"


def t_elide(lines, key, rng):
    """A stretch of 2-6 lines above the key line (the traceback's middle frames) replaced by
    an elision mark, ``[...]`` or ``......``, as reporters shorten a long traceback (corpus
    dev/087, late/025)."""
    lo, hi = max(0, key - 14), key - 2
    if hi - lo < 2:
        return None
    start = rng.randint(lo, hi - 2)
    end = min(hi, start + rng.randint(2, 6))
    mark = rng.choice(["[...]", "......", "..."])
    return "\n".join(lines[:start] + [mark] + lines[end:]) + "\n"


def t_cut_top(lines, key, rng):
    """The paste starts mid-line a few lines above the key line (3-12 lines: some frames and
    no ``Traceback`` header), its first line missing its start: a selection dragged up from
    the error that stopped inside a line, the most common shape of a short paste (corpus
    dev/003 and dev/026 are frames only; many labels say ``cut_mid_line``)."""
    if key < 3:
        return None
    start = max(0, key - rng.randint(3, 12))
    first = lines[start]
    cut = rng.randint(1, max(1, len(first) // 2)) if first else 0
    return "\n".join([first[cut:]] + lines[start + 1:]) + "\n"


def t_tail(lines, key, rng):
    """Only the last lines: the key line and what follows it, nothing above (the reporter
    pasted just "the error")."""
    return "\n".join(lines[key:]) + "\n"


_TYPE_PREFIX = re.compile(r"^(\s*(?:\[[^\]]*\]\s*)*)((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault))(: )")


def _head_cut(line: str, rng) -> int | None:
    """Where a paste that starts inside the key line starts: inside the exception type (its
    module path and part of its name lost: ``rror: ...``, ``ryError: ...``) when the line is
    ``Type: message``, else somewhere in its first quarter (at most 40 characters)."""
    m = _TYPE_PREFIX.match(line)
    if m:
        lo, hi = m.start(2) + 1, m.end(2) - 1
        return rng.randint(lo, hi) if hi >= lo else None
    body = len(line) - len(line.lstrip())
    span = min(40, (len(line) - body) // 4)
    return body + rng.randint(1, span) if span >= 1 else None


def _tail_cut(line: str, rng) -> int | None:
    """Where a paste that ends inside the key line ends: inside the message, after at least
    its first four words and half its length (what a person still reads the failure from)."""
    m = _TYPE_PREFIX.match(line)
    msg_start = m.end() if m else len(line) - len(line.lstrip())
    msg = line[msg_start:]
    words = msg.split()
    if len(words) < 5:
        return None
    first4 = msg.find(words[3]) + len(words[3])
    lo = msg_start + max(first4, len(msg.rstrip()) // 2)
    hi = len(line.rstrip()) - 1
    return rng.randint(lo, hi) if hi > lo else None


def t_cut_key_head(lines, key, rng):
    """The paste starts inside the key line: nothing above it, and the line has lost its first
    characters, the exception type's module path and part of its name (``r: CUDA out of
    memory. Tried to allocate ...`` for ``torch.OutOfMemoryError: ...``): a selection dragged
    from the middle of the error line, the commonest head of a search-excerpt paste (held-back
    fragments of session 18 start so; in the tuned parts dev/107 and dev/041 start at the
    exception line itself)."""
    cut = _head_cut(lines[key], rng)
    if cut is None:
        return None
    return "\n".join([lines[key][cut:]] + lines[key + 1:]) + "\n"


def t_cut_key_tail(lines, key, rng):
    """The paste ends inside the key line: nothing below it, no final line end, and the
    message has lost its end (``ValueError: TRTLLM MHA backend for pre``): the tail of a
    search excerpt or a selection stopped mid-line (corpus dev/002 ends ``...MiB. GPU 7 has a
    total capacity of 95.00``, dev/061 ``RuntimeError: Error ``, late/048 ``Asser``)."""
    cut = _tail_cut(lines[key], rng)
    if cut is None:
        return None
    return "\n".join(lines[:key] + [lines[key][:cut]])


_BARE_TYPE = re.compile(r"^(\s*(?:\[[^\]]*\]\s*)*)(Exception|Error)(: )")  # (what _TYPE_PREFIX leaves out)
_RECORD_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] ?")
_FRAME_HEAD = re.compile(r'^\s*File "')


def t_cut_record_head(lines, key, rng):
    """The paste starts inside a record header: the nearest SGLang-prefixed line at or up to
    12 lines above the key line (the key line's own record, or the ``Scheduler hit an
    exception`` record whose traceback holds it) lost its head up to a point inside its
    ``[date time TPn]`` header (``TP0] ValueError: ...``, ``0:12:03 TP1] Scheduler hit an
    exception: Traceback ...``, ``25-03-26 17:10:21 TP5] ...``), nothing above it.  A
    selection or a search excerpt that began inside the time stamp; corpus late/024 starts
    ``2025-03-26 17:10:21 TP5] Scheduler hit ...`` and held-back fragments of session 19
    start at ``TP0] ...``.  Only texts with such a header near the key line."""
    for i in range(key, max(-1, key - 13), -1):
        m = _RECORD_HEAD.match(lines[i])
        if m:
            end = m.end() - (1 if lines[i][m.end() - 1:m.end()] == " " else 0)  # the "]"
            cut = rng.randint(1, end - 1)
            return "\n".join([lines[i][cut:]] + lines[i + 1:]) + "\n"
    return None


def t_cut_key_message(lines, key, rng):
    """The paste starts inside the key line's message: the exception type is gone with the
    message's first characters (``of memory. Tried to allocate 2.00 GiB ...`` for
    ``torch.OutOfMemoryError: CUDA out of memory. Tried ...``), nothing above it: a search
    excerpt whose window began past the type (held-back fragments of sessions 18-19 start
    so).  The cut is inside the message's first quarter (at most 30 characters into it), at
    any character; only messages of 5+ words (what a person still reads the failure from)."""
    line = lines[key]
    m = _TYPE_PREFIX.match(line) or _BARE_TYPE.match(line)
    msg_start = m.end() if m else len(line) - len(line.lstrip())
    msg = line[msg_start:]
    if len(msg.split()) < 5:
        return None
    span = min(30, len(msg.rstrip()) // 4)
    if span < 2:
        return None
    cut = msg_start + rng.randint(1, span)
    return "\n".join([line[cut:]] + lines[key + 1:]) + "\n"


def t_cut_frame(lines, key, rng):
    """The paste starts inside a frame line 2-12 lines above the key line, past its
    ``File "`` (inside the path, the line number or the function's name: ``ue, in forward``,
    ``ages/sglang/srt/managers/scheduler.py", line 2573, in run_scheduler_process``):
    frames only, no ``Traceback`` header, and a first line that no longer reads as a frame.
    Only texts with such a frame above the key line."""
    frames = [i for i in range(max(0, key - 12), key - 1) if _FRAME_HEAD.match(lines[i])]
    if not frames:
        return None
    i = rng.choice(frames)
    line = lines[i]
    lo = line.find('File "') + len('File "')
    hi = len(line.rstrip()) - 2
    if hi <= lo:
        return None
    return "\n".join([line[rng.randint(lo, hi):]] + lines[i + 1:]) + "\n"


def t_excerpt(lines, key, rng):
    """A search excerpt: a window of 500-900 characters around the key line, both ends cut at
    arbitrary character positions, so the first and last lines are partial; in a third of the
    texts the window starts inside the key line (its type's head lost, as ``cut_key_head``),
    in a third it ends inside it (its message's end lost, as ``cut_key_tail``), else the key
    line is whole with context on both sides.  Thirteen of the sixteen held-back fragments of
    session 18 were pasted this way (a GitHub search result or a comment quoting ~700
    characters of a log); in the tuned parts fresh/003, dev/082 (``Load weight end. ...``, its
    record header lost) and late/024 (``2025-03-26 17:10:21 TP5] Scheduler hit ...``) start
    mid-line, and most tuned files end mid-line."""
    text = "\n".join(lines) + "\n"
    ks = sum(len(x) + 1 for x in lines[:key])
    ke = ks + len(lines[key])
    size = rng.randint(500, 900)
    mode = rng.choice(("head", "tail", "whole"))
    if mode != "whole":
        cut = (_head_cut if mode == "head" else _tail_cut)(lines[key], rng)
        if cut is not None:  # the window starts (head) or ends (tail) inside the key line
            at = ks + cut
            return text[at:max(at + size, ke + 1)] if mode == "head" else text[max(0, min(at - size, ks - 1)):at]
    room = max(0, size - (ke - ks))
    before = rng.randint(room // 4, 3 * room // 4) if room else 0
    start = max(0, ks - before)
    end = min(len(text), ke + 1 + (room - before))
    return text[start:end]


def t_html(lines, key, rng):
    """HTML's escapes left in the copy: ``"`` as ``&quot;``, ``'`` as ``&#39;``, ``<`` / ``>``
    as ``&lt;`` / ``&gt;``, ``&`` as ``&amp;`` (what GitHub's pages and API bodies write), as a
    log copied from a page's HTML source or an issue body read raw is pasted: corpus
    field9/013 (xorbitsai/inference#3377) has ``File &quot;/usr/local/...&quot;, line 1135``
    in every frame.  Only texts that hold one of those characters."""
    text = "\n".join(lines) + "\n"
    if not any(c in text for c in "\"'<>&"):
        return None
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def t_combo(lines, key, rng):
    """compose prefix, then a hard wrap at 100 columns, then ``\\r\\n``: a Windows user's copy of
    ``docker compose logs`` from a narrow terminal."""
    pref = "sglang-1  | "
    return "\r\n".join(_fold([pref + line for line in lines], 100)) + "\r\n"


def t_fence(lines, key, rng):
    """A GitHub issue's paste: the command that showed the log on a ``$ `` line in a fence of its
    own, then the log in a fence with a language tag (```` ```log ````, ```` ```shell ````,
    ```` ```console ````, ...), optionally inside ``<details>``; issue templates ask for
    "reproduction" and "logs" this way.  The command only reads the log (``docker logs``,
    ``tail``, ``kubectl logs``), so it changes nothing the log says."""
    cmd = rng.choice(["$ docker logs sglang 2>&1 | tail -n 300", "$ tail -n 200 server.log",
                      "$ kubectl logs sglang-0 --tail=300", "$ journalctl -u sglang --no-pager | tail -300"])
    lang = rng.choice(["log", "shell", "console", "bash", "text", "python", "sh"])
    body = [f"```{rng.choice(['bash', 'shell', 'sh'])}", cmd, "```", "", f"```{lang}"] + lines + ["```"]
    if rng.random() < 0.5:
        body = ["<details>", "<summary>server log</summary>", ""] + body + ["", "</details>"]
    return "\n".join(body) + "\n"


def t_browser_join(lines, key, rng):
    """A log copied from a browser page that rendered it as wrapped text: runs of 2-5 lines
    come out as one line, joined by two spaces where the line breaks were (a rendered issue
    comment without a code fence, a web log viewer's soft-wrapped cell).  Blank lines stay."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            out.append(lines[i])
            i += 1
            continue
        n = rng.randint(2, 5)
        run = []
        while i < len(lines) and len(run) < n and lines[i].strip():
            run.append(lines[i])
            i += 1
        out.append("  ".join(run))
    return "\n".join(out) + "\n"


_BAR = "Loading safetensors checkpoint shards: {p:3d}% Completed | {n}/8 [00:{s:02d}<00:{r:02d},  1.52it/s]"


def _bar_segments(rng) -> list[str]:
    steps = sorted(rng.sample(range(0, 9), rng.randint(2, 4)))
    return [_BAR.format(p=100 * n // 8, n=n, s=2 * n, r=2 * (8 - n)) for n in steps]


def t_cr_overwrite(lines, key, rng):
    """A Windows terminal's copy: ``\\r\\n`` line ends, and a progress bar that redrew itself
    with ``\\r`` on one line that the next line was then written over: the screen copy holds the
    new line and, when it is shorter than the bar, the bar's tail after it (what the terminal
    still showed), at one line 0-6 above the key line (the key line itself too)."""
    at = max(0, key - rng.randint(0, 6))
    bar = _bar_segments(rng)[-1]
    line = lines[at]
    lines = list(lines)
    lines[at] = line + bar[len(line):] if len(line) < len(bar) else line
    return "\r\n".join(lines) + "\r\n"


def t_tqdm_tee(lines, key, rng):
    """A ``tee``'d log with a tqdm bar's carriage returns: the bar's redraws (``\\r`` before each,
    no line end) stand before one line 0-8 above the key line, and that line's text follows the
    bar's last redraw on the same line (another process wrote it while the bar was open)."""
    at = max(0, key - rng.randint(0, 8))
    lines = list(lines)
    lines[at] = "".join("\r" + seg for seg in _bar_segments(rng)) + lines[at]
    return "\n".join(lines) + "\n"


_RANK_HEADER = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:)(\d\d)((?:[.,]\d+)?)((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\]")


def t_rank_copy(lines, key, rng):
    """A second copy of the key line's record from another rank, shifted: the record that
    holds the key line (from the nearest SGLang header at or up to 40 lines above it to the
    key line) again, its header's TP rank another and its time a second later, printed
    after the first copy, or (a third of the texts) in the middle of it, as two processes'
    stderr meet in one terminal.  Only texts with such a header."""
    start = next((i for i in range(key, max(-1, key - 41), -1) if _RANK_HEADER.match(lines[i])), None)
    if start is None:
        return None
    m = _RANK_HEADER.match(lines[start])
    ranks = m.group(4)
    other = re.sub(r"TP(\d+)", lambda r: f"TP{int(r.group(1)) + 1}", ranks) if "TP" in ranks else ranks + " TP1"
    sec = (int(m.group(2)) + 1) % 60
    copy = [f"[{m.group(1)}{sec:02d}{m.group(3)}{other}]" + lines[start][m.end():]] + list(lines[start + 1:key + 1])
    at = key + 1
    if key > start + 1 and rng.random() < 1 / 3:
        at = rng.randint(start + 1, key)
    return "\n".join(list(lines[:at]) + copy + list(lines[at:])) + "\n"


def t_logger(lines, key, rng):
    """A wrapper that relayed the server's output through its own logger, one logger line per
    output line (a rollout framework's process pump, ``logger.error(line)`` over
    ``traceback.format_exc().splitlines()``): the same prefix before every line, its time
    advancing: Python logging's ``ERROR:name:``, loguru's ``2025-06-01 08:15:02.123 | ERROR    |
    module:func:42 - ``, glog's ``E0601 08:15:02.123456 4012 file.py:42] ``, hydra's
    ``[2025-06-01 08:15:02,123][name][ERROR] - ``."""
    kind = rng.choice(["logging", "loguru", "glog", "hydra"])
    pid = rng.randint(1000, 99999)
    out = []
    for i, line in enumerate(lines):
        s, ms = (2 + i // 7) % 60, (37 * i) % 1000
        pref = {"logging": "ERROR:rollout.server:",
                "loguru": f"2025-06-01 08:15:{s:02d}.{ms:03d} | ERROR    | rollout.server:_pump:88 - ",
                "glog": f"E0601 08:15:{s:02d}.{ms * 1000:06d} {pid} server.py:88] ",
                "hydra": f"[2025-06-01 08:15:{s:02d},{ms:03d}][rollout][ERROR] - "}[kind]
        out.append(pref + line)
    return "\n".join(out) + "\n"


def t_wrap80(lines, key, rng):
    """Hard-wrapped at exactly 80 columns (a default terminal, ``kubectl logs`` in a split
    pane): the narrowest fold, so frame lines and the key line split mid-word into 2-4
    physical lines each."""
    return "\n".join(_fold(lines, 80)) + "\n"


def t_numbered(lines, key, rng):
    """A line-numbered paste: the numbers a gist / pastebin / editor view or ``cat -n`` / ``nl``
    put before each line (``  12 | ``, ``12: ``, ``    12\t``), copied with the text."""
    start = rng.randint(1, 400)
    width = len(str(start + len(lines)))
    form = rng.choice(["{n:>{w}} | ", "{n}: ", "{n:>6}\t", "{n:>{w}}  "])
    return "\n".join(form.format(n=start + i, w=width) + line for i, line in enumerate(lines)) + "\n"


def t_bullets(lines, key, rng):
    """Every line behind a list marker or a prompt: a chat tool (Slack, Discord, a forum) that
    turned the pasted lines into a bullet list (``- ``, ``* ``, ``• ``), or a reporter who
    copied a terminal where every line was echoed after ``$ ``.  Blank lines stay blank."""
    mark = rng.choice(["- ", "* ", "• ", "$ "])
    return "\n".join((mark + line) if line.strip() else line for line in lines) + "\n"


_ELIDE_MARKS = ("...", "…", "[...]", " ... ")


def t_inline_elide(lines, key, rng):
    """``...`` elision inside lines: the reporter shortened long lines by hand, keeping each
    line's start and end (a frame's ``File "/usr/.../sglang/srt/...", line N, in f``, a long
    record's middle).  Lines of 70+ characters other than the key line lose a stretch of
    15-50% of their middle; the key line keeps its words."""
    out = []
    for i, line in enumerate(lines):
        if i != key and len(line) >= 70 and rng.random() < 0.7:
            n = len(line)
            a = rng.randint(n // 4, n // 2)
            b = min(n - 10, a + rng.randint(int(n * 0.15), int(n * 0.5)))
            line = line[:a] + rng.choice(_ELIDE_MARKS) + line[b:]
        out.append(line)
    return "\n".join(out) + "\n"


def t_rank_lines(lines, key, rng):
    """Two ranks writing the same output at once, interleaved line by line: the text and a
    second copy of it (``TP0`` read ``TP1`` in its record headers) 0-3 lines behind, their
    lines alternating, as two processes' unbuffered stderr reach one terminal or one
    ``docker logs`` stream."""
    other = [re.sub(r"\bTP0\b", "TP1", line) for line in lines]
    lag = rng.randint(0, 3)
    out: list[str] = list(lines[:lag])
    for i in range(lag, len(lines)):
        out.append(lines[i])
        out.append(other[i - lag])
    out.extend(other[len(lines) - lag:])
    return "\n".join(out) + "\n"


TRANSFORMS: dict[str, Callable] = {
    "crlf": t_crlf, "tabs": t_tabs, "dedent": t_dedent, "wrap": t_wrap, "compose": t_compose,
    "kubectl": t_kubectl, "journald": t_journald, "ray": t_ray, "ansi": t_ansi, "quote": t_quote,
    "details": t_details, "interleave": t_interleave, "blank": t_blank, "elide": t_elide,
    "cut_top": t_cut_top, "tail": t_tail, "combo": t_combo,
    "excerpt": t_excerpt, "cut_key_head": t_cut_key_head, "cut_key_tail": t_cut_key_tail,
    "cut_record_head": t_cut_record_head, "cut_key_message": t_cut_key_message, "cut_frame": t_cut_frame,
    "html": t_html,
    "fence": t_fence, "browser_join": t_browser_join, "cr_overwrite": t_cr_overwrite, "tqdm_tee": t_tqdm_tee,
    "rank_copy": t_rank_copy, "logger": t_logger,
    "wrap80": t_wrap80, "numbered": t_numbered, "bullets": t_bullets, "inline_elide": t_inline_elide,
    "rank_lines": t_rank_lines,
}

CUT_AROUND_KEY = ("excerpt", "cut_key_head", "cut_key_tail", "cut_record_head", "cut_key_message", "cut_frame")


def apply(name: str, sample: Sample) -> str | None:
    seed = int(hashlib.sha256(f"{SEED}:{name}:{sample.name}".encode()).hexdigest()[:12], 16)
    rng = random.Random(seed)
    key = sample.key
    if sample.healthy and name in CUT_AROUND_KEY and sample.lines:
        # a healthy text has no key line: cut around a seeded non-empty line instead
        nonempty = [i for i, line in enumerate(sample.lines) if line.strip()] or [0]
        key = rng.choice(nonempty)
    return TRANSFORMS[name](list(sample.lines), key, rng)


# -- running the tool ------------------------------------------------------------------------


def _run_inprocess(path: Path) -> tuple[int | None, str, str]:
    from click.testing import CliRunner

    from sglang_doctor.cli.app import main

    runner = CliRunner()
    res = runner.invoke(main, ["explain", "--format", "json", str(path)], env={"NO_COLOR": "1"})
    err = ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        import traceback

        err = "Traceback (most recent call last):\n" + "".join(traceback.format_exception(res.exception))
    return res.exit_code, res.stdout, err


class Runner:
    def __init__(self, subprocess: bool):
        self.subprocess = subprocess
        self.tmp = Path(tempfile.mkdtemp(prefix="robustness-"))

    def answer(self, text: str | None = None, path: Path | None = None) -> dict:
        if path is None:
            path = self.tmp / "paste.log"
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
        code, stdout, stderr = accuracy.run_tool(path) if self.subprocess else _run_inprocess(path)
        events = accuracy.parse_events(stdout)
        incidents = [e for e in events if e.get("event") == "incident"]
        primary = accuracy.primary_incident(incidents)
        crash = None
        if code not in (0, 1) or "Traceback (most recent call last)" in stderr:
            crash = f"exit {code}: {stderr.strip()[-300:]}"
        return {"incidents": incidents, "primary": primary, "crash": crash,
                "category": (primary or {}).get("category")}


# -- the inputs ------------------------------------------------------------------------------


def _split_lines(data: str) -> list[str]:
    return data.replace("\r\n", "\n").split("\n")[:-1] if data.endswith("\n") else data.replace("\r\n", "\n").split("\n")


def _find_key(lines: list[str], key_line: str | None) -> int | None:
    if not key_line:
        return None
    k = " ".join(key_line.split())
    for i, line in enumerate(lines):
        s = " ".join(line.split())
        if s and (k in s or (len(s) >= 20 and s in k)):
            return i
    return None


def _incident_key(lines: list[str], primary: dict) -> int:
    """A fixture's key line: its primary incident's exception line (type and the message's
    first words), else the incident's last line."""
    start, end = primary.get("lines") or [1, len(lines)]
    exc = primary.get("exception") or {}
    etype = (exc.get("type") or "").rsplit(".", 1)[-1]
    words = " ".join((exc.get("message") or "").split("\n")[0].split()[:4])
    if etype:
        for i in range(min(end, len(lines)) - 1, max(0, start - 1) - 1, -1):
            s = " ".join(lines[i].split())
            if etype in s and words in s:
                return i
    return max(0, min(len(lines) - 1, end - 1))


def corpus_samples(parts, runner: Runner, log=print) -> tuple[list[Sample], list[Sample], dict]:
    """(failing samples the tool gets right, healthy samples it keeps quiet on, counts)."""
    right, healthy = [], []
    counts = defaultdict(lambda: {"evident": 0, "right": 0, "healthy": 0})
    for part in parts:
        split = "tune" if part in TUNE_PARTS else "untuned"
        for lab in accuracy.load_labels(part):
            path = CORPUS / part / lab["file"]
            if not path.is_file():
                continue
            data = path.read_bytes().decode("utf-8", "replace")
            lines = _split_lines(data)
            if lab["category"] == "none":
                ans = runner.answer(path=path)
                if not ans["incidents"]:
                    healthy.append(Sample(f"{part}/{lab['file']}", split, lines, 0, "none", healthy=True))
                    counts[part]["healthy"] += 1
                continue
            if not lab.get("evidence_in_log"):
                continue
            counts[part]["evident"] += 1
            ans = runner.answer(path=path)
            if ans["category"] != lab["category"]:
                continue
            counts[part]["right"] += 1
            key = _find_key(lines, lab.get("key_line"))
            if key is None:
                key = _incident_key(lines, ans["primary"])
            flags, env = lab.get("fix_flags") or {}, lab.get("fix_env") or {}
            s = Sample(f"{part}/{lab['file']}", split, lines, key, lab["category"], flags, env)
            if flags or env:
                s.orig_fix_hit = accuracy.fix_hit(ans["primary"], flags, env)
            right.append(s)
    return right, healthy, counts


def fixture_samples(runner: Runner) -> tuple[list[Sample], list[Sample], dict]:
    expected = (yaml.safe_load((ROOT / "fixtures" / "EXPECTED.yaml").read_text()) or {}).get("fixtures") or {}
    right, healthy = [], []
    counts = {"expecting": 0, "right": 0, "healthy": 0}
    for rel, incs in sorted(expected.items()):
        path = ROOT / rel
        if not path.is_file():
            continue
        lines = _split_lines(path.read_bytes().decode("utf-8", "replace"))
        if not incs:
            continue
        counts["expecting"] += 1
        ans = runner.answer(path=path)
        cats = {i.get("category") for i in incs}
        if ans["category"] not in cats:
            continue
        counts["right"] += 1
        right.append(Sample(rel, "tune", lines, _incident_key(lines, ans["primary"]), ans["category"]))
    for path in sorted((ROOT / "fixtures" / "healthy").glob("*.log")):
        ans = runner.answer(path=path)
        if not ans["incidents"]:
            counts["healthy"] += 1
            healthy.append(Sample(str(path.relative_to(ROOT)), "tune",
                                  _split_lines(path.read_bytes().decode("utf-8", "replace")), 0, "none", healthy=True))
    return right, healthy, counts


# -- the report ------------------------------------------------------------------------------


def run(split: str, names: list[str], runner: Runner, verbose: bool, log=print, fixtures: bool = True) -> dict:
    parts = {"tune": TUNE_PARTS, "untuned": UNTUNED_PARTS, "all": TUNE_PARTS + UNTUNED_PARTS}[split]
    right, healthy, counts = corpus_samples(parts, runner, log)
    fcounts = None
    if split in ("tune", "all") and fixtures:
        fr, fh, fcounts = fixture_samples(runner)
        right += fr
        healthy += fh
    out: dict = {"inputs": {"corpus": {p: dict(c) for p, c in counts.items()}, "fixtures": fcounts},
                 "transforms": {}}
    for name in names:
        per = defaultdict(lambda: {"applied": 0, "category_kept": 0, "fix_applied": 0, "fix_kept": 0,
                                   "healthy_applied": 0, "false_alarms": 0, "crashes": 0})
        misses = []
        for s in right:
            text = apply(name, s)
            if text is None:
                continue
            ans = runner.answer(text=text)
            group = s.split if s.name.startswith(tuple(p + "/" for p in parts)) else "fixtures"
            for g in (group, "total_" + s.split):
                c = per[g]
                c["applied"] += 1
                c["crashes"] += ans["crash"] is not None
                kept = ans["category"] == s.category
                c["category_kept"] += kept
                if s.orig_fix_hit:
                    c["fix_applied"] += 1
                    c["fix_kept"] += accuracy.fix_hit(ans["primary"], s.fix_flags, s.fix_env)
            if ans["category"] != s.category:
                misses.append(f"{s.name}: {s.category} -> {ans['category']}/{(ans['primary'] or {}).get('rule')}")
            elif s.orig_fix_hit and not accuracy.fix_hit(ans["primary"], s.fix_flags, s.fix_env):
                misses.append(f"{s.name}: fix lost ({(ans['primary'] or {}).get('rule')})")
            if ans["crash"]:
                misses.append(f"{s.name}: CRASH {ans['crash'][:200]}")
        for s in healthy:
            text = apply(name, s)
            if text is None:
                continue
            ans = runner.answer(text=text)
            c = per["healthy_" + s.split]
            c["healthy_applied"] += 1
            c["false_alarms"] += bool(ans["incidents"])
            c["crashes"] += ans["crash"] is not None
            if ans["incidents"]:
                misses.append(f"{s.name}: FALSE ALARM {ans['category']}/{(ans['primary'] or {}).get('rule')}")
        out["transforms"][name] = {"figures": {g: dict(c) for g, c in sorted(per.items())}, "misses": misses}
        if log:
            print_transform(name, out["transforms"][name], verbose)
    return out


def _pct(h: int, t: int) -> str:
    return f"{h:>3}/{t:<3} {100 * h / t:5.1f}%" if t else "   -          "


def print_transform(name: str, res: dict, verbose: bool) -> None:
    fig = res["figures"]
    cells = []
    for g in ("tune", "fixtures", "untuned"):
        c = fig.get(g)
        if c:
            cells.append(f"{g} cat {_pct(c['category_kept'], c['applied'])} fix {_pct(c['fix_kept'], c['fix_applied'])}")
    fa = sum(fig[g]["false_alarms"] for g in fig if g.startswith("healthy_"))
    ha = sum(fig[g]["healthy_applied"] for g in fig if g.startswith("healthy_"))
    cr = sum(fig[g]["crashes"] for g in fig if not g.startswith("total_"))
    print(f"{name:<11} " + " | ".join(cells) + f" | false alarms {fa}/{ha} | crashes {cr}", flush=True)
    if verbose:
        for m in res["misses"]:
            print("    " + m)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("tune", "untuned", "all"), default="tune",
                    help="tune: dev/fresh/late + fixtures; untuned: field, field9..field35 (report only)")
    ap.add_argument("--transform", nargs="*", choices=sorted(TRANSFORMS), help="default: all")
    ap.add_argument("--verbose", action="store_true", help="list every miss (not on the untuned split's details while tuning)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--subprocess", action="store_true", help="run the real CLI per text (slow)")
    ap.add_argument("--corpus-only", action="store_true",
                    help="leave out the rule fixtures (the tune split's largest input): a quicker run")
    args = ap.parse_args(argv)
    names = args.transform or list(TRANSFORMS)
    out = run(args.split, names, Runner(args.subprocess), args.verbose and not args.json,
              log=None if args.json else print, fixtures=not args.corpus_only)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(json.dumps(out["inputs"], sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
