"""Remedies and the launch command, against the shipped catalogues of real SGLang parsers."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import FIXTURES, doctor_cmd
from sglang_doctor.remedy import flags
from sglang_doctor.remedy import launch_command
from sglang_doctor.remedy import remedies
from sglang_doctor.model import Diagnosis, Incident, Launch, Remediation
from sglang_doctor.diagnose.rules_engine import RuleSet

V059 = flags.load_catalog("0.5.9")
V0523 = flags.load_catalog("0.5.23")


def diagnosis(remedy: list[dict], server_args: dict | None = None, captures: dict | None = None) -> Diagnosis:
    launch = Launch(index=0, line=1, server_args=server_args or {})
    return Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=1), rule="test.rule", category="memory.kv_pool", remedies=remedy,
                     captures=captures or {}, launch=launch)


def remediate(d: Diagnosis, catalog=V0523, command=None, warnings=None):
    return remedies.remediate(d, command=command, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=warnings)


# -- launch_command ---------------------------------------------------------------------------

def test_apply_replaces_every_spelling_of_a_flag_in_place():
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--mem-frac", "0.5", "--tp", "2",
            "--mem-fraction-static=0.6", "--trust-remote-code"]
    out = launch_command.apply(argv, Remediation(set={"--mem-fraction-static": 0.88}), V0523)
    assert out == ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--mem-fraction-static", "0.88",
                   "--tp", "2", "--trust-remote-code"]


def test_apply_appends_new_flags_and_removes_unset_ones():
    argv = ["sglang", "serve", "--model-path", "/m", "--enable-torch-compile", "--port", "30000"]
    rem = Remediation(set={"--disable-custom-all-reduce": True, "--port": 30010}, unset=["--enable-torch-compile"])
    assert launch_command.apply(argv, rem, V0523) == ["sglang", "serve", "--model-path", "/m", "--port", "30010",
                                                      "--disable-custom-all-reduce"]


def test_apply_refuses_unknown_flags_and_bad_values():
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "/m"]
    with pytest.raises(launch_command.CommandError):
        launch_command.apply(argv, Remediation(set={"--no-such-flag": 1}), V0523)
    with pytest.raises(launch_command.CommandError):
        launch_command.apply(argv, Remediation(set={"--mem-fraction-static": "0.9; rm -rf /"}), V0523)
    with pytest.raises(launch_command.CommandError):
        launch_command.apply(argv, Remediation(set={"--port": "$(id)"}), V0523)


def test_from_server_args_keeps_only_what_differs_from_the_defaults():
    args = {"model_path": "/m", "tokenizer_path": "/m", "tp_size": 2, "mem_fraction_static": 0.8, "port": 30000,
            "random_seed": 12345, "trust_remote_code": True, "context_length": None, "served_model_name": "/m"}
    argv = launch_command.from_server_args(args, V0523)
    assert argv[:3] == launch_command.DEFAULT_PROGRAM
    assert argv[3:] == ["--model-path", "/m", "--tp-size", "2", "--mem-fraction-static", "0.8", "--trust-remote-code"]


def test_diff_lines():
    before = ["x", "--model-path", "/m", "--mem-fraction-static", "0.5", "--enable-torch-compile"]
    after = ["x", "--model-path", "/m", "--mem-fraction-static", "0.8", "--disable-radix-cache"]
    assert launch_command.diff(before, after, V0523) == [
        "~ --mem-fraction-static 0.5 -> 0.8", "- --enable-torch-compile", "+ --disable-radix-cache"]


# -- remedies ---------------------------------------------------------------------------------

def test_raise_flag_steps_past_the_printed_minimum_within_its_bound():
    d = diagnosis([{"raise_flag": {"flag": "--mem-fraction-static", "to": "{minimum}", "by": 0.05, "max": 0.95}}],
                  {"mem_fraction_static": 0.2}, {"minimum": "0.206"})
    rem = remediate(d)
    assert rem.set == {"--mem-fraction-static": 0.25}  # current + by beats threshold + by/2
    assert rem.command[-2:] == ["--mem-fraction-static", "0.25"]


def test_raise_flag_at_its_bound_gives_nothing():
    d = diagnosis([{"raise_flag": {"flag": "--mem-fraction-static", "by": 0.03, "max": 0.93}}],
                  {"mem_fraction_static": 0.93})
    assert remediate(d) is None


def test_lower_flag_rounds_integers():
    d = diagnosis([{"lower_flag": {"flag": "--max-running-requests", "factor": 0.5, "min": 1}}],
                  {"max_running_requests": 9})
    assert remediate(d).set == {"--max-running-requests": 4}


def test_disable_feature_uses_the_spelling_of_the_version():
    d = diagnosis([{"disable_feature": {"feature": "cuda_graph"}}], {"model_path": "/m"})
    new = remediate(d, V0523)
    old = remediate(d, V059)
    assert new.set == {"--cuda-graph-backend-decode": "disabled", "--cuda-graph-backend-prefill": "disabled"}
    assert old.set == {"--disable-cuda-graph": True}
    assert "slower" in new.tradeoff


def test_disable_feature_already_off_is_not_a_change():
    d = diagnosis([{"disable_feature": {"feature": "custom_all_reduce"}}], {"disable_custom_all_reduce": True})
    assert remediate(d, V059) is None


def test_first_concrete_remedy_wins_and_the_rest_are_ranked_alternatives():
    d = diagnosis([{"raise_flag": {"flag": "--mem-fraction-static", "by": 0.03, "max": 0.93}},
                   {"disable_feature": {"feature": "cuda_graph"}},
                   {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}}],
                  {"mem_fraction_static": 0.85, "chunked_prefill_size": 8192})
    rem = remediate(d, V059)
    assert rem.set == {"--mem-fraction-static": 0.88}
    assert [a.set for a in rem.alternatives] == [{"--disable-cuda-graph": True}, {"--chunked-prefill-size": 4096}]
    assert all(a.command for a in rem.alternatives)


def test_renamed_flag_is_emitted_in_the_target_spelling():
    d = diagnosis([{"lower_flag": {"flag": "--cuda-graph-max-bs", "to": 8}}], {"model_path": "/m"})
    assert list(remediate(d, V059).set) == ["--cuda-graph-max-bs"]
    assert list(remediate(d, V0523).set) == ["--cuda-graph-max-bs-decode"]


def test_closest_flag_for_an_unrecognized_argument():
    d = diagnosis([{"closest_flag": {}}], {}, {"arguments": "--mem-fraction-statc 0.8 --enable-flashinfer-mla"})
    rem = remediate(d, V059)
    assert rem.set.get("--mem-fraction-static") == "0.8"
    assert "--mem-fraction-statc" in rem.unset


def test_a_flag_the_target_release_has_but_the_running_parser_rejected_is_removed_not_set_and_unset():
    d = diagnosis([{"closest_flag": {}}], {}, {"arguments": "--enable-piecewise-cuda-graph"})
    rem = remediate(d, V059)  # 0.5.9 has the flag: the log's release is an older one
    assert rem.unset == ["--enable-piecewise-cuda-graph"] and not rem.set
    assert "rejected it" in rem.note


def test_set_env_refuses_unsafe_values():
    d = diagnosis([{"set_env": {"name": "NCCL_P2P_DISABLE", "value": "1"}}, {"set_env": {"name": "X", "value": "$(id)"}}])
    rem = remediate(d)
    assert rem.env == {"NCCL_P2P_DISABLE": "1"} and not rem.alternatives


def test_needs_human_carries_its_reason():
    d = diagnosis([{"needs_human": {"reason": "free the GPU"}}])
    rem = remediate(d)
    assert rem.needs_human and not rem.safe and rem.note == "free the GPU" and rem.command is None


def _every_release():
    """The 0.5.9 and 0.5.23 catalogues first, then every other shipped release's (loaded only
    when a flag is in neither)."""
    yield V059
    yield V0523
    for version in sorted(flags._stored_files(), key=flags.version_key):
        yield flags.load_catalog(version, prefer_shipped=True)


def test_every_flag_the_shipped_rules_name_exists_in_a_version():
    """A rule naming a flag no version knows would silently never fix anything."""
    missing = []
    for rule in RuleSet.load([]).rules:
        for entry in rule.remedy:
            ((name, params),) = entry.items()
            flag = (params or {}).get("flag")
            if not flag or (params or {}).get("program"):
                continue  # ``program``: a flag of another SGLang program (the router), not the server's
            if "{" in flag:
                continue  # the flag the log's parser line names, checked against the release when used
            # a rule about a 0.5.23-only message may name a 0.5.23-only flag, and the other
            # way round (or a flag of the releases between, such as 0.5.10-0.5.19's
            # --disable-piecewise-cuda-graph); a flag no shipped release knows is a typo.
            if all(cat.canonical(flag) is None and flags.translate(flag, cat) is None for cat in _every_release()):
                missing.append(f"{rule.id}: {flag}")
    assert not missing, missing


# -- end to end on the seed -------------------------------------------------------------------

def test_seed_explain_names_the_pool_and_gives_a_fitting_launch():
    out = subprocess.run([*doctor_cmd(), "explain", "--format", "json", "--model-config",
                          str(FIXTURES / "models" / "qwen3_6_27b_like.json"),
                          str(FIXTURES / "seed" / "seed_full.log")], capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in out.stdout.splitlines()]
    incidents = [e for e in events if e["event"] == "incident"]
    assert incidents
    rem = incidents[-1]["remediation"]
    assert rem is not None and rem["set"], incidents[-1]
    for flag, value in rem["set"].items():
        assert V059.validate(flag, value) is None, (flag, value)
    assert rem["plan"]["fits"] is True
    assert rem["plan"]["current"]["failing"]
    assert rem["command"][:3] == launch_command.DEFAULT_PROGRAM


def test_disable_feature_moe_lora_v2_backs_out_both_paired_flags():
    # --lora-backend triton_v2 and a lora_* MoE runner are accepted only together (0.5.23
    # arg_groups/lora_hook.py:204, lora/layers.py:1088): the change removes both at once
    d = diagnosis([{"disable_feature": {"feature": "moe_lora_v2"}}],
                  {"model_path": "/m", "enable_lora": True, "lora_backend": "triton_v2",
                   "moe_runner_backend": "lora_triton"})
    rem = remediate(d, V0523)
    assert rem is not None and sorted(rem.unset) == ["--lora-backend", "--moe-runner-backend"]
    assert rem.set == {} and "legacy LoRA engine" in rem.tradeoff
