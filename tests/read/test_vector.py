"""The numpy side of a block searched ahead (read/vector.py) against the plain byte methods
and the regex it stands for, and the whole read-ahead path with it against every line read."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")

from sglang_doctor.read import records, vector  # noqa: E402
from sglang_doctor.pipeline import StreamPipeline  # noqa: E402

# pieces of header-like lines: real shapes, near misses, and bytes that end one early
HEAD_PARTS = ["[", "2026-12-02 15:56:05", "2026-12-02 15:56", "15:56:05", ".", ",", "123", "1234567", "]", " ",
              "TP", "DP", "PP", "EP", "ATTN_CP", "MOE_DP", "MOE", "0", "12", "x", "\n", "\r", "é", "TP0]", " TP1",
              " DP0 TP1 EP1", " ATTN_CP3 MOE_DP2"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(HEAD_PARTS), max_size=14), min_size=1, max_size=6))
def test_the_byte_header_check_never_says_yes_where_the_regex_says_no(lines):
    """sglang_header is exact where it says True, and says True for SGLang's usual headers."""
    text = "\n".join("".join(parts) for parts in lines) + "\n"
    block = text.encode()
    starts = [0] + [m.end() for m in re.finditer(b"\n", block)][:-1]
    got = vector.sglang_header(np, block, np.array(starts, np.int64), len(block))
    for start, ok in zip(starts, got.tolist()):
        if ok:
            assert records.HEADER_BYTES.match(block, start) is not None


@pytest.mark.parametrize("head", ["[2026-12-02 15:56:05]", "[2026-12-02 15:56:05 TP3]", "[2026-12-02 15:56:05.123]",
                                  "[2026-12-02 15:56:05,5 DP0 TP1 EP1]", "[2026-12-02 15:56:05 ATTN_CP3 MOE_DP2]",
                                  "[2026-12-02 15:56:05 PP12 TP0]"])
def test_the_byte_header_check_knows_sglangs_headers(head):
    block = f"{head} WARNING x: Error: y\n".encode()
    assert vector.sglang_header(np, block, np.array([0]), len(block)).tolist() == [True]


@pytest.mark.parametrize("head", ["[2026-12-02 15:56:05 TP]", "[2026-12-02 15:56:05  TP0]", "[2026-12-02 15:56:05.1234567]",
                                  "[15:56:05]", "[2026-12-02 15:56:05 XX0]", "2026-12-02 15:56:05]", "[2026-12-02 15:56:05"])
def test_the_byte_header_check_refuses_what_it_cannot_be_sure_of(head):
    block = f"{head} x\n".encode()
    assert vector.sglang_header(np, block, np.array([0]), len(block)).tolist() == [False]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 70), st.sampled_from([8, 16, 64, 1 << 20]))
def test_the_block_index_counts_and_finds_line_starts_like_bytes_do(data, lo, chunk):
    block = b"x" * lo + data + b"\n"
    hi = len(block)
    old, vector.CHUNK = vector.CHUNK, chunk  # chunk boundaries anywhere
    try:
        index = vector.BlockIndex(np, block, lo, hi)
    finally:
        vector.CHUNK = old
    assert index.lines == block.count(b"\n", lo, hi)
    offsets = np.arange(lo, hi, dtype=np.int64)
    ranks = index.rank(offsets)
    starts = index.line_starts(offsets, ranks)
    for p, rank, start in zip(offsets.tolist(), ranks.tolist(), starts.tolist()):
        assert rank == block.count(b"\n", lo, p)
        assert start == (block.rfind(b"\n", lo, p) + 1 or lo)
        assert index.count(lo, p) == rank
        assert index.count(p, hi) == block.count(b"\n", p, hi)


