"""bench/healthy_bait.py (b) applies bench/robustness.py's transforms to healthy texts.  A source
that ended inside its last line (a paste cut mid-line) must reach the tool still cut: the
transforms rebuild the text from its lines and end it with a line end, which would complete a
line nobody pasted complete (``keep_cut_end``).  The source's own ending wins where the output
still ends with that line; a transform that ends the text elsewhere keeps its ending, and so do
the outputs of a source that ended with a line end.  Real files, real transforms."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
try:
    import healthy_bait
    import robustness
finally:
    sys.path.pop(0)

CUT = ROOT / "fixtures" / "healthy" / "pd_client_abort_sibling_rank_cut.log"


def _out(name: str, text: str) -> str | None:
    sample = robustness.Sample(CUT.name, "tune", robustness._split_lines(text), 0, "none", healthy=True)
    out = robustness.apply(name, sample)
    return None if out is None else healthy_bait.keep_cut_end(text, out)


def test_the_fixture_ends_inside_its_last_line():
    text = CUT.read_text()
    assert not text.endswith("\n") and text.rsplit("\n", 1)[-1].endswith("decode_req.req.boots")


@pytest.mark.parametrize("name", ["quote", "ansi", "kubectl", "crlf", "blank", "tabs", "wrap"])
def test_a_transform_that_keeps_the_end_keeps_it_cut(name: str):
    out = _out(name, CUT.read_text())
    assert out is not None and not out.endswith("\n") and out.rstrip().endswith("req.boots")


def test_a_transform_that_ends_the_text_elsewhere_keeps_its_own_ending():
    out = _out("details", CUT.read_text())
    assert out.endswith("</details>\n")


def test_a_source_with_its_line_end_is_left_as_the_transform_made_it():
    text = CUT.read_text() + "trap\n"
    for name in ("quote", "blank", "crlf"):
        sample = robustness.Sample(CUT.name, "tune", robustness._split_lines(text), 0, "none", healthy=True)
        out = robustness.apply(name, sample)
        assert healthy_bait.keep_cut_end(text, out) == out


def test_the_tool_reads_the_kept_cut_as_the_client_abort_it_is():
    """What the measure is for: the fixture, quoted, is quiet as the fixture is."""
    engine = healthy_bait.Engine()
    assert engine.incidents(CUT.read_text()) == []
    assert engine.incidents(_out("quote", CUT.read_text())) == []
