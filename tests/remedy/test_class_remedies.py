"""Class-level remedies (remedy/class_remedies.py): the other attention backend than the one
that failed, and removing the flags of an optional feature the failure happened in."""

from __future__ import annotations

from sglang_doctor.model import Diagnosis, ExceptionInfo, Frame, Incident, Launch, Line
from sglang_doctor.remedy import flags, remedies, trust

V059 = flags.load_catalog("0.5.9")
V0523 = flags.load_catalog("0.5.23")

ATTN = "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/{}.py"


def _diagnosis(remedy: list[dict], server_args: dict | None = None, frames: list[str] = (),
               text: str = "") -> Diagnosis:
    inc = Incident(kind="traceback", first_line=1, last_line=1,
                   frames=[Frame(file=f, line=1, function="f") for f in frames],
                   lines=[Line(number=1, text=text)] if text else [])
    launch = Launch(index=0, line=1, server_args=server_args or {})
    return Diagnosis(incident=inc, rule="class.test", category="args.invalid", remedies=remedy, launch=launch)


def _remediate(d: Diagnosis, catalog=V0523):
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None)


def test_the_backend_whose_module_failed_is_not_proposed_again():
    d = _diagnosis([{"switch_backend": {}}], frames=[ATTN.format("flashinfer_backend")])
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "triton"}
    assert "flashinfer backend failed" in rem.note and "class-level" in rem.note
    assert rem.safe is False and not trust.check(rem, d, V0523)  # a rule's value: trusted, still asked


def test_the_first_choice_when_another_backend_failed():
    d = _diagnosis([{"switch_backend": {}}], frames=[ATTN.format("triton_backend")])
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}
    d = _diagnosis([{"switch_backend": {}}], frames=[ATTN.format("flashattention_backend")])
    assert _remediate(d, V059).set == {"--attention-backend": "flashinfer"}


def test_the_launchs_own_setting_wins_over_the_frames():
    d = _diagnosis([{"switch_backend": {}}], {"attention_backend": "triton"}, frames=[ATTN.format("flashinfer_backend")])
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}


def test_flashinfer_is_skipped_on_rocm():
    d = _diagnosis([{"switch_backend": {}}], frames=["/opt/rocm/lib/python3.10/site-packages/sglang/srt/layers/attention/aiter_backend.py"],
                   text="RuntimeError: HIP error: invalid device function")
    assert _remediate(d).set == {"--attention-backend": "triton"}


def test_when_frames_needs_an_attention_module_in_the_traceback():
    d = _diagnosis([{"switch_backend": {"when_frames": True}}],
                   frames=["/x/sglang/srt/layers/quantization/fp8_kernel.py"])
    assert _remediate(d) is None
    d = _diagnosis([{"switch_backend": {"when_frames": True}}],
                   frames=["/x/sglang/srt/model_executor/model_runner.py", ATTN.format("triton_ops/decode_attention")])
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}


def test_a_feature_set_in_the_launch_is_removed_and_the_default_is_not():
    entry = {"drop_feature": {"flags": ["--moe-runner-backend", "--moe-a2a-backend", "--enable-eplb"], "feature": "x"}}
    rem = _remediate(_diagnosis([entry], {"moe_runner_backend": "flashinfer_cutlass", "moe_a2a_backend": "none",
                                          "enable_eplb": False, "model_path": "/m"}))
    assert rem.unset == ["--moe-runner-backend"] and rem.safe is False
    assert _remediate(_diagnosis([entry], {"moe_runner_backend": "auto", "model_path": "/m"})) is None


def test_unknown_settings_make_the_removal_conditional_and_ranked_after_a_firm_change():
    entries = [{"drop_feature": {"flags": ["--speculative-algorithm"], "feature": "speculative decoding"}},
               {"set_flag": {"flag": "--disable-cuda-graph", "value": True}}]
    rem = _remediate(_diagnosis(entries))
    assert rem.set == {"--disable-cuda-graph": True}
    (alt,) = rem.alternatives
    assert alt.unset == ["--speculative-algorithm"] and "if your launch sets it" in alt.note


