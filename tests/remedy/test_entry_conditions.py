"""Entry-level conditions of a rule's remedy list (remedies._passes_words / _passes_phase) and
the class rules whose fixes use them: a change that holds for one transport, one subsystem or
one phase is offered only when the failure's words or phase say it is that one."""

from __future__ import annotations

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.model import Diagnosis, ExceptionInfo, Frame, Incident, Launch, Line
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")
V059 = flags.load_catalog("0.5.9")
SGL = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"
RULES = RuleSet.load(user=False)


def _diagnosis(remedy: list[dict], *, message: str = "", signal: str = "", frames: list[str] = (),
               phase: str = "unknown", server_args: dict | None = None, rule: str = "class.test") -> Diagnosis:
    lines = [Line(number=1, text=signal)] if signal else []
    inc = Incident(kind="traceback" if message else "signal", first_line=1, last_line=1,
                   frames=[Frame(file=f, line=1, function="f") for f in frames], lines=lines, signals=list(lines))
    if message:
        etype, _, msg = message.partition(": ")
        inc.exception = ExceptionInfo(etype, msg)
        inc.chain = [inc.exception]
    launch = Launch(index=0, line=1, server_args=server_args or {})
    return Diagnosis(incident=inc, rule=rule, category="other", phase=phase, remedies=remedy, launch=launch)


def _remediate(d: Diagnosis, catalog=V0523):
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None)


def _changes(rem) -> list[tuple]:
    out = []
    for r in [rem, *rem.alternatives] if rem else []:
        out.append((tuple(sorted(r.set.items())), tuple(sorted(r.unset)), tuple(sorted(r.env.items()))))
    return out


def test_when_words_picks_the_change_the_failures_words_name():
    entries = [{"set_env": {"name": "NCCL_IB_DISABLE", "value": "1", "when_words": ["net/ib"]}},
               {"set_env": {"name": "NCCL_P2P_DISABLE", "value": "1"}}]
    ib = _remediate(_diagnosis(entries, signal="NCCL WARN NET/IB : Got completion from peer with error 12"))
    assert ib.env == {"NCCL_IB_DISABLE": "1"} and ib.alternatives[0].env == {"NCCL_P2P_DISABLE": "1"}
    plain = _remediate(_diagnosis(entries, message="RuntimeError: NCCL error: unhandled system error"))
    assert plain.env == {"NCCL_P2P_DISABLE": "1"} and not plain.alternatives


def test_when_words_reads_the_failures_own_words_not_its_frames():
    entries = [{"set_env": {"name": "NCCL_IB_DISABLE", "value": "1", "when_words": ["infiniband"]}}]
    d = _diagnosis(entries, message="RuntimeError: collective failed", frames=[SGL + "distributed/infiniband_helpers.py"])
    assert _remediate(d) is None


def test_when_phase_offers_a_change_only_in_that_phase_and_never_in_an_unknown_one():
    entries = [{"disable_feature": {"feature": "cuda_graph", "when_phase": ["startup.cuda_graph"]}},
               {"disable_feature": {"feature": "overlap_schedule", "when_phase": ["serving"]}}]
    args = {"disable_cuda_graph": False, "disable_overlap_schedule": False}
    capture = _remediate(_diagnosis(entries, message="AssertionError: x", phase="startup.cuda_graph", server_args=args), V059)
    assert capture.set == {"--disable-cuda-graph": True} and not capture.alternatives
    serving = _remediate(_diagnosis(entries, message="AssertionError: x", phase="serving", server_args=args), V059)
    assert serving.set == {"--disable-overlap-schedule": True}
    assert _remediate(_diagnosis(entries, message="AssertionError: x", server_args=args), V059) is None


def _rule(rule_id: str) -> list[dict]:
    rule = RULES.get(rule_id)
    assert rule is not None, rule_id
    return [dict(e) for e in rule.remedy]


def test_an_nccl_signal_naming_infiniband_gets_ncclss_ib_switch_first():
    d = _diagnosis(_rule("class.nccl.signal"), rule="class.nccl.signal",
                   signal="[rank3]: torch.distributed.DistBackendError: NCCL error ... NET/IB : Got async event : port error")
    rem = _remediate(d)
    assert rem.env == {"NCCL_IB_DISABLE": "1"} and rem.needs_human and rem.safe is False
    # no transport named: one machine's PCIe path, then SGLang's own all-reduce
    d = _diagnosis(_rule("class.nccl.signal"), rule="class.nccl.signal",
                   signal="[rank0]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout")
    changes = _changes(_remediate(d))
    assert changes[0][2] == (("NCCL_P2P_DISABLE", "1"),)
    assert changes[1][0] == (("--disable-custom-all-reduce", True),)


