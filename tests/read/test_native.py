"""The optional C extension (read/_native.c) against the stdlib engine it must equal.

``NativeFinder.pairs`` must be exactly ``FindFinder.pairs`` (the first occurrence of each
literal in each line), its marks the first ``\\r``/ESC/NUL/`` pid=`` of each line, and its
newline bits ``vector.pack_newlines``'s, on any bytes and any range.  Skipped when the
extension was not built (an install without a C compiler)."""

import re
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.read import records, scanner, vector

native = pytest.importorskip("sglang_doctor.read._native")


@pytest.fixture(autouse=True, scope="module", params=["avx2", "no avx2"])
def simd(request):
    """Every test twice: with the AVX2 path (when the CPU has it) and without (SSE2 or scalar)."""
    before = native.avx2()
    if request.param == "avx2" and not native.avx2(True):
        native.avx2(before)
        pytest.skip("this CPU has no AVX2")
    native.avx2(request.param == "avx2")
    yield request.param
    native.avx2(before)

# short ones (compared at every position), ones ending with a newline, shared prefixes,
# ones that overlap themselves, and the pack's weak ones
LITERALS = (b"rc=", b"Error\n", b"Error: ", b"Error(", b"Exception: ", b": error: ", b'File "', b"Traceback",
            b"Not enough memory", b"NCCL WARN", b"aaaaaaa", b"abababab", b"Killed", b"exit code", b"\xff\xfeEnd")
PIECES = LITERALS + (b"\n", b"\r", b"\x1b", b"\x00", b"\x00" * 70, b" pid=", b"Erro", b"rc", b"a" * 65, b"ab" * 40,
                     b"[2026-12-02 15:56:05 TP0] ", b"Decode batch, #running-req: 1 ", b"x" * 200)


@st.composite
def buffers(draw):
    parts = draw(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=40)), max_size=60))
    data = b"".join(parts)
    lo = draw(st.integers(0, len(data)))
    hi = draw(st.integers(lo, len(data)))
    return data, lo, hi


def first_per_line(data: bytes, needle: bytes, lo: int, hi: int) -> set:
    return set(vector.first_per_line(data, needle, lo, hi)) if len(needle) == 1 else \
        {p for p in vector.first_per_line(data, needle, lo, hi) if p + len(needle) <= hi}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buffers(), st.sampled_from([b"", b"sample " * 1000, b"Error: rc= aaaa\n" * 400]))
def test_native_pairs_and_marks_equal_one_find_per_literal(buf, sample):
    data, lo, hi = buf
    lits = tuple(sorted(LITERALS))
    finder = scanner.NativeFinder(lits)
    if sample:  # windows picked from counts in a sample (not from this data): any windows give the same pairs
        finder._matcher = native.Matcher(lits + (finder.PID,), sample)
        finder._searches = 1  # (not picked again before the REPICK-th search)
    want = scanner.FindFinder(lits).pairs(data, lo, hi)
    got = finder.pairs(data, lo, hi)
    assert sorted(got) == sorted(want)
    assert finder.hits(data, lo, hi) == scanner.FindFinder(lits).hits(data, lo, hi)
    (pos, ids), (mark_pos, mark_ids) = finder.scan(np, data, lo, hi)
    assert sorted(zip(pos.tolist(), ids.tolist())) == sorted(want)
    marks = set(zip(mark_pos.tolist(), mark_ids.tolist()))
    for i, needle in enumerate(vector.Marks.NEEDLES):
        assert {p for p, k in marks if k == i} == first_per_line(data, needle, lo, hi), needle


