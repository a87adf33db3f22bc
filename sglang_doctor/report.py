"""Output: rich panels on a terminal, plain text when piped, JSON Lines for programs.

A traceback is always printed whole: every line, chained parts included; the root
exception line and the SGLang frames are highlighted on a terminal.  Formatting is
separate from choosing what to print: ``Reporter.event`` takes CONTRACT.md event dicts.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import IO, Any

from sglang_doctor.incidents.milestones import DESCRIPTIONS
from sglang_doctor.model import Diagnosis, Remediation

FORMATS = ("rich", "text", "json")


def default_format(stream: IO[str]) -> str:
    try:
        return "rich" if stream.isatty() else "text"
    except (AttributeError, ValueError):
        return "text"


def public(event: dict) -> dict:
    return {k: v for k, v in event.items() if not k.startswith("_")}


def to_json_line(event: dict) -> str:
    return json.dumps(public(event), default=_json_default, ensure_ascii=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


class Reporter:
    """Prints events as they come.  ``progress`` adds milestone lines (watch / run)."""

    def __init__(self, fmt: str | None = None, stream: IO[str] | None = None, *, progress: bool = False):
        self.stream = stream or sys.stdout
        self.format = fmt or default_format(self.stream)
        self.progress = progress
        self._console = None
        self._status = None  # the live "where is the launch now" line (rich, progress mode)
        self._launch_t0: float | None = None
        if self.format == "rich":
            from rich.console import Console

            self._console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                                    soft_wrap=True)

    def event(self, ev: dict) -> None:
        kind = ev.get("event")
        if self.format == "json":
            self.stream.write(to_json_line(ev) + "\n")
            self.stream.flush()
            return
        if kind == "incident":
            self._stop_status()
            self._incident(ev)
        elif kind == "launch":
            self._launch_t0 = time.monotonic()
            self._line(launch_text(ev), style="bold cyan")
            self._show_status("launch seen, starting")
        elif kind == "milestone" and self.progress:
            if self._launch_t0 is None:
                self._launch_t0 = time.monotonic()
            elapsed = time.monotonic() - self._launch_t0
            self._line(milestone_text(ev) + f"  [+{elapsed:.0f} s]", style="dim")
            self._show_status(f"{DESCRIPTIONS.get(ev.get('name', ''), ev.get('name', ''))} "
                              f"(line {ev['line']}, {elapsed:.0f} s since the launch)")
        elif kind == "ready":
            self._stop_status()
            self._line(f"ready (line {ev['line']}): the server is fired up", style="bold green")
        elif kind == "summary":
            self._line(summary_text(ev), style="bold")
        elif kind == "status":
            self._line(ev.get("text", ""), style="yellow")
        self.stream.flush()

    def _show_status(self, text: str) -> None:
        """A spinner line under the output on a terminal while a launch starts (watch, run)."""
        if not self.progress or self._console is None or not self._console.is_terminal:
            return
        if self._status is None:
            import atexit

            self._status = self._console.status(text, spinner="dots")
            self._status.start()
            atexit.unregister(self._stop_status)  # once per reporter, however many launches
            atexit.register(self._stop_status)
        else:
            self._status.update(text)

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def close(self) -> None:
        self._stop_status()

    def message(self, text: str, style: str = "") -> None:
        if self.format == "json":
            return
        self._line(text, style=style)
        self.stream.flush()

    # -- internals ---------------------------------------------------------------------

    def _line(self, text: str, style: str = "") -> None:
        if self._console is not None:
            from rich.text import Text

            self._console.print(Text(text, style=style))
        else:
            self.stream.write(text + "\n")

    def _incident(self, ev: dict) -> None:
        diagnosis: Diagnosis | None = ev.get("_diagnosis")
        if self._console is not None:
            self._console.print(rich_incident(ev, diagnosis))
        else:
            self.stream.write(text_incident(ev) + "\n")


def launch_text(ev: dict) -> str:
    args = ev.get("server_args") or {}
    bits = [f"launch {ev.get('index', 0) + 1} at line {ev.get('line')}"]
    if ev.get("log_style"):
        bits.append(ev["log_style"])
    if ev.get("sglang_version_range"):  # issue 14: the releases the dump's fields fit
        bits.append(f"SGLang {ev['sglang_version_range']}")
    for key in ("model_path", "tp_size", "mem_fraction_static", "context_length", "speculative_algorithm"):
        if args.get(key) not in (None, "", False):
            bits.append(f"{key}={args[key]}")
    return "== " + ", ".join(bits)


def milestone_text(ev: dict) -> str:
    name = ev.get("name", "")
    desc = DESCRIPTIONS.get(name, name)
    figures = {k: v for k, v in ev.items() if k not in ("event", "line", "name", "launch", "rank")}
    shown = ", ".join(f"{k}={v}" for k, v in figures.items() if k != "timings")
    rank = f" [{ev['rank']}]" if ev.get("rank") else ""
    return f"  line {ev['line']}{rank}: {desc}" + (f" ({shown})" if shown else "")


def summary_text(ev: dict) -> str:
    n = ev.get("incidents", 0)
    launches = ev.get("launches", 0)
    return f"summary: {n} incident{'s' if n != 1 else ''} in {launches} launch{'es' if launches != 1 else ''}" + (
        f", {ev['lines']} lines read" if "lines" in ev else ""
    )


def _remediation_lines(rem: dict | None) -> list[str]:
    if not rem:
        return []
    out: list[str] = []
    changes = []
    for flag, value in (rem.get("set") or {}).items():
        changes.append(flag if value is True else f"{flag} {value}")
    for flag in rem.get("unset") or []:
        changes.append(f"remove {flag}")
    for name, value in (rem.get("env") or {}).items():
        changes.append(f"{name}={value}")
    if changes:
        out.append("fix: " + "  ".join(changes) + ("" if rem.get("safe", True) else "   (changes behaviour: asks first)"))
    if rem.get("note"):
        out.append("     " + rem["note"].replace("\n", "\n     "))
    if rem.get("command"):
        from shlex import quote

        out.append("command: " + " ".join(quote(a) for a in rem["command"]))
    for i, alt in enumerate(rem.get("alternatives") or [], 1):
        alt_changes = [f if v is True else f"{f} {v}" for f, v in (alt.get("set") or {}).items()]
        alt_changes += [f"remove {f}" for f in alt.get("unset") or []]
        alt_changes += [f"{k}={v}" for k, v in (alt.get("env") or {}).items()]
        text = "  ".join(alt_changes) or alt.get("note", "")
        trade = f"  -- {alt['tradeoff']}" if alt.get("tradeoff") else ""
        out.append(f"  alternative {i}: {text}{trade}")
    plan = rem.get("plan")
    if isinstance(plan, dict) and plan.get("per_gpu_gb"):
        out.append("planned memory budget per GPU (GB):")
        for row in plan["per_gpu_gb"]:
            out.append(f"  {row.get('name', ''):<40} {row.get('gb', 0):>8.2f}")
        out.append(f"  {'headroom':<40} {plan.get('headroom_gb', 0):>8.2f}"
                   + ("" if plan.get("fits") else "   DOES NOT FIT"))
    return out


def _header(ev: dict) -> str:
    ranks = ", ".join(ev.get("ranks") or [])
    lines = ev.get("lines") or ["?", "?"]
    bits = [f"lines {lines[0]}-{lines[1]}"]
    if ranks:
        bits.append(f"ranks {ranks}")
    bits.append(f"phase {ev.get('phase')}")
    bits.append(f"confidence {ev.get('confidence')}")
    if ev.get("truncated"):
        bits.append("TRUNCATED: the end of the traceback is missing")
    if ev.get("truncated_top"):
        bits.append("the start of the traceback is missing")
    return "; ".join(bits)


def text_incident(ev: dict) -> str:
    out = [
        f"-- incident [{ev.get('category')}] {ev.get('rule')}: {ev.get('title')}",
        "   " + _header(ev),
    ]
    if ev.get("explanation"):
        out.append("   " + ev["explanation"].strip().replace("\n", "\n   "))
    out.append("   traceback:")
    out += ["   | " + line for line in (ev.get("traceback") or "").split("\n")]
    out += ["   " + line for line in _remediation_lines(ev.get("remediation"))]
    return "\n".join(out)


def rich_incident(ev: dict, diagnosis: Diagnosis | None):
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    exc = ev.get("exception") or {}
    root_line = f"{exc.get('type')}: {exc.get('message', '').splitlines()[0] if exc.get('message') else ''}" if exc else None
    body = Text()
    for line in (ev.get("traceback") or "").split("\n"):
        style = ""
        if root_line and line.strip().startswith(root_line.strip()[:60]) and exc.get("type"):
            style = "bold red"
        elif "/sglang/" in line and 'File "' in line:
            style = "yellow"
        body.append(line + "\n", style=style)
    parts = [Text(_header(ev), style="dim")]
    if ev.get("explanation"):
        parts.append(Text(ev["explanation"].strip()))
    parts.append(Panel(body, title="traceback (complete)", title_align="left", border_style="dim"))
    rem = _remediation_lines(ev.get("remediation"))
    if rem:
        parts.append(Text("\n".join(rem), style="green"))
    return Panel(Group(*parts), title=f"[{ev.get('category')}] {ev.get('title')}", subtitle=ev.get("rule"),
                 title_align="left", border_style="red")


def remediation_text(rem: Remediation | None) -> str:
    return "\n".join(_remediation_lines(rem.to_json() if rem else None))
