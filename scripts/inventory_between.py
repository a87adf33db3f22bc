#!/usr/bin/env python3
"""The failure messages of the SGLang releases the inventory does not read.

scripts/inventory_failures.py inventories five releases (0.4.3.post2, 0.4.6.post5, 0.5.4,
0.5.9, 0.5.23), but people paste logs of every release between 0.4.0 and 0.5.2x, and a
message's wording, exception type and module move between releases.  This script reads the
wheels of the releases in between (``BETWEEN``, the last build of each minor line, downloaded
with ``pip download --no-deps`` into the same cache), finds their failure sites with the same
reader, and keeps the sites whose message template NONE of the five inventoried releases has
(the templates nothing else measures), and the sites of a known template raised from a file or
function none of the five raises it from (a module moved between releases: the dispositions'
paths and the engine's frames read a place).

Each such template is kept once (its newest release's site: file, line, function, kind,
exception; a moved site once per site key) with the releases that print it, disposed of as the inventory disposes of a site
(dispositions.yaml, the rule pack) and measured as ``--measure`` measures one: a synthetic log of
the site in its release's context (0.4.x milestone lines and ``ServerArgs(...)`` header, 0.5.x's
dict dump), run through the engine; the right answer is its disposition's category.

Output: ``data/inventory/between-releases.json`` (the shipped five inventories stay as they are).

    python scripts/inventory_between.py            # read the wheels, measure, write the json
    python scripts/inventory_between.py --check    # rebuild and compare with the shipped json
    python scripts/inventory_between.py --show     # the templates measured wrong
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv  # noqa: E402  (the reader, the dispositions and the measure)

# The last build of every minor line between 0.4.0 and 0.5.22 on PyPI (2026-12-07), and
# 0.5.0rc2 (0.5.0 was never released as a final build); the inventoried five are left out.
BETWEEN = ("0.4.0.post2", "0.4.1.post7", "0.4.2.post4", "0.4.4.post4", "0.4.5.post3", "0.4.7.post1",
           "0.4.8.post1", "0.4.9.post6", "0.4.10.post2", "0.5.0rc2", "0.5.1.post3", "0.5.2", "0.5.3.post3",
           "0.5.5.post3", "0.5.6.post2", "0.5.7", "0.5.8.post1", "0.5.10.post1", "0.5.11", "0.5.12.post1",
           "0.5.13.post1", "0.5.14", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20",
           "0.5.21", "0.5.22")
OUT = inv.DEFAULT_OUT / "between-releases.json"
SAMPLE_EVERY = 8  # the everyday test's deterministic sample


def shipped(out: Path = inv.DEFAULT_OUT) -> tuple[set[str], set[str]]:
    """(every site key, every template) of the five shipped inventories."""
    keys: set[str] = set()
    templates: set[str] = set()
    for version in inv.DEFAULT_VERSIONS:
        data = json.loads((out / f"sglang-{version}.json").read_text(encoding="utf-8"))
        for path, sites in data["files"].items():
            for site in sites:
                keys.add(f"{path}::{site[1]}::{site[4]}")
                templates.add(site[4])
    return keys, templates


def _cache_file(wheel: Path) -> Path:
    """Where a wheel's sites are kept between runs: reading 30 wheels takes minutes; the name
    carries a digest of the reader (inventory_failures.py), so a changed reader reads again."""
    import hashlib

    digest = hashlib.sha256(Path(inv.__file__).read_bytes()).hexdigest()[:16]
    return inv.default_wheel_dir().parent / "between-sites" / f"{wheel.stem}-{digest}.json"


def release_sites(wheel: Path) -> list[dict]:
    """The failure sites of one wheel, found by the inventory's reader (constants resolved)."""
    cache = _cache_file(wheel)
    if cache.is_file():
        return json.loads(cache.read_text(encoding="utf-8"))
    sites: list[dict] = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        constants = inv.Constants(lambda name: zf.read(name).decode("utf-8-sig", errors="replace")
                                  if name in names else None)
        for path, text in inv.sources(wheel):
            sites += inv.find_sites(path, text, constants=constants)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(sites), encoding="utf-8")
    return sites


def collect(versions, wheel_dir: Path, keys: set[str], templates: set[str]) -> dict[str, dict]:
    """The sites of ``versions`` the shipped five do not have, each once with its ``releases``
    (its newest release's site) and what is ``new``: ``template`` (a message none of the five
    prints; kept once per template) or ``place`` (a known message raised from a file or
    function none of the five raises it from, where the dispositions' paths may read it
    otherwise; kept once per site key)."""
    found: dict[str, dict] = {}
    for version in sorted(versions, key=inv.version_key):
        for site in release_sites(inv.find_wheel(version, wheel_dir)):
            if site["template"] not in templates:
                key, new = site["template"], "template"
            elif inv.site_key(site) not in keys:
                key, new = inv.site_key(site), "place"
            else:
                continue
            releases = found[key]["releases"] if key in found else []
            if version not in releases:
                releases = releases + [version]
            found[key] = dict(site, releases=releases, new=new)  # the newest release's site
    return found


def entry(site: dict, disp, rules) -> dict:
    """One template's record: where it is, what it is, its releases and its disposition."""
    record = {"template": site["template"], "releases": site["releases"], "new": site["new"], "file": site["file"],
              "line": site["line"], "function": site["function"], "kind": site["kind"],
              "exception": site["exception"], "disposition": inv.dispose(site, disp, rules)}
    if site["resolved"] != site["template"]:  # the message names a string constant: as SGLang prints it
        record["printed"] = site["full"]
    return record


