#!/usr/bin/env python3
"""NCCL's own words, from its source: every ``WARN(`` site of NVIDIA/nccl ``src/`` and the ``INFO(``
sites with a failure's words, with what the code does after each, and torch.distributed's (c10d)
warnings of a rendezvous and a teardown next to their errors (issue #12; session 34).

An SGLang launch with tensor parallelism runs NCCL (through torch's ProcessGroupNCCL and SGLang's
pynccl); NCCL prints ``host:pid:tid [dev] FILE:LINE NCCL WARN <message>`` (src/debug.cc
``ncclDebugLog``) whenever its code warns, and ``host:pid:tid [dev] NCCL INFO <message>`` under
NCCL_DEBUG=INFO.  Many WARN sites report a failure the caller turns into an error return (the
communicator's init fails, torch raises "NCCL error in: ...: unhandled system error"); many others
set a fallback value and go on.  A tool that reads every "NCCL WARN" as a failure raises false
alarms on healthy logs; one that reads none misses the cause.  This script reads the releases the
torch builds SGLang runs on ship (``VERSIONS``: torch 2.1-2.2 bundle 2.18, 2.3-2.4 2.20, 2.5-2.6
2.21, 2.7 2.26, 2.8-2.9 2.27, newer 2.28) from the project's git mirror (``fetch github:NVIDIA/nccl``; nothing is built or
run) and gives each site a disposition from the code that follows the call, in its block:

- ``error``: the block returns an error or jumps to the function's error exit (``return
  ncclSystemError``, ``ret = ncclInternalError; goto fail``, ``NCCLCHECKGOTO``, ``abort()``), or
  the WARN is inside an error-return macro (CUDACHECK, SYSCHECK, ...): the caller gets an error
  and, on a launch's set-up path, the run dies;
- ``survived``: the block falls through, ``continue``s or returns ``ncclSuccess`` after setting
  a fallback (a clamp, a default, the next device): the code goes on;
- ``unknown``: anything else (``break``, a thread that returns, a value returned that the caller
  judges): unknown stays unknown, the tool keeps treating the line as a failure's evidence;
- ``info``: an INFO line with a failure's words (``fail``, ``error``, ``unable``, ``not
  supported``, ``disabl``...): informational by its level, never the cause by itself.

A site that incidents/survived.py ``NONFATAL_NCCL_WARN`` names was read by hand (session 24-33);
its disposition is ``survived`` with ``hand: true`` whatever the heuristic says (``NOT_A_FALLBACK``:
the hand-read sites whose code goes on but whose line reports a failure, ``unknown``).

torch's c10d sites (``C10D_SITES``, ``PG_SITES``: socket.cpp's connect / listen fallbacks and the
errors it throws after them, ProcessGroupNCCL's exit warning, heartbeat monitor and watchdog
timeout) are read by hand from pytorch/pytorch (no git mirror of it fits here), each with the code
path that decided its disposition; they are measured like NCCL's.

The measure (``--measure``) renders each site's line (its printf format filled with sample values)
and runs the engine (bench/healthy_bait.py's ``Engine``) on it in a healthy TP2 launch
(fixtures/healthy/nccl_info_chatter_0523.log, before "Init COMPLETE") and alone: ``survived`` and
``info`` sites count a false alarm when any incident forms; ``error`` and ``unknown`` sites count a
hit when the line alone is read in the site's category (``nccl``; ``kernel.unsupported_hw`` for a
capability refusal).

    python scripts/inventory_nccl.py              # write data/inventory/nccl-sites.json
    python scripts/inventory_nccl.py --check      # compare with the shipped file
    python scripts/inventory_nccl.py --measure [--show N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

import inventory_failures as invf  # noqa: E402  (check_or_write)

OUT = ROOT / "data" / "inventory" / "nccl-sites.json"
REPO = "NVIDIA+nccl"
# the NCCL releases torch's CUDA wheels bundle (torch 2.1-2.2: 2.18.x, 2.3-2.4: 2.20.5, 2.5-2.6:
# 2.21.5, 2.7: 2.26.2, 2.8-2.9: 2.27.x) and the newest line (2.28)
VERSIONS = ("v2.18.3-1", "v2.20.5-1", "v2.21.5-1", "v2.26.2-1", "v2.27.5-1", "v2.28.9-1")
# an INFO line whose words look like a failure's
FAILURE_WORDS = re.compile(r"fail|error|unable|cannot|could not|not supported|not available|disabl|no device|"
                           r"not found|invalid|abort|timeout|timed out", re.I)

# sites whose code goes on but whose line reports a failure the run does not recover from, read
# by hand: (file, template) -> why the disposition is unknown, not survived
NOT_A_FALLBACK = {
    ("enqueue.cc", "hostStreamPlanCallback() failed : %s"):
        "the kernel plan's host task failed inside a CUDA host callback, which cannot return the error: the "
        "collective's proxy work is lost",
    ("proxy.cc", "[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d"):
        "the service thread closes that connection and goes on, but the line is the report of the peer's failed "
        "operation (Setup, Connect: NVIDIA/nccl#1485); only a Close failing at teardown is read as a fallback "
        "(survived.NONFATAL_NCCL_WARN)",
}
# the project's category of a site, when not ``nccl``: a capability refusal (enqueue.cc "FP8
# reduction support begins with sm90 capable devices.")
CAPABILITY_WORDS = re.compile(r"\bsm_?\d{2,3}\b.*\bcapab|\bcapab\w*.*\bsm_?\d{2,3}\b", re.I)

_CALL = re.compile(r"\b(WARN|INFO)\s*\(")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# printf conversions, with flags, width, precision and length
_CONV = re.compile(r"%[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|z|j|t|L)?([diouxXcspfegEG%])")
_INTTYPES = re.compile(r"\bPRI([diouxX])(?:8|16|32|64|PTR|MAX)\b")
# what an error return or an error exit looks like in the code after the call
_ERROR_EXIT = re.compile(r"\breturn\s+\(?\s*nccl(?:\w*Error|Invalid\w+)\b|\bgoto\s+\w+|"
                         r"\b(?:ret|res|result|err|status)\s*=\s*nccl(?:\w*Error|Invalid\w+)\b|"
                         r"\b[A-Z]*CHECK\w*\(|\babort\s*\(|\bexit\s*\(|\bthrow\b|"
                         r"\breturn\s+(?:ret|res|result|err|status)\s*;|\bERR\w*\(")
# ... and after the block the call is in (the statements that follow the ``if``): an explicit error
# return or jump, not a check of another call
_ERROR_AFTER = re.compile(r"\breturn\s+\(?\s*nccl(?:\w*Error|Invalid\w+)\b|\bgoto\s+\w+|"
                          r"\breturn\s+(?:ret|res|result|err|status)\s*;")
_OTHER_EXIT = re.compile(r"\breturn\b(?!\s+ncclSuccess\b)|\bbreak\s*;|\bpthread_exit\b")


def default_mirror() -> Path:
    return Path(os.environ.get("SGLANG_DOCTOR_MIRRORS", "/work/.mirror")) / REPO / "repo"


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(mirror), *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def release_sources(mirror: Path, tag: str) -> dict[str, str]:
    """{path under src/: text} of the release's C / C++ sources and headers."""
    names = [n for n in _git(mirror, "ls-tree", "-r", "--name-only", tag, "src").split()
             if n.endswith((".cc", ".h", ".cu", ".cpp", ".c")) and "/device/" not in n]
    return {n[len("src/"):]: _git(mirror, "show", f"{tag}:{n}") for n in names}


