"""Triton < 3.2's pipeliner diagnostic 'loc("...decode_attention.py":L:C): error: operation scheduled
before its operands' is harmless: SGLang 0.4.1-0.4.6.post5 log "The following error message 'operation
scheduled before its operands' can be ignored." before their decode-attention kernel compiles
(srt/layers/attention/triton_ops/decode_attention.py: "This issue will not affect performance and
accuracy").  It is no incident (signals.py triton_ignorable_diagnostic; the rule pack's ": error: "
literal read it as a kernel compile failure before), but it shows a Triton kernel being compiled
(progress.py JIT_BUILD).  A fatal MLIR diagnostic stays a compile failure."""

from conftest import incidents_of_lines
from sglang_doctor.incidents import progress

DIAG = ('loc("/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/attention/triton_ops/decode_attention.py"'
        ':310:16): error: operation scheduled before its operands')


def test_the_diagnostic_and_its_interleaved_tail_are_no_incident(tmp_path):
    tail = 'g/srt/layers/attention/triton_ops/decode_attention.py":310:16): error: operation scheduled before its operands'
    assert incidents_of_lines(tmp_path, [DIAG, DIAG, tail, "[2025-02-18 09:50:59 TP0] max_total_num_tokens=412633"]) == []


def test_a_fatal_mlir_diagnostic_is_still_an_incident(tmp_path):
    fatal = DIAG.replace("operation scheduled before its operands",
                         "failed to legalize operation 'tt.dot' that was explicitly marked illegal")
    (inc,) = incidents_of_lines(tmp_path, [fatal])
    assert inc.first_line == 1


def test_the_diagnostic_is_a_kernel_being_compiled():
    assert progress.phase_of(DIAG) == progress.JIT_BUILD
    # SGLang's own notice is printed at import, not while a kernel compiles
    notice = "[2025-02-18 09:50:22 TP0] The following error message 'operation scheduled before its operands' can be ignored."
    assert progress.phase_of(notice) is None


def test_the_diagnostic_cut_at_its_tail_is_no_incident(tmp_path):
    # a paste cut inside the line (a search excerpt, a terminal width) keeps a head of its words
    for cut in ("operation scheduled before its op", "operation scheduled before its", "operation scheduled before"):
        line = DIAG.replace("operation scheduled before its operands", cut)
        assert incidents_of_lines(tmp_path, [DIAG, line]) == [], cut


def test_another_diagnostic_after_the_same_words_is_still_an_incident(tmp_path):
    line = DIAG.replace("operation scheduled before its operands", "operation scheduled before its operands: x")
    (inc,) = incidents_of_lines(tmp_path, [line])
    assert inc.first_line == 1


def test_the_diagnostic_cut_before_before_anywhere_in_the_text_is_no_incident(tmp_path):
    """A rank's line cut inside the words, followed by more lines (signals.Signal.cut_anywhere:
    read as cut_match.complete_literal reads the input's last line).  Fails on the old code: the
    pattern needed "operation scheduled before" whole unless the line was the input's last,
    cut without a line end."""
    for cut in ("operation scheduled bef", "operation scheduled", "operation schedu"):
        line = DIAG.replace("operation scheduled before its operands", cut)
        assert incidents_of_lines(tmp_path, [DIAG, line, "[2025-02-18 09:50:59 TP0] max_total_num_tokens=412633"]) == [], cut


def test_too_little_of_the_words_is_still_a_compile_error(tmp_path):
    """A head shorter than complete_literal asks (MIN_LITERAL_SHARE of the literal) says too little."""
    line = DIAG.replace("operation scheduled before its operands", "operation sch")
    (inc,) = incidents_of_lines(tmp_path, [line, "[2025-02-18 09:50:59 TP0] max_total_num_tokens=412633"])
    assert inc.first_line == 1