def as_site(record: dict) -> dict:
    """A record as the measure's site: the printed text when it names a constant, else the template."""
    printed = record.get("printed")
    return {"file": record["file"], "line": record["line"], "function": record["function"], "kind": record["kind"],
            "exception": record["exception"], "template": record["template"], "disposition": record["disposition"],
            "full": printed or record["template"], "resolved": inv._cut(printed) if printed else record["template"]}


def release_of(record: dict) -> dict | None:
    """The context its synthetic log speaks: the newest release that prints it (0.4.x's milestone
    lines and ``ServerArgs(...)`` header with the launch's values, or None for 0.5.x's)."""
    return inv.release_context(record["releases"][-1])


class Judge:
    """The engine's answer for one record's synthetic log, and the right one."""

    def __init__(self, disp):
        from sglang_doctor.diagnose.rules_engine import RuleSet

        self.disp = disp
        self.ruleset = RuleSet.load(builtin=True, user=False)
        self.categories = inv.class_categories()
        self.categories.update({r.id: r.category for r in self.ruleset.rules})
        self.class_by_phase = inv.class_phase_categories()

    def __call__(self, record: dict) -> tuple[str | None, list[str]]:
        """(the right answer, the engine's incident categories); right ``excluded``: not run."""
        from sglang_doctor.pipeline import StreamPipeline

        site = as_site(record)
        phase = self.disp.phase(site)
        want = inv.right_answer(site, self.disp, self.categories, phase, self.class_by_phase)
        if want == "excluded":
            return want, []
        kind, _, name = site["disposition"].partition(":")
        message = None
        if kind == "rule":  # the sample values that make the message the rule credited
            rule = self.ruleset.get(name)
            logged = site["kind"].startswith("log") and not site["kind"].endswith(".raise")
            rx = None if rule is None else (rule.line_rx if logged or rule.message is None else rule.message)
            message = next((t for t in inv.fillings(site["full"]) if rx is not None and rx.search(t)), None)
        release = release_of(record)
        pipe = StreamPipeline(self.ruleset, remediate=False)
        events = pipe.feed(inv.synthetic_log(site, phase, want, message, release).encode()) + pipe.finish()
        return want, [ev["category"] for ev in events if ev["event"] == "incident"]


def is_right(want: str | None, got: list[str]) -> bool:
    return (not got) if want == "none" else (want in got)


def measure(records: list[dict], disp, every: int = 1) -> dict:
    """Right answers over the user-facing records (every Nth one with ``every``); each measured
    record gets ``right`` (its right answer) and ``measured`` (the engine's categories)."""
    judge = Judge(disp)
    for i, record in enumerate(records):
        if i % every == 0:
            want, got = judge(record)
            record["right"], record["measured"] = want, ",".join(got) or "none"
    return tally(records, every)


def tally(records: list[dict], every: int = 1) -> dict:
    """The figures of every Nth measured record."""
    sites = right = excluded = 0
    for record in records[::every]:
        if record["right"] == "excluded":
            excluded += 1
            continue
        sites += 1
        right += is_right(record["right"], [c for c in record["measured"].split(",") if c != "none"])
    return {"every": every, "user_facing": sites, "excluded": excluded, "right": right}


def build(versions, wheel_dir: Path, out: Path = inv.DEFAULT_OUT) -> dict:
    disp = inv.Dispositions.load()
    rules = inv.RuleMatcher()
    found = collect(versions, wheel_dir, *shipped(out))
    records = [entry(found[k], disp, rules) for k in sorted(found)]
    full = measure(records, disp)
    sample = tally(records, every=SAMPLE_EVERY)  # what the everyday test re-measures
    counts = Counter(r["disposition"].split(":", 1)[0] for r in records)
    return {"releases": sorted(versions, key=inv.version_key), "inventoried": list(inv.DEFAULT_VERSIONS),
            "templates": sum(r["new"] == "template" for r in records),
            "places": sum(r["new"] == "place" for r in records), "counts": dict(sorted(counts.items())), "full": full, "sample": sample,
            "sites": records}


def dumps(data: dict) -> str:
    """Stable JSON: the head, then one line per template."""
    head = {k: v for k, v in data.items() if k != "sites"}
    lines = ["{" + json.dumps(head, sort_keys=True, ensure_ascii=False)[1:-1] + ', "sites": [']
    for i, record in enumerate(data["sites"]):
        comma = "," if i < len(data["sites"]) - 1 else ""
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + comma)
    lines.append("]}")
    return "\n".join(lines) + "\n"


def wrong(data: dict) -> list[dict]:
    return [r for r in data["sites"] if r["right"] != "excluded"
            and not is_right(r["right"], [c for c in r["measured"].split(",") if c != "none"])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="+", default=list(BETWEEN))
    ap.add_argument("--wheel-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    ap.add_argument("--show", action="store_true", help="print the templates measured wrong and the unaccounted")
    args = ap.parse_args(argv)
    data = build(args.versions, args.wheel_dir or inv.default_wheel_dir())
    text = dumps(data)
    status = inv.check_or_write(args.out, text, args.check)
    full = data["full"]
    print(f"{len(data['releases'])} releases between the inventoried five: {data['templates']} templates none of them has,"
          f" {data['places']} known templates raised from new places;"
          f" {data['counts']}; right category {full['right']}/{full['user_facing']}"
          f" ({full['excluded']} test/debug excluded)")
    if args.show:
        for r in data["sites"]:
            if r["disposition"] == "unaccounted":
                print(f"  UNACCOUNTED {r['file']}:{r['line']} [{r['exception'] or r['kind']}] {r['template'][:140]}")
        for r in wrong(data):
            print(f"  {r['new']:8} {r['releases'][-1]} {r['file']}:{r['line']} {r['function']} [{r['exception'] or r['kind']}]"
                  f" {r['template'][:140]} -> {r['disposition']} want {r['right']} got {r['measured']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
