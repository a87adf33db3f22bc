"""A settled file's blocks mapped instead of copied (read/mapped.py, explain on a big file).

A ``MappedBlock`` must read as the ``bytes`` it stands for (every method the reader calls),
``open_log(mapped=True)`` must give the file's bytes exactly (a file that grows while it is
read included) and map only a settled regular file, and explain's read-ahead over mapped
blocks must give the events of reading every line."""

import gzip
import mmap
import os
import tempfile
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor import pipeline
from sglang_doctor.read import mapped, records, scanner
from sglang_doctor.read.mapped import MappedBlock
from serving_sample import LINES



def settle(path) -> None:
    """Make ``path`` look finished: last written an hour ago."""
    old = time.time() - 3600
    os.utime(path, (old, old))


def write(path, data: bytes, settled: bool = True):
    with open(path, "wb") as fh:
        fh.write(data)
    if settled:
        settle(path)
    return path


@pytest.fixture
def small_blocks(monkeypatch):
    """explain's block sizes scaled down (multiples of the mapping granularity)."""
    g = mmap.ALLOCATIONGRANULARITY
    monkeypatch.setattr(pipeline, "FIRST_BLOCK", 2 * g)
    monkeypatch.setattr(pipeline, "BLOCK", 4 * g)


@st.composite
def block_and_args(draw):
    data = draw(st.binary(min_size=1, max_size=300)) + draw(st.sampled_from([b"", b"ab\nab\n", b"\n"]))
    n = len(data)
    idx = st.one_of(st.none(), st.integers(-n - 3, n + 3))
    needle = draw(st.one_of(st.sampled_from([b"", b"\n", b"ab", data[:2], data[-3:]]), st.binary(max_size=3)))
    return data, needle, draw(st.integers(-n - 3, n + 3)), draw(idx)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block_and_args())
def test_a_mapped_block_reads_as_its_bytes(case):
    data, needle, start, end = case
    with tempfile.TemporaryDirectory(prefix="speed19-") as tmp:
        path = write(os.path.join(tmp, "log"), data)
        with open(path, "rb") as fh:
            block = MappedBlock(fh.fileno(), len(data), access=mmap.ACCESS_READ)
        try:
            assert block.count(needle, start, end) == data.count(needle, start, end)
            assert block.count(needle) == data.count(needle)
            assert block.startswith(needle, start, end) == data.startswith(needle, start, end)
            assert block.endswith(needle, start, end) == data.endswith(needle, start, end)
            assert block.startswith(needle, start) == data.startswith(needle, start)
            assert block.endswith(needle) == data.endswith(needle)
            assert block.startswith((b"zz", needle)) == data.startswith((b"zz", needle))
            s = 0 if start is None else start
            if not needle:  # (mmap's find of b"" past the end differs; the reader never looks for b"")
                needle = b"\n"
            assert block.find(needle, s, end if end is not None else len(data)) == \
                data.find(needle, s, end if end is not None else len(data))
            assert block.rfind(needle, max(s, 0)) == data.rfind(needle, max(s, 0))
            assert block[start:end] == data[start:end] and type(block[start:end]) is bytes
            assert len(block) == len(data) and b"".join([block]) == data
        finally:
            block.close()


def blocks_of(path, mapped_: bool) -> list:
    return list(pipeline.open_log(path, mapped=mapped_))


def test_a_settled_file_is_mapped_after_its_first_block_with_the_same_bytes(tmp_path, small_blocks):
    data = ("\n".join(LINES * 400) + "\n").encode()
    path = write(tmp_path / "log", data)
    got = blocks_of(path, True)
    assert type(got[0]) is bytes and len(got[0]) == pipeline.FIRST_BLOCK
    assert got[1:] and all(type(b) is MappedBlock for b in got[1:])
    assert all(len(b) == pipeline.BLOCK for b in got[1:-1])
    assert b"".join(got) == data == b"".join(blocks_of(path, False))
    assert all(type(b) is bytes for b in blocks_of(path, False))  # (only when asked: explain)


