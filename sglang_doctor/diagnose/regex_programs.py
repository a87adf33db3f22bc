"""The rule pack's regexes compiled once per ``regex`` release, not once per run.

``regex.compile`` parses a pattern in Python (about 0.35-0.9 ms a pattern, most of it in
``enum`` flag arithmetic) and hands the program it made, a list of integers plus a few
tables, to the C engine (``_regex.compile``, a few microseconds).  A run of ``explain`` on a
log with incidents compiles 100-130 of the pack's patterns at its first diagnoses, on the
main thread, while the read-ahead threads wait for it: 50-110 ms of a 1 GiB run's wall.

This module keeps those programs: the first compile of a pattern records what
``regex.compile`` hands the engine, and ``save`` writes the programs to a private cache
file (the rule cache's directory and rules, ``program_cache``), keyed by the
``regex`` release and its engine's ``MAGIC``; later runs give the engine the stored program
directly.  A pattern made so is the one ``regex.compile`` makes (the same arguments to the
same engine).  Anything unexpected (another ``regex`` layout, a program that is not plain
integers and strings, an unreadable or foreign cache file) falls back to ``regex.compile``.

Recording swaps ``regex._main``'s reference to its engine for the length of one compile,
under a lock; the ``regex`` module is otherwise only compiled from this process's main
thread (the read-ahead threads search bytes, they compile nothing).
"""

from __future__ import annotations

import os
import threading
from array import array
from pathlib import Path
from typing import Any

FORMAT = 2
_lock = threading.Lock()
_stored: dict[str, list] | None = None  # key -> program, from the cache file (loaded once)
_new: dict[str, list] = {}  # programs recorded in this run, not in the file yet


def compile(source: str, flags: int) -> Any:  # noqa: A001 - regex.compile's twin
    """``regex.compile(source, flags)``, from the stored program when there is one."""
    import regex

    engine = _engine()
    key = f"{flags}:{source}"
    if engine is not None:
        program = _programs().get(key) or _new.get(key)
        if program is not None:
            try:
                return engine.compile(*_unpack(source, program))
            except Exception:  # noqa: BLE001 - not a program this engine takes: compiled anew
                pass
        recorded = _record(regex, engine, source, flags)
        if recorded is not None:
            pattern, program = recorded
            if not _new:
                import atexit

                atexit.register(save)  # (once a run has something new to keep)
            _new[key] = program
            return pattern
    return regex.compile(source, flags)


def save() -> None:
    """Write the programs recorded in this run to the cache file (with those it held)."""
    if not _new or os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return
    path = _cache_path()
    if path is None:
        return
    from sglang_doctor import program_cache

    programs = dict(_programs())
    programs.update(_new)
    if program_cache.save(path, FORMAT, programs, "regex-programs-*.json"):  # other regex releases' files go
        _new.clear()
        global _stored
        _stored = programs


def _engine() -> Any:
    """regex's C engine, when regex.compile is laid out as this module expects."""
    try:
        import regex._main as main
    except ImportError:
        return None
    engine = getattr(main, "_regex", None)
    if engine is None or not hasattr(engine, "compile") or not hasattr(engine, "MAGIC") \
            or getattr(engine, "CODE_SIZE", None) != array("I").itemsize:
        return None
    return engine


def _record(regex, engine, source: str, flags: int) -> tuple[Any, list] | None:
    """(pattern, program): regex.compile's pattern and what it gave the engine, or None."""
    import regex._main as main

    from sglang_doctor import program_cache

    try:
        pattern, calls = program_cache.record_compile(
            main, "_regex", engine, _lock, lambda: regex.compile(source, flags, cache_pattern=False))
    except TypeError:  # (a regex without cache_pattern: the caller compiles it as before)
        return None
    if len(calls) != 1:
        return None
    program = _pack(calls[0])
    try:
        if program is None or _unpack(source, program) != tuple(calls[0]):
            return None
    except (TypeError, ValueError):
        return None
    return pattern, program


def _pack(args: tuple) -> list | None:
    """The engine's arguments as JSON data (the code as the hex of its 32-bit words), or None
    when they are not the plain kind (named lists, which hold sets, are the one thing the
    pack's patterns never use)."""
    if len(args) != 11:
        return None
    _source, flags, code, group_index, index_group, named_lists, named_list_indexes, \
        req_offset, req_chars, req_flags, group_count = args
    if named_lists or named_list_indexes or not isinstance(code, list) or not isinstance(req_chars, tuple):
        return None
    try:
        words = array("I", code)
    except (TypeError, OverflowError):
        return None
    try:  # (the flags are enum members, which are ints: stored as the ints they equal)
        return [int(flags), words.tobytes().hex(), sorted(group_index.items(), key=lambda kv: kv[1]),
                sorted(index_group.items()), int(req_offset), [int(c) for c in req_chars], int(req_flags),
                int(group_count)]
    except (TypeError, ValueError):
        return None


def _unpack(source: str, program: list) -> tuple:
    """The engine's arguments from a stored program (ValueError or TypeError when it is not
    one: every part is checked for its kind, so the engine is given only what _pack wrote)."""
    flags, code, group_index, index_group, req_offset, req_chars, req_flags, group_count = program
    ints = (flags, req_offset, req_flags, group_count, *req_chars)
    if not all(type(x) is int for x in ints) or not isinstance(code, str):
        raise TypeError("not a stored program")
    words = array("I")
    words.frombytes(bytes.fromhex(code))
    return (source, flags, words.tolist(), {str(k): int(v) for k, v in group_index},
            {int(k): str(v) for k, v in index_group}, {}, [], req_offset, tuple(req_chars), req_flags,
            group_count)


def _programs() -> dict[str, list]:
    """The stored programs of this regex release (loaded once; {} when there are none)."""
    global _stored
    if _stored is None:
        _stored = _load()
    return _stored


def _load() -> dict[str, list]:
    from sglang_doctor import program_cache

    if os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return {}
    path = _cache_path()
    if path is None:
        return {}
    return program_cache.load(path, FORMAT, 8)


def _cache_path() -> Path | None:
    engine = _engine()
    if engine is None:
        return None
    import regex

    from sglang_doctor.diagnose.rules_engine import _cache_root

    root = _cache_root()
    if root is None:
        return None
    return root / f"regex-programs-{regex.__version__}-{engine.MAGIC}.json"
