"""The first alternative is another way out, not the lead's flag at another size
(remedies._second_a_mechanism).

A rule may step one flag twice (class.cuda_graph.runner halves --cuda-graph-max-bs, then lowers
it to 16 for when the launch's value is not in the log).  Both steps are one mechanism; a
confirmed fix by another mechanism (--disable-cuda-graph for a capture that failed on a
kernel, not on memory) must not be pushed to the third place by the second step.  The further
step keeps its place right after that change."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

from sglang_doctor.model import Diagnosis, Incident, Launch, Line
from sglang_doctor.remedy import flags, remedies

V059 = flags.load_catalog("0.5.9")

TWO_STEPS_THEN_OFF = [
    {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8}},
    {"lower_flag": {"flag": "--cuda-graph-max-bs", "to": 16, "min": 8}},
    {"disable_feature": {"feature": "cuda_graph"}},
]


def _remediate(entries: list[dict], server_args: dict) -> remedies.Remediation:
    inc = Incident(kind="traceback", first_line=1, last_line=1, lines=[Line(number=1, text="capture failed")])
    d = Diagnosis(incident=inc, rule="class.test", category="cuda_graph", remedies=entries,
                  launch=Launch(index=0, line=1, server_args=server_args))
    return remedies.remediate(d, command=None, version=V059.version, catalog=V059, hardware=None, model_config=None)


def test_the_second_step_of_the_same_flag_gives_its_place_to_another_mechanism():
    rem = _remediate(TWO_STEPS_THEN_OFF, {"cuda_graph_max_bs": 160})
    assert rem.set == {"--cuda-graph-max-bs": 80}
    assert [a.set for a in rem.alternatives] == [{"--disable-cuda-graph": True}, {"--cuda-graph-max-bs": 16}]


def test_two_steps_and_nothing_else_keep_their_order():
    rem = _remediate(TWO_STEPS_THEN_OFF[:2], {"cuda_graph_max_bs": 160})
    assert rem.set == {"--cuda-graph-max-bs": 80}
    assert [a.set for a in rem.alternatives] == [{"--cuda-graph-max-bs": 16}]


def test_a_different_flag_in_the_first_alternative_stays_there():
    entries = [TWO_STEPS_THEN_OFF[0], {"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5}},
               TWO_STEPS_THEN_OFF[2]]
    rem = _remediate(entries, {"cuda_graph_max_bs": 160, "mem_fraction_static": 0.88})
    assert list(rem.alternatives[0].set) == ["--mem-fraction-static"]
    assert rem.alternatives[1].set == {"--disable-cuda-graph": True}


def test_a_real_capture_failure_of_the_runner_class_offers_graphs_off_second():
    # a cut capture traceback (class.cuda_graph.runner): the launch's --cuda-graph-max-bs is not in
    # the log, so both of the rule's steps fire from the release's default
    inc = explain_one_incident(FIXTURES / "classes" / "internal_error_platform_words.log")
    assert inc["rule"] == "class.cuda_graph.runner"
    rem = inc["remediation"]
    assert list(rem["set"]) == ["--cuda-graph-max-bs"]
    alts = rem["alternatives"]
    assert alts[0]["set"] == {"--disable-cuda-graph": True}
    assert list(alts[1]["set"]) == ["--cuda-graph-max-bs"] and alts[1]["set"] != rem["set"]