WEAK = [
    "[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value",
    "[2026-12-02 15:56:05.250 DP1 TP3] WARNING grammar: Exception: schema too deep",
    '[2026-12-02 15:56:05,7] Receive: obj=GenerateReqInput(text=\'File "main.py", line 3\')',
    "[2026-12-02 15:56:05] WARNING x: Error: error: usage",
    "[2026-12-02 15:56:05] progress 10%\rValueError: bare after a rewrite",
    "[2026-12-02 15:56:05 TP1] tokenizer: error: Error: both",
    "[15:56:05] /project/cpp/tokenizer_info.cc:146: Error: time-only header",
    "[15:56:05.5] Exception: time-only header with a fraction",
    "ValueError: an unprefixed exception line",
    '  File "/x/y.py", line 3, in f',
    "[2026-12-02 15:56:05] launch_server.py: error: unrecognized arguments: --tp-sise 2",
    "[2026-12-02 15:56:05] WARNING io_struct.py:644: tokenizer: error: special token listed twice",
    "[2026-12-02 15:56:05] x y: error: not a warning",
    "[2026-12-02 15:56:05 TP0] (Worker pid=7) WARNING a, Error: x (Worker pid=7)   File \"/x.py\", line 1, in f",
    "[2026-12-02 15:56:05 TP0 EP0 ATTN_CP1 MOE_DP1 PP2 DP3 TP4] Error: a header longer than the window",
    "[2026-12-02 15:56:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/x/scheduler.py", line 9, in run',
    "RuntimeError: Not enough memory. Error: in the message",
    "[2026-12-02 15:56:05] Received sigquit from a child process. It usually means the child failed.",
    "[2026-12-02 15:56:05 TP0] Decode batch, #running-req: 1, #token: 37, token usage: 0.00, cuda graph: True",
    "\x1b[31m[2026-12-02 15:56:05] Error: coloured\x1b[0m",
    "[2026-12-02 15:56:05] Error: a NUL\x00 inside",
]


@pytest.fixture(scope="module")
def rule_pack():
    from sglang_doctor.cli.app import load_ruleset

    return load_ruleset(())


@pytest.mark.parametrize("engine,sub_block,chunk", [("aho-corasick", 1 << 20, 1 << 20), ("aho-corasick", 96, 1 << 20),
                                                    ("find", 1 << 20, 1 << 20), ("aho-corasick", 96, 64),
                                                    ("aho-corasick", 1 << 20, 8), ("native", 1 << 20, 1 << 20),
                                                    ("native", 96, 64), ("native", 1 << 20, 8)])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(WEAK), max_size=60), cut=st.lists(st.integers(1, 400), max_size=8))
def test_read_ahead_with_numpy_equals_every_line_read(engine, sub_block, chunk, lines, cut, rule_pack, monkeypatch):
    """The worker's weak-hit filter and newline index change nothing: with the rule pack
    (whose ': error: ' has a head condition), each engine, blocks and sub-blocks of any size,
    and (a small CHUNK, two CPUs) each block searched and indexed in two halves by two threads."""
    from sglang_doctor.read import scanner as scanner_mod

    if engine == "native":
        pytest.importorskip("sglang_doctor.read._native")

    monkeypatch.setattr(scanner_mod, "SMALL_BLOCK", 0)
    monkeypatch.setattr(scanner_mod, "SUB_BLOCK", sub_block)
    monkeypatch.setattr(vector, "CHUNK", chunk)
    monkeypatch.setattr(scanner_mod, "_cpus", lambda: 2)
    data = ("\n".join(lines) + "\n").encode()
    blocks, pos = [], 0
    for size in cut:
        blocks.append(data[pos:pos + size])
        pos += size
    blocks.append(data[pos:])

    def run(fast: bool):
        pipe = StreamPipeline(rule_pack, remediate=False, fast=fast)
        pipe.scanner._engine = engine
        events = []
        for block in (pipe.read_ahead(iter(blocks)) if fast else blocks):
            events += pipe.feed(block)
        events += pipe.finish()
        return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen

    assert run(True) == run(False)


def test_the_worker_filter_drops_the_weak_lines_the_scanner_drops():
    """On a block of warnings holding weak literals, the worker leaves the scanner nothing to
    judge (the point of it), and the lines that matter are still hits."""
    from sglang_doctor.read import scanner as scanner_mod

    warn = b"[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value\n"
    crash = b"[2026-12-02 15:56:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    block = b"first\n" + warn * 500 + crash + warn * 500
    sc = StreamPipeline().scanner
    old = scanner_mod.SMALL_BLOCK
    scanner_mod.SMALL_BLOCK = 0
    try:
        lo, hi, hits, weak, dirty, index = sc._search_ahead(sc._worker_finder(), block)
    finally:
        scanner_mod.SMALL_BLOCK = old
    at = block.index(crash)
    assert weak == {} and dirty == []
    assert hits and all(at <= p < at + len(crash) for p in hits)
    assert index.count(lo, hi) == block.count(b"\n", lo, hi)


