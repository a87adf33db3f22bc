"""The best guess's phase prior (sglang_doctor/diagnose/phase_prior.json) from the labels of
the tuned corpus parts: per phase *the tool sees* in the text, how many labelled failures were
of each category (``category``, or ``best_guess_category`` when the cause is not in the text).

The phase is the one the best guess itself reads (diagnose/evidence.context_phase for the
text's primary incident, diagnose/fallback.text_phase for a text with no failure in it), not
the labeller's ``phase``: the labeller knew the thread, the tool knows only the text, and a
prior is only right for what it is conditioned on.  A text that shows no phase counts in the
``none`` row.

Usage: ``python scripts/guess_prior.py [--write] [PART ...]`` (default: dev fresh late field; prints
the JSON, or writes it with ``--write``).  The sealed parts are never read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TUNED_PARTS = ("dev", "fresh", "late", "field")
_LAYER_RANK = {"specific": 2, "class": 1, "fallback": 0}
_SEEN: dict[tuple[str, str], str] = {}  # (part, file) -> the phase the tool sees (one run per file)


def labelled(parts=TUNED_PARTS, root: Path = ROOT) -> list[tuple[str, dict, str]]:
    """(part, label, category scored) for every labelled failure of ``parts`` whose file exists."""
    out = []
    for part in parts:
        if part not in TUNED_PARTS:
            raise SystemExit(f"guess_prior: {part} is not a tuned part ({', '.join(TUNED_PARTS)})")
        with open(root / "corpus" / part / "labels.yaml", encoding="utf-8") as fh:
            labels = yaml.safe_load(fh) or []
        for lab in labels:
            if not isinstance(lab, dict) or lab.get("category") in (None, "none"):
                continue
            cat = lab["category"] if lab.get("evidence_in_log") else lab.get("best_guess_category")
            if cat and (root / "corpus" / part / lab["file"]).is_file():
                out.append((part, lab, cat))
    return out


def primary(diagnoses: list):
    """The diagnosis bench/accuracy.py scores: the most specific layer, then the most confident."""
    ranked = sorted(enumerate(diagnoses), key=lambda p: (-_LAYER_RANK.get(p[1].layer or "fallback", 0),
                                                         -float(p[1].confidence or 0), p[0]))
    return ranked[0][1]


def seen_phase(path: Path) -> str:
    """The phase the best guess reads in the file at ``path``, or ``none``."""
    from sglang_doctor.diagnose.evidence import context_phase
    from sglang_doctor.diagnose.fallback import text_phase
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline, open_log

    if "rules" not in _SEEN:
        _SEEN["rules"] = RuleSet.load([])  # type: ignore[assignment]
    pipe = StreamPipeline(_SEEN["rules"], remediate=False, whole_log=True)
    events = []
    for block in open_log(path):
        events += pipe.feed(block)
    events += pipe.finish()
    diagnoses = [e["_diagnosis"] for e in events if e.get("event") == "incident"]
    if diagnoses:
        found = context_phase(primary(diagnoses))
        return found[0] if found else "none"
    phase, _ = text_phase(pipe.assembler.launches, pipe._tail)
    return phase or "none"


def count(parts=TUNED_PARTS, root: Path = ROOT) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for part, lab, cat in labelled(parts, root):
        key = (part, lab["file"])
        if key not in _SEEN:
            _SEEN[key] = seen_phase(root / "corpus" / part / lab["file"])
        row = out.setdefault(_SEEN[key], {})
        row[cat] = row.get(cat, 0) + 1
    return {phase: dict(sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))) for phase, row in sorted(out.items())}


def data(parts=TUNED_PARTS) -> dict:
    return {"parts": list(parts), "keyed_by": "the phase the tool sees (diagnose/evidence.context_phase)",
            "phase_counts": count(parts)}


def main(argv: list[str]) -> int:
    write = "--write" in argv
    parts = tuple(a for a in argv if a != "--write") or TUNED_PARTS
    text = json.dumps(data(parts), indent=1, sort_keys=False) + "\n"
    if write:
        from sglang_doctor.diagnose.phase_prior import DATA

        DATA.write_text(text, encoding="utf-8")
        print(f"wrote {DATA}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
