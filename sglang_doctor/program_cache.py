"""The private cache files of compiled regular-expression programs (``cli/re_programs.py`` for
``re``, ``diagnose/regex_programs.py`` for ``regex``): read and written only when the directory
and the file are ours and not writable by others (the same checks as the rule cache,
``rules_engine._cache_get``); a file that is missing, foreign or malformed reads as empty, and a
cache that cannot be written is only a slower next run.  Standard library only: the ``re``
cache is read before the command line's own imports."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path


def private(st: os.stat_result, kind) -> bool:
    """Owned by us, not writable by group or others, of the expected kind (no symlink)."""
    return kind(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load(path: Path, fmt: int, arity: int) -> dict[str, list]:
    """The programs stored at ``path`` in format ``fmt``, each a list of ``arity`` items; {} when
    there are none or the file is not safe to read."""
    try:
        if not private(os.lstat(path.parent), stat.S_ISDIR):
            return {}
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as fh:
            if not private(os.fstat(fh.fileno()), stat.S_ISREG):
                return {}
            blob = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    programs = blob.get("programs") if isinstance(blob, dict) and blob.get("format") == fmt else None
    if not isinstance(programs, dict):
        return {}
    return {k: p for k, p in programs.items() if isinstance(k, str) and isinstance(p, list) and len(p) == arity}


def save(path: Path, fmt: int, programs: dict[str, list], others: str) -> bool:
    """Write ``programs`` to ``path`` (atomically, in a private directory) and remove the files
    matching ``others`` beside it (other releases' or interpreters' caches); False when it could
    not be written."""
    from sglang_doctor.atomic_file import atomic_write

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(os.lstat(path.parent), stat.S_ISDIR):
            return False
        atomic_write(path, json.dumps({"format": fmt, "programs": programs}).encode("utf-8"))
        for old in path.parent.glob(others):
            if old != path:
                old.unlink()
    except Exception:  # noqa: BLE001 - a cache that cannot be written is only a slower next run
        return False
    return True


def record_compile(module, name: str, engine, lock, compile_fn):
    """``compile_fn()`` run with ``module.<name>`` (the C engine that module hands its compiled
    programs to) replaced by a proxy that records every ``engine.compile(*args)`` call; the
    result and the calls.  The lock keeps other threads' compiles off the proxy."""
    calls: list[tuple] = []

    class Recorder:
        def __getattr__(self, attr):
            return getattr(engine, attr)

        def compile(self, *args):
            calls.append(args)
            return engine.compile(*args)

    with lock:
        setattr(module, name, Recorder())
        try:
            result = compile_fn()
        finally:
            setattr(module, name, engine)
    return result, calls