def test_a_flag_the_release_does_not_have_is_left_out():
    entry = {"drop_feature": {"flags": ["--enable-hierarchical-cache", "--no-such-flag"], "feature": "x"}}
    assert _remediate(_diagnosis([entry])).unset == ["--enable-hierarchical-cache"]


def test_the_feature_whose_module_failed_is_turned_off_in_the_releases_spelling():
    frames = ["/x/sglang/srt/distributed/parallel_state.py",
              "/x/sglang/srt/distributed/device_communicators/custom_all_reduce.py"]
    rem = _remediate(_diagnosis([{"disable_in_frames": {}}], frames=frames))
    assert rem.set == {"--disable-custom-all-reduce": True} and rem.safe is False
    assert "custom_all_reduce" in rem.note


def test_a_feature_outside_the_rules_subset_or_already_off_is_no_change():
    frames = ["/x/sglang/srt/model_executor/cuda_graph_runner.py"]
    assert _remediate(_diagnosis([{"disable_in_frames": {"features": ["custom_all_reduce"]}}], frames=frames)) is None
    frames = ["/x/sglang/srt/distributed/device_communicators/custom_all_reduce.py"]
    assert _remediate(_diagnosis([{"disable_in_frames": {}}], {"disable_custom_all_reduce": True, "model_path": "/m"},
                                 frames=frames)) is None
    assert _remediate(_diagnosis([{"disable_in_frames": {}}], frames=["/x/sglang/srt/distributed/pynccl.py"])) is None


def _with_message(remedy: list[dict], message: str, server_args: dict | None = None) -> Diagnosis:
    from sglang_doctor.model import ExceptionInfo

    d = _diagnosis(remedy, server_args)
    d.incident.exception = ExceptionInfo(type="ValueError", message=message)
    return d


def test_a_backend_the_message_names_counts_as_the_one_in_use():
    d = _with_message([{"switch_backend": {"when_frames": True}}],
                      "FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use `--attention-backend flashinfer`.")
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}
    d = _with_message([{"switch_backend": {"when_frames": True}}],
                      "TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.")
    assert _remediate(d).set == {"--attention-backend": "flashinfer"}
    d = _with_message([{"switch_backend": {}}], "FlashInfer attention backend: unsupported head_dim 80")
    assert _remediate(d).set == {"--attention-backend": "triton"}


def test_a_kernel_message_that_is_not_about_attention_is_not_a_backend_switch():
    d = _with_message([{"switch_backend": {"when_frames": True}}], "flashinfer fp8 blockscale gemm requires sm90 or newer")
    assert _remediate(d) is None


def test_the_environment_variable_a_message_advises_is_advice_from_the_log():
    msg = ("PyTorch 2.9.1 with CuDNN < 9.15 has a Conv3d bug. Please install nvidia-cudnn-cu12==9.16.0.29, "
           "or set SGLANG_DISABLE_CUDNN_CHECK=1 to skip this check.")
    d = _with_message([{"env_named": {}}, {"needs_human": {"reason": "x"}}], msg)
    rem = _remediate(d)
    assert rem.env == {"SGLANG_DISABLE_CUDNN_CHECK": "1"} and rem.safe is False
    assert rem.provenance["env:SGLANG_DISABLE_CUDNN_CHECK"]["flag_from"] == "log"
    assert trust.check(rem, d, V0523)  # the log chose it: never applied unattended


def test_a_negated_unsafe_or_lower_case_variable_is_not_advised():
    for msg in ("do not set SGLANG_ENABLE_JIT_DEEPGEMM=1 with this model",
                "set SGLANG_X=$(reboot) to continue",
                "set sglang_x=1 to continue",
                "SGLANG_AITER_MLA_DECODE_BACKEND must be 'gluon' or 'asm', got cutlass"):
        assert _remediate(_with_message([{"env_named": {}}], msg)) is None, msg


def test_only_flashinfers_attention_modules_count_as_the_backend_in_use():
    entry = [{"switch_backend": {"when_frames": True, "choices": ["triton"]}}]
    prefill = "/usr/local/lib/python3.10/dist-packages/flashinfer/prefill.py"
    assert _remediate(_diagnosis(entry, frames=[prefill])).set == {"--attention-backend": "triton"}
    sampling = "/usr/local/lib/python3.10/dist-packages/flashinfer/sampling.py"
    assert _remediate(_diagnosis(entry, frames=[sampling])) is None


