"""Property tests: the fast scanner loses nothing the reference reader would see."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.incidents.assemble import Assembler
from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.read.reader import LineSplitter
from sglang_doctor.read.scanner import Scanner

P = "/env/lib/python3.12/site-packages/sglang/srt"
NORMAL = [
    "[2026-12-02 15:56:05 TP0] Decode batch, #running-req: 1, #token: 37, token usage: 0.00, cuda graph: True, gen throughput (token/s): 0.46, #queue-req: 0",
    "[2026-12-02 15:56:09 DP1 TP1] Prefill batch, #new-seq: 3, #new-token: 60, #cached-token: 0, token usage: 0.91, #running-req: 2, #queue-req: 7",
    "sglang-1  | [2026-12-02 15:56:11 TP0] Decode batch. #running-req: 4, #token: 141, token usage: 0.97, gen throughput (token/s): 9.42, #queue-req: 40",
    "[2026-12-02 15:56:12 TP0] Receive: obj=GenerateReqInput(text='a Decode batch, #running-req: 1 here')",
    "Capturing batches (bs=8 avail_mem=20.1 GB):  50%",
    "[2026-12-02 15:14:18] INFO:     127.0.0.1:33788 - \"GET /model_info HTTP/1.1\" 200 OK",
    "[2026-12-02 15:54:36 TP1] Load weight begin. avail mem=21.06 GB",
    "[2026-12-02 15:54:37 TP1] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 20000, K size: 0.00 GB, V size: 0.00 GB",
    "Loading safetensors checkpoint shards:  50% Completed | 1/2",
    "[15:14:17] /project/cpp/tokenizer_info.cc:146: Warning: something",
    "plain bare line",
    "",
]


def traceback_record(rank: str, n: int) -> list[str]:
    head = f"[2026-12-02 15:54:37{' ' + rank if rank else ''}] Scheduler hit an exception: Traceback (most recent call last):"
    body = []
    for i in range(n):
        body += [f'  File "{P}/m{i}.py", line {i + 1}, in f{i}', f"    call_{i}()"]
    return [head] + body + [f"RuntimeError: failure {rank or 'main'} {n}"]


@st.composite
def logs(draw):
    lines: list[str] = []
    tracebacks: list[list[str]] = []
    for _ in range(draw(st.integers(0, 12))):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            rank = draw(st.sampled_from(["", "TP0", "TP1", "DP0 TP1 EP1"]))
            tb = traceback_record(rank, draw(st.integers(1, 4)))
            tracebacks.append(tb)
            lines += tb
        elif choice == 1:
            lines.append("[2026-12-02 15:54:37] Received sigquit from a child process. It usually means the child failed.")
        else:
            lines.append(draw(st.sampled_from(NORMAL)))
    noise = draw(st.binary(max_size=20))
    return lines, tracebacks, noise


PRINTED = ("incident", "milestone", "ready", "launch")


def reference(data: bytes):
    """Every line through the plain splitter into the assembler: the slow, obvious path."""
    asm = Assembler()
    splitter = LineSplitter()
    out = []
    for line in splitter.feed(data) + splitter.finish():
        out += asm.feed(line)
    out += asm.flush()
    # the events the pipeline prints (a "death" folded into a reported incident is the
    # assembler's word to the pipeline, which prints no event of its own for it)
    return [(e.kind, e.incident.first_line, e.incident.last_line, e.incident.traceback, e.incident.serving)
             if e.incident else (e.kind, e.line) for e in out if e.kind in PRINTED], splitter.next_number - 1


def fast(data: bytes, chunks: list[int]):
    pipe = StreamPipeline()
    events = []
    pos = 0
    for size in chunks:
        events += pipe.feed(data[pos:pos + size])
        pos += size
    events += pipe.feed(data[pos:])
    events += pipe.finish()
    out = []
    for e in events:
        if e["event"] == "incident":
            inc = e["_diagnosis"].incident
            out.append(("incident", inc.first_line, inc.last_line, inc.traceback, inc.serving))
        elif e["event"] in PRINTED:
            out.append((e["event"], e["line"]))
    return out, pipe.lines_seen


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.lists(st.integers(1, 200), max_size=30))
def test_fast_scanner_equals_reference_whatever_the_chunks(log, chunks):
    lines, tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise
    ref, ref_count = reference(data)
    got, count = fast(data, chunks)
    assert got == ref
    assert count == ref_count


@settings(max_examples=200, deadline=None)
@given(logs())
def test_every_traceback_comes_out_whole_in_exactly_one_incident(log):
    lines, tracebacks, _ = log
    data = "".join(line + "\n" for line in lines).encode()
    got, count = fast(data, [])
    assert count == len(lines)
    incidents = [g for g in got if g[0] == "incident"]
    for tb in tracebacks:
        text = "\n".join(tb)
        holders = [i for i in incidents if text in i[3]]
        assert len(holders) >= 1
    # no line is in two incidents
    spans = sorted((i[1], i[2]) for i in incidents)
    for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
        assert b1 < a2


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(1, 50), max_size=20))
def test_arbitrary_bytes_never_raise_and_count_lines(data, chunks):
    got, count = fast(data, chunks)
    ref, ref_count = reference(data)
    assert got == ref and count == ref_count == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def test_scanner_byte_by_byte_equals_one_read(seed_full):
    data = seed_full.read_bytes()
    assert fast(data, [1] * len(data))[0] == fast(data, [])[0]


ENGINE_MODULES = {"find": None, "aho-corasick": "ahocorasick_rs", "hyperscan": "hyperscan",
                  "native": "sglang_doctor.read._native"}  # (the C extension: built when a compiler was there)


@pytest.mark.parametrize("engine", sorted(ENGINE_MODULES))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(log=logs(), chunks=st.lists(st.integers(1, 200), max_size=30))
def test_every_search_engine_equals_the_reference(engine, log, chunks, monkeypatch):
    """Each multi-literal engine, forced on every block however small, sees the same lines."""
    if ENGINE_MODULES[engine]:
        pytest.importorskip(ENGINE_MODULES[engine])
    from sglang_doctor.read import scanner as scanner_mod

    monkeypatch.setattr(scanner_mod, "SMALL_BLOCK", 0)
    lines, _tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise
    pipe = StreamPipeline()
    pipe.scanner._engine = engine
    events, pos = [], 0
    for size in chunks:
        events += pipe.feed(data[pos:pos + size])
        pos += size
    events += pipe.feed(data[pos:]) + pipe.finish()
    got = [("incident", e["_diagnosis"].incident.first_line, e["_diagnosis"].incident.last_line,
            e["_diagnosis"].incident.traceback, e["_diagnosis"].incident.serving) if e["event"] == "incident"
            else (e["event"], e["line"])
           for e in events if e["event"] in ("incident", "milestone", "ready", "launch")]
    assert got == reference(data)[0]


# record-start lines holding only "weak" literals (scanner.py), next to ones that also hold
# a strong literal or whose \r rewrite leaves an unprefixed exception line
WEAK = [
    "[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value",
    "[2026-12-02 15:56:05] WARNING grammar: Exception: schema too deep",
    '[2026-12-02 15:56:05] Receive: obj=GenerateReqInput(text=\'File "main.py", line 3\')',
    "[2026-12-02 15:56:05] WARNING x: Error: error: usage",
    "[2026-12-02 15:56:05] progress 10%\rValueError: bare after a rewrite",
    "[2026-12-02 15:56:05] tokenizer: error: Error: both",
    "ValueError: an unprefixed exception line",
    '  File "/x/y.py", line 3, in f',
    "[2026-12-02 15:56:05] launch_server.py: error: unrecognized arguments: --tp-sise 2",
    "[2026-12-02 15:56:05] WARNING io_struct.py:644: tokenizer: error: special token listed twice",
    "[2026-12-02 15:56:05] x y: error: not a warning",
    "[2026-12-02 15:56:05] WARNING x: Error: error: both hide each other",
    "[2026-12-02 15:56:05 TP0] (Worker pid=7) WARNING a, Error: x (Worker pid=7)   File \"/x.py\", line 1, in f",
]


@st.composite
def dirty_logs(draw):
    """logs() with weak-literal lines, and ESC sequences and NUL runs put anywhere, inside
    literals too."""
    lines, tracebacks, noise = draw(logs())
    for _ in range(draw(st.integers(0, 4))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(WEAK)))
    dirt = st.sampled_from(["\x1b[31m", "\x1b[0m", "\x00", "\x00" * 50, "\x1b]0;title\x07", "\x1b", "\x1b\x1b["])
    out = []
    for line in lines:
        if line and draw(st.integers(0, 2)) == 0:
            at = draw(st.integers(0, len(line)))
            line = line[:at] + draw(dirt) + line[at:]
        out.append(line)
    return out, tracebacks, noise


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dirty_logs(), st.lists(st.integers(1, 200), max_size=30))
def test_lines_with_escapes_and_nuls_equal_the_reference(log, chunks):
    """ESC/NUL lines are judged by their cleaned text: a literal they split is still found."""
    lines, _tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise
    ref, ref_count = reference(data)
    got, count = fast(data, chunks)
    assert got == ref
    assert count == ref_count


@pytest.mark.parametrize("engine", sorted(ENGINE_MODULES))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(log=dirty_logs())
def test_every_engine_equals_the_reference_on_dirty_lines(engine, log, monkeypatch):
    if ENGINE_MODULES[engine]:
        pytest.importorskip(ENGINE_MODULES[engine])
    from sglang_doctor.read import scanner as scanner_mod

    monkeypatch.setattr(scanner_mod, "SMALL_BLOCK", 0)
    lines, _tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise
    pipe = StreamPipeline()
    pipe.scanner._engine = engine
    events = pipe.feed(data) + pipe.finish()
    got = [("incident", e["_diagnosis"].incident.first_line, e["_diagnosis"].incident.last_line,
            e["_diagnosis"].incident.traceback, e["_diagnosis"].incident.serving) if e["event"] == "incident"
            else (e["event"], e["line"])
           for e in events if e["event"] in ("incident", "milestone", "ready", "launch")]
    assert got == reference(data)[0]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Error: ", "exit code", "crashed with exit code", "NCCL WARN", "Killed", "rc=",
                                 "Exit code:", "x", " ", "\n", "é", "Received sigquit"]), max_size=30))
def test_literal_index_ids_equal_a_loop_over_every_literal(parts):
    """The automaton's match ids name exactly the literals a loop of ``in`` finds."""
    from sglang_doctor.incidents import signals
    from sglang_doctor.read.scanner import LiteralIndex

    text = "".join(parts)
    index = LiteralIndex(signals.LITERALS)
    assert index.found(text) == {lit for lit in signals.LITERALS if lit in text}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Error: ", "exit code", "crashed with exit code", "NCCL WARN", "Killed", "rc=",
                                 "Exit code:", "x", " ", "\n", "é", "\udcff", "Received sigquit"]), max_size=30))
