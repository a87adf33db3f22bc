"""Which SGLang releases could have written a log, from its traceback frames.

Most pasted logs are fragments: no launch header, no ServerArgs dump (remedy/release_range.py
needs one), only a traceback.  Its frames still say which release wrote it: SGLang's modules
move and appear between releases (``srt/model_executor/cuda_graph_runner.py`` became
``srt/model_executor/runner/...``), and functions come and go inside them.  The shipped
``catalogs/frame-index.json`` (scripts/gen_frame_index.py, from every shipped release's
wheel) records, for every module path under ``sglang/``, the runs of releases that had it,
and for function names whose runs differ from their module's, theirs.

``frame_range(texts)`` intersects the releases of every frame that names a known module:

* a path the index does not know (a fork, a git checkout newer than the catalogues, a plugin)
  is no evidence, and neither is a function name the index does not list for its module;
* frames that no single release fits (a patched tree, a mixed install) give None: unknown,
  never an error;
* a range that spans every shipped release says nothing and gives None too.

It is weaker evidence than a printed version or a dump: the pipeline uses it only when the
log has neither (source "frame paths"), and the report says the version was inferred.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from sglang_doctor.remedy.release_range import ReleaseSpan

# A Python traceback frame of a module in the sglang package (site-packages, a source
# checkout's python/sglang, a container's /sgl-workspace): the path from "sglang/" on.
# The last "sglang/" of the path is the package's (``/sgl-workspace/sglang/python/sglang/srt/``).
_FRAME = re.compile(r'File "(?:[^"\n]*[/\\])?sglang[/\\](?P<path>[\w./\\-]+?\.py)", line (?P<line>\d+), in (?P<func>[\w<>]+)')


@dataclass(frozen=True)
class FrameRange(ReleaseSpan):
    """The shipped releases a log's frames fit, and the frames that decided it."""

    releases: tuple[str, ...]       # oldest first
    paths: tuple[str, ...]          # the known module paths that narrowed it (e.g. srt/managers/scheduler.py)

    def to_json(self) -> dict:
        return {"spec": self.spec, "oldest": self.oldest, "newest": self.newest,
                "releases": len(self.releases), "from": "frame paths", "frames": list(self.paths)}


@functools.lru_cache(maxsize=1)
def _index() -> dict:
    from sglang_doctor.remedy import flags

    with importlib.resources.files(flags._CATALOGUE_PACKAGE).joinpath("frame-index.json").open(encoding="utf-8") as fh:
        return json.load(fh)


def _members(runs: str) -> frozenset[int]:
    """"0-40,44-50" -> the release indices it covers."""
    out = set()
    for run in runs.split(","):
        first, _, last = run.partition("-")
        out.update(range(int(first), int(last) + 1))
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def _functions_of(path: str) -> dict[str, str]:
    """A module's function names whose releases differ from the module's: name -> runs."""
    text = _index()["functions"].get(path, "")
    return dict(item.rsplit(":", 1) for item in text.split())


def frames(texts: Iterable[str]) -> list[tuple[str, str]]:
    """(module path under sglang/, function) of every SGLang frame in the text, in order."""
    found = []
    for text in texts:
        if "sglang" not in text or "File " not in text:
            continue
        for match in _FRAME.finditer(text):
            found.append((match.group("path").replace("\\", "/"), match.group("func")))
    return found


def frame_range(texts: Iterable[str]) -> FrameRange | None:
    """The releases the SGLang frames of these lines fit (None: no evidence, or a conflict)."""
    seen = frames(texts)
    if not seen:
        return None
    index = _index()
    releases: list[str] = index["releases"]
    everything = frozenset(range(len(releases)))
    allowed = everything
    used: list[str] = []
    for path, func in dict.fromkeys(seen):
        runs = index["paths"].get(path)
        if runs is None:
            continue  # not a module of any shipped release: no evidence
        having = _members(runs)
        func_runs = _functions_of(path).get(func)
        if func_runs is not None:
            having &= _members(func_runs)
        if having == everything:
            continue
        allowed &= having
        if path not in used:
            used.append(path)
        if not allowed:
            return None  # no release fits every frame: unknown, not an error
    if allowed == everything or not used:
        return None
    from sglang_doctor.remedy import flags

    known = set(flags.KNOWN_VERSIONS)
    fits = tuple(releases[i] for i in sorted(allowed) if releases[i] in known)
    if not fits:
        return None
    return FrameRange(fits, tuple(used))


# -- the releases before 0.4.0 ------------------------------------------------------------------
# They have no shipped catalogue (so no place in ``frame_range``), but their module paths are
# recorded (scripts/gen_pre040_renames.py, "modules"): ``srt/managers/controller/tp_worker.py``
# existed in 0.1.18-0.2.x only.  A traceback through a module only they had was written by one
# of them, and a change is then spelled as they spelled it (``respell_pre_040``).


def pre_040_span(texts: Iterable[str]) -> tuple[str, str] | None:
    """(oldest, newest) release before 0.4.0 that the SGLang frames of these lines fit, or
    None: no frame of a module only those releases had, a frame of a module none of them had
    (a later release), or frames no single release fits."""
    from sglang_doctor.remedy import flags

    seen = frames(texts)
    if not seen:
        return None
    old = flags._pre_040()
    modules: dict[str, str] = old.get("modules") or {}
    releases: list[str] = old.get("releases") or []
    shipped = _index()["paths"]
    allowed: frozenset[int] | None = None
    only_old = False
    for path, _func in dict.fromkeys(seen):
        runs = modules.get(path)
        if runs is None:
            if path in shipped:
                return None  # a module of 0.4.0 or later only
            continue  # a fork's or a plugin's module: no evidence
        having = _members(runs)
        allowed = having if allowed is None else allowed & having
        only_old = only_old or path not in shipped
        if not allowed:
            return None
    if not only_old or not allowed:
        return None
    return releases[min(allowed)], releases[max(allowed)]


