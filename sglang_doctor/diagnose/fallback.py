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

from sglang_doctor.diagnose import calibration, evidence, phase_prior
from sglang_doctor.incidents import progress
from sglang_doctor.incidents.milestones import last_before, phase_after
from sglang_doctor.incidents.tracebacks import in_startup_constructor, sglang_frames
from sglang_doctor.model import Diagnosis, Incident, Launch

_TERMINAL = ("sigquit_launch", "sigquit_running")
_EXIT_NAMES = frozenset({"exit_code", "subprocess_crashed", "scheduler_dead", "scheduler_died"})
_MEANING = {
    "killed": "SIGKILL: killed from outside, most often the kernel's OOM killer",
    "aborted": "SIGABRT: the process aborted itself (an uncaught C++ exception, a failed assertion, NCCL's abort)",
    "native": "SIGSEGV: a native crash of the process itself",
    "signal": "a death by a signal",
    "exited": "the process's own exit, most often after a Python error",
}


def scheduler_death(incident: Incident) -> bool:
    """The incident is the launcher's notice that a scheduler died (engine.py: 0.4.x-0.5.9 "Rank N
    scheduler is dead. Please check if there are relevant logs." then "Exit code: N" and the
    EOFError of the pipe it waited on; 0.5.10+ RuntimeError "Rank N scheduler died during
    initialization (exit code: N)"): the launcher only saw the death, the scheduler's own error
    is above it."""
    return evidence.launcher_death(incident)


def _status(code: str | None) -> str:
    meaning = evidence.exit_meaning(code)
    return f"exit code {code}, {_MEANING[meaning]}" if meaning else "no exit code in the text"


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
        last = last_before(launch, incident.first_line)
        phase = phase_after(last.name if last else None) if (launch.line is not None or launch.milestones) else "unknown"
    return Diagnosis(
        incident=incident,
        rule="unknown",
        category="runtime.crash" if incident.after_ready else "other",
        phase=phase,
        title=title,
        explanation=f"No rule knew this failure.{where}{context_note(incident)}",
        confidence=0.2,
        launch=launch,
        layer="fallback",
    )


def context_note(incident: Incident) -> str:
    """What the text showed about the phase when it has no ready line or milestone: the
    frames that say the server was still starting (``startup_frames``), or "" ."""
    reason = incident.captures.get("startup_frames")
    if not reason:
        return ""
    return f" The server had not been ready yet: {reason}."


# -- what is missing ---------------------------------------------------------------------


def missing_part(incident: Incident) -> str | None:
    """What the text lacks to name the cause, or None when the cause line is there."""
    if incident.kind == "traceback":
        ours = sglang_frames(incident.frames)
        if ours and ours[-1].function.endswith("sigquit_handler") and incident.exception is None:
            return ("only the parent's sigquit handler is here: the child's error is above these lines "
                    "or in another log (the scheduler's own output)")
        if evidence.cut_type(incident) is not None:
            return (f"the exception line was cut inside its type name ({incident.exception.type}...): the exception "
                    "and the message that names the cause are missing")
        if incident.exception is None or not (incident.exception.type or incident.exception.message):
            if not incident.frames:
                return "the traceback was cut right after its first line: no frame and no exception line"
            return "the traceback was cut above its last line: the exception that names the cause is missing"
        code = evidence.exit_code(incident)
        if scheduler_death(incident) and evidence.exit_meaning(code) != "killed":
            return (f"the launcher only saw a scheduler process die ({_status(code)}): the scheduler's own error "
                    "is above these lines (or in its own log)")
        if wrapper_death(incident):
            return ("the program that ran SGLang says the server process died: the server's own error is in the "
                    "server's output, not in these lines")
        if peer_closed(incident):
            return (f"{PEER_GONE}: this rank's gloo connection was closed or reset by its peer, so the cause is in the log of "
                    "the rank or node that failed first")
        if incident.exception.message.strip().lower() in ("", "error", "error:", "failed", "none"):
            return (f"the exception line ({incident.exception.type}: {incident.exception.message.strip()}) says "
                    "nothing beyond its type: the cause is in the lines printed before it")
        message = incident.exception.message.strip()
        if _ELIDED.match(message):
            return (f"the exception's message was elided in the paste ({incident.exception.type}: {message}): the "
                    "words that name the cause are missing")
        if _POINTS_ABOVE.match(message):
            return (f"the exception only points to the errors printed before it ({message[:80]}): the failing "
                    "process's own error is above these lines (or in its own log)")
        return None
    names = set(incident.signal_names)
    if names and names <= set(_TERMINAL) | {"exit_code", "subprocess_crashed", "scheduler_dead", "scheduler_died"}:
        if names & set(_TERMINAL):
            return ("only the parent's sigquit is here: the child's error is above these lines "
                    "or in another log (the scheduler's own output)")
        code = evidence.exit_code(incident)
        if evidence.exit_meaning(code) == "killed":
            return "only an exit status is here: the error that made the process exit is not in the text"
        if code is None and scheduler_death(incident):
            return ("only the launcher's notice that a scheduler died is here, with no exit code: the code (on the "
                    "line after it) says whether it was killed, and the scheduler's own error is above it")
        return (f"only an exit status is here ({_status(code)}): the error that made the process exit was printed "
                "above these lines (or in the process's own log)")
    if names & {"killed", "oom_killer"}:
        return "no Python error: the process was killed from outside, so its own log stops without a cause"
    if names & {"segfault", "faulthandler", "aborted"}:
        # (faulthandler's "Fatal Python error: Segmentation fault" and its thread dump is the
        # Python side of the same native crash)
        return "a native crash: the Python side printed nothing, and the native backtrace does not name the cause"
    if "c10d_peer_gone" in names and not names & {"nccl_warn", "nccl_error"}:
        return f"{PEER_GONE}: the cause is in the log of the rank or node that died"
    return None