def test_a_backend_value_the_release_does_not_know_is_not_echoed_into_the_note():
    d = _diagnosis([{"switch_backend": {}}], {"attention_backend": "evil\x1b[31m", "model_path": "/m"})
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "flashinfer"} and "evil" not in rem.note and "\x1b" not in rem.note


def test_a_cuda_only_choice_says_so_when_the_platform_is_unknown():
    d = _diagnosis([{"switch_backend": {}}], frames=[ATTN.format("triton_backend")])
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "flashinfer"} and "on ROCm use triton or aiter" in rem.note


def test_the_feature_whose_package_failed_is_dropped_when_the_launch_set_it():
    frames = ["/x/sglang/srt/managers/scheduler.py", "/x/sglang/srt/speculative/eagle_worker.py"]
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], {"speculative_algorithm": "EAGLE", "model_path": "/m"},
                                frames=frames))
    assert rem.unset == ["--speculative-algorithm"] and "speculative decoding" in rem.note
    assert _remediate(_diagnosis([{"drop_in_frames": {}}], {"model_path": "/m"}, frames=frames)) is None
    hicache = ["/x/sglang/srt/mem_cache/hiradix_cache.py"]
    entries = [{"drop_in_frames": {}}, {"disable_feature": {"feature": "overlap_schedule"}}]
    rem = _remediate(_diagnosis(entries, frames=hicache))  # unknown settings: after the firm change
    assert rem.set == {"--disable-overlap-schedule": True}
    assert rem.alternatives[0].unset == ["--enable-hierarchical-cache"]
    assert _remediate(_diagnosis([{"drop_in_frames": {}}], frames=["/x/sglang/srt/layers/linear.py"])) is None


# -- session 21 (fix21): speculative decoding's gentler step, chain drafting -------------------


EAGLE3_DRAFT = "/x/sglang/srt/models/llama_eagle3.py"


def test_a_crash_in_a_draft_model_steps_back_to_chain_drafting_before_dropping_speculation():
    # a draft model's module (SGLang builds it only as speculative decoding's draft) is inside
    # speculative decoding; tree drafting (topk > 1) first goes back to a chain, then the feature goes
    args = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 4, "speculative_num_steps": 3,
            "speculative_num_draft_tokens": 8, "model_path": "/m"}
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], args, frames=[EAGLE3_DRAFT]))
    assert rem.set == {"--speculative-eagle-topk": 1, "--speculative-num-draft-tokens": 4}
    assert "chain" in rem.tradeoff and rem.safe is False
    assert rem.alternatives[0].unset == ["--speculative-algorithm"]


def test_chain_drafting_is_not_proposed_when_the_launch_already_drafts_a_chain_or_uses_ngram():
    frames = ["/x/sglang/srt/speculative/eagle_worker_v2.py"]
    args = {"speculative_algorithm": "EAGLE", "speculative_eagle_topk": 1, "model_path": "/m"}
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], args, frames=frames))
    assert rem.unset == ["--speculative-algorithm"] and not rem.alternatives
    args = {"speculative_algorithm": "NGRAM", "speculative_eagle_topk": 4, "model_path": "/m"}
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], args, frames=frames))
    assert "--speculative-eagle-topk" not in rem.set


def test_unknown_settings_give_chain_drafting_on_its_condition_first():
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], frames=[EAGLE3_DRAFT]))
    assert rem.set == {"--speculative-eagle-topk": 1} and "if your launch sets it above 1" in rem.note
    assert rem.alternatives[0].unset == ["--speculative-algorithm"]
    # a release without the flag (0.4.0): only the removal
    rem = _remediate(_diagnosis([{"drop_in_frames": {}}], frames=[EAGLE3_DRAFT]), flags.load_catalog("0.4.0"))
    assert rem is None or "--speculative-eagle-topk" not in rem.set


def test_a_target_models_module_is_not_a_draft():
    assert _remediate(_diagnosis([{"drop_in_frames": {}}], frames=["/x/sglang/srt/models/llama.py"])) is None


# -- session 11 (fixclass11): the class-level fixes people apply ------------------------------


