"""Which argument check of SGLang printed a message, from the message alone (issue 12, session 35).

A refusal pasted as its exception line alone (``ValueError: ...``, no frames, no launch header)
does not say where it was raised, so the class rules that read the frames cannot see that an
argument check refused the launch.  The message itself can: ``argument_sites.json``
(scripts/gen_argument_sites.py, from the failure-site inventories of five releases) holds the
message of every argument check as a template, placeholders where the check puts a value, and
only templates that name their site (enough literal words, and no site of another category that
prints the same words).  ``site_of`` reads one message per incident (never per line): a lookup by
the message's first characters, then a full match of the few templates that begin so (and of the
few that begin with a placeholder, by their longest words).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
HEAD = 10          # characters of a template's literal start that index it
MIN_SHARE = 0.5    # the template's literal text is at least half of the message


def template_regex(template: str) -> str:
    """The regex a message printed by ``template`` fully matches: literal text escaped, any run
    of spaces as ``\\s+``, a placeholder any text, a cut template (ending in "…") any rest."""
    cut = template.endswith("…")
    text = template[:-1] if cut else template
    out: list[str] = []
    at = 0
    for m in _PLACEHOLDER.finditer(text):
        out.append(_literal(text[at:m.start()]))
        out.append(re.escape(m.group(0)[0]) if m.group(0) in ("{{", "}}") else ".*?")
        at = m.end()
    out.append(_literal(text[at:]))
    return "".join(out) + (".*" if cut else r"\s*")


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(part) for part in text.split(" "))


def _literal_text(template: str) -> str:
    return _PLACEHOLDER.sub("", template.rstrip("…"))


@dataclass(frozen=True)
class Site:
    """An argument check whose message a text is."""

    template: str
    exceptions: tuple[str, ...]
    releases: tuple[str, ...]     # the inventoried releases that have it
    switches: tuple[str, ...]     # store_true flags the check's guard needs on
    where: tuple[str, ...]        # "release file:line" of (up to two of) its sites


@dataclass
class _Entry:
    site: Site
    regex: re.Pattern
    literal: int        # literal characters
    chunk: str          # its longest literal words (for a template that begins with a placeholder)


class Table:
    def __init__(self, data: dict):
        self.releases: tuple[str, ...] = tuple(data.get("releases") or ())
        self.by_head: dict[str, list[_Entry]] = {}
        self.floating: list[_Entry] = []
        columns = data.get("columns") or []
        for row in data.get("sites") or []:
            # a row of the generator's columns, its releases as indexes into ``releases``
            item = dict(zip(columns, row)) if isinstance(row, list) else row
            releases = tuple(self.releases[r] if isinstance(r, int) else r for r in item["releases"])
            template = item["template"]
            entry = _Entry(Site(template, tuple(item["exceptions"]), releases, tuple(item["switches"]),
                                tuple(item["sites"])),
                           re.compile(template_regex(template), re.S), len(_literal_text(template)),
                           max((p.strip() for p in _PLACEHOLDER.split(template.rstrip("…"))), key=len))
            head = _PLACEHOLDER.split(template, 1)[0]
            if len(head) >= HEAD:
                self.by_head.setdefault(head[:HEAD], []).append(entry)
            else:
                self.floating.append(entry)

    def candidates(self, message: str) -> list[_Entry]:
        out = list(self.by_head.get(message[:HEAD], ()))
        return out + [e for e in self.floating if e.chunk and e.chunk in message]


@functools.lru_cache(maxsize=1)
def table() -> Table:
    with importlib.resources.files(__package__).joinpath("argument_sites.json").open(encoding="utf-8") as fh:
        return Table(json.load(fh))


def _near(releases: tuple[str, ...], version: str | None, known: tuple[str, ...]) -> bool:
    """The site is in an inventoried release next to ``version`` (the newest at or below it, the
    oldest at or above it): a check of the log's own time."""
    if not version:
        return False
    key = _key(version)
    below = [r for r in known if _key(r) <= key]
    above = [r for r in known if _key(r) >= key]
    near = {below[-1]} if below else set()
    near |= {above[0]} if above else set()
    return bool(near & set(releases))


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:4])


def site_of(exc_type: str, message: str, version: str | None = None) -> Site | None:
    """The argument check whose message ``message`` is (raised as ``exc_type``), else None.

    The exception type must be one the site raises (a type the paste cut, ``…Error``, any of
    them); with the log's release known, a site of the inventoried releases next to it is
    preferred, then the template with the most literal text."""
    message = message or ""
    found = _site_of(exc_type, " ".join(message.split()), version)
    if found is None and "\n" in message.strip():
        # a line the paste's tool added under the message ("sglang-1 exited with code 1", a
        # prompt): the message's first line alone, when it is a check's whole message
        found = _site_of(exc_type, " ".join(message.strip().split("\n", 1)[0].split()), version)
    return found


def _site_of(exc_type: str, text: str, version: str | None) -> Site | None:
    if not text:
        return None
    name = exc_type.rsplit(".", 1)[-1]
    t = table()
    hits: list[_Entry] = []
    for entry in t.candidates(text):
        if name not in entry.site.exceptions and not (name.startswith("…") and any(
                e.endswith(name[1:]) for e in entry.site.exceptions)):
            continue
        if entry.literal < MIN_SHARE * len(text) and not entry.site.template.endswith("…"):
            continue  # the placeholders would be most of the message: its words are not the check's
        if entry.regex.fullmatch(text):
            hits.append(entry)
    if not hits:
        return None
    hits.sort(key=lambda e: (not _near(e.site.releases, version, t.releases), -e.literal, e.site.template))
    return hits[0].site