# An exception message that a paste elided (``RuntimeError: ...``, ``ValueError: [...]``, an ellipsis,
# a ``<truncated>`` marker): the type survived, the words that name the cause did not
_ELIDED = re.compile(r"^(?:\.{2,}|\u2026+|\[\s*(?:\.{2,}|\u2026)\s*\]|\(\s*(?:\.{2,}|\u2026)\s*\)|"
                     r"<[^<>]{0,30}\b(?:truncated|omitted|elided|snip)\w*[^<>]{0,30}>)$", re.IGNORECASE)
# An exception whose message only points to the errors printed before it: the launcher's
# ``RuntimeError: Initialization failed. Please see the error messages above.`` (entrypoints/engine.py,
# 0.4.6-0.5.23, raised when a scheduler reported it was not ready), which carries no cause of its own
_POINTS_ABOVE = re.compile(r"^(?:[\w ]{0,40}\bfailed\.?\s+)?(?:please )?see the error messages? above\.?$", re.IGNORECASE)

PEER_GONE = "a peer went away first"
# gloo's TCP transport (gloo/transport/tcp/pair.cc) when the other end of a rank-to-rank connection
# closed it or reset it: the peer rank's process died (or its node went away) before this one failed,
# as rules/nccl.yaml's nccl.gloo_transport_error says ("this rank only lost its peer"); a connect
# timeout or "no error" is not read as one (it may be this node's network)
_GLOO_PEER_CLOSED = re.compile(r"gloo/transport/tcp/pair\.cc:\d+\][^\n]*Connection (?:closed|reset) by peer")


def peer_closed(incident: Incident) -> bool:
    """The incident's exception is gloo's report that the peer closed or reset the connection."""
    exc = incident.exception
    return exc is not None and bool(_GLOO_PEER_CLOSED.search(exc.message or ""))


def assumed_context(diagnosis: Diagnosis) -> str | None:
    """What is missing when a class rule's answer rests only on an assumed context: the
    catch-all "a crash while serving" names an exception nothing else knows, and the text
    does not say that the server had been serving (unknown is not true either).  Any class
    rule that matched on its assumptions alone (``Diagnosis.assumed_only``) says so, and so does
    a class rule whose category follows the phase (``category_by_phase``) when the text shows no
    phase (``phase_unknown``)."""
    unknown_phase = phase_unknown(diagnosis)
    if unknown_phase is not None:
        return unknown_phase
    if not diagnosis.assumed:
        return None
    if diagnosis.layer == "fallback" and diagnosis.assumed_only:
        pass  # the text's own evidence replaced a rule's answer that rested on its assumptions
    elif diagnosis.layer != "class" or not (diagnosis.assumed_only or diagnosis.category == "runtime.crash"):
        return None
    rule_category = diagnosis.captures.get("assumed_category", diagnosis.category)
    answer = "a crash while serving" if rule_category == "runtime.crash" else rule_category
    if any(a.startswith("the server had") for a in diagnosis.assumed):
        unknown = ("the text does not say whether the server had been ready (no ready line, start-up milestone or "
                   "launch header)")
    else:
        unknown = "the text does not show the launch's settings (no server_args dump)"
    return f"{unknown}: naming it {answer} is an assumption ({'; '.join(diagnosis.assumed)})"


def phase_unknown(diagnosis: Diagnosis) -> str | None:
    """What is missing when a class rule's category follows the phase the failure came in
    (``category_by_phase``: SGLang's own inconsistent state, class.internal.*, is the start-up
    step's failure during a step and a crash while serving after ready) and the text shows no
    phase (no ready line, milestone or launch header): the rule's default (``other``) answers
    for a context the log does not give, as an assumed context does (docs/DESIGN.md, layered
    diagnosis: unknown context stays unknown)."""
    follows = diagnosis.captures.get("category_follows_phase")
    if diagnosis.layer != "class" or not follows or diagnosis.phase != "unknown":
        return None
    return (f"the text does not show the phase it failed in (no ready line, start-up milestone or launch header), "
            f"and rule {diagnosis.rule}'s category follows the phase ({follows}): {diagnosis.category} is its answer "
            "for an unknown phase, not a reading of the failure")