@settings(max_examples=200, deadline=None)
@given(buffers(), st.integers(0, 64))
def test_native_newline_bits_equal_numpys(buf, k0_words):
    data, lo, hi = buf
    k0 = min(k0_words * 8, (hi - lo) // 8 * 8)
    bits = vector.newline_bits(np, lo, hi)
    want = bits.copy()
    native.newline_bits(data, lo, bits, k0, hi - lo)
    vector.pack_newlines(np, data, lo, hi, want, k0, hi - lo)
    assert bits.tobytes() == want.tobytes()


def test_a_literal_at_every_offset_of_a_long_line_and_across_strides():
    lits = tuple(sorted(LITERALS))
    for lit in LITERALS:
        for at in range(0, 140):
            data = b"z" * at + lit + b"y" * (140 - at) + b"\n" + b"w" * at + lit
            for lo, hi in ((0, len(data)), (1, len(data) - 1), (at, at + len(lit))):
                assert sorted(scanner.NativeFinder(lits).pairs(data, lo, hi)) == \
                    sorted(scanner.FindFinder(lits).pairs(data, lo, hi)), (lit, at, lo, hi)


def test_dense_lines_give_one_hit_per_line_and_literal():
    lits = (b"Error: ", b"rc=")
    data = b"Error: rc=" * 100000 + b"\n" + b"Error: \n" * 1000
    got = scanner.NativeFinder(lits).pairs(data, 0, len(data))
    assert sorted(got) == sorted(scanner.FindFinder(lits).pairs(data, 0, len(data)))
    assert len(got) == 2 + 1000


def test_the_matcher_refuses_what_it_cannot_search():
    with pytest.raises(ValueError):
        native.Matcher([b"a\nb"])
    with pytest.raises(ValueError):
        native.Matcher([])
    with pytest.raises(TypeError):
        native.Matcher(["text"])
    with pytest.raises(ImportError):  # make_finder takes the next engine then
        scanner.NativeFinder((b"ab", b"Traceback"))
    m = native.Matcher([b"Traceback"])
    with pytest.raises(ValueError):
        m.scan(b"abc", 2, 10)
    assert m.scan(b"", 0, 0) == (b"", b"")


def test_without_the_extension_the_default_engine_is_the_one_before(monkeypatch):
    """An install without a C compiler: the same engines as before, whatever they find."""
    monkeypatch.setitem(sys.modules, "sglang_doctor.read._native", None)
    finder = scanner.make_finder((b"Traceback", b"NCCL WARN"))
    assert finder.name in ("aho-corasick", "hyperscan", "find")
    assert scanner.make_finder((b"Traceback",), "find").name == "find"
    with pytest.raises(ImportError):
        scanner.NativeFinder((b"Traceback",))


# lines for the weak-hit filter: test_vector's, plus header near misses and rank-dense headers
SIFT_LINES = [
    "[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value",
    "[2026-12-02 15:56:05.250 DP1 TP3] WARNING grammar: Exception: schema too deep",
    '[2026-12-02 15:56:05,7] Receive: obj=GenerateReqInput(text=\'File "main.py", line 3\')',
    "[2026-12-02 15:56:05] WARNING x: Error: error: usage",
    "[2026-12-02 15:56:05] progress 10%\rValueError: bare after a rewrite",
    "[2026-12-02 15:56:05 TP1] tokenizer: error: Error: both",
    "[15:56:05] /project/cpp/tokenizer_info.cc:146: Error: time-only header",
    "ValueError: an unprefixed exception line",
    '  File "/x/y.py", line 3, in f',
    "[2026-12-02 15:56:05] launch_server.py: error: unrecognized arguments: --tp-sise 2",
    "[2026-12-02 15:56:05] WARNING io_struct.py:644: tokenizer: error: special token listed twice",
    "[2026-12-02 15:56:05]tokenizer: error: no space after the header",
    "[2026-12-02 15:56:05] x y: error: not a warning",
    "[2026-12-02 15:56:05 TP0] (Worker pid=7) WARNING a, Error: x",
    "[2026-12-02 15:56:05 TP0 EP0 ATTN_CP1 MOE_DP1 PP2 DP3 TP4] Error: a header longer than the window",
    "[2026-12-02 15:56:05 TP0 EP0 PP2 DP3 TP4 EP5 DP6 TP7] Error: seven ranks",
    "[2026-12-02 15:56:05 TP] Error: a rank without a number",
    "[2026-12-02 15:56:05.1234567] Error: seven digits",
    "[2026-12-02 15:56:05. TP0] Error: a dot and no digit",
    "[2026-12-02 15:56:05  TP0] Error: two spaces",
    "[2026-12-02 15:56:0] Error: short",
    "[2026-12-02 15:56:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "RuntimeError: Not enough memory. Error: in the message",
    "[2026-12-02 15:56:05 TP0] Decode batch, #running-req: 1, #token: 37, token usage: 0.00, cuda graph: True",
    "\x1b[31m[2026-12-02 15:56:05] Error: coloured\x1b[0m",
    "[2026-12-02 15:56:05] Error: a NUL\x00 inside",
    "[2026-12-02 15:56:05] Error: Error: Exception: Error\n",
    # head conditions the C extension's sift matches itself (vector.NATIVE_HEADS)
    "[2026-12-02 15:56:05] loc(x.py:1): error: an MLIR location",
    "[2026-12-02 15:56:05] sglang serve: error: argument --tp: invalid int value",
    "[2026-12-02 15:56:05] a serve: error: two words before serve",
    "[2026-12-02 15:56:05] : error: nothing before the colon",
    "[2026-12-02 15:56:05] prog:: error: two colons",
    "[2026-12-02 15:56:05] NCCL INFO x: error: an INFO line",
    "[2026-12-02 15:56:05] xNCCL INFO x: error: a word byte before",
    "[2026-12-02 15:56:05] To silence this warning x: error: a warning",
    "[2026-12-02 15:56:05] WARNINGS y: error: not the word",
    "[2026-12-02 15:56:05] y: error: WARNING",
    "[2026-12-02 15:56:05] y: error: \u00e9Warning: after a UTF-8 byte",
    "[2026-12-02 15:56:05] y\tz: error: a tab",
]


@pytest.fixture(scope="module")
def rule_pack():
    from sglang_doctor.cli.app import load_ruleset

    return load_ruleset(())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(SIFT_LINES), min_size=1, max_size=80), cut=st.integers(0, 3))
