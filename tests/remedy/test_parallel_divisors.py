"""A parallel size from the two numbers a divisibility check prints (issue 12: values from the
log's figures).

SGLang shards heads and hidden sizes over the tensor-parallel ranks and refuses a size that does
not split them: ``ensure_divisibility`` ("28 is not divisible by 8", srt/distributed/utils.py,
rule args.invalid.not_divisible) and model code's own checks, which name the size in prose
("num_heads 28 must be divisible by tp world size 8", 0.5.9 multimodal_gen zimage.py; "Attention
heads 28 are not divisible by TP=8", 0.5.23 models/xllm.py; "tensor parallel size (8)").  The
value proposed is the greatest common divisor of the two numbers (it divides the dimension and
the refused size); advice, never applied unattended.  Every test here fails on the code before
session 20 (a placeholder value, or no --tp-size at all)."""

from __future__ import annotations

from conftest import explain_one_incident  # noqa: F401  (the package's test helpers)

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")


def _remedy(message: str, entries: list, server_args: dict | None = None, captures: dict | None = None,
            exc: str = "AssertionError"):
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo(exc, message)
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=entries,
                  launch=Launch(index=0, line=1, server_args=server_args or {}))
    d.captures.update(captures or {})
    rem = remedies.remediate(d, command=None, version="0.5.23", catalog=V0523, hardware=None, model_config=None,
                             warnings=[])
    return d, rem


DIVISOR = [{"divisor_size": {"flag": "--tp-size", "dimension": "{numerator}", "refused": "{denominator}"}}]


def test_ensure_divisibility_numbers_give_their_common_divisor():
    _, rem = _remedy("28 is not divisible by 8", DIVISOR, captures={"numerator": "28", "denominator": "8"})
    assert rem.set == {"--tp-size": 4}
    assert rem.needs_human and rem.safe is False
    assert rem.provenance["--tp-size"]["value_from"] == "log"
    # the divisor being the tp size is the rule's inference: asked about, never applied by run --yes
    assert not rem.safe


def test_no_value_when_the_launch_ran_another_size_or_no_smaller_size_divides():
    # the launch's own tp is 2, not the 8 the message refuses: the divisor was another setting
    _, rem = _remedy("28 is not divisible by 8", DIVISOR, server_args={"tp_size": 2},
                     captures={"numerator": "28", "denominator": "8"})
    assert rem is None
    # 7 and 4 share no divisor above 1 other than 1 itself: tp 1 is the only even split
    _, rem = _remedy("7 is not divisible by 4", DIVISOR, captures={"numerator": "7", "denominator": "4"})
    assert rem.set == {"--tp-size": 1}


def test_the_rule_for_ensure_divisibility_leads_with_the_value():
    from conftest import FIXTURES

    inc = explain_one_incident(FIXTURES / "args" / "tp_not_divisible_059.log")
    assert inc["rule"] == "args.invalid.not_divisible"
    first = inc["remediation"]["set"]
    assert isinstance(first.get("--tp-size"), int), f"before: a placeholder, got {first}"


FLAG_NAMED = [{"flag_named": {}}]


def test_a_prose_name_of_the_tp_size_in_a_divisibility_check_gives_the_value():
    for message in ("num_heads 28 must be divisible by tp world size 8",
                    "Attention heads 28 are not divisible by TP=8",
                    "Total number of attention heads (28) must be divisible by tensor parallel size (8)."):
        _, rem = _remedy(message, FLAG_NAMED, exc="ValueError")
        assert rem is not None and rem.set == {"--tp-size": 4}, (message, rem and rem.set)


def test_a_rank_prefix_is_not_a_tp_size_and_a_divisible_pair_gives_nothing():
    assert remedies._parallel_named("[2025-01-01 TP0] TP0 started") == "[2025-01-01 TP0] TP0 started"
    _, rem = _remedy("num_heads 32 must be divisible by tp world size 8", FLAG_NAMED, exc="ValueError")
    assert rem is None or rem.set.get("--tp-size") != 4


def test_an_example_the_message_gives_is_advice_with_its_value():
    # transformers/vLLM-era dtype check as SGLang logs print it on a V100
    message = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100 GPU "
               "has compute capability 7.0. You can use float16 instead by explicitly setting the`dtype` flag "
               "in CLI, for example: --dtype=half.")
    _, rem = _remedy(message, FLAG_NAMED, exc="ValueError")
    assert rem.set == {"--dtype": "half"}, f"before: a placeholder, got {rem.set}"


def test_a_bare_heads_assert_is_the_tp_size_with_a_power_of_two_below_the_launch_s():
    from conftest import FIXTURES

    # 0.5.23 models/qwen2.py:167 `assert self.total_num_heads % tp_size == 0`, no message; tp_size=8
    inc = explain_one_incident(FIXTURES / "args" / "tp_heads_assert_bare_0523.log")
    assert inc["rule"] == "args.invalid.tp_heads_assert", "before: class.internal.check (other)"
    assert inc["category"] == "args.invalid"
    assert inc["remediation"]["set"] == {"--tp-size": 4}


def test_the_power_of_two_needs_the_launch_s_size():
    entries = [{"divisor_size": {"flag": "--tp-size", "power_of_two": True}}]
    assert _remedy("", entries, server_args={"tp_size": 6})[1].set == {"--tp-size": 4}
    assert _remedy("", entries, server_args={"tp_size": 3})[1].set == {"--tp-size": 2}
    assert _remedy("", entries)[1] is None  # no size in the log: nothing to step from


def test_a_change_after_the_rule_s_advice_takes_the_first_alternative_s_place():
    # remedies._second_a_change: a leading change, the rule's advice, then another change: the two
    # places read first (and tried first by a relaunch loop) hold the two changes
    entries = [{"set_flag": {"flag": "--disable-custom-all-reduce", "value": True}},
               {"needs_human": {"reason": "check the GPUs' topology (nvidia-smi topo -m)"}},
               {"set_env": {"name": "NCCL_P2P_DISABLE", "value": "1"}}]
    _, rem = _remedy("x", entries)
    assert rem.set == {"--disable-custom-all-reduce": True}
    assert rem.alternatives[0].env == {"NCCL_P2P_DISABLE": "1"}, "before: the advice came first"
    assert rem.alternatives[1].needs_human and rem.alternatives[1].is_empty()
    # advice with no change after it stays where the rule put it
    _, rem = _remedy("x", entries[:2])
    assert rem.alternatives[0].needs_human and rem.alternatives[0].is_empty()