# The text's own evidence for another category outweighs a class rule's answer that rests on
# an assumed context alone when it adds up to at least this much: one piece that names a place
# or a word of the failure (a deepest frame 0.4, a word of the failure's own message 0.3-0.45,
# a library frame 0.25-0.4), or two weaker ones that agree.
EVIDENCE_OVER_ASSUMPTION = 0.3


def over_assumption(diagnosis: Diagnosis) -> Diagnosis | None:
    """The text's own answer when the rule's rests on an assumption alone and the text's
    evidence names another category (at least ``EVIDENCE_OVER_ASSUMPTION``, and more than it
    holds for the rule's own): a fallback diagnosis with that category, which says which
    rule matched only on what it assumed.  None when the rule's answer stands."""
    if not diagnosis.assumed_only:
        return None
    pieces = evidence.collect(diagnosis)
    score = evidence.scores(pieces)
    found = evidence.weigh(pieces, context_known=False)
    if found is None or found["category"] in (diagnosis.category, "other"):
        return None
    if score.get(found["category"], 0.0) < EVIDENCE_OVER_ASSUMPTION:
        return None
    if score.get(found["category"], 0.0) <= score.get(diagnosis.category, 0.0):
        return None
    out = unknown_diagnosis(diagnosis.incident, diagnosis.launch)
    out.category = found["category"]
    out.confidence = min(max(out.confidence, found["confidence"]), 0.5)
    used = [ev["name"] for ev in found.get("evidence", ()) if ev["category"] == found["category"]]
    out.explanation = (f"{out.explanation} Rule {diagnosis.rule} ({diagnosis.category}) matched only on what it "
                       f"assumed ({'; '.join(diagnosis.assumed)}); the text's own evidence points to "
                       f"{found['category']} ({', '.join(used)}).")
    out.assumed = list(diagnosis.assumed)
    out.assumed_only = True
    out.captures = dict(diagnosis.captures, assumed_rule=diagnosis.rule, assumed_category=diagnosis.category)
    return out


# A program that ran SGLang under ray: an RL framework's rollout engine (slime, verl, AReaL,
# OpenRLHF run the server inside a ray actor), seen in the frames' paths or a ``ray::Actor.method()``
# line (the reader strips ray's ``(Actor pid=N)`` prefixes, so they are not seen here).  Ray keeps
# each worker's whole output in its session's log directory on that node
# (``/tmp/ray/session_latest/logs/worker-*.out|err``); what reaches the driver may be cut or
# deduplicated.
_RAY_FRAMES = re.compile(r"/(?:ray|slime|verl|areal|openrlhf)/", re.IGNORECASE)
_RAY_LINE = re.compile(r"\bray::\w")
# the wrapper's own message that the server it started died (slime's sglang_engine.py
# ``_wait_server_healthy``: "Server process terminated unexpectedly."; ray's ActorDiedError)
_WRAPPER_DEATH = re.compile(r"\b(?:server|engine|process|worker|actor)\b.{0,40}\b(?:terminated|died|exited|is dead)\b|"
                            r"ActorDiedError", re.IGNORECASE)
RAY_LOGS = "/tmp/ray/session_latest/logs/"


def under_ray(incident: Incident) -> bool:
    """The incident came from a program that runs SGLang under ray (see ``_RAY_FRAMES``)."""
    return (any(_RAY_FRAMES.search(f.file.replace("\\", "/")) for f in incident.frames)
            or any(_RAY_LINE.search(line.text) for line in incident.lines[:200]))


def wrapper_death(incident: Incident) -> bool:
    """A traceback of the program that ran SGLang (no SGLang frame) whose exception says the
    server process died: the server's own error is in the server's output, not in this text."""
    exc = incident.exception
    if incident.kind != "traceback" or exc is None or sglang_frames(incident.frames):
        return False
    return bool(_WRAPPER_DEATH.search(f"{exc.type}: {exc.message}"))


