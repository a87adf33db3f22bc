"""``ask``: a flag or variable whose value only the user knows (a token, an interface, a URL).

The change names it with a ``<placeholder>`` and is advice: never safe, never a command."""

from __future__ import annotations

import json
import subprocess

from conftest import FIXTURES, doctor_cmd
from sglang_doctor.model import Diagnosis, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")


def _remediate(remedy: list[dict], command: list[str] | None = None, warnings: list[str] | None = None):
    d = Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=1), rule="test.rule",
                  category="nccl", remedies=remedy, captures={}, launch=Launch(index=0, line=1, server_args={}))
    return remedies.remediate(d, command=command, version=V0523.version, catalog=V0523, hardware=None,
                              model_config=None, warnings=warnings)


def test_set_env_ask_names_every_spelling_with_a_placeholder_and_is_advice():
    rem = _remediate([{"set_env": {"names": ["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"],
                                   "ask": "the interface that connects the nodes"}}])
    assert rem.env == {"NCCL_SOCKET_IFNAME": "<the interface that connects the nodes>",
                       "GLOO_SOCKET_IFNAME": "<the interface that connects the nodes>"}
    assert rem.needs_human and not rem.safe and rem.command is None
    assert rem.provenance["env:NCCL_SOCKET_IFNAME"]["source"] == "rule"


def test_ask_refuses_a_placeholder_that_could_break_out_of_its_brackets():
    rem = _remediate([{"set_env": {"name": "HF_TOKEN", "ask": "a <token>"}},
                      {"set_env": {"name": "BAD NAME", "ask": "x"}},
                      {"needs_human": {"reason": "fallback"}}])
    assert rem.env == {} and rem.note == "fallback" and not rem.alternatives


def test_set_flag_ask_checks_the_flag_against_the_release():
    warnings: list[str] = []
    rem = _remediate([{"set_flag": {"flag": "--no-such-flag-at-all", "ask": "x"}},
                      {"set_flag": {"flag": "--disaggregation-ib-device", "ask": "the RDMA devices"}}],
                     warnings=warnings)
    assert rem.set == {"--disaggregation-ib-device": "<the RDMA devices>"}
    assert rem.needs_human and not rem.safe
    assert any("--no-such-flag-at-all" in w for w in warnings)


def test_set_flag_ask_of_another_program_keeps_the_flag_as_written():
    rem = _remediate([{"set_flag": {"flag": "--worker-urls", "ask": "http://HOST:PORT of each worker",
                                    "program": "sglang_router.launch_router"}}])
    assert rem.set == {"--worker-urls": "<http://HOST:PORT of each worker>"}
    assert "sglang_router.launch_router" in rem.note and not rem.safe


def test_ask_is_never_applied_to_a_known_command():
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--disaggregation-mode", "prefill"]
    rem = _remediate([{"set_flag": {"flag": "--disaggregation-ib-device", "ask": "the RDMA devices"}}], command=command)
    assert rem.command is None and not rem.safe and rem.set == {"--disaggregation-ib-device": "<the RDMA devices>"}


def test_gated_repo_explain_asks_for_hf_token():
    out = subprocess.run([*doctor_cmd(), "explain", "--format", "json", str(FIXTURES / "model" / "gated_repo_059.log")],
                         capture_output=True, text=True, timeout=120)
    incidents = [json.loads(l) for l in out.stdout.splitlines() if '"incident"' in l]
    assert incidents, out.stderr
    rem = incidents[0]["remediation"]
    assert rem["env"].get("HF_TOKEN", "").startswith("<") and rem["safe"] is False


# -- argparse's "invalid choice": the one listed value the launch plainly meant -------------

def test_nearest_choice_takes_only_an_unambiguous_match():
    assert remedies.nearest_choice("triton", ["sdpa", "fa3", "triton_attn", "ascend_attn"]) == "triton_attn"
    assert remedies.nearest_choice("FP8_E4M3", ["auto", "fp8_e5m2", "fp8_e4m3"]) == "fp8_e4m3"
    assert remedies.nearest_choice("fp8-e4m3", ["auto", "fp8_e5m2", "fp8_e4m3"]) == "fp8_e4m3"
    # two values extend it, or it is too short to mean one: a question, not a guess
    assert remedies.nearest_choice("fp8", ["auto", "fp8_e5m2", "fp8_e4m3", "bf16"]) is None
    assert remedies.nearest_choice("fa", ["sdpa", "fa3", "fa_x"]) is None
    assert remedies.nearest_choice("vllm", ["sdpa", "fa3"]) is None


def test_nearest_choice_takes_the_one_value_a_typing_slip_away():
    # field22/007 (sgl-project/sglang#9316): 'gpt-os' with 'gpt-oss' listed; a dropped, doubled or
    # swapped letter, when exactly one listed value is that slip away
    parsers = ["llama3", "qwen25", "mistral", "deepseekv3", "pythonic", "kimi_k2", "glm45", "step3", "gpt-oss"]
    assert remedies.nearest_choice("gpt-os", parsers) == "gpt-oss"
    assert remedies.nearest_choice("pyhtonic", parsers) == "pythonic"
    assert remedies.nearest_choice("mistrall", parsers) == "mistral"
    assert remedies.nearest_choice("flashnifer", ["triton", "flashinfer", "fa3"]) == "flashinfer"
    # a changed digit or a replaced letter names another thing; short words are too close to tell
    assert remedies.nearest_choice("llama4", parsers) is None
    assert remedies.nearest_choice("int4", ["int8", "fp8"]) is None
    assert remedies.nearest_choice("bf16", ["fp16", "auto"]) is None
    assert remedies.nearest_choice("fa4", ["fa3", "triton"]) is None
    assert remedies.nearest_choice("fp9", ["fp8", "auto"]) is None
    # two listed values one slip away: a question
    assert remedies.nearest_choice("stepp", ["step", "steppe"]) is None


def _explain(path):
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(path)), capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_invalid_choice_proposes_the_unique_extension_as_advice():
    (inc,) = [e for e in _explain(FIXTURES / "args" / "invalid_choice_unique_extension.log") if e["event"] == "incident"]
    rem = inc["remediation"]
    assert inc["rule"] == "args.invalid.invalid_choice"
    assert rem["set"] == {"--mm-attention-backend": "triton_attn"}
    assert rem["safe"] is False and rem["provenance"]["--mm-attention-backend"]["flag_from"] == "log"


def test_invalid_choice_with_two_candidates_still_asks():
    (inc,) = [e for e in _explain(FIXTURES / "args" / "invalid_choice_kv_cache_dtype_059.log") if e["event"] == "incident"]
    value = inc["remediation"]["set"]["--kv-cache-dtype"]
    assert value.startswith("<one of ") and inc["remediation"]["needs_human"]
