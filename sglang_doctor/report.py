"""Output: rich panels on a terminal, plain text when piped, JSON Lines for programs.

A traceback is always printed whole: every line, chained parts included; the root
exception line and the SGLang frames are highlighted on a terminal.  Formatting is
separate from choosing what to print: ``Reporter.event`` takes CONTRACT.md event dicts.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import IO, Any

from sglang_doctor.export import otel
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


# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, where a terminal
# may read U+009B as CSI)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(value: Any) -> Any:
    """``value`` with every control character a terminal could act on removed from its
    strings (dict keys too; ``_``-prefixed keys are internal and left alone).

    Applied at the output boundary to everything text and rich output print: log text (a
    ``server_args`` string field, a traceback line, a captured figure) must never move the
    cursor, retitle the window or write to the clipboard.  JSON output keeps the raw text;
    ``json.dumps`` escapes it (issue 11 item 12)."""
    if isinstance(value, str):
        return _UNSAFE.sub("", value) if _UNSAFE.search(value) else value
    if isinstance(value, dict):
        return {terminal_safe(k): (v if isinstance(k, str) and k.startswith("_") else terminal_safe(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(terminal_safe(v) for v in value)
    return value


class Reporter:
    """Prints events as they come.  ``progress`` adds milestone lines (watch / run)."""

    def __init__(self, fmt: str | None = None, stream: IO[str] | None = None, *, progress: bool = False):
        self.stream = stream or sys.stdout
        self.format = fmt or default_format(self.stream)
        self.progress = progress
        self._console = None
        self._status = None  # the live "where is the launch now" line (rich, progress mode)
        self._launch_t0: float | None = None
        self.otel = otel.Resource()  # the OTel resource of JSON events; log_path set by the caller
        self.listeners: list = []
        if self.format == "rich":
            from rich.console import Console

            self._console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)

    def event(self, ev: dict) -> None:
        kind = ev.get("event")
        self.notify(ev)
        if self.format == "json":
            if self.otel is not None:
                ev = otel.add_fields(ev, self.otel)
            self.stream.write(to_json_line(ev) + "\n")
            self.stream.flush()
            return
        ev = terminal_safe(ev)  # text and rich: no control character from a log reaches the terminal
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
            self._show_status(f"{DESCRIPTIONS.get(ev.get('name', ''), ev.get('name', ''))} (line {ev['line']})")
        elif kind == "ready":
            self._stop_status()
            self._line(f"ready (line {ev['line']}): the server is fired up", style="bold green")
        elif kind == "capacity" and ev.get("_capacity") is not None:
            from sglang_doctor.remedy.capacity import render_text

            self._line(render_text(ev["_capacity"]))
        elif kind == "summary":
            self._line(summary_text(ev), style="bold")
        elif kind == "status":
            self._line(ev.get("text", ""), style="yellow")
        elif kind == "warning" and ev.get("kind") in ("survived_before_ready", "survived_while_serving", "request_failed"):
            self._line(f"warning: {ev.get('message', '')}", style="yellow")
        elif kind == "confirmed":  # a provisional incident stands (pipeline.py, _confirm)
            self._line(f"confirmed: {ev.get('message', '')}", style="bold red")
        self.stream.flush()

    def notify(self, ev: dict) -> None:
        """Hand an event to the listeners (e.g. the Prometheus exporter), printed or not."""
        for listener in self.listeners:
            listener(ev)

    def _show_status(self, text: str) -> None:
        """A spinner line under the output on a terminal while a launch starts (watch, run).

        Its clock is live: the seconds since the launch was seen, counted at each refresh."""
        if not self.progress or self._console is None or not self._console.is_terminal:
            return
        text = _LiveStatus(text, self._launch_t0)
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
        self._line(terminal_safe(text), style=style)
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
            for renderable, soft in rich_incident(ev, diagnosis):
                self._console.print(renderable, soft_wrap=soft, crop=not soft)
        else:
            self.stream.write(text_incident(ev) + "\n")


class _LiveStatus:
    """The spinner's text, re-rendered at each refresh so that its clock moves."""

    def __init__(self, text: str, t0: float | None):
        self.text = text
        self.t0 = t0

    def __rich__(self):
        from rich.text import Text

        if self.t0 is None:
            return Text(self.text)
        return Text(f"{self.text}, {time.monotonic() - self.t0:.0f} s since the launch was seen")


