"""A vLLM engine argument kept in a command ported to SGLang (remedies._OTHER_ENGINE, issue 12).

argparse rejects ``--max-model-len 8192`` as an unrecognized argument; the nearest spelling of
an SGLang flag is no help (there is none), and removing it drops the setting the user meant.
The fix people apply is SGLang's flag for the same job, with the same value when this release's
parser accepts it.
"""

from __future__ import annotations

from sglang_doctor.model import Diagnosis, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")
V043 = flags.load_catalog("0.4.3.post2")


def _fix(arguments: str, catalog=V0523):
    d = Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=1), rule="test.rule",
                  category="args.invalid", remedies=[{"closest_flag": {}}], launch=Launch(index=0, line=1, server_args={}),
                  captures={"arguments": arguments})
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


def test_a_vllm_setting_is_respelled_as_sglang_names_it_with_its_value():
    rem = _fix("--max-model-len 8192 --max-num-seqs 64 --gpu-memory-utilization 0.85")
    assert rem.set == {"--context-length": "8192", "--max-running-requests": "64", "--mem-fraction-static": "0.85"}
    assert rem.unset == ["--max-model-len", "--max-num-seqs", "--gpu-memory-utilization"]
    assert "vLLM" in rem.note


def test_a_vllm_switch_sglang_does_by_default_is_only_removed():
    rem = _fix("--enable-prefix-caching --enforce-eager")
    assert rem.unset == ["--enable-prefix-caching", "--enforce-eager"]
    assert rem.set == {"--disable-cuda-graph": True}


def test_a_value_the_release_refuses_is_asked_for_not_carried_over():
    rem = _fix("--gpu-memory-utilization lots")
    assert rem.set == {"--mem-fraction-static": "<the value you gave --gpu-memory-utilization>"}
    assert rem.needs_human and not rem.safe


def test_a_counterpart_the_release_lacks_is_removed():
    # 0.4.3.post2 has no --page-size: --block-size goes, nothing is set in its place
    rem = _fix("--block-size 16", V043)
    assert rem.unset == ["--block-size"] and rem.set == {}


def test_an_unknown_name_still_takes_the_nearest_spelling():
    rem = _fix("--mem-fraction-statc 0.8")
    assert rem.set == {"--mem-fraction-static": "0.8"}