# -- reading C ------------------------------------------------------------------------------------


def _skip_literal(text: str, i: int) -> int:
    """The index after the string / char literal or comment that starts at ``i`` (else ``i``)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    if text[i] in "\"'":
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def _step(text: str, i: int) -> int:
    """The index after the character, literal or comment at ``i``."""
    j = _skip_literal(text, i)
    return j if j != i else i + 1


def _close(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index after the ``close`` that balances the ``open_`` at ``i``."""
    depth = 0
    while i < len(text):
        j = _skip_literal(text, i)
        if j != i:
            i = j
            continue
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _block_rest(text: str, i: int, limit: int = 600) -> str:
    """The code from ``i`` to the end of the block it is in (the ``}`` that closes it), at most
    ``limit`` characters."""
    depth, start = 0, i
    while i < len(text) and i - start < limit:
        j = _skip_literal(text, i)
        if j != i:
            i = j
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth < 0:
                break
        i += 1
    return text[start:i]


def _after_block(text: str, i: int, statements: int = 3) -> str:
    """The statements that follow the block ending at ``i`` (an ``else`` branch skipped), at most
    ``statements`` of them and none past the enclosing block's end."""
    rest = text[i:]
    m = re.match(r"\s*}\s*", rest)
    if m is None:
        return ""
    j = i + m.end()
    while text.startswith("else", j):
        k = j + 4
        while k < len(text) and text[k] != "{" and text[k] != ";":
            k = _step(text, k)
        if k >= len(text):
            return ""
        j = _close(text, k, "{", "}") if text[k] == "{" else k + 1
        j += len(text[j:]) - len(text[j:].lstrip())
    out = []
    for _ in range(statements):
        k = j
        while k < len(text) and text[k] not in ";{}":
            k = _step(text, k)
        if k >= len(text) or text[k] != ";":
            break
        out.append(text[j:k + 1])
        j = k + 1
    return "\n".join(out)