def run_summary_text(ev: dict) -> str:
    """run's closing line in words: 'ready after 2 attempts', 'gave up after 1 attempt'."""
    n = ev.get("attempts", 0)
    attempts = f"{n} attempt{'s' if n != 1 else ''}"
    outcome = ev.get("outcome")
    head = {"ready": f"the server is ready after {attempts}",
            "gave_up": f"gave up after {attempts}; the server is not running",
            "interrupted": f"interrupted after {attempts}",
            "stopped": f"stopped after {attempts}"}.get(outcome, f"{outcome} after {attempts}")
    changed = ("; changes: " + ", ".join(ev["changes"])) if ev.get("changes") else ""
    reason = str(ev.get("reason"))
    if reason.startswith(f"{outcome}: "):  # "interrupted after 1 attempt: interrupted: ..." said it twice
        reason = reason[len(outcome) + 2:]
    return f"run: {head} ({ev.get('seconds')} s): {reason}{changed}\nhistory: {ev.get('history')}"


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
    lines = ev.get("lines")
    survived = ev.get("survived")
    return f"summary: {n} incident{'s' if n != 1 else ''} in {launches} launch{'es' if launches != 1 else ''}" + (
        f", {lines} line{'s' if lines != 1 else ''} read" if lines is not None else ""
    ) + (f", {survived} warning{'s' if survived != 1 else ''} the server survived" if survived else "") + "".join("\n  " + line for line in fallback_lines(ev) + summary_guarded_lines(ev))


def summary_guarded_lines(ev: dict) -> list[str]:
    """The guarded next step of a no-incident text's best guess (pipeline ``_guarded_step``):
    the same "advice, for you to decide:" lines an incident's remediation gets."""
    rem = (ev.get("fallback") or {}).get("guarded")
    return _remediation_lines(rem) if isinstance(rem, dict) else []


def _changes(rem: dict) -> list[str]:
    """A remediation's changes as pasteable command-line pieces."""
    from sglang_doctor.remedy.launch_command import render_scalar

    out = [flag if value is True else f"{flag} {render_scalar(value)}" for flag, value in (rem.get("set") or {}).items()]
    out += [f"remove {flag}" for flag in rem.get("unset") or []]
    out += [f"{name}={value}" for name, value in (rem.get("env") or {}).items()]
    return out


def _fix_line(rem: dict) -> str | None:
    changes = _changes(rem)
    if changes and rem.get("needs_human"):  # a value only you know, or a step on a guess: never applied
        return "advice, for you to decide: " + "  ".join(changes)
    if changes:
        return "fix: " + "  ".join(changes) + ("" if rem.get("safe", True) else "   (changes behaviour: asks first)")
    if rem.get("needs_human"):
        return "no flag change is proven to help; what to do:"
    return None


def _alternative_text(alt: dict) -> tuple[str, str]:
    return "  ".join(_changes(alt)) or alt.get("note", ""), alt.get("tradeoff") or ""


def _alternative_note(alt: dict) -> str:
    """An alternative's note when its changes are shown instead of it: what the changes assume
    (a value the log does not hold, "if your launch sets it") is said, as for the main fix."""
    return (alt.get("note") or "").strip() if _changes(alt) else ""


def _command_text(rem: dict) -> str | None:
    if not rem.get("command"):
        return None
    from shlex import quote

    return " ".join(quote(a) for a in rem["command"])


_BUDGET_ROW = re.compile(r"^(?P<name>[^(]+?)\s*(?:\((?P<detail>.*)\))?$")


