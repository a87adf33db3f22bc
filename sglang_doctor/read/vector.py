"""The numpy half of a block searched ahead (``Scanner.read_ahead``, explain on a big file).

The worker thread that reads and searches the next block also does, with numpy, the
per-byte and per-hit work that used to hold the GIL in the caller's thread:

- the newline positions of the block's whole lines (``BlockIndex``), from which every
  skipped run's line count is two bisections instead of a ``bytes.count`` pass;
- the weak-hit filter (``WeakFilter``): a record-start line whose only hits are weak
  literals (scanner.py) is dropped here, for all such lines of the block at once, when the
  drop is certain: no strong hit on the line, no weak match that may hide a strong literal,
  an SGLang header at the line start (checked on the bytes, ``sglang_header``), no ``\\r``
  and no `` pid=`` in the line, and, for a weak literal with a head condition, a message
  that does not meet it (``_kept_by_heads``, the scanner's own regex test).  Every other
  weak hit is left to the scanner's own filter (``Scanner._drop_weak_record_starts``),
  which judges it exactly as before; this one only ever drops lines that one drops too;
- the lines holding ESC or NUL (``Marks``, with ``\\r`` and `` pid=`` for the filter).

With two CPUs a helper thread searches, indexes and marks the second part of each block
while the worker does the first (half each on the numpy path; with the C extension the
worker, which also reads the blocks, starts with ``WORKER_SHARE`` percent, moved after each block
towards the thread that finished last: ``WeakFilter.search_native``).

numpy's loops release the GIL, so this runs alongside the caller's Python work.  numpy is
imported only here, only for big blocks: start-up, ``watch`` and pipe mode never load it.
Without numpy the scanner does all of it itself, as before.

With the C extension (``scanner.NativeFinder``), ``WeakFilter.search_native`` does the same
without numpy: the pass, the filter (``_native.sift``, exactly what ``sift`` drops) and the
newline bits in C, the index a ``LineIndex``; only the head conditions' regexes run here,
and not even those when they are the built-in ones (``NATIVE_HEADS``, matched by ``sift``).
"""

from __future__ import annotations

import re
import time
from typing import Iterable, Mapping, Sequence

from sglang_doctor.read import records

MARK_BLOCK = 1 << 20  # Marks' unit for the `` pid=`` search (bounded memory on a line dense with it)
MARK_CAP = 16384  # more matches than this in a unit: one find per line instead
WINDOW = 64  # bytes of a line start looked at for its header; a longer header is left to the regex
MAX_RANKS = 6  # DP, PP, ATTN_CP, MOE_DP, TP, EP
CHUNK = 1 << 20  # bytes compared with "\n" at a time (a multiple of 8)
# search_native with a helper thread: the share of each block the read-ahead worker searches
# itself, the helper the rest; the worker reads the next block while the helper finishes
# (reading is about a third of its time)
WORKER_SHARE = 35
# ... and of a mapped block (read/mapped.py: no read() copy in the worker's time; the pass
# takes the page faults, in both threads).  Per GiB with 35 (session 19, FIFO): worker
# 0.39-0.43 s, helper 0.57-0.65 s of CPU; with 50: 0.52-0.56 against 0.44-0.52 s
MAPPED_WORKER_SHARE = 60
# Those are only where the shares start: after each block the worker's share moves by
# SHARE_STEP points towards the thread that finished last (``_next_share``), within
# [SHARE_MIN, SHARE_MAX].  Which one waits depends on the machine as much as on the bytes:
# with two CPUs the caller's Python work holds one of them about half the time, and a helper
# woken meanwhile waits for a CPU (under SCHED_FIFO until the worker blocks), so a fixed
# share left the helper's part running alone at the end of a block while the caller waited
# for it (session 21, docs/PERFORMANCE.md: the 1 GiB v2 log's loop, FIFO, 0.83 s with the
# fixed 45, 0.72 s with 60 or with these steps, which settle at 59-71 there)
SHARE_STEP = 1
SHARE_MIN, SHARE_MAX = 20, 85
# head conditions (``Scanner(weak_heads=...)``, compiled as bytes patterns with no flags) that
# the C extension's sift matches itself (``_native.c`` head_matches: pattern -> its code
# there), so that the ~31k lines per GiB whose weak hit stands or falls by one (the v2 log's
# tokenizer warnings) are decided in the part's thread, GIL released, instead of one
# ``rx.match`` each in the worker's Python.  Any other pattern is left to Python, as before.
# (incidents/assemble.py HEAD_ONLY_LITERALS; tests/read/test_native.py holds both to the regex)
_ERROR_HEAD = rb"loc\(|\S+(?: serve)?: error: "  # incidents/assemble.py HEAD_ONLY_LITERALS[": error: "]
_NOT_WARNING = (rb"(?!.*?(?:To silence this warning|(?<![\w\x80-\xff])Warning: |"  # signals.WARNING_LINE_BYTES
                rb"(?<![\w\x80-\xff])WARNING(?![\w\x80-\xff])|(?<![\w\x80-\xff])NCCL INFO ))")