def test_native_sift_equals_the_numpy_filter(lines, cut, rule_pack):
    """``_native.sift`` drops exactly what ``vector.WeakFilter.sift`` drops, on the same pass:
    same hits, weak hits left to the scanner, and ESC/NUL lines."""
    from sglang_doctor.pipeline import StreamPipeline

    sc = StreamPipeline(rule_pack, remediate=False).scanner
    sc._engine = "native"
    finder = sc._worker_finder()
    block = ("\n".join(lines) + "\n").encode()[cut:]
    lo = block.find(b"\n") + 1 if cut else 0
    hi = len(block)
    search, weak_set = scanner.search_set(sc._lits, sc._weak_lits)
    wf = vector.WeakFilter(np, finder._lits, weak_set, sc._hides, sc._heads)
    got_hits, got_weak, index, got_dirty = wf.search_native(finder, block, lo, hi)
    (pos, ids), marks = finder.scan(np, block, lo, hi)
    hits, weak, _, dirty = wf.sift(np, block, lo, hi, pos, ids, vector.BlockIndex(np, block, lo, hi), marks)
    assert (got_hits, got_weak, got_dirty) == (hits, weak, dirty)
    assert index.count(lo, hi) == block.count(b"\n", lo, hi)


HEAD_PIECES = (b"loc(", b"loc", b": error: ", b"error: ", b" serve", b" serve: error: ", b"serve: error: ", b"x",
               b"prog", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b":", b"_", b"\xc3\xa9", b"\x80", b"WARNING", b"Warning: ",
               b"NCCL INFO ", b"To silence this warning", b"WARNINGS", b"Warning:", b"NCCL INFO", b"9", b"(")


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(st.lists(st.one_of(st.sampled_from(HEAD_PIECES), st.binary(max_size=6)), max_size=12),
                         min_size=1, max_size=20),
       before=st.sampled_from([b"", b" ", b"x", b"\xff"]))