def budget_rows(plan: dict) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(column titles, rows) of the per-GPU budget: the failed launch beside the proposed one."""
    proposed = plan
    failed = plan.get("current") if isinstance(plan.get("current"), dict) else None
    columns = (["failed launch"] if failed else []) + ["proposed launch" if failed else "planned"]
    plans = ([failed] if failed else []) + [proposed]
    order: list[str] = []
    values: dict[str, list[str]] = {}

    def put(name: str, i: int, text: str) -> None:
        if name not in values:
            order.append(name)
            values[name] = [""] * len(plans)
        values[name][i] = text

    def gib_rows(p: dict) -> list[tuple[str, str]]:
        rows = []
        for row in p.get("per_gpu_gib") or p.get("per_gpu_gb") or []:
            m = _BUDGET_ROW.match(str(row.get("name", "")))
            name = (m.group("name") if m else str(row.get("name", ""))).strip()
            rows.append((f"{name} (GiB)", _gib(row.get("gib", row.get("gb")))))
        return rows

    per_plan = [gib_rows(p) for p in plans]
    merged: list[str] = []  # the rows of both plans, each in its place
    for rows in reversed(per_plan):
        previous = None
        for name, _ in rows:
            if name not in merged:
                merged.insert(merged.index(previous) + 1 if previous in merged else len(merged), name)
            previous = name
    for i, p in enumerate(plans):
        put("free before the weights (GiB)", i, _gib(p.get("pre_gib", p.get("pre_gb"))))
        put("pool budget (GiB)", i, _gib(p.get("pool_budget_gib", p.get("pool_budget_gb"))))
    for name in merged:
        put(name, 0, "")
    for i, rows in enumerate(per_plan):
        for name, text in rows:
            put(name, i, text)
    for i, p in enumerate(plans):
        put("--mem-fraction-static", i, f"{p.get('mem_fraction_static', 0):.3f}".rstrip("0").rstrip("."))
        put("KV cache tokens", i, str(p.get("max_total_num_tokens", "")))
        put("running requests", i, str(p.get("max_running_requests", "")))
        if p.get("mamba_cache_size") is not None:
            put("mamba state slots", i, str(p.get("mamba_cache_size")))
        put("fits", i, "yes" if p.get("fits") else f"NO: {(p.get('failing') or 'headroom').replace('_', ' ')}")
    return columns, [(name, values[name]) for name in order]


def _gib(value: Any) -> str:
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return ""


def _inferred_release(rem: dict) -> str | None:
    """"flags for SGLang V, inferred from ..." when the release the flags are spelled for was
    inferred from the traceback's frames (remedy/frame_releases.py), else None."""
    target = rem.get("target") or {}
    found = target.get("inferred_range")
    if target.get("version_source") == "message wording" and isinstance(found, dict):
        return (f"flags for SGLang {target.get('sglang_version')}: the log names no release; its message is "
                f"worded as SGLang {found.get('spec')} print it (inferred)")
    if target.get("version_source") != "frame paths" or not isinstance(found, dict):
        return None
    frames = ", ".join(str(f) for f in (found.get("frames") or [])[:3])
    return (f"flags for SGLang {target.get('sglang_version')}: the log names no release; its traceback "
            f"frames ({frames}) fit SGLang {found.get('spec')} (inferred)")


def _remediation_lines(rem: dict | None) -> list[str]:
    """The remediation as plain text lines (text mode)."""
    if not rem:
        return []
    out: list[str] = []
    fix = _fix_line(rem)
    if fix:
        out.append(fix)
    inferred = _inferred_release(rem)
    if inferred:
        out.append("     " + inferred)
    if rem.get("note"):
        out.append("     " + rem["note"].replace("\n", "\n     "))
    if rem.get("untrusted"):  # docs/DESIGN.md "Trust"
        out.append("     advice only, not applied by run --yes: " + "; ".join(rem["untrusted"]))
    command = _command_text(rem)
    if command:
        out.append("command: " + command)
    for i, alt in enumerate(rem.get("alternatives") or [], 1):
        text, trade = _alternative_text(alt)
        out.append(f"  alternative {i}: {text}" + (f"  -- {trade}" if trade else ""))
        note = _alternative_note(alt)
        if note:
            out.append("       " + note.replace("\n", "\n       "))
    plan = rem.get("plan")
    if isinstance(plan, dict) and (plan.get("per_gpu_gib") or plan.get("per_gpu_gb")):
        columns, rows = budget_rows(plan)
        out.append("memory budget per GPU:")
        width = max(len(name) for name, _ in rows)
        out.append(f"  {'':<{width}}  " + "  ".join(f"{c:>15}" for c in columns))
        for name, vals in rows:
            out.append(f"  {name:<{width}}  " + "  ".join(f"{v:>15}" for v in vals))
    return out


