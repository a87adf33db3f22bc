"""Pieces of the scanner's start-up and read-ahead paths held to what they replace."""

import random
import threading

import pytest

from sglang_doctor.read import scanner


def _pairwise(lits):
    return [a for a in lits if not any(b != a and b in a for b in lits)]


def test_uncontained_equals_the_pairwise_test():
    rnd = random.Random(7)
    for _ in range(3000):
        lits = sorted({bytes(rnd.choice(b"ab\n\x00\x01\x02\x03") for _ in range(rnd.randint(1, 5)))
                       for _ in range(rnd.randint(0, 14))})
        assert scanner._uncontained(lits) == _pairwise(lits), lits


def test_covers_of_the_shipped_literals_equal_the_pairwise_reduction():
    from sglang_doctor.incidents import assemble

    lits = sorted({lit.encode() for lit in assemble.TRIGGER_LITERALS})
    assert scanner._uncontained(lits) == _pairwise(lits)
    assert all(not any(o != c and o in c for o in scanner.covers(lits)) for c in scanner.covers(lits))


def test_helper_thread_runs_jobs_in_order_and_raises_in_the_caller():
    pool = scanner.HelperThread("test-helper")
    seen = []
    jobs = [pool.submit(lambda k: (seen.append((k, threading.current_thread().name)), k * k)[1], k) for k in range(5)]
    assert [job.result() for job in jobs] == [0, 1, 4, 9, 16]
    assert [k for k, _ in seen] == list(range(5)) and {n for _, n in seen} == {"test-helper"}

    def boom():
        raise ValueError("from the helper")

    with pytest.raises(ValueError, match="from the helper"):
        pool.submit(boom).result()
    pool.shutdown(wait=True)


@pytest.mark.parametrize("text", [b"", b"plain text\n", b"Traceback (most recent call last):", b"xx Error: yy",
                                  b"Not enough memory" * 3, b"\xff\xfe", b"a" * (scanner.ANY_TEXT + 10) + b"NCCL WARN"])
def test_holds_literal_says_what_the_finder_says(text):
    from sglang_doctor.incidents import assemble

    sc = scanner.Scanner(lambda line: None, lambda: False, assemble.TRIGGER_LITERALS,
                         weak=("Error: ", 'File "'))
    assert sc._holds_literal(text) == bool(sc._small.starts(text, 0, len(text)))


def test_read_ahead_calls_meanwhile_once_with_its_worker_started_and_the_same_events():
    """``meanwhile`` (explain's imports of the later stages) runs once, in the caller's
    thread, after the worker has started and before the first block is taken; the events
    are those of reading without it."""
    from sglang_doctor.cli.app import load_ruleset
    from sglang_doctor.pipeline import StreamPipeline

    data = b"".join(b"[2026-01-01 00:00:%02d] Decode batch. #running-req: %d\n" % (k % 60, k) for k in range(3000))
    data += b"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: boom\n"
    blocks = [data[k:k + 4096] for k in range(0, len(data), 4096)]
    ruleset = load_ruleset(())
    seen = []

    def run(prepare: bool):
        pipe = StreamPipeline(ruleset, whole_log=True)
        if prepare:
            def meanwhile():
                seen.append((threading.current_thread() is threading.main_thread(),
                             any(t.name == "sglang-doctor-read-ahead" for t in threading.enumerate())))
            ahead = pipe.scanner.read_ahead(iter(blocks), meanwhile=meanwhile)
        else:
            ahead = pipe.read_ahead(iter(blocks))
        events = []
        for block in ahead:
            events += pipe.feed(block)
        events += pipe.finish()
        return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen

    got, want = run(True), run(False)
    assert got == want and got[0]
    assert seen == [(True, True)]
    # the pipeline's own hook imports the remedy modules only (no events of its own)
    pipe = StreamPipeline(ruleset, whole_log=True)
    assert list(pipe.read_ahead(iter([b"plain line\n"]), prepare=True)) == [b"plain line\n"]