def test_a_check_that_lists_its_accepted_values_gets_the_first_one_the_release_has():
    msg = ("KV4 MHA expects attention_backend to be one of ['triton', 'torch_native', 'flex_attention', "
           "'trtllm_mha'], but got flashinfer")
    d = _with_message([{"flag_named": {}}], msg)
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "triton"} and rem.safe is False
    assert rem.alternatives[0].set == {"--attention-backend": "torch_native"}
    assert trust.check(rem, d, V0523)  # the log picked it among the catalogue's choices: asked


def test_the_listed_value_the_message_got_and_values_the_release_lacks_are_skipped():
    d = _with_message([{"flag_named": {}}], "--attention-backend must be one of (no_such_backend, flashinfer, "
                                             "triton), got flashinfer")
    assert _remediate(d).set == {"--attention-backend": "triton"}
    # nothing listed that the release accepts: the named flag with a placeholder, as before
    d = _with_message([{"flag_named": {}}], "attention_backend should be one of [foo, bar], got baz")
    assert _remediate(d).set == {"--attention-backend": "<a value the message accepts>"}


def test_the_variable_a_message_names_with_its_flag_joins_the_change():
    msg = ("Speculative decoding is not compatible with radix cache when using --mamba-scheduler-strategy "
           "no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy "
           "extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.")
    rem = _remediate(_with_message([{"flag_named": {}}], msg), V059)
    assert rem.set == {"--mamba-scheduler-strategy": "extra_buffer"}
    assert rem.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    # 0.5.23 spells the flag --mamba-radix-cache-strategy: the variable still joins it
    assert _remediate(_with_message([{"flag_named": {}}], msg)).env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    rem = _remediate(_with_message([{"flag_named": {}}], "please use --mamba-scheduler-strategy extra_buffer; "
                                                         "do not set SGLANG_ENABLE_SPEC_V2=1"), V059)
    assert rem.env == {}


MEMPOOL = "/x/sglang/srt/mem_cache/memory_pool.py"


def test_a_failure_in_the_4bit_kv_cache_steps_to_fp8_then_auto():
    d = _with_message([{"kv_cache_dtype_step": {}}, {"needs_human": {"reason": "x"}}],
                      "cannot import name 'KVFP4QuantizeUtil' from 'sglang.srt.layers.quantization.kvfp4_tensor'")
    rem = _remediate(d)
    assert rem.set == {"--kv-cache-dtype": "fp8_e4m3"} and rem.safe is False
    assert rem.alternatives[0].set == {"--kv-cache-dtype": "auto"}
    assert not trust.check(rem, d, V0523)  # the ladder's value, not the log's


def test_an_e4m3_attention_kernel_refused_steps_the_cache_to_e5m2():
    d = _diagnosis([{"kv_cache_dtype_step": {}}], frames=[ATTN.format("triton_ops/decode_attention")])
    d.incident.exception = ExceptionInfo(type="ValueError", message="type fp8e4nv not supported in this architecture")
    assert _remediate(d).set == {"--kv-cache-dtype": "fp8_e5m2"}
    # the same refusal in a GEMM / MoE kernel is about the weights: no KV change
    d = _diagnosis([{"kv_cache_dtype_step": {}}], frames=["/x/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py"])
    d.incident.exception = ExceptionInfo(type="ValueError", message="type fp8e4nv not supported in this architecture")
    assert _remediate(d) is None


def test_no_kv_evidence_no_kv_change_and_the_launchs_value_picks_the_rung():
    d = _diagnosis([{"kv_cache_dtype_step": {}}], frames=[MEMPOOL])
    d.incident.exception = ExceptionInfo(type="RuntimeError", message="CUDA error: an illegal memory access")
    assert _remediate(d) is None
    d = _diagnosis([{"kv_cache_dtype_step": {}}], {"kv_cache_dtype": "fp8_e4m3"}, frames=[MEMPOOL])
    d.incident.exception = ExceptionInfo(type="AssertionError", message="kv_cache_dtype fp8 needs a scale")
    assert _remediate(d).set == {"--kv-cache-dtype": "fp8_e5m2"}


