"""The flag a failure message advises is the change (remedies.flag_named), session 19.

SGLang 0.5.23's argument hooks end their sentences with the advice: "--flashinfer-a2a-dispatch-type
mxfp8 requires --quantization mxfp8." (arg_groups/moe_hook.py), "FlashInfer MegaMOE NVFP4 W4A16
requires --dtype bfloat16." (moe_hook.py), "--sidecar-args requires --sidecar."
(serving_hook.py).  Each of these tests fails on the code before session 19: the full stop was
read as part of the value (which then failed validation), a one-word option (``--dtype``,
``--quantization``, ``--sidecar``) was never taken for a named flag, and the flag the message
only names (the one that failed the check) came before the one it advises."""

from __future__ import annotations

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")


def _remediate(message: str):
    inc = Incident(kind="traceback", first_line=1, last_line=1, frames=[], lines=[])
    inc.exception = ExceptionInfo(type="ValueError", message=message)
    d = Diagnosis(incident=inc, rule="class.test", category="args.invalid", remedies=[{"flag_named": {}}],
                  launch=Launch(index=0, line=1, server_args={}))
    return remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                              model_config=None)


def test_the_sentences_full_stop_is_not_part_of_the_advised_value():
    rem = _remediate("--flashinfer-a2a-dispatch-type mxfp8 requires --quantization mxfp8.")
    assert rem.set == {"--quantization": "mxfp8"}
    rem = _remediate("FlashInfer MegaMOE NVFP4 W4A16 requires --dtype bfloat16.")
    assert rem.set == {"--dtype": "bfloat16"}
    assert rem.needs_human or rem.safe is False  # the log chose the value: advice


def test_an_advised_one_word_option_leads_the_flags_the_message_names():
    rem = _remediate("--sidecar-args requires --sidecar.")
    assert list(rem.set) == ["--sidecar"]
    assert [list(a.set) for a in rem.alternatives] == [["--sidecar-args"]]


def test_a_flag_only_named_in_a_negated_clause_does_not_lead():
    # "not supported with --x": --x is the conflict; nothing is advised, the named order stays
    rem = _remediate("--enable-two-batch-overlap is not supported with --moe-a2a-backend deepep.")
    assert rem is not None
    first = set(rem.set) | set(rem.unset)
    assert first == {"--enable-two-batch-overlap"}
