"""What SGLang's own source can fail with under the frame where a cut traceback stopped.

A traceback whose exception line was cut off still shows its deepest SGLang frame: the file
and function the process was in.  ``frame_sites.json`` (written by scripts/frame_sites.py from
each release's wheel and its failure inventory, data/inventory/sglang-VERSION.json) lists, per
release, the categories of the failure sites reachable from every function of ``sglang/srt``:
its own ``raise`` / ``assert`` / ``logger.error`` sites and those of the functions it calls, two
calls down, resolved statically.  A function whose reachable sites are mostly of one category,
and more so than the release's sites as a whole, says what usually can fail there.

What the table cannot say, and so never says:
- the categories SGLang's own code almost never raises (a CUDA OOM is torch's allocator, a
  kernel build is the compiler's, NCCL's errors are NCCL's: ``MIN_SITES``) get no reading;
- a failure further down than the call graph reaches (a constructor two calls above the step
  that failed): a function's sites are what it *can* fail with near it, not what failed.
So the reading is support (``Evidence.support``): it only breaks a tie between the categories
the text's own pieces name, or decides with the phase's prior when the text holds none.

The table is read once (lazily) and consulted once per incident, never per line.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from sglang_doctor.diagnose import phase_prior

DATA = Path(__file__).with_name("frame_sites.json")

MIN_SITES = 20  # a category with fewer sites over every release has no density to read (mostly raised by libraries)
MIN_REACHED = 2  # ... and a category the function reaches fewer sites of (over the releases that have it) is not read
MIN_POSTERIOR = 0.5  # the category named must hold more than this share of the reading (a strict majority)
MIN_ENRICHMENT = 1.0  # ... and be likelier under this function than among the release's sites as a whole
SPAN = 2  # the deepest SGLang frames looked up (the first with a row reads)
# "other" counts in the reading (its sites are part of what can fail there) but is never named: it is
# the guess's answer when nothing is known, and a function whose sites are mostly internal contracts
# and waivers says nothing more than that
UNNAMED = ("other",)


@lru_cache(maxsize=1)
def table() -> dict:
    try:
        return json.loads(DATA.read_text(encoding="utf-8")).get("releases", {})
    except (OSError, ValueError):
        return {}


@lru_cache(maxsize=1)
def readable() -> frozenset[str]:
    """The categories with at least ``MIN_SITES`` sites over every release of the table."""
    total: dict[str, int] = {}
    for release in table().values():
        for c, k in release.get("totals", {}).items():
            total[c] = total.get(c, 0) + k
    return frozenset(c for c, k in total.items() if k >= MIN_SITES)


def relative(path: str) -> str | None:
    """``.../site-packages/sglang/srt/x.py`` (or a checkout's ``.../python/sglang/srt/x.py``) ->
    ``srt/x.py``; None for a file outside SGLang's ``srt`` package."""
    p = path.replace("\\", "/")
    if p.startswith("sglang/"):
        p = "/" + p
    if p.startswith("srt/"):
        return p
    if "/sglang/srt/" not in p:
        return None
    return "srt/" + p.rsplit("/sglang/srt/", 1)[1]


def row(path: str, function: str) -> tuple[dict[str, float], dict[str, float]] | None:
    """(each category's mean share of the function's reachable sites, its mean share of the
    releases' sites), over the releases whose table has the function; None when none has it.  A
    category the function reaches fewer than ``MIN_REACHED`` sites of (summed over those releases)
    gets share 0."""
    rel = relative(path)
    if rel is None:
        return None
    name = function.rsplit(".", 1)[-1]
    shares: dict[str, float] = {}
    base: dict[str, float] = {}
    reached: dict[str, int] = {}
    n = 0
    for release in table().values():
        counts = release.get("functions", {}).get(rel, {}).get(name)
        if not counts:
            continue
        n += 1
        for c, k in counts.items():
            reached[c] = reached.get(c, 0) + k
        totals = release.get("totals", {})
        whole, all_sites = sum(counts.values()), sum(totals.values())
        for c, k in totals.items():
            shares[c] = shares.get(c, 0.0) + counts.get(c, 0) / whole
            base[c] = base.get(c, 0.0) + k / all_sites
    if not n:
        return None
    # one site of a category is no density of it: such a category counts as not reached
    few = {c for c, k in reached.items() if k < MIN_REACHED}
    return {c: (0.0 if c in few else v / n) for c, v in shares.items()}, {c: v / n for c, v in base.items()}


def practice(counts: dict[str, dict[str, int]] | None = None) -> dict[str, float]:
    """How often each category is the failure in practice: its share of the labelled failures the
    phase prior counts (``phase_prior.COUNTS``, every phase), one pseudo-count each."""
    counts = phase_prior.COUNTS if counts is None else counts
    total: dict[str, int] = {}
    for cats in counts.values():
        for cat, n in cats.items():
            total[cat] = total.get(cat, 0) + n
    whole = sum(total.values()) + len(total)
    return {cat: (n + 1) / whole for cat, n in total.items()}


def posterior(shares: dict[str, float], base: dict[str, float], rates: dict[str, float]) -> dict[str, float]:
    """What failed, given where: each category's rate in practice times how much likelier its sites are
    under this function than among the release's sites (share / base), normalised."""
    floor = min(rates.values()) if rates else 1.0
    known = readable()
    raw = {c: rates.get(c, floor) * share / base[c] for c, share in shares.items()
           if share > 0 and base.get(c) and c in known}
    whole = sum(raw.values())
    return {c: v / whole for c, v in raw.items()} if whole else {}


def reading(frames) -> tuple[str, float, float, str] | None:
    """(category, posterior share, enrichment, "function in file") for the deepest of the last ``SPAN``
    SGLang frames with a row, when the category holds more than ``MIN_POSTERIOR`` of the reading and its
    sites are at least ``MIN_ENRICHMENT`` times likelier there than in the release; else None."""
    rates = practice()
    for f in list(reversed(frames))[:SPAN]:
        found = row(f.file, f.function)
        if found is None:
            continue
        shares, base = found
        post = posterior(shares, base, rates)
        if not post:
            return None
        category = max(post, key=lambda c: (post[c], c))
        enrichment = shares[category] / base[category]
        if category not in UNNAMED and post[category] > MIN_POSTERIOR and enrichment >= MIN_ENRICHMENT:
            return category, post[category], enrichment, f"{f.function} in {relative(f.file)}"
        return None
    return None