def next_step(incident: Incident, missing: str | None, fragment: bool, guessed: str | None = None) -> str:
    """The one command that gets the missing part (``LOG`` = the server's log file, the whole
    file, not the pasted part); ``guessed``: the best guess's category, which picks the command
    only when nothing of the failure's own shape does (a CUDA OOM: ``CUDA_OOM_STEP``)."""
    names = set(incident.signal_names)
    code = evidence.exit_code(incident)
    meaning = evidence.exit_meaning(code) if names & _EXIT_NAMES or scheduler_death(incident) else None
    if names & {"killed", "oom_killer"} or meaning == "killed":
        return "sudo dmesg -T | grep -i -E 'killed process|out of memory'   # on the server: was it the OOM killer?"
    if meaning == "aborted" and not names & {"segfault", "faulthandler", "aborted", "cpp_terminate"}:
        return (f"grep -n -B2 -A20 -E 'terminate called|what\\(\\)|Assertion|NCCL WARN|Fatal Python|Traceback' LOG   "
                f"# the abort's own message (a C++ exception, an assertion, NCCL), printed before exit code {code}")
    if meaning is None and scheduler_death(incident) and not names - _EXIT_NAMES - set(_TERMINAL):
        return ("grep -n -B60 -A1 -E 'scheduler is dead|scheduler died' LOG   # the exit code on the line after it "
                "(-9: killed from outside, most often the OOM killer; -6: an abort) and the scheduler's own error "
                "above it")
    if names & {"segfault", "faulthandler", "aborted"}:
        return "rerun with NCCL_DEBUG=INFO and PYTHONFAULTHANDLER=1, then: grep -n -B5 -A40 -E 'Fatal Python|NCCL WARN' LOG"
    if "c10d_peer_gone" in names or "nccl_watchdog" in names or (missing or "").startswith(PEER_GONE):
        return "grep -n -B2 -A80 -E 'Traceback|NCCL WARN' LOG   # on every node: the first rank that failed has the cause"
    if (missing or "").startswith("only an exit status"):
        if code is None or not re.fullmatch(r"-?\d{1,3}", code):
            # "Rank N scheduler is dead" with no status: a process that leaves no Python error was
            # most often killed from outside
            return ("sudo dmesg -T | grep -i -E 'killed process|out of memory'   # no Python error and no exit "
                    "status: was it the OOM killer?")
        return (f"grep -n -B5 -A80 -E 'hit an exception|Traceback' LOG   # the process's own error, printed "
                f"before it exited with status {code} (the rank's own log if it writes one)")
    if under_ray(incident) and (missing or wrapper_death(incident)):
        return (f"grep -rn -B5 -A80 -E 'hit an exception|Traceback' {RAY_LOGS}   # on the node that ran the server: "
                "ray keeps each worker's whole output (worker-*.out/.err) there")
    if (names & set(_TERMINAL) and incident.kind == "signal") or (missing or "").startswith("only the parent's sigquit"):
        return "grep -n -B5 -A80 'hit an exception' LOG   # the child's traceback, above the sigquit line"
    if wrapper_death(incident):
        return ("grep -n -B5 -A80 -E 'hit an exception|Traceback' LOG   # LOG = the server's own output (its stdout/"
                "stderr), not the program's that started it")
    if (missing or "").startswith("the exception line ("):
        return ("grep -n -B40 -A2 'Traceback (most recent call last)' LOG   # the lines printed before the traceback "
                "(an error or warning line, a C++ message) name the cause")
    if incident.kind == "traceback" and missing:
        also = " (or: sglang-doctor explain LOG)" if fragment else ""
        return (f"grep -n -B5 -A80 'Traceback (most recent call last)' LOG   # on the whole log file: the traceback's "
                f"missing part and its exception line{also}")
    if guessed == "memory.cuda_oom":
        # no traceback of it here to follow: the OOM's own line, wherever in the log it is
        return CUDA_OOM_STEP
    if guessed == "memory.kv_pool":
        return KV_POOL_STEP
    if fragment:
        return "sglang-doctor explain LOG   # on the whole log file, not a tail of it"
    return "grep -n -B5 -A80 'Traceback (most recent call last)' LOG"


# -- the best guess --------------------------------------------------------------------


def best_guess(diagnosis: Diagnosis) -> dict[str, Any]:
    """The rule layer's answer when one matched; else the heaviest category of the evidence
    the text holds (diagnose/evidence.py), each piece named with its weight in ``why``."""
    inc = diagnosis.incident
    if diagnosis.layer != "fallback":
        ruled = {"category": diagnosis.category, "confidence": round(diagnosis.confidence, 3),
                 "why": f"rule {diagnosis.rule} matched what the text holds", "basis": f"rule:{diagnosis.layer}",
                 "grounds": "rule", "rests_on": evidence.rests_on("rule", rule=diagnosis.rule)}
        placed = _more_precise_place(diagnosis)
        if placed is not None:
            return placed
        if assumed_context(diagnosis) is None:
            return ruled
        contradicted = _still_starting(diagnosis)
        if contradicted is not None:
            return contradicted
        # the rule stands on an assumed context only: what the text's own evidence says
        # weighs against it, and wins when it is the stronger
        found = evidence.weigh(evidence.collect(diagnosis), context_known=False)
        if found is not None and found["category"] != diagnosis.category and found["confidence"] > diagnosis.confidence:
            return found
        ruled["why"] += " on an assumed context; nothing in the text weighs more"
        return ruled
    # a start-up progress line before the failure, or frames of the start-up constructors
    # (Scheduler / TpModelWorker / ModelRunner __init__), say the server was not ready yet
    starting = inc.captures.get("progress_phase", "serving") != "serving" or in_startup_constructor(inc.frames)
    pieces = evidence.collect(diagnosis)
    found = evidence.weigh(pieces, context_known=inc.after_ready_known or starting)
    if found is not None:
        return found
    return {"category": diagnosis.category, "confidence": round(min(diagnosis.confidence, 0.2), 3),
            "why": "nothing in the text points anywhere more precise", "grounds": "none",
            "rests_on": evidence.rests_on("none"), "evidence": [p.to_json() for p in pieces]}


