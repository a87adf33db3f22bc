"""A settled regular file's blocks as read-only mappings of the page cache (explain).

``read()`` copies every byte of a block from the page cache into a ``bytes`` object: about
0.2-0.3 s of system time per GiB on the benchmark host, on the read-ahead worker's thread.
A mapping of the same bytes costs only its page faults (about 0.05 s per GiB), and the
block search (the C extension's pass, GIL released) reads the page cache in place.

A ``MappedBlock`` is an ``mmap`` with the few ``bytes`` methods the reader calls that
``mmap`` lacks (``count``, ``startswith``, ``endswith``); its slices are ``bytes``, so a line
taken from it is what ``read()`` would have given.  (``mmap.find`` and ``rfind`` are
``bytes``'s for any non-empty needle, the only kind the reader looks for.)  The mapping is released when the last
reference to the block goes.

Only a settled file is mapped (``settled``): a regular file not written to for
``SETTLED_SECONDS``.  A file that shrinks under a mapping makes the next access to the lost
pages a SIGBUS, which no Python code can catch; a live log (``watch``, ``run``, a pipe, a
file still being written) is therefore read as before, with ``read()``.  A settled file that
grows while it is read is mapped up to its size at each block, and the rest read with
``read()`` as before.
"""

from __future__ import annotations

import mmap
import os
import stat
import time
from typing import BinaryIO, Iterator

# a file whose last change is older than this is taken to be finished (not being written)
SETTLED_SECONDS = 10.0


class MappedBlock(mmap.mmap):
    """A read-only mapping of part of a file, used as the ``bytes`` block it stands for."""

    __slots__ = ()

    def count(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        if sub:  # (bytes.count's start and end select what a slice does; one call, no _bounds)
            return self[start:end].count(sub)
        start, end = _bounds(len(self), 0 if start is None else start, end)
        return self[start:end].count(sub) if start <= end else 0

    def startswith(self, prefix, start: int = 0, end: int | None = None) -> bool:
        if isinstance(prefix, tuple):
            return any(self.startswith(p, start, end) for p in prefix)
        start, end = _bounds(len(self), start, end)
        return end - start >= len(prefix) and self[start:start + len(prefix)] == prefix

    def endswith(self, suffix, start: int = 0, end: int | None = None) -> bool:
        if isinstance(suffix, tuple):
            return any(self.endswith(s, start, end) for s in suffix)
        start, end = _bounds(len(self), start, end)
        return end - start >= len(suffix) and self[end - len(suffix):end] == suffix


def _bounds(n: int, start: int, end: int | None) -> tuple[int, int]:
    """``bytes.startswith``'s reading of start and end (slice-like; start not clipped to n)."""
    end = n if end is None else (min(end, n) if end >= 0 else max(end + n, 0))
    start = start if start >= 0 else max(start + n, 0)
    return start, end


def settled(fh: BinaryIO, now: float | None = None) -> bool:
    """Whether ``fh`` is a regular file that nothing has written to for SETTLED_SECONDS."""
    try:
        st = os.fstat(fh.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    return (time.time() if now is None else now) - st.st_mtime >= SETTLED_SECONDS


def mapped_blocks(fh: BinaryIO, size: int) -> Iterator[bytes]:
    """The file's bytes from ``fh``'s position, as MappedBlocks of ``size`` bytes while the
    file holds them; ``fh`` is then positioned after the last one, for ``read()`` to go on
    (a file that grew, or a block that could not be mapped).  Nothing when the position is
    not a multiple of the mapping granularity."""
    fd = fh.fileno()
    off = fh.tell()
    if off % mmap.ALLOCATIONGRANULARITY or size % mmap.ALLOCATIONGRANULARITY:
        return
    try:
        while True:
            n = min(size, os.fstat(fd).st_size - off)
            if n <= 0:
                break
            try:
                block = MappedBlock(fd, n, access=mmap.ACCESS_READ, offset=off)
            except (OSError, ValueError):  # (shrunk since the fstat: read() says what is left)
                break
            off += n
            yield block
            block = None
    finally:
        if not fh.closed:
            fh.seek(off)
