"""The best guess's stated confidence: how often a guess resting on the same cue was right on
tuned logs it was not counted from.

The guess itself (diagnose/evidence.py, fallback.best_guess) adds up hand-written weights; the
weighed figure (kept in the guess as ``strength``) orders the categories and decides, as before,
whether the fallback names the incident's category.  As a probability it was wrong: on the tuned
parts, leave-one-part-out, guesses weighed 0.25-0.35 were right 73% of the time and guesses
weighed under 0.15 right 29% (docs/GUESS-MISSES.md).  So the confidence the tool *states* is
measured instead: the share of right guesses among the held-out guesses that rested on the same
cue, counted by ``python scripts/guess_prior.py --calibrate --write`` (every tuned part scored
with the phase prior counted without it: the held-back situation) into ``guess_calibration.json``.

The cue of a guess is the strongest piece of evidence for the category it names
(``prior:serving->runtime.crash``, ``deepest_frame->model.load``, ``signal:killed->memory.host_oom``),
a rule layer's answer (``rule:class->cuda_graph``) or nothing (``none->other``).  A cue seen on
few guesses says little, so its rate is shrunk towards the rate of every guess that named the
same category (``categories``: how often a ``runtime.crash`` guess, an ``other`` guess... was
right, whatever it rested on), and that towards every guess's (``SHRINK`` pseudo-guesses each
step).  (Until session 14 the middle step was the cue's kind, the piece's name before its ``:``;
the kinds are still counted and used for a table that has no ``categories``.  Shrinking a cue
towards its category's rate carries better: an ``other`` guess -- nothing in the text points
anywhere -- is right far less often than the average guess, and the kind's step pulled it up to
the average; nested leave-one-part-out, bench/guess_cv.py, 165 guesses: calibration error 0.129
-> 0.076, worst band over-stated 0.141 -> 0.0, Brier 0.233 -> 0.229, with the same ``SHRINK``
and ``MARGIN``; the Brier score was lower with the category step at every ``SHRINK`` of 8, 16, 32.)  The figure stated is that estimate less ``MARGIN``
standard deviations of it, so that a rate measured on a handful of guesses is not stated as
if it were known: the confidence may be under-stated, never over-stated on purpose.
``bench/guess_cv.py`` measures it (per band, the calibration error, nested: each part's
confidence counted without that part).

**A part's guesses are not independent** (session 16).  The guesses of one corpus part share
their source (one issue tracker, one wrapper, one labeller's reading), so a cue's rate varies
more between parts than a binomial count of guesses says: fresh's five serving-phase guesses were
right 3 times while the other parts' were right 11 of 12, and counted without fresh that cue was
stated 0.81 on fresh (the 0.80+ band, right 3 of 6, over-stated by 0.31).  So each part's guesses
for a cell (a cue, a category, every guess) count as ``sqrt(n)`` guesses of that part's rate
instead of ``n`` (the design effect of ``n`` guesses that share a source: between one guess and
``n``), kept in the table's ``effective`` block beside the plain counts (``count`` with each
row's part); the plain counts are what the stated ``why`` cites.  ``MARGIN`` is 0.25: chosen for
each held part by the Brier score of leave-one-part-out on the other parts (11 of 13 folds chose
0.25 with ``SHRINK`` 16, the other two 0.25 with 8), nested, so the figure it was chosen on is not
the figure reported (docs/GUESS-MISSES.md, session 16).

**What the guess rests on is the first step** (session 19).  Before the category, a cue's rate is
shrunk towards the rate of the guesses that rested on the same ground (``ground_of``: the text's own
pieces, a rule's answer, only the phase or the words around, nothing; evidence.GROUNDS), and that
towards every guess's: all guesses -> the same ground -> the same category -> the cue.  The ground
separates the rates best of anything the tool knows about a guess (leave-one-part-out on the tuned
parts: the text's own evidence right about 4 times in 5, a rule 2 in 3, the phase alone about half,
nothing about 1 in 4), and a new source's guesses differ from the tuned parts' mostly in that mix, so
a guess that rests on nothing is stated what guesses resting on nothing have scored, whatever its
category's other guesses scored.  Same ``SHRINK`` and ``MARGIN`` (nothing refitted); nested
leave-one-part-out, bench/guess_cv.py, 190 guesses: calibration error 0.085 -> 0.046, Brier
0.213 -> 0.207 (docs/GUESS-MISSES.md, session 19).  A table counted without grounds (before session
19) skips the step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

DATA = Path(__file__).with_name("guess_calibration.json")
SHRINK = 16.0  # pseudo-guesses pulling a cue's rate towards its kind's, and a kind's towards all guesses'
MARGIN = 0.25  # standard deviations taken off the estimate (session 16: 0.5 -> 0.25, see above)
FLOOR, CEILING = 0.05, 0.9  # a guess is never stated as certain either way
ALL = "*"


def _load() -> dict[str, Any]:
    try:
        return json.loads(DATA.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


TABLE: dict[str, Any] = _load()


def cue_of(guess: dict[str, Any]) -> tuple[str, str]:
    """(cue, kind) of a guess: its strongest piece of evidence for the category it names, or the
    rule layer that answered (``basis``), or ``none``."""
    category = guess.get("category") or "other"
    basis = guess.get("basis")
    if basis:
        return f"{basis}->{category}", basis
    pieces = [ev for ev in guess.get("evidence", ()) or ()
              if ev.get("category") == category and float(ev.get("weight") or 0) > 0]
    if not pieces:
        return f"none->{category}", "none"
    top = max(pieces, key=lambda ev: float(ev["weight"]))  # (the first of equals)
    name = str(top["name"])
    return f"{name}->{category}", name.split(":", 1)[0]


def ground_of(guess: dict[str, Any]) -> str:
    """What a guess rests on, as the calibration counts it: ``text``, ``rule``, ``phase/around`` (only
    the phase read through the prior or words of the lines around: both say nothing of the failure
    itself) or ``none`` (evidence.GROUNDS; a guess without ``grounds`` is a rule's when it has a
    ``basis``, else none)."""
    grounds = guess.get("grounds") or ("rule" if guess.get("basis") else "none")
    return "phase/around" if grounds in ("phase", "around") else str(grounds)


GROUND_WORDS = {"text": "the text's own evidence", "rule": "a rule's answer",
                "phase/around": "only the phase or the words around", "none": "nothing"}


def category_of(cue: str) -> str:
    """The category a cue names (``deepest_frame->model.load`` -> ``model.load``)."""
    return cue.rsplit("->", 1)[-1]


def _cells(rows: list[tuple], key) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for row in rows:
        cell = out.setdefault(key(row), [0, 0])
        cell[0] += bool(row[2])
        cell[1] += 1
    return dict(sorted(out.items()))


def _effective(rows: list[tuple], key) -> dict[str, list[float]]:
    """Per cell, each part's guesses counted as ``sqrt(n)`` guesses at that part's rate (the
    module's note: a part's guesses share a source)."""
    per_part: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        cell = per_part.setdefault((key(row), row[3]), [0, 0])
        cell[0] += bool(row[2])
        cell[1] += 1
    out: dict[str, list[float]] = {}
    for (k, _), (right, n) in per_part.items():
        scale = math.sqrt(n) / n
        cell = out.setdefault(k, [0.0, 0.0])
        cell[0] += right * scale
        cell[1] += n * scale
    return {k: [round(r, 3), round(n, 3)] for k, (r, n) in sorted(out.items())}


_KEYS = (("cues", lambda row: row[0]), ("kinds", lambda row: row[1]), ("categories", lambda row: category_of(row[0])))
_GROUND_KEY = ("grounds", lambda row: row[4])


def count(rows: Iterable[tuple]) -> dict[str, Any]:
    """The table from (cue, kind, right), (cue, kind, right, part) or (cue, kind, right, part,
    ground) of held-out guesses: [right, guesses] per cue, per kind, per category named, per ground
    (``ground_of``, when the rows have it) and for all (``ALL``); with the parts, also the
    ``effective`` counts the estimate uses (each part's guesses of a cell as ``sqrt(n)``)."""
    rows = list(rows)
    keys = _KEYS + ((_GROUND_KEY,) if rows and all(len(row) > 4 for row in rows) else ())
    table: dict[str, Any] = {name: _cells(rows, key) for name, key in keys}
    table["all"] = [sum(bool(row[2]) for row in rows), len(rows)]
    if rows and all(len(row) > 3 for row in rows):
        effective: dict[str, Any] = {name: _effective(rows, key) for name, key in keys}
        effective["all"] = _effective(rows, lambda row: ALL).get(ALL, [0.0, 0.0])
        table["effective"] = effective
    return table


def estimate(cue: str, kind: str, table: dict[str, Any] | None = None, ground: str | None = None) -> tuple[float, str]:
    """The stated confidence of a guess resting on ``cue`` (of ``kind``; on ``ground``, ``ground_of``),
    and what the figure rests on."""
    table = TABLE if table is None else table
    # the effective counts (a part's guesses as sqrt(n), session 16) when the table has them; the
    # plain ones are what ``why`` cites
    counted = table.get("effective") or table
    r, n = table.get("all") or (0, 0)
    re_, ne = counted.get("all") or (0, 0)
    p = (re_ + 1) / (ne + 2)
    weight = ne + 2
    basis = []
    # the middle step: the rate of the guesses that named the same category (a table counted
    # before session 14 has only the kinds)
    middle = (category_of(cue), "categories") if "categories" in table else (kind, "kinds")
    # the first step: the guesses that rested on the same ground (a table counted before session 19
    # has none, and a guess whose ground is not given skips it)
    first = ((ground, "grounds"),) if ground is not None and "grounds" in table else ()
    for key, source in (*first, middle, (cue, "cues")):
        rk, nk = (table.get(source) or {}).get(key, (0, 0))
        rk_e, nk_e = (counted.get(source) or {}).get(key, (0, 0))
        p = (rk_e + SHRINK * p) / (nk_e + SHRINK)
        weight = nk_e + SHRINK
        if nk:
            basis.append(f"{rk}/{nk} for every {key} guess" if source == "categories" else
                         f"{rk}/{nk} for every guess resting on {GROUND_WORDS.get(key, key)}" if source == "grounds" else f"{rk}/{nk} for {key}")
    sd = math.sqrt(p * (1 - p) / (weight + 1))
    stated = min(CEILING, max(FLOOR, p - MARGIN * sd))
    if n:
        basis.append(f"{r}/{n} for every guess")
        parts = ", each part's guesses counted as the square root of their number" if table.get("effective") else ""
        why = (f"held-out tuned guesses right: {', '.join(basis)} (shrunk towards the wider counts{parts}, less "
               f"{MARGIN:g} sd)")
    else:
        why = "no calibration table: the figure is a prior, not a measurement"
    return round(stated, 3), why


def calibrate(guess: dict[str, Any], table: dict[str, Any] | None = None) -> dict[str, Any]:
    """The guess with its stated ``confidence`` measured (``estimate``); the weighed figure is
    kept as ``strength``, and the cue and what the figure rests on as ``cue`` / ``calibration``.
    A guess already calibrated is returned as it is."""
    if "strength" in guess:
        return guess
    cue, kind = cue_of(guess)
    stated, why = estimate(cue, kind, table, ground_of(guess))
    out = dict(guess)
    out["strength"] = guess.get("confidence", 0.0)
    out["confidence"] = stated
    out["cue"] = cue
    out["calibration"] = why
    return out


def strength(guess: dict[str, Any]) -> float:
    """The weighed figure of a guess (before or after ``calibrate``): what the fallback's
    thresholds read."""
    try:
        return float(guess.get("strength", guess.get("confidence")) or 0.0)
    except (TypeError, ValueError):
        return 0.0
