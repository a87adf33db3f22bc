"""The standard ``re`` module's compiled programs kept between runs of the command line.

Importing the CLI compiles about 180 ``re`` patterns at module level (the signals, the
milestones, the record headers, click's own): ``re``'s parser and code generator are
Python, 18-20 ms of the ~80 ms import on the benchmark host, in the serial start-up
before the read-ahead starts (docs/PERFORMANCE.md, session 23).  What they produce is
handed to the C engine (``_sre.compile``: the pattern, its flags, a list of integers, the
group count and names), which takes a few microseconds.

``install()`` (called by ``cli/app.py`` before its imports) wraps ``re._compiler.compile``:
the first compile of a pattern records the arguments ``re`` gives ``_sre.compile`` (the
engine swapped for a recorder for the length of that call, under a lock), and at exit the
programs recorded are written to a private cache file beside the rule cache (the same
checks: a directory and file of our own, not writable by others, no symlink), keyed by the
interpreter's version and the engine's ``MAGIC``; later runs give the engine the stored
arguments directly.  A pattern made so is the one ``re`` makes (the same arguments to the
same engine, which checks a program before it takes it).  Anything unexpected (another
``re`` layout, arguments that are not plain data, an unreadable or foreign file) falls back
to ``re``'s own compile.  ``SGLANG_DOCTOR_NO_RULE_CACHE`` turns it off, as it does the
other caches.  Only the command line installs it: importing the package as a library
leaves ``re`` alone.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from sglang_doctor import program_cache  # (imported before install(): its own patterns compile as usual)

FORMAT = 2
# (format 2 keeps each program's code as the hex of its words, as regex_programs does: format
# 1's lists of integers made the file 2.5x slower to parse, 10 ms of every run's start-up for
# this release's ~500 programs and 30+ ms for a full file; session 33.  The file is named
# re-code-*, so a format-1 file of an earlier release, re-programs-*, is neither read nor
# removed: the two releases installed side by side do not overwrite each other's)
# programs kept at most (in the file; recorded in one run): the CLI's own are ~500; a pattern
# built from varying text (none is now) would otherwise grow the file with every run.  When the
# file is full, the programs a run used or recorded are kept and the others go, in the file's
# order (save): a file filled by earlier releases' patterns (or other checkouts') no longer
# leaves this release's new ones compiled by re on every run (session 31: 37 of them, 5-10 ms of
# explain's start-up on the benchmark host, whose file had been full for hours)
MAX_PROGRAMS = 1024
_lock = threading.Lock()
_stored: dict[str, list] | None = None  # key -> arguments, from the cache file (loaded once)
_new: dict[str, list] = {}  # recorded in this run, not in the file yet
_used: set[str] = set()  # keys of the file's programs this run compiled from
_installed = False


def install() -> None:
    """Serve ``re``'s compiles from the stored programs from now on (once per process)."""
    global _installed
    if _installed or os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return
    try:
        import _sre
        from re import _compiler
    except ImportError:
        return
    original = getattr(_compiler, "compile", None)
    if original is None or getattr(_compiler, "_sre", None) is not _sre or not hasattr(_sre, "MAGIC"):
        return
    _installed = True

    def compile(p, flags=0):  # noqa: A001 - re._compiler.compile's twin
        if type(p) not in (str, bytes) or type(flags) is not int or flags & _compiler.SRE_FLAG_DEBUG:
            return original(p, flags)
        key = _key(p, flags)
        args = _programs().get(key) or _new.get(key)
        if args is not None:
            try:
                pattern = _sre.compile(p, *_unpack(args))
                _used.add(key)
                return pattern
            except Exception:  # noqa: BLE001 - not arguments this engine takes: compiled anew
                pass
        if len(_new) >= MAX_PROGRAMS:
            return original(p, flags)
        pattern, recorded = _record(_compiler, _sre, original, p, flags)
        if recorded is not None:
            if not _new:
                import atexit

                atexit.register(save)  # (once a run has something new to keep)
            _new[key] = recorded
        return pattern

    _compiler.compile = compile


def _key(p, flags: int) -> str:
    kind = "b" if type(p) is bytes else "s"
    text = p.decode("latin-1") if kind == "b" else p
    return f"{kind}{flags}:{text}"