def test_literal_index_on_long_texts_equals_a_loop_over_every_literal(parts):
    """Long texts are searched as UTF-8 bytes (LiteralIndex.BYTES_TEXT): the same answer."""
    from sglang_doctor.incidents import signals
    from sglang_doctor.read.scanner import LiteralIndex

    text = "".join(parts)
    index = LiteralIndex(signals.LITERALS)
    index.BYTES_TEXT = 0  # every text takes the bytes path
    assert index.found(text) == {lit for lit in signals.LITERALS if lit in text}
    long_text = "x" * LiteralIndex.BYTES_TEXT + text
    assert LiteralIndex(signals.LITERALS).found(long_text) == {lit for lit in signals.LITERALS if lit in long_text}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Error: ", "exit code", "crashed with exit code", "NCCL WARN", "Killed", "rc=",
                                 "rc=137", "Exit code:", "x", " ", "\n", "\r", "\x1b[31m", "\x00", "é", "\udcff",
                                 "Received sigquit", "Traceback (most recent call last):"]), max_size=40),
       st.integers(0, 70))
def test_literal_index_paths_agree(parts, pad):
    """The C extension's path (the GIL kept on short texts), the automaton's and the loop of
    ``in`` give the same literals, on texts with line breaks, CR, ESC, NUL and non-ASCII."""
    from sglang_doctor.incidents import assemble
    from sglang_doctor.read.scanner import LiteralIndex

    literals = set(assemble.Assembler()._literals.literals)
    text = "y" * pad + "".join(parts)
    want = {lit for lit in literals if lit in text}
    native = LiteralIndex(literals)
    if native._matcher is None:
        pytest.skip("the C extension is not built")
    assert native.found(text) == want
    if "\udcff" not in text or len(text) >= LiteralIndex.BYTES_TEXT:  # (the str automaton refuses a lone surrogate)
        assert LiteralIndex(literals, native=False).found(text) == want