def test_native_head_conditions_equal_their_regexes(messages, before):
    """Each head condition ``sift`` matches in C (``vector.NATIVE_HEADS``) keeps and drops
    exactly the lines its regex (``rx.match(block, msg, nl)``) keeps and drops."""
    if getattr(native, "SIFT_HEADS", 0) != 1:
        pytest.skip("an extension built before sift took head conditions")
    lines = []
    for parts in messages:
        msg = b"".join(parts).replace(b"\n", b" ")
        lines.append(b"[2026-12-02 15:56:05]" + before + msg + b" : error: ")  # (a weak hit on every line)
    block = b"\n".join(lines) + b"\n"
    lit = b": error: "
    for pattern, code in vector.NATIVE_HEADS.items():
        rx = re.compile(pattern)
        finder = scanner.NativeFinder((lit,), frozenset({lit}))
        wf = vector.WeakFilter(None, finder._lits, {lit}, {lit: []}, {lit: (rx,)})
        assert wf._head_codes[0] == code
        got = wf.search_native(finder, block, 0, len(block))
        wf._head_codes = bytes(len(wf._head_codes))  # the regex, in Python
        want = wf.search_native(finder, block, 0, len(block))
        assert (got[0], got[1], got[3]) == (want[0], want[1], want[3])
        kept = set(got[1])
        start = 0
        for line in lines:
            nl = start + len(line)
            if b"\r" not in line and b" pid=" not in line:  # (else the scanner judges the line)
                m = records.HEADER_BYTES.match(block, start)
                p = block.index(lit, start)  # the line's first hit (the pass keeps the first per literal)
                assert (p in kept) == (rx.match(block, m.end(), nl) is not None), (pattern, line)
            start = nl + 1


def test_native_heads_are_the_packs_head_conditions():
    """The patterns the C extension matches are the ones the shipped pack gives the scanner
    (a change to either only leaves the lines to Python: this says so)."""
    from sglang_doctor.incidents import assemble, signals

    head = assemble.HEAD_ONLY_LITERALS[": error: "].encode()
    assert {head, signals.WARNING_LINE_BYTES.encode(), head + b"|" + signals.WARNING_LINE_BYTES.encode()} \
        == set(vector.NATIVE_HEADS)


def test_native_sift_refuses_pairs_outside_its_range():
    with pytest.raises(ValueError):
        native.sift(b"abc\n", 0, 4, np.array([9, 0], np.int64).tobytes(), b"", b"\x00", ())
    with pytest.raises(ValueError):
        native.sift(b"abc\n", 0, 4, np.array([1, 5], np.int64).tobytes(), b"", b"\x00", ())


def test_read_ahead_with_the_extension_needs_no_numpy(rule_pack, monkeypatch):
    """The C extension's path filters and indexes a big block without numpy (not even
    installed), with the same events and line count as reading every line."""
    from sglang_doctor.pipeline import StreamPipeline

    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy: ImportError
    monkeypatch.setattr(vector, "_numpy", None)
    monkeypatch.setattr(scanner, "_cpus", lambda: 2)
    monkeypatch.setattr(scanner, "SMALL_BLOCK", 0)  # every block searched ahead
    monkeypatch.setattr(vector, "CHUNK", 64)  # and in two halves
    data = ("\n".join(SIFT_LINES * 40) + "\n").encode()
    blocks = [data[k:k + 5000] for k in range(0, len(data), 5000)]

    def run(fast: bool):
        pipe = StreamPipeline(rule_pack, remediate=False, fast=fast)
        pipe.scanner._engine = "native"
        events = []
        for block in (pipe.read_ahead(iter(blocks)) if fast else blocks):
            events += pipe.feed(block)
        events += pipe.finish()
        return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen, pipe

    got, want = run(True), run(False)
    assert got[:2] == want[:2]
    assert not hasattr(got[2].scanner._weak_filter, "_marks")  # search_native's filter was used
    assert vector._numpy is None  # never even looked for