def _header(ev: dict) -> str:
    ranks = ", ".join(ev.get("ranks") or [])
    lines = ev.get("lines") or ["?", "?"]
    bits = [f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}-{lines[1]}"]
    if ranks:
        bits.append(f"ranks {ranks}")
    bits.append(f"phase {ev.get('phase')}")
    bits.append(f"confidence {ev.get('confidence')}")
    if ev.get("truncated"):
        bits.append("TRUNCATED: the end of the traceback is missing")
    if ev.get("truncated_top"):
        bits.append("the start of the traceback is missing")
    return "; ".join(bits)


def serving_line(ev: dict) -> str | None:
    """What the scheduler's last batch lines showed before the failure (incidents/serving.py)."""
    summary = (ev.get("serving") or {}).get("summary")
    return f"serving: {summary}" if summary else None


def traceback_title(ev: dict) -> str:
    """The traceback's label, true to what the log holds of it."""
    end, top = bool(ev.get("truncated")), bool(ev.get("truncated_top"))
    if ev.get("kind") == "signal":  # no Python traceback: the lines that tell of the failure
        n = len((ev.get("traceback") or "").strip("\n").split("\n"))
        return f"the log's line{'s' if n != 1 else ''} about it"
    if end and top:
        return "traceback (a fragment: its start and end are missing from the log)"
    if end:
        return "traceback (its end is missing from the log)"
    if top:
        return "traceback (its start is missing from the log)"
    return "traceback (complete)"


def provisional_line(ev: dict) -> str | None:
    """A live stream's incident that the launch's later lines may show it survived."""
    until = ev.get("provisional")
    if until == "ready":
        return ("provisional: SGLang logs failures it handles and goes on from; if this launch prints its ready "
                "line after it, this was a warning it survived (a line will say so)")
    if until == "serving":
        return ("provisional: SGLang logs failures it handles and goes on from; if the scheduler goes on logging "
                "batches after it, this was a failure the server survived (a line will say so)")
    return None


def text_incident(ev: dict) -> str:
    out = [
        f"-- incident [{ev.get('category')}] {ev.get('rule')}: {ev.get('title')}",
        "   " + _header(ev),
    ]
    if provisional_line(ev):
        out.append("   " + provisional_line(ev))
    if serving_line(ev):
        out.append("   " + serving_line(ev))
    if ev.get("explanation"):
        out.append("   " + ev["explanation"].strip().replace("\n", "\n   "))
    out += ["   " + line for line in fallback_lines(ev)]
    if (ev.get("traceback") or "").strip():
        out.append(f"   {traceback_title(ev)}:")
        out += ["   | " + line for line in (ev.get("traceback") or "").split("\n")]
    out += ["   " + line for line in _remediation_lines(ev.get("remediation"))]
    return "\n".join(out)


