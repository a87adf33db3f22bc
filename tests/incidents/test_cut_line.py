"""A text that ends inside its last line (a paste or search excerpt cut mid-line): that line is
read again with what the rest of the text says (incidents/cut_match.py).

* a cut record that, up to the cut and numbers aside, is a record another rank logged complete
  just before takes the complete one's reading: TP1's "Decode transfer failed ... d" after TP0's
  "... Aborted by AbortReq." is the same client abort, not a KV transport failure;
* a line cut inside a signal's own words ("... detected by wat") is read as going on with them
  when most of the words are before the cut.

Only the last line of a text without a final line end is read so: the same lines ending with a
line end are read as before.  The first and the fourth test fail on the code before this module
(one false alarm, no incident); the others hold there too, but for the helpers' own tests."""

from pathlib import Path

from sglang_doctor import pipeline
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.incidents import cut_match, signals

ABORTED = ("[2026-01-01 00:00:23 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='9b2e41c07d5a4f86' "
           "decode_req.req.bootstrap_room=77302 with exception KVTransferError(bootstrap_room=77302): Aborted by AbortReq.")
CUT_SIBLING = "[2026-01-01 00:00:23 TP1] Decode transfer failed for request rank=1 decode_req.req.rid='9b2e41c07d5a4f86' decode_req"
WATCHDOG_CUT = ("[rank3]:[E226 11:16:37.180204204 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] "
                "Exception (either an error or timeout) detected by wat")
READY = "[2026-01-01 00:00:20] The server is fired up and ready to roll!"


def _incidents(tmp_path: Path, lines: list[str], *, final_newline: bool):
    p = tmp_path / "log.txt"
    p.write_text("\n".join(lines) + ("\n" if final_newline else ""))
    return pipeline.read_incidents(p, RuleSet.load())[1]


def test_a_cut_repeat_of_another_ranks_handled_abort_is_no_incident(tmp_path):
    assert _incidents(tmp_path, [READY, ABORTED, CUT_SIBLING], final_newline=False) == []


def test_the_same_lines_with_a_line_end_are_read_as_before(tmp_path):
    # the last line is complete then: it says no more than it shows (a transfer failed)
    (inc,) = _incidents(tmp_path, [READY, ABORTED, CUT_SIBLING], final_newline=True)
    assert inc.first_line == 3


def test_a_cut_repeat_of_a_real_transfer_failure_stays_one(tmp_path):
    failed = ABORTED.replace("Aborted by AbortReq.", "Failed to get kvcache from prefill instance, it might be dead")
    (inc,) = _incidents(tmp_path, [READY, failed, CUT_SIBLING], final_newline=False)
    assert inc.first_line == 2


def test_a_line_cut_inside_the_watchdog_words_is_the_watchdog_signal(tmp_path):
    (inc,) = _incidents(tmp_path, [READY, WATCHDOG_CUT], final_newline=False)
    assert "nccl_watchdog" in inc.signal_names
    assert inc.captures.get("cut_literal") == "detected by watchdog"


def test_too_little_of_the_words_before_the_cut_is_nothing(tmp_path):
    short = WATCHDOG_CUT[: WATCHDOG_CUT.index("detected by wat")] + "detec"
    assert _incidents(tmp_path, [READY, short], final_newline=False) == []


def test_repeats_handled_needs_the_same_record_up_to_the_cut():
    handled = [cut_match.normalized(ABORTED)]
    assert cut_match.repeats_handled(CUT_SIBLING, handled)
    other = CUT_SIBLING.replace("decode_req.req.rid", "req.rid")
    assert not cut_match.repeats_handled(other, handled)
    assert not cut_match.repeats_handled("[2026-01-01 00:00:23 TP1] Decode transfer", handled)  # too short


def test_complete_literal_needs_a_word_start_and_the_pattern():
    found = cut_match.complete_literal("x Exception (either an error or timeout) detected by watch", signals.SIGNALS)
    assert found is not None and found[0].name == "nccl_watchdog"
    # the words' start inside another word is not them
    assert cut_match.complete_literal("x Exception (either an error or timeout) undetected by watch", signals.SIGNALS) is None
