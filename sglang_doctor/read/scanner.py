"""The fast reader: bytes in, only the lines that can matter out.

A week-long log is gigabytes of ``Decode batch`` lines.  Instead of splitting and
decoding every line, the scanner searches whole blocks for a few trigger literals (the
ones every milestone, signal and traceback start needs) and only turns the lines at a hit,
and every line while the assembler is in the middle of something, into ``Line`` objects.
Skipped lines are counted, so line numbers stay exact.

Why this is safe: when the assembler is not ``active`` a line without any trigger literal
changes nothing but the rank of the current record, so the scanner replays the last
record-start line before a hit that is not itself a record start.  ``reader.LineSplitter``
feeding every line is the reference; the property tests hold the two to the same output.

Lines holding ESC or NUL ("dirty" lines) are judged by their cleaned text, since an escape
or a NUL could hide a trigger from a byte search: the block search finds them one per line
(a run of a million NULs is one hit, not a million), the line is cleaned exactly as the
reference reader cleans it (``reader.clean_text``, bounded for escape-dense lines) and
searched again; only a line whose text holds a literal is passed on.  Memory and time stay
bounded on NUL- or ESC-dense input.

How the literals are found: each block is searched once for all literals together.  The
literal set is first reduced to a few *covers* (a literal that contains another is
dropped; literals sharing a long prefix are replaced by it): a cover found marks a
candidate line, never more than a superset of the lines the full set marks, so nothing is
lost and at most a few extra lines are looked at.  Hyperscan (``hyperscan``, the optional
``fast`` extra) when installed and the covers are many (more than the C extension takes
first, below), else an Aho-Corasick automaton (``ahocorasick_rs``, a
normal dependency) in leftmost-longest mode, which lets it use its SIMD "Teddy" prefilter for
a few dozen literals per automaton (the covers are split by first byte, then into groups:
``aho_groups``).  Before both comes the optional C extension (``NativeFinder``,
read/_native.c, built at install when a C compiler is there; up to ``NATIVE_MAX_COVERS``
covers): one pass for all covers that
also finds each line's first ``\\r``, ESC, NUL and `` pid=`` and the newline bits.  ``bytes.find`` per
literal is the stdlib fallback and the engine for small blocks (watch, pipe), where building
an automaton costs more than it saves.  All give the same lines; docs/PERFORMANCE.md has the
numbers.  A block dense with hits (a line of ``Error: Error: ...``) is capped: past
``MATCH_CAP`` matches in a sub-block the engine hands it to ``bytes.find`` (one hit per line
and literal), so the match list never grows with the bytes.

Weak literals (``weak``) matter only on lines that do not start a record; ``weak_heads``
ones also on a record-start line whose message starts as their regex says.  A
record-start line whose only hits are weak (and whose message meets no head condition) is
left in the skipped run.  ``read_ahead`` lets a worker thread read and search the next
block of a finished file while the caller works on the one before (explain); with numpy,
or in C with the native engine, the worker also indexes the block's newlines and drops the
weak hits it can be sure of (read/vector.py).  Everything else is searched in the caller's thread, as it is fed.
"""

from __future__ import annotations

import functools
import importlib
import os
import queue
import re
import threading
from bisect import bisect_left, bisect_right
from typing import Callable, Iterable, Iterator, Mapping

from sglang_doctor.read import records, vector
from sglang_doctor.model import Line
from sglang_doctor.read.reader import MAX_LINE_BYTES, LineSplitter, clean_text, cut_marker, HEAD_BYTES, TAIL_BYTES

DIRTY = (b"\x1b", b"\x00")  # bytes that can hide a literal from a byte search
SUB_BLOCK = 1 << 20  # an engine searches at most this much per call
MATCH_CAP = 16384  # more matches than this in one sub-block: dense, hand it to bytes.find
GROUP = 16  # literals per Aho-Corasick automaton: its SIMD prefilter degrades with more (bench: 16 best of 8-24)
RARE_GROUP = 64  # the same for literals not starting with a lowercase letter (bench: 59 in one, 0.26 ns/B)
MIN_FIRST_BYTES = 4  # fewer distinct first bytes in a group: a memchr prefilter on them instead of SIMD (slow)
AHO_MAX_COVERS = 72  # past this many covers, Hyperscan (when installed) is preferred to Aho-Corasick
# up to this many covers the C extension's pass (when built) is preferred to Hyperscan: 1235
# covers cost it about what they cost Hyperscan per byte (the shipped pack's: about 200)
NATIVE_MAX_COVERS = 1024
MIN_SHARED_PREFIX = 8  # literals sharing a prefix this long are searched as that prefix


def line_literals(literals: Iterable[str]) -> tuple[bytes, ...]:
    """The byte strings to search for: each literal up to an interior newline (a hit is
    only ever used to find its line, so a literal's part on its first line is enough)."""
    out = set()
    for lit in literals:
        raw = lit.encode().lstrip(b"\n")
        nl = raw.find(b"\n")
        if 0 <= nl < len(raw) - 1:
            raw = raw[:nl]
        if raw:
            out.add(raw)
    return tuple(sorted(out))


def covers(literals: Iterable[bytes], merge: bool = True) -> tuple[bytes, ...]:
    """Fewer byte strings that together occur in every line any of ``literals`` occurs in.

    A literal containing another is dropped; neighbours (in sorted order) sharing a prefix
    of at least MIN_SHARED_PREFIX bytes are replaced by that prefix (unless ``merge`` is
    false: the native pass costs no more per cover, and a shared prefix can be common text
    where the literals are not: ``cuda graph `` of ``cuda graph begin`` / ``end`` is in every
    ``Decode batch`` line's ``cuda graph: True``)."""
    lits = _uncontained(sorted(set(literals)))
    if not merge:
        return tuple(lits)
    out: list[bytes] = []
    for lit in lits:
        if out:
            prev = out[-1]
            n = 0
            limit = min(len(prev), len(lit))
            while n < limit and prev[n] == lit[n]:
                n += 1
            if n >= MIN_SHARED_PREFIX and n > 0:
                out[-1] = prev[:n]
                continue
        out.append(lit)
    # a prefix may now contain (or be contained in) another cover
    return tuple(_uncontained(sorted(set(out))))


def _uncontained(lits: list[bytes]) -> list[bytes]:
    """The distinct byte strings of ``lits`` (sorted, no duplicates) that contain none of the
    others: what ``[a for a in lits if not any(b != a and b in a for b in lits)]`` gives,
    with one ``find`` loop per string over all of them joined (the pairwise test cost about
    20 ms of start-up for the rule pack's 200 literals)."""
    sep = next((bytes([c]) for c in (0, 1, 2, 3, 10) if not any(bytes([c]) in lit for lit in lits)), None)
    if sep is None or not lits:
        return [a for a in lits if not any(b != a and b in a for b in lits)]
    joined = sep.join(lits)
    starts, at = [], 0
    for lit in lits:
        starts.append(at)
        at += len(lit) + 1
    dropped = set()
    find = joined.find
    for i, b in enumerate(lits):
        p = find(b)
        while p >= 0:
            k = bisect_right(starts, p) - 1  # the string the occurrence lies in (no separator in b)
            if k != i:
                dropped.add(k)
            p = find(b, p + 1)
    return [a for k, a in enumerate(lits) if k not in dropped]


