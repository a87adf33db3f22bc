"""SGLang's own advice list ("Possible solutions:" after a failed graph capture) forms an
incident when the text holds the list without the error line above it, and the remedy offers
the list of the release that printed it (rules/cuda_graph.yaml, *_possible_solutions_tail*;
every release's CUDA_GRAPH_CAPTURE_FAILED_MSG and its siblings read, 0.4.0 to 0.5.23).  The
list is for every cause and the cause line is what the text lacks, so from 0.4.6 the two
changes read first cover both kinds of cause: a smaller largest captured batch (an
out-of-memory capture, or one failing at the larger sizes), then no decode graphs (any other
cause); more headroom, which helps only an out-of-memory error, after them (session 24).  Real
subprocesses on the rule fixtures, as a user runs ``explain``."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, explain_one_incident

CG = FIXTURES / "cuda_graph"


def _first_two(rem):
    alts = rem["alternatives"]
    return [(rem["set"], rem["unset"]), (alts[0]["set"], alts[0]["unset"]) if alts else None]


def test_the_046_to_0513_list_leads_with_fewer_captured_batches_then_no_graphs():
    inc = explain_one_incident(CG / "possible_solutions_tail_059.log", "--sglang-version", "0.4.6.post1")
    assert inc["rule"] == "cuda_graph.possible_solutions_tail" and inc["category"] == "cuda_graph"
    (first, _), (second, _) = _first_two(inc["remediation"])
    assert list(first) == ["--cuda-graph-max-bs"]
    assert second == {"--disable-cuda-graph": True}
    # more headroom (SGLang's first item) is still offered, lowered
    later = [a["set"] for a in inc["remediation"]["alternatives"][1:]]
    fraction = next(s["--mem-fraction-static"] for s in later if "--mem-fraction-static" in s)
    assert fraction < 0.9


def test_the_040_to_045_list_leads_with_no_cuda_graph_as_those_releases_did():
    inc = explain_one_incident(CG / "possible_solutions_tail_043.log", "--sglang-version", "0.4.3.post2")
    assert inc["rule"] == "cuda_graph.possible_solutions_tail_040"
    (first, _), (second, _) = _first_two(inc["remediation"])
    assert first == {"--disable-cuda-graph": True}
    assert list(second) == ["--mem-fraction-static"]


def test_the_0523_list_uses_its_decode_flags():
    inc = explain_one_incident(CG / "possible_solutions_tail_0523.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "cuda_graph.possible_solutions_tail_0523"
    (first, _), (second, _) = _first_two(inc["remediation"])
    assert list(first) == ["--cuda-graph-max-bs-decode"] and second == {"--cuda-graph-backend-decode": "disabled"}
    assert any("--mem-fraction-static" in a["set"] for a in inc["remediation"]["alternatives"][1:])


def test_the_cpu_graph_list_follows_its_own_order():
    inc = explain_one_incident(CG / "cpu_graph_possible_solutions_tail_059.log", "--sglang-version", "0.5.9")
    assert inc["rule"] == "cuda_graph.cpu_graph_possible_solutions_tail"
    (first, _), (second, _) = _first_two(inc["remediation"])
    assert list(first) == ["--mem-fraction-static"] and list(second) == ["--torch-compile-max-bs"]


def test_the_piecewise_list_leads_with_the_opt_in_switch_off_on_059():
    # 0.5.9 runs piecewise graphs only with --enable-piecewise-cuda-graph, and prints this list
    # only when one ran: the removal is implied by the text, not a condition sorted last
    inc = explain_one_incident(CG / "piecewise_possible_solutions_tail_059.log", "--sglang-version", "0.5.9")
    assert inc["rule"] == "cuda_graph.piecewise_possible_solutions_tail"
    (first, unset), (second, _) = _first_two(inc["remediation"])
    assert first == {} and unset == ["--enable-piecewise-cuda-graph"]
    assert list(second) == ["--mem-fraction-static"]
    assert "--piecewise-cuda-graph-max-tokens" in inc["remediation"]["alternatives"][1]["set"]


def test_the_piecewise_list_leads_with_piecewise_graphs_off_where_they_are_the_default():
    inc = explain_one_incident(CG / "piecewise_possible_solutions_tail_059.log", "--sglang-version", "0.5.12")
    (first, _), (second, _) = _first_two(inc["remediation"])
    assert first == {"--disable-piecewise-cuda-graph": True} and list(second) == ["--mem-fraction-static"]


def test_the_prefill_suggestions_lead_with_the_prefill_graph_off():
    inc = explain_one_incident(CG / "prefill_possible_suggestions_tail_0523.log", "--sglang-version", "0.5.23")
    assert inc["rule"] == "cuda_graph.prefill_possible_suggestions_tail"
    assert inc["remediation"]["set"] == {"--cuda-graph-backend-prefill": "disabled"}


def test_with_the_error_line_the_releases_full_rule_still_answers():
    assert explain_one_incident(CG / "capture_failed_059.log")["rule"] == "cuda_graph.capture_failed_059"
    assert explain_one_incident(CG / "capture_failed_0523.log")["rule"] == "cuda_graph.capture_failed_0523"


def test_prefill_graphs_are_turned_off_in_each_releases_spelling():
    from sglang_doctor.remedy import remedies

    ways = remedies.FEATURES["prefill_cuda_graph"]["ways"]
    # 0.5.10-0.5.13 have piecewise graphs on by default and no --cuda-graph-backend-prefill
    assert {"set": {"--disable-piecewise-cuda-graph": True}} in ways


def test_a_log_naming_no_release_is_spelled_for_the_releases_that_word_the_list_so():
    inc = explain_one_incident(CG / "possible_solutions_tail_059.log")
    rem = inc["remediation"]
    target = rem["target"]
    assert target["version_source"] == "message wording" and target["sglang_version"] == "0.5.13"
    assert target["inferred_range"]["oldest"] == "0.4.6"
    # 0.4.6-0.5.13 spell it --cuda-graph-max-bs (0.5.14+ --cuda-graph-max-bs-decode)
    assert list(rem["set"]) == ["--cuda-graph-max-bs"]
    old = explain_one_incident(CG / "possible_solutions_tail_043.log")["remediation"]["target"]
    assert old["sglang_version"] == "0.4.5" and old["version_source"] == "message wording"


def test_the_users_release_beats_the_wording():
    target = explain_one_incident(CG / "possible_solutions_tail_059.log", "--sglang-version", "0.5.23")["remediation"]["target"]
    assert target["sglang_version"] == "0.5.23" and target["version_source"] == "option"


def test_rule_versions_are_parsed_and_checked(tmp_path):
    from pathlib import Path

    from sglang_doctor.diagnose.rules_engine import rules_from_data
    from sglang_doctor.remedy import release_range

    def rule(versions):
        return {"rules": [{"id": "t.x", "category": "other", "phase": "unknown", "title": "t", "explanation": "t",
                           "versions": versions, "match": {"line": "zzz", "literal": ["zzz"]}}]}

    problems: list[str] = []
    (good,) = rules_from_data(rule("0.4.6-0.5.13"), Path("t.yaml"), None, problems)
    assert good.versions == ("0.4.6", "0.5.13") and not problems
    assert rules_from_data(rule("recent"), Path("t.yaml"), None, problems) == [] and problems
    span = release_range.wording_range("t.x", ("0.5.3.post2", "0.5.5"), within=("0.5.4", "0.5.9"))
    assert span.releases == ("0.5.4",)
    assert release_range.wording_range("t.x", ("0.5.3.post2", "0.5.5"), within=("0.5.9",)) is None
