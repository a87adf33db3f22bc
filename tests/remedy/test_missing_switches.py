"""Rules that named a failure and proposed no change (session 15, docs/FIXES-SEEN.md): each now
offers the switch SGLang's source gives for it, through the CLI on real fixtures or on small
texts worded as SGLang / argparse / torch print them.  Every change stays advice where a value
is only the user's (a placeholder) or the log picked the flag."""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

SCHED = ("[2026-06-04 07:40:31 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
         '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3155, in run_scheduler_process\n'
         "    scheduler = Scheduler(\n")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _traceback(tmp_path, name, module, exc_line):
    return _write(tmp_path, name, SCHED + f'  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/{module}", '
                                          f"line 90, in __init__\n    raise X\n{exc_line}\n")


def _changes(rem):
    return [rem, *rem["alternatives"]]


USAGE = "usage: launch_server.py [-h] --model-path MODEL_PATH [--moe-runner-backend {auto,triton}]\n"


def test_an_invalid_choice_with_no_value_meant_drops_the_flag(tmp_path):
    path = _write(tmp_path, "choice.log", USAGE + "launch_server.py: error: argument --moe-runner-backend: invalid choice: "
                  "'torch' (choose from 'auto', 'deep_gemm', 'triton', 'triton_kernel', 'flashinfer_trtllm', 'cutlass')\n")
    inc = explain_one_incident(path, "--sglang-version", "0.5.9")
    rem = inc["remediation"]
    assert inc["rule"] == "args.invalid.invalid_choice"
    assert rem["unset"] == ["--moe-runner-backend"] and not rem["set"] and rem["tradeoff"]
    assert rem["safe"] is False and rem["untrusted"]  # the parser's line picked the flag: a person confirms


def test_an_invalid_choice_with_a_value_meant_sets_it_and_drops_second(tmp_path):
    path = _write(tmp_path, "choice.log", USAGE + "launch_server.py: error: argument --mm-attention-backend: invalid choice: "
                  "'triton' (choose from 'sdpa', 'fa3', 'triton_attn')\n")
    rem = explain_one_incident(path, "--sglang-version", "0.5.9")["remediation"]
    assert rem["set"] == {"--mm-attention-backend": "triton_attn"}
    assert rem["alternatives"][0]["unset"] == ["--mm-attention-backend"]


def test_an_invalid_choice_of_a_flag_the_release_lacks_is_not_removed(tmp_path):
    path = _write(tmp_path, "choice.log", USAGE + "launch_server.py: error: argument --no-such-flag-x: invalid choice: "
                  "'a' (choose from 'b', 'c')\n")
    rem = explain_one_incident(path, "--sglang-version", "0.5.9")["remediation"]
    assert not any(c["unset"] for c in _changes(rem))


def test_no_cuda_gpus_names_cuda_visible_devices_with_a_placeholder():
    for path in (FIXTURES / "kernel" / "no_cuda_gpus_visible_devices.log", FIXTURES / "kernel" / "no_accelerator_0523.log"):
        rem = explain_one_incident(path)["remediation"]
        (value,) = rem["env"].values()
        assert list(rem["env"]) == ["CUDA_VISIBLE_DEVICES"] and value.startswith("<") and value.endswith(">")
        assert rem["needs_human"] and rem["safe"] is False


def test_missing_aiter_ops_turn_sglangs_aiter_path_off():
    rem = explain_one_incident(FIXTURES / "other" / "aiter_fmoe_missing_flydsl_0510.log")["remediation"]
    assert rem["env"] == {"SGLANG_USE_AITER": "0"} and "Triton" in rem["tradeoff"]


def test_an_undefined_symbol_in_flashinfers_attention_switches_to_triton(tmp_path):
    rem = explain_one_incident(FIXTURES / "classes" / "undefined_symbol_bare.log")["remediation"]
    assert rem["set"] == {"--attention-backend": "triton"} and rem["safe"] is False
    # not for a kernel of FlashInfer's sampler: the attention backend does not load it
    path = _write(tmp_path, "sym.log", "OSError: /root/.cache/flashinfer/0.5.3/90/cached_ops/sampling/sampling.so: "
                  "undefined symbol: _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib\n")
    rem = explain_one_incident(path)["remediation"]
    assert not any(c["set"].get("--attention-backend") for c in _changes(rem))


