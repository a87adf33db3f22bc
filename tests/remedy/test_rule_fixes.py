"""The fixes of rules written this session, through the CLI on their fixtures (real files,
real subprocesses): each names the flag or variable that SGLang's own source says fixes the
failure, spelled for the release the log shows, with its trade-off."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, explain_one_incident


def _primary(path, *extra):
    return explain_one_incident(path, *extra)


def _changes(rem):
    return [rem, *rem["alternatives"]]


def test_mamba_radix_page_size_with_a_dump_is_fixed_in_that_releases_spelling():
    inc = _primary(FIXTURES / "args" / "mamba_radix_page_size_059.log")
    rem = inc["remediation"]
    assert inc["rule"] == "args.invalid.mamba_radix_page_size"
    assert rem["set"] == {"--mamba-scheduler-strategy": "extra_buffer"} and rem["tradeoff"]
    assert {"--disable-radix-cache": True} in [c["set"] for c in _changes(rem)]


@pytest.mark.parametrize("version, flag", [("0.5.9", "--mamba-scheduler-strategy"),
                                           ("0.5.23", "--mamba-radix-cache-strategy")])
def test_a_cut_mamba_radix_assert_gets_the_flag_of_the_named_release(version, flag):
    inc = _primary(FIXTURES / "args" / "mamba_radix_page_size_cut.log", "--sglang-version", version)
    assert inc["rule"] == "args.invalid.mamba_radix_page_size_cut"
    assert inc["remediation"]["set"] == {flag: "extra_buffer"}


def test_the_early_mamba_radix_wording_gets_no_strategy_those_releases_lack():
    rem = _primary(FIXTURES / "args" / "mamba_radix_page_size_04x_message.log")["remediation"]
    assert rem["set"] == {"--disable-radix-cache": True}
    assert not any("strategy" in f for c in _changes(rem) for f in c["set"])


def test_the_cudnn_check_gives_the_upgrade_then_the_switch():
    rem = _primary(FIXTURES / "other" / "torch_291_cudnn_check_058.log")["remediation"]
    # the upgrade advice leads the switch's note; the switch is the change (advice: run stops)
    assert rem["needs_human"] and rem["safe"] is False
    assert rem["note"].index("nvidia-cudnn-cu12") < rem["note"].index("the change to try")
    assert rem["env"] == {"SGLANG_DISABLE_CUDNN_CHECK": "1"} and "Conv3d" in rem["tradeoff"]
    assert rem["alternatives"] == []


def test_a_grammar_backend_import_failure_switches_to_the_other_backend():
    outlines = _primary(FIXTURES / "other" / "grammar_outlines_import_one_line.log")["remediation"]
    assert outlines["set"] == {"--grammar-backend": "xgrammar"} and outlines["tradeoff"]
    xgr = _primary(FIXTURES / "other" / "grammar_xgrammar_import_059.log")["remediation"]
    assert xgr["needs_human"] and [c["set"] for c in _changes(xgr)] == [
        {"--grammar-backend": "outlines"}, {"--grammar-backend": "none"}]


def test_every_change_a_rule_proposes_on_its_examples_states_its_trade_off():
    """Issue 12: each fix comes with its trade-off.  A rule entry may state it; otherwise the
    flag's or variable's own cost is given (remedy/tradeoffs.py)."""
    from pathlib import Path

    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline
    from sglang_doctor.remedy import hardware

    pack = RuleSet.load([])
    profile = hardware.get_profile("a6000x2")
    missing = []
    for rule in pack.rules:
        for example in rule.examples:
            pipe = StreamPipeline(pack, whole_log=True, hardware=profile)
            events = pipe.feed((FIXTURES.parent / example).read_bytes()) + pipe.finish()
            for ev in events:
                if ev.get("event") != "incident" or ev.get("rule") != rule.id or not ev.get("remediation"):
                    continue
                for change in _changes(ev["remediation"]):
                    if (change["set"] or change["unset"] or change["env"]) and not change.get("tradeoff"):
                        missing.append(f"{rule.id} ({Path(example).name}): {change['set'] or change['unset'] or change['env']}")
    assert not missing, missing


def test_a_scheduler_exception_inside_the_attention_backend_offers_the_other_backend_first():
    inc = _primary(FIXTURES / "runtime" / "scheduler_exception_in_attention_backend_index.log")
    assert inc["rule"] == "runtime.crash.scheduler_exception"
    first = inc["remediation"]  # the rule's advice is in its note, the change leads
    assert first["set"] == {"--attention-backend": "triton"} and first["safe"] is False
    assert first["note"].startswith("a bug or a bad request while serving")
    # the same crash outside any attention module keeps the isolation steps
    other = _primary(FIXTURES / "runtime" / "scheduler_exception_after_ready_059.log")
    assert all("--attention-backend" not in c["set"] for c in _changes(other["remediation"]))


@pytest.mark.parametrize("version, wanted", [("0.5.4", "'sglang>=0.5.9'"), ("0.5.9", "'sglang>0.5.9'"),
                                             ("0.5.23", "'sglang>0.5.23'")])
def test_the_upgrade_never_asks_for_a_release_the_log_already_runs(version, wanted):
    """A rule's minimum release helps a launch older than it; a launch at or past it is told
    that only a newer release than its own may help (not 'upgrade to >= an older one')."""
    inc = _primary(FIXTURES / "model" / "transformers_unknown_model_type.log", "--sglang-version", version)
    notes = " ".join(c["note"] or "" for c in _changes(inc["remediation"]))
    assert wanted in notes


def test_a_decode_backend_refusal_changes_the_decode_backend_not_the_shared_one():
    # 0.5.23 attention_hook.py:223-227 checks the resolved decode backend apart from the prefill one:
    # --attention-backend trtllm_mha alone fails the prefill check first, so "for decode" is the
    # decode flag's (session 31: the remedy used to unset --attention-backend first)
    inc = _primary(FIXTURES / "kernel" / "trtllm_mha_decode_sm86_0523.log")
    assert inc["rule"] == "kernel.unsupported_hw.trtllm_backend_gpu"
    first, second = _changes(inc["remediation"])[:2]
    touched = lambda c: set(c["set"]) | set(c["unset"])  # noqa: E731
    assert touched(first) == {"--decode-attention-backend"}
    assert touched(second) == {"--decode-attention-backend"}
    assert inc["remediation"]["set"] != {"--attention-backend": "flashinfer"}


def test_a_backend_refusal_naming_no_half_keeps_the_shared_backend_first():
    inc = _primary(FIXTURES / "kernel" / "trtllm_mla_not_blackwell_059.log")
    changes = _changes(inc["remediation"])
    assert set(changes[0]["set"]) | set(changes[0]["unset"]) == {"--attention-backend"}
