"""The trust boundary between a log and a relaunch's argv (docs/DESIGN.md "Trust").

The log is untrusted input: anyone who can make the server print a line (a client through
``--log-requests``, a model's own output, a crafted file given to ``explain``) writes it.
Every change of a ``Remediation`` says where it came from (``Remediation.provenance``):

- ``command``   the user's own launch command
- ``catalogue`` the target SGLang version's flag catalogue (names, defaults, choices)
- ``rule``      a value written in a rule file
- ``planner``   a number the memory planner or a remedy's arithmetic computed
- ``log``       text copied from the log

``check`` is the one place that decides whether a change may be applied unattended
(``run --yes``).  The first four sources may; a ``log`` change only when

1. SGLang printed it while rejecting its arguments at start-up: the incident is before the
   launch's ready line and before its HTTP server came up, its phase is not ``serving``, and
   none of its lines is a logged request (``incidents.origin.is_request_log``);
2. a value passes the flag's declared type and choices (``Catalog.validate``);
3. a free-text value (a flag with neither a numeric type nor choices: paths, hosts, names)
   was printed by SGLang's argument parser itself: an argparse ``PROG: error:`` line of the
   incident that precedes the launch's configuration dump (or the value is the user's own,
   taken from the command: ``value_from: command``).

A change whose *flag* the log's text picked (an argument check's message naming
``--foo-bar``, the parser's line naming the flag it rejected) is declared with
``declare_log_named``: source ``log``, ``flag_from: log``, ``checked_against: catalogue`` (the
flag exists in the target release and a value passed its type and choices).  The catalogue
vouches for the spelling, not for the choice of flag: ``check`` always refuses such a change,
so it is advice a human confirms, never applied by ``run --yes``.

A change without a declared source is never trusted.  Anything ``check`` refuses is shown
as advice (``untrusted`` reasons in the JSON) and needs a human's yes.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.incidents import origin
from sglang_doctor.model import Diagnosis, Remediation

TRUSTED_SOURCES = ("command", "catalogue", "rule", "planner")
SOURCES = (*TRUSTED_SOURCES, "log")
NUMERIC_TYPES = ("int", "float", "human_readable_int")


def keys(rem: Remediation) -> list[str]:
    """Every change of a remediation, as provenance keys."""
    return [*rem.set, *rem.unset, *(f"env:{name}" for name in rem.env)]


def declare(rem: Remediation, source: str, *, line: int | None = None, value_from: str | None = None,
            only_missing: bool = True) -> Remediation:
    """Record ``source`` for every change of ``rem`` (those without one, by default)."""
    assert source in SOURCES, source
    for key in keys(rem):
        if only_missing and key in rem.provenance:
            continue
        entry: dict[str, Any] = {"source": source}
        if line is not None:
            entry["line"] = line
        if value_from is not None:
            entry["value_from"] = value_from
        rem.provenance[key] = entry
    return rem


def declare_log_named(rem: Remediation, *, value_from: str | None = None, line: int | None = None) -> Remediation:
    """Record that every change of ``rem`` names a flag the log's text picked, spelled and
    checked against the release's catalogue (``value_from``: where a value came from, e.g.
    ``log`` or ``placeholder``).  Overrides what was recorded before: the log chose the flag."""
    for key in keys(rem):
        entry: dict[str, Any] = {"source": "log", "flag_from": "log", "checked_against": "catalogue"}
        if value_from is not None:
            entry["value_from"] = value_from
        if line is not None:
            entry["line"] = line
        rem.provenance[key] = entry
    return rem


def check(rem: Remediation, diagnosis: Diagnosis | None, catalog: Any) -> list[str]:
    """Why ``rem`` may not be applied unattended; empty when every change is trusted."""
    reasons: list[str] = []
    origin_problem: str | None | bool = False  # computed once, on the first log change
    for key in keys(rem):
        entry = rem.provenance.get(key)
        source = entry.get("source") if isinstance(entry, dict) else None
        if source in TRUSTED_SOURCES:
            continue
        if source != "log":
            reasons.append(f"{key}: no declared source")
            continue
        if entry.get("flag_from") == "log":  # the log chose the flag: a human decides
            reasons.append(f"{key}: a flag the log's text named (checked against the release's catalogue); "
                           "confirm it is the setting to change")
            continue
        if origin_problem is False:
            origin_problem = startup_problem(diagnosis)
        if origin_problem:
            reasons.append(f"{key}: taken from the log, {origin_problem}")
            continue
        problem = _value_problem(key, rem, entry, diagnosis, catalog)
        if problem:
            reasons.append(f"{key}: taken from the log, {problem}")
    return reasons


def startup_problem(diagnosis: Diagnosis | None) -> str | None:
    """None when the incident is SGLang's own start-up complaint, else why it is not."""
    if diagnosis is None:
        return "with no incident to vouch for it"
    inc, launch = diagnosis.incident, diagnosis.launch
    if inc.after_ready or diagnosis.phase == "serving":
        return "from a line printed while serving"
    if launch is not None:
        if launch.ready_line is not None and launch.ready_line <= inc.last_line:
            return "from a line printed after the server was ready"
        for ms in launch.milestones:
            if ms.name in ("http_server_up", "ready") and ms.line < inc.first_line:
                return "from a line printed after the HTTP server came up"
    if any(origin.is_request_log(line.text) for line in inc.lines):
        return "from an incident that holds a logged request (client text)"
    return None


def _value_problem(key: str, rem: Remediation, entry: dict, diagnosis: Diagnosis, catalog: Any) -> str | None:
    if key.startswith("env:"):
        value = rem.env.get(key[4:], "")
        if _is_number(value):
            return None
        return None if _in_parser_line(str(value), diagnosis) else "not printed by SGLang's argument parser"
    if key not in rem.set:
        return None  # an unset: removing a flag SGLang rejected at start-up
    value = rem.set[key]
    if catalog is None:
        return "no flag catalogue to check its type"
    reason = catalog.validate(key, value)
    if reason is not None:
        return reason
    spec = catalog.spec(key)
    if value is True or spec is None or spec.type in NUMERIC_TYPES or spec.choices:
        return None
    if entry.get("value_from") == "command":
        return None
    values = value if isinstance(value, (list, tuple)) else [value]
    if all(_in_parser_line(str(v), diagnosis) for v in values):
        return None
    return "a free-text value not printed by SGLang's argument parser"


def _in_parser_line(text: str, diagnosis: Diagnosis) -> bool:
    """``text`` is a word of an argparse error line printed before the launch's dump."""
    dump_line = diagnosis.launch.line if diagnosis.launch is not None else None
    for line in diagnosis.incident.lines:
        if dump_line is not None and line.number > dump_line:
            continue
        if origin.is_parser_error(line.text) and text in line.text.split():
            return True
    return False


def _is_number(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True