def _still_starting(diagnosis: Diagnosis) -> dict[str, Any] | None:
    """The guess when a class rule named a crash while serving on the assumption that the server had
    been ready, and the text itself says the launch was still under way: SGLang's launcher prints
    "Rank N scheduler is dead" (0.4.x-0.5.9) / "scheduler died during initialization" (0.5.10+) only
    while it waits for its schedulers to report ready (engine.py ``_launch_subprocesses``), so the
    failure came before ready and "a crash while serving" (after ready, docs/CONTRACT.md) cannot be
    it.  What the text's own evidence and the start-up phase say stands instead; None when the text
    does not contradict the assumption."""
    if diagnosis.category != "runtime.crash" or not evidence.launcher_death(diagnosis.incident):
        return None
    pieces = [p for p in evidence.collect(diagnosis) if p.category != "runtime.crash" or p.weight <= 0]
    if not any(p.name.startswith("prior:") for p in pieces):
        pieces += phase_prior.pieces(phase_prior.STARTUP, "the launcher's notice that a scheduler died, printed only "
                                     "while the launch waits for the schedulers to be ready")
    found = evidence.weigh(pieces, context_known=True)
    if found is None:
        found = {"category": "other", "confidence": 0.1, "why": "nothing in the text points anywhere",
                 "grounds": "none", "rests_on": evidence.rests_on("none"), "evidence": [p.to_json() for p in pieces]}
    found = dict(found)
    found["why"] = (f"rule {diagnosis.rule} named a crash while serving on an assumed context, but the text says the "
                    f"launch was still under way (the launcher's notice that a scheduler died): {found['why']}")
    return found


# The pieces of what a cut traceback was doing when it stopped (diagnose/evidence.py): the function
# it stopped in (the deepest frame, or the call the text was cut inside), the library below SGLang's
# frames, an allocation, a JIT build the progress lines show under way, the exception type cut inside
# its name, transformers' model-type lookup it stopped in (evidence.from_config_lookup_frame: below
# SGLang's config reader, whose module a class rule names model.load).  A class rule knows only the module.
_PLACE_PIECES = ("deepest_frame", "cut_call", "cut_type", "library_frame", "allocation", "progress",
                 "config_lookup_frame", "capability_check", "sync_point", "raise_site")
# Of them, what the traceback's last line was doing, not where: an allocation it was executing, the
# exception type it was cut inside.  A rule that matched a cut traceback on its frames (a specific rule
# on the serving loop's frames) knows where it was as well as a place piece does, but not that.
_WHAT_PIECES = ("allocation", "cut_type", "capability_check", "sync_point", "raise_site")
# What the text shows of the GPU's state when it failed (almost no free memory at the last start-up line or
# on the capture bar): a class rule's answer rests on the module alone, which that state outweighs.
_STATE_PIECES = ("low_memory", "pool_headroom", "pool_budget")


def _more_precise_place(diagnosis: Diagnosis) -> dict[str, Any] | None:
    """A class rule's answer for a traceback cut before its exception line rests on the module
    it stopped in; when the function it stopped in (the deepest frame, or the call the text was
    cut inside) names another category and nothing in the text weighs more for the rule's, that
    place is the better guess (model_loader's _initialize_model builds the model class: an
    unsupported architecture, not a weight that failed to load).  A rule of another layer that matched the
    cut traceback (a specific rule on the serving loop's frames) knows where it was; only what its last
    line was doing (``_WHAT_PIECES``: an allocation, a cut type name) can say more.  The text's own pieces
    are compared, as ``evidence.weigh`` names a category by them.  None when the rule's stands."""
    inc = diagnosis.incident
    cut = evidence.cut_type(inc) is not None
    if diagnosis.layer == "fallback" or inc.kind != "traceback" or (inc.exception is not None and inc.exception.type
                                                                    and not cut):
        return None
    names = _PLACE_PIECES + _STATE_PIECES if diagnosis.layer == "class" else _WHAT_PIECES
    pieces = evidence.collect(diagnosis)
    place = max((p for p in pieces if p.name in names and p.weight > 0), key=lambda p: p.weight, default=None)
    if place is None or place.category in (diagnosis.category, "other"):
        return None
    # (the text's own pieces, as ``evidence.weigh`` names a category by them: the phase read through the
    # prior and the words around say what usually fails there, not what this traceback was doing)
    score = evidence.scores([p for p in pieces if not p.support])
    if score.get(place.category, 0.0) <= score.get(diagnosis.category, 0.0):
        return None
    found = evidence.weigh(pieces, context_known=inc.after_ready_known)
    if found is None or found["category"] != place.category:
        return None
    found = dict(found, confidence=round(min(found["confidence"], diagnosis.confidence - 0.05), 3))
    matched = ("on the module the cut traceback stopped in" if diagnosis.layer == "class"
               else "the cut traceback's frames")
    reading = "the free GPU memory the text shows" if place.name in _STATE_PIECES else "what it was doing there"
    found["why"] = f"rule {diagnosis.rule} ({diagnosis.category}) matched {matched}; {reading} says more: {found['why']}"
    return found