def test_a_mooncake_transport_failure_offers_the_other_transfer_backend():
    d = _diagnosis(_rule("class.nccl.transport"), rule="class.nccl.transport",
                   signal="E1204 transfer_engine.cpp:88] Mooncake: failed to register memory region")
    rem = _remediate(d)
    assert rem.set == {"--disaggregation-transfer-backend": "nixl"}
    assert "--disaggregation-ib-device" in rem.alternatives[0].set  # asked for: only the user knows the NICs


def test_a_multinode_handshake_asks_for_the_interface():
    d = _diagnosis(_rule("class.nccl.multinode_handshake"), rule="class.nccl.multinode_handshake",
                   message="RuntimeError: Failed to receive worker ports from node 0 within timeout")
    rem = _remediate(d)
    assert set(rem.env) == {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"} and rem.safe is False


def test_an_internal_check_in_dp_attention_while_serving_drops_dp_attention():
    d = _diagnosis(_rule("class.internal.check"), rule="class.internal.check", phase="serving",
                   message="AssertionError: ", server_args={"enable_dp_attention": True, "tp_size": 8, "dp_size": 8},
                   frames=[SGL + "managers/scheduler.py", SGL + "models/deepseek_v2.py", SGL + "layers/dp_attention.py"])
    rem = _remediate(d)
    assert rem.unset == ["--enable-dp-attention"] and rem.needs_human


def test_an_internal_check_during_capture_turns_cuda_graphs_off():
    d = _diagnosis(_rule("class.internal.check"), rule="class.internal.check", phase="startup.cuda_graph",
                   message="AssertionError: ", server_args={"disable_cuda_graph": False},
                   frames=[SGL + "model_executor/model_runner.py", SGL + "layers/logits_processor.py"])
    assert _remediate(d, V059).set == {"--disable-cuda-graph": True}


def test_a_crash_in_the_radix_tree_turns_the_prefix_cache_off():
    d = _diagnosis([{"disable_in_frames": {"features": ["radix_cache"]}}], message="AssertionError: ",
                   server_args={"disable_radix_cache": False},
                   frames=[SGL + "managers/scheduler.py", SGL + "mem_cache/radix_cache.py"])
    assert _remediate(d).set == {"--disable-radix-cache": True}
    hicache = _diagnosis([{"disable_in_frames": {"features": ["radix_cache"]}}], message="AssertionError: ",
                         server_args={"disable_radix_cache": False}, frames=[SGL + "mem_cache/hiradix_cache.py"])
    assert _remediate(hicache) is None


def test_a_quantization_the_gpu_refuses_drops_the_launchs_override():
    d = _diagnosis(_rule("kernel.unsupported_hw.quantization_capability"),
                   rule="kernel.unsupported_hw.quantization_capability",
                   message="ValueError: The quantization method fp8 is not supported for the current GPU. "
                           "Minimum capability: 80. Current capability: 75.",
                   server_args={"quantization": "fp8", "model_path": "/m"})
    rem = _remediate(d)
    assert rem.unset == ["--quantization"] and rem.safe is False
    # not set by the launch: nothing to remove, the advice stays
    d = _diagnosis(_rule("kernel.unsupported_hw.quantization_capability"),
                   rule="kernel.unsupported_hw.quantization_capability",
                   message="ValueError: The quantization method fp8 is not supported for the current GPU.",
                   server_args={"quantization": None, "model_path": "/m"})
    rem = _remediate(d)
    assert rem is None or (not rem.unset and not rem.set)


def test_unless_words_keeps_a_one_machine_default_off_an_inter_node_network_failure():
    d = _diagnosis(_rule("class.nccl.signal"), rule="class.nccl.signal",
                   signal="NCCL WARN NET/OFI aws-ofi-nccl initialization failed")
    rem = _remediate(d)
    assert rem is None or all("NCCL_P2P_DISABLE" not in r.env and "--disable-custom-all-reduce" not in r.set
                              for r in [rem, *rem.alternatives])