NATIVE_HEADS = {_ERROR_HEAD: 1, _NOT_WARNING: 2, _ERROR_HEAD + b"|" + _NOT_WARNING: 3}

_numpy = None


def numpy():
    """numpy, imported on first use, or None when it is not installed."""
    global _numpy
    if _numpy is None:
        try:
            import numpy as np
        except ImportError:
            _numpy = False
        else:
            _numpy = np
    return _numpy or None


def available() -> bool:
    """Whether numpy is installed, without importing it (start-up on a small file must
    not pay for that)."""
    if _numpy is not None:
        return bool(_numpy)
    import importlib.util

    return importlib.util.find_spec("numpy") is not None


class _NewlineRank:
    """Counting newlines from a block's newline bit set (``words``, 64-bit) and its prefix
    counts per word (``before``), over block[lo:hi]: what ``BlockIndex`` and ``LineIndex``
    share."""

    __slots__ = ()

    def covers(self, buf: bytes, lo: int, hi: int) -> bool:
        return buf is self.block and self.lo <= lo <= hi <= self.hi

    def count(self, lo: int, hi: int) -> int:
        """``block.count(b"\\n", lo, hi)`` (within the indexed part)."""
        return self._rank1(hi) - self._rank1(lo)

    def _rank1(self, p: int) -> int:
        off = p - self.lo
        w, b = off >> 6, off & 63
        if w >= len(self.words):
            return int(self.before[-1])
        return int(self.before[w]) + (int(self.words[w]) & ((1 << b) - 1)).bit_count()


