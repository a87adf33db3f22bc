"""Session 35 (args35): an argument check's refusal pasted as its exception line alone is read
as that check when the line is, in full, one of the checks' messages (diagnose/argument_sites.py,
argument_sites.json from the five inventories by scripts/gen_argument_sites.py), and the switch
the check's guard needs on (read from the release's source) is a way out.  The CLI tests run the
real command on files under fixtures/."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from conftest import explain_incidents

from sglang_doctor.diagnose.argument_sites import site_of, table, template_regex

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_argument_sites as gen  # noqa: E402


def test_a_message_of_a_check_is_that_check():
    site = site_of("ValueError", "MTP verification width must equal draft steps + 1.")
    assert site is not None and "speculative_hook.py" in site.where[0] and "0.5.23" in site.releases


def test_the_check_must_raise_the_pasted_type():
    assert site_of("AssertionError", "MTP verification width must equal draft steps + 1.") is None
    # a type the paste cut at its head may be any type that ends so
    assert site_of("…Error", "MTP verification width must equal draft steps + 1.") is not None


def test_a_longer_message_that_begins_with_the_words_is_not_the_check():
    assert site_of("ValueError", "MTP verification width must equal draft steps + 1. The plugin's own "
                                 "verifier checks it again for every batch of drafted paths.") is None


def test_a_line_the_pasting_tool_added_under_the_message_is_not_read():
    assert site_of("ValueError", "MTP verification width must equal draft steps + 1.\nsglang-1 exited with code 1")


def test_placeholders_take_any_value_but_not_most_of_the_message():
    regex = template_regex("--dcp-size {dcp} must divide --tp-size {tp}.")
    import re

    assert re.fullmatch(regex, "--dcp-size 3 must divide --tp-size 8.")
    assert not re.fullmatch(regex, "--dcp-size 3 must divide --tp-size 8. And more")
    # a template mostly placeholders names no check: the table leaves it out
    assert all(len(e.site.template) > 20 for entries in table().by_head.values() for e in entries)


def test_the_guard_a_check_runs_under_is_read_from_its_source():
    source = ("class ServerArgs:\n"
              "    def check(self):\n"
              "        if self.speculative_algorithm is not None:\n"
              "            assert not self.enable_mixed_chunk, 'enable_mixed_chunk is required for speculative decoding'\n"
              "        if self.enable_two_batch_overlap and self.moe_a2a_backend == 'none':\n"
              "            raise ValueError('When enabling two batch overlap, ...')\n"
              "        if not self.enable_dp_attention or self.dp_size > 1:\n"
              "            raise ValueError('nothing must be on here')\n")
    guards = gen.guard_tests(ast.parse(source))
    assert gen._truthy_fields(guards[4][0]) == ["enable_mixed_chunk"]   # assert not x: x on fails it
    assert gen._truthy_fields(guards[6][0]) == ["enable_two_batch_overlap"]
    assert gen._truthy_fields(guards[8][0]) == []


def test_a_bare_check_message_naming_nothing_is_an_argument_check_not_a_crash():
    (inc,) = explain_incidents(ROOT / "fixtures/args35/argument_site_mtp_width_0523.log")
    assert inc["rule"] == "class.args.argument_site" and inc["category"] == "args.invalid"
    assert "had not been ready" in inc["explanation"]  # the context is assumed, and said


def test_after_the_ready_line_the_same_words_stay_a_crash_while_serving():
    (inc,) = explain_incidents(ROOT / "fixtures/args35/argument_site_after_ready_0523.log")
    assert inc["category"] == "runtime.crash"


def _changes(rem: dict) -> list[tuple]:
    out = []
    for r in [rem] + list(rem.get("alternatives") or []):
        out.append((tuple(sorted((r.get("set") or {}).items())), tuple(sorted(r.get("unset") or []))))
    return out


def test_the_switch_the_guard_needs_on_is_removed_not_turned_on():
    # 0.5.9 server_args.py:5172 refuses --enable-mixed-chunk with speculative decoding, though its
    # words call it "required": the words' reading (turn it on) is dropped, the source's kept
    (inc,) = explain_incidents(ROOT / "fixtures/args35/argument_site_guard_mixed_chunk_059.log")
    changes = _changes(inc["remediation"])
    assert ((), ("--enable-mixed-chunk",)) in changes[:2]
    assert not any(("--enable-mixed-chunk", True) in s for s, _ in changes)


def test_a_check_guarded_by_a_switch_offers_the_switch_off():
    (inc,) = explain_incidents(ROOT / "fixtures/classes/args_refused_tbo_switch_in_words_059.log")
    assert ((), ("--enable-two-batch-overlap",)) in _changes(inc["remediation"])[:2]