def test_the_extension_is_the_default_engine_for_the_packs_covers_with_hyperscan_too(rule_pack, monkeypatch):
    """explain's block search with the shipped pack (about 200 covers, more than
    AHO_MAX_COVERS) is the C extension's whenever it is built, Hyperscan installed or not:
    only it gives the read-ahead its helper thread and the weak-hit filter in C (session 16:
    about 1.9 against 3.1 s of CPU per GiB).  Many more covers (a big user pack) go to
    Hyperscan first when it is installed."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(rule_pack)
    lits, weak = pipe.scanner._lits, pipe.scanner._weak_lits
    assert len(scanner.search_set(lits, weak)[0]) > scanner.AHO_MAX_COVERS
    assert scanner.make_finder(lits, None, weak).name == "native"
    assert pipe.scanner._worker_finder().name == "native"
    many = lits + tuple(b"zq%05d made-up rule literal" % i for i in range(scanner.NATIVE_MAX_COVERS))
    hyperscan_there = True
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        hyperscan_there = False
    assert scanner.make_finder(many, None, weak).name == ("hyperscan" if hyperscan_there else "native")


def test_many_literals_sharing_windows_and_hash_slots():
    """Hundreds of literals over a four-letter alphabet: many share a window's key, and the
    chains of several hash slots share a packed slot; the pairs stay one find per literal's."""
    import random

    rnd = random.Random(13)
    lits = tuple(sorted({bytes(rnd.choice(b"abc\n") for _ in range(rnd.randint(6, 14))).replace(b"\n", b"a")
                         for _ in range(600)} | set(LITERALS)))
    for _ in range(40):
        parts = [rnd.choice(lits) if rnd.random() < 0.3 else bytes(rnd.choice(b"abc \n") for _ in range(rnd.randint(1, 30)))
                 for _ in range(rnd.randint(1, 200))]
        data = b"".join(parts)
        lo = rnd.randint(0, len(data))
        hi = rnd.randint(lo, len(data))
        assert sorted(scanner.NativeFinder(lits).pairs(data, lo, hi)) == \
            sorted(scanner.FindFinder(lits).pairs(data, lo, hi))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buf=buffers(), cuts=st.lists(st.integers(0, 10_000), max_size=3), fused=st.booleans())
def test_the_pass_sets_the_newline_bits_newline_bits_gives(buf, cuts, fused):
    """``NativeFinder.scan_lines`` over consecutive parts of a range (any cut, not only at a
    line boundary), then the words two parts share filled by ``newline_bits``, as
    ``WeakFilter.search_native`` does: the bits of one ``newline_bits`` over the range, and the
    pairs and marks of a pass without bits.  ``fused``: the pass sets them; else (an
    extension built before ``SCAN_NEWLINES``) a separate ``newline_bits`` per part."""
    with pytest.MonkeyPatch.context() as mp:
        if not fused:
            mp.delattr(native, "SCAN_NEWLINES", raising=False)
        check_scan_lines(buf, cuts, fused)


def check_scan_lines(buf, cuts, fused):
    data, lo, hi = buf
    data += b"\n\r\x1b\x00abc" * 20  # (longer, so that parts hold whole 64-byte strides)
    hi = len(data) if hi == len(buf[0]) else hi
    finder = scanner.NativeFinder(tuple(sorted(LITERALS)))
    assert finder.fused_newlines == fused
    want = bytearray(-(-(hi - lo) // 64) * 8)
    native.newline_bits(data, lo, want, 0, hi - lo)
    bits = bytearray(len(want))
    edges = sorted({lo, hi, *(lo + c % (hi - lo + 1) for c in cuts)})
    for a, b in zip(edges, edges[1:]):
        got = finder.scan_lines(data, a, b, bits, lo, hi)
        assert got == finder._pairs(data, a, b)
    for a in edges[1:-1]:
        k = (a - lo) // 64 * 64
        if k != a - lo:
            native.newline_bits(data, lo, bits, k, min(k + 64, hi - lo))
    assert bits == want


def test_scan_refuses_newline_bits_outside_the_buffers():
    m = native.Matcher((b"Error: ",), b"")
    with pytest.raises(ValueError):  # bits too short for [base, end)
        m.scan(b"a\n" * 100, 0, 200, bytearray(8), 0, 200)
    with pytest.raises(ValueError):  # lo before base
        m.scan(b"a\n" * 100, 0, 200, bytearray(32), 10, 200)
    with pytest.raises(ValueError):  # hi past end
        m.scan(b"a\n" * 100, 0, 200, bytearray(32), 0, 100)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(SIFT_LINES + ["x" * 63, "y" * 64, "", "z" * 130]), min_size=1, max_size=120),
       share=st.integers(1, 99))