@pytest.mark.parametrize("engine", ["aho-corasick", "native"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(WEAK), min_size=1, max_size=80), chunk=st.sampled_from([8, 64, 256]))
def test_a_block_searched_in_two_halves_gives_what_one_search_gives(engine, lines, chunk, rule_pack, monkeypatch):
    """The worker's helper thread (second half of the block, its part of the newline index)
    changes nothing: same hits, weak hits, dirty lines and line counts as one thread."""
    from sglang_doctor.read import scanner as scanner_mod

    monkeypatch.setattr(scanner_mod, "SMALL_BLOCK", 0)
    monkeypatch.setattr(vector, "CHUNK", chunk)
    monkeypatch.setattr(scanner_mod, "_cpus", lambda: 2)
    block = b"first line, searched by the caller\n" + ("\n".join(lines) + "\n").encode()
    if engine == "native":
        pytest.importorskip("sglang_doctor.read._native")
    sc = StreamPipeline(rule_pack, remediate=False).scanner
    sc._engine = engine
    finder = sc._worker_finder()
    helper = sc._helper(finder)
    assert helper is not None
    try:
        split = sc._search_ahead(finder, block, helper)
    finally:
        helper[0].shutdown()
    whole = sc._search_ahead(finder, block)
    assert split[:5] == whole[:5]
    lo, hi = split[:2]
    for p in range(lo, hi + 1, 7):
        assert split[5].count(lo, p) == whole[5].count(lo, p) == block.count(b"\n", lo, p)


class _NumpyBefore2:
    """numpy without ``bitwise_count`` (before 2.0), for the byte-table fallback."""

    def __getattr__(self, name):
        if name == "bitwise_count":
            raise AttributeError(name)
        return getattr(np, name)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40))
def test_popcount_without_bitwise_count_counts_the_same_bits(values):
    x = np.array(values, dtype=np.uint64)
    assert vector.popcount(_NumpyBefore2(), x).tolist() == [bin(v).count("1") for v in values]
    assert vector.popcount(np, x).astype(np.int64).tolist() == [bin(v).count("1") for v in values]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(["a", "\n", "\r", "\x1b", "\x00", " pid=", " pid", "=", "x" * 40]), max_size=120),
       sub_block=st.sampled_from([16, 1 << 20]), cap=st.sampled_from([2, 16384]))
def test_marks_find_what_bytes_find_finds(parts, sub_block, cap, monkeypatch):
    """Marks (\\r, ' pid=', ESC, NUL) against bytes.find: every line
    holding a needle is found, and the first ESC and NUL of each line are what the scanner's
    _dirty_starts gives; sub-blocks anywhere, and dense sub-blocks (past the cap)."""
    from sglang_doctor.read import scanner as scanner_mod

    monkeypatch.setattr(vector, "MARK_BLOCK", sub_block)
    monkeypatch.setattr(vector, "MARK_CAP", cap)
    block = ("\n" + "".join(parts) + "\n").encode()
    lo, hi = 1, len(block)
    index = vector.BlockIndex(np, block, lo, hi)
    pos, ids = vector.Marks().find(np, block, lo, hi)
    for i, needle in enumerate(vector.Marks.NEEDLES):
        got = pos[ids == i].tolist()
        assert all(block.startswith(needle, p) for p in got)
        want = vector.first_per_line(block, needle, lo, hi)
        assert set(want) <= set(got)
        assert vector.first_in_each_line(np, index, pos[ids == i]) == want
    dirty = vector.first_in_each_line(np, index, pos[ids == 2]) + vector.first_in_each_line(np, index, pos[ids == 3])
    assert sorted(dirty) == sorted(scanner_mod._dirty_starts(block, lo, hi))


def test_explain_on_a_small_log_does_not_import_numpy(tmp_path):
    """numpy is for big blocks only: explain on a small file (a real subprocess, the
    read-ahead worker and its helper set up) never loads it, so start-up does not pay."""
    import subprocess
    import sys

    log = tmp_path / "small.log"
    log.write_text("[2026-12-02 15:56:05] Error: x\n" * 50)
    code = ("import sys, runpy; sys.argv = ['sglang-doctor', 'explain', '--format', 'json', sys.argv[1]]\n"
            "sys.modules['hyperscan'] = None  # the default install's engine, Aho-Corasick (it has the helper)\n"
            "try:\n    runpy.run_module('sglang_doctor', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('NUMPY' if 'numpy' in sys.modules else 'NO-NUMPY', file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "NO-NUMPY", proc.stderr[-2000:]
