"""``records.wrap_width`` decodes only the lines that can be the longest (their bytes at least
as long as the longest text found so far): it must give what decoding every line gives."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_doctor.read import records
from sglang_doctor.read.reader import clean_text


def wrap_width_decoding_every_line(data: bytes) -> int | None:
    """The definition (records.wrap_width before it skipped lines), kept as the reference."""
    raws = data.split(b"\n")[:-1]
    if len(raws) < 2:
        return None
    lines = [clean_text(raw[:-1] if raw.endswith(b"\r") else raw) for raw in raws]
    width = max(len(line) for line in lines)
    if width < records.WRAP_MIN_WIDTH:
        return None
    pieces: set[str] = set()
    for i, line in enumerate(lines[:-1]):
        if len(line) == width and not records.starts_own_line(lines[i + 1], line):
            pieces.add(records._DIGITS.sub("0", line))
            if len(pieces) >= records.WRAP_MIN_PIECES:
                return width
    return None


# pieces whose text is shorter than their bytes (ESC sequences, NUL, CR rewrites, multi-byte
# and invalid UTF-8), and folded-looking lines of 80 characters
PIECES = (b"\x1b[31m", b"\x1b[0m", b"\x00", b"\r", b"\r\n", b"\xc3\xa9", b"\xe2\x96\x88", b"\xff", b"\xf0\x9f",
          b"\n", b"  ", b"[2026-12-02 15:56:05 TP0] ", b"Traceback (", b"x" * 80, b"y" * 79, b"7" * 40,
          b"abcdefghij" * 8 + b"\n", b"continued here\n", b"A" * 81)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=30)), max_size=80))
def test_wrap_width_equals_decoding_every_line(parts):
    data = b"".join(parts)
    assert records.wrap_width(data) == wrap_width_decoding_every_line(data)


def folded(width: int, n: int, colour: bool) -> bytes:
    out = []
    for k in range(n):
        text = f"ValueError: message number {k} " + "".join(chr(97 + (k * 7 + j) % 26) for j in range(200))
        pieces = [text[i:i + width] for i in range(0, len(text), width)]
        if colour:
            pieces = ["\x1b[31m" + p + "\x1b[0m" for p in pieces]  # bytes longer than the text
        out += pieces
    return ("\n".join(out) + "\n").encode()


def test_a_folded_text_with_escapes_still_gives_its_width():
    for width in (80, 100, 132):
        for colour in (False, True):
            data = folded(width, 3, colour)
            assert records.wrap_width(data) == wrap_width_decoding_every_line(data) == width