WORDS_NAME = 0.35  # the weight a word of the failure's own message needs to name the category


def _named_by_words(guess: dict[str, Any]) -> bool:
    """The guess rests on a word of the failure's own message strong enough to name it."""
    if guess.get("category") in (None, "other") or calibration.strength(guess) < 0.25:
        return False
    return any(ev["name"].startswith("words:") and ev["category"] == guess["category"] and ev["weight"] >= WORDS_NAME
               for ev in guess.get("evidence", ()))


def attach(diagnosis: Diagnosis) -> Diagnosis:
    """Add the fallback block when the cause line is missing or no rule knew the failure."""
    inc = diagnosis.incident
    missing = missing_part(inc) or assumed_context(diagnosis)
    if missing is None and diagnosis.layer != "fallback":
        return diagnosis
    launch = diagnosis.launch
    fragment = launch is None or (launch.line is None and not launch.milestones)
    guess = best_guess(diagnosis)
    named = False
    if diagnosis.layer == "fallback":
        # the guess becomes the incident's category only when the cause line is missing and
        # evidence points somewhere; a cause line no rule knows stays "other"
        # (the weighed figure, ``strength``, decides; the confidence stated is measured below)
        weighed = calibration.strength(guess)
        if missing and guess["category"] not in ("other",) and weighed >= 0.25:
            diagnosis.category = guess["category"]
            diagnosis.confidence = min(max(diagnosis.confidence, weighed), 0.5)
        elif not missing and _named_by_words(guess):
            # the cause line is here and no rule knew it, but its own words name a part of the
            # launch (an architecture, an argument, the transport): the category follows them
            diagnosis.category = guess["category"]
            diagnosis.confidence = min(max(diagnosis.confidence, weighed), 0.4)
            named = True
        where = "the cause line is not in the text" if missing else "no rule knew this failure"
        if diagnosis.assumed_only and not missing_part(inc):
            where = "no rule knew this failure without an assumption"
        if named:
            where = "no rule knew this failure; the category is named by the words of its own message"
        guess = calibration.calibrate(guess)
        used = [ev["name"] for ev in guess.get("evidence", ()) if ev["category"] == guess["category"]]
        basis = f" (evidence: {', '.join(used)})" if used else ""
        rests = (f" It rests on {guess['rests_on']}." if guess.get("grounds") in ("phase", "around", "none")
                 and guess.get("rests_on") else "")
        diagnosis.explanation = (f"{diagnosis.explanation} Best guess ({where}): {guess['category']}, "
                                 f"confidence {guess['confidence']}{basis}.{rests}{machine_note(guess)}").strip()
    diagnosis.fallback = {"missing": missing, "best_guess": calibration.calibrate(guess),
                          "next_step": next_step(inc, missing, fragment, guess.get("category"))}
    return diagnosis


def machine_note(guess: dict[str, Any]) -> str:
    """What the text showed of the machine, when a fact of it is among the pieces for the guess
    (diagnose/evidence.py ``hardware:*``): " The machine: <why>." or "" ."""
    whys = [ev["why"] for ev in guess.get("evidence", ()) if ev["name"].startswith("hardware:")
            and ev["category"] == guess.get("category") and ev["weight"] > 0]
    return f" The machine: {whys[0]}." if whys else ""


# -- a text with no failure in it ---------------------------------------------------------
# What the last line of a fragment shows the server doing: (substring, phase).
_LAST_LINE: tuple[tuple[str, str], ...] = (
    ("Decode batch", "serving"), ("Prefill batch", "serving"), ("HTTP/1.1", "serving"),
    ("Application startup complete", "serving"), ("Started server process", "serving"),
    ("Waiting for application startup", "serving"), ("Uvicorn running on", "serving"),
    # a step's end line names the step after it, as milestones.phase_after does ("Load weight end":
    # the pools are sized next; "Capture cuda graph end": warm-up), before the step's own name
    ("Capture cuda graph end", "startup.warmup"), ("Load weight end", "startup.memory_pool"),
    ("Capturing batches", "startup.cuda_graph"), ("Capture cuda graph", "startup.cuda_graph"),
    ("Loading safetensors checkpoint shards", "startup.load_weights"), ("Load weight", "startup.load_weights"),
    ("Detected fp8 checkpoint", "startup.load_weights"), ("Loading pt checkpoint shards", "startup.load_weights"),
    ("Init torch distributed ends", "startup.load_weights"), ("Init torch distributed", "startup.distributed"), ("KV Cache is allocated", "startup.memory_pool"),
    ("Memory pool end", "startup.cuda_graph"),
) + progress.PROGRESS


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