def test_search_native_in_two_threads_indexes_every_newline(lines, share, rule_pack):
    """A block searched in two parts (the worker's and the helper's, split anywhere): the
    newline index counts every newline of every range exactly, whatever word the split
    falls in, and the hits are those of one part over the whole block."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vector, "CHUNK", 64)
        mp.setattr(vector, "WORKER_SHARE", share)
        check_two_threads(lines, rule_pack)


def check_two_threads(lines, rule_pack):
    from sglang_doctor.pipeline import StreamPipeline

    sc = StreamPipeline(rule_pack, remediate=False).scanner
    sc._engine = "native"
    finder = sc._worker_finder()
    block = ("\n".join(lines) + "\n").encode()
    lo, hi = 0, len(block)
    search, weak_set = scanner.search_set(sc._lits, sc._weak_lits)
    wf = vector.WeakFilter(None, finder._lits, weak_set, sc._hides, sc._heads)
    pool = scanner.HelperThread("test-helper")
    try:
        two = wf.search_native(finder, block, lo, hi, (pool, sc._worker_finder()))
    finally:
        pool.shutdown()
    one = wf.search_native(finder, block, lo, hi)
    assert two[0] == one[0] and two[1] == one[1] and sorted(two[3]) == sorted(one[3])
    index = two[2]
    assert bytes(index.words) == bytes(one[2].words)
    for p in range(lo, hi + 1, 7):
        assert index.count(lo, p) == block.count(b"\n", lo, p)


def run_read_ahead(rule_pack, blocks, used: list) -> tuple:
    """(events, lines seen) of ``explain``'s read-ahead over ``blocks`` (every block of 200
    bytes of whole lines or more searched ahead) against feeding every block as it is; the
    sizes the head finder searched are added to ``used``."""
    from sglang_doctor.pipeline import StreamPipeline
    from sglang_doctor.read import records

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scanner, "SMALL_BLOCK", 200)
        mp.setattr(scanner, "AHO_MAX_COVERS", 10**6)  # the extension's finder even with Hyperscan installed
        mp.setattr(scanner, "_cpus", lambda: 2)
        mp.setattr(vector, "CHUNK", 64)
        mp.setattr(records, "WRAP_SAMPLE", 1)  # (else the blocks of a text under 1 MiB are held and fed as one)
        search = scanner.NativeFinder.hits

        def spy(self, buf, pos, end):
            if self.repick == 0:
                used.append(end - pos)
            return search(self, buf, pos, end)

        mp.setattr(scanner.NativeFinder, "hits", spy)

        def run(fast: bool):
            pipe = StreamPipeline(rule_pack, remediate=False, fast=fast)
            assert pipe.scanner._engine is None
            events = []
            for block in (pipe.read_ahead(iter(blocks)) if fast else blocks):
                events += pipe.feed(block)
            events += pipe.finish()
            return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen

        return run(True), run(False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(SIFT_LINES + ["\x1b[31mTraceback (most recent call last):\x1b[0m",
                                                    "caf\xe9 \x00 Error: x", "bar 50%\r bar 100%"]),
                      min_size=1, max_size=150),
       size=st.integers(40, 3000))
def test_read_ahead_searches_its_pieces_natively_with_the_same_events(lines, size, rule_pack):
    """With the default engine and the extension, the pieces ``read_ahead`` leaves to the
    caller (each block's first line, joined to the tail before) are searched by a native
    finder (``Scanner._head``): the events and line count are those of reading every line."""
    data = ("\n".join(lines) + "\n").encode()
    got, want = run_read_ahead(rule_pack, [data[k:k + size] for k in range(0, len(data), size)], [])
    assert got == want


def test_the_head_finder_searches_the_first_lines_of_blocks(rule_pack):
    data = ("\n".join(SIFT_LINES * 20) + "\n").encode()
    used: list = []
    got, want = run_read_ahead(rule_pack, [data[k:k + 1000] for k in range(0, len(data), 1000)], used)
    assert got == want and got[0]
    assert used and max(used) < 1000  # the pieces fed, not the blocks


@settings(max_examples=300, deadline=None)
@given(buf=buffers(), points=st.lists(st.integers(0, 1 << 16), min_size=2, max_size=6))
def test_line_index_counts_the_newlines_of_any_range(buf, points):
    """``LineIndex.count`` (the scanner's skipped runs) is ``bytes.count`` of newlines, on any
    range of the indexed part, both ends included (the last partial word, the end itself)."""
    data, lo, hi = buf
    bits = bytearray(-(-(hi - lo) // 64) * 8)
    native.newline_bits(data, lo, bits, 0, hi - lo)
    index = vector.LineIndex(native, data, lo, hi, bits)
    at = sorted({lo, hi, *(lo + p % (hi - lo + 1) for p in points)})
    for a in at:
        for b in at:
            if a <= b:
                assert index.count(a, b) == data.count(b"\n", a, b)


def test_the_worker_reads_the_next_block_while_the_helper_searches(rule_pack):
    """With a helper thread the worker fetches block k+1 during block k's search (``_Prefetch``,
    called by ``search_native``): same events and line count as feeding every block, three
    blocks at most held (the caller's, the one handed over, the one read ahead)."""
    from sglang_doctor.pipeline import StreamPipeline

    data = ("\n".join(SIFT_LINES * 30) + "\n").encode()
    blocks = [data[k:k + 700] for k in range(0, len(data), 700)]
    read = []  # how many blocks the source had given when the caller took each one
    calls = []

    def source():
        for k, block in enumerate(blocks):
            read.append(k)
            yield block

    search = vector.WeakFilter.search_native

    def spy(self, finder, block, lo, hi, helper=None, meanwhile=None):
        calls.append((helper is not None, meanwhile is not None))
        return search(self, finder, block, lo, hi, helper, meanwhile)

    def run(fast: bool):
        pipe = StreamPipeline(rule_pack, remediate=False, fast=fast)
        events = []
        for block in (pipe.read_ahead(source()) if fast else blocks):
            if fast:
                taken.append(len(read))
            events += pipe.feed(block)
        events += pipe.finish()
        return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen

    taken: list = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scanner, "SMALL_BLOCK", 200)
        mp.setattr(scanner, "AHO_MAX_COVERS", 10**6)  # the extension's finder even with Hyperscan installed
        mp.setattr(scanner, "_cpus", lambda: 2)
        mp.setattr(vector, "CHUNK", 64)
        mp.setattr(vector.WeakFilter, "search_native", spy)
        got, want = run(True), run(False)
    assert got == want and got[0]
    assert calls and all(c == (True, True) for c in calls)  # a helper and a prefetch on every block
    assert len(taken) == len(blocks)
    # when the caller takes block k, at most k+1 and k+2 are read beyond it (the one handed
    # over next, the one read during its search): three blocks held
    assert all(k + 1 <= n <= k + 3 for k, n in enumerate(taken))


def test_the_worker_searches_its_next_block_while_the_caller_is_still_on_an_earlier_one(rule_pack):
    """With the prefetch, the worker does not wait for the caller to take the block it handed
    over before searching the block it already holds (the caller may be slow on a block
    dense with incidents); it reads no further until that one is taken: three blocks held.
    (On the old code the worker waited for block 1 to be taken: block 2 was never searched
    while the caller held block 0.)"""
    import threading

    from sglang_doctor.pipeline import StreamPipeline

    data = ("\n".join(SIFT_LINES * 30) + "\n").encode()
    blocks = [data[k:k + 700] for k in range(0, len(data), 700)]
    assert len(blocks) >= 5
    read = []
    searched = []
    third = threading.Event()

    def source():
        for k, block in enumerate(blocks):
            read.append(k)
            yield block

    search = vector.WeakFilter.search_native

    def spy(self, finder, block, lo, hi, helper=None, meanwhile=None):
        out = search(self, finder, block, lo, hi, helper, meanwhile)
        searched.append(block)
        if len(searched) == 3:
            third.set()
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scanner, "SMALL_BLOCK", 200)
        mp.setattr(scanner, "AHO_MAX_COVERS", 10**6)  # the extension's finder even with Hyperscan installed
        mp.setattr(scanner, "_cpus", lambda: 2)
        mp.setattr(vector, "CHUNK", 64)
        mp.setattr(vector.WeakFilter, "search_native", spy)
        pipe = StreamPipeline(rule_pack, remediate=False)
        ahead = pipe.read_ahead(source())
        first = next(ahead)  # the caller holds block 0 and does not ask for more
        assert third.wait(30)  # (a liveness wait: the worker gets there in milliseconds)
        assert searched[:3] == blocks[:3]
        # block 0 (the caller's), 1 (handed over), 2 (searched, waiting): block 3 not read yet
        assert len(read) == 3
        events = pipe.feed(first)
        for block in ahead:
            events += pipe.feed(block)
        events += pipe.finish()
    assert pipe.lines_seen == data.count(b"\n") and events


