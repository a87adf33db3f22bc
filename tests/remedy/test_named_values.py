"""Values for a flag a check's message names (remedies.flag_named) and spellings for a release
before 0.4.0 (frame_releases.pre_040_span / respell_pre_040).

A message that states a numeric bound or a divisibility on the flag it names gives the value
that passes it, computed from the message's own numbers (never copied from free text) and
validated by the release's catalogue; advice, never applied unattended.  A log whose release
is not named but whose traceback passes modules only the releases before 0.4.0 had gets its
changes spelled as those releases spelled them (they have no catalogue).

Messages are SGLang's own (the releases and fixtures named at each test)."""

from __future__ import annotations

from conftest import FIXTURES, ROOT, explain_one_incident

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, frame_releases, remedies, trust

V0523 = flags.load_catalog("0.5.23")


def _named(message: str, server_args: dict | None = None):
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo("ValueError", message)
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=[{"flag_named": {}}],
                  launch=Launch(index=0, line=1, server_args=server_args or {}))
    rem = remedies.remediate(d, command=None, version="0.5.23", catalog=V0523, hardware=None, model_config=None,
                             warnings=[])
    return d, rem


# -- a bound or a divisibility the message states ---------------------------------------------------

# 0.4.10-0.5.23 model_runner.init_threads_binding (fixtures/args/cpu_tp_over_numa_nodes_0410.log)
NUMA = ("SGLANG_CPU_OMP_THREADS_BIND is not set, in this case, tp_size 4 should be smaller than or equal to "
        "number of numa node on the machine 2. If you need tp_size to be larger than number of numa node, please "
        "set the CPU cores for each tp rank via SGLANG_CPU_OMP_THREADS_BIND explicitly.")
# 0.5.x scheduler's KV pool sizing warning (fixtures/healthy/profiled_value_positive_059.log)
PROFILED = "max_total_tokens=500000 is larger than the profiled value 412203. Use the profiled value instead."
PROFILED_NEGATIVE = "max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead."


def test_an_upper_bound_on_the_named_flag_gives_that_bound():
    d, rem = _named(NUMA)
    assert rem.set == {"--tp-size": 2}, "before: '<a value the message accepts>'"
    assert rem.needs_human and rem.safe is False and "the bound the message states" in rem.note
    assert rem.provenance["--tp-size"]["value_from"] == "log"  # the message's numbers picked it
    assert trust.check(rem, d, V0523)  # never applied unattended


def test_a_complaint_that_the_value_is_larger_than_a_figure_gives_the_figure():
    assert _named(PROFILED)[1].set == {"--max-total-tokens": 412203}
    # a figure at or below zero is no size to set: the flag stays the user's to choose
    assert _named(PROFILED_NEGATIVE)[1].set == {"--max-total-tokens": "<a value the message accepts>"}


def test_a_value_that_already_passes_the_bound_is_not_the_fix():
    passing = NUMA.replace("tp_size 4 should", "tp_size 2 should")
    assert _named(passing)[1].set == {"--tp-size": "<a value the message accepts>"}


def test_a_lower_bound_and_strict_bounds():
    # 0.5.23 lora_hook: "max_loaded_loras should be greater than or equal to max_loras_per_batch"
    # (with its figures, as a launch's values fill it)
    rem = _named("max_loaded_loras (2) should be greater than or equal to max_loras_per_batch (4).")[1]
    assert rem.set == {"--max-loaded-loras": 4}
    assert _named("--max-running-requests must be greater than 0, got 0")[1].set == {"--max-running-requests": 1}
    # no number at all (0.5.23 validation_hook): nothing to compute
    assert _named("chunked_prefill_size must be divisible by page_size")[1].set == \
        {"--chunked-prefill-size": "<a value the message accepts>"}


def test_a_divisor_flag_gets_a_value_dividing_both_numbers():
    # 0.5.23 layers/dcp/comm.py dcp_a2a_lse_reduce
    rem = _named("num_heads (12) must be divisible by dcp_size (8)")[1]
    assert rem.set == {"--dcp-size": 4}  # gcd: divides the heads and still divides what 8 divided
    rem = _named("chunked_prefill_size (8100) must be divisible by page_size (64)")[1]
    assert rem.set == {"--chunked-prefill-size": 8064}  # the flag that must be a multiple is rounded down


def test_the_dcp_fixture_through_the_cli():
    inc = explain_one_incident(FIXTURES / "classes" / "args_value_check_names_setting_serving_0523.log")
    assert inc["remediation"]["set"] == {"--dcp-size": 4}


# -- spellings of the releases before 0.4.0 ------------------------------------------------------

