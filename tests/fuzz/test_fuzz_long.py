"""Fuzzing with hypothesis: the server_args parser and the traceback assembler.

The promises checked are those of ``fuzz_targets`` (shared with the atheris driver).
Inputs start from real shapes -- every dump and log line of fixtures/ -- and are mutated
byte-wise, so the parsers see near-misses of real text, not only noise.  The quick tests
run in the everyday suite; the ``slow`` ones run ``FUZZ_EXAMPLES`` examples each
(default 5000; ``run_fuzz.sh`` asks for far more when atheris is missing).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzz_targets

DUMPS = fuzz_targets.seed_dumps()
LOG_LINES = sorted({line for log in fuzz_targets.seed_logs() for line in log.split(b"\n")})
LONG = int(os.environ.get("FUZZ_EXAMPLES", "5000"))


@st.composite
def mutated(draw, seeds: list[bytes]) -> bytes:
    """A seed with a few random byte edits: insert, delete, replace, duplicate a span."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 3))
        at = draw(st.integers(0, len(data)))
        if op == 0:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == 1:
            del data[at:at + draw(st.integers(1, 16))]
        elif op == 2 and at < len(data):
            data[at] = draw(st.sampled_from(b"'\"()[]{},=<>\\:\n 0a"))
        else:
            data[at:at] = data[at:at + draw(st.integers(1, 40))]
    return bytes(data)


@st.composite
def log_text(draw) -> bytes:
    """Real log lines (some mutated) mixed with arbitrary bytes."""
    parts = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 9))
        if kind < 6:
            parts.append(draw(st.sampled_from(LOG_LINES)))
        elif kind < 9:
            parts.append(draw(mutated(LOG_LINES)))
        else:
            parts.append(draw(st.binary(max_size=30)))
    return b"\n".join(parts)


def fuzz_settings(n: int):
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def run_server_args(n: int):
    @fuzz_settings(n)
    @given(mutated(DUMPS), st.integers(0, 1 << 16))
    def check(data, cut):
        fuzz_targets.check_server_args(data, cut)

    check()


def run_assembler(n: int):
    @fuzz_settings(n)
    @given(log_text())
    def check(data):
        fuzz_targets.check_assembler(data)
        fuzz_targets.check_builder(data)

    check()


def test_server_args_fuzz_quick():
    run_server_args(150)


def test_assembler_fuzz_quick():
    run_assembler(80)


@pytest.mark.slow
def test_server_args_fuzz_long():
    run_server_args(LONG)


@pytest.mark.slow
def test_assembler_fuzz_long():
    run_assembler(LONG)


def test_milestone_figure_that_is_not_a_number_does_not_crash():
    fuzz_targets.check_assembler(b"[2026-12-02 15:54:36 TP1] Load weight begin. avail mem=.46.79 GB\n")


def test_seed_corpora_are_real():
    """The fuzzers start from the fixtures' real dumps and lines, not from nothing."""
    assert len(DUMPS) >= 10 and all(d.startswith((b"ServerArgs(", b"{")) for d in DUMPS)
    assert len(LOG_LINES) > 500


def test_a_dump_that_is_a_set_of_dicts_does_not_crash():
    # found by test_server_args_fuzz_long in CI: '{{...}}' is a set holding a dict, which
    # ast.literal_eval answers with TypeError (unhashable type: 'dict')
    dump = (b"{{'model_path': '/models/Qwen3-8B', 'tp_size': 1, 'mem_fraction_static': 0.85, "
            b"'attention_backend': 'fa3'}}")
    fuzz_targets.check_server_args(dump, 0)
