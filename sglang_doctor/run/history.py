"""What ``run`` keeps: one log per attempt and a JSON history of the attempts.

Files are replaced atomically (write a temporary file in the same directory, fsync, rename)
so a doctor killed mid-write leaves the previous version whole.  Attempt logs rotate like
logrotate's numbered scheme: the newest attempt is ``LOG``, the one before ``LOG.1``, ...
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sglang_doctor.atomic_file import atomic_write

FORMAT = "sglang-doctor attempts v1"
KEEP_LOGS = 20


def rotate_logs(log: str | os.PathLike, keep: int = KEEP_LOGS) -> None:
    """Shift ``LOG`` -> ``LOG.1`` -> ``LOG.2`` ... before a new attempt writes ``LOG``."""
    log = Path(log)
    if not log.exists():
        return
    oldest = log.with_name(f"{log.name}.{keep}")
    if oldest.exists():
        oldest.unlink()
    for n in range(keep - 1, 0, -1):
        src = log.with_name(f"{log.name}.{n}")
        if src.exists():
            os.replace(src, log.with_name(f"{log.name}.{n + 1}"))
    os.replace(log, log.with_name(f"{log.name}.1"))


def history_path(log: str | os.PathLike) -> Path:
    return Path(f"{log}.attempts.json")


def save(path: str | os.PathLike, attempts: list[dict[str, Any]], **meta: Any) -> None:
    doc = {"format": FORMAT, **meta, "attempts": attempts}
    atomic_write(path, (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode("utf-8"))


def load(path: str | os.PathLike) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("attempts"), list):
        raise ValueError("not an sglang-doctor attempts history")
    return doc


def render(doc: dict[str, Any]) -> str:
    """The history as text, one block per attempt."""
    import shlex

    lines = [f"run of {len(doc['attempts'])} attempt(s); outcome: {doc.get('outcome', 'unknown')}"]
    if doc.get("reason"):
        lines.append(f"reason: {doc['reason']}")
    for att in doc["attempts"]:
        lines.append("")
        secs = att.get("seconds")
        lines.append(f"attempt {att['attempt']}: {att.get('outcome')}" + (f" after {secs:.1f} s" if secs else "")
                     + (f", exit code {att['exit_code']}" if att.get("exit_code") is not None else ""))
        lines.append(f"  command: {shlex.join(att['command'])}")
        if att.get("env"):
            lines.append("  env: " + " ".join(f"{k}={v}" for k, v in att["env"].items()))
        if att.get("log"):
            lines.append(f"  log: {att['log']}")
        inc = att.get("incident")
        if inc:
            lines.append(f"  incident: [{inc.get('category')}] {inc.get('rule')}: {inc.get('title')}")
        if att.get("change"):
            lines.append("  next: " + "; ".join(att["change"]))
    return "\n".join(lines)
