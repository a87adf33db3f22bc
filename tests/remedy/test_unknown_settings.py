"""Fixes when the log does not show the launch's settings (a pasted fragment: no dump, no
command) and when a check's message names the flag to change.

Unknown is not "not set": a removal the rule gives is proposed on its condition ("if your
launch sets it") and ranked after the changes that do not depend on it; with a dump or a
command the launch's own settings decide, as before.  A flag the message names is the change,
with its value left to the user, never applied unattended.
"""

from __future__ import annotations

import json
import subprocess

from conftest import doctor_cmd

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, remedies, trust

V059 = flags.load_catalog("0.5.9")
V0523 = flags.load_catalog("0.5.23")


def _diagnosis(remedy: list[dict], server_args: dict | None = None, message: str | None = None) -> Diagnosis:
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    if message is not None:
        incident.exception = ExceptionInfo("ValueError", message)
    return Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=remedy,
                     launch=Launch(index=0, line=1, server_args=server_args or {}))


def _remediate(d: Diagnosis, catalog=V0523, command=None):
    return remedies.remediate(d, command=command, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


# -- removals on an unknown launch ----------------------------------------------------------------


def test_a_removal_is_proposed_on_its_condition_when_the_log_shows_no_settings():
    rem = _remediate(_diagnosis([{"unset_flag": {"flag": "--quantization", "tradeoff": "t"}}]))
    assert rem is not None, "settings the log does not show are unknown, not 'not set'"
    assert rem.unset == ["--quantization"] and rem.safe is False
    assert "if your launch sets it" in rem.note and "not in the log" in rem.note


def test_a_dump_that_shows_the_flag_unset_still_means_no_removal():
    d = _diagnosis([{"unset_flag": {"flag": "--quantization"}}], {"model_path": "/m", "quantization": None})
    assert _remediate(d) is None


def test_the_users_command_decides_too():
    d = _diagnosis([{"unset_flag": {"flag": "--quantization"}}])
    assert _remediate(d, command=["python", "-m", "sglang.launch_server", "--model-path", "/m"]) is None
    rem = _remediate(d, command=["python", "-m", "sglang.launch_server", "--model-path", "/m", "--quantization", "fp8"])
    assert rem.unset == ["--quantization"] and "if your launch" not in rem.note


def test_a_conditional_removal_goes_after_an_unconditional_change():
    d = _diagnosis([{"unset_flag": {"flag": "--max-total-tokens"}},
                    {"set_flag": {"flag": "--disable-radix-cache", "value": True}}])
    rem = _remediate(d)
    assert rem.set == {"--disable-radix-cache": True}
    assert [a.unset for a in rem.alternatives] == [["--max-total-tokens"]]


def test_a_feature_turned_off_by_removing_its_flag_is_proposed_on_an_unknown_launch():
    rem = _remediate(_diagnosis([{"disable_feature": {"feature": "torch_compile"}}]))
    assert rem.unset == ["--enable-torch-compile"] and rem.safe is False
    assert "if your launch sets it" in rem.note and "torch.compile" in rem.tradeoff
    # with a dump that shows it off, nothing to turn off
    assert _remediate(_diagnosis([{"disable_feature": {"feature": "torch_compile"}}],
                                 {"model_path": "/m", "enable_torch_compile": False})) is None


# -- the flag a check's message names -------------------------------------------------------------


def test_a_named_value_flag_is_the_change_with_its_value_left_to_the_user():
    d = _diagnosis([{"flag_named": {}}], message="--dcp-size > 1 with speculative decoding is not supported on Intel XPU.")
    rem = _remediate(d)
    assert rem.set == {"--dcp-size": "<a value the message accepts>"}
    assert rem.needs_human and rem.safe is False and rem.command is None  # advice, never applied
    # the message picked the flag; the catalogue only confirms it exists in the release
    assert rem.provenance["--dcp-size"] == {"source": "log", "flag_from": "log", "checked_against": "catalogue",
                                            "value_from": "placeholder"}
    assert rem.untrusted and "log's text named" in rem.untrusted[0]
    assert trust.check(rem, d, V0523)  # never applied unattended


def test_a_flag_and_value_the_message_advises_are_log_picked_advice():
    d = _diagnosis([{"flag_named": {}}],
                   message="FlashInfer is not supported on this GPU; please use --attention-backend triton instead.")
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "triton"} and rem.safe is False
    assert rem.provenance["--attention-backend"] == {"source": "log", "flag_from": "log",
                                                     "checked_against": "catalogue", "value_from": "log"}
    assert rem.untrusted  # shown as advice; run --yes refuses it (trust.check is the one gate)
    assert trust.check(rem, d, V0523) == rem.untrusted


def test_advice_in_backticks_or_after_using_is_the_flag_and_its_value():
    for message, want in (("Consider using `--attention-backend triton` on this GPU.", {"--attention-backend": "triton"}),
                          ("Unsupported for FP8 experts. Please use `--moe-runner-backend cutlass`.",
                           {"--moe-runner-backend": "cutlass"})):
        assert _remediate(_diagnosis([{"flag_named": {}}], message=message)).set == want, message