class _Finder:
    """What every engine offers: ``hits`` gives the sorted start offsets of literal hits and
    the offsets whose literal is a *weak* one (see Scanner), ``starts`` only the former."""

    def __init__(self, literals: tuple[bytes, ...], weak: frozenset[bytes] = frozenset()):
        self._lits = literals
        self._weak = weak
        self._weak_ids = {i for i, lit in enumerate(literals) if lit in weak}

    def starts(self, buf: bytes, pos: int, end: int) -> list[int]:
        return self.hits(buf, pos, end)[0]

    def arrays(self, np, buf: bytes, pos: int, end: int):
        """(offsets, literal ids) of the hits as int64 arrays, for read/vector.py: the
        offsets ``hits`` gives, each with a weak literal's id when it is a weak hit and
        some strong literal's id otherwise."""
        hits, weak = self.hits(buf, pos, end)
        ids = {lit: i for i, lit in enumerate(self._lits)}
        strong = next((i for i in range(len(self._lits)) if i not in self._weak_ids), 0)
        return (np.array(hits, np.int64),
                np.array([ids[weak[p]] if p in weak else strong for p in hits], np.int64))

    def _split(self, found: list[tuple[int, int]]) -> tuple[list[int], dict[int, bytes]]:
        """(offset, literal id) pairs -> sorted offsets, {offset: weak literal}."""
        weak_ids = self._weak_ids
        if not weak_ids:
            return sorted({p for p, _ in found}), {}
        strong = {p for p, i in found if i not in weak_ids}
        weak = {p: self._lits[i] for p, i in found if i in weak_ids and p not in strong}
        return sorted(strong.union(weak)), weak


class FindFinder(_Finder):
    """Start offsets of literal hits, one ``bytes.find`` pass per literal (stdlib only)."""

    name = "find"

    def hits(self, buf: bytes, pos: int, end: int) -> tuple[list[int], dict[int, bytes]]:
        return self._split(self.pairs(buf, pos, end))

    def pairs(self, buf: bytes, pos: int, end: int) -> list[tuple[int, int]]:
        """(offset, literal id): the first hit of each literal in each line."""
        out: list[tuple[int, int]] = []
        find = buf.find
        for i, lit in enumerate(self._lits):
            p = find(lit, pos, end)
            while p >= 0:
                out.append((p, i))
                p = find(b"\n", p, end)  # one hit per line and literal is enough
                if p < 0:
                    break
                p = find(lit, p, end)
        return out


class AhoFinder(_Finder):
    """Start offsets of literal hits: leftmost-longest Aho-Corasick (``ahocorasick_rs``), one
    automaton per GROUP literals so that each keeps its SIMD prefilter."""

    name = "aho-corasick"
    parallel = True  # ahocorasick_rs releases the GIL while it searches bytes

    def __init__(self, literals: tuple[bytes, ...], weak: frozenset[bytes] = frozenset()):
        import ahocorasick_rs

        super().__init__(literals, weak)
        self._ids = []  # each automaton's literal ids (indexes into literals)
        self._groups = []
        for ids in aho_groups(literals):
            self._ids.append(ids)
            self._groups.append(ahocorasick_rs.BytesAhoCorasick(
                [literals[i] for i in ids], matchkind=ahocorasick_rs.MatchKind.LeftmostLongest))
        self._id_arrays = None  # numpy copies of _ids, for arrays()
        self._overlap = max(map(len, literals), default=1) - 1
        self._find = FindFinder(literals, weak)

    def arrays(self, np, buf: bytes, pos: int, end: int):
        """(offsets, literal ids) of every match, as int64 arrays (unsorted; an offset may
        come twice, from two automatons): ``hits`` without a Python object per match."""
        if self._id_arrays is None:
            self._id_arrays = [np.array(ids, np.int64) for ids in self._ids]
        offsets, ids = [], []
        view = memoryview(buf)
        for lo in range(pos, end, SUB_BLOCK):
            hi = min(lo + SUB_BLOCK, end)
            ext = min(hi + self._overlap, end)
            parts = []
            for group_ids, ac in zip(self._id_arrays, self._groups):
                found = ac.find_matches_as_indexes(view[lo:ext])
                if len(found) > MATCH_CAP:
                    parts = None
                    break
                if found:
                    parts.append((group_ids, found))
            if parts is None:  # dense: one hit per line and literal
                got = np.array(self._find.pairs(buf, lo, ext), np.int64).reshape(-1, 2)
                got = got[got[:, 0] < hi]
                offsets.append(got[:, 0])
                ids.append(got[:, 1])
                continue
            for group_ids, found in parts:
                got = np.array(found, np.int64).reshape(-1, 3)  # (id in the group, start, end)
                starts = got[:, 1] + lo
                inside = starts < hi
                offsets.append(starts[inside])
                ids.append(group_ids[got[inside, 0]])
        if not offsets:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(offsets), np.concatenate(ids)

    def hits(self, buf: bytes, pos: int, end: int) -> tuple[list[int], dict[int, bytes]]:
        # non-overlapping matches: a match hidden by an overlapping one starts on the same
        # line (literals hold no newline except at their end), and lines are all we need
        # (the Scanner checks what a weak match may hide, see _hides_strong)
        out: list[int] = []
        weak: dict[int, bytes] = {}
        view = memoryview(buf)
        for lo in range(pos, end, SUB_BLOCK):
            hi = min(lo + SUB_BLOCK, end)
            ext = min(hi + self._overlap, end)  # a literal straddling hi is found here
            part: list[tuple[int, int]] | None = []
            for ids, ac in zip(self._ids, self._groups):
                found = ac.find_matches_as_indexes(view[lo:ext])
                if len(found) > MATCH_CAP:
                    part = None
                    break
                part += [(lo + s, ids[i]) for i, s, _ in found if lo + s < hi]
            if part is None:  # dense: one hit per line and literal
                got, got_weak = self._find.hits(buf, lo, ext)
                out += [p for p in got if p < hi]
                weak.update((p, lit) for p, lit in got_weak.items() if p < hi)
                continue
            got, got_weak = self._split(part)
            out += got
            weak.update(got_weak)
        return out, weak


