"""The change an argument check's refusal implies by its shape (remedy/refusals.py, issue 12).

The messages are SGLang's own (0.5.9 server_args.py, 0.5.23 server_args.py and arg_groups/),
quoted as they are raised; each test names the shape it checks.  Every change is a flag of the
target release with a value its parser accepts, and advice (never applied unattended).
"""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT, doctor_cmd

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V059 = flags.load_catalog("0.5.9")
V0523 = flags.load_catalog("0.5.23")


def _fix(message: str, catalog=V059, server_args: dict | None = None, exc: str = "AssertionError"):
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo(exc, message)
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=[{"refusal_fix": {}}],
                  launch=Launch(index=0, line=1, server_args=server_args or {}))
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


def _changes(rem) -> list[tuple[dict, list]]:
    return [(r.set, r.unset) for r in [rem, *rem.alternatives]] if rem is not None else []


# -- "A requires B": B on, else A off ------------------------------------------------------------


def test_a_requirement_in_prose_turns_the_required_setting_on_then_the_requiring_one_off():
    rem = _fix("Please enable dp attention when setting enable_dp_lm_head. ")
    assert _changes(rem)[:2] == [({"--enable-dp-attention": True}, []), ({}, ["--enable-dp-lm-head"])]
    assert rem.safe is False, "the message picked the flags: advice, never applied unattended"


def test_a_setting_the_checks_guard_refuses_is_not_turned_on_whatever_its_words_say():
    # (args35) 0.5.9 server_args.py:5172 is ``if self.speculative_algorithm is not None: assert not
    # self.enable_mixed_chunk, "enable_mixed_chunk is required for speculative decoding"``: the
    # words ask for the switch the assert refuses (the shape's reading, turn it on, was pinned
    # here before); the source's guard (argument_sites.json) drops it and removes the switch
    rem = _fix("enable_mixed_chunk is required for speculative decoding")
    changes = _changes(rem)
    assert ({"--enable-mixed-chunk": True}, []) not in changes
    assert changes[0] == ({}, ["--speculative-algorithm"])


def test_a_requirement_that_something_be_disabled_turns_it_off():
    rem = _fix("Elastic EP runtime scale-up requires prefill CUDA graph to be disabled.", V0523)
    assert rem is not None and rem.set == {"--disable-prefill-cuda-graph": True}


def test_a_requirement_that_something_be_enabled_removes_what_turns_it_off():
    rem = _fix("--enable-lmcache requires radix cache to be enabled", V0523, exc="ValueError")
    assert _changes(rem)[:2] == [({}, ["--disable-radix-cache"]), ({}, ["--enable-lmcache"])]


def test_a_switch_whose_requirement_is_no_setting_is_removed_not_turned_on_again():
    rem = _fix("--enable-linker-mla-dedup requires the Mooncake linker.", V0523, exc="ValueError")
    assert rem.unset == ["--enable-linker-mla-dedup"]
    assert not any(a.set.get("--enable-linker-mla-dedup") is True for a in rem.alternatives)


# -- "A is not supported with B": one of them off ------------------------------------------------


def test_a_conflict_in_prose_removes_the_setting_it_is_not_supported_with_then_the_subject():
    rem = _fix("Currently standalone speculative decoding does not support dp attention.", exc="ValueError")
    assert _changes(rem)[:2] == [({}, ["--enable-dp-attention"]), ({}, ["--speculative-algorithm"])]


def test_a_conflict_with_a_switch_that_turns_something_off_turns_it_back_on():
    rem = _fix("PD-Multiplexing is not compatible with overlap schedule.")
    assert _changes(rem)[:2] == [({"--disable-overlap-schedule": True}, []), ({}, ["--enable-pdmux"])]


def test_mutually_exclusive_flags_written_without_dashes_are_each_an_alternative():
    rem = _fix("The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive and cannot be "
               "used at the same time. Please use only one of them.", exc="ValueError")
    assert _changes(rem)[:2] == [({}, ["--enable-hierarchical-cache"]), ({}, ["--disable-radix-cache"])]


def test_the_value_written_after_a_flag_is_the_launchs_not_a_fix():
    rem = _fix("--dsv4-attn-backend trtllm does not support PD disaggregation yet.", V0523, exc="ValueError")
    assert all(r.set.get("--dsv4-attn-backend") != "trtllm" for r in [rem, *rem.alternatives])
    assert rem.unset == ["--dsv4-attn-backend"], "the refused value removed: the release's default applies"


def test_a_backend_the_message_refuses_is_never_the_value_proposed():
    rem = _fix("NemotronHForCausalLM does not support triton attention backend, as the first layer might not be "
               "an attention layer", V0523)
    assert rem is not None
    assert all(r.set.get("--attention-backend") != "triton" for r in [rem, *rem.alternatives])