# a 0.2.0 traceback (sgl-project/sglang#737): srt/managers/controller/ existed in 0.1.17-0.2.x only
JUMP_FORWARD_020 = ROOT / "corpus" / "field11" / "014-runtime.crash-0-2-0-jump-forward-decode-frames-cut.log"
NEW_FRAME = '  File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 10, in event_loop\n'


def test_frames_of_modules_only_old_releases_had_date_the_log_before_040():
    lines = JUMP_FORWARD_020.read_text(encoding="utf-8").splitlines()
    span = frame_releases.pre_040_span(lines)
    assert span is not None and flags.version_key(span[0]) <= flags.version_key("0.2.0") <= flags.version_key(span[1])
    assert flags.version_key(span[1]) < flags.version_key("0.4.0")
    assert frame_releases.pre_040_span(lines + [NEW_FRAME]) is None  # a 0.4.x+ module too: not before 0.4.0
    assert frame_releases.pre_040_span([NEW_FRAME]) is None
    assert frame_releases.pre_040_span(["no frames"]) is None
    assert frame_releases.old_spelling("--disable-jump-forward", span) == "--disable-regex-jump-forward"
    assert frame_releases.old_spelling("--disable-jump-forward", ("0.3.5.post1", "0.3.6")) is None


def test_an_old_fragment_gets_its_releases_spelling():
    rem = explain_one_incident(JUMP_FORWARD_020)["remediation"]
    assert rem["set"] == {"--disable-regex-jump-forward": True}, "before: --disable-jump-forward (0.3.5.post1+)"
    assert "later releases: --disable-jump-forward" in rem["note"]


def test_a_named_release_keeps_its_own_spelling():
    rem = explain_one_incident(JUMP_FORWARD_020, "--sglang-version", "0.4.0")["remediation"]
    assert rem["set"] == {"--disable-jump-forward": True}


# a 2080 Ti on a 0.2.x release (flashinfer 0.1.1: no kernel image): 0.1.18-0.3.x turn FlashInfer
# off with --disable-flashinfer, which their own help later retires for '--attention-backend triton'
FLASHINFER_02X = ROOT / "corpus" / "late" / "040-kernel.unsupported_hw-2080ti-flashinfer-011-no-kernel-image-prefill.log"
# a 0.1.x router-era traceback (srt/managers/router/): none of the forward-path switches existed
ROUTER_01X = ROOT / "corpus" / "fresh" / "023-runtime.crash-req-pool-none-low-memfrac.log"


def test_an_old_release_gets_the_equivalent_its_own_help_names():
    # both of FlashInfer's backends (remedies.FEATURES["flashinfer"]), as 0.2.x's help retires
    # each: --disable-flashinfer for '--attention-backend triton', --disable-flashinfer-sampling
    # for '--sampling-backend pytroch' (sic: the choice it misspells; sgl-project/sglang#931)
    rem = explain_one_incident(FLASHINFER_02X)["remediation"]
    assert rem["set"] == {"--disable-flashinfer": True, "--disable-flashinfer-sampling": True}, \
        "before: --attention-backend triton (0.3.0+)"
    assert "later releases: --attention-backend" in rem["note"] and "later releases: --sampling-backend" in rem["note"]


def test_removing_flags_an_old_release_never_had_is_no_change():
    rem = explain_one_incident(ROUTER_01X)["remediation"]
    changes = [rem, *rem.get("alternatives", [])]
    assert not any("--enable-dp-attention" in c["unset"] for c in changes), "before: removals of 0.4.x+ switches"
    assert any("have no such flag" in c["note"] for c in changes)
    # a flag with no counterpart is said to need a newer release, never silently proposed
    graphs = [c for c in changes if "--disable-cuda-graph" in c["set"]]
    assert all("no such flag, nor an equivalent" in c["note"] and c["needs_human"] for c in graphs)


def test_a_named_old_release_gets_its_spelling_too():
    rem = explain_one_incident(FLASHINFER_02X, "--sglang-version", "0.2.0")["remediation"]
    assert rem["set"] == {"--disable-flashinfer": True} and "SGLang 0.2.0, the log's release" in rem["note"]
    # 0.2.0 has no sampling switch at all: that part of the change is left out, and said
    assert "--sampling-backend: no such flag, nor an equivalent" in rem["note"] and "left out" in rem["note"]
    # a shipped release (a catalogue of its own) is spelled from that catalogue, as before
    rem = explain_one_incident(FLASHINFER_02X, "--sglang-version", "0.4.0")["remediation"]
    assert "--disable-flashinfer" not in rem["set"]
