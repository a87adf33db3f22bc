"""Faults while following (issue 7): real logrotate under a running `watch`, delete and
recreate, the forced polling path, partial lines, a directory that does not exist yet, a
100 MB burst.

Accounting needs no pipe between writer and reader: every line the writer writes carries
its sequence number and every traceback a unique marker.  Two readers follow the same
file at once: an in-process ``Follower`` (whose bytes must hold every sequence number
exactly once, in order) and a real ``sglang-doctor watch --format json`` subprocess (whose
incidents must name every marker exactly once, at the line number where it was written).

copytruncate cannot promise "every line": logrotate copies the file, then truncates it,
and a line written between the two exists in neither place a follower can read.  Those
tests check that lines are never duplicated and that any loss lies inside the windows in
which logrotate was running, and report how many lines that was.

The soaks need Debian's logrotate (`apt-get install -y logrotate`); they skip without it.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sglang_doctor.read.follow import Follower

ROOT = Path(__file__).resolve().parents[2]
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
LOGROTATE = shutil.which("logrotate") or ("/usr/sbin/logrotate" if os.path.exists("/usr/sbin/logrotate") else None)
needs_logrotate = pytest.mark.skipif(LOGROTATE is None, reason="logrotate not installed (apt-get install -y logrotate)")

SEQ = re.compile(rb"seq=(\d+) ")
MARKER = re.compile(r"marker=(\d+)")
TB_EVERY = 40  # a traceback after every TB_EVERY ordinary lines


def decode_line(n: int) -> bytes:
    return (f"[2026-12-02 15:56:05 TP0] Decode batch, seq={n} #running-req: 1, #token: 37, "
            f"token usage: 0.00, cuda graph: True, gen throughput (token/s): 0.46, #queue-req: 0\n").encode()


def traceback_record(marker: int, first_seq: int) -> list[bytes]:
    """A scheduler traceback; every line holds a seq= number too, for the byte accounting."""
    s = first_seq
    return [
        f"[2026-12-02 15:56:06 TP0] Scheduler hit an exception: seq={s} Traceback (most recent call last):\n".encode(),
        f'  File "/env/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line {s + 1}, in run_scheduler_process seq={s + 1} \n'.encode(),
        f"    scheduler.event_loop_overlap()  # seq={s + 2} \n".encode(),
        f"RuntimeError: worker died, marker={marker} seq={s + 3} \n".encode(),
        f"[2026-12-02 15:56:06] Received sigquit from a child process. seq={s + 4} It usually means the child failed.\n".encode(),
    ]


class Writer(threading.Thread):
    """Appends numbered lines at a steady rate, one write() per line, like a logging handler.

    ``reopen``: reopen the path when it names another file (logging's WatchedFileHandler),
    as a server whose log is rotated in `create` mode must.  ``piece``: write each line in
    pieces of that many bytes with a pause between (a writer that emits partial lines).
    """

    def __init__(self, path: Path, *, rate: float, total: int, reopen: bool, piece: int = 0, append: bool = True):
        super().__init__(daemon=True)
        self.path, self.rate, self.total, self.reopen, self.piece = path, rate, total, reopen, piece
        self.append = append  # False: a plain `> log` redirect, which keeps its offset after copytruncate
        self.prefill = 0  # bytes of unnumbered lines written first (a server that ran a while)
        self.seq = 0  # lines written so far
        self.markers: dict[int, int] = {}  # marker -> line number (1-based) of its header
        self.done = threading.Event()
        self.error: BaseException | None = None

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | (os.O_APPEND if self.append else 0) | os.O_CREAT, 0o644)

    def run(self) -> None:
        try:
            fd = self._open()
            if self.prefill:
                block = b"[2026-12-02 15:50:00 TP0] Prefill batch, warm-up line without a number\n" * 20000
                for _ in range(max(1, self.prefill // len(block))):
                    os.write(fd, block)
            interval = 1.0 / self.rate
            next_at = time.monotonic()
            marker = 0
            while self.seq < self.total:
                if self.reopen:
                    try:
                        same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                    except FileNotFoundError:
                        same = False
                    if not same:
                        os.close(fd)
                        fd = self._open()
                if self.seq % (TB_EVERY + 5) == TB_EVERY:
                    lines = traceback_record(marker, self.seq)
                    self.markers[marker] = self.seq + 1
                    marker += 1
                else:
                    lines = [decode_line(self.seq)]
                for line in lines:
                    self._write(fd, line)
                    self.seq += 1
                next_at += interval * len(lines)
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            os.close(fd)
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            self.done.set()

    def _write(self, fd: int, line: bytes) -> None:
        if not self.piece:
            os.write(fd, line)
            return
        for i in range(0, len(line), self.piece):
            os.write(fd, line[i:i + self.piece])
            time.sleep(0.002)


class FollowReader(threading.Thread):
    """An in-process Follower that keeps every byte and every event kind it saw."""

    def __init__(self, path: Path, **kw):
        super().__init__(daemon=True)
        self.follower = Follower(path, **kw)
        self.data = bytearray()
        self.kinds: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with self.follower as f:
            while True:
                got = f.read()
                for ev in got:
                    if ev.kind == "data":
                        self.data += ev.data
                    else:
                        self.kinds.append(ev.kind)
                if not got and self.stop.is_set():
                    return
                f.wait(0.05)

    def seqs(self) -> list[int]:
        return [int(m.group(1)) for m in SEQ.finditer(bytes(self.data))]


def start_watch(path: Path, *extra: str) -> subprocess.Popen:
    cmd = [PY, "-m", "sglang_doctor", "watch", str(path), "--format", "json",
           "--poll-interval", "0.1", "--flush-after", "0.3", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


class EventReader(threading.Thread):
    """Collects the watcher's JSON events as they are printed."""

    def __init__(self, proc: subprocess.Popen):
        super().__init__(daemon=True)
        self.proc = proc
        self.events: list[dict] = []

    def run(self) -> None:
        for line in self.proc.stdout:
            if line.strip():
                self.events.append(json.loads(line))

    def markers(self) -> set[int]:
        return {int(m.group(1)) for e in list(self.events) if e["event"] == "incident"
                for m in MARKER.finditer(e["traceback"])}



def kill_if_running(proc: subprocess.Popen) -> None:
    """Teardown for every watcher a test starts: never leave one behind."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()

def stop_watch(proc: subprocess.Popen, reader: EventReader | None = None) -> tuple[list[dict], bytes, int]:
    """SIGINT the watcher; its events, stderr, and its peak RSS (kB).

    The peak is VmHWM from /proc, read just before the SIGINT: wait4's ru_maxrss would
    include the RSS pytest itself had when it forked the watcher (Linux carries the
    pre-exec high-water mark over), which after a few hundred tests is larger than watch."""
    peak_kb = _vm_hwm_kb(proc.pid)
    proc.send_signal(signal.SIGINT)
    out = bytearray()
    deadline = time.monotonic() + 30
    while reader is None and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            out += chunk
    if reader is not None:
        reader.join(30)
        out = "".join(json.dumps(e) + "\n" for e in reader.events).encode()
    _, status, _usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert b"Traceback" not in err, err[-2000:]
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return events, err, peak_kb


def _vm_hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def read_events_until(proc: subprocess.Popen, last_event: str, timeout: float) -> list[dict]:
    """Events printed (one line of JSON each) up to and with the first of kind ``last_event``."""
    events = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            events.append(json.loads(line))
            if events[-1]["event"] == last_event:
                return events
    raise AssertionError(f"no {last_event} event in time")


def wait_until_watching(proc: subprocess.Popen, timeout: float = 120) -> list[dict]:
    """Events printed until watch's first status line ("following ..." or "waiting for ... to
    appear"): from then on it watches the path, however long its start-up took."""
    return read_events_until(proc, "status", timeout)


def read_until_incident(proc: subprocess.Popen, timeout: float) -> list[dict]:
    """Events printed until the first incident."""
    return read_events_until(proc, "incident", timeout)


def wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def logrotate_conf(tmp: Path, log: Path, mode: str) -> Path:
    conf = tmp / "logrotate.conf"
    conf.write_text(f"{log} {{\n    {mode}\n    rotate 100\n    missingok\n    nocompress\n}}\n")
    return conf


def run_soak(tmp_path: Path, mode: str, *, rotate, watch_args=(), follow_kw=None, rate=250.0, total=3000,
             rotations=8, piece=0, append=True, prefill=0):
    """Writer + both readers + ``rotations`` calls of ``rotate`` spread over the run.
    Returns (writer, follow reader, watch events, loss windows as (seq_from, seq_to))."""
    log = tmp_path / "logs" / "serve.log"
    log.parent.mkdir()
    log.touch()
    writer = Writer(log, rate=rate, total=total, reopen=(mode != "copytruncate"), piece=piece, append=append)
    writer.prefill = prefill
    reader = FollowReader(log, **(follow_kw or {"poll_interval": 0.1}))
    watch = start_watch(log, *watch_args)
    watched = EventReader(watch)
    watched.start()
    windows = []
    try:
        # the watcher is up (it said what it follows) before the first line: on a loaded
        # machine its start-up can take longer than a whole rotation period
        wait_for(lambda: any(e.get("event") == "status" for e in list(watched.events)), 60, "watch to start")
        reader.start()
        writer.start()
        period = total / rate / (rotations + 1)
        for _ in range(rotations):
            time.sleep(period)
            before = writer.seq
            rotate(log)
            windows.append((before, writer.seq))
        writer.done.wait(total / rate * 3 + 30)
        assert writer.error is None, writer.error
        assert writer.seq == total
        wait_for(lambda: len(reader.seqs()) >= total or mode == "copytruncate", 30, "the follower to catch up")
        if mode != "copytruncate":  # the watcher may lag the writer: give it time to catch up
            wait_for(lambda: len(watched.markers()) >= len(writer.markers), 60, "watch to report every traceback")
        time.sleep(1.5)  # rotate grace + flush-after
        reader.stop.set()
        reader.join(10)
        events, err, rss = stop_watch(watch, watched)
    finally:
        kill_if_running(watch)
    return writer, reader, events, windows, rss


def check_lines(writer: Writer, reader: FollowReader, windows, *, lossy: bool) -> dict:
    seqs = reader.seqs()
    assert len(seqs) == len(set(seqs)), "a line was read twice"
    assert seqs == sorted(seqs), "lines came out of order"
    missing = sorted(set(range(writer.total)) - set(seqs))
    if not lossy:
        assert missing == [], f"{len(missing)} lines never read, first {missing[:10]}"
    else:
        outside = [s for s in missing if not any(a <= s <= b for a, b in windows)]
        assert outside == [], f"lines lost outside logrotate's copy/truncate windows: {outside[:10]}"
    return {"written": writer.total, "read": len(seqs), "missing": len(missing)}


def check_incidents(writer: Writer, events: list[dict], windows, *, lossy: bool, exact_lines: bool) -> dict:
    incidents = [e for e in events if e["event"] == "incident"]
    found: dict[int, list[dict]] = {}
    for inc in incidents:
        for m in MARKER.finditer(inc["traceback"]):
            found.setdefault(int(m.group(1)), []).append(inc)
    twice = {m: len(v) for m, v in found.items() if len(v) > 1}
    assert not twice, f"tracebacks reported more than once: {twice}"
    for marker, incs in found.items():
        inc = incs[0]
        assert inc["exception"]["type"] == "RuntimeError" and f"marker={marker}" in inc["exception"]["message"]
        assert not inc["truncated"], inc["traceback"]
        if exact_lines:  # nothing lost or duplicated before it: its line number is exact
            assert inc["lines"][0] == writer.markers[marker], (marker, inc["lines"], writer.markers[marker])
    missing = sorted(set(writer.markers) - set(found))
    if lossy:
        in_window = [m for m in missing
                     if any(a <= writer.markers[m] + 4 and writer.markers[m] - 1 <= b for a, b in windows)]
        assert missing == in_window, f"tracebacks lost outside logrotate's windows: {missing}"
    else:
        assert missing == [], f"tracebacks never reported: {missing}"
    return {"tracebacks": len(writer.markers), "reported": len(found)}


def logrotate(conf: Path, state: Path):
    def rotate(_log: Path) -> None:
        r = subprocess.run([LOGROTATE, "-f", "-s", str(state), str(conf)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr

    return rotate


@pytest.mark.slow
@needs_logrotate
@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_logrotate_create_loses_nothing(tmp_path, poll):
    conf = logrotate_conf(tmp_path, tmp_path / "logs" / "serve.log", "create")
    writer, reader, events, windows, rss = run_soak(
        tmp_path, "create", rotate=logrotate(conf, tmp_path / "state"),
        watch_args=("--poll",) if poll else (),
        follow_kw={"poll_interval": 0.1, "use_inotify": not poll})
    lines = check_lines(writer, reader, windows, lossy=False)
    tbs = check_incidents(writer, events, windows, lossy=False, exact_lines=True)
    assert reader.kinds.count("rotated") >= 6
    rotated = sorted((tmp_path / "logs").glob("serve.log.*"))
    assert len(rotated) == 8
    print(f"\nlogrotate create ({'poll' if poll else 'inotify'}): {lines}, {tbs}, watch peak RSS {rss} kB")


@pytest.mark.slow
@needs_logrotate
def test_logrotate_copytruncate_no_duplicates_losses_only_in_its_window(tmp_path):
    log = tmp_path / "logs" / "serve.log"
    conf = logrotate_conf(tmp_path, log, "copytruncate")
    writer, reader, events, windows, rss = run_soak(tmp_path, "copytruncate", rotate=logrotate(conf, tmp_path / "state"))
    lines = check_lines(writer, reader, windows, lossy=True)
    tbs = check_incidents(writer, events, windows, lossy=True, exact_lines=False)
    assert reader.kinds.count("truncated") >= 6
    # what the follower missed is in the rotated copies: copytruncate's own window, not ours
    copies = b"".join(p.read_bytes() for p in (tmp_path / "logs").glob("serve.log.*"))
    in_copies = {int(m.group(1)) for m in SEQ.finditer(copies)}
    missed = set(range(writer.total)) - set(reader.seqs())
    assert missed <= in_copies | set().union(*(range(a, b + 1) for a, b in windows))
    print(f"\nlogrotate copytruncate: {lines}, {tbs}, watch peak RSS {rss} kB")


def delete_and_recreate(log: Path) -> None:
    log.unlink()
    log.touch()


@pytest.mark.slow
@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_delete_and_recreate_loses_nothing(tmp_path, poll):
    writer, reader, events, windows, rss = run_soak(
        tmp_path, "create", rotate=delete_and_recreate, total=2000, rotations=6,
        watch_args=("--poll",) if poll else (), follow_kw={"poll_interval": 0.1, "use_inotify": not poll})
    lines = check_lines(writer, reader, windows, lossy=False)
    tbs = check_incidents(writer, events, windows, lossy=False, exact_lines=True)
    print(f"\ndelete+recreate ({'poll' if poll else 'inotify'}): {lines}, {tbs}")


@pytest.mark.slow
def test_partial_line_writer(tmp_path):
    """Every line arrives in 7-byte pieces: lines and tracebacks still come out whole."""
    writer, reader, events, windows, rss = run_soak(
        tmp_path, "create", rotate=lambda log: None, total=600, rotations=0, rate=100.0, piece=7)
    lines = check_lines(writer, reader, windows, lossy=False)
    tbs = check_incidents(writer, events, windows, lossy=False, exact_lines=True)
    assert tbs["reported"] == tbs["tracebacks"] > 10
    print(f"\npartial lines: {lines}, {tbs}")


def test_partial_lines_through_watch(tmp_path):
    """Quick form: a traceback written a few bytes at a time, with pauses longer than
    --flush-after mid-line, comes out as one whole incident."""
    log = tmp_path / "serve.log"
    log.touch()
    watch = start_watch(log)
    try:
        wait_until_watching(watch)
        record = b"".join(traceback_record(7, 1))
        with open(log, "ab", buffering=0) as fh:
            for i in range(0, len(record), 50):
                fh.write(record[i:i + 50])
                time.sleep(0.4 if i % 150 == 0 else 0.01)
        events = read_until_incident(watch, 120)
        events += stop_watch(watch)[0]
    finally:
        kill_if_running(watch)
    incidents = [e for e in events if e["event"] == "incident"]
    assert len(incidents) == 1, incidents
    assert incidents[0]["traceback"] == record.decode().rstrip("\n")


def test_a_partial_line_that_never_ends_delays_the_incident_only_a_few_gaps(tmp_path):
    """The writer died mid-line: after a few --flush-after gaps the incident comes out anyway."""
    log = tmp_path / "serve.log"
    log.touch()
    watch = start_watch(log, "--flush-after", "0.2")
    try:
        wait_until_watching(watch)
        log.write_bytes(b"".join(traceback_record(9, 1)[:4]) + b"[2026-12-02 15:56:07] partial wri")
        t0 = time.monotonic()
        events = read_until_incident(watch, 20)  # before any Ctrl-C
        waited = time.monotonic() - t0
        stop_watch(watch)
    finally:
        kill_if_running(watch)
    (inc,) = [e for e in events if e["event"] == "incident"]
    assert "marker=9" in inc["exception"]["message"]
    assert waited >= 0.2 * 3, waited  # it did wait for the line to be completed


def test_ctrl_c_reports_the_incident_still_open(tmp_path):
    """Interrupted inside the --flush-after gap: the traceback already read is reported."""
    log = tmp_path / "serve.log"
    log.touch()
    watch = start_watch(log, "--flush-after", "30")
    try:
        wait_until_watching(watch)
        log.write_bytes(b"".join(traceback_record(5, 1)[:4]))  # no line after it closes it
        time.sleep(0.8)
        events, _, _ = stop_watch(watch)
    finally:
        kill_if_running(watch)
    incidents = [e for e in events if e["event"] == "incident"]
    assert [MARKER.search(i["traceback"]).group(1) for i in incidents] == ["5"]


def test_watch_before_the_directory_exists(tmp_path):
    log = tmp_path / "a" / "b" / "c" / "serve.log"
    watch = start_watch(log)
    try:
        wait_until_watching(watch)
        (tmp_path / "a" / "b").mkdir(parents=True)
        time.sleep(0.3)
        log.parent.mkdir()
        log.write_bytes(b"".join(traceback_record(3, 1)))
        events = read_until_incident(watch, 120)
        events += stop_watch(watch)[0]
    finally:
        kill_if_running(watch)
    incidents = [e for e in events if e["event"] == "incident"]
    assert [MARKER.search(i["traceback"]).group(1) for i in incidents] == ["3"]


@pytest.mark.slow
def test_100_mb_burst_bounded_memory(tmp_path):
    log = tmp_path / "serve.log"
    log.touch()
    watch = start_watch(log)
    try:
        time.sleep(1.0)
        block = b"".join(decode_line(i) for i in range(5000))
        written = 0
        with open(log, "ab") as fh:
            while written < 100 << 20:
                fh.write(block)
                written += len(block)
            fh.write(b"".join(traceback_record(1, written)))
        lines = written // len(block) * 5000
        early = read_until_incident(watch, 120)
        events, _, rss = stop_watch(watch)
        events = early + events
    finally:
        kill_if_running(watch)
    incidents = [e for e in events if e["event"] == "incident"]
    assert len(incidents) == 1 and incidents[0]["lines"][0] == lines + 1
    print(f"\n100 MB burst ({written} bytes, {lines} lines): watch peak RSS {rss / 1024:.0f} MiB")
    assert rss < 150 * 1024, f"peak RSS {rss} kB"


@needs_logrotate
@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_logrotate_copytruncate_non_append_writer_loses_only_its_window(tmp_path, poll):
    """Issue 11 item 8: a writer not in append mode (a plain `> log`) keeps writing at its old
    offset after copytruncate, leaving a NUL-filled hole before its next line.  Every line
    written outside logrotate's copy->truncate windows is read exactly once (what the
    follower had not read before a truncation is read from logrotate's copy), no NUL byte
    of the hole is delivered, and every traceback outside a window is reported whole."""
    log = tmp_path / "logs" / "serve.log"
    conf = logrotate_conf(tmp_path, log, "copytruncate")
    writer, reader, events, windows, rss = run_soak(
        tmp_path, "copytruncate", rotate=logrotate(conf, tmp_path / "state"), total=3000, rate=500.0, append=False,
        watch_args=("--poll",) if poll else (), follow_kw={"poll_interval": 0.1, "use_inotify": not poll})
    lines = check_lines(writer, reader, windows, lossy=True)
    tbs = check_incidents(writer, events, windows, lossy=True, exact_lines=False)
    assert reader.kinds.count("truncated") >= 6
    assert b"\0" not in bytes(reader.data), "the NUL-filled hole was delivered"
    assert "gap" in reader.kinds
    in_windows = sum(b - a + 1 for a, b in windows)
    print(f"\nlogrotate copytruncate, non-append writer ({'poll' if poll else 'inotify'}): {lines}, {tbs}, "
          f"lines written during logrotate's runs {in_windows}, watch peak RSS {rss} kB")


@pytest.mark.slow
@needs_logrotate
def test_logrotate_copytruncate_non_append_writer_soak(tmp_path):
    """The issue's scale: 48,000 lines at 2,000 lines/s, 16 rotations, a non-append writer
    that had written 64 MB before (so every hole is 64 MB of NULs: the old reader stalled
    about 0.8 s per MB on them and fell behind the rotations)."""
    log = tmp_path / "logs" / "serve.log"
    conf = logrotate_conf(tmp_path, log, "copytruncate")
    writer, reader, events, windows, rss = run_soak(
        tmp_path, "copytruncate", rotate=logrotate(conf, tmp_path / "state"), total=48000, rate=2000.0,
        rotations=16, append=False, prefill=64 << 20)
    lines = check_lines(writer, reader, windows, lossy=True)
    tbs = check_incidents(writer, events, windows, lossy=True, exact_lines=False)
    assert b"\0" not in bytes(reader.data)
    in_windows = sum(b - a + 1 for a, b in windows)
    print(f"\nlogrotate copytruncate soak, non-append writer: {lines}, {tbs}, lines written during "
          f"logrotate's runs {in_windows}, watch peak RSS {rss} kB")
