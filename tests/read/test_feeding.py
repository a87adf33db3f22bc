"""The same bytes give the same events however they are fed (docs/CONTRACT.md): line by
line, whole, in blocks of any size, in ragged pieces, read and searched ahead in a thread.

Seeded synthetic logs (lines of a serving launch: batch lines, failures SGLang may survive,
deaths, tracebacks, a NUL, a ``\\r`` rewrite) repeated many times, so a held incident's
evidence (the batch lines after it, a death) falls anywhere relative to a block's end.  The
wrap-judging sample is also made small, so the blocks reach the pipeline one by one instead of
all at once when the sample is complete."""

import json
import random

import pytest

from sglang_doctor.cli.app import load_ruleset
from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.read import records
from serving_sample import LINES


# seed 0 as drawn, and two that gave a warning or an incident for the same line depending on
# the block size before a held serving incident was decided on the line that decides it (5
# of seeds 0-39 did; these two are the smallest, the test's time is mostly theirs)
SEEDS = [0, 30, 36]


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset(())


def synthetic(seed: int) -> bytes:
    rng = random.Random(seed)
    lines = [rng.choice(LINES) for _ in range(rng.randint(1, 40))]
    return ("\n".join(lines * rng.randint(50, 200)) + "\n").encode()


def pieces(data: bytes, how: str, seed: int) -> list[bytes]:
    if how == "lines":
        return data.splitlines(keepends=True)
    if how == "whole":
        return [data]
    if how == "ragged":
        rng = random.Random(seed)
        out, pos = [], 0
        while pos < len(data):
            n = rng.randint(1, 3000)
            out.append(data[pos:pos + n])
            pos += n
        return out
    size = int(how.split(":")[1])  # "blocks:N" or "ahead:N"
    return [data[i:i + size] for i in range(0, len(data), size)]


def events(ruleset, data: bytes, how: str, seed: int, whole_log: bool) -> list[str]:
    pipe = StreamPipeline(ruleset, remediate=False, whole_log=whole_log, capacity=True)
    blocks = pieces(data, how, seed)
    if how.startswith("ahead"):
        blocks = pipe.read_ahead(blocks)
    out = []
    for block in blocks:
        out += pipe.feed(block)
    out += pipe.finish()
    out.append(pipe.summary())
    # the ready event's wall-clock seconds and the private fields are no part of the output
    return [json.dumps({k: v for k, v in ev.items() if not k.startswith("_") and k != "seconds"},
                       sort_keys=True, default=str) for ev in out]


WAYS = ["whole", "ragged", "blocks:16384", "ahead:16384"]


@pytest.mark.parametrize("wrap_sample", [records.WRAP_SAMPLE, 1024])
@pytest.mark.parametrize("seed", SEEDS)
def test_events_do_not_depend_on_how_the_bytes_are_fed(ruleset, monkeypatch, seed, wrap_sample):
    monkeypatch.setattr(records, "WRAP_SAMPLE", wrap_sample)
    data = synthetic(seed)
    want = events(ruleset, data, "lines", seed, whole_log=True)
    for how in WAYS:
        got = events(ruleset, data, how, seed, whole_log=True)
        assert got == want, f"seed {seed}, fed {how}: other events than line by line"


@pytest.mark.parametrize("seed", SEEDS[1:])
def test_a_live_streams_events_do_not_depend_on_the_pieces(ruleset, seed):
    """A pipe or a followed file (not whole_log): provisional incidents and their withdrawal."""
    data = synthetic(seed)
    want = events(ruleset, data, "lines", seed, whole_log=False)
    for how in ("whole", "blocks:16384"):
        got = events(ruleset, data, how, seed, whole_log=False)
        assert got == want, f"seed {seed}, fed {how}: other events than line by line"


def test_a_serving_incident_is_decided_by_the_batch_lines_right_after_it(ruleset, monkeypatch):
    """Two batch lines follow the failure, then a death, then more batch lines than the launch
    keeps (serving.KEEP) and the failure again: the two right after the first one decide (it
    survived), whether the whole text comes in one block or line by line."""
    monkeypatch.setattr(records, "WRAP_SAMPLE", 1)  # every block goes on at once
    batch, failure, death = LINES[0], LINES[7], LINES[9]
    data = ("\n".join([batch, failure, batch, batch, death] + [batch] * 8 + [failure, batch]) + "\n").encode()
    for how in ("lines", "whole"):
        got = [json.loads(ev) for ev in events(ruleset, data, how, 0, whole_log=True)]
        first = next(ev for ev in got if ev.get("rule") == "class.memory.pool_message")
        assert first["lines"] == [2, 2]
        assert first["event"] == "warning", f"fed {how}: {first}"
        assert "(batch line 4)" in first["message"], first["message"]