def test_a_read_error_during_a_prefetch_reaches_the_caller_after_the_blocks_before_it(rule_pack):
    """The block after the failing read is never fetched; the blocks read before the error
    are all fed first, then the error is raised in the caller's thread; no thread is left."""
    import threading

    from sglang_doctor.pipeline import StreamPipeline

    good = ("\n".join(SIFT_LINES * 10) + "\n").encode()

    def failing():
        yield good
        yield good
        raise OSError("disk gone")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scanner, "SMALL_BLOCK", 200)
        mp.setattr(scanner, "_cpus", lambda: 2)
        mp.setattr(vector, "CHUNK", 64)
        pipe = StreamPipeline(rule_pack, remediate=False)
        fed = 0
        with pytest.raises(OSError, match="disk gone"):
            for block in pipe.read_ahead(failing()):
                pipe.feed(block)
                fed += 1
    assert fed == 2 and pipe.lines_seen == 2 * good.count(b"\n")
    assert not any(t.name == "sglang-doctor-read-ahead" and t.is_alive() for t in threading.enumerate())


def test_closing_a_prefetching_read_ahead_stops_its_worker(rule_pack):
    import threading

    from sglang_doctor.pipeline import StreamPipeline

    block = ("\n".join(SIFT_LINES * 10) + "\n").encode()

    def endless():
        while True:
            yield block

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scanner, "SMALL_BLOCK", 200)
        mp.setattr(scanner, "_cpus", lambda: 2)
        mp.setattr(vector, "CHUNK", 64)
        pipe = StreamPipeline(rule_pack, remediate=False)
        ahead = pipe.read_ahead(endless())
        for _ in range(3):
            pipe.feed(next(ahead))
        ahead.close()
    assert not any(t.name == "sglang-doctor-read-ahead" and t.is_alive() for t in threading.enumerate())


def test_prefetch_gives_the_items_in_order_and_raises_where_the_items_did():
    def items():
        yield 1
        yield 2
        raise OSError("gone")

    ahead = scanner._Prefetch(items())
    got = [next(ahead)]
    ahead.fetch()
    ahead.fetch()  # (fetched once)
    got.append(next(ahead))
    ahead.fetch()  # the error is kept ...
    assert got == [1, 2]
    with pytest.raises(OSError, match="gone"):
        next(ahead)  # ... and raised where it was
    assert list(scanner._Prefetch(iter([]))) == []
    assert list(scanner._Prefetch(iter([b"a", b"", b"c"]))) == [b"a", b"", b"c"]


def test_heap_blocks_is_taken_by_glibc_and_nothing_elsewhere():
    import os

    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError, AttributeError):
        glibc = False
    assert native.heap_blocks(scanner.HEAP_BLOCKS, 4 * scanner.HEAP_BLOCKS) is glibc