class BlockIndex(_NewlineRank):
    """Where the newlines of ``block[lo:hi]`` (whole lines) are, as a bit set: one
    ``== 10`` pass and ``packbits`` (about 0.1 ns/B, GIL released), then prefix counts per
    64-bit word.  Answers, for any offset in the range, how many newlines come before it
    (``rank``: its line's index) and where its line starts (``line_starts``)."""

    __slots__ = ("np", "block", "lo", "hi", "words", "before")

    def __init__(self, np, block: bytes, lo: int, hi: int, bits=None):
        self.np, self.block, self.lo, self.hi = np, block, lo, hi
        if bits is None:  # (else filled by pack_newlines, maybe in two threads)
            bits = newline_bits(np, lo, hi)
            pack_newlines(np, block, lo, hi, bits, 0, hi - lo)
        self.words = bits.view("<u8")
        counts = popcount(np, self.words)
        self.before = np.zeros(len(counts) + 1, np.int64)  # newlines before each word
        np.cumsum(counts, out=self.before[1:])

    @property
    def lines(self) -> int:
        return int(self.before[-1])


    def rank(self, offsets):
        """Newlines in [lo, p) for each offset p (an int64 array): the index of p's line."""
        np = self.np
        off = offsets - self.lo
        w = off >> 6
        below = (np.left_shift(np.uint64(1), (off & 63).astype(np.uint64)) - np.uint64(1))
        return self.before[w] + popcount(np, self.words[w] & below).astype(np.int64)

    def line_starts(self, offsets, ranks):
        """Where the line of each offset starts, given its rank."""
        np = self.np
        starts = np.full(len(offsets), self.lo, np.int64)
        has = np.flatnonzero(ranks > 0)
        if not len(has):
            return starts
        k = ranks[has]  # the newline before is the k-th (1-based)
        w = np.searchsorted(self.before, k, side="left") - 1  # the word holding it
        x = self.words[w]
        own = w == ((offsets[has] - self.lo) >> 6)
        if own.any():
            b = ((offsets[has] - self.lo) & 63).astype(np.uint64)
            x = np.where(own, x & (np.left_shift(np.uint64(1), b) - np.uint64(1)), x)
        for shift in (1, 2, 4, 8, 16, 32):  # smear the highest set bit down
            x = x | (x >> np.uint64(shift))
        top = popcount(np, x).astype(np.int64) - 1
        starts[has] = self.lo + w * 64 + top + 1
        return starts


class LineIndex(_NewlineRank):
    """``BlockIndex``'s ``count`` without numpy, for the C extension's path
    (``WeakFilter.search_native``): the same bit set (a ``bytearray`` filled by
    ``_native.newline_bits``) and its prefix counts per 64-bit word (``_native.prefix_counts``)."""

    __slots__ = ("block", "lo", "hi", "words", "before")

    def __init__(self, native, block: bytes, lo: int, hi: int, bits: bytearray):
        self.block, self.lo, self.hi = block, lo, hi
        self.words = memoryview(bits).cast("Q")
        self.before = memoryview(native.prefix_counts(bits)).cast("q")

    @property
    def lines(self) -> int:
        return self.before[-1]

    def count(self, lo: int, hi: int) -> int:
        """``_NewlineRank.count`` on the memoryviews (their items are ints already): the
        scanner asks this about 15k times per GiB."""
        words, before, base = self.words, self.before, self.lo
        n = len(words)
        off = hi - base
        w = off >> 6
        r = before[-1] if w >= n else before[w] + (words[w] & ((1 << (off & 63)) - 1)).bit_count()
        off = lo - base
        w = off >> 6
        return r - (before[-1] if w >= n else before[w] + (words[w] & ((1 << (off & 63)) - 1)).bit_count())