def rich_incident(ev: dict, diagnosis: Diagnosis | None) -> list[tuple[Any, bool]]:
    """The incident for a terminal: (renderable, soft_wrap) pairs, printed in order.

    Everything wraps at the terminal's width (never cut at a border); the fixed command is
    printed on its own, outside any panel and without line breaks of ours, so that copying
    it from the terminal gives the command that runs.
    """
    from rich.console import Group
    from rich.panel import Panel
    from rich.text import Text

    exc = ev.get("exception") or {}
    root_line = f"{exc.get('type')}: {exc.get('message', '').splitlines()[0] if exc.get('message') else ''}" if exc else None
    parts: list[Any] = [Text(_header(ev), style="dim")]
    if provisional_line(ev):
        parts.append(Text(provisional_line(ev), style="yellow"))
    if serving_line(ev):
        parts.append(Text(serving_line(ev), style="dim"))
    if ev.get("explanation"):
        parts.append(Text(ev["explanation"].strip()))
    if fallback_lines(ev):
        parts.append(Text("\n".join(fallback_lines(ev)), style="yellow"))
    tb = (ev.get("traceback") or "").rstrip("\n")
    if tb.strip():
        body = Text(overflow="fold", no_wrap=False)
        for line in tb.split("\n"):
            style = ""
            if root_line and line.strip().startswith(root_line.strip()[:60]) and exc.get("type"):
                style = "bold red"
            elif "/sglang/" in line and 'File "' in line:
                style = "yellow"
            body.append(line + "\n", style=style)
        body.rstrip()
        incomplete = ev.get("truncated") or ev.get("truncated_top")
        parts.append(Panel(body, title=traceback_title(ev), title_align="left",
                           border_style="yellow" if incomplete else "dim"))
    out: list[tuple[Any, bool]] = [(Panel(Group(*parts), title=Text(f"[{ev.get('category')}] {ev.get('title')}"),
                                          subtitle=ev.get("rule"), title_align="left", border_style="red"), False)]
    rem = ev.get("remediation")
    if rem:
        out += _rich_remediation(rem)
    return out


def _rich_remediation(rem: dict) -> list[tuple[Any, bool]]:
    from rich.table import Table
    from rich.text import Text

    out: list[tuple[Any, bool]] = []
    fix = _fix_line(rem)
    if fix:
        out.append((Text(fix, style="bold green"), False))
    inferred = _inferred_release(rem)
    if inferred:
        out.append((_hanging("  ", inferred), False))
    for line in (rem.get("note") or "").split("\n"):
        if line.strip():
            out.append((_hanging("  ", line), False))
    command = _command_text(rem)
    if command:
        out.append((Text("fixed command (copy the whole next line):", style="green"), False))
        out.append((Text(command), True))  # one line of ours: the terminal wraps it, copying joins it
    alternatives = rem.get("alternatives") or []
    if alternatives:
        out.append((Text("alternatives:", style="green"), False))
    for i, alt in enumerate(alternatives, 1):
        text, trade = _alternative_text(alt)
        style = "yellow" if "UNPROVEN" in trade else ""
        out.append((_hanging(f"  {i}. ", text, style=style), False))
        for line in _alternative_note(alt).split("\n"):
            if line.strip():
                out.append((_hanging("     ", line), False))
        if trade:
            out.append((_hanging("     ", trade, style="dim"), False))
    plan = rem.get("plan")
    if isinstance(plan, dict) and (plan.get("per_gpu_gib") or plan.get("per_gpu_gb")):
        columns, rows = budget_rows(plan)
        table = Table(title="memory budget per GPU", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("", overflow="fold")
        for c in columns:
            table.add_column(c, justify="right", no_wrap=True)
        for name, vals in rows:
            table.add_row(name, *vals, style="red" if any(v.startswith("NO") for v in vals[-1:]) else None)
        out.append((table, False))
    return out


def _hanging(prefix: str, text: str, style: str = ""):
    """Text wrapped under its own first character, not under the prefix."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(prefix), Text(text, style=style))
    return Padding(grid, 0)


def fallback_lines(ev: dict) -> list[str]:
    """The honest fallback (diagnose/fallback.py): what is missing, the best guess, the next step."""
    fb = ev.get("fallback")
    if not fb:
        return []
    out = []
    if fb.get("missing"):
        out.append(f"missing: {fb['missing']}")
    guess = fb.get("best_guess") or {}
    if guess:
        out.append(f"best guess: {guess.get('category')} (confidence {guess.get('confidence')}): {guess.get('why')}")
        if guess.get("rests_on"):
            out.append(f"the guess rests on: {guess['rests_on']}")
    if fb.get("next_step"):
        out.append(f"next step: {fb['next_step']}")
    return out


def remediation_text(rem: Remediation | None) -> str:
    return "\n".join(_remediation_lines(rem.to_json() if rem else None))