def _macro(text: str, at: int) -> tuple[str | None, str]:
    """(macro name, the macro's body after ``at``) when ``at`` is inside a ``#define``; else
    (None, "")."""
    line_start = text.rfind("\n", 0, at) + 1
    starts = [line_start]
    while starts[-1] > 0 and text[:starts[-1] - 1].rstrip(" \t").endswith("\\"):
        starts.append(text.rfind("\n", 0, starts[-1] - 1) + 1)
    head = text[starts[-1]:text.find("\n", starts[-1])]
    m = re.match(r"\s*#\s*define\s+(\w+)", head)
    if m is None:
        return None, ""
    end = at
    while True:
        nl = text.find("\n", end)
        if nl < 0 or not text[:nl].rstrip(" \t").endswith("\\"):
            break
        end = nl + 1
    return m.group(1), text[at:nl if nl >= 0 else len(text)]


def _after_first_argument(args: str) -> str:
    """A call's arguments after its first (INFO's flags)."""
    depth, i = 0, 0
    while i < len(args):
        if _skip_literal(args, i) == i:
            depth += args[i] in "(["
            depth -= args[i] in ")]"
            if args[i] == "," and depth == 0:
                return args[i + 1:]
        i = _step(args, i)
    return ""


def _format(args: str, level: str) -> str | None:
    """The printf format of a WARN / INFO call's arguments (INFO's first is its flags): the
    adjacent string literals, ``PRIx64`` and friends read as their conversion; None when the
    format is not a literal."""
    if level == "INFO":
        args = _after_first_argument(args)
    args = args.lstrip()
    parts: list[str] = []
    pos = 0
    while True:
        rest = args[pos:]
        stripped = rest.lstrip()
        pos += len(rest) - len(stripped)
        m = _STRING.match(stripped)
        if m:
            parts.append(m.group(0)[1:-1])
            pos += m.end()
            continue
        m = _INTTYPES.match(stripped)
        if m and parts:
            parts.append("%l" + m.group(1))
            pos += m.end()
            continue
        # a macro's parameter pasted between literals ("Call to " name " failed : %s"): a string
        m = re.match(r"(\w+)(?=\s*\")", stripped)
        if m and parts:
            parts.append("%s")
            pos += m.end()
            continue
        break
    if not parts:
        return None
    return "".join(parts).encode().decode("unicode_escape", errors="replace").rstrip("\n")


def find_sites(path: str, text: str) -> list[dict]:
    """The WARN sites and the INFO sites with a failure's words of one source file."""
    sites = []
    for m in _CALL.finditer(text):
        level = m.group(1)
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\s+(?:WARN|INFO)\b", text[line_start:]):
            continue
        if _skip_literal(text, line_start) != line_start or text[line_start:m.start()].lstrip().startswith("//"):
            continue
        end = _close(text, m.end() - 1)
        fmt = _format(text[m.end():end - 1], level)
        if fmt is None or (level == "INFO" and not FAILURE_WORDS.search(fmt)):
            continue
        macro, body = _macro(text, end)
        after = body if macro else _block_rest(text, end)
        following = "" if macro else _after_block(text, end + len(after))
        disposition, why = judge(level, macro, after, following)
        sites.append({"file": path, "line": text.count("\n", 0, m.start()) + 1, "level": level,
                      "template": fmt, "disposition": disposition, "why": why, "macro": macro})
    return sites