def test_a_missing_package_gets_the_switch_of_the_feature_that_needs_it(tmp_path):
    attn = _traceback(tmp_path, "a.log", "model_executor/model_runner.py",
                      "RuntimeError: FlashInfer attention backend requested but flashinfer is not installed.")
    assert explain_one_incident(attn)["remediation"]["set"] == {"--attention-backend": "triton"}
    grammar = _traceback(tmp_path, "g.log", "constrained/base_grammar_backend.py",
                         "RuntimeError: The xgrammar package is not installed; pip install xgrammar")
    assert explain_one_incident(grammar)["remediation"]["set"] == {"--grammar-backend": "outlines"}
    deepep = _traceback(tmp_path, "d.log", "layers/moe/token_dispatcher/deepep.py",
                        "RuntimeError: DeepEP is not installed. Please install DeepEP package.")
    rem = explain_one_incident(deepep, "--sglang-version", "0.5.9")["remediation"]
    assert rem["unset"] == ["--moe-a2a-backend"]


def test_a_missing_flashinfer_for_a_moe_method_is_not_an_attention_switch():
    rem = explain_one_incident(FIXTURES / "classes" / "package_missing_requires_package.log")["remediation"]
    assert not any(c["set"] or c["unset"] or c["env"] for c in _changes(rem))


def test_a_platform_guarded_tree_kernel_drops_speculative_decoding(tmp_path):
    path = _traceback(tmp_path, "n.log", "speculative/eagle_utils.py",
                      "NameError: name 'sgl_build_tree_kernel_efficient' is not defined")
    inc = explain_one_incident(path)
    assert inc["rule"] == "kernel.unsupported_hw.platform_guarded_kernel"
    assert inc["remediation"]["unset"] == ["--speculative-algorithm"]
    # an op with no switch (a MoE kernel's) stays advice
    rem = explain_one_incident(FIXTURES / "kernel" / "platform_guarded_kernel_nameerror.log")["remediation"]
    assert not any(c["set"] or c["unset"] or c["env"] for c in _changes(rem))


def test_a_full_disk_during_download_names_the_download_directory():
    rem = explain_one_incident(FIXTURES / "model" / "disk_full_hub_download.log")["remediation"]
    assert list(rem["set"]) == ["--download-dir"] and rem["set"]["--download-dir"].startswith("<")
    assert list(rem["alternatives"][0]["env"]) == ["HF_HOME"]


def test_an_invalid_choice_that_starts_several_listed_values_asks_first():
    # 'fp8' with fp8_e5m2 and fp8_e4m3 listed: which one was meant is the question; removal second
    rem = explain_one_incident(FIXTURES / "args" / "invalid_choice_kv_cache_dtype_059.log")["remediation"]
    assert list(rem["set"]) == ["--kv-cache-dtype"] and rem["set"]["--kv-cache-dtype"].startswith("<")
    assert rem["alternatives"][0]["unset"] == ["--kv-cache-dtype"]


def test_rules_show_words_a_question_as_a_question():
    from sglang_doctor.cli.rules import describe_remedy

    env = describe_remedy({"set_env": {"name": "CUDA_VISIBLE_DEVICES", "ask": "GPU indices"}})
    assert "CUDA_VISIBLE_DEVICES=<GPU indices>" in env and "None" not in env
    near = describe_remedy({"set_flag": {"flag": "{flag}", "near_only": True, "ask": "one of {choices}",
                                         "near": {"value": "{value}", "choices": "{choices}"}}})
    assert "plainly meant" in near
    assert "<a directory>" in describe_remedy({"set_flag": {"flag": "--download-dir", "ask": "a directory"}})


def test_a_weight_key_error_offers_dropping_a_quantization_override_only_on_its_condition(tmp_path):
    rem = explain_one_incident(FIXTURES / "classes" / "weight_key_error_bare.log")["remediation"]
    (drop,) = [c for c in _changes(rem) if c["unset"]]
    assert drop["unset"] == ["--quantization"] and "if your launch sets it" in drop["note"]
    # a dump that shows no --quantization: nothing to remove
    rem = explain_one_incident(FIXTURES / "classes" / "model_quant_checkpoint.log")["remediation"]
    assert not any(c["unset"] for c in _changes(rem))