def test_literal_index_with_the_extension_builds_no_automaton():
    """With the C extension built, ``found`` asks only it (texts up to LONG_TEXT) or ``in``
    (longer ones): the Aho-Corasick automatons (13 ms of start-up at load 13) are not built."""
    from sglang_doctor.incidents import assemble
    from sglang_doctor.read.scanner import LiteralIndex

    literals = set(assemble.Assembler()._literals.literals)
    index = LiteralIndex(literals)
    if index._matcher is None:
        pytest.skip("the C extension is not built")
    assert index._ac is None and index._bytes_ac is None
    long_text = "y" * LiteralIndex.LONG_TEXT + "NCCL WARN x Traceback (most recent call last):"
    assert index.found(long_text) == {lit for lit in literals if lit in long_text}
    assert LiteralIndex(literals, native=False)._ac is not None or not _has("ahocorasick_rs")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _blocks(data: bytes, chunks: list[int]) -> list[bytes]:
    out, pos = [], 0
    for size in chunks:
        out.append(data[pos:pos + size])
        pos += size
    return out + [data[pos:]]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(log=dirty_logs(), chunks=st.lists(st.integers(1, 300), max_size=20))
def test_blocks_searched_ahead_in_a_thread_equal_the_reference(log, chunks, monkeypatch):
    """explain's path: each block read and searched by the worker, however small."""
    from sglang_doctor.read import scanner as scanner_mod

    monkeypatch.setattr(scanner_mod, "SMALL_BLOCK", 0)
    lines, _tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise
    pipe = StreamPipeline()
    events = []
    for block in pipe.read_ahead(iter(_blocks(data, chunks))):
        events += pipe.feed(block)
    events += pipe.finish()
    got = [("incident", e["_diagnosis"].incident.first_line, e["_diagnosis"].incident.last_line,
            e["_diagnosis"].incident.traceback, e["_diagnosis"].incident.serving) if e["event"] == "incident"
            else (e["event"], e["line"])
           for e in events if e["event"] in ("incident", "milestone", "ready", "launch")]
    assert got == reference(data)[0]
    assert pipe.lines_seen == reference(data)[1]


