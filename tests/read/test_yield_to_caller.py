"""The read-ahead's pass threads run one priority step below the thread that reads the
blocks they hand over (``scanner.yield_to_caller``): under SCHED_OTHER one nice level more,
under a real-time policy one priority less (never below 1).  Real threads, the kernel's own
answer for each; no timing is asserted."""

from __future__ import annotations

import os
import threading

import pytest

from sglang_doctor.read import scanner

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getscheduler") or not hasattr(threading, "get_native_id"),
                                reason="per-thread scheduling (Linux)")


def level() -> tuple[str, int]:
    """The calling thread's place: ("rt", priority) or ("nice", nice value)."""
    if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
        return "rt", os.sched_getparam(0).sched_priority
    return "nice", os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def one_step_below(before: tuple[str, int]) -> tuple[str, int]:
    kind, value = before
    if kind == "rt":
        return kind, value - 1 if value > 1 else value
    return kind, min(value + 1, 19)


def in_thread(fn):
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_thread_goes_one_step_below_and_its_caller_stays():
    caller = level()

    def body():
        before = level()
        scanner.yield_to_caller()
        return before, level()

    before, after = in_thread(body)
    assert before == caller  # (a new thread starts where its creator is)
    assert after == one_step_below(before)
    assert level() == caller


def test_the_helper_thread_runs_its_jobs_one_step_below():
    caller = level()
    pool = scanner.HelperThread("test-helper")
    try:
        assert pool.submit(level).result() == one_step_below(caller)
    finally:
        pool.shutdown()
    assert level() == caller


def test_the_read_ahead_worker_reads_one_step_below(tmp_path):
    """The blocks are read in the worker's thread: where it stands is seen from there."""
    caller = level()
    seen: list[tuple[str, int]] = []

    def blocks():
        for k in range(3):
            seen.append(level())
            yield b"INFO line %d\n" % k * 1000

    sc = scanner.Scanner(lambda line: None, lambda: False, ("Traceback",))
    got = list(sc.read_ahead(blocks()))
    assert len(got) == 3
    assert seen and all(s == one_step_below(caller) for s in seen)
    assert level() == caller