# The scheduler's event loop by name (scheduler.py ``event_loop_normal`` / ``event_loop_overlap`` /
# ``event_loop_pp`` ...): run_scheduler_process enters it only after the scheduler has told the
# launcher it is ready (every start-up step done), so a text that names it, in frames too garbled
# or cut to form a traceback (interleaved ranks, a prefix on each line), was serving.
_EVENT_LOOP = re.compile(r"\bevent_loop_(?:normal|overlap|pp)(?:_[a-z]+)*")
EVENT_LOOP_LINES = 40  # how far back from the end of the text the event loop's name is looked for


# How far back from the end a line that names a step (``_LAST_LINE``) is looked for when the last
# lines name none and the text shows no ready line or milestone: the lines a text ends in are often
# ones that name no step (a library's warnings, a model's processor notices, a tool's own prints,
# multiprocessing's leaked-semaphore notice), and the step the server was at is the one the last
# step line names (the scheduler prints its batch lines only from its event loop, after ready;
# the weight loader's bars only while reading the checkpoint).  Only when nothing nearer says: of
# the tuned parts' texts with no incident whose last 3 lines name no step, every one that a step
# line up to 40 lines back places (six) was placed in the phase its label gives.
PHASE_LINES = EVENT_LOOP_LINES


def _step_line(tail: bytes, n: int = 3) -> tuple[str, str] | None:
    """(line, phase) of the last of the last ``n`` lines that names a step (``_LAST_LINE``), or None."""
    for text in _last_lines(tail, n):
        phase = next((p for lit, p in _LAST_LINE if lit in text), None)
        if phase is not None:
            return text, phase
    return None


def _phase_line(tail: bytes) -> str:
    """The last line that names the phase by what it shows (``_LAST_LINE``), as text_phase reads it; "" if none."""
    found = _step_line(tail) or _step_line(tail, PHASE_LINES)
    return found[0] if found else ""


def text_phase(launches: list[Launch], tail: bytes) -> tuple[str | None, str | None]:
    """The phase a text with no failure in it ends in, and how it shows it: its last lines (a
    batch line, a capture bar, a weight-loading line), else the scheduler's event loop named in
    its last lines (``_EVENT_LOOP``), else the ready line, else the last start-up milestone, else
    the last line that names a step within ``PHASE_LINES`` of the end; (None, None) when it
    shows none."""
    launch = launches[-1] if launches else None
    found = _step_line(tail)
    if found is not None:
        text, phase = found
        return phase, f"the text ends while the server is at {phase} ({text[:80]!r})"
    for text in _last_lines(tail, EVENT_LOOP_LINES):
        m = _EVENT_LOOP.search(text)
        if m:
            return "serving", (f"the text names the scheduler's event loop ({m.group(0)}), which SGLang enters only "
                               "once the scheduler is ready")
    if launch is not None and launch.ready_line is not None:
        return "serving", "the server had been ready"
    if launch is not None and launch.milestones:
        return phase_after(launch.milestones[-1].name), f"the last start-up step seen is {launch.milestones[-1].name}"
    found = _step_line(tail, PHASE_LINES)
    if found is not None:
        text, phase = found
        return phase, (f"the last line that names a step ({text[:80]!r}) shows the server at {phase}; the lines "
                       "after it name none")
    return None, None


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
    phase, why = text_phase(launches, tail)
    pieces = []
    if phase is not None and phase in phase_prior.COUNTS:
        pieces = phase_prior.pieces(phase, why + "; if it failed, it failed there")
        if phase == "startup.load_weights":
            pieces += evidence.past_architecture(_phase_line(tail))
            pieces += evidence.weights_read(_phase_line(tail))
    elif phase == progress.JIT_BUILD:
        pieces = [evidence.Evidence("phase", "kernel.build", 0.25, why + "; if it failed, it failed there")]
    elif phase is None and launch is not None and launch.line is not None and launch.ready_line is None:
        pieces = evidence.after_header("the text ends after the launch's server_args line with no start-up step "
                                       "after it")
    if launch is not None and launch.ready_line is None and launch.milestones and phase != "serving":
        # what the last milestone left free for the step after it, as for a failure after it (from_context)
        last = launch.milestones[-1]
        pieces += evidence.low_memory(last, phase_after(last.name))
        pieces += evidence.pool_headroom(launch, last)
        pieces += evidence.pool_allocated(last)
        pieces += evidence.pool_budget(launch, last)
    if phase == "startup.cuda_graph" and not any(ev.name == "low_memory" for ev in pieces):
        # the capture bar the text ends with: the headroom after the last graph captured
        pieces += evidence.low_capture_memory(_phase_line(tail), "the line the text ends with")
    # a launch over several nodes (its dump's nnodes, a rank past one node's GPUs in the prefixes)
    pieces += evidence.multi_node(launch.server_args if launch is not None else None,
                                  [m.text for m in (launch.milestones if launch is not None else ())]
                                  + _last_lines(tail, PHASE_LINES))
    # the words of the lines the text ends with (NCCL set-up lines, a ROCm platform, the
    # transfer engine's start-up, a transformers version): half weight, they are no failure
    pieces += evidence.from_text(list(reversed(_last_lines(tail, 40))))
    # argparse's usage block at the end: the parser's error line after it was cut
    pieces += evidence.argparse_usage(list(reversed(_last_lines(tail, 40))))
    # what the text says of the machine: with no failure in the text, no kernel's code failed, so only
    # torch's own warning that it has no kernels for this GPU (every kernel would fail) and weights larger
    # than the GPUs count; a GPU SGLang's kernels leave out is no piece without a kernel's failure
    pieces += evidence.machine_pieces(evidence.launch_machine(launch, _last_lines(tail, 40)), pieces, False,
                                      phase == "serving", launch.server_args if launch is not None else None)
    found = evidence.weigh(pieces, context_known=True)
    guess = found if found is not None else {"category": "other", "confidence": 0.1,
                                             "why": "the text shows no failure and no phase", "grounds": "none",
                                             "rests_on": evidence.rests_on("none"), "evidence": []}
    guess = calibration.calibrate(guess)
    return {
        "missing": (f"no failure is in {'this line' if lines == 1 else f'these {lines} lines'}: if the server "
                    "failed, its error comes after the last "
                    "line (the text ends there) or is in another log"),
        "best_guess": guess,
        "next_step": _no_failure_step(guess.get("category"), guess.get("cue")),
    }


