"""OpenTelemetry names beside CONTRACT.md's JSON fields.

Every JSON event gets the flat OTel Logs Data Model / semantic-convention keys, so that the
OTel collector's ``json_parser``, Vector's ``parse_json`` and Fluent Bit's ``json`` parser
map our records without custom code (docs/FLEET.md has the mapping).  They are added beside
the CONTRACT fields, never instead of them.

- ``timestamp``: when the log line says (SGLang's ``[YYYY-MM-DD HH:MM:SS]`` prefix, local time
  of the server, no zone: ISO 8601 without offset); ``observed_timestamp``: when the doctor
  saw it (UTC, RFC 3339).
- ``severity_text`` / ``severity_number``: ERROR (17) for incidents and for the ``confirmed``
  event of a provisional one, WARN (13) for warnings and for a provisional incident (a live
  stream's, which the launch may yet survive: a log pipeline that alerts on ERROR pages only on
  what stands), INFO (9) otherwise.
- ``body``: one line (the incident's title, a milestone's description, ...).
- ``exception.type`` / ``exception.message`` / ``exception.stacktrace``: the root exception
  and the whole assembled traceback (incidents only).
- ``log.file.path``, ``host.name``, ``service.name`` (``sglang``), ``service.version`` (the
  SGLang release when the log or the remedy's target says), ``process.pid`` (the server's
  pid when ``run`` started it).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from typing import Any

from sglang_doctor.incidents.milestones import DESCRIPTIONS
from sglang_doctor.read import records

SEVERITY = {"ERROR": 17, "WARN": 13, "INFO": 9}
_ERROR_EVENTS = {"incident", "confirmed"}
_WARN_EVENTS = {"warning", "relaunch"}


@dataclass
class Resource:
    """What describes the source of every event of one stream."""

    log_path: str | None = None
    host_name: str | None = None
    pid: int | None = None
    service_version: str | None = None  # the newest version a launch event told

    def __post_init__(self) -> None:
        if self.host_name is None:
            self.host_name = socket.gethostname()


def add_fields(ev: dict[str, Any], resource: Resource) -> dict[str, Any]:
    """A copy of ``ev`` with the OTel keys added (CONTRACT fields untouched).

    The ``summary`` trailer of ``explain`` is a tally of the stream, not a log record: it
    stays as CONTRACT.md shows it."""
    kind = ev.get("event")
    if kind == "summary":
        return ev
    severity = "ERROR" if kind in _ERROR_EVENTS else "WARN" if kind in _WARN_EVENTS else "INFO"
    if kind == "incident" and ev.get("provisional"):
        severity = "WARN"  # it may yet be withdrawn: its ``confirmed`` event is the ERROR
    if kind == "launch" and ev.get("sglang_version"):
        resource.service_version = ev["sglang_version"]
    if kind in ("attempt", "healthy") and isinstance(ev.get("pid"), int):
        resource.pid = ev["pid"]
    out = dict(ev)
    stamp = _log_timestamp(ev)
    if stamp is not None:
        out["timestamp"] = stamp
    out["observed_timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out["severity_text"] = severity
    out["severity_number"] = SEVERITY[severity]
    out["body"] = _body(ev)
    if kind == "incident":
        exc = ev.get("exception") or {}
        if exc:
            out["exception.type"] = exc.get("type")
            out["exception.message"] = exc.get("message")
        out["exception.stacktrace"] = ev.get("traceback") or ""
    if resource.log_path:
        out["log.file.path"] = resource.log_path
    out["host.name"] = resource.host_name
    out["service.name"] = "sglang"
    version = _version(ev) or resource.service_version
    if version:
        out["service.version"] = version
    if resource.pid is not None:
        out["process.pid"] = resource.pid
    return out


def _log_timestamp(ev: dict[str, Any]) -> str | None:
    stamp = ev.get("_timestamp")  # launch and ready events: the time on their own line
    if isinstance(stamp, str) and len(stamp) == 19:
        return stamp.replace(" ", "T")
    diagnosis = ev.get("_diagnosis")
    if diagnosis is None or not diagnosis.incident.lines:
        return None
    for line in diagnosis.incident.lines:
        prefix = records.parse_prefix(line.text)
        if prefix.timestamp and len(prefix.timestamp) == 19:  # "YYYY-MM-DD HH:MM:SS"
            return prefix.timestamp.replace(" ", "T")
    return None


def _version(ev: dict[str, Any]) -> str | None:
    if ev.get("event") == "launch":
        return ev.get("sglang_version")
    rem = ev.get("remediation") or {}
    target = rem.get("target") or {}
    if target.get("version_source") == "log":
        return target.get("sglang_version")
    return None


def _body(ev: dict[str, Any]) -> str:
    kind = ev.get("event")
    if kind == "incident":
        return ev.get("title") or ev.get("rule") or "incident"
    if kind == "launch":
        return f"launch {ev.get('index', 0) + 1} at line {ev.get('line')}"
    if kind == "milestone":
        return DESCRIPTIONS.get(ev.get("name", ""), ev.get("name", ""))
    if kind == "ready":
        return f"the server is ready (line {ev.get('line')})"
    if kind == "confirmed":
        return ev.get("message") or "a provisional incident stands"
    for key in ("text", "reason", "note"):
        if isinstance(ev.get(key), str):
            return ev[key]
    return str(kind)