def _record(_compiler, _sre, original, p, flags: int):
    """(pattern, stored arguments or None): re's own compile, its call to the engine kept."""
    pattern, calls = program_cache.record_compile(_compiler, "_sre", _sre, _lock, lambda: original(p, flags))
    if len(calls) != 1 or calls[0][0] is not p:
        return pattern, None
    packed = _pack(calls[0][1:])
    try:
        if packed is None or _unpack(packed) != tuple(calls[0][1:]):
            return pattern, None
    except (TypeError, ValueError):
        return pattern, None
    return pattern, packed


def _pack(args: tuple) -> list | None:
    """The engine's arguments after the pattern (flags, code, groups, groupindex,
    indexgroup) as JSON data, or None when they are not of that plain kind."""
    if len(args) != 5:
        return None
    flags, code, groups, groupindex, indexgroup = args
    if type(flags) is not int or type(groups) is not int or not isinstance(code, list) \
            or not isinstance(groupindex, dict) or not isinstance(indexgroup, tuple):
        return None
    # (re's opcodes are int subclasses with names: stored as the ints they equal)
    if not all(isinstance(c, int) for c in code) or not all(type(k) is str and type(v) is int
                                                            for k, v in groupindex.items()):
        return None
    if not all(g is None or type(g) is str for g in indexgroup):
        return None
    words = _words()
    if words is None:
        return None
    try:
        words.extend(int(c) for c in code)
    except OverflowError:
        return None
    return [flags, words.tobytes().hex(), groups, sorted(groupindex.items(), key=lambda kv: kv[1]),
            list(indexgroup)]


def _unpack(args: list) -> tuple:
    """The engine's arguments from stored ones (TypeError or ValueError when they are not
    what _pack wrote: every part is checked for its kind)."""
    flags, code, groups, groupindex, indexgroup = args
    words = _words()
    if type(flags) is not int or type(groups) is not int or type(code) is not str or words is None:
        raise TypeError("not stored arguments")
    words.frombytes(bytes.fromhex(code))  # (ValueError: not hex, or not whole words)
    index = {}
    for name, number in groupindex:
        if type(name) is not str or type(number) is not int:
            raise TypeError("not stored arguments")
        index[name] = number
    if not all(g is None or type(g) is str for g in indexgroup):
        raise TypeError("not stored arguments")
    return flags, words.tolist(), groups, index, tuple(indexgroup)


def _words():
    """An empty array of the engine's code words (``_sre.CODESIZE`` bytes each), or None when
    no array type has that size."""
    import _sre
    from array import array

    for typecode in "IL":
        if array(typecode).itemsize == _sre.CODESIZE:
            return array(typecode)
    return None


def save() -> None:
    """Write the programs recorded in this run to the cache file (with those it held)."""
    if not _new or os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return
    path = _cache_path()
    if path is None:
        return
    programs = kept(_programs(), _new, _used)
    if program_cache.save(path, FORMAT, programs, "re-code-*.json"):  # other interpreters' files go
        _new.clear()
        global _stored
        _stored = programs


def kept(stored: dict[str, list], new: dict[str, list], used: set[str]) -> dict[str, list]:
    """What the file holds after a run: the programs it recorded and used first, then the file's
    others in its order, MAX_PROGRAMS at most."""
    programs: dict[str, list] = {}
    for source in (new, {k: args for k, args in stored.items() if k in used}, stored):
        for k, args in source.items():
            if len(programs) >= MAX_PROGRAMS:
                return programs
            programs.setdefault(k, args)
    return programs


def _programs() -> dict[str, list]:
    global _stored
    if _stored is None:
        _stored = {}  # (a compile while it loads finds none)
        _stored = _load()
    return _stored


def _load() -> dict[str, list]:
    path = _cache_path()
    if path is None:
        return {}
    return program_cache.load(path, FORMAT, 5)


def _cache_path():
    """The cache file of this interpreter and engine (rules_engine._cache_root's directory,
    worked out here: importing the rule engine this early would cost what this saves)."""
    import _sre

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    version = "-".join(map(str, sys.version_info[:3])) + f"-{sys.implementation.cache_tag}"
    return Path(base) / "sglang-doctor" / f"re-code-{version}-{_sre.MAGIC}-{_sre.CODESIZE}.json"