@pytest.fixture(scope="module")
def rule_pack():
    from sglang_doctor.cli.app import load_ruleset

    return load_ruleset(())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(log=dirty_logs(), chunks=st.lists(st.integers(1, 300), max_size=20))
def test_with_the_rule_pack_the_scanner_equals_every_line_read(log, chunks, rule_pack):
    """The rules' literals are signals too (a rule's ': error: ' on any line that is not a
    warning): the scanner with them equals the same pipeline reading every line."""
    lines, _tracebacks, noise = log
    data = ("\n".join(lines) + "\n").encode() + noise

    def run(fast: bool):
        pipe = StreamPipeline(rule_pack, remediate=False, fast=fast)
        events = []
        for block in _blocks(data, chunks):
            events += pipe.feed(block)
        events += pipe.finish()
        return [(e["event"], e.get("rule"), e.get("line"), e.get("lines")) for e in events], pipe.lines_seen

    assert run(True) == run(False)


def test_an_error_while_reading_ahead_is_raised_in_the_callers_thread_and_closing_stops_the_worker():
    import threading

    def failing():
        yield b"[2026-12-02 15:56:05] one\n" * 10
        raise OSError("disk gone")

    pipe = StreamPipeline()
    with pytest.raises(OSError, match="disk gone"):
        for block in pipe.read_ahead(failing()):
            pipe.feed(block)
    assert pipe.lines_seen == 10

    def endless():
        while True:
            yield b"[2026-12-02 15:56:05] line\n" * 100

    ahead = pipe.read_ahead(endless())
    for _ in range(3):
        pipe.feed(next(ahead))
    ahead.close()
    assert not any(t.name == "sglang-doctor-read-ahead" and t.is_alive() for t in threading.enumerate())
