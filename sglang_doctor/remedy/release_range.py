"""Which SGLang releases could have written a log: the version range its dump allows.

A log rarely prints SGLang's version, but every launch dumps ServerArgs, and the set of
ServerArgs fields changes from release to release.  The shipped catalogues record every
release's fields (scripts/gen_flag_catalog.py dumps them from the real classes), so a dump
with field X is from a release that has X, and a *complete* dump (closed bracket) without
field Y is from a release that lacks Y.  A cut dump (``tail``, a terminal) only gives the
first kind of evidence.

``release_range(fields, complete)`` gives the releases consistent with a dump and the range
they span; the catalogue to use is the newest of them (:attr:`ReleaseRange.newest`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable

from sglang_doctor.remedy import flags


class ReleaseSpan:
    """What a range of shipped releases (``self.releases``, oldest first) says about itself;
    shared by the dump's range here and the frames' range (frame_releases.FrameRange)."""

    releases: tuple[str, ...]

    @property
    def oldest(self) -> str:
        return self.releases[0]

    @property
    def newest(self) -> str:
        return self.releases[-1]

    @property
    def spec(self) -> str:
        """PEP 440 style: "==0.5.9" or ">=0.5.3,<=0.5.7"."""
        if len(self.releases) == 1:
            return f"=={self.oldest}"
        return f">={self.oldest},<={self.newest}"


@dataclass(frozen=True)
class ReleaseRange(ReleaseSpan):
    """The shipped releases whose ServerArgs fields match a dump."""

    releases: tuple[str, ...]     # oldest first
    complete: bool                # whether absent fields counted as evidence

    def to_json(self) -> dict:
        return {"spec": self.spec, "oldest": self.oldest, "newest": self.newest,
                "releases": list(self.releases), "dump_complete": self.complete}


def _fields_of(version: str) -> frozenset[str]:
    return _all_fields()[version]


@functools.lru_cache(maxsize=None)
def _all_fields() -> dict[str, frozenset[str]]:
    """Every shipped release's field names, read from the stored files along the delta
    chain (names only: rebuilding 92 whole catalogues, actions included, for this cost
    0.5 s of every ``explain`` run; docs/PERFORMANCE.md)."""
    stored = {version: flags._read_stored(name) for version, name in flags._stored_files().items()}
    names: dict[str, frozenset[str]] = {}

    def fields(version: str) -> frozenset[str]:
        if version not in names:
            doc = stored[version]
            if "delta_from" in doc:
                before = fields(doc["delta_from"])
                names[version] = (before - frozenset(doc["fields_removed"])) | frozenset(doc["fields_set"])
            else:
                names[version] = frozenset(doc.get("fields", {}))
        return names[version]

    return {version: fields(version) | frozenset(stored[version].get("fields_without_default", []))
            for version in stored}


def release_range(fields: Iterable[str], complete: bool) -> ReleaseRange | None:
    """The releases a dump with these field names fits, or None when no shipped release
    fits (a release newer than the catalogues, or not a ServerArgs dump).

    Every dumped field must exist in the release; when the dump is complete, every field of
    the release must be in the dump too.  If no release passes the second test (a field
    kept out of the repr, say), the first alone decides and ``complete`` is reported False.
    """
    present = frozenset(str(name) for name in fields)
    if not present:
        return None
    having = [v for v in flags.KNOWN_VERSIONS if present <= _fields_of(v)]
    if complete:
        exact = [v for v in having if _fields_of(v) <= present]
        if exact:
            return ReleaseRange(tuple(exact), True)
    if not having:
        return None
    return ReleaseRange(tuple(having), False)


@dataclass(frozen=True)
class WordingRange(ReleaseSpan):
    """The shipped releases that print the text a rule matched (the rule's ``versions``), for
    a log that names no release: the wording of SGLang's own message dates it (e.g. the order
    of a "Possible solutions" list)."""

    releases: tuple[str, ...]  # oldest first
    rule: str

    def to_json(self) -> dict:
        return {"spec": self.spec, "oldest": self.oldest, "newest": self.newest,
                "releases": len(self.releases), "from": "message wording", "rule": self.rule}


def wording_range(rule_id: str, versions: tuple[str, str] | None,
                  within: tuple[str, ...] | None = None) -> WordingRange | None:
    """The shipped releases from ``versions[0]`` to ``versions[1]`` (and in ``within``, the
    range other evidence allows, when given); None when the rule dates nothing or no shipped
    release is left."""
    if not versions:
        return None
    try:
        low, high = flags.version_key(versions[0]), flags.version_key(versions[1])
    except ValueError:
        return None
    releases = tuple(v for v in flags.KNOWN_VERSIONS if low <= flags.version_key(v) <= high
                     and (within is None or v in within))
    return WordingRange(releases, rule_id) if releases else None


# SGLang's own advice names a flag of the release that prints it ("please use
# `--mamba-scheduler-strategy extra_buffer`", "Please set --enable-dp-attention"): only
# advice counts, not a flag the message refuses ("unrecognized arguments: --x", "--x is
# deprecated / removed"), which the release may well lack
_ADVISED_FLAG = re.compile(
    r"\b(?:use|set|add|pass|specify|enable|try|with)\s+[`'\"]?(--[a-z0-9][a-z0-9-]*[a-z0-9])\b", re.IGNORECASE)


def advised_flag_range(texts: Iterable[str], rule_id: str,
                       within: tuple[str, ...] | None = None) -> WordingRange | None:
    """The shipped releases that have every flag SGLang's message advises (and in ``within``,
    when given), for a log that names no release; None when the message advises no flag a
    shipped release knows, or the advice fits every release (it dates nothing)."""
    advised = {m.group(1)[2:].replace("-", "_") for text in texts for m in _ADVISED_FLAG.finditer(text)}
    if not advised:
        return None
    every = _all_fields()
    known = {name for name in advised if any(name in every[v] for v in flags.KNOWN_VERSIONS)}
    if not known:
        return None
    releases = tuple(v for v in flags.KNOWN_VERSIONS if known <= every[v] and (within is None or v in within))
    if not releases or len(releases) == len(flags.KNOWN_VERSIONS if within is None else within):
        return None
    return WordingRange(releases, f"{rule_id} (the flags its message advises)")