# -- a value the message states ------------------------------------------------------------------


def test_set_it_to_names_the_value_of_the_setting_before_it():
    rem = _fix("Dual chunk attention is enabled, but attention backend is set to flashinfer. "
               "Please set it to 'dual_chunk_flash_attn'.", exc="ValueError")
    assert rem.set == {"--attention-backend": "dual_chunk_flash_attn"}


def test_an_equality_the_check_states_is_the_value():
    assert _fix("Triton kernel MoE is only supported when ep_size == 1").set == {"--ep-size": 1}
    assert _fix("PD-Multiplexing is only supported with pipeline parallelism disabled (pp_size=1).").set == {"--pp-size": 1}


def test_a_listed_choice_other_than_the_one_in_use_is_the_value():
    rem = _fix("Currently only ['flashinfer', 'fa3', 'triton'] attention backends are supported for deterministic "
               "inference, but you explicitly specified 'trtllm_mha'.", exc="ValueError")
    assert rem.set == {"--attention-backend": "flashinfer"}
    rem = _fix("One of the attention backends in ['triton', 'fa3'] is required for Qwen3NextForCausalLM, but got "
               "flashinfer", V0523)
    assert rem.set == {"--attention-backend": "triton"}


def test_the_kv_cache_dtypes_a_backend_supports_are_checked_against_the_release():
    rem = _fix("TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, fp4_e2m1, bf16, or auto.",
               exc="ValueError")
    assert rem.set == {"--kv-cache-dtype": "fp8_e4m3"}
    assert V059.validate("--kv-cache-dtype", "fp8_e4m3") is None


def test_a_quoted_value_of_a_free_text_flag_is_taken_only_when_quoted():
    rem = _fix("Elastic EP requires eplb_algorithm to be set to 'auto' or 'elasticity_aware'.")
    assert rem.set == {"--eplb-algorithm": "auto"}


# -- a setting refused on its own ----------------------------------------------------------------


def test_a_setting_refused_on_its_own_is_removed():
    assert _fix("Cannot set --disaggregation-decode-tp for the decode engine.").unset == ["--disaggregation-decode-tp"]
    assert _fix("base_gpu_id must be non-negative").unset == ["--base-gpu-id"]


def test_a_launch_whose_dump_shows_the_setting_off_gets_no_removal_of_it():
    rem = _fix("Currently standalone speculative decoding does not support dp attention.",
               server_args={"model_path": "/m", "enable_dp_attention": False, "speculative_algorithm": "STANDALONE"},
               exc="ValueError")
    assert rem is not None and all("--enable-dp-attention" not in r.unset for r in [rem, *rem.alternatives])


def test_a_message_that_advises_a_flag_keeps_its_own_advice_first():
    rem = _fix("Multi-item scoring requires radix cache to be disabled. Please set --disable-radix-cache when "
               "using --multi-item-scoring-delimiter.")
    assert rem.set == {"--disable-radix-cache": True}


def test_a_message_naming_no_setting_gives_nothing():
    assert _fix("Global server args is not set yet!", exc="ValueError") is None


# -- through the command line, on the rule examples ----------------------------------------------


def _explain(path: str) -> dict:
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(ROOT / path)), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    return next(json.loads(line) for line in out.stdout.splitlines() if '"event": "incident"' in line)


def test_the_cli_turns_the_required_setting_on_for_a_059_traceback():
    inc = _explain("fixtures/args/requires_dp_attention_dp_lm_head_059.log")
    assert inc["category"] == "args.invalid"
    assert inc["remediation"]["set"] == {"--enable-dp-attention": True}
    assert inc["remediation"]["alternatives"][0]["unset"] == ["--enable-dp-lm-head"]


def test_the_cli_removes_the_conflicting_setting_for_a_059_traceback():
    inc = _explain("fixtures/args/conflict_standalone_spec_dp_attention_059.log")
    assert inc["remediation"]["unset"] == ["--enable-dp-attention"]
    assert inc["remediation"]["safe"] is False


def test_a_setting_the_message_names_as_absent_is_not_removed():
    rem = _fix("When no initial --lora-paths is provided, you need to specify both --max-lora-rank and "
               "--lora-target-modules for LoRA initialization.")
    assert rem is not None and all("--lora-paths" not in r.unset for r in [rem, *rem.alternatives])


def test_on_0523_a_prose_setting_follows_its_deprecated_flags_successor():
    # 0.5.23 deprecates --enable-dp-attention ("Use --attn-dp-size ..."): never proposed there
    rem = _fix("Currently standalone speculative decoding does not support dp attention.", V0523, exc="ValueError")
    assert rem.unset == ["--attn-dp-size"]
    assert all("--enable-dp-attention" not in r.unset and "--enable-dp-attention" not in r.set
               for r in [rem, *rem.alternatives])