def _no_failure_step(category: str | None, cue: str | None = None) -> str:
    """The command for a text with no failure in it, by what the guess says it was doing: a launch
    whose text stops in NCCL / torch.distributed set-up with no error is most often waiting on a
    rank or node that failed (its error is in that one's log, as for a peer that went away); a text
    of the PD KV transport (``words:transport``) is one side of a transfer between the prefill and
    decode servers, whose other side's log holds its half; a kill from outside leaves no error in
    any log, only in the kernel's; else the whole log file."""
    if category == "nccl" and (cue or "").startswith("words:transport"):
        return ("grep -n -B2 -A40 -E 'Traceback|hit an exception|transfer failed|E[0-9]{4} ' LOG   # in the prefill "
                "AND the decode server's log: a KV transfer fails on both sides, the side that failed first has "
                "the cause")
    if category == "nccl":
        return ("grep -n -B2 -A80 -E 'Traceback|NCCL WARN|hit an exception' LOG   # on every node and rank's log: a "
                "launch that stops in NCCL set-up with no error is waiting on the one that failed")
    if category == "memory.host_oom":
        return "sudo dmesg -T | grep -i -E 'killed process|out of memory'   # on the server: was it the OOM killer?"
    if category == "memory.cuda_oom":
        return CUDA_OOM_STEP
    if category == "memory.kv_pool":
        return KV_POOL_STEP
    return "sglang-doctor explain LOG   # on the whole log file; or: grep -n -B2 -A80 'Traceback' LOG"


# The command for a guess of a CUDA out-of-memory whose line is not in the text: torch's own line
# ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...", before 2.1 "RuntimeError: CUDA
# out of memory"), the caching allocator's C++ form ("CUDA error: out of memory"), SGLang's pool check
# ("Not enough memory. Please try to increase --mem-fraction-static"); none in the whole log: the
# process died before it could print one, and the GPU's memory while it loads says how close it came
# The command for a guess of the KV pool's sizing: SGLang's own check and the figures it sized from, wherever in
# the log they are -- "Not enough memory. Please try to increase --mem-fraction-static" (0.4.x-0.5.x model_runner.py),
# 0.5.2x's "Loaded weights leave no GPU memory for the KV cache" (kv_cache_configurator.py), the warning
# "max_total_tokens=N is larger than the profiled value M", and the two "avail mem=" lines the budget is
# computed from (evidence.pool_budget)
KV_POOL_STEP = ("grep -n -E 'Not enough memory|leave no GPU memory|profiled value|Load weight (begin|end)' LOG   "
                "# on the whole log file: SGLang's pool-sizing check and the free memory it sized the pool from; "
                "no check there: not the pool's sizing, run 'sglang-doctor explain LOG'")
CUDA_OOM_STEP = ("grep -n -B2 -A3 -E 'out of memory|OutOfMemoryError|Tried to allocate|Not enough memory' LOG   "
                 "# on the whole log file: the OOM line and what it tried to allocate; none there: run "
                 "'nvidia-smi -l 1' while the server loads")