def _overlaps(span: tuple[str, str], first: str, last: str) -> bool:
    from sglang_doctor.remedy import flags

    key = flags.version_key
    return key(first) <= key(span[1]) and key(span[0]) <= key(last)


def old_spelling(flag: str, span: tuple[str, str]) -> str | None:
    """The spelling releases ``span`` (before 0.4.0) gave the setting ``flag`` names, when they
    spelled it otherwise (flags.pre_040_renames, followed back); None when they spelled it so."""
    from sglang_doctor.remedy import flags

    options = flags.pre_040_options()
    name, seen = flag, {flag}
    while True:
        back = next((r.old for r in flags.pre_040_renames() if r.new == name and r.old not in seen), None)
        if back is None:
            return None
        seen.add(back)
        first_last = options.get(back)
        if first_last is not None and _overlaps(span, *first_last):
            return back
        name = back


def pre_040_named(version: str | None) -> tuple[str, str] | None:
    """(version, version) when the log names a release before 0.4.0 that the records know."""
    from sglang_doctor.remedy import flags

    return (version, version) if version and version in (flags._pre_040().get("releases") or ()) else None


def respell_pre_040(rem: Any, span: tuple[str, str], named: bool = False) -> bool:
    """Spell ``rem``'s flags as the releases ``span`` (before 0.4.0: ``pre_040_span`` of the
    log's traceback) spelled them, from their own parsers (scripts/gen_pre040_renames.py):

    * a flag renamed since: the old name (``--disable-jump-forward`` -> ``--disable-regex-jump-forward``);
    * a flag those releases lack, set to the value an old option's own help retires it for:
      that option ("'--disable-flashinfer' is deprecated. Please use '--attention-backend
      triton' instead": ``--attention-backend triton`` -> ``--disable-flashinfer``);
    * a removal of a flag none of them had: dropped (nothing to remove);
    * a flag none of them had, with no equivalent: kept when it is the whole change, and the
      note says no such flag exists there (advice: a newer release has it); left out, and said,
      when the rest of the change is flags those releases take (those releases would refuse the
      whole command for it: 0.2.0 has no sampling switch, and FlashInfer's both-backends change
      is --disable-flashinfer there).

    The newer name goes in the note.  True when it changed anything."""
    from sglang_doctor.remedy import flags

    old = flags._pre_040()
    runs: dict[str, str] = old.get("option_runs") or {}
    releases: list[str] = old.get("releases") or []
    if span[0] not in releases or span[1] not in releases or not runs:
        return False
    in_span = frozenset(range(releases.index(span[0]), releases.index(span[1]) + 1))

    def had(option: str) -> bool:
        return option in runs and bool(_members(runs[option]) & in_span)

    def equivalent(flag: str, value: Any) -> str | None:
        for option, eq in (old.get("equivalents") or {}).items():
            if eq.get("new") == flag and str(eq.get("value")) == str(value) and had(option):
                return option
        return None

    renamed: dict[str, str] = {}
    sets: dict[str, Any] = {}
    missing: list[str] = []
    for flag, value in rem.set.items():
        spelled = old_spelling(flag, span)
        if spelled is None and not had(flag):
            spelled = equivalent(flag, value)
            if spelled is not None:
                value = True  # the old switch is the whole setting
            else:
                missing.append(flag)
        if spelled is not None:
            renamed[flag] = spelled
        sets[spelled or flag] = value
    unsets, gone = [], []
    for flag in rem.unset:
        spelled = old_spelling(flag, span)
        if spelled is None and not had(flag):
            gone.append(flag)
            continue
        if spelled is not None:
            renamed[flag] = spelled
        unsets.append(spelled or flag)
    if not renamed and not missing and not gone:
        return False
    left_out = bool(missing) and len(missing) < len(rem.set)
    if left_out:
        for flag in missing:
            sets.pop(flag, None)
            rem.provenance.pop(flag, None)
    rem.set, rem.unset = sets, unsets
    for new, name in renamed.items():
        if new in rem.provenance:
            rem.provenance[name] = rem.provenance.pop(new)
    for flag in gone:
        rem.provenance.pop(flag, None)
    where = (f"SGLang {span[0]}, the log's release" if named else
             f"SGLang {span[0]} to {span[1]}, which wrote this log (its traceback passes modules only those releases had)")
    said = []
    if renamed:
        said.append("spelled for " + where + ": " + ", ".join(f"{name} (later releases: {new})"
                                                               for new, name in renamed.items()))
    if missing and left_out:
        said.append(f"{' '.join(missing)}: no such flag, nor an equivalent, in {where if not said else 'those releases'};"
                    " left out (they would refuse the command for it)")
        rem.needs_human = True
    elif missing:
        said.append(f"{' '.join(missing)}: no such flag, nor an equivalent, in {where if not said else 'those releases'};"
                    " it needs a newer release")
        rem.needs_human = True
    if gone:
        said.append(f"not removing {' '.join(gone)}: "
                    + (where if not said else "those releases") + " have no such flag")
    why = "; ".join(said)
    rem.note = f"{why}; {rem.note}" if rem.note else why
    if rem.is_empty():
        rem.needs_human = True
    rem.safe = False
    return True