def test_a_comparison_in_brackets_is_not_a_list_of_values():
    rem = _fix("--enable-kv-cache-sharding requires chunked prefill (--chunked-prefill-size > 0).", V0523,
               exc="ValueError")
    assert all(r.set.get("--chunked-prefill-size") != 0 for r in [rem, *rem.alternatives])
    assert rem.unset == ["--chunked-prefill-size"], "chunked prefill on: the release's default size"


# -- a relation between two integer settings: the value that satisfies it --------------------------


def _with_frame(message: str, source: str, catalog=V059, server_args: dict | None = None):
    from sglang_doctor.model import Frame

    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo("AssertionError", message)
    incident.frames = [Frame("/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", 333,
                             "__post_init__", source)]
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=[{"refusal_fix": {}}],
                  launch=Launch(index=0, line=1, server_args=server_args or {}))
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


def test_divisible_by_keeps_the_gpu_count_and_moves_the_other_size():
    # 0.5.9 server_args.py _handle_data_parallelism: "tp_size must be divisible by dp_size" style
    rem = _fix("tp_size must be divisible by dp_size", server_args={"tp_size": 8, "dp_size": 3}, exc="ValueError")
    assert _changes(rem)[0] == ({"--dp-size": 2}, []), "the largest size up to 3 that divides 8"
    assert rem.safe is False


def test_a_size_that_must_divide_another_takes_the_numbers_the_message_prints():
    # 0.5.23 arg_groups/parallel_hook.py: "--dcp-size {dcp} must divide --tp-size {tp}."
    rem = _fix("--dcp-size 4 must divide --tp-size 6.", V0523, exc="ValueError")
    assert _changes(rem)[0] == ({"--dcp-size": 3}, [])
    assert rem.provenance["--dcp-size"]["value_from"] == "log"


def test_at_least_sets_the_setting_to_the_other_ones_value_then_the_other_way():
    # 0.5.9 server_args.py check_lora_server_args
    rem = _fix("max_loaded_loras should be greater than or equal to max_loras_per_batch. max_loaded_loras=4, "
               "max_loras_per_batch=8", exc="AssertionError")
    assert _changes(rem)[:2] == [({"--max-loaded-loras": 8}, []), ({"--max-loras-per-batch": 4}, [])]


def test_sizes_named_in_words_are_related_too():
    # 0.5.9 server_args.py: "The expert parallel size must be 1 or the same as the tensor parallel size"
    rem = _fix("The expert parallel size must be 1 or the same as the tensor parallel size",
               server_args={"tp_size": 8, "ep_size": 4}, exc="AssertionError")
    assert _changes(rem)[0] == ({"--ep-size": 8}, [])


def test_a_bound_the_message_states_is_the_value_when_the_launch_value_is_unknown():
    rem = _fix("Tokenizer worker num must >= 1", exc="ValueError")
    assert _changes(rem)[0] == ({"--tokenizer-worker-num": 1}, [])


def test_a_relation_already_satisfied_by_the_launch_changes_nothing_of_it():
    rem = _fix("chunked_prefill_size must be divisible by page_size",
               server_args={"chunked_prefill_size": 8192, "page_size": 64}, exc="ValueError")
    assert all(s.get("--chunked-prefill-size") != 8192 for s, _ in _changes(rem))
    assert all(not isinstance(s.get("--page-size"), int) for s, _ in _changes(rem))


def test_a_product_of_settings_is_not_moved_by_guess():
    rem = _fix("ep_size * moe_dp_size must be less than or equal to tp_size",
               server_args={"tp_size": 8, "ep_size": 8, "moe_dp_size": 2}, exc="ValueError")
    assert not any(isinstance(v, int) for s, _ in _changes(rem) for v in s.values())


def test_a_bare_asserts_statement_is_the_relation():
    # 0.4.6.post5 server_args.py:333 (enable_dp_attention): assert self.tp_size % self.dp_size == 0
    rem = _with_frame("", "assert self.tp_size % self.dp_size == 0", server_args={"tp_size": 8, "dp_size": 3})
    assert _changes(rem)[0] == ({"--dp-size": 2}, [])


def test_a_bare_assert_without_the_launchs_values_asks_for_a_divisor():
    rem = _with_frame("", "assert self.tp_size % self.dp_size == 0")
    assert rem.set == {"--dp-size": "<a divisor of your --tp-size>"} and rem.needs_human


def test_a_range_refusal_of_one_setting_removes_it():
    rem = _fix("--swa-full-tokens-ratio should be in range (0, 1.0].", exc="ValueError")
    assert _changes(rem)[0] == ({}, ["--swa-full-tokens-ratio"])