def judge(level: str, macro: str | None, after: str, following: str = "") -> tuple[str, str]:
    """A site's disposition and the code that decided it (above): ``after`` is the rest of the
    call's block (or macro body), ``following`` the statements after that block."""
    if level == "INFO":
        return "info", "an INFO line"
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", after, flags=re.S)
    if (m := _ERROR_EXIT.search(code)) is not None:
        return "error", f"{'macro ' + macro + ': ' if macro else ''}{m.group(0).strip()}"
    if (m := _OTHER_EXIT.search(code)) is not None:
        return "unknown", m.group(0).strip()
    if (m := _ERROR_AFTER.search(re.sub(r"//[^\n]*|/\*.*?\*/", "", following, flags=re.S))) is not None:
        return "error", f"after the block: {m.group(0).strip()}"
    if macro:
        return "survived", f"macro {macro} goes on"
    return "survived", "the block goes on"


def inventory(mirror: Path, versions=VERSIONS) -> dict:
    """Every version's sites, one entry per (file, level, template) with the versions that have
    it; the hand-read fallbacks of incidents/survived.py override the heuristic."""
    from sglang_doctor.incidents import survived

    merged: dict[tuple, dict] = {}
    for tag in versions:
        for path, text in sorted(release_sources(mirror, tag).items()):
            for site in find_sites(path, text):
                key = (site["file"], site["level"], site["template"])
                entry = merged.setdefault(key, {k: site[k] for k in ("file", "line", "level", "template", "disposition",
                                                                     "why", "macro")} | {"versions": []})
                if tag.lstrip("v") not in entry["versions"]:
                    entry["versions"].append(tag.lstrip("v"))
    for entry in merged.values():
        entry["category"] = "kernel.unsupported_hw" if CAPABILITY_WORDS.search(entry["template"]) else "nccl"
        if (why := NOT_A_FALLBACK.get((entry["file"], entry["template"]))) is not None:
            entry["disposition"], entry["why"], entry["hand"] = "unknown", why, True
        elif entry["level"] == "WARN" and survived.NONFATAL_NCCL_WARN.search(render(entry)):
            entry["disposition"], entry["hand"] = "survived", True
    sites = sorted(merged.values(), key=lambda s: (s["file"], s["level"], s["template"])) + c10d_sites()
    counts = Counter(s["disposition"] for s in sites)
    return {"source": "NVIDIA/nccl src/ and torch c10d (socket.cpp, ProcessGroupNCCL.cpp)",
            "versions": [v.lstrip("v") for v in versions], "sites": len(sites),
            "by_disposition": dict(sorted(counts.items())), "entries": sites}