def test_the_sampling_backend_switch_needs_flashinfers_sampling_frames():
    entry = {"switch_backend": {"flag": "--sampling-backend", "choices": ["pytorch"],
                                "when_modules": ["flashinfer/sampling"]}}
    d = _diagnosis([entry], frames=["/x/site-packages/flashinfer/sampling.py"])
    rem = _remediate(d)
    assert rem.set == {"--sampling-backend": "pytorch"} and "attention" not in rem.note
    assert _remediate(_diagnosis([entry], frames=[ATTN.format("flashinfer_backend")])) is None
    assert _remediate(_diagnosis([entry], {"sampling_backend": "pytorch"},
                                 frames=["/x/site-packages/flashinfer/sampling.py"])) is None


def test_a_class_level_port_change_says_which_port_it_assumes_and_is_not_applied_unattended(monkeypatch):
    monkeypatch.setattr(remedies, "_port_free", lambda host, port, *rest: port == 30020)
    d = _diagnosis([{"needs_human": {"reason": "find what holds the port"}}, {"change_port": {"unsure": True}}],
                   {"port": 30000})
    rem = _remediate(d)
    assert rem.set == {"--port": 30020} and rem.safe is False and rem.needs_human
    assert "if the port taken is the server's own" in rem.note and "find what holds the port" in rem.note


def test_an_entry_with_when_modules_applies_only_to_tracebacks_through_those_modules():
    entries = [{"lower_flag": {"flag": "--mem-fraction-static", "by": 0.05, "min": 0.5}},
               {"lower_flag": {"flag": "--cuda-graph-max-bs", "factor": 0.5, "min": 8,
                               "when_modules": ["cuda_graph_runner"]}},
               {"lower_flag": {"flag": "--chunked-prefill-size", "factor": 0.5, "min": 512}}]
    args = {"mem_fraction_static": 0.85, "cuda_graph_max_bs": 64, "chunked_prefill_size": 4096}
    capture = _diagnosis(entries, args, frames=["/x/sglang/srt/model_executor/cuda_graph_runner.py"])
    rem = _remediate(capture, V059)
    assert rem.set == {"--mem-fraction-static": 0.8}
    assert rem.alternatives[0].set == {"--cuda-graph-max-bs": 32}
    serving = _diagnosis(entries, args, frames=["/x/sglang/srt/model_executor/model_runner.py"])
    rem = _remediate(serving, V059)
    assert [a.set for a in rem.alternatives] == [{"--chunked-prefill-size": 2048}]


def test_a_check_that_states_the_one_value_it_accepts_gets_that_value():
    rem = _remediate(_with_message([{"flag_named": {}}], "Pipeline parallelism is not supported for this model "
                                                         "(--pp-size must be 1)."), V059)
    assert rem.set == {"--pp-size": 1} and rem.safe is False
    rem = _remediate(_with_message([{"flag_named": {}}], "page_size should be set to 64 for the flashmla backend"), V059)
    assert rem.set == {"--page-size": 64}


def test_must_be_without_a_value_the_flag_takes_is_not_a_value():
    for msg in ("--tp-size must be a power of two", "tp_size must be positive",
                "--ep-size must be 1 or the same as the tensor parallel size",
                "--kv-cache-dtype must be fp8_e4m3 or fp8_e5m2"):
        rem = _remediate(_with_message([{"flag_named": {}}], msg), V059)
        assert rem is None or all(not isinstance(v, int) or v != 1 for v in rem.set.values()), msg
        assert rem is None or "<" in str(list(rem.set.values())) or rem.unset or rem.set.get("--kv-cache-dtype") is None, msg


# -- through the rule pack (rules/*.yaml): the new entries on real message shapes ------------------

SITE = "/usr/local/lib/python3.12/dist-packages"


def _answer(text: str):
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(RuleSet.load(user=False), command=None, version="0.5.23")
    events = pipe.feed(text.encode()) + pipe.finish()
    (d,) = [e["_diagnosis"] for e in events if e["event"] == "incident"]
    return d