# -- argparse: a switch written with a value; a flag given no value -----------------------------


def _cli(path: str) -> dict:
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(ROOT / path)), capture_output=True,
                         text=True, timeout=120)
    return next(json.loads(line) for line in out.stdout.splitlines() if '"incident"' in line)


def test_a_switch_written_true_is_the_switch_alone():
    inc = _cli("fixtures/args/switch_given_value_true.log")
    assert inc["rule"] == "args.invalid.switch_given_value"
    assert inc["remediation"]["set"] == {"--enable-dp-attention": True}
    assert inc["remediation"]["safe"] is False


def test_a_switch_written_false_is_left_out():
    inc = _cli("fixtures/args/switch_given_value_false.log")
    assert inc["remediation"]["unset"] == ["--disable-cuda-graph"] and not inc["remediation"]["set"]


def test_a_flag_given_no_value_asks_for_it_then_removes_it():
    inc = _cli("fixtures/args/flag_missing_value.log")
    assert inc["rule"] == "args.invalid.flag_missing_value"
    rem = inc["remediation"]
    assert list(rem["set"]) == ["--port"] and rem["set"]["--port"].startswith("<")
    assert rem["alternatives"][0]["unset"] == ["--port"]


# -- more shapes: "not supported unless B", a prose setting refused alone, backends in words ------


def test_not_supported_unless_turns_the_condition_on():
    # 0.5.9 server_args.py:5143
    rem = _fix("multi-node data parallel is not supported unless dp attention!", exc="ValueError")
    assert _changes(rem) == [({"--enable-dp-attention": True}, [])]


def test_a_prose_setting_refused_alone_is_turned_off():
    # 0.5.9 server_args.py:1233
    rem = _fix("For round-robin split mode, dp attention is not supported.", exc="ValueError")
    assert _changes(rem)[0] == ({}, ["--enable-dp-attention"])


def test_a_backend_named_in_words_takes_the_value_the_message_names():
    # 0.5.9 server_args.py:2214
    rem = _fix("Flashinfer MoE A2A is only supported with flashinfer_cutlass moe runner backend", exc="AssertionError")
    assert _changes(rem)[0] == ({"--moe-runner-backend": "flashinfer_cutlass"}, [])


def test_a_value_a_setting_cannot_be_removes_the_setting():
    # 0.5.9 server_args.py:2348
    rem = _fix("Currently speculative MoE runner backend cannot be flashinfer_trtllm for risk in some draft models.",
               exc="AssertionError")
    assert _changes(rem)[0] == ({}, ["--speculative-moe-runner-backend"])


def test_only_support_after_the_setting_lists_its_values():
    # 0.5.9 server_args.py:5150
    rem = _fix("moe_dense_tp_size only support 1 and None currently", exc="AssertionError")
    assert _changes(rem)[0] == ({"--moe-dense-tp-size": 1}, [])


def test_a_bound_written_as_a_comparison_after_the_setting_is_its_value():
    # 0.4.6.post5 server_args.py:330 (enable_dp_attention): "Please set a dp-size > 1. ..."
    rem = _fix("Please set a dp-size > 1. You can use 1 < dp-size <= tp-size", flags.load_catalog("0.4.6.post5"))
    assert _changes(rem)[0] == ({"--dp-size": 2}, [])


def test_a_comparison_that_is_the_refusals_condition_is_not_a_value_to_set():
    rem = _fix("Pipeline parallelism is not supported when tp_size > 1", exc="ValueError")
    assert all(s.get("--tp-size") != 2 for s, _ in _changes(rem))


def test_an_invalid_choice_another_release_accepts_names_that_release():
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", "0.4.9.post1",
                                    str(ROOT / "fixtures/args/invalid_choice_newer_release_049.log")),
                         capture_output=True, text=True, timeout=120)
    inc = next(json.loads(line) for line in out.stdout.splitlines() if '"incident"' in line)
    assert inc["rule"] == "args.invalid.invalid_choice"
    notes = [a["note"] for a in inc["remediation"]["alternatives"]]
    elsewhere = [n for n in notes if "is one of its choices in SGLang" in n]
    assert elsewhere and "0.5.1" in elsewhere[0] and "trtllm_mha" not in elsewhere[0], "the log's value is never echoed"
    assert all(not a["set"] for a in inc["remediation"]["alternatives"] if a["note"] in elsewhere)


def test_an_invalid_choice_no_release_accepts_gets_no_release_advice():
    inc = _explain("fixtures/args/invalid_choice_kv_cache_dtype_059.log")
    assert not any("is one of its choices in SGLang" in a["note"] for a in inc["remediation"]["alternatives"])