# -- torch.distributed's (c10d) own warnings ------------------------------------------------------
#
# Read by hand in pytorch/pytorch torch/csrc/distributed/c10d (socket.cpp at 056b6f38c0c2, the
# ProcessGroupNCCL.cpp of torch 2.4-2.9): C10D_WARNING / TORCH_WARN sites a launch's rendezvous or
# teardown prints, and the C10D_ERROR / throw sites next to them.  Lines as glog prints them:
# ``[W1207 10:00:01.123456789 FILE:LINE] [c10d] <message>`` (``E`` for C10D_ERROR; torch 2.4+,
# 2.1-2.3 print ``[W FILE:LINE]``), the ProcessGroupNCCL ones with their ``[rank0]:`` prefix.
C10D_HEAD = "[{level}1207 10:00:01.123456789 {file}] [c10d] "
C10D_SITES = (
    # SocketConnectOp::tryConnect(addr): recordError, ConnectResult::Error, the next address is tried;
    # only when every address failed does run() C10D_ERROR + throw "failed to connect to any network address"
    ("socket.cpp:697", "The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
     "survived", "SocketConnectOp::tryConnect: recordError, the next address is tried"),
    ("socket.cpp:697", "The client socket cannot be initialized to connect to [localhost]:29500 (errno: 97 - Address family not supported by protocol).",
     "survived", "SocketConnectOp::tryConnect: recordError, the next address is tried"),
    ("socket.cpp:614", "The IPv6 network addresses of (node-0, 29500) cannot be retrieved (gai error: -9 - Address family for hostname not supported).",
     "survived", "SocketConnectOp::tryConnect(family): recordError, retry until the deadline (its timeout throws)"),
    ("socket.cpp:682", "The server socket on [node-0]:29500 has timed out, will retry.",
     "survived", "SocketConnectOp::tryConnect: ConnectResult::Retry"),
    # SocketListenOp::tryListen: each address family / address in turn; run() throws only when none listened
    ("socket.cpp:464", "The server socket has failed to bind to [::]:29500 (errno: 97 - Address family not supported by protocol).",
     "survived", "SocketListenOp::tryListen(addr): recordError, false: the next address is tried"),
    ("socket.cpp:464", "The server socket cannot be initialized on [::]:29500 (errno: 97 - Address family not supported by protocol).",
     "survived", "SocketListenOp::tryListen(addr) (torch 2.1-2.3 wording at WARNING): the next address is tried"),
    ("socket.cpp:420", "The server could not be initialized on any address for port=29500, family=10",
     "survived", "SocketListenOp::tryListen(family): recordError, false: run() tries the next family"),
    ("socket.cpp:441", "The server socket does not support IPv4 communication on [::]:29500.",
     "survived", "SocketListenOp::tryListen: dual stack not enabled, the listener goes on"),
    ("socket.cpp:431", "The address reuse option cannot be enabled for the server socket on [::]:29500.",
     "survived", "SocketListenOp::tryListen: SO_REUSEADDR not set, the listener goes on"),
    ("socket.cpp:755", "The no-delay option cannot be enabled for the client socket on [node-0]:29500.",
     "survived", "SocketImpl::accept / tryConnect: TCP_NODELAY not set, the socket is used"),
    ("socket.cpp:290", "waitForInput: poll for socket SocketImpl(fd=12, addr=[node-0]:41234, remote=[node-0]:29500) returned 0, likely a timeout",
     "survived", "SocketImpl::waitForInput: continue until the deadline"),
    # the errors next to them: the caller throws (DistNetworkError / TimeoutError / SocketError)
    ("socket.cpp:522", "The client socket has failed to connect to any network address of (node-0, 29500).",
     "error", "SocketConnectOp::run: C10D_ERROR then C10D_THROW_ERROR(SocketError)"),
    ("socket.cpp:806", "The client socket has timed out after 600s while trying to connect to (node-0, 29500).",
     "error", "SocketConnectOp::throwTimeoutError: C10D_ERROR then C10D_THROW_ERROR(TimeoutError)"),
    ("socket.cpp:500", "The server socket has failed to listen on any local network address.",
     "error", "SocketListenOp::run: C10D_ERROR then C10D_THROW_ERROR(SocketError) (the bind errors in the exception)",
     "network.port"),
)
# ProcessGroupNCCL's lines (torch 2.4-2.9), prefixed by the rank
PG_HEAD = "[rank0]:[W1207 10:05:01.123456789 ProcessGroupNCCL.cpp:{line}] "
PG_SITES = (
    ("1250", "Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal "
             "program exit, the application should call destroy_process_group to ensure that any pending NCCL operations "
             "have finished in this process. In rare cases this process can exit before this point and block the progress "
             "of another member of the process group. This constraint has always been present,  but this warning has only "
             "been added since PyTorch 2.4 (function operator())",
     "survived", "~ProcessGroupNCCL: TORCH_WARN_ONCE at the process's exit"),
    ("1659", "[PG ID 0 PG GUID 0 Rank 0] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has "
             "shut down too early), with error: Broken pipe",
     "survived", "HeartbeatMonitor::runLoop: caught, logged at W, the monitor polls on"),
    ("1632", "[PG ID 0 PG GUID 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, "
             "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600006 milliseconds before timing out.",
     "error", "ProcessGroupNCCL::watchdogHandler: the work timed out; the watchdog aborts the communicator and the process"),
)


def c10d_sites() -> list[dict]:
    """The c10d / ProcessGroupNCCL sites above as entries like NCCL's (their line as printed)."""
    out = [{"file": f"torch/csrc/distributed/c10d/{where.split(':')[0]}", "line": int(where.split(":")[1]), "level": "C10D",
            "template": message, "disposition": disp, "why": why, "category": (cat or ["nccl"])[0],
            "printed": C10D_HEAD.format(level="E" if disp == "error" else "W", file=where) + message}
           for where, message, disp, why, *cat in C10D_SITES]
    out += [{"file": "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp", "line": int(line), "level": "C10D",
             "template": message, "disposition": disp, "why": why, "category": "nccl",
             "printed": PG_HEAD.format(line=line) + message} for line, message, disp, why in PG_SITES]
    return out


