"""Follow a log file by name, like ``tail -F``, and deliver every byte exactly once.

The follower survives a file that does not exist yet (nor its directory), copytruncate
(truncated in place, possibly rewritten past the old size), rotation by rename + recreate,
deletion + recreation, and file systems where inotify events never arrive.

Truth is ``stat`` plus reading to EOF. watchdog's inotify events are only wake-ups: the
follower also polls every ``poll_interval`` seconds, so a lost event costs latency, never
data. ``use_inotify=False`` forces the pure polling path.

Usage::

    with Follower("/root/sglang-serve.log") as follower:
        while True:
            for event in follower.read():
                ...                       # event.kind == "data": event.data is the next bytes
            follower.wait(1.0)

Events (``FollowEvent.kind``):

- ``"waiting"``   the path does not exist (yet); emitted once per absence.
- ``"opened"``    a file is being followed (first open, or after "waiting"); the next data
                  starts at offset 0 (or at the end of the file with ``start_at_end``).
- ``"data"``      the next bytes of the current file, in order.
- ``"truncated"`` the file shrank below our position, or the bytes just before our position
                  changed (truncated and written past our position again, which a writer
                  not in append mode does after copytruncate); what we had not read yet is
                  first read from logrotate's copy when one is found next to the file
                  (same bytes before our position); reading then restarts at offset 0.
- ``"gap"``       a run of NUL bytes was skipped (the hole a writer not in append mode
                  leaves after copytruncate: it keeps writing at its old offset); the data
                  after it follows.  NULs carry no text, so no line changes.
- ``"rotated"``   the path now names another file (renamed away + recreated, or deleted +
                  recreated). The old file was read to its end first; reading continues
                  at offset 0 of the new file.
- ``"deleted"``   the file was removed (after being read to its end); a "waiting" follows.
- ``"lost"``      (inotify only) a file was renamed away from the path before the follower
                  could open it: it was created and rotated away between two reads (a log
                  rotating every few milliseconds, or a follower starved of CPU). Its lines
                  are not in the stream; ``detail`` names the file that holds them. Polling
                  cannot notice this (``tail -F`` has the same limit) and stays silent.

"opened", "truncated" and "rotated" start a new generation: a consumer that splits bytes
into lines should end a pending partial line there.

Errors that the user must fix (a directory, a FIFO, permission denied, a path component
that is a file) raise :class:`FollowError` with a one-line message.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from dataclasses import dataclass

from watchdog.events import FileClosedNoWriteEvent, FileOpenedEvent, FileSystemEventHandler
from watchdog.observers import Observer

__all__ = ["Follower", "FollowEvent", "FollowError"]

CHUNK_SIZE = 1 << 20          # one os.pread
MAX_READ_BYTES = 4 << 20      # data returned by one read() call at most
FINGERPRINT_SIZE = 256        # bytes compared to notice a rewrite past our position
# a NUL run at least this long where a read starts is skipped; right after a skipped run or
# a truncation any run is (past a sparse hole, SEEK_DATA lands on the first data page,
# which begins with zeros up to the writer's offset)
MIN_NUL_RUN = 64


class FollowError(Exception):
    """The path cannot be followed (directory, not a regular file, permission denied...).

    ``str(error)`` is a one-line message meant for the user.
    """


@dataclass
class FollowEvent:
    kind: str  # "data" | "opened" | "truncated" | "rotated" | "deleted" | "waiting"
    data: bytes = b""
    detail: str = ""


@dataclass
class _OpenFile:
    """One generation: an open descriptor, its identity, how far we read it."""

    fd: int
    dev: int
    ino: int
    pos: int = 0
    head: bytes = b""  # first bytes of this file as we read them
    tail: bytes = b""  # the file's bytes just before ``pos`` as we read them
    hole: bool = False  # at a truncation or just past skipped NULs: any NUL run is skipped

    def same_file(self, st: os.stat_result) -> bool:
        return st.st_dev == self.dev and st.st_ino == self.ino


@dataclass
class _PendingSwitch:
    """The path names another file (or nothing); the old one is drained before switching."""

    since: float                  # when the change was noticed (monotonic)
    last_old_data: float          # when the old file last gave us bytes
    new: _OpenFile | None = None  # the new file, pinned by descriptor as soon as seen


def _describe_os_error(path: str, err: OSError) -> str:
    reason = err.strerror or str(err)
    return f"cannot follow {path}: {reason}"


class Follower:
    """Follow ``path`` by name. Not thread-safe: call read()/wait() from one thread."""

    def __init__(
        self,
        path,
        *,
        poll_interval: float = 1.0,
        use_inotify: bool = True,
        start_at_end: bool = False,
        rotate_grace: float = 1.0,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        """
        ``rotate_grace``: after the path starts naming another file, keep reading the old
        one until it has been quiet this long, or until the new file has data (a single
        writer that moved on to the new file is done with the old one).
        """
        if poll_interval <= 0:
            raise ValueError("poll_interval must be > 0")
        self.path = os.path.abspath(os.fspath(path))
        self.poll_interval = poll_interval
        self.rotate_grace = rotate_grace
        self.max_read_bytes = max(1, max_read_bytes)
        self._start_at_end = start_at_end
        self._file: _OpenFile | None = None
        self._pending: _PendingSwitch | None = None
        self._announced_waiting = False
        self._more = False          # read() stopped at max_read_bytes with data left
        self._closed = False
        self._wake = threading.Event()
        self._observer = None
        self._watch = None
        self._watched_dir: str | None = None
        self._watched_id: tuple[int, int] | None = None
        self._use_inotify = use_inotify
        self._followed: set[tuple[int, int]] = set()  # (dev, ino) of every file we opened
        self._moved_lock = threading.Lock()
        self._moved_away: list[tuple[str, tuple[int, int] | None]] = []  # from the watch thread
        self._check_path()  # fail early on a directory, a FIFO, an unreadable file
        if use_inotify:
            self._start_observer()

    # ----------------------------------------------------------------- public API

    def read(self) -> list[FollowEvent]:
        """Everything available now (at most ``max_read_bytes`` of data); never blocks."""
        if self._closed:
            raise FollowError(f"follower of {self.path} is closed")
        self._wake.clear()  # an event arriving from now on makes the next wait() return
        self._more = False
        events: list[FollowEvent] = []
        budget = self.max_read_bytes
        self._report_lost(events)
        if self._observer is not None:
            self._update_watch()
        if self._file is None:
            self._try_open(events)
        while self._file is not None and budget > 0:
            budget -= self._read_current(events, budget)
            if budget <= 0:
                self._more = True
                break
            if not self._check_identity(events):
                break  # still on the same file (or draining the old one)
        return events

    def wait(self, timeout: float) -> None:
        """Block until something may have changed: a watchdog wake-up, the poll interval,
        the end of a rotation grace, or ``timeout`` -- whichever comes first."""
        if self._more or self._closed:
            return
        limit = min(timeout, self.poll_interval)
        if self._pending is not None:
            left = self._pending.last_old_data + self.rotate_grace - time.monotonic()
            limit = min(limit, max(left, 0.0) + 0.005)
        if limit > 0:
            self._wake.wait(limit)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        for f in (self._file, self._pending.new if self._pending else None):
            if f is not None:
                os.close(f.fd)
        self._file = None
        self._pending = None

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; close() is the real API
        try:
            self.close()
        except Exception:
            pass

    # ----------------------------------------------------------------- opening

    def _check_path(self) -> None:
        """Raise FollowError if the path exists but can never be followed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno == errno.ENOTDIR:
                raise FollowError(f"cannot follow {self.path}: a parent in the path is not a directory") from None
            raise FollowError(_describe_os_error(self.path, err)) from None
        self._check_mode(st)
        if not os.access(self.path, os.R_OK):
            raise FollowError(f"cannot follow {self.path}: permission denied")

    def _check_mode(self, st: os.stat_result) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise FollowError(f"cannot follow {self.path}: it is a directory, not a log file")
        if not stat.S_ISREG(st.st_mode):
            raise FollowError(f"cannot follow {self.path}: not a regular file (pipe a stream on stdin instead)")

    def _open(self) -> _OpenFile | None:
        """Open the path; None if it does not exist. The descriptor's fstat is the truth."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise FollowError(f"cannot follow {self.path}: it is a directory, not a log file") from None
        except PermissionError:
            raise FollowError(f"cannot follow {self.path}: permission denied") from None
        except OSError as err:
            if err.errno == errno.ENOTDIR:
                raise FollowError(f"cannot follow {self.path}: a parent in the path is not a directory") from None
            raise FollowError(_describe_os_error(self.path, err)) from None
        st = os.fstat(fd)
        try:
            self._check_mode(st)
        except FollowError:
            os.close(fd)
            raise
        self._followed.add((st.st_dev, st.st_ino))
        return _OpenFile(fd=fd, dev=st.st_dev, ino=st.st_ino)

    def _note_moved_away(self, dest: str) -> None:
        """Watch thread: the file at the path was renamed to ``dest``; remember which file."""
        try:
            st = os.stat(dest, follow_symlinks=False)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None  # already moved on or deleted: we cannot tell which file it was
        with self._moved_lock:
            self._moved_away.append((dest, ident))

    def _report_lost(self, events: list[FollowEvent]) -> None:
        """A file renamed away from the path that we never opened was never read: say so.
        Every rename noted before this read() happened before it, so a file it names that we
        had not opened by now can no longer be opened through the path."""
        with self._moved_lock:
            moved, self._moved_away = self._moved_away, []
        for dest, ident in moved:
            if ident is not None and ident not in self._followed:
                events.append(FollowEvent("lost", detail=(
                    f"{self.path} was renamed to {dest} before it could be read (it rotated faster "
                    f"than it was followed); its lines are not in this stream: read {dest}")))

    def _try_open(self, events: list[FollowEvent]) -> None:
        opened = self._open()
        if opened is None:
            if not self._announced_waiting:
                self._announced_waiting = True
                events.append(FollowEvent("waiting", detail=f"waiting for {self.path} to appear"))
            self._start_at_end = False  # a file that appears later is new: read it all
            return
        self._file = opened
        self._announced_waiting = False
        detail = f"following {self.path}"
        if self._start_at_end:
            self._start_at_end = False
            opened.pos = os.fstat(opened.fd).st_size
            opened.head = os.pread(opened.fd, min(FINGERPRINT_SIZE, opened.pos), 0)
            opened.tail = os.pread(opened.fd, min(FINGERPRINT_SIZE, opened.pos), opened.pos - min(FINGERPRINT_SIZE, opened.pos))
            detail += f" from its end (byte {opened.pos})"
        events.append(FollowEvent("opened", detail=detail))

    # ----------------------------------------------------------------- reading

    def _read_current(self, events: list[FollowEvent], budget: int) -> int:
        """Check for truncation, then read the current file to EOF (within budget)."""
        f = self._file
        assert f is not None
        if self._pending is None:  # an old, rotated-away file is only drained
            self._check_truncation(f, events)
        chunks: list[bytes] = []
        total = 0
        skipped = 0
        gap_at = 0
        while total < budget:
            chunk = os.pread(f.fd, min(CHUNK_SIZE, budget - total), f.pos)
            if not chunk:
                break
            if chunk[0] == 0:
                run = self._nul_run(f, chunk)
                f.hole = bool(run)
                if run:
                    if not skipped:
                        gap_at = f.pos
                    skipped += run
                    f.tail = (f.tail + b"\0" * min(run, FINGERPRINT_SIZE))[-FINGERPRINT_SIZE:]
                    f.pos += run
                    continue
            f.hole = False
            if len(f.head) < FINGERPRINT_SIZE and f.pos == len(f.head):
                f.head = (f.head + chunk)[:FINGERPRINT_SIZE]
            f.tail = (f.tail + chunk[-FINGERPRINT_SIZE:])[-FINGERPRINT_SIZE:]
            f.pos += len(chunk)
            total += len(chunk)
            chunks.append(chunk)
        if skipped:
            events.append(FollowEvent("gap", detail=(
                f"{self.path}: skipped {skipped} NUL bytes from byte {gap_at} (the hole a writer not in "
                f"append mode leaves after copytruncate)")))
        if chunks:
            events.append(FollowEvent("data", data=b"".join(chunks)))
            if self._pending is not None:
                self._pending.last_old_data = time.monotonic()
        return total

    @staticmethod
    def _nul_run(f: _OpenFile, chunk: bytes) -> int:
        """Bytes of NUL to skip at ``f.pos`` (chunk is what is there), 0 to read them."""
        run = len(chunk) - len(chunk.lstrip(b"\0"))
        if run < len(chunk):
            return run if run >= MIN_NUL_RUN or f.hole else 0
        # all NULs: a sparse hole can be jumped over without reading it (SEEK_DATA)
        try:
            data_at = os.lseek(f.fd, f.pos, getattr(os, "SEEK_DATA", 3))
        except OSError:  # ENXIO: no data after pos (yet); EINVAL: not supported
            return run
        return max(run, data_at - f.pos)

    def _check_truncation(self, f: _OpenFile, events: list[FollowEvent]) -> None:
        """Truncation is judged by size and position: the file is shorter than our position,
        or the bytes just before our position are not the ones we read there."""
        size = os.fstat(f.fd).st_size
        if size < f.pos:
            reason = f"{self.path} was truncated (size {size} < position {f.pos}); reading it from the start"
        elif f.tail and os.pread(f.fd, len(f.tail), f.pos - len(f.tail)) != f.tail:
            reason = (f"{self.path} was truncated and written past our position again (the bytes before "
                      f"byte {f.pos} changed); reading it from the start")
        elif f.head and f.pos >= len(f.head) and os.pread(f.fd, len(f.head), 0) != f.head:
            reason = f"{self.path} was rewritten (its first bytes changed); reading it from the start"
        else:
            return
        recovered = self._read_from_copy(f, events)
        if recovered:
            reason += f" ({recovered} bytes not yet read were read from logrotate's copy first)"
        f.pos = 0
        f.head = b""
        f.tail = b""
        f.hole = True  # a writer not in append mode leaves NULs before its next line
        events.append(FollowEvent("truncated", detail=reason))

    def _read_from_copy(self, f: _OpenFile, events: list[FollowEvent]) -> int:
        """copytruncate: logrotate copied the file before truncating it.  When a file next to
        ours (``serve.log.1``, ``serve.log-20261203``, ...) holds the bytes we read just
        before our position, the rest of it is what we had not read yet: deliver it."""
        if not f.tail:
            return 0
        directory, base = os.path.split(self.path)
        found: list[tuple[float, str]] = []
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    if not entry.name.startswith(base) or entry.name == base:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode) and st.st_size > f.pos and st.st_ino != f.ino:
                        found.append((st.st_mtime, entry.path))
        except OSError:
            return 0
        for _, candidate in sorted(found, reverse=True):
            try:
                fd = os.open(candidate, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue
            try:
                if os.pread(fd, len(f.tail), f.pos - len(f.tail)) != f.tail:
                    continue
                pos = f.pos
                while True:
                    chunk = os.pread(fd, CHUNK_SIZE, pos)
                    if not chunk:
                        break
                    events.append(FollowEvent("data", data=chunk))
                    pos += len(chunk)
                return pos - f.pos
            except OSError:
                continue
            finally:
                os.close(fd)
        return 0

    # ----------------------------------------------------------------- rotation

    def _check_identity(self, events: list[FollowEvent]) -> bool:
        """Compare the path with the open file. Returns True when we switched files (the
        caller reads the new one right away), False when nothing more to do now."""
        f = self._file
        assert f is not None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        except OSError as err:
            if err.errno == errno.ENOTDIR:
                st = None  # a parent was replaced by a file; treat the log as gone
            else:
                raise FollowError(_describe_os_error(self.path, err)) from None
        if st is not None and f.same_file(st):
            if self._pending is not None:  # it came back (e.g. renamed away and back)
                if self._pending.new is not None:
                    os.close(self._pending.new.fd)
                self._pending = None
            return False
        now = time.monotonic()
        if self._pending is None:
            # Just noticed; the old file was read to EOF by the caller a moment ago.
            self._pending = _PendingSwitch(since=now, last_old_data=now)
        pending = self._pending
        if pending.new is None and st is not None:
            pending.new = self._open()  # pin the new file before it can move again
        new_has_data = pending.new is not None and os.fstat(pending.new.fd).st_size > 0
        # Drain the old file once more *after* looking at the new one: a writer that has
        # already written to the new file has finished with the old one.
        drained = self._drain_old(events)
        quiet = now - pending.last_old_data >= self.rotate_grace
        if not ((new_has_data and drained == 0) or quiet):
            return False
        self._switch(events)
        return self._file is not None

    def _drain_old(self, events: list[FollowEvent]) -> int:
        f = self._file
        assert f is not None
        before = f.pos
        while f.pos - before < self.max_read_bytes:
            chunk = os.pread(f.fd, CHUNK_SIZE, f.pos)
            if not chunk:
                break
            f.pos += len(chunk)
            events.append(FollowEvent("data", data=chunk))
        if f.pos - before >= self.max_read_bytes:
            self._more = True
        if f.pos > before:
            self._pending.last_old_data = time.monotonic()
        return f.pos - before

    def _switch(self, events: list[FollowEvent]) -> None:
        old = self._file
        pending = self._pending
        assert old is not None and pending is not None
        moved_to = self._find_by_inode(old)
        os.close(old.fd)
        self._pending = None
        self._file = pending.new
        gone = f"{self.path} was renamed to {moved_to}" if moved_to else f"{self.path} was replaced"
        if self._file is not None:
            events.append(FollowEvent(
                "rotated",
                detail=f"{gone} (read to its end); following the new {self.path}"))
            return
        if moved_to:
            detail = f"{gone} (read to its end); waiting for a new {self.path}"
        else:
            detail = f"{self.path} was deleted (read to its end); waiting for it to reappear"
        events.append(FollowEvent("deleted", detail=detail))
        self._announced_waiting = True
        events.append(FollowEvent("waiting", detail=f"waiting for {self.path} to appear"))

    def _find_by_inode(self, f: _OpenFile) -> str | None:
        """The old file's new name in the same directory (rotation), if any."""
        directory = os.path.dirname(self.path)
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_ino == f.ino and st.st_dev == f.dev:
                        return entry.path
        except OSError:
            pass
        return None

    # ----------------------------------------------------------------- watchdog

    def _start_observer(self) -> None:
        self._observer = Observer()
        self._observer.daemon = True
        self._observer.start()
        self._update_watch()

    def _nearest_existing_dir(self) -> str:
        directory = os.path.dirname(self.path)
        while not os.path.isdir(directory):
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        return directory

    def _update_watch(self) -> None:
        """Watch the file's directory, or its nearest existing ancestor until it exists.
        Re-schedules when the directory appears, vanishes or is replaced."""
        for _ in range(64):  # directories may appear while we re-schedule
            directory = self._nearest_existing_dir()
            try:
                st = os.stat(directory)
                ident = (st.st_dev, st.st_ino)
            except OSError:
                ident = None
            if directory == self._watched_dir and ident == self._watched_id and self._watch is not None:
                return
            self._unschedule()
            try:
                self._watch = self._observer.schedule(_WakeHandler(self), directory, recursive=False)
            except OSError:
                self._watch = None  # e.g. out of inotify watches: the poll still works
                return
            self._watched_dir, self._watched_id = directory, ident
            self._wake.set()  # something may have been created before the watch started

    def _unschedule(self) -> None:
        if self._watch is not None:
            try:
                self._observer.unschedule(self._watch)
            except (KeyError, OSError):
                pass
        self._watch = None
        self._watched_dir = self._watched_id = None

    def _relevant(self, src: str, dest: str | None) -> bool:
        if self._pending is not None:
            return True  # the old file lives under another name now
        for p in (src, dest):
            if p and (p == self.path or self.path.startswith(p.rstrip(os.sep) + os.sep)):
                return True
        return False


class _WakeHandler(FileSystemEventHandler):
    """watchdog callback: sets the follower's wake-up event; never reads. A rename away from
    the path is noted (one stat of its new name) so that a file renamed away before the
    follower opened it is reported as lost instead of silently skipped."""

    _ignored = (FileOpenedEvent, FileClosedNoWriteEvent)  # our own reads cause these

    def __init__(self, follower: Follower) -> None:
        self._follower = follower

    def on_any_event(self, event) -> None:
        if isinstance(event, self._ignored):
            return
        src = os.fsdecode(event.src_path)
        dest = os.fsdecode(getattr(event, "dest_path", "") or "") or None
        if event.event_type == "moved" and dest and src == self._follower.path and not event.is_directory:
            self._follower._note_moved_away(dest)
        if self._follower._relevant(src, dest):
            self._follower._wake.set()
