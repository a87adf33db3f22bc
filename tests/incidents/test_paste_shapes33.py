"""Shapes of real pastes incident forming got wrong (session 30, corpus/field33), each with a
counter-example:

- an exception line quoted with markdown indentation in an issue's prose, pasted alone
  (sgl-project/sglang#15650: ``  Exception: Capture cuda graph failed: No supported CUDA
  architectures found for major versions [9, 10].``).  On the text's first line nothing is above
  it, so the indent is the paste's: the line is a bare exception.  Further down, an indented
  line stays what it was (inside a traceback or a message), not an exception of its own.
"""

from __future__ import annotations

from conftest import incidents_of_lines

QUOTED = "  Exception: Capture cuda graph failed: No supported CUDA architectures found for major versions [9, 10]."
PREFILL = ("[2025-03-22 04:33:10 TP0] Prefill batch. #new-seq: 1, #new-token: 47, #cached-token: 1, "
           "token usage: 0.00, #running-req: 0, #queue-req: 0,")


def test_an_indented_exception_line_that_opens_the_text_is_a_bare_exception(tmp_path):
    incs = incidents_of_lines(tmp_path, [QUOTED])
    assert len(incs) == 1
    inc = incs[0]
    assert inc.exception is not None
    assert inc.exception.type == "Exception"
    assert inc.exception.message.startswith("Capture cuda graph failed: No supported CUDA architectures")


def test_the_same_line_under_another_line_is_not_an_exception_of_its_own(tmp_path):
    incs = incidents_of_lines(tmp_path, [PREFILL, QUOTED])
    assert all(inc.exception is None or inc.exception.type != "Exception" for inc in incs)


def test_an_indented_first_line_that_is_no_exception_forms_nothing(tmp_path):
    # a warning's continuation and a code line, indented, as the first line of a paste
    for first in ("  warnings.warn(", "    raise NotImplementedError()", "  Example: sglang serve --model-path <model>"):
        assert incidents_of_lines(tmp_path, [first]) == [], first