def test_a_model_that_refuses_pipeline_parallelism_gets_pp_size_one():
    inc = _explain("fixtures/classes/model_not_implemented_pp.log")
    assert inc["rule"] == "class.args.model_refused_parallelism"
    assert inc["remediation"]["set"] == {"--pp-size": 1}


def test_eplb_in_words_is_its_switch():
    rem = _fix("Native xLLM/K2 Horizon serving does not yet support EPLB, non-trivial initial expert placement, or "
               "redundant experts.", V0523, exc="ValueError")
    assert _changes(rem)[0] == ({}, ["--enable-eplb"])


def test_an_argument_refusal_pasted_alone_is_an_argument_check_not_a_serving_crash():
    inc = _explain("fixtures/classes/args_setting_refused_line.log")
    assert (inc["rule"], inc["category"]) == ("class.args.setting_refused", "args.invalid")
    assert inc["remediation"]["set"] == {"--attention-backend": "triton"}


def test_a_serving_crash_that_names_a_setting_stays_a_crash():
    inc = _explain("fixtures/classes/runtime_after_ready_bare.log")
    assert inc["category"] == "runtime.crash"


def test_an_argument_refusal_in_words_pasted_alone_is_an_argument_check():
    inc = _explain("fixtures/classes/args_setting_refused_in_words_line.log")
    assert (inc["rule"], inc["category"]) == ("class.args.setting_refused_in_words", "args.invalid")
    assert inc["remediation"]["unset"], "the setting the check refuses (dp attention) is turned off"


# -- advice that names a flag without its value (session 24) -------------------------------------


def test_a_required_flag_without_a_value_keeps_the_requiring_flag_removed_first():
    """0.5.23 parallel_hook.py: "--max-ep-size requires --elastic-ep-backend to be set." names the
    backend but not which one: removing --max-ep-size is the change a relaunch can carry, the
    backend's value the question after it (and --max-ep-size is not asked about again)."""
    rem = _fix("--max-ep-size requires --elastic-ep-backend to be set.", V0523, exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({}, ["--max-ep-size"])
    assert list(changes[1][0]) == ["--elastic-ep-backend"] and changes[1][0]["--elastic-ep-backend"].startswith("<")
    assert not any("--max-ep-size" in s for s, _ in changes), "no question about the flag the change removes"


def test_set_x_to_a_quoted_value_gives_that_value():
    """0.5.23 moe_hook.py: "set --deepep-mode to 'low_latency' or 'auto'": the first value it states."""
    rem = _fix("moe_a2a_backend='pplx' only supports low-latency mode; set --deepep-mode to 'low_latency' or 'auto'.",
               V0523, exc="ValueError")
    assert _changes(rem)[0] == ({"--deepep-mode": "low_latency"}, [])


def test_the_value_after_only_supports_flag_is_the_accepted_one():
    rem = _fix("MiMo V2 prefill CP only supports --cp-strategy zigzag.", V0523, exc="ValueError")
    assert _changes(rem)[0] == ({"--cp-strategy": "zigzag"}, [])
    rem = _fix("DeepEP v2 MoE currently supports only --moe-runner-backend deep_gemm. Got triton. Add a runner "
               "adapter before enabling DeepEP v2 with other MoE runners.", V0523, exc="ValueError")
    assert _changes(rem)[0] == ({"--moe-runner-backend": "deep_gemm"}, [])


def test_a_value_the_launch_ran_with_before_requires_is_not_the_accepted_one():
    """"--x v requires ..." names the launch's value; only "requires --x v" states the accepted one."""
    rem = _fix("--hicache-host-memory-mode buffer_only requires a host pool size: pass --hicache-size or --hicache-ratio.",
               V0523, exc="ValueError")
    assert all(s.get("--hicache-host-memory-mode") != "buffer_only" for s, _ in _changes(rem))


# -- a choice of a flag named as the check's subject (session 24) --------------------------------


def test_a_choice_named_as_the_subject_is_turned_to_the_other_choice():
    """0.5.9 server_args.py: "mamba extra_buffer is not supported for X model": the strategy's one
    other choice (not auto, the default, which may pick extra_buffer again)."""
    rem = _fix("mamba extra_buffer is not supported for Qwen3NextForCausalLM model")
    assert _changes(rem)[0] == ({"--mamba-scheduler-strategy": "no_buffer"}, [])


def test_a_backend_named_by_its_product_name_is_removed_not_the_quantization_changed():
    """0.5.9 server_args.py:2137: the MoE runner backend is the subject; the listed quantizations
    are the checkpoint's, not a flag value to set, and flashinfer_cutlass is also a
    --fp4-gemm-backend choice: the sentence's "MOE" picks the flag."""
    rem = _fix("Invalid quantization 'fp8'. FlashInfer Cutlass MOE supports only: 'modelopt_fp4', 'modelopt_fp8', "
               "or bfloat16 (None).")
    changes = _changes(rem)
    assert changes[0] == ({}, ["--moe-runner-backend"])
    assert not any("--quantization" in s for s, _ in changes)


def test_a_choice_only_listed_as_accepted_is_no_setting_of_its_own():
    rem = _fix("TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, fp4_e2m1, bf16, or auto.",
               exc="ValueError")
    assert _changes(rem)[0] == ({"--kv-cache-dtype": "fp8_e4m3"}, [])


def test_argument_refusals_in_words_pasted_alone_are_argument_checks():
    """A backend by its product name, a flag without its dashes, a choice as the subject: the
    exception line alone (no frames, no ready line) is an argument check, not a serving crash."""
    for path in ("fixtures/classes/args_refused_moe_backend_in_words_059.log",
                 "fixtures/classes/args_refused_kv_cache_dtype_without_dashes_059.log",
                 "fixtures/classes/args_refused_choice_subject_0523.log"):
        inc = _explain(path)
        assert (inc["rule"], inc["category"]) == ("class.args.setting_refused_in_words", "args.invalid"), path


def test_must_be_1_or_the_same_as_offers_1_after_the_relation():
    """0.5.9 server_args.py:2142 "The expert parallel size must be 1 or the same as the tensor
    parallel size": the relation's value (the launch's --tp-size), then 1, the check's other way out."""
    rem = _fix("The expert parallel size must be 1 or the same as the tensor parallel size",
               server_args={"tp_size": 8, "ep_size": 4})
    assert _changes(rem)[:2] == [({"--ep-size": 8}, []), ({"--ep-size": 1}, [])]
    rem = _fix("The expert parallel size must be 1 or the same as the tensor parallel size")
    assert ({"--ep-size": 1}, []) in _changes(rem)[:2], "without the launch's values 1 is still a value it accepts"


def test_a_replacement_the_message_advises_is_asked_right_after_the_removal():
    """"does not support --hicache-size; use --hicache-ratio instead": the refused flag removed,
    then the advised one (its value the user's), before any further reading."""
    rem = _fix("DeepSeek V4 HiCache currently does not support --hicache-size; use --hicache-ratio instead.", V0523,
               exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({}, ["--hicache-size"])
    assert list(changes[1][0]) == ["--hicache-ratio"]


# -- session 31: the release unknown, one-word choices, a requirement on a variable --------------


def _guessed(message: str, exc: str = "ValueError"):
    """The refusal read with the release unknown (no header, no dump): the newest catalogue."""
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo(exc, message)
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=[{"refusal_fix": {}}],
                  launch=None)
    return remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                              model_config=None, warnings=[], version_source="newest catalogue")