class NativeFinder(_Finder):
    """Start offsets of literal hits from the optional C extension (``read/_native.c``):
    the first occurrence of each literal in each line, as ``FindFinder.pairs`` gives, in
    one pass that also finds the first ``\\r``, ESC, NUL and `` pid=`` of each line
    (``scan``, for read/vector.py).  Its windows are picked from the first block it
    searches (which of them are rare in this log only changes the speed, never the lines).
    ImportError when the extension was not built (no C compiler at install)."""

    name = "native"
    parallel = True  # the pass releases the GIL
    PID = b" pid="

    def __init__(self, literals: tuple[bytes, ...], weak: frozenset[bytes] = frozenset()):
        try:
            _native = importlib.import_module("sglang_doctor.read._native")
        except ImportError as exc:  # not built: no compiler at install
            raise ImportError("sglang_doctor.read._native is not built") from exc
        if not literals or min(map(len, literals)) < 3:
            raise ImportError("the native engine needs literals of 3 bytes or more")  # (make_finder: next engine)
        super().__init__(literals, weak)
        self._native = _native
        self._matcher = None
        self._searches = 0
        self.repick = self.REPICK  # 0: the windows of the first search are kept (Scanner._head)

    REPICK = 8  # searches between two picks of the windows
    SAMPLE = 16, 1 << 14  # slices, bytes each: the sample the windows are picked from

    def _matcher_for(self, buf: bytes, pos: int, end: int):
        """The matcher, its windows picked again every REPICK searches from a sample spread
        over the bytes searched (a log's start-up and serving parts differ)."""
        if self._matcher is None or (self.repick and self._searches % self.repick == 0):
            count, size = self.SAMPLE
            step = max((end - pos) // count, size)
            sample = b"".join(buf[p:min(p + size, end)] for p in range(pos, end, step))
            self._matcher = self._native.Matcher(self._lits + (self.PID,), sample)
        self._searches += 1
        return self._matcher

    def _pairs(self, buf: bytes, pos: int, end: int) -> tuple[bytes, bytes]:
        return self._matcher_for(buf, pos, end).scan(buf, pos, end)

    def scan_lines(self, buf: bytes, pos: int, end: int, bits: bytearray, base: int, stop: int) -> tuple[bytes, bytes]:
        """``_pairs``, and the newline bits of buf[pos:end] set in ``bits`` (zeroed, for
        buf[base:stop], bit k the byte base + k) in the same pass, in every 64-bit word whose
        bytes all lie in [pos, end): a word shared with a neighbouring part is left zero,
        for the caller to fill with ``newline_bits`` once both parts are done.  An extension
        built before this existed (no ``SCAN_NEWLINES``) gets a separate ``newline_bits``
        pass over the same words."""
        if self.fused_newlines:
            return self._matcher_for(buf, pos, end).scan(buf, pos, end, bits, base, stop)
        k0 = -(-(pos - base) // 64) * 64
        k1 = stop - base if end == stop else (end - base) // 64 * 64
        if k1 > k0:
            self._native.newline_bits(buf, base, bits, k0, k1)
        return self._pairs(buf, pos, end)

    @property
    def fused_newlines(self) -> bool:
        return getattr(self._native, "SCAN_NEWLINES", 0) == 1

    def pairs(self, buf: bytes, pos: int, end: int) -> list[tuple[int, int]]:
        """(offset, literal id): the first hit of each literal in each line."""
        raw = memoryview(self._pairs(buf, pos, end)[0]).cast("q")
        pid = len(self._lits)
        return [(raw[k], raw[k + 1]) for k in range(0, len(raw), 2) if raw[k + 1] != pid]

    def hits(self, buf: bytes, pos: int, end: int) -> tuple[list[int], dict[int, bytes]]:
        return self._split(self.pairs(buf, pos, end))

    def arrays(self, np, buf: bytes, pos: int, end: int):
        return self.scan(np, buf, pos, end)[0]

    def scan(self, np, buf: bytes, pos: int, end: int):
        """((offsets, literal ids), (offsets, needle ids)) as int64 arrays: the literal hits
        (``arrays``) and what ``vector.Marks.find`` gives (ids 0 ``\\r``, 1 `` pid=``, 2
        ESC, 3 NUL), the first of each in each line of buf[pos:end]."""
        pairs, marks = self._pairs(buf, pos, end)
        got = np.frombuffer(pairs, np.int64).reshape(-1, 2)
        mk = np.frombuffer(marks, np.int64).reshape(-1, 2)
        pid = got[:, 1] == len(self._lits)
        lits = got[~pid]
        mark_pos = np.concatenate((mk[:, 0], got[pid, 0]))
        mark_ids = np.concatenate((mk[:, 1], np.full(int(pid.sum()), 1, np.int64)))
        return (lits[:, 0].copy(), lits[:, 1].copy()), (mark_pos, mark_ids)

    def newline_bits(self, buf: bytes, lo: int, bits, k0: int, k1: int) -> None:
        """``vector.pack_newlines`` in C."""
        self._native.newline_bits(buf, lo, bits, k0, k1)


def aho_groups(literals: tuple[bytes, ...]) -> list[tuple[int, ...]]:
    """The literal ids of each automaton.

    Teddy's cost grows with how often the first bytes of its literals occur in the text:
    literals starting with a lowercase letter (the commonest bytes of a log) go in
    automatons of GROUP, the others (capitals, digits, punctuation, rarer) in automatons of
    RARE_GROUP.  Within each kind, even runs of sorted literals; a run with fewer than
    MIN_FIRST_BYTES distinct first bytes joins the one before (the
    automaton would use a plain first-byte prefilter, which is slow when those bytes are
    common letters: bench, 2 ns/B for 8 literals starting with t, u, w)."""
    out: list[tuple[int, ...]] = []
    lower = [i for i, lit in enumerate(literals) if 97 <= lit[0] <= 122]
    other = [i for i, lit in enumerate(literals) if not 97 <= lit[0] <= 122]
    for ids, size in ((other, RARE_GROUP), (lower, GROUP)):
        first = len(out)
        count = -(-len(ids) // size)  # automatons of at most size, as even as can be
        for k in range(count):
            group = tuple(ids[len(ids) * k // count:len(ids) * (k + 1) // count])
            few = len({literals[i][:1] for i in group}) < MIN_FIRST_BYTES
            if len(out) > first and few and (size == GROUP or len(out[-1]) + len(group) <= RARE_GROUP):
                out[-1] = out[-1] + group
            else:
                out.append(group)
    return out


class HyperscanFinder(_Finder):
    """Start offsets of literal hits in one Hyperscan pass (SIMD literal matching)."""

    name = "hyperscan"

    def __init__(self, literals: tuple[bytes, ...], weak: frozenset[bytes] = frozenset()):
        import hyperscan

        super().__init__(literals, weak)
        self._lengths = [len(lit) for lit in literals]
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=[b"".join(b"\\x%02x" % c for c in lit) for lit in literals],
                         ids=list(range(len(literals))), elements=len(literals), flags=[0] * len(literals))
        self._overlap = max(self._lengths, default=1) - 1
        self._find = FindFinder(literals, weak)

    def hits(self, buf: bytes, pos: int, end: int) -> tuple[list[int], dict[int, bytes]]:
        out: list[int] = []
        weak: dict[int, bytes] = {}
        lengths = self._lengths
        view = memoryview(buf)
        for lo in range(pos, end, SUB_BLOCK):
            hi = min(lo + SUB_BLOCK, end)
            ext = min(hi + self._overlap, end)
            ends: list[tuple[int, int]] = []
            add = ends.append

            def on_match(ident: int, _from: int, to: int, _flags: int, _ctx) -> bool:
                add((to, ident))
                return len(ends) > MATCH_CAP  # True stops the scan: dense, use bytes.find

            self._db.scan(view[lo:ext], match_event_handler=on_match)
            if len(ends) > MATCH_CAP:
                got, got_weak = self._find.hits(buf, lo, ext)
                out += [p for p in got if p < hi]
                weak.update((p, lit) for p, lit in got_weak.items() if p < hi)
                continue
            got, got_weak = self._split([(lo + to - lengths[ident], ident) for to, ident in ends
                                         if lo + to - lengths[ident] < hi])
            out += got
            weak.update(got_weak)
        return out, weak


ENGINES = {"find": FindFinder, "aho-corasick": AhoFinder, "hyperscan": HyperscanFinder, "native": NativeFinder}
SMALL_BLOCK = 1 << 20  # below this, bytes.find is cheaper than building an automaton
# read_ahead: allocations up to this size come from the heap, and up to 4 times it freed stays
# there for the next blocks (glibc; the CLI reads 8 MiB blocks: pipeline.BLOCK)
HEAP_BLOCKS = 16 << 20
ANY_TEXT = 1 << 16  # Scanner._holds_literal: longer texts (a dense 4 MB line) one find per cover, as before


def search_set(literals: Iterable[bytes], weak: Iterable[bytes] = (), merge: bool = True) -> tuple[tuple[bytes, ...], frozenset[bytes]]:
    """The byte strings the engines search for, and which of them are weak.

    Strong and weak literals are reduced to covers separately (a strong literal must never
    be found only through a weak cover); a weak literal that holds a strong cover is
    dropped (that cover finds its lines).  Remembered: a scanner asks for the same set
    for each of its finders (about 20 ms each for the rule pack's literals)."""
    return _search_set(tuple(sorted(set(literals))), tuple(sorted(set(weak))), merge)


@functools.lru_cache(maxsize=8)
def _search_set(literals: tuple[bytes, ...], weak_lits: tuple[bytes, ...], merge: bool = True) -> tuple[tuple[bytes, ...], frozenset[bytes]]:
    weak = set(weak_lits)
    strong_covers = covers((lit for lit in literals if lit not in weak), merge)
    weak_lits = [lit for lit in literals if lit in weak and not any(c in lit for c in strong_covers)]
    weak_covers = covers(weak_lits, merge)
    return tuple(sorted(set(strong_covers) | set(weak_covers))), frozenset(weak_covers) - set(strong_covers)


def make_finder(literals: tuple[bytes, ...], engine: str | None = None, weak: Iterable[bytes] = ()):
    """The named finder, or the fastest one installed, for the covers of ``literals``."""
    lits, weak_set = search_set(literals, weak)
    if engine == "native":
        return _native_finder(literals, weak, lits, weak_set)
    if engine is not None:
        return ENGINES[engine](lits, weak_set)
    # Aho-Corasick's prefilter beats Hyperscan for a few automatons of covers (0.8 vs 1.3
    # ns/B, docs/PERFORMANCE.md); with many more covers (user rules) Hyperscan wins.  The C
    # extension, when it was built, comes first up to NATIVE_MAX_COVERS covers: its pass
    # alone costs about what Hyperscan's does, but only it gives the read-ahead its helper
    # thread and the weak-hit filter in C (Hyperscan's match callbacks hold the GIL, and its
    # hits go through numpy): explain on the 1 GiB v2 log, about 1.9 against 3.1 s of CPU
    # (session 16, docs/PERFORMANCE.md)
    tail = (AhoFinder, HyperscanFinder) if len(lits) <= AHO_MAX_COVERS else (HyperscanFinder, AhoFinder)
    order = (NativeFinder, *tail) if len(lits) <= max(NATIVE_MAX_COVERS, AHO_MAX_COVERS) \
        else (HyperscanFinder, NativeFinder, AhoFinder)
    for cls in order:
        try:
            return _native_finder(literals, weak, lits, weak_set) if cls is NativeFinder else cls(lits, weak_set)
        except ImportError:
            continue
    return FindFinder(lits, weak_set)


def _native_finder(literals, weak, lits: tuple[bytes, ...], weak_set: frozenset[bytes]) -> "NativeFinder":
    """The native pass over the literals unmerged (``covers(merge=False)``: no shared prefix
    that is common text), when that leaves the weak covers as they are (the scanner's
    weak-hit filter is keyed by them); else over the covers."""
    whole, whole_weak = search_set(literals, weak, merge=False)
    if whole_weak == weak_set:
        return NativeFinder(whole, whole_weak)
    return NativeFinder(lits, weak_set)


def make_line(number: int, raw: bytes, keep_raw: bool) -> Line:
    """The same Line the LineSplitter makes for these bytes (terminator removed)."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    dropped = 0
    if len(raw) > MAX_LINE_BYTES:
        dropped = len(raw) - HEAD_BYTES - TAIL_BYTES
        raw = raw[:HEAD_BYTES] + cut_marker(dropped) + raw[-TAIL_BYTES:]
    return Line(number, clean_text(raw), raw if keep_raw else None, dropped)


class Scanner:
    def __init__(
        self,
        sink: Callable[[Line], None],
        is_active: Callable[[], bool],
        literals: Iterable[str],
        *,
        keep_raw: bool = False,
        fast: bool = True,
        engine: str | None = None,
        weak: Iterable[str] = (),
        weak_heads: Mapping[str, str] | None = None,
        keep: tuple[bytes, "re.Pattern[bytes]", int] | None = None,
    ):
        self._sink = sink
        # keep = (needle, pattern, k): of the lines skipped since the last line passed on, the
        # last k that hold ``needle`` and that ``pattern`` matches at their start are passed on
        # before the next one, in order (incidents/serving.py: the scheduler's batch lines,
        # most of a serving log, of which the assembler keeps the last few): a reader of every
        # line leaves the same last k in the sink's hands.  The pattern is matched over the raw
        # bytes; a line whose text differs from them (a \r rewrite, ESC, NUL) by its text.
        self._keep = keep
        self._keep_text = re.compile(keep[1].pattern.decode()) if keep is not None else None
        self._kept: list[tuple[int, bytes]] = []
        self._is_active = is_active
        self._lits = line_literals(literals)
        # weak_heads: weak literals that do matter on a record-start line whose message
        # starts as the regex says (literal -> regex matched at the message's start)
        heads = {line_literals([lit])[0]: re.compile(rx.encode()) for lit, rx in (weak_heads or {}).items()
                 if line_literals([lit])}
        self._weak_lits = tuple(sorted(set(line_literals(weak)) | set(heads)))
        self._engine = engine
        search, weak_set = search_set(self._lits, self._weak_lits)
        self._small = FindFinder(search, weak_set)
        # what a weak match may hide from a leftmost search: a strong literal (or a weak one
        # with a head condition) starting inside it, whose first bytes are the weak
        # literal's last ones (W -> [(k, S)])
        guarded = [c for c in search if c not in weak_set or any(c in lit for lit in heads)]
        # (either way round, such a literal starts with the byte the weak one has at k: only
        # those are compared, in guarded's order; 27,000 startswith calls were 2-3 ms of start-up)
        by_first: dict[int, list[bytes]] = {}
        for c in guarded:
            by_first.setdefault(c[0], []).append(c)
        self._hides = {w: [(k, c) for k in range(len(w)) for c in by_first.get(w[k], ()) if c != w and (
                           c.startswith(w[k:]) or w[k:].startswith(c))] for w in weak_set}
        # the head conditions a weak cover's match must be checked against (every
        # head-conditioned literal it may stand for)
        self._heads = {w: tuple(rx for lit, rx in heads.items() if w in lit) for w in weak_set}
        self._big = None  # built on the first big block
        self._head = None  # read_ahead's finder for the small pieces it leaves to feed
        self._any = None  # _holds_literal's automaton, built on first use (False: none)
        self._weak_filter: vector.WeakFilter | None = None  # the worker's, built on its first big block
        self._index: vector.BlockIndex | None = None  # newline positions of the block being scanned
        self._ahead: tuple[bytes, tuple] | None = None  # (block, its search) from read_ahead
        self.keep_raw = keep_raw
        self.fast = fast
        self.number = 1  # number of the next line
        self._carry = b""
        self._long: LineSplitter | None = None  # a line longer than MAX_LINE_BYTES in progress
        self._record: tuple[int, bytes] | None = None  # last skipped record-start line
        # the last skipped run of lines, searched for its record start only when a hit
        # needs it (most hits start a record themselves): (buf, lo, hi, number at lo)
        self._pending: tuple[bytes, int, int, int] | None = None

    @property
    def lines_seen(self) -> int:
        return self.number - 1

    def feed(self, data: bytes) -> None:
        if not data:
            return
        ahead = None
        if self._ahead is not None:
            if self._ahead[0] is data:
                ahead = self._ahead[1]
            self._ahead = None
        pos = 0
        if self._long is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self._long.feed(data)
                return
            for line in self._long.feed(data[: nl + 1]):
                self._emit_line(line)
            self._long = None
            pos = nl + 1
            if pos == len(data):
                return
        elif self._carry or (self.number == 1 and self.fast):
            # the held partial line, finished without copying the whole block behind it; and
            # the input's first line, passed whatever it holds: a paste that starts inside a
            # line (``rror: CUDA out of memory ...``, ``TP0] ValueError: ...``, a search
            # excerpt) has lost the literal its head held, and the assembler judges such a
            # line (Assembler._cut_first_line); a reader of every line passes it too
            nl = data.find(b"\n")
            if nl < 0:
                carry, self._carry = self._carry, b""
                self._hold(carry + data)
                return
            if self._carry or nl <= MAX_LINE_BYTES:  # (a longer first line: searched as any)
                head, self._carry = self._carry + data[: nl + 1], b""
                if self.number == 1:
                    self._emit(head[:-1])
                else:
                    self._scan(head, 0, len(head))
                pos = nl + 1
        last = data.rfind(b"\n", pos)
        if last >= 0:
            if ahead is not None and ahead[1] == last + 1 and pos <= ahead[0]:
                lo = ahead[0]
                if pos < lo:  # the block's first line (the search ahead starts after it)
                    self._scan(data, pos, lo)
                self._scan(data, lo, last + 1, ahead[2:])
            else:
                self._scan(data, pos, last + 1)
            pos = last + 1
        if self._pending is not None and self._pending[0] is data and len(data) >= SMALL_BLOCK:
            self._resolve()  # the skipped run's record start, so the block itself can be freed
        if self._index is not None and (self._pending is None or self._pending[0] is not self._index.block):
            self._index = None
        if pos < len(data):
            self._hold(data[pos:])

    def read_ahead(self, blocks: Iterable[bytes], meanwhile: Callable[[], None] | None = None) -> Iterator[bytes]:
        """``blocks``, read and searched ahead by a worker thread while the caller feeds
        the one before.

        Reading and the literal search release the GIL, so they run alongside the Python
        work on the block before (newline counting, the lines at hits).  Each block is
        yielded unchanged; ``feed`` given that very block uses the search done for it, any
        other data is searched as usual.  With the C extension and a helper thread, the
        worker reads the next block while the helper finishes its part of this one's search
        (``_Prefetch``), but only once the caller has taken the block handed over before,
        and it goes on to search the block it holds while the caller is still on an earlier
        one (a block dense with incidents), handing it over when the caller takes the one
        before: three blocks at most are held (the caller's, the one handed over, the one
        read ahead or being searched).  Without the prefetch the worker hands a block over
        only once the caller has taken the last one: two blocks at most.  ``meanwhile`` is
        called once the worker has started, before the first block is waited for.  An exception
        raised while reading is raised here, in the caller's thread, after the blocks read
        before it; closing the iterator stops the worker."""
        if not self.fast:
            yield from map(_as_bytes, blocks)
            return
        finder = self._worker_finder()
        if not _sifts(finder):  # (a mapped block is searched in place by the native pass only)
            blocks = map(_as_bytes, blocks)
        helper = self._helper(finder)
        if hasattr(getattr(finder, "_native", None), "heap_blocks"):
            # the blocks on the heap, reused once freed (not a fresh mapping each, whose
            # pages fault in: 0.03-0.07 s of system time per GiB, more with a block read ahead)
            finder._native.heap_blocks(HEAP_BLOCKS, 4 * HEAP_BLOCKS)
        if _sifts(finder) and self._engine is None:
            # the pieces the caller searches itself (each block's first line, joined to the
            # last one's tail): one native pass, GIL kept, instead of a find per cover
            # (about 2 against 60 us a line); its windows picked once, from the first piece
            self._head = make_finder(self._lits, finder.name, self._weak_lits)
            self._head.repick = 0
        handoff: queue.Queue = queue.Queue(maxsize=1)
        taken = threading.Semaphore(0)
        stop = threading.Event()
        # the worker reads ahead while the helper searches (search_native's ``meanwhile``)
        prefetch = helper is not None and _sifts(finder)

        def put(item) -> bool:
            """Hand ``item`` over: without the prefetch, wait until the caller has taken it;
            with it, only until the caller has taken the one before (the queue holds one), so
            that the worker searches its next block meanwhile."""
            if prefetch:
                while not stop.is_set():
                    try:
                        handoff.put(item, timeout=0.05)
                        return True
                    except queue.Full:
                        continue
                return False
            handoff.put(item)
            while not stop.is_set():
                if taken.acquire(timeout=0.05):
                    return True
            return False

        def work() -> None:
            yield_to_caller()
            try:
                source = _Prefetch(blocks)

                def read_ahead_if_taken() -> None:
                    # a block read ahead while the one handed over is not taken yet would be
                    # a fourth block held (the caller's, that one, this one's, the next)
                    if handoff.empty():
                        source.fetch()

                for block in source:
                    if not put((block, self._search_ahead(finder, block, helper, read_ahead_if_taken), None)):
                        return
                put((None, None, None))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                put((None, None, exc))

        worker = threading.Thread(target=work, name="sglang-doctor-read-ahead", daemon=True)
        worker.start()
        try:
            if meanwhile is not None:
                meanwhile()
            while True:
                block, found, exc = handoff.get()
                taken.release()
                if exc is not None:
                    raise exc
                if block is None:
                    return
                self._ahead = (block, found) if found is not None else None
                yield block
                block = found = None
        finally:
            stop.set()
            self._ahead = None
            self._head = None
            worker.join(timeout=1.0)
            if helper is not None:
                helper[0].shutdown(wait=False)

    def _worker_finder(self):
        """The worker's own finder (Hyperscan's scratch space is per thread)."""
        if self._engine == "find":
            return self._small
        return make_finder(self._lits, self._engine, self._weak_lits)

    def _helper(self, finder) -> tuple | None:
        """(a one-thread executor, a finder of its own) for the worker to search half of
        each block in, when there are two cores or more, numpy, and an engine that releases
        the GIL while it searches (Aho-Corasick; Hyperscan's match callbacks hold it)."""
        if not getattr(finder, "parallel", False) or _cpus() < 2 or not (_sifts(finder) or vector.available()):
            return None
        pool = HelperThread("sglang-doctor-search")  # (its thread starts on the first big block)
        return pool, make_finder(self._lits, finder.name, self._weak_lits)

    def _search_ahead(self, finder, block: bytes, helper: tuple | None = None, meanwhile=None) -> tuple | None:
        """(lo, hi, hits, weak, dirty, index) for block[lo:hi], from its first to its last
        whole line; None when that part is small (the caller searches it then).  With numpy,
        the weak-hit filter and the newline index are done here too (read/vector.py); with
        the C extension, ``meanwhile`` is called while the helper thread searches
        (``WeakFilter.search_native``)."""
        lo = block.find(b"\n") + 1
        hi = block.rfind(b"\n") + 1
        if hi - lo < SMALL_BLOCK:
            return None
        if _sifts(finder):  # the C extension: search, filter and newline index without numpy
            if self._weak_filter is None:
                self._weak_filter = vector.WeakFilter(None, finder._lits, finder._weak, self._hides, self._heads)
            hits, weak, index, dirty = self._weak_filter.search_native(finder, block, lo, hi, helper, meanwhile)
            return (lo, hi, hits, weak, dirty, index)
        np = vector.numpy()
        if np is None:
            hits, weak = finder.hits(block, lo, hi)
            return (lo, hi, hits, weak, None, None)
        if self._weak_filter is None or not hasattr(self._weak_filter, "_marks"):  # (not search_native's)
            search, weak_set = search_set(self._lits, self._weak_lits)
            self._weak_filter = vector.WeakFilter(np, finder._lits, weak_set, self._hides, self._heads)
        hits, weak, index, dirty = self._weak_filter.search(np, finder, block, lo, hi, helper)
        return (lo, hi, hits, weak, dirty, index)

    def hand_over_kept(self) -> None:
        """Hand the kept batch lines of the text skipped since the last line passed on to the
        sink now (at the end of the input, or when a live one pauses): the assembler counts a
        serving launch's batch lines (incidents/survived.py)."""
        if self._kept and self._long is None and not self._carry:
            self._flush_kept()

    def finish(self) -> None:
        self.hand_over_kept()
        if self._long is not None:
            for line in self._long.finish():
                self._emit_line(line)
            self._long = None
        if self._carry:
            carry, self._carry = self._carry, b""
            self._record = self._pending = None
            self._emit(carry)

    # -- internals ---------------------------------------------------------------------

    def _hold(self, partial: bytes) -> None:
        if len(partial) > MAX_LINE_BYTES:
            self._long = LineSplitter(keep_raw=self.keep_raw, first_line=self.number)
            self._long.feed(partial)
        else:
            self._carry = partial

    def _emit_line(self, line: Line) -> None:
        if self._kept:
            self._flush_kept()
        self.number = line.number + 1
        self._sink(line)

    def _emit(self, raw: bytes) -> None:
        if self._kept:
            self._flush_kept()
        line = make_line(self.number, raw, self.keep_raw)
        self.number += 1
        self._sink(line)

    def _scan(self, buf: bytes, pos: int, end: int, found: tuple | None = None) -> None:
        if not self.fast:
            while pos < end:
                nl = buf.find(b"\n", pos, end)
                self._emit(buf[pos:nl])
                pos = nl + 1
            return
        if found is not None:
            hits, weak, dirty, self._index = found
        else:
            hits, weak = self._finder(end - pos).hits(buf, pos, end)
            dirty = None
        if weak:
            hits = self._drop_weak_record_starts(buf, pos, end, hits, weak)
        if dirty is None:
            dirty = _dirty_starts(buf, pos, end)
        if dirty:
            hits = sorted(set(hits).union(dirty))
        nhits = len(hits)
        i = 0
        find = buf.find
        while pos < end:
            if self._is_active():
                nl = find(b"\n", pos, end)
                self._record = self._pending = None
                self._emit(buf[pos:nl])
                pos = nl + 1
                continue
            if i < nhits and hits[i] < pos:
                i = bisect_left(hits, pos, i + 1)
            if i >= nhits:
                self._skip(buf, pos, end)
                return
            hit = hits[i]
            start = buf.rfind(b"\n", pos, hit) + 1
            if start < pos:
                start = pos
            if start > pos:
                self._skip(buf, pos, start)
            nl = find(b"\n", hit, end)
            raw = buf[start:nl]
            if (b"\x1b" in raw or b"\x00" in raw) and self._skip_dirty(raw):
                pos = nl + 1
                continue
            if (self._pending is not None or self._record is not None) and not _text_starts_record(raw):
                self._resolve()
                if self._record is not None:
                    number, rec = self._record
                    if self._kept:  # the kept lines and the record start, in their order
                        if number > self._kept[-1][0]:
                            self._kept.append((number, rec))
                        elif all(n != number for n, _ in self._kept):
                            self._kept = sorted(self._kept + [(number, rec)])
                        self._flush_kept()
                    else:
                        self._sink(make_line(number, rec, self.keep_raw))
            self._record = self._pending = None
            self._emit(raw)
            pos = nl + 1

    def _drop_weak_record_starts(self, buf: bytes, pos: int, end: int, hits: list[int],
                                 weak: dict[int, bytes]) -> list[int]:
        """The hits without those on record-start lines whose only literals are weak ones.

        Such a line is a no-op for the assembler but for the record's rank, so it is left in
        the skipped run around it (whose last record start is replayed when needed).  Kept:
        a line with any strong hit, or a weak match that may hide a strong literal starting
        inside it (leftmost search), a ``\\r`` rewrite (the assembler sees its last segment),
        `` pid=`` (a paste of joined lines the assembler splits), no record-start header, or
        a weak literal whose head condition the record's message meets (``weak_heads``).  A
        line holding ESC or NUL is a hit anyway (_dirty_starts), judged by its cleaned text
        with every literal, the weak ones included."""
        out: list[int] = []
        append = out.append
        find, rfind, startswith = buf.find, buf.rfind, buf.startswith
        hides, heads, get = self._hides, self._heads, weak.get
        header = records.HEADER_BYTES.match
        n = len(hits)
        j = 0
        while j < n:
            p = hits[j]
            w = get(p)
            if w is None:
                append(p)
                j += 1
                continue
            nl = find(b"\n", p, end)
            k = j + 1
            keep = False
            if k < n and hits[k] < nl:  # several hits on the line
                k = bisect_left(hits, nl, k)
                conditions: tuple = ()
                for q in hits[j:k]:
                    w = get(q)
                    if w is None or any(startswith(c, q + off) for off, c in hides[w]):
                        keep = True
                        break
                    conditions += heads[w]
            else:
                for off, c in hides[w]:
                    if startswith(c, p + off):
                        keep = True
                        break
                conditions = heads[w]
            if not keep:
                start = rfind(b"\n", pos, p) + 1 or pos
                if out and out[-1] >= start:
                    keep = True
                else:
                    # (a line with ESC or NUL is a hit of its own, judged by its cleaned text)
                    m = header(buf, start)
                    if m is None or find(b"\r", start, nl) >= 0 or find(b" pid=", start, nl) >= 0:
                        keep = True
                    elif conditions:
                        msg = m.end()
                        keep = any(rx.match(buf, msg, nl) is not None for rx in conditions)
            if keep:
                out.extend(hits[j:k])
            j = k
        return out

    def _skip_dirty(self, raw: bytes) -> bool:
        """A line holding ESC or NUL whose cleaned text holds no literal counts as skipped
        (True); one whose text does is left to the caller to emit (False)."""
        text = clean_text(raw)
        data = text.encode("utf-8")
        if self._holds_literal(data):
            return False
        if text.startswith("[") and records.is_record_start(text[:256]):
            self._record, self._pending = (self.number, raw), None
        if self._keep is not None and self._keep_text.match(text):
            self._kept = (self._kept + [(self.number, raw)])[-self._keep[2]:]
        self.number += 1
        return True

    def _holds_literal(self, data: bytes) -> bool:
        """Whether ``data`` holds a cover (what ``self._finder(len(data)).starts`` being
        non-empty says): one pass instead of a ``find`` per cover for the short texts of
        ESC/NUL lines, when the engine is not forced: the C extension's (which keeps the GIL
        on them), else an Aho-Corasick automaton when ``ahocorasick_rs`` is there."""
        if self._any is None:
            self._any = False
            if self._engine is None:
                lits = list(self._small._lits)
                try:  # the C extension's pass keeps the GIL on such a text (see LiteralIndex)
                    if lits and min(map(len, lits)) >= 3:
                        scan = importlib.import_module("sglang_doctor.read._native").Matcher(lits).scan
                        self._any = lambda d: bool(scan(d, 0, len(d))[0])
                except (ImportError, ValueError, TypeError, MemoryError):
                    pass
                if not self._any:
                    try:
                        import ahocorasick_rs

                        find = ahocorasick_rs.BytesAhoCorasick(lits).find_matches_as_indexes
                        self._any = lambda d: bool(find(d))
                    except (ImportError, ValueError, TypeError):
                        pass
        if self._any and len(data) <= ANY_TEXT:
            return self._any(data)
        return bool(self._finder(len(data)).starts(data, 0, len(data)))

    def _finder(self, size: int):
        if self._engine == "find" or (self._engine is None and size < SMALL_BLOCK):
            return self._small if self._head is None else self._head
        if self._big is None:
            self._big = make_finder(self._lits, self._engine, self._weak_lits)
        return self._big

    def _skip(self, buf: bytes, lo: int, hi: int) -> None:
        """Count the lines in buf[lo:hi] (whole lines); remember them as the last skipped run.

        The newline count is the one full pass over skipped bytes besides the literal
        search; the run's last record start is looked for only when a hit needs it."""
        if self._pending is not None:
            self._resolve()
        self._pending = (buf, lo, hi, self.number)
        self.number += self._count(buf, lo, hi)
        if self._keep is not None:
            self._keep_from(buf, lo, hi)

    def _keep_from(self, buf: bytes, lo: int, hi: int) -> None:
        """Add the last lines of the skipped run buf[lo:hi] (just counted: ``self.number`` is
        the number of the line after it) that ``keep`` accepts to ``_kept``, searched from the
        end (in a serving log the last batch line is a few hundred bytes back)."""
        needle, pattern, k = self._keep
        rfind, find, match = buf.rfind, buf.find, pattern.match
        found: list[tuple[int, int]] = []
        cur = hi
        while len(found) < k:
            i = rfind(needle, lo, cur)
            if i < 0:
                break
            s = rfind(b"\n", lo, i) + 1 or lo
            e = find(b"\n", i, hi)
            if find(b"\r", s, e) < 0:
                ok = match(buf, s, e) is not None
            else:  # the text is the line's last \r segment
                ok = self._keep_text.match(make_line(0, buf[s:e], False).text) is not None
            if ok:
                found.append((s, e))
            cur = s
        if not found:
            return
        number = self.number  # of the line after the run
        end = hi
        new: list[tuple[int, bytes]] = []
        count = buf.count
        for s, e in found:
            # (the kept lines are a few lines apart: a count of those bytes is cheaper than the
            # index's lookup in Python, and the same number)
            number -= count(b"\n", s, end) if end - s <= SHORT_COUNT else self._count(buf, s, end)
            end = s
            new.append((number, buf[s:e]))
        new.reverse()
        self._kept = (self._kept + new)[-k:]

    def _flush_kept(self) -> None:
        kept, self._kept = self._kept, []
        for number, raw in kept:
            self._sink(make_line(number, raw, self.keep_raw))

    def _count(self, buf: bytes, lo: int, hi: int) -> int:
        """``buf.count(b"\\n", lo, hi)``, from the block's newline index when it has one."""
        index = self._index
        if index is not None and index.covers(buf, lo, hi):
            return index.count(lo, hi)
        return buf.count(b"\n", lo, hi)

    def _resolve(self) -> None:
        """Turn the pending skipped run into ``_record`` (its last record-start line), if any."""
        if self._pending is None:
            return
        buf, lo, hi, number = self._pending
        self._pending = None
        found = _last_record_start(buf, lo, hi)
        if found is not None:
            s, e = found
            self._record = (number + self._count(buf, lo, s), buf[s:e])


# bytes up to which ``_keep_from`` counts newlines with bytes.count rather than the block's
# index (LineIndex.count: about 2-3 us of Python whatever the span; bytes.count: ~0.1 us per
# 512 bytes)
SHORT_COUNT = 8192


class _Prefetch:
    """An iterator over ``items`` whose next item can be fetched early (``fetch``: the
    read-ahead worker reads its next block while the helper thread searches).  What fetching
    raises is kept and raised by ``next``, where it would have been raised without the
    fetch, so the items before it are all handed over first."""

    _EMPTY = object()
    _DONE = object()

    def __init__(self, items: Iterable):
        self._items = iter(items)
        self._next: object = self._EMPTY
        self._error: BaseException | None = None

    def fetch(self) -> None:
        if self._next is not self._EMPTY or self._error is not None:
            return
        try:
            self._next = next(self._items, self._DONE)
        except BaseException as exc:  # noqa: BLE001 - raised by __next__, in order
            self._error = exc

    def __iter__(self):
        return self

    def __next__(self):
        self.fetch()
        item, self._next = self._next, self._EMPTY
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if item is self._DONE:
            raise StopIteration
        return item


class HelperThread:
    """One thread of its own running the calls submitted to it, one at a time: what the
    read-ahead needs of ``ThreadPoolExecutor(max_workers=1)`` (``submit``, the job's
    ``result``, ``shutdown``) without importing ``concurrent.futures`` at start-up.  The
    thread starts on the first call and is a daemon, like the read-ahead worker."""

    def __init__(self, name: str):
        self._name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable, *args) -> "_Job":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        job = _Job(fn, args)
        self._jobs.put(job)
        return job

    def _run(self) -> None:
        yield_to_caller()
        while (job := self._jobs.get()) is not None:
            job.run()

    def shutdown(self, wait: bool = True) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            if wait:
                self._thread.join()


def yield_to_caller() -> None:
    """Put the calling thread (the read-ahead worker, its helper) one step below the thread
    that started it, so that the caller is given a CPU as soon as it has a block to work on.

    The caller's Python work on each block is the serial part of the loop; the pass threads
    have slack (the caller waits for them about half the loop) and fill whatever CPU is left.
    With three threads on two CPUs at one priority, the caller, woken with a block, waited
    for one of the pass threads to block first.  Under a real-time policy (``chrt -f``) the
    thread's priority is lowered by one (never below 1); otherwise its nice value is raised by
    one (``setpriority`` of a thread, Linux).  Lowering one's own priority needs no privilege;
    where it fails or the platform lacks it, nothing changes."""
    try:
        policy = os.sched_getscheduler(0)
        if policy in (os.SCHED_FIFO, os.SCHED_RR):
            prio = os.sched_getparam(0).sched_priority
            if prio > 1:
                os.sched_setparam(0, os.sched_param(prio - 1))
            return
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(os.getpriority(os.PRIO_PROCESS, tid) + 1, 19))
    except (AttributeError, OSError):
        pass


class _Job:
    __slots__ = ("_fn", "_args", "_done", "_value", "_exc")

    def __init__(self, fn: Callable, args: tuple):
        self._fn, self._args = fn, args
        self._done = threading.Event()
        self._value = self._exc = None

    def run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - raised by result(), in the caller's thread
            self._exc = exc
        self._fn = self._args = None
        self._done.set()

    def result(self):
        self._done.wait()
        if self._exc is not None:
            raise self._exc
        return self._value


def _as_bytes(block) -> bytes:
    """A block as ``bytes`` (a mapped one, read/mapped.py, copied)."""
    return block if type(block) is bytes else bytes(block)


def _sifts(finder) -> bool:
    """Whether the finder is the C extension's with its weak-hit filter (``_native.sift``)."""
    return hasattr(getattr(finder, "_native", None), "sift")


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _text_starts_record(raw: bytes) -> bool:
    """Whether the line's text (what the assembler sees) starts a record: a ``\\r`` rewrite,
    an escape or a NUL can make it differ from the raw bytes."""
    if b"\r" in raw or b"\x1b" in raw or b"\x00" in raw:
        return records.is_record_start(clean_text(raw)[:256])
    return _is_record_start(raw)


def _is_record_start(raw: bytes) -> bool:
    if not raw.startswith(b"["):
        return False
    return records.is_record_start(raw[:64].decode("utf-8", "replace"))


def _last_record_start(buf: bytes, lo: int, hi: int) -> tuple[int, int] | None:
    """(start, end) of the last line in buf[lo:hi] that starts a record, if any."""
    end = hi - 1  # the newline of the last line
    search_hi = end
    for _ in range(64):
        i = buf.rfind(b"\n[", lo, search_hi)
        s = i + 1 if i >= 0 else lo
        if i < 0 and not buf.startswith(b"[", lo):
            return None
        e = buf.find(b"\n", s, hi)
        if _is_record_start(buf[s:e]):
            return s, e
        if i < 0:
            return None
        search_hi = i
    return None


def _dirty_starts(buf: bytes, pos: int, end: int) -> list[int]:
    """The first ESC or NUL of each line of buf[pos:end] that holds one (a run is one hit)."""
    out: list[int] = []
    for ch in DIRTY:
        out += vector.first_per_line(buf, ch, pos, end)
    return out


class LiteralIndex:
    """Which of a fixed set of literals a text holds, in one automaton pass.

    The assembler asks this instead of testing every literal with ``in`` (one pass per
    literal per line).  Overlapping matches, so the answer is the exact set; texts longer
    than ``LONG_TEXT`` (a dense 4 MB line would give millions of matches) are answered with
    one ``in`` per literal instead, as without ``ahocorasick_rs``."""

    LONG_TEXT = 1 << 16
    BYTES_TEXT = 1 << 10  # from this length on, the text's UTF-8 bytes are searched (a 10 KB dump: 30 us, not 60)

    def __init__(self, literals: Iterable[str], native: bool = True):
        self.literals = tuple(sorted(set(literals)))
        self._ac = self._bytes_ac = None
        self._matcher = self._native_matcher() if native else None
        if self._matcher is not None:
            # ``found`` never asks the automatons then (a text up to LONG_TEXT goes to the
            # C extension, a longer one to ``in``): not built, ``ahocorasick_rs`` not even
            # imported (its import and first build: 13 ms of start-up at load 13, session 16)
            return
        try:
            import ahocorasick_rs

            self._ac = ahocorasick_rs.AhoCorasick(list(self.literals)) if self.literals else None
            self._bytes_ac = ahocorasick_rs.BytesAhoCorasick([lit.encode() for lit in self.literals]) \
                if self.literals else None
        except ImportError:
            pass

    def _native_matcher(self):
        """The C extension's pass over these literals, when it is built and takes them (3
        bytes or more each): it keeps the GIL on a line's text, where ``ahocorasick_rs``
        releases it on every call (0.6 us alone, 3.9 us of CPU with another thread running
        Python, and up to a switch interval's wait: the read-ahead threads run Python
        between their C calls)."""
        lits = [lit.encode() for lit in self.literals]
        if not lits or min(map(len, lits)) < 3:
            return None
        try:
            native = importlib.import_module("sglang_doctor.read._native")
            return native.Matcher(lits)
        except (ImportError, ValueError, TypeError, MemoryError):
            return None

    def found(self, text: str) -> set[str]:
        lits = self.literals
        if self._matcher is not None and len(text) <= self.LONG_TEXT:
            # (offset, literal id) of each literal's first occurrence on each line of the text
            data = text.encode("utf-8", "surrogatepass")
            pairs = self._matcher.scan(data, 0, len(data))[0]
            if not pairs:  # (most lines the assembler asks about: the memoryview costs more than the scan)
                return set()
            return {lits[i] for i in memoryview(pairs).cast("q")[1::2]}
        if self._ac is None or len(text) > self.LONG_TEXT:
            return {lit for lit in self.literals if lit in text}
        if len(text) >= self.BYTES_TEXT:
            # UTF-8 is self-synchronising: a literal occurs in the bytes where it occurs in the text
            data = text.encode("utf-8", "surrogatepass")
            return {lits[i] for i, _, _ in self._bytes_ac.find_matches_as_indexes(data, overlapping=True)}
        return {lits[i] for i, _, _ in self._ac.find_matches_as_indexes(text, overlapping=True)}
