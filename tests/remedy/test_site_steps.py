"""Session 16 (docs/FIXES-SEEN.md): changes for failures whose answer named a category and no
change, or whose fix hung on a setting the frames show.

- a MoE layer's experts refused by their block-quantization check ("The output_size of gate's
  and up's weight = N is not divisible by weight quantization block_n = B"): expert parallelism
  (``expert_parallel``: 0.4.x ``--enable-ep-moe``, later ``--ep-size`` = the launch's TP), then a
  smaller TP; a class-level value check raised while the experts are built gets the same;
- a guess whose category has no usual change, on a traceback the text shows: the change the
  deepest frames' site names (``guarded.SITE_STEPS``), worded as a guess;
- a capture whose frames pass DeepEP's dispatcher: ``--deepep-mode low_latency`` first, ``auto``
  next (session 24: what sglang#6017 and #6218 confirmed);
- guesses of an unsupported model / a taken port: ``--model-impl transformers`` / another port.
"""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

from sglang_doctor.model import Diagnosis, Frame, Incident, Launch
from sglang_doctor.remedy import flags, guarded, remedies

V0523 = flags.load_catalog("0.5.23")
V046 = flags.load_catalog("0.4.6")
V059 = flags.load_catalog("0.5.9")

SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"
EXPERTS = [Frame(file=SITE + "models/qwen3_moe.py", line=237, function="__init__",
                 source="self.experts = get_moe_impl_class(quant_config)("),
           Frame(file=SITE + "layers/moe/fused_moe_triton/layer.py", line=292, function="__init__",
                 source="self.quant_method.create_weights(")]
DENSE = [Frame(file=SITE + "models/qwen3.py", line=434, function="__init__", source="self.model = Qwen3Model("),
         Frame(file=SITE + "layers/linear.py", line=447, function="__init__", source="self.quant_method.create_weights(")]