def test_an_unknown_release_gets_the_spelling_most_releases_take_and_the_note_names_the_newer_one():
    # 0.4.x-0.5.9's check (server_args.py:5143 in 0.5.9); 0.5.22 deprecates --enable-dp-attention
    # for --attn-dp-size, which no release before it takes
    rem = _guessed("multi-node data parallel is not supported unless dp attention!")
    assert rem is not None and rem.set == {"--enable-dp-attention": True}
    assert "--attn-dp-size" in rem.note and "0.4.0" in rem.note
    for version in ("0.4.3.post2", "0.5.4", "0.5.9", "0.5.23"):
        assert flags.shipped_catalog(version).validate("--enable-dp-attention", True) is None


def test_a_known_release_keeps_its_own_successor_spelling():
    rem = _fix("multi-node data parallel is not supported unless dp attention!", V0523, exc="ValueError")
    assert rem is not None and "--enable-dp-attention" not in rem.set


def test_a_one_word_choice_with_its_flags_noun_is_the_refused_setting():
    # 0.5.9 server_args.py:2164: --moe-runner-backend cutlass without FP8 weights
    rem = _fix("cutlass MoE is only supported with fp8/mxfp8 quantization", exc="AssertionError")
    assert rem is not None and _changes(rem)[0] == ({}, ["--moe-runner-backend"])
    assert all(s.get("--moe-runner-backend") != "cutlass" for s, _ in _changes(rem))


def test_a_choice_refused_with_its_noun_between_is_not_the_value_set():
    rem = _fix("triton attention backend does not support this model", exc="ValueError")
    assert rem is not None
    assert all(s.get("--attention-backend") != "triton" for s, _ in _changes(rem))


def test_a_one_word_choice_without_its_flags_noun_is_no_setting():
    rem = _fix("cutlass is only supported with fp8/mxfp8 quantization", exc="AssertionError")
    assert rem is None or all("--moe-runner-backend" not in s and "--moe-runner-backend" not in u
                              for s, u in _changes(rem))