@pytest.mark.parametrize("kind", ["written just now", "gzip", "utf-16", "smaller than the first block"])
def test_what_is_not_mapped_is_read_as_before(tmp_path, small_blocks, kind):
    text = "\n".join(LINES * 400) + "\n"
    data = {"gzip": gzip.compress(text.encode()), "utf-16": text.encode("utf-16"),
            "smaller than the first block": text.encode()[: pipeline.FIRST_BLOCK - 1]}.get(kind, text.encode())
    path = write(tmp_path / "log", data, settled=kind != "written just now")
    got = blocks_of(path, True)
    assert all(type(b) is bytes for b in got)
    assert b"".join(got) == b"".join(blocks_of(path, False))


def test_a_fifo_is_read_as_before(tmp_path, small_blocks):
    data = ("\n".join(LINES * 400) + "\n").encode()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    got = blocks_of(fifo, True)
    writer.join()
    assert all(type(b) is bytes for b in got) and b"".join(got) == data


def test_a_settled_file_that_grows_while_it_is_read_is_read_to_its_new_end(tmp_path, small_blocks):
    data = ("\n".join(LINES * 400) + "\n").encode()
    more = ("\n".join(reversed(LINES)) + "\n").encode() * 300
    path = write(tmp_path / "log", data)
    got = []
    for block in pipeline.open_log(path, mapped=True):
        got.append(bytes(block))
        if len(got) == 2:
            with open(path, "ab") as fh:
                fh.write(more)
    assert b"".join(got) == data + more


def test_a_block_that_cannot_be_mapped_is_read(tmp_path, small_blocks, monkeypatch):
    """A file that shrank between the size asked and the mapping (mmap refuses a mapping past
    the end): the rest is read with read(), from where the mapped blocks end."""
    data = ("\n".join(LINES * 400) + "\n").encode()
    path = write(tmp_path / "log", data)
    made = []

    class Refusing(MappedBlock):
        def __new__(cls, *args, **kwargs):
            if made:
                raise ValueError("mmap length is greater than file size")
            made.append(1)
            return MappedBlock.__new__(MappedBlock, *args, **kwargs)

    monkeypatch.setattr(mapped, "MappedBlock", Refusing)
    got = blocks_of(path, True)
    assert [type(b) for b in got[:3]] == [bytes, MappedBlock, bytes]
    assert b"".join(got) == data


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=40), repeat=st.integers(50, 200))
def test_explains_read_ahead_over_mapped_blocks_gives_the_events_of_the_same_blocks_copied(lines, repeat, rule_pack,
                                                                                           small_blocks, monkeypatch):
    """The scanner's every step (the search ahead, the skipped runs' counts, the kept batch
    lines, the record starts, the weak-hit filter, the pieces left to the caller) over
    MappedBlocks, against the same blocks as ``bytes`` through the same read-ahead, and
    against these bytes fed line by line, every line read (tests/read/test_feeding.py)."""
    from sglang_doctor.pipeline import StreamPipeline

    monkeypatch.setattr(scanner, "SMALL_BLOCK", 0)  # every block searched ahead
    monkeypatch.setattr(scanner, "_cpus", lambda: 2)
    monkeypatch.setattr(records, "WRAP_SAMPLE", 1024)  # (the blocks before it are fed joined)
    data = ("\n".join(lines * repeat) + "\n").encode()
    with tempfile.TemporaryDirectory(prefix="speed19-") as tmp:
        path = write(os.path.join(tmp, "log"), data)
        blocks = list(pipeline.open_log(path, mapped=True))
        assert (MappedBlock in map(type, blocks)) == (len(data) > pipeline.FIRST_BLOCK)

        def run(blocks, ahead: bool = True):
            pipe = StreamPipeline(rule_pack, remediate=False, fast=ahead, whole_log=True)
            events = []
            for block in (pipe.read_ahead(iter(blocks)) if ahead else blocks):
                events += pipe.feed(block)
                del block
            events += pipe.finish()
            return [(e["event"], e.get("rule"), e.get("line"), e.get("lines"), e.get("title")) for e in events], \
                pipe.lines_seen

        got = run(blocks)
        assert got == run([bytes(b) for b in blocks])
        assert got == run(data.splitlines(keepends=True), ahead=False)
        assert got[1] == data.count(b"\n")


@pytest.fixture(scope="module")
def rule_pack():
    from sglang_doctor.cli.app import load_ruleset

    return load_ruleset(())
