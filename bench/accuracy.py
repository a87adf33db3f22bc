"""How sglang-doctor does on the corpus of real pasted logs (corpus/, see corpus/README.md).

Runs ``python -m sglang_doctor explain --format json FILE`` on every file of a part (a real
subprocess with a timeout each, as a user would run it), and compares the answer with the
part's ``labels.yaml``:

- category: the category of the answer's primary incident (the most confident incident of a
  rule or class layer; the fallback's best guess counts only for no-cause fragments) against
  the label, for the files whose cause is in the text (``evidence_in_log: true``);
- fix: for the files whose labels give ``fix_flags`` / ``fix_env``, a hit when every labelled
  flag and variable is in the remediation's ``set`` / ``unset`` / ``env`` or in its first
  alternative (numbers compared loosely: any number; ``null`` means the flag is unset;
  ``<...>`` placeholders accept any value, but ``<lower ...>`` / ``<higher ...>`` not a change
  the other way; a comma-separated value such as ``no_proxy``'s is compared as a set of items).
  The remediation is the primary incident's, or, for a text that formed no incident, the
  guarded step of the summary's fallback (``fallback.guarded``).  Fix hits are split into
  firm (a rule named the failure) and guarded (advice on the fallback's best guess, "if this
  is X: try Y", needs_human);
- false alarms: healthy logs (category ``none``) that produce any incident;
- crashes: an exit status other than 0/1, a timeout, or a Python traceback on stderr;
- no-cause fragments (``evidence_in_log: false``): whether the honest fallback was given
  (the incident carries ``"fallback"``) and whether its best guess is ``best_guess_category``.

Usage: ``python bench/accuracy.py [--part dev|heldout|fresh|late|blind|unseen|sealed8|sealed9|sealed10|sealed11|sealed12|sealed13|sealed14|sealed15|sealed16|sealed17|sealed18|sealed19|sealed20|sealed21|sealed22|sealed23|sealed24|sealed25|sealed26|sealed27|sealed28|sealed29|sealed30|sealed31|sealed32|sealed33|sealed34|sealed35|sealed36|sealed37|sealed38|sealed39|sealed40|sealed41|sealed42|sealed43|sealed44|sealed45|sealed46|field|field9|field10|notes10|field11|field12|field13|field14|field15|field16|field17|field18|field19|field20|field21|field22|field23|field24|field25|field26|field27|field28|field29|field30|field31|field32|field33|field34|field35|field36|field37|field38|field39|all] [--json] [--verbose]``.
The held-back part is for the final figure only: never tune on its per-file details.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
PARTS = ("dev", "heldout", "fresh", "late", "blind", "unseen", "sealed8", "sealed9", "sealed10", "sealed11", "sealed12", "sealed13", "sealed14", "sealed15", "sealed16", "sealed17", "sealed18", "sealed19", "sealed20", "sealed21", "sealed22", "sealed23", "sealed24", "sealed25", "sealed26", "sealed27", "sealed28", "sealed29", "sealed30", "sealed31", "sealed32", "sealed33", "sealed34", "sealed35", "sealed36", "sealed37", "sealed38", "sealed39", "sealed40", "sealed41", "sealed42", "sealed43", "sealed44", "sealed45", "sealed46", "field", "field9", "field10", "notes10", "field11", "field12", "field13", "field14", "field15", "field16", "field17", "field18", "field19", "field20", "field21", "field22", "field23", "field24", "field25", "field26", "field27", "field28", "field29", "field30", "field31", "field32", "field33", "field34", "field35", "field36", "field37", "field38", "field39")
TIMEOUT_S = 60


@dataclass
class FileResult:
    file: str
    part: str
    category: str  # the label's
    evidence: bool
    predicted: str | None = None  # the primary incident's category (None: no incident)
    rule: str | None = None
    layer: str | None = None
    exit_code: int | None = None
    crash: str | None = None
    fallback: dict | None = None
    best_guess_label: str | None = None
    fix_wanted: bool = False
    fix_hit: bool | None = None
    fix_from: str | None = None  # "firm" (a rule's remediation) or "guarded" (advice on a best guess)
    fix_miss: str | None = None  # why a wanted fix was missed (see ``fix_miss_kind``)
    incidents: int = 0
    fallback_from_summary: bool = False  # no incident; the summary's fallback answered
    notes: list[str] = field(default_factory=list)

    @property
    def category_hit(self) -> bool:
        return self.predicted == self.category

    @property
    def guess(self) -> str | None:
        if self.fallback:
            return (self.fallback.get("best_guess") or {}).get("category")
        return None


# -- running the tool ----------------------------------------------------------------------


def run_tool(path: Path, timeout: float = TIMEOUT_S) -> tuple[int | None, str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("NO_COLOR", "1")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(path)],
            capture_output=True, text=True, timeout=timeout, env=env, cwd=str(ROOT),
        )
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return proc.returncode, proc.stdout, proc.stderr


def parse_events(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


_LAYER_RANK = {"specific": 2, "class": 1, "fallback": 0}


def primary_incident(incidents: list[dict]) -> dict | None:
    """The incident a reader takes as the answer: rule layers before the fallback, then the
    most confident, then the first."""
    best = None
    best_key = None
    for i, inc in enumerate(incidents):
        layer = inc.get("layer") or ("fallback" if inc.get("rule") == "unknown" else "specific")
        key = (_LAYER_RANK.get(layer, 0), float(inc.get("confidence") or 0), -i)
        if best_key is None or key > best_key:
            best, best_key = inc, key
    return best


# -- comparing -----------------------------------------------------------------------------


def _value_matches(wanted, got) -> bool:
    if isinstance(wanted, bool) or isinstance(got, bool):
        return str(wanted).lower() == str(got).lower() or (wanted is True and got in ("", None))
    if isinstance(wanted, (int, float)):
        try:
            float(got)
            return True
        except (TypeError, ValueError):
            return False
    if isinstance(wanted, str) and wanted.startswith("<") and wanted.endswith(">"):
        return True
    wanted, got = str(wanted).strip().lower(), str(got).strip().lower()
    if "," in wanted:  # a list value (no_proxy=a,b): the order of its items does not matter
        return {w.strip() for w in wanted.split(",")} == {g.strip() for g in got.split(",")}
    return wanted == got


def _wrong_way(wanted, rem: dict) -> bool:
    """A ``<lower ...>`` / ``<higher ...>`` placeholder and a change the other way."""
    if not (isinstance(wanted, str) and wanted.startswith("<")):
        return False
    words = wanted[1:].lower()
    if words.startswith(("lower", "smaller", "less")):
        return rem.get("remedy") == "raise_flag"
    if words.startswith(("higher", "larger", "more", "raise")):
        return rem.get("remedy") == "lower_flag"
    return False


def _remediation_has(rem: dict, flags: dict, env: dict) -> bool:
    sets = rem.get("set") or {}
    unset = set(rem.get("unset") or [])
    envs = rem.get("env") or {}
    for flag, value in (flags or {}).items():
        if value is None:
            if flag not in unset:
                return False
        elif flag not in sets or not _value_matches(value, sets[flag]) or _wrong_way(value, rem):
            return False
    for name, value in (env or {}).items():
        if name not in envs or (value is not None and not _value_matches(value, envs[name])):
            return False
    return True


def fix_hit(incident: dict | None, flags: dict, env: dict) -> bool:
    return remediation_hit((incident or {}).get("remediation"), flags, env)


def remediation_hit(rem: dict | None, flags: dict, env: dict) -> bool:
    if not rem:
        return False
    if _remediation_has(rem, flags, env):
        return True
    alts = rem.get("alternatives") or []
    return bool(alts) and _remediation_has(alts[0], flags, env)


def score_file(path: Path, label: dict, part: str, timeout: float) -> FileResult:
    res = FileResult(file=path.name, part=part, category=label["category"], evidence=bool(label.get("evidence_in_log")),
                     best_guess_label=label.get("best_guess_category"))
    code, stdout, stderr = run_tool(path, timeout)
    res.exit_code = code
    if code is None:
        res.crash = stderr
    elif code not in (0, 1):
        res.crash = f"exit {code}: {stderr.strip()[-300:]}"
    elif "Traceback (most recent call last)" in stderr:
        res.crash = f"traceback on stderr: {stderr.strip()[-300:]}"
    events = parse_events(stdout)
    incidents = [e for e in events if e.get("event") == "incident"]
    res.incidents = len(incidents)
    if not incidents:  # a text with no failure: the summary may say where its cause would be
        summary = next((e for e in events if e.get("event") == "summary"), {})
        res.fallback = summary.get("fallback")
        res.fallback_from_summary = res.fallback is not None
    primary = primary_incident(incidents)
    if primary is not None:
        res.predicted = primary.get("category")
        res.rule = primary.get("rule")
        res.layer = primary.get("layer")
        res.fallback = primary.get("fallback") or next((i.get("fallback") for i in incidents if i.get("fallback")), None)
    flags, env = label.get("fix_flags") or {}, label.get("fix_env") or {}
    if flags or env:
        res.fix_wanted = True
        if primary is not None:
            res.fix_hit = fix_hit(primary, flags, env)
            guessed = primary.get("rule") == "unknown" or primary.get("layer") == "fallback"
        else:  # no incident: the guarded step of the summary's fallback, if its guess has one
            res.fix_hit = remediation_hit((res.fallback or {}).get("guarded"), flags, env)
            guessed = True
        if res.fix_hit:
            res.fix_from = "guarded" if guessed else "firm"
        else:
            rem = (primary or {}).get("remediation") if primary is not None else (res.fallback or {}).get("guarded")
            res.fix_miss = fix_miss_kind(res, rem, flags, env)
    return res


def fix_miss_kind(res: FileResult, rem: dict | None, flags: dict, env: dict) -> str:
    """Why a wanted fix was missed, in a few words an aggregate can count without naming a file:
    the answer's category was wrong, no remediation came, or it came without the labelled
    flags / variables, or it named them with another value or direction."""
    if res.evidence and not res.category_hit:
        return "wrong category"
    if not rem or not (rem.get("set") or rem.get("unset") or rem.get("env")):
        return "no flag change"
    named = set(rem.get("set") or {}) | set(rem.get("unset") or []) | set(rem.get("env") or {})
    for alt in (rem.get("alternatives") or [])[:1]:
        named |= set(alt.get("set") or {}) | set(alt.get("unset") or []) | set(alt.get("env") or {})
    wanted = set(flags or {}) | set(env or {})
    if wanted <= named:
        return "right flags, other value or direction"
    if wanted & named:
        return "some of the flags"
    return "other flags"


# -- the report ----------------------------------------------------------------------------


def load_labels(part: str) -> list[dict]:
    path = CORPUS / part / "labels.yaml"
    if not path.is_file():
        return []
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or []
    return [d for d in data if isinstance(d, dict) and d.get("file")]


def score_part(part: str, timeout: float = TIMEOUT_S, jobs: int = 2) -> list[FileResult]:
    labels = [lab for lab in load_labels(part) if (CORPUS / part / lab["file"]).is_file()]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda lab: score_file(CORPUS / part / lab["file"], lab, part, timeout), labels))


def _ratio(hits: int, total: int) -> dict:
    return {"hits": hits, "total": total, "rate": round(hits / total, 4) if total else None}


def summarize(results: list[FileResult]) -> dict:
    failing = [r for r in results if r.category != "none"]
    evident = [r for r in failing if r.evidence]
    no_cause = [r for r in failing if not r.evidence]
    healthy = [r for r in results if r.category == "none"]
    alarms = defaultdict(int)
    for r in healthy:
        if r.incidents:
            alarms[r.predicted or "unknown"] += 1
    fixes = [r for r in results if r.fix_wanted]
    per_cat: dict[str, dict] = {}
    by_cat = defaultdict(list)
    for r in results:
        by_cat[r.category].append(r)
    for cat, rs in sorted(by_cat.items()):
        if cat == "none":
            per_cat[cat] = {"files": len(rs), "false_alarms": sum(r.incidents > 0 for r in rs)}
            continue
        ev = [r for r in rs if r.evidence]
        nc = [r for r in rs if not r.evidence]
        fx = [r for r in rs if r.fix_wanted]
        predicted = defaultdict(int)
        for r in ev:
            if not r.category_hit:
                predicted[r.predicted or "no incident"] += 1
        guessed = defaultdict(int)
        for r in nc:
            if r.guess != r.best_guess_label:
                guessed[r.guess or "no guess"] += 1
        misses = defaultdict(int)
        for r in fx:
            if r.fix_miss:
                misses[r.fix_miss] += 1
        per_cat[cat] = {
            "files": len(rs),
            "category": _ratio(sum(r.category_hit for r in ev), len(ev)),
            "no_cause_guess": _ratio(sum(r.guess == r.best_guess_label for r in nc), len(nc)),
            "fix": _ratio(sum(bool(r.fix_hit) for r in fx), len(fx)),
            "missed_as": dict(sorted(predicted.items())),  # answered category of the category misses
            "fix_missed_because": dict(sorted(misses.items())),
            "guessed_as": dict(sorted(guessed.items())),  # the best guess of the no-cause misses
        }
    return {
        "files": len(results),
        "category": _ratio(sum(r.category_hit for r in evident), len(evident)),
        "fix": _ratio(sum(bool(r.fix_hit) for r in fixes), len(fixes)),
        "fix_from": {"firm": sum(r.fix_from == "firm" for r in fixes),
                     "guarded": sum(r.fix_from == "guarded" for r in fixes)},
        "false_alarms": {"count": sum(r.incidents > 0 for r in healthy), "healthy": len(healthy),
                         "as": dict(sorted(alarms.items()))},
        "crashes": sum(r.crash is not None for r in results),
        "no_cause": {
            "total": len(no_cause),
            "fallback_given": _ratio(sum(r.fallback is not None for r in no_cause), len(no_cause)),
            "fallback_in_summary": sum(r.fallback_from_summary for r in no_cause),
            "best_guess_right": _ratio(sum(r.guess == r.best_guess_label for r in no_cause), len(no_cause)),
            "category_right": _ratio(sum(r.predicted == r.best_guess_label for r in no_cause), len(no_cause)),
        },
        "per_category": per_cat,
    }


def _fmt(r: dict) -> str:
    if not r["total"]:
        return "   -   "
    return f"{r['hits']:>3}/{r['total']:<3} {100 * r['rate']:5.1f}%"


def print_summary(part: str, s: dict) -> None:
    print(f"== {part}: {s['files']} files")
    print(f"  category (cause in text)   {_fmt(s['category'])}")
    src = s["fix_from"]
    print(f"  fix (labels give one)      {_fmt(s['fix'])}   "
          f"(hits: {src['firm']} firm fix, {src['guarded']} guarded advice on a best guess)")
    print(f"  false alarms on healthy    {s['false_alarms']['count']} of {s['false_alarms']['healthy']}")
    print(f"  crashes                    {s['crashes']}")
    nc = s["no_cause"]
    print(f"  no-cause fragments         {nc['total']}: fallback given {_fmt(nc['fallback_given'])} "
          f"({nc['fallback_in_summary']} of them with no incident, in the summary), "
          f"best guess right {_fmt(nc['best_guess_right'])}")
    print("  per category:                 category        no-cause guess    fix")
    for cat, c in s["per_category"].items():
        if cat == "none":
            print(f"    {cat:<24} {c['files']:>3} files, {c['false_alarms']} false alarm(s)")
        else:
            print(f"    {cat:<24} {_fmt(c['category']):>15}  {_fmt(c['no_cause_guess']):>15}  {_fmt(c['fix']):>15}")
            if c["missed_as"]:
                print(f"      missed as: " + ", ".join(f"{k} {v}" for k, v in c["missed_as"].items()))
            if c["guessed_as"]:
                print(f"      no-cause guessed as: " + ", ".join(f"{k} {v}" for k, v in c["guessed_as"].items()))
            if c["fix_missed_because"]:
                print(f"      fix missed: " + ", ".join(f"{k} {v}" for k, v in c["fix_missed_because"].items()))


def print_verbose(results: list[FileResult]) -> None:
    for r in results:
        marks = []
        if r.category == "none":
            marks.append("ok" if r.incidents == 0 else f"FALSE ALARM ({r.incidents} incident(s), {r.predicted}/{r.rule})")
        elif r.evidence:
            marks.append(("hit" if r.category_hit else "MISS") + f" {r.predicted}/{r.rule} [{r.layer}]")
        else:
            guess = r.guess
            marks.append(("guess-ok" if guess == r.best_guess_label else "GUESS-MISS")
                         + f" fallback={'yes' if r.fallback else 'NO'} guess={guess} answer={r.predicted}/{r.rule}")
        if r.fix_wanted:
            marks.append(f"fix-hit ({r.fix_from})" if r.fix_hit else "FIX-MISS")
        if r.crash:
            marks.append(f"CRASH {r.crash[:200]}")
        print(f"  {r.file[:64]:<64} [{r.category}] " + "; ".join(marks))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("dev", "heldout", "fresh", "late", "blind", "unseen", "sealed8", "sealed9", "sealed10", "sealed11", "sealed12", "sealed13", "sealed14", "sealed15", "sealed16", "sealed17", "sealed18", "sealed19", "sealed20", "sealed21", "sealed22", "sealed23", "sealed24", "sealed25", "sealed26", "sealed27", "sealed28", "sealed29", "sealed30", "sealed31", "sealed32", "sealed33", "sealed34", "sealed35", "sealed36", "sealed37", "sealed38", "sealed39", "sealed40", "sealed41", "sealed42", "sealed43", "sealed44", "sealed45", "sealed46", "field", "field9", "field10", "notes10", "field11", "field12", "field13", "field14", "field15", "field16", "field17", "field18", "field19", "field20", "field21", "field22", "field23", "field24", "field25", "field26", "field27", "field28", "field29", "field30", "field31", "field32", "field33", "field34", "field35", "field36", "field37", "field38", "field39", "all"), default="dev")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--verbose", action="store_true", help="per-file details (use on dev only)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per file")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"accuracy: no corpus at {CORPUS}", file=sys.stderr)
        return 2
    parts = PARTS if args.part == "all" else (args.part,)
    out = {}
    for part in parts:
        results = score_part(part, args.timeout, args.jobs)
        out[part] = summarize(results)
        if not args.json:
            print_summary(part, out[part])
            if args.verbose:
                print_verbose(results)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