def newline_bits(np, lo: int, hi: int):
    """The zeroed bit set ``pack_newlines`` fills for block[lo:hi] (whole 64-bit words)."""
    return np.zeros(-(-(hi - lo) // 64) * 8, np.uint8)


def pack_newlines(np, block: bytes, lo: int, hi: int, bits, k0: int, k1: int) -> None:
    """Set the bits of the newlines in block[lo + k0:lo + k1] (k0 a multiple of CHUNK).

    A chunk at a time: no block-sized temporary (peak RSS).  Disjoint ranges may be
    filled by two threads at once (numpy releases the GIL)."""
    a = np.frombuffer(block, np.uint8, hi - lo, lo)
    for k in range(k0, min(k1, hi - lo), CHUNK):
        part = np.packbits(a[k:min(k + CHUNK, k1)] == 10, bitorder="little")
        bits[k >> 3:(k >> 3) + len(part)] = part


_POP8 = None


def popcount(np, x):
    """Set bits of each uint64 (``np.bitwise_count`` from numpy 2.0; a byte table before)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    global _POP8
    if _POP8 is None:
        _POP8 = np.array([bin(i).count("1") for i in range(256)], np.uint8)
    x = np.ascontiguousarray(x, "<u8")
    return _POP8[x.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.int64)


def first_per_line(buf: bytes, needle: bytes, lo: int, hi: int) -> list[int]:
    """The first offset of ``needle`` in each line of buf[lo:hi] that holds it."""
    out: list[int] = []
    find = buf.find
    p = find(needle, lo, hi)
    while p >= 0:
        out.append(p)
        nl = find(b"\n", p, hi)
        if nl < 0:
            break
        p = find(needle, nl, hi)
    return out


class Marks:
    """Where the bytes the filters look for besides the literals are: ``\\r`` and `` pid=``
    (a line the scanner's own filter judges) and ESC and NUL (a "dirty" line,
    scanner._dirty_starts).

    The three single bytes are found with ``bytes.find``, the first in each line that holds
    one (``first_per_line``): an automaton would list every match of an ESC- or NUL-dense
    line before it could be capped, megabytes of tuples (test_density).  `` pid=`` with
    ``ahocorasick_rs`` (a ``memmem`` that releases the GIL), MARK_BLOCK bytes at a time; a
    part with more than MARK_CAP matches, and an install without ``ahocorasick_rs``, take
    ``bytes.find`` too."""

    NEEDLES = (b"\r", b" pid=", b"\x1b", b"\x00")  # ids 0-3
    BYTES = (0, 2, 3)  # the single bytes
    PID = 1

    def __init__(self):
        try:
            import ahocorasick_rs

            self._ac = ahocorasick_rs.BytesAhoCorasick([self.NEEDLES[self.PID]])
        except ImportError:
            self._ac = None

    def find(self, np, block: bytes, lo: int, hi: int):
        """(offsets, needle ids) in block[lo:hi], as int64 arrays: at least the first of each
        needle in each line that holds it."""
        offsets, ids = [], []

        def add(i: int, got: list[int]) -> None:
            offsets.append(np.array(got, np.int64))
            ids.append(np.full(len(got), i, np.int64))

        for i in self.BYTES:
            add(i, first_per_line(block, self.NEEDLES[i], lo, hi))
        needle = self.NEEDLES[self.PID]
        extra = len(needle) - 1
        view = memoryview(block)
        for s in range(lo, hi, MARK_BLOCK):
            e = min(s + MARK_BLOCK, hi)
            found = self._ac.find_matches_as_indexes(view[s:min(e + extra, hi)]) if self._ac is not None else None
            if found is None or len(found) > MARK_CAP:
                add(self.PID, [p for p in first_per_line(block, needle, s, min(e + extra, hi)) if p < e])
            elif found:
                add(self.PID, [s + start for _, start, _ in found if s + start < e])
        return np.concatenate(offsets), np.concatenate(ids)


def _next_share(share: int, worker_waited: bool) -> int:
    """The worker's share of the next block: more when it waited for the helper on this one,
    less when the helper was done first."""
    if worker_waited:
        return min(SHARE_MAX, share + SHARE_STEP)
    return max(SHARE_MIN, share - SHARE_STEP)


def first_in_each_line(np, index: "BlockIndex", offsets) -> list[int]:
    """The first of ``offsets`` in each line of the indexed block that holds one."""
    if not len(offsets):
        return []
    offsets = np.sort(offsets)
    _, first = np.unique(index.rank(offsets), return_index=True)
    return offsets[first].tolist()


_TEMPLATE = b"[0000-00-00 00:00:00"  # records._SGLANG up to the seconds ('0': any ASCII digit)
_RANK_NAMES = (b"DP", b"PP", b"ATTN_CP", b"MOE_DP", b"TP", b"EP")  # none is a prefix of another


def sglang_header(np, block: bytes, starts, end: int):
    """For each line start, True when SGLang's record header (``records._SGLANG``, so
    ``records.HEADER_BYTES``) matches there; False when it does not or when this cannot
    tell (a header longer than WINDOW bytes).  ``end``: the block's indexed end, whose last
    byte is a newline (no header byte is one, so reading past a line's end is harmless).

    The regex is deterministic here: ``[.,]`` then up to 6 digits, then `` NAME<digits>``
    groups whose names are prefix-free, then ``]``; a greedy parse decides it exactly."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, bool)
    a = np.frombuffer(block, np.uint8)
    t = np.frombuffer(_TEMPLATE, np.uint8)
    w = a[np.minimum(starts[:, None] + np.arange(len(t) + 1), end - 1)]
    ok = np.where(t == 48, (w[:, :len(t)] >= 48) & (w[:, :len(t)] <= 57), w[:, :len(t)] == t).all(axis=1)
    rows = np.flatnonzero(ok & (w[:, len(t)] != ord("]")))  # "[date time]" is the common case
    if len(rows) == 0:
        return ok
    w = a[np.minimum(starts[rows][:, None] + np.arange(WINDOW), end - 1)]
    digit = (w >= 48) & (w <= 57)
    r = np.arange(len(rows))
    last = WINDOW - 1

    def byte(q):
        return w[r, np.minimum(q, last)]

    def isdigit(q):
        return digit[r, np.minimum(q, last)]

    q = np.full(len(rows), len(t))
    alive = np.ones(len(rows), bool)
    b = byte(q)
    step = ((b == ord(".")) | (b == ord(","))) & isdigit(q + 1)  # (?:[.,]\d{1,6})?
    q = q + step
    for _ in range(6):
        d = step & isdigit(q)
        q = q + d
    for _ in range(MAX_RANKS + 1):  # ((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)
        space = alive & (byte(q) == ord(" ")) & (q < last)
        if not space.any():
            break
        size = np.zeros(len(rows), np.int64)
        for name in _RANK_NAMES:
            m = space & isdigit(q + 1 + len(name))
            for j, ch in enumerate(name):
                m &= byte(q + 1 + j) == ch
            size[m] = len(name)
        named = size > 0
        alive &= ~(space & ~named)  # a space not followed by a rank: ']' cannot match there
        q = q + np.where(named, 1 + size, 0)
        while True:  # \d+ (the first digit was checked)
            d = named & isdigit(q) & (q < last)
            if not d.any():
                break
            q = q + d
    ok[rows] = alive & (q < last) & (byte(q) == ord("]"))
    return ok


def _native_head(rxs: tuple) -> int:
    """The C extension's code for these head conditions (``NATIVE_HEADS``), or 0."""
    if len(rxs) != 1 or not isinstance(rxs[0], re.Pattern) or rxs[0].flags != 0:
        return 0
    return NATIVE_HEADS.get(rxs[0].pattern, 0)


class WeakFilter:
    """Drops, for a whole block at once, the weak hits the scanner's filter would drop and
    can be sure of here (module doc); the rest is left to the scanner."""

    def __init__(self, np, literals: Sequence[bytes], weak: Iterable[bytes],
                 hides: Mapping[bytes, Sequence[tuple[int, bytes]]], heads: Mapping[bytes, tuple]):
        """``np``: numpy, or None for ``search_native`` only (the C extension's path)."""
        self._lits = tuple(literals)
        ids = {lit: i for i, lit in enumerate(self._lits)}
        weak = set(weak)
        is_weak = [lit in weak for lit in self._lits]
        # weak literals whose lines are left to the scanner: a head condition to check
        unsure = [lit in weak and bool(heads.get(lit)) for lit in self._lits]
        self._head_rx = [tuple(heads.get(lit, ())) if lit in weak else () for lit in self._lits]
        # for the C extension's sift (scanner.NativeFinder): each literal id's kind (0 strong,
        # 1 weak, 2 weak with a head condition, 3 the `` pid=`` needle after the literals)
        self._kinds = bytes([2 if u else 1 if w else 0 for w, u in zip(is_weak, unsure)] + [3])
        # search_native: the worker's share of the next block read (True) or mapped (False)
        self._shares: dict[bool, int] = {}
        # per literal id, the code of its head conditions when the C extension's sift matches
        # them itself (a literal with one condition, in NATIVE_HEADS), else 0 (left to Python)
        self._head_codes = bytes([_native_head(rxs) for rxs in self._head_rx] + [0])
        self._hide_specs = tuple((ids[w], off, c) for w, checks in hides.items() if w in ids for off, c in checks)
        if np is None:
            return
        self._weak = np.array(is_weak or [False], bool)
        self._unsure = np.array(unsure or [False], bool)
        self._hides = [(ids[w], off, np.frombuffer(c, np.uint8)) for w, checks in hides.items() if w in ids
                       for off, c in checks]
        self._marks = Marks()

    def search(self, np, finder, block: bytes, lo: int, hi: int, helper=None, meanwhile=None):
        """(hits, weak, index, dirty) for block[lo:hi] (whole lines), as ``Scanner._scan``
        takes them: the sorted hit offsets, {offset: weak literal} of the weak ones left, the
        block's BlockIndex, and the first ESC and the first NUL of each line holding one
        (what ``scanner._dirty_starts`` gives).

        ``helper``: (an executor with a thread of its own, a second finder) to search and
        index the second half of the block at the same time as this thread does the first
        (the engine and numpy release the GIL: two cores, about half the wall time).
        ``meanwhile`` (the C extension's path only, ``search_native``): called (with no
        argument; it must not raise) once this thread's part is done, before it waits for
        the helper's: the read-ahead worker reads its next block then.  (Not on the numpy
        path, which keeps two blocks at most: without the extension the blocks are fresh
        mappings, and a third one held would add its 8 MiB to the peak.)"""
        native = hasattr(finder, "newline_bits")  # scanner.NativeFinder: hits, marks and newlines in C
        if native and hasattr(finder._native, "sift"):
            return self.search_native(finder, block, lo, hi, helper, meanwhile)

        def pack(k0: int, k1: int) -> None:
            if native:
                finder.newline_bits(block, lo, bits, k0, k1)
            else:
                pack_newlines(np, block, lo, hi, bits, k0, k1)

        def find(f, a: int, b: int):
            """((offsets, ids), marks) of block[a:b]."""
            if native:
                return f.scan(np, block, a, b)
            return f.arrays(np, block, a, b), self._marks.find(np, block, a, b)

        bits = newline_bits(np, lo, hi)
        if helper is None or hi - lo < 2 * CHUNK:
            pack(0, hi - lo)
            (pos, ids), marks = find(finder, lo, hi)
            return self.sift(np, block, lo, hi, pos, ids, BlockIndex(np, block, lo, hi, bits), marks)
        pool, other = helper
        mid = block.find(b"\n", (lo + hi) // 2, hi) + 1 or hi  # a line boundary: no literal straddles it
        kmid = (hi - lo) // 2 // CHUNK * CHUNK  # a chunk boundary (whole bytes of bits)

        def second_half():
            pack(kmid, hi - lo)
            return find(other, mid, hi)

        later = pool.submit(second_half)
        try:
            (pos, ids), marks = find(finder, lo, mid)
            pack(0, kmid)
        finally:
            (pos2, ids2), marks2 = later.result()
        return self.sift(np, block, lo, hi, np.concatenate((pos, pos2)), np.concatenate((ids, ids2)),
                         BlockIndex(np, block, lo, hi, bits),
                         (np.concatenate((marks[0], marks2[0])), np.concatenate((marks[1], marks2[1]))))

    def search_native(self, finder, block: bytes, lo: int, hi: int, helper=None, meanwhile=None):
        """``search`` with the C extension doing the filter too (``_native.sift``: what
        ``sift`` drops, on the pairs and marks of its own pass, GIL released), in each part's
        thread; only the head conditions (regexes) are checked here, as ``_kept_by_heads`` does.
        No numpy: the newline index is a ``LineIndex``."""
        bits = bytearray(-(-(hi - lo) // 64) * 8)
        kinds, hides = self._kinds, self._hide_specs
        codes = self._head_codes if getattr(finder._native, "SIFT_HEADS", 0) == 1 and any(self._head_codes) else None

        def part(f, a: int, b: int):
            # the pass sets the newline bits of the 64-bit words within [a, b) as it goes
            pairs, marks = f.scan_lines(block, a, b, bits, lo, hi)
            if codes is not None:
                return f._native.sift(block, a, b, pairs, marks, kinds, hides, codes)
            return f._native.sift(block, a, b, pairs, marks, kinds, hides)

        if helper is None or hi - lo < 2 * CHUNK:
            parts = [part(finder, lo, hi)]
        else:
            pool, other = helper
            # the calling thread (the read-ahead worker) also reads the blocks; its share moves
            # after each block towards the thread that finished last (_next_share), so that
            # both are done at about the same time on this machine, as loaded as it is
            kind = type(block) is bytes
            share = self._shares.get(kind) or (WORKER_SHARE if kind else MAPPED_WORKER_SHARE)
            split = (hi - lo) * share // 100
            mid = block.find(b"\n", lo + split, hi) + 1 or hi  # a line boundary: no literal straddles it
            helper_done: list[float] = []

            def helper_part():
                out = part(other, mid, hi)
                helper_done.append(time.perf_counter())
                return out

            later = pool.submit(helper_part)
            try:
                first = part(finder, lo, mid)
                if meanwhile is not None:
                    meanwhile()
                worker_done = time.perf_counter()
            finally:
                second = later.result()
            self._shares[kind] = _next_share(share, helper_done[0] > worker_done)
            parts = [first, second]
            k = (mid - lo) // 64 * 64
            if k != mid - lo:  # the word both parts share: left to be filled here
                finder.newline_bits(block, lo, bits, k, min(k + 64, hi - lo))
        hits: list[int] = []
        quads: list[int] = []
        esc: list[int] = []
        nul: list[int] = []
        for h, w, e, n in parts:
            hits += memoryview(h).cast("q").tolist()
            quads += memoryview(w).cast("q").tolist()
            esc += memoryview(e).cast("q").tolist()
            nul += memoryview(n).cast("q").tolist()
        lits, rxs = self._lits, self._head_rx
        weak: dict[int, bytes] = {}
        dropped: list[int] = []
        k, n = 0, len(quads)
        # (indexing, not a 4-item slice per quad, and a list of the dropped: this loop runs
        # for the ~30k tokenizer warnings per GiB, in the worker's chain)
        while k < n:
            msg = quads[k + 2]
            if msg < 0:
                weak[quads[k]] = lits[quads[k + 1]]
                k += 4
                continue
            # a line whose weak hits all stand or fall by its message (consecutive, same newline)
            nl = quads[k + 3]
            j = k + 4
            if j < n and quads[j + 3] == nl:
                conditions = set(rxs[quads[k + 1]])
                while j < n and quads[j + 3] == nl:
                    conditions.update(rxs[quads[j + 1]])
                    j += 4
            else:  # one weak hit on the line (the ~30k tokenizer warnings per GiB)
                conditions = rxs[quads[k + 1]]
            for rx in conditions:
                if rx.match(block, msg, nl) is not None:
                    for x in range(k, j, 4):
                        weak[quads[x]] = lits[quads[x + 1]]
                    break
            else:
                if j == k + 4:
                    dropped.append(quads[k])
                else:
                    dropped += quads[k:j:4]
            k = j
        if dropped:
            gone = set(dropped)
            hits = [p for p in hits if p not in gone]
        return hits, weak, LineIndex(finder._native, block, lo, hi, bits), esc + nul

    def sift(self, np, block: bytes, lo: int, hi: int, pos, ids, index: BlockIndex | None = None, marks=None):
        """``search`` given the hits' offsets and literal ids (and the block's index, and
        what ``Marks.find`` gives for it)."""
        index = index if index is not None else BlockIndex(np, block, lo, hi)
        mark_pos, mark_ids = marks if marks is not None else self._marks.find(np, block, lo, hi)
        others = mark_pos[mark_ids <= 1]  # \r and " pid=": lines left to the scanner
        dirty = first_in_each_line(np, index, mark_pos[mark_ids == 2]) + \
            first_in_each_line(np, index, mark_pos[mark_ids == 3])
        is_weak = self._weak[ids]
        strong = np.unique(pos[~is_weak])
        wpos, wids = pos[is_weak], ids[is_weak]
        if len(wpos):
            wpos, first = np.unique(wpos, return_index=True)  # one weak cover per offset (covers())
            wids = wids[first]
            if len(strong):
                other = ~np.isin(wpos, strong)
                wpos, wids = wpos[other], wids[other]
        if len(wpos):
            keep = ~self._droppable(np, block, lo, hi, index, strong, wpos, wids, others)
            wpos, wids = wpos[keep], wids[keep]
        hits = np.union1d(strong, wpos).tolist()
        lits = self._lits
        weak = dict(zip(wpos.tolist(), [lits[i] for i in wids.tolist()]))
        return hits, weak, index, dirty

    def _droppable(self, np, block: bytes, lo: int, hi: int, index: BlockIndex, strong, wpos, wids, others):
        """Per weak hit: whether its line is certainly dropped by the scanner's filter
        (``others``: offsets of ``\\r`` and `` pid=``, whose lines are not)."""
        line = index.rank(wpos)
        unsure = np.zeros(index.lines + 1, bool)  # per line: left to the scanner
        if len(strong):
            unsure[index.rank(strong)] = True
        if len(others):
            unsure[index.rank(others)] = True
        hit_unsure = np.zeros(len(wids), bool)
        if self._hides:
            a = np.frombuffer(block, np.uint8)
            for wid, off, c in self._hides:
                sel = np.flatnonzero(wids == wid)
                if not len(sel):
                    continue
                at = wpos[sel] + off
                inside = at + len(c) <= len(a)
                got = a[np.minimum(at[:, None] + np.arange(len(c)), len(a) - 1)]
                hit_unsure[sel[inside & (got == c).all(axis=1)]] = True
        unsure[line[hit_unsure]] = True
        sel = np.flatnonzero(~unsure[line])
        drop = np.zeros(len(wpos), bool)
        if len(sel):
            starts = index.line_starts(wpos[sel], line[sel])
            ok = sglang_header(np, block, starts, hi)
            headed = np.flatnonzero(ok & self._unsure[wids[sel]])
            if len(headed):
                ok[self._kept_by_heads(np, block, hi, line[sel], starts, wids[sel], headed)] = False
            drop[sel[ok]] = True
        return drop

    def _kept_by_heads(self, np, block: bytes, hi: int, lines, starts, wids, headed):
        """Of the hits given (their lines, line starts, literal ids), those on a line whose
        message meets the head condition of one of its weak literals: the scanner keeps
        that line (``Scanner._drop_weak_record_starts``: the conditions of all the line's
        weak literals, matched at the message's start).  ``headed``: the hits with a head
        condition, on lines with a header, no strong hit and no other reason to keep."""
        kept = np.zeros(len(lines), bool)
        match = records.HEADER_BYTES.match
        rxs = self._head_rx
        each = np.unique(lines[headed])
        firsts = np.searchsorted(lines, each, "left").tolist()  # lines is sorted (the hits are)
        ends = np.searchsorted(lines, each, "right").tolist()
        ids = wids.tolist()
        for a, b in zip(firsts, ends):
            start = int(starts[a])
            m = match(block, start)
            nl = block.find(b"\n", start, hi)
            conditions = {rx for i in ids[a:b] for rx in rxs[i]}
            if m is None or any(rx.match(block, m.end(), nl) is not None for rx in conditions):
                kept[a:b] = True
        return kept