def test_a_required_environment_value_is_advice_to_set_it():
    from sglang_doctor.remedy.class_remedies import env_advised

    # 0.5.23 speculative_hook.py:314, model_overrides/kimi_k3.py:71
    assert env_advised("DFLASH with dp attention requires SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION=0.") == \
        ("SGLANG_ENABLE_DP_SPEC_PREFILL_COORDINATION", "0")
    assert env_advised("Kimi-K3 DCP + DSPARK currently requires SGLANG_RAGGED_VERIFY_MODE=static; compact") == \
        ("SGLANG_RAGGED_VERIFY_MODE", "static")
    assert env_advised("this path does not require SGLANG_RAGGED_VERIFY_MODE=static") is None


def test_an_unknown_release_reads_a_flag_the_newest_lacks_in_the_release_that_has_it():
    # 0.5.9 server_args.py:1268; 0.5.23 has no --enable-nsa-prefill-context-parallel
    rem = _guessed("CP is only supported for prefill when PD disaggregation, please remove "
                   "--enable-nsa-prefill-context-parallel.")
    assert rem is not None and rem.unset == ["--enable-nsa-prefill-context-parallel"]
    assert V0523.spec("--enable-nsa-prefill-context-parallel") is None


def test_an_unknown_release_takes_a_value_in_a_release_whose_parser_accepts_it():
    # 0.5.9 server_args.py:1965: dual_chunk_flash_attn is no choice of 0.5.20 on
    rem = _guessed("Dual chunk attention is enabled, but attention backend is set to flashinfer. "
                   "Please set it to 'dual_chunk_flash_attn'.")
    assert rem is not None and rem.set == {"--attention-backend": "dual_chunk_flash_attn"}
    assert V0523.validate("--attention-backend", "dual_chunk_flash_attn") is not None
    release = rem.note.rsplit("valid in SGLang ", 1)[1].split(")")[0].split(";")[0]
    assert flags.shipped_catalog(release).validate("--attention-backend", "dual_chunk_flash_attn") is None


def test_the_value_a_launch_ran_with_at_a_sentences_end_is_not_the_way_out():
    rem = _fix("Dual chunk attention is enabled, but attention backend is set to flashinfer. "
               "Please set it to 'dual_chunk_flash_attn'.", exc="ValueError")
    assert rem is None or all(s.get("--attention-backend") != "flashinfer" for s, _ in _changes(rem))


def test_a_setting_with_no_effect_without_another_is_removed():
    # 0.5.23 serving_hook.py:60 (the other settings are paths: the user's to give)
    rem = _fix("--ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile.", V0523, exc="ValueError")
    assert rem is not None and ({}, ["--ssl-ca-certs"]) in _changes(rem)[:2]


def test_a_flag_the_check_does_not_accept_is_removed():
    # 0.5.23 speculative_hook.py:455, moe_hook.py:635
    rem = _fix("UNO reuses the target model and does not accept --speculative-draft-model-path.", V0523, exc="ValueError")
    assert rem is not None and _changes(rem)[0] == ({}, ["--speculative-draft-model-path"])
    rem = _fix("DeepEP v2 MoE is not validated as a speculative draft backend. Select another "
               "--speculative-moe-a2a-backend.", V0523, exc="ValueError")
    assert rem is not None and ({}, ["--speculative-moe-a2a-backend"]) in _changes(rem)[:2]


def test_pd_disaggregation_in_words_is_the_disaggregation_mode():
    # 0.5.23 model_overrides/deepseek_v2.py:24, model_overrides/minicpm.py:54
    rem = _fix("MiniCPM sparse attention does not support PD disaggregation", V0523, exc="ValueError")
    assert rem is not None and ({}, ["--disaggregation-mode"]) in _changes(rem)[:2]


def test_a_choice_the_check_requires_is_still_the_value_set():
    # 0.5.4 server_args.py:1185 (the subject of "is required" is wanted, not refused)
    rem = _fix("modelopt_fp4 quantization is required for Flashinfer MOE", flags.load_catalog("0.5.4"), exc="ValueError")
    assert rem is not None and rem.set == {"--quantization": "modelopt_fp4"}


def test_an_unknown_release_keeps_a_renamed_flag_the_message_itself_spells():
    # 0.5.23 model_hook.py:1063 names the new spelling: the release has it, whatever most take
    rem = _guessed("--mamba-radix-cache-strategy extra_buffer needs mamba state, got LlamaForCausalLM.")
    touched = {f for s, u in _changes(rem) for f in [*s, *u]} if rem is not None else set()
    assert "--mamba-scheduler-strategy" not in touched


