"""records.sglang_prefix: the one match of SGLang's header the assembler's reading of a line
starts with (incidents/assemble.py ``_feed``) must say what the three matches it replaced
said: no outer prefix (outer_prefix_end 0), a record start (is_record_start), the same split
(parse_prefix); and it must find the header wherever parse_prefix finds SGLang's own one."""

from pathlib import Path

import pytest

from sglang_doctor.read import records
from sglang_doctor.read.reader import clean_text

ROOT = Path(__file__).resolve().parents[2]


def _lines():
    for src in (ROOT / "fixtures", ROOT / "corpus" / "dev"):
        for path in sorted(src.rglob("*.log")):
            for raw in path.read_bytes().splitlines():
                yield clean_text(raw)


def _agrees(text: str) -> None:
    prefix = records.sglang_prefix(text)
    whole = records.parse_prefix(text)
    if prefix is not None:
        assert records.outer_prefix_end(text) == 0, text
        assert records.is_record_start(text), text
        assert prefix == whole, text
    else:
        assert not (text.startswith("[") and whole.kind in ("sglang", "uvicorn")), text


def test_the_shipped_logs_lines():
    n = found = 0
    for text in _lines():
        _agrees(text)
        n += 1
        found += records.sglang_prefix(text) is not None
    assert n > 10_000 and found > 1_000  # the logs hold both kinds of lines


@pytest.mark.parametrize("text, kind", [
    ("[2026-05-09 09:36:27 TP0] Scheduler hit an exception: Traceback", "sglang"),
    ("[2026-05-09 09:36:27.123 DP1 TP3] Decode batch, #running-req: 1", "sglang"),
    ("[2026-05-09 09:36:27] INFO:     127.0.0.1:5 - \"GET /health HTTP/1.1\" 200 OK", "uvicorn"),
    ("[15:14:17] /project/cpp/tokenizer_info.cc:146: Warning: x", None),  # time only: parse_prefix's
    ("sglang-1  | [2026-05-09 09:36:27 TP0] ValueError: x", None),  # docker compose's prefix first
    (" [2026-05-09 09:36:27 TP0] x", None),
    ("[36m[2026-05-09 09:36:27 TP0] x", None),  # a colour code's remnant first
    ("[2026-05-09 09:36:27 TP0]", "sglang"),
    ("[rank0]: Traceback (most recent call last):", None),
    ("", None),
])
def test_forms(text, kind):
    _agrees(text)
    prefix = records.sglang_prefix(text)
    assert (prefix.kind if prefix is not None else None) == kind
