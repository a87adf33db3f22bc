"""The read-ahead worker's share of each block (``vector.WeakFilter.search_native`` with a
helper thread): it starts at ``WORKER_SHARE`` / ``MAPPED_WORKER_SHARE`` and moves after every
block towards the thread that finished last, within [SHARE_MIN, SHARE_MAX]; whatever the
share, the search gives what one thread gives (tests/read/test_native.py holds every split).
No timing is asserted: which thread finished last is given by a stub."""

import pytest

from sglang_doctor.read import scanner, vector

native = pytest.importorskip("sglang_doctor.read._native")


def test_the_share_moves_towards_the_thread_that_finished_last():
    assert vector._next_share(50, True) == 50 + vector.SHARE_STEP
    assert vector._next_share(50, False) == 50 - vector.SHARE_STEP
    assert vector._next_share(vector.SHARE_MAX, True) == vector.SHARE_MAX
    assert vector._next_share(vector.SHARE_MIN, False) == vector.SHARE_MIN
    assert 0 < vector.SHARE_MIN < vector.SHARE_MAX < 100


@pytest.fixture(scope="module")
def rule_pack():
    from sglang_doctor.diagnose.rules_engine import RuleSet

    return RuleSet.load(user=False)


LINES = ["[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value",
         "Traceback (most recent call last):", '  File "x.py", line 3, in f', "ValueError: boom",
         "[2026-12-02 15:56:05 TP0] Decode batch, #running-req: 1, #token: 10", "x" * 130]


@pytest.mark.parametrize("mapped", [False, True])
def test_each_block_uses_the_share_the_one_before_left(rule_pack, monkeypatch, mapped):
    """The second block's split is the share the first block's outcome gave (stubbed here),
    per kind of block, and both give the single-thread result.  (Fails on the old code,
    where the share was a constant: no ``_next_share``.)"""
    from sglang_doctor.pipeline import StreamPipeline

    monkeypatch.setattr(vector, "CHUNK", 64)
    seen: list[tuple[int, bool]] = []

    def stub(share: int, worker_waited: bool) -> int:
        seen.append((share, worker_waited))
        return 77 if len(seen) == 1 else 33

    monkeypatch.setattr(vector, "_next_share", stub)
    splits: list[int] = []
    find = bytes.find

    class Block(bytes):  # a block whose split search is seen (its type decides read or mapped)
        def find(self, sub, *args):
            if sub == b"\n" and len(args) == 2:
                splits.append(args[0])
            return find(self, sub, *args)

    sc = StreamPipeline(rule_pack, remediate=False).scanner
    sc._engine = "native"
    finder = sc._worker_finder()
    data = ("\n".join(LINES * 40) + "\n").encode()
    block = Block(data) if mapped else data
    _, weak_set = scanner.search_set(sc._lits, sc._weak_lits)
    wf = vector.WeakFilter(None, finder._lits, weak_set, sc._hides, sc._heads)
    pool = scanner.HelperThread("test-helper")
    try:
        first = wf.search_native(finder, block, 0, len(data), (pool, sc._worker_finder()))
        second = wf.search_native(finder, block, 0, len(data), (pool, sc._worker_finder()))
    finally:
        pool.shutdown()
    one = wf.search_native(finder, data, 0, len(data))
    start = vector.MAPPED_WORKER_SHARE if mapped else vector.WORKER_SHARE
    assert [share for share, _ in seen] == [start, 77]
    if mapped:  # (a read block's own find is bytes.find: not seen)
        assert splits == [len(data) * start // 100, len(data) * 77 // 100]
    for got in (first, second):
        assert got[0] == one[0] and got[1] == one[1] and sorted(got[3]) == sorted(one[3])
        assert bytes(got[2].words) == bytes(one[2].words)