def test_no_kernel_image_in_flashinfers_sampling_offers_the_pytorch_sampler():
    d = _answer("Traceback (most recent call last):\n"
                f'  File "{SITE}/sglang/srt/layers/sampler.py", line 120, in forward\n'
                "    ids = top_k_top_p_sampling_from_probs(probs)\n"
                f'  File "{SITE}/flashinfer/sampling.py", line 760, in top_k_top_p_sampling_from_probs\n'
                "    return module.top_k_top_p_sampling_from_probs(probs)\n"
                "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    assert d.rule == "kernel.unsupported_hw.no_kernel_image"
    # FlashInfer's attention kernels come from the same build as its sampling kernels: the lead
    # leaves both (remedies.FEATURES["flashinfer"]); the sampler alone stays an alternative
    assert d.remediation.set == {"--attention-backend": "triton", "--sampling-backend": "pytorch"}
    assert {"--sampling-backend": "pytorch"} in [alt.set for alt in d.remediation.alternatives]


def test_an_e4m3_refusal_in_a_triton_attention_kernel_steps_the_kv_cache_in_the_rule_pack():
    d = _answer("Traceback (most recent call last):\n"
                f'  File "{SITE}/sglang/srt/layers/attention/triton_ops/decode_attention.py", line 718, in decode_attention_fwd\n'
                "    _decode_att_m_fwd(q, k_buffer)\n"
                f'  File "{SITE}/triton/compiler/compiler.py", line 80, in make_ir\n'
                "    return ast_to_ttir(self.fn, self)\n"
                "triton.compiler.errors.CompilationError: at 1:0:\n"
                "ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
                "('fp8e4b15', 'fp8e5')\")\n")
    assert d.rule == "kernel.unsupported_hw.fp8e4nv"
    assert d.remediation.set == {"--kv-cache-dtype": "fp8_e5m2"}


def test_a_message_that_says_which_way_a_numeric_flag_must_move_gets_a_step_that_way():
    d = _with_message([{"flag_named": {}}], "Not enough memory. Please try to increase --mem-fraction-static.",
                      {"mem_fraction_static": 0.8, "model_path": "/m"})
    rem = _remediate(d)
    assert rem.set == {"--mem-fraction-static": 0.85} and rem.safe is False
    d = _with_message([{"flag_named": {}}], "The pool is too small: reduce --max-running-requests or raise "
                                             "--swa-full-tokens-ratio", {"max_running_requests": 64, "model_path": "/m"})
    rem = _remediate(d)
    assert rem.set == {"--max-running-requests": 32}
    assert list(rem.alternatives[0].set) == ["--swa-full-tokens-ratio"]
    # no direction: the placeholder, as before
    d = _with_message([{"flag_named": {}}], "--max-running-requests is invalid for this model")
    assert _remediate(d).set == {"--max-running-requests": "<a value the message accepts>"}


# -- session 21 (fix21): DeepGEMM's JIT kernels off, SGLang's own switch -------------------------


def test_a_failure_in_deepgemm_turns_its_jit_kernels_off_under_both_spellings():
    frames = ["/x/sglang/srt/managers/scheduler.py",
              "/x/sglang/srt/layers/quantization/deep_gemm_wrapper/compile_utils.py",
              "/usr/lib/python3/dist-packages/deep_gemm/jit/compiler.py"]
    d = _diagnosis([{"deepgemm_off": {}}, {"needs_human": {"reason": "install nvcc"}}], frames=frames)
    rem = _remediate(d)
    assert rem.env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0", "SGL_ENABLE_JIT_DEEPGEMM": "0"}
    assert rem.safe is False and "Triton / CUTLASS" in rem.tradeoff
    assert not trust.check(rem, d, V0523) or rem.safe is False  # a rule's value, still asked


def test_deepgemm_named_only_in_the_message_counts_and_nothing_else_does():
    d = _with_message([{"deepgemm_off": {}}],
                      "Failed to compile /root/.cache/deep_gemm/cache/kernel.gemm_fp8_fp8_bf16_nt.1a2b/kernel.cu")
    assert _remediate(d).env["SGLANG_ENABLE_JIT_DEEPGEMM"] == "0"
    # a JIT build of another library (FlashInfer) is not DeepGEMM's
    d = _with_message([{"deepgemm_off": {}}], "Ninja build failed for flashinfer batch_prefill")
    assert _remediate(d) is None
    assert _remediate(_diagnosis([{"deepgemm_off": {}}], frames=[ATTN.format("flashinfer_backend")])) is None
