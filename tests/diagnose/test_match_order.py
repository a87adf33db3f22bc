"""A rule's message regex is tried after the conditions that cost no regex: a rule that one of
those rules out neither compiles nor searches its pattern; the result is the same."""

from sglang_doctor.diagnose.rules_engine import Rule, RuleSet, _LazyPattern
from sglang_doctor.model import ExceptionInfo, Frame, Incident

MESSAGE = r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ [GM]iB)"


def _rule(**conditions) -> Rule:
    return Rule(id="test.order", category="memory.cuda_oom", phase="any", title="t", explanation="e",
                source="test.yaml", line=1, exceptions=("OutOfMemoryError",),
                message=_LazyPattern(MESSAGE), **conditions)


def _incident() -> Incident:
    exc = ExceptionInfo("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB")
    return Incident(kind="traceback", first_line=1, last_line=3, exception=exc, chain=[exc],
                    frames=[Frame("/sgl/python/sglang/srt/model_executor/model_runner.py", 10, "forward")])


def test_a_rule_ruled_out_by_its_frames_never_compiles_its_message_regex():
    for conditions in ({"frames_any": ("nowhere/else.py",)}, {"message_any": ("nccl",)},
                       {"deepest_frame": ("managers/scheduler.py",)}):
        rule = _rule(**conditions)
        assert RuleSet([rule])._match(rule, _incident(), None, []) is None
        assert rule.message._rx is None, conditions  # (the old order compiled and searched it first)


def test_a_rule_whose_cheap_conditions_hold_still_reads_its_message():
    rule = _rule(frames_any=("model_executor/model_runner.py",), message_any=("out of memory",))
    captures = RuleSet([rule])._match(rule, _incident(), None, [])
    assert captures is not None and captures["size"] == "2.00 GiB"
    miss = _rule(frames_any=("model_executor/model_runner.py",))
    inc = _incident()
    inc.exception.message = inc.chain[0].message = "CUDA error: an illegal memory access"
    assert RuleSet([miss])._match(miss, inc, None, []) is None
