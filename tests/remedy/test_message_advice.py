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


def _remediate_rule(remedy: list[dict], message: str):
    inc = Incident(kind="traceback", first_line=1, last_line=1, frames=[], lines=[])
    inc.exception = ExceptionInfo(type="ValueError", message=message)
    d = Diagnosis(incident=inc, rule="some.rule", category="args.invalid", remedies=remedy,
                  launch=Launch(index=0, line=1, server_args={}))
    return remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                              model_config=None)


# 0.5.23 models/qwen4_exp.py:725, the refusal's own way out
NGRAM = ("global-TP Qwen4 N-gram lookup under DP attention requires a DP token layout; set "
         "SGLANG_USE_ATTN_TP_NGRAM=1 to shard the table within each attention-TP group.")


def test_the_variable_the_message_sets_is_the_first_alternative_after_the_rules_own_change():
    rem = _remediate_rule([{"unset_flag": {"flag": "--enable-dp-attention", "implied": "the message names it"}}], NGRAM)
    assert rem.unset == ["--enable-dp-attention"]
    assert rem.alternatives[0].env == {"SGLANG_USE_ATTN_TP_NGRAM": "1"}
    assert rem.alternatives[0].safe is False  # the log chose it: advice


def test_the_variable_leads_when_the_rule_starts_with_advice_only():
    rem = _remediate_rule([{"needs_human": {"reason": "check the model's parallel layout"}}], NGRAM)
    assert rem.env == {"SGLANG_USE_ATTN_TP_NGRAM": "1"} and rem.needs_human


def test_a_variable_the_message_names_as_the_running_value_is_not_advised():
    msg = ("--enable-linear-replayssm-spec with SGLANG_RAGGED_VERIFY_MODE=2 requires the KDA fold-every-commit "
           "family (DSPARK/DFLASH)")
    rem = _remediate_rule([{"needs_human": {"reason": "x"}}], msg)
    assert rem is None or all(not r.env for r in [rem, *rem.alternatives])


def _compile_failure(remedy: list[dict], frames: list[str], server_args: dict | None = None,
                     exc_type: str = "torch._inductor.exc.InductorError"):
    from sglang_doctor.model import Frame

    inc = Incident(kind="traceback", first_line=1, last_line=1,
                   frames=[Frame(file=f, line=1, function="f") for f in frames], lines=[])
    inc.exception = ExceptionInfo(type=exc_type, message="RuntimeError: Failed to find C compiler. "
                                                         "Please specify via CC environment variable.")
    d = Diagnosis(incident=inc, rule="some.rule", category="kernel.build", remedies=remedy,
                  launch=Launch(index=0, line=1, server_args=server_args or {}))
    return remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                              model_config=None)


SITE = "/usr/local/lib/python3.12/dist-packages/"
RUNNER = SITE + "sglang/srt/model_executor/cuda_graph_runner.py"
DYNAMO = SITE + "torch/_dynamo/eval_frame.py"


def test_a_failure_inside_torch_compile_offers_the_compile_switch_off():
    rem = _compile_failure([{"needs_human": {"reason": "install a C compiler (gcc) in the image"}}], [RUNNER, DYNAMO])
    assert rem.unset == ["--enable-torch-compile"] and rem.needs_human  # unknown settings: conditional advice
    assert "install a C compiler" in rem.note
    rem = _compile_failure([{"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05}}], [RUNNER, DYNAMO],
                           {"enable_torch_compile": True, "mem_fraction_static": 0.85})
    assert rem.set == {"--mem-fraction-static": 0.8}
    assert rem.alternatives[0].unset == ["--enable-torch-compile"]
    # the exception's type says it when the frames were cut
    rem = _compile_failure([{"needs_human": {"reason": "x"}}], [], exc_type="torch._dynamo.exc.BackendCompilerFailed")
    assert rem.unset == ["--enable-torch-compile"]


def test_no_compile_switch_for_piecewise_graphs_or_a_launch_without_it():
    piecewise = SITE + "sglang/srt/model_executor/piecewise_cuda_graph_runner.py"
    rem = _compile_failure([{"needs_human": {"reason": "x"}}], [piecewise, DYNAMO])
    assert all("--enable-torch-compile" not in r.unset for r in [rem, *rem.alternatives])
    rem = _compile_failure([{"needs_human": {"reason": "x"}}], [RUNNER, DYNAMO], {"enable_torch_compile": False})
    assert all("--enable-torch-compile" not in r.unset for r in [rem, *rem.alternatives])