def test_a_negation_in_an_earlier_clause_does_not_turn_the_advice_into_a_conflict():
    d = _diagnosis([{"flag_named": {}}], message="FA3 is not supported on this GPU, please use --attention-backend=flashinfer")
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}
    d = _diagnosis([{"flag_named": {}}], message="FA3 is not supported with --enable-dp-attention")
    assert _remediate(d).unset == ["--enable-dp-attention"]


def test_a_switch_named_as_the_conflict_is_removed_not_turned_on():
    d = _diagnosis([{"flag_named": {}}],
                   message="Speculative decoding is not supported with --enable-dp-attention on this platform.")
    rem = _remediate(d)
    assert rem.unset == ["--enable-dp-attention"] and not rem.set
    assert rem.needs_human and rem.safe is False


def test_a_switch_the_message_asks_for_is_turned_on():
    d = _diagnosis([{"flag_named": {}}], message="Piecewise CUDA graph requires --disable-radix-cache for this model.")
    assert _remediate(d).set == {"--disable-radix-cache": True}


def test_every_named_flag_is_an_alternative_in_the_messages_order():
    d = _diagnosis([{"flag_named": {}}], message="--speculative-eagle-topk must be 1 when --speculative-num-steps is 1.")
    rem = _remediate(d)
    assert list(rem.set) == ["--speculative-eagle-topk"]
    assert [list(a.set) for a in rem.alternatives] == [["--speculative-num-steps"]]


def test_a_named_flag_through_the_cli(tmp_path):
    log = tmp_path / "args.log"
    log.write_text("ValueError: --speculative-eagle-topk must be 1 when --speculative-num-steps is 1, got 4.\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", "0.5.23", str(log)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    (ev,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["event"] == "incident"]
    # the message states the one value the check accepts: that value (session 11, fixclass11)
    assert ev["remediation"]["set"] == {"--speculative-eagle-topk": 1}
    assert ev["remediation"]["safe"] is False


# -- the flag the parser's line names, with the value left to the user -------------------------------


def _with_captures(remedy: list[dict], captures: dict) -> Diagnosis:
    d = _diagnosis(remedy)
    d.captures = captures
    return d


def test_the_parsers_flag_is_asked_for_with_its_choices():
    d = _with_captures([{"set_flag": {"flag": "{flag}", "ask": "one of {choices}"}}],
                       {"flag": "--kv-cache-dtype", "choices": "'auto', 'fp8_e5m2', 'fp8_e4m3'"})
    rem = _remediate(d)
    assert rem.set == {"--kv-cache-dtype": "<one of 'auto', 'fp8_e5m2', 'fp8_e4m3'>"}
    assert rem.needs_human and rem.safe is False and rem.command is None
    # the parser's line picked the flag: honest provenance, and never applied without a human
    assert rem.provenance["--kv-cache-dtype"]["source"] == "log"
    assert rem.provenance["--kv-cache-dtype"]["flag_from"] == "log"
    assert rem.provenance["--kv-cache-dtype"]["checked_against"] == "catalogue"
    assert trust.check(rem, d, V0523)


def test_a_required_argument_with_its_alias_is_named_by_its_first_spelling():
    d = _with_captures([{"set_flag": {"flag": "{arguments}", "ask": "the model's directory"}}],
                       {"arguments": "--model-path/--model"})
    assert list(_remediate(d).set) == ["--model-path"]


def test_a_flag_the_release_does_not_have_is_not_proposed():
    warnings: list[str] = []
    d = _with_captures([{"set_flag": {"flag": "{flag}", "ask": "a value"}}], {"flag": "--no-such-flag"})
    assert remedies.remediate(d, command=None, version="0.5.23", catalog=V0523, hardware=None,
                              model_config=None, warnings=warnings) is None
    assert any("--no-such-flag" in w for w in warnings)


def test_an_invalid_choice_through_the_cli():
    from conftest import FIXTURES

    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(FIXTURES / "args" / "invalid_choice_kv_cache_dtype_059.log")),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    (ev,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["event"] == "incident"]
    (flag,) = ev["remediation"]["set"]
    assert flag == "--kv-cache-dtype" and "fp8_e5m2" in ev["remediation"]["set"][flag]


# -- a step whose starting value the log does not give -----------------------------------------------


def test_a_step_from_an_unknown_value_names_the_flag_with_the_direction():
    # a tp split failed: the launch had tp > 1, but the log shows no value and the release's
    # default (1) gives no step; the flag is still the change
    d = _diagnosis([{"lower_flag": {"flag": "--tp-size", "factor": 0.5, "min": 1, "tradeoff": "t"}}])
    rem = _remediate(d)
    assert rem.set == {"--tp-size": "<lower than your launch's value>"}
    assert rem.needs_human and rem.safe is False and rem.tradeoff == "t"


def test_a_step_from_a_stated_value_at_its_bound_is_still_no_change():
    d = _diagnosis([{"lower_flag": {"flag": "--tp-size", "factor": 0.5, "min": 1}}], {"model_path": "/m", "tp_size": 1})
    assert _remediate(d) is None
    d = _diagnosis([{"lower_flag": {"flag": "--tp-size", "factor": 0.5, "min": 1}}], {"model_path": "/m", "tp_size": 4})
    assert _remediate(d).set == {"--tp-size": 2}