def _remediate(d: Diagnosis, catalog=V0523, command=None):
    return remedies.remediate(d, command=command, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


def _all(rem):
    return [rem, *rem.alternatives] if rem is not None else []


def _with(entries, frames, server_args=None, rule="test.rule", category="args.invalid", fallback=None):
    incident = Incident(kind="traceback", first_line=1, last_line=3)
    incident.frames = list(frames)
    return Diagnosis(incident=incident, rule=rule, category=category, remedies=entries, fallback=fallback,
                     launch=Launch(index=0, line=1, server_args=server_args or {}))


def _guess(category, frames, server_args=None):
    fallback = {"missing": "the traceback was cut above its last line", "next_step": "sglang-doctor explain LOG",
                "best_guess": {"category": category, "confidence": 0.3, "why": "test"}}
    return _with([], frames, server_args, rule="unknown", category=category, fallback=fallback)


# -- expert parallelism ----------------------------------------------------------------------------


def test_the_moe_block_check_proposes_expert_parallelism_first():
    inc = explain_one_incident(FIXTURES / "args" / "moe_block_fp8_experts_059.log")
    rem = inc["remediation"]
    assert inc["rule"] == "args.invalid.moe_block_quant_experts" and inc["category"] == "args.invalid"
    assert rem["set"] == {"--ep-size": 4}  # the dump's tp_size
    assert rem["safe"] is False and "class-level" not in rem["note"]  # the rule's own message chose it
    assert rem["alternatives"][0]["set"] == {"--tp-size": 2}


def test_expert_parallelism_is_spelled_for_the_release():
    entry = [{"expert_parallel": {}}]
    old = _remediate(_with(entry, EXPERTS, {"tp_size": 8}), catalog=V046)
    assert old.set == {"--enable-ep-moe": True}  # 0.4.x: ep_size follows tp_size
    new = _remediate(_with(entry, EXPERTS, {"tp_size": 8}), catalog=V059)
    assert new.set == {"--ep-size": 8} and not new.needs_human


def test_an_unknown_tp_size_is_asked_for_and_a_launch_already_on_ep_gets_nothing():
    entry = [{"expert_parallel": {}}]
    asked = _remediate(_with(entry, EXPERTS), catalog=V059)
    assert asked.set == {"--ep-size": "<your --tp-size>"} and asked.needs_human and asked.safe is False
    assert _remediate(_with(entry, EXPERTS, {"tp_size": 8, "ep_size": 8}), catalog=V059) is None
    assert _remediate(_with(entry, EXPERTS, {"tp_size": 8, "enable_ep_moe": True}), catalog=V046) is None


def test_when_frames_holds_only_for_experts_being_built():
    entry = [{"expert_parallel": {"when_frames": True}}]
    assert _remediate(_with(entry, EXPERTS, {"tp_size": 4}), catalog=V059).set == {"--ep-size": 4}
    assert _remediate(_with(entry, DENSE, {"tp_size": 4}), catalog=V059) is None
    # the experts' forward pass (not their construction) is no TP-split check
    forward = [Frame(file=SITE + "layers/moe/fused_moe_triton/layer.py", line=900, function="forward")]
    assert _remediate(_with(entry, forward, {"tp_size": 4}), catalog=V059) is None


def test_a_class_value_check_while_building_experts_offers_ep_and_a_smaller_tp(tmp_path):
    log = tmp_path / "experts.log"
    log.write_text(
        "[2025-12-05 15:02:40 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{SITE}models/qwen3_moe.py", line 237, in __init__\n'
        "    self.experts = get_moe_impl_class(quant_config)(\n"
        f'  File "{SITE}layers/moe/fused_moe_triton/layer.py", line 226, in __init__\n'
        "    raise ValueError(\n"
        "ValueError: moe_intermediate_size 1536 must be divisible by the tensor parallel split 5\n")
    inc = explain_one_incident(log, "--sglang-version", "0.5.9")
    assert inc["rule"] == "class.args.value_check"
    changes = _all_json(inc["remediation"])
    assert changes[0]["set"] == {"--ep-size": "<your --tp-size>"} and changes[0]["needs_human"]
    assert any("--tp-size" in c["set"] for c in changes[1:])  # the direction, its value asked


def _all_json(rem):
    return [rem, *rem["alternatives"]]


# -- guesses: the site of the deepest frames ---------------------------------------------------------


def test_a_guess_with_no_usual_change_takes_the_frames_site():
    rem = _remediate(_guess("other", EXPERTS, {"tp_size": 8}), catalog=V059)
    assert rem.set == {"--ep-size": 8}
    assert rem.needs_human and rem.safe is False and rem.note.startswith("if this is a failure in the code")
    allreduce = [Frame(file=SITE + "distributed/device_communicators/custom_all_reduce.py", line=1, function="f")]
    rem = _remediate(_guess("args.invalid", allreduce))
    assert rem.set == {"--disable-custom-all-reduce": True} and rem.needs_human
    spec = [Frame(file=SITE + "speculative/eagle_worker.py", line=1, function="__init__")]
    rem = _remediate(_guess("other", spec))
    # speculative decoding: chain drafting first (it stays on), then without it (session 21)
    assert rem.set == {"--speculative-eagle-topk": 1} and rem.safe is False and rem.needs_human
    assert "--speculative-algorithm" in rem.alternatives[0].unset and rem.alternatives[0].safe is False


def test_a_guess_whose_frames_name_no_site_gets_nothing():
    plain = [Frame(file=SITE + "managers/scheduler.py", line=1, function="__init__")]
    for category in ("other", "args.invalid", "memory.host_oom"):
        assert _remediate(_guess(category, plain)) is None, category
        assert _remediate(_guess(category, [])) is None, category


def test_the_cut_moe_fragment_through_the_cli_gets_expert_parallelism_as_a_guess(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(
        f'  File "{SITE}models/qwen2_moe.py", line 416, in <lambda>\n'
        "    lambda idx, prefix: decoder_layer_type(\n"
        f'  File "{SITE}models/qwen3_moe.py", line 534, in __init__\n'
        "    self.mlp = Qwen3MoeSparseMoeBlock(\n"
        f'  File "{SITE}models/qwen3_moe.py", line 105, in __init__\n'
        "    self.experts = get_moe_impl_class()(\n"
        f'  File "{SITE}\n')
    inc = explain_one_incident(log, "--sglang-version", "0.5.9")
    assert inc["rule"] == "unknown"
    rem = inc["remediation"]
    assert rem["set"] == {"--ep-size": "<your --tp-size>"} and rem["needs_human"] and rem["safe"] is False


# -- DeepEP under graph capture ----------------------------------------------------------------------

DEEPEP = [Frame(file=SITE + "model_executor/cuda_graph_runner.py", line=505, function="capture_one_batch_size"),
          Frame(file=SITE + "layers/moe/token_dispatcher/deepep.py", line=300, function="dispatch")]


def test_a_capture_through_deepep_leads_with_low_latency_mode():
    rem = _remediate(_guess("cuda_graph", DEEPEP), catalog=V059)
    assert rem.set == {"--deepep-mode": "low_latency"} and rem.needs_human
    # the other mode that captures, 'auto', is the first alternative
    assert rem.alternatives[0].set == {"--deepep-mode": "auto"}
    # the launch already runs low_latency: neither is proposed (auto's decode is low_latency);
    # SGLang's list follows
    rem = _remediate(_guess("cuda_graph", DEEPEP, {"deepep_mode": "low_latency"}), catalog=V059)
    assert not any("--deepep-mode" in o.set for o in _all(rem))
    # the launch runs auto: low_latency only
    rem = _remediate(_guess("cuda_graph", DEEPEP, {"deepep_mode": "auto"}), catalog=V059)
    assert [o.set["--deepep-mode"] for o in _all(rem) if "--deepep-mode" in o.set] == ["low_latency"]
    # no DeepEP in the frames: the launch's mode is not guessed
    rem = _remediate(_guess("cuda_graph", DEEPEP[:1]), catalog=V059)
    assert not any("--deepep-mode" in o.set for o in _all(rem))


def test_the_capture_rules_offer_low_latency_only_with_deepep_frames(tmp_path):
    head = ("[2025-05-12 13:58:24 DP3 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{SITE}model_executor/cuda_graph_runner.py", line 505, in capture_one_batch_size\n'
            "    out = run_once()\n")
    deepep = (f'  File "{SITE}layers/moe/token_dispatcher/deepep.py", line 300, in dispatch\n'
              "    return self._dispatch_core(hidden_states)\n")
    tail = "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was encountered\n"
    with_deepep = tmp_path / "deepep.log"
    with_deepep.write_text(head + deepep + tail)
    without = tmp_path / "plain.log"
    without.write_text(head + tail)
    rem = explain_one_incident(with_deepep, "--sglang-version", "0.5.9")["remediation"]
    assert rem["set"] == {"--deepep-mode": "low_latency"}
    assert rem["alternatives"][0]["set"] == {"--deepep-mode": "auto"}
    rem = explain_one_incident(without, "--sglang-version", "0.5.9")["remediation"]
    assert not any("--deepep-mode" in c["set"] for c in _all_json(rem))


# -- guesses of an unsupported model or a taken port -------------------------------------------------


def test_an_unsupported_model_guess_offers_the_transformers_implementation():
    rem = _remediate(_guess("model.unsupported", []))
    assert rem.set == {"--model-impl": "transformers"} and rem.needs_human and rem.safe is False
    assert rem.alternatives[0].set == {"--trust-remote-code": True}
    # a release without --model-impl (before 0.4.9.post3): only the checkpoint's code
    old = _remediate(_guess("model.unsupported", []), catalog=V046)
    assert old.set == {"--trust-remote-code": True}


def test_a_port_guess_offers_another_port_as_advice():
    rem = _remediate(_guess("network.port", []))
    assert "--port" in rem.set and rem.needs_human and rem.safe is False
    assert rem.note.startswith("if this is a port that was already taken")


def test_every_site_step_names_a_known_remedy():
    for entry in guarded.SITE_STEPS + [guarded.DEEPEP_CAPTURE, guarded.DEEPEP_CAPTURE_AUTO]:
        ((name, _params),) = entry.items()
        assert name in remedies.REGISTRY


# -- a collective timeout before the server was ready -------------------------------------------------

WATCHDOG = ("[rank0]:[E301 10:10:32.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
            "milliseconds before timing out.\n")


def test_a_collective_timeout_at_start_up_offers_a_longer_process_group_timeout(tmp_path):
    log = tmp_path / "startup.log"
    log.write_text(
        "[2025-03-01 10:00:00] server_args=ServerArgs(model_path='/models/DeepSeek-R1', tp_size=16, nnodes=2, "
        "node_rank=0, dist_init_addr='10.0.0.1:5000', mem_fraction_static=0.85)\n"
        "[2025-03-01 10:00:20 TP0] Init torch distributed begin.\n"
        "[2025-03-01 10:00:31 TP0] Init torch distributed ends. mem usage=1.02 GB\n"
        "[2025-03-01 10:00:32 TP0] Load weight begin. avail mem=77.48 GB\n" + WATCHDOG)
    inc = explain_one_incident(log, "--sglang-version", "0.5.9")
    assert inc["rule"] == "nccl.collective_timeout" and inc["phase"].startswith("startup")
    changes = _all_json(inc["remediation"])
    assert {"--dist-timeout": 1800} in [c["set"] for c in changes[:2]]  # primary or first alternative


def test_a_collective_timeout_while_serving_or_unplaced_gets_no_longer_timeout():
    for path in (FIXTURES / "nccl" / "collective_timeout_0523.log", FIXTURES / "nccl" / "collective_timeout_folded_fragment.log"):
        changes = _all_json(explain_one_incident(path)["remediation"])
        assert not any("--dist-timeout" in c["set"] for c in changes), path


# -- an address a distributed library could not use ---------------------------------------------------


def test_an_address_refused_to_torch_distributed_asks_for_the_interface(tmp_path):
    log = tmp_path / "address.log"
    log.write_text(
        "[2026-05-09 10:02:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 1520, in init_process_group\n'
        "    store, rank, world_size = next(rendezvous_iterator)\n"
        "torch.distributed.DistNetworkError: The client socket has failed to connect to [fe80::1%eth0]:5000 "
        "(errno: 97 - Address family not supported by protocol).\n")
    inc = explain_one_incident(log)
    rem = inc["remediation"]
    # torch.distributed's own exception type names it (nccl.torch_distributed_exception); the
    # interface to use is the change, as class.network.address gave before that rule
    assert inc["rule"] in ("nccl.torch_distributed_exception", "class.network.address")
    assert set(rem["env"]) == {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}
    assert all(v.startswith("<") for v in rem["env"].values()) and rem["needs_human"] and rem["safe"] is False


def test_an_address_refused_to_zmq_keeps_the_advice_only():
    rem = explain_one_incident(FIXTURES / "classes" / "network_address_family.log")["remediation"]
    assert not rem["env"] and not rem["set"]


def test_a_guess_on_an_attention_backend_or_the_kv_cache_takes_their_switch():
    attn = [Frame(file=SITE + "layers/attention/flashinfer_backend.py", line=1, function="__init__")]
    rem = _remediate(_guess("args.invalid", attn), catalog=V059)
    assert rem.set.get("--attention-backend") not in (None, "flashinfer") and rem.needs_human
    kv = [Frame(file=SITE + "mem_cache/memory_pool.py", line=1, function="__init__", source="KVFP4QuantizeUtil.x")]
    d = _guess("other", kv)
    d.incident.signals = []
    from sglang_doctor.model import ExceptionInfo
    d.incident.exception = ExceptionInfo(type="ImportError", message="cannot import name 'KVFP4QuantizeUtil'")
    rem = _remediate(d)
    assert rem.set == {"--kv-cache-dtype": "fp8_e4m3"} and rem.needs_human and rem.safe is False


def test_the_deepep_dispatcher_is_dropped_in_the_releases_own_spelling():
    entry = [{"drop_in_frames": {}}]
    old = [Frame(file=SITE + "layers/moe/ep_moe/token_dispatcher.py", line=1, function="dispatch")]
    rem = _remediate(_with(entry, old, category="runtime.crash"), catalog=V046)  # 0.4.x: --enable-deepep-moe
    assert rem.unset == ["--enable-deepep-moe"]
    new = [Frame(file=SITE + "layers/moe/token_dispatcher/deepep.py", line=1, function="dispatch")]
    rem = _remediate(_with(entry, new, category="runtime.crash"), catalog=V059)
    assert rem.unset == ["--moe-a2a-backend"]


def test_a_kernel_build_guess_through_deepgemm_turns_it_off_first():
    # session 21: DeepGEMM's JIT build (its wrapper in the frames) takes SGLang's switch, not the
    # FlashInfer-only attention change
    frames = [Frame(file=SITE + "layers/deep_gemm_wrapper/compile_utils.py", line=1, function="build")]
    rem = _remediate(_guess("kernel.build", frames))
    assert rem.env.get("SGLANG_ENABLE_JIT_DEEPGEMM") == "0" and rem.needs_human and rem.safe is False
    rem = _remediate(_guess("other", frames))  # a guess with no usual change: the site step
    assert rem.env.get("SGL_ENABLE_JIT_DEEPGEMM") == "0"