# -- rendering a site's line ------------------------------------------------------------------------

HEAD = "gpu-node-1:2301:2330 [0] "


def fill(template: str) -> str:
    """The format with sample values: numbers 2, strings ``mlx5_0``, pointers an address."""
    def one(m: re.Match) -> str:
        return {"%": "%", "s": "mlx5_0", "p": "0x7f3a40000000", "c": "x", "x": "1f", "X": "1F"}.get(
            m.group(1), "1.0" if m.group(1) in "fegEG" else "2")
    return _CONV.sub(one, template)


def render(site: dict) -> str:
    """The line NCCL prints for the site (src/debug.cc ``ncclDebugLog``); a c10d site's as printed."""
    if site.get("printed"):
        return site["printed"]
    message = fill(site["template"]).splitlines()[0] if site["template"].strip() else ""
    if site["level"] == "WARN":
        return f"{HEAD}{site['file']}:{site.get('line', 1)} NCCL WARN {message}"
    return f"{HEAD}NCCL INFO {message}"


def measure(inv: dict, show: int = 0) -> dict:
    import healthy_bait as hb

    engine = hb.Engine()
    base = hb.robustness._split_lines(hb.SOURCE_CONTEXT.read_text()) + hb.SIGTERM_STOP
    at = hb._place_at(base, "nccl_init")
    tally: dict[str, Counter] = defaultdict(Counter)
    examples: dict[str, list] = defaultdict(list)
    for site in inv["entries"]:
        line = render(site)
        disp = site["disposition"]
        tally[disp]["sites"] += 1
        if disp in ("survived", "info"):
            in_context = engine.incidents("\n".join(base[:at] + [line] + base[at:]) + "\n")
            alone = engine.incidents(line + "\n")
            if in_context or alone:
                tally[disp]["false_alarms"] += 1
                examples[disp].append((line, sorted(set(in_context + alone))))
        else:
            from sglang_doctor.pipeline import StreamPipeline

            pipe = StreamPipeline(engine.ruleset, remediate=False, whole_log=True)
            events = [ev for ev in pipe.feed((line + "\n").encode()) + pipe.finish() if ev.get("event") == "incident"]
            if any(ev.get("category") == site["category"] for ev in events):
                tally[disp]["right"] += 1
            else:
                examples[disp].append((line, [ev.get("rule") for ev in events]))
    for disp in sorted(tally):
        t = tally[disp]
        what = (f"false alarms {t['false_alarms']}" if disp in ("survived", "info")
                else f"right category alone {t['right']}")
        print(f"{disp:9} {t['sites']:4} sites   {what}")
        for line, rules in examples[disp][:show]:
            print(f"    {rules}  {line[:200]}")
    return {d: dict(t) for d, t in tally.items()}


def dumps(inv: dict) -> str:
    lines = ["{"]
    head = {k: v for k, v in inv.items() if k != "entries"}
    for k, v in head.items():
        lines.append(f" {json.dumps(k)}: {json.dumps(v)},")
    lines.append(' "entries": [')
    rows = [" " + json.dumps({k: v for k, v in e.items() if v is not None}, ensure_ascii=False)
            for e in inv["entries"]]
    lines.append(",\n".join(rows))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", type=Path, default=None, help="the NVIDIA/nccl git mirror (default: "
                    "$SGLANG_DOCTOR_MIRRORS/NVIDIA+nccl/repo)")
    ap.add_argument("--check", action="store_true", help="compare with the shipped file")
    ap.add_argument("--measure", action="store_true", help="run the engine on each site's line (shipped file)")
    ap.add_argument("--show", type=int, default=0)
    args = ap.parse_args(argv)
    if args.measure:
        measure(json.loads(OUT.read_text()), args.show)
        return 0
    inv = inventory(args.mirror or default_mirror())
    return invf.check_or_write(OUT, dumps(inv), args.check)


if __name__ == "__main__":
    sys.exit(main())