# -- "X cannot be V" where V is X's default: removing X leaves V -----------------------------------


def test_a_refused_value_that_is_the_default_sets_another_choice_instead_of_removing_the_flag():
    # 0.5.9 server_args.py:5259 ``if self.enable_two_batch_overlap: if self.moe_a2a_backend ==
    # "none": raise``: 'none' is --moe-a2a-backend's default, so removing the flag keeps it
    rem = _fix("When enabling two batch overlap, moe_a2a_backend cannot be 'none'.", exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({"--moe-a2a-backend": "deepep"}, [])
    assert ({}, ["--moe-a2a-backend"]) not in changes
    assert "default" in rem.note and "mooncake" in rem.note


def test_a_refused_value_that_is_not_the_default_is_still_removed():
    # 0.5.9 server_args.py: "Currently speculative MoE runner backend cannot be flashinfer_trtllm ..."
    # (the flag's default is not that value: removing it is the way out)
    rem = _fix("Currently speculative MoE runner backend cannot be flashinfer_trtllm for risk in some draft models.",
               server_args={"speculative_moe_runner_backend": "flashinfer_trtllm"}, exc="ValueError")
    assert ({}, ["--speculative-moe-runner-backend"]) in _changes(rem)[:2]


def test_a_choice_named_before_another_setting_is_read_as_the_refused_subject():
    # 0.5.9 server_args.py:2173 ``assert self.ep_size == 1, "FP8/MXFP8 Cutlass MoE is only supported
    # with ep_size == 1"`` under ``if self.moe_runner_backend == "cutlass"``: the value it states, then
    # the refused backend removed (the words "MXFP8 Cutlass" must not hide "Cutlass MoE", nor
    # ep_size's place after the choice drop it)
    rem = _fix("FP8/MXFP8 Cutlass MoE is only supported with ep_size == 1", V0523)
    assert _changes(rem)[:2] == [({"--ep-size": 1}, []), ({}, ["--moe-runner-backend"])]


def test_a_requirement_that_names_a_setting_as_absent_turns_it_off():
    # 0.5.23 lora_hook.py:234: "... requires trivial expert placement without EPLB or redundant
    # experts": EPLB is what the requirement excludes, never turned on
    rem = _fix("--moe-runner-backend triton currently requires trivial expert placement without EPLB or redundant experts",
               V0523, exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({}, ["--enable-eplb"])
    assert not any(s.get("--enable-eplb") is True for s, _ in changes)


def test_a_flag_after_when_using_is_the_launchs_condition_not_advice():
    # 0.5.23 moe_hook.py:427: "Remove --enforce-shared-experts-fusion when using --moe-a2a-backend
    # deepep_v2." advises the removal; deepep_v2 is what the launch already runs
    rem = _fix("DeepEP v2 MoE has not validated fused shared experts yet. Remove --enforce-shared-experts-fusion "
               "when using --moe-a2a-backend deepep_v2.", V0523, exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({}, ["--enforce-shared-experts-fusion"])
    assert ({"--moe-a2a-backend": "deepep_v2"}, []) not in changes


def test_a_value_written_after_one_flag_is_not_another_settings_value():
    # 0.5.23 model_overrides/minimax_m3.py:105: "none or megamoe" are --moe-a2a-backend's values;
    # --moe-runner-backend also has a "megamoe" choice, but the refused runner is only removed
    rem = _fix("M3.1 NVFP4 flashinfer_trtllm_routed requires --moe-a2a-backend none or megamoe", V0523, exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({"--moe-a2a-backend": "none"}, [])
    assert not any(s.get("--moe-runner-backend") == "megamoe" for s, _ in changes)


def test_a_number_written_after_one_setting_is_still_anothers_value():
    # 0.5.23 validation_hook.py:652: each of the three sizes is asked to be 1
    rem = _fix("The standard Torch MPS path requires tp_size=1, pp_size=1, and dp_size=1", V0523, exc="ValueError")
    assert _changes(rem)[:2] == [({"--tp-size": 1}, []), ({"--pp-size": 1}, [])]


def test_a_refused_choice_whose_default_the_release_resolves_is_turned_disabled_not_removed():
    # 0.5.23 layernorm_sp_hook.py:73 refuses --cuda-graph-backend-prefill breakable, which is also the
    # CUDA default the release resolves when the flag is absent: "disabled" is the way off
    rem = _fix("Muse MegaMoE breakable prefill requires a positive --chunked-prefill-size to bound SP workspace growth.",
               V0523, exc="ValueError")
    changes = _changes(rem)
    assert changes[0] == ({"--cuda-graph-backend-prefill": "disabled"}, [])
    assert ({}, ["--cuda-graph-backend-prefill"]) not in changes
