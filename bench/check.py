"""Hold ``explain --format json`` output to a generated log's manifest.

A fast answer only counts when it is also right: every planted incident must be reported
once, with exactly its line span, its ranks, its root exception, untruncated, and with every
one of its lines in the traceback text.  Incidents the generator did not plant are allowed
(none are expected) but listed.

``python bench/check.py LOG OUTPUT.jsonl`` prints the verdict; ``check`` returns it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def load_manifest(log: Path) -> dict:
    return json.loads(Path(str(log) + ".manifest.json").read_text(encoding="utf-8"))


def check(manifest: dict, output_lines: list[str]) -> list[str]:
    """Problems found (an empty list means every planted incident was found whole)."""
    reported = [json.loads(line) for line in output_lines if line.strip()]
    incidents = {tuple(ev["lines"]): ev for ev in reported if ev.get("event") == "incident"}
    problems: list[str] = []
    for want in manifest["incidents"]:
        span = tuple(want["lines"])
        where = f"{want['variant']} at lines {span[0]}-{span[1]}"
        got = incidents.pop(span, None)
        if got is None:
            near = [s for s in incidents if s[0] <= span[1] and s[1] >= span[0]]
            problems.append(f"{where}: not reported" + (f" (overlapping report: {near})" if near else ""))
            continue
        if sorted(got.get("ranks") or []) != sorted(want["ranks"]):
            problems.append(f"{where}: ranks {got.get('ranks')} != {want['ranks']}")
        exc = (got.get("exception") or {}).get("type")
        if want["exception"] is not None and exc != want["exception"]:
            problems.append(f"{where}: exception {exc} != {want['exception']}")
        if got.get("truncated"):
            problems.append(f"{where}: reported as truncated")
        text = got.get("traceback") or ""
        missing = [t for t in want["text"] if t not in text]
        if missing:
            problems.append(f"{where}: {len(missing)} of its lines missing from the traceback, e.g. {missing[0][:80]!r}")
    summary = [ev for ev in reported if ev.get("event") == "summary"]
    if not summary:
        problems.append("no summary event")
    elif summary[-1].get("lines") not in (None, manifest["lines"]):
        problems.append(f"summary counts {summary[-1]['lines']} lines, the file has {manifest['lines']}")
    for span in incidents:
        problems.append(f"unplanted incident reported at lines {span[0]}-{span[1]}")
    return problems


def main() -> None:
    log, output = Path(sys.argv[1]), Path(sys.argv[2])
    problems = check(load_manifest(log), output.read_text(encoding="utf-8").splitlines())
    for p in problems:
        print(p)
    print("OK: every planted incident found whole" if not problems else f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
