"""Refusal shapes that bench/args_verify.py found fixed wrongly against real SGLang 0.5.23's checks.

Each message is one of 0.5.23's arg_groups/ checks, as it raises it; the change asserted is the
one that got the launch past the real check (the slow tests/remedy/test_args_verify.py runs
them through SGLang itself).
"""

from __future__ import annotations

from sglang_doctor.model import Diagnosis, ExceptionInfo, Incident, Launch
from sglang_doctor.remedy import flags, remedies

V0523 = flags.load_catalog("0.5.23")


def _changes(message: str, exc: str = "ValueError", remedy: str = "refusal_fix") -> list[tuple[dict, list]]:
    incident = Incident(kind="traceback", first_line=1, last_line=1)
    incident.exception = ExceptionInfo(exc, message)
    d = Diagnosis(incident=incident, rule="test.rule", category="args.invalid", remedies=[{remedy: {}}],
                  launch=Launch(index=0, line=1, server_args={}))
    rem = remedies.remediate(d, command=None, version="0.5.23", catalog=V0523, hardware=None,
                             model_config=None, warnings=[])
    return [(r.set, r.unset) for r in [rem, *rem.alternatives]] if rem is not None else []


def test_an_advised_requirement_keeps_the_other_way_out_as_the_first_alternative():
    # layernorm_sp_hook.py: turning B on meets B's own checks; removing A passes
    assert _changes("--enable-megamoe-for-layernorm-sp requires --enable-layernorm-sp.")[:2] == [
        ({"--enable-layernorm-sp": True}, []), ({}, ["--enable-megamoe-for-layernorm-sp"])]


def test_applies_only_with_is_a_requirement():
    assert _changes("--prefill-kv-cache-dequant-dtype applies only with --kv-cache-dtype=nvfp4.")[:2] == [
        ({"--kv-cache-dtype": "nvfp4"}, []), ({}, ["--prefill-kv-cache-dequant-dtype"])]


def test_a_path_flag_takes_no_unquoted_word_of_the_message_as_its_value():
    changes = _changes("--enable-ssl-refresh requires --ssl-certfile and --ssl-keyfile to be specified.")
    assert all(v != "and" for s, _ in changes for v in s.values())
    assert changes[0] == ({}, ["--enable-ssl-refresh"])


def test_free_text_and_quoting():
    assert flags.free_text(V0523.spec("--ssl-certfile"))
    assert not flags.free_text(V0523.spec("--tp-size"))
    assert not flags.free_text(V0523.spec("--kv-cache-dtype"))
    assert flags.quoted_in("set --x to 'a.b'", "a.b") and not flags.quoted_in("set --x to a.b", "a.b")


def test_an_interval_gives_a_value_inside_it_not_its_open_end():
    assert _changes("--hicache-host-memory-fraction must be in (0, 1].")[0] == (
        {"--hicache-host-memory-fraction": "1"}, [])


def test_conflicts_with_a_value_names_the_conflict_not_the_advice():
    changes = _changes("--disable-fast-image-processor conflicts with --image-processor-backend=torchvision.")
    assert ({"--image-processor-backend": "torchvision"}, []) not in changes
    assert changes[0] == ({}, ["--image-processor-backend"])


def test_disable_a_and_b_is_one_change():
    changes = _changes("--moe-a2a-backend megamoe has no two-batch / single-batch overlap decomposition; disable "
                       "--enable-two-batch-overlap and --enable-single-batch-overlap.")
    assert changes[0] == ({}, ["--enable-two-batch-overlap", "--enable-single-batch-overlap"])


def test_b_must_be_set_when_a_removes_a_first():
    changes = _changes("--cp-strategy must be set when --enable-prefill-cp is enabled.")
    assert changes[0] == ({}, ["--enable-prefill-cp"])
    assert ({"--enable-prefill-cp": True}, []) not in changes


def test_a_setting_only_supported_somewhere_else_is_removed():
    assert _changes("--disaggregation-decode-retraction-backup=host_pool is only supported on a PD decode "
                    "server.")[0] == ({}, ["--disaggregation-decode-retraction-backup"])
    assert _changes("--swa-prefix-tails should be a non-negative integer.")[0] == ({}, ["--swa-prefix-tails"])


def test_a_without_b_is_unsupported_turns_b_on_else_a_off():
    assert _changes("--enable-page-major-kv-layout without --enable-unified-memory is temporarily unsupported: "
                    "the strided views were removed.", exc="AssertionError")[:2] == [
        ({"--enable-unified-memory": True}, []), ({}, ["--enable-page-major-kv-layout"])]


def test_a_switch_that_requires_a_gpu_is_removed_not_turned_on_again():
    # serving_hook.py:467 on an SM86 profile (bench/args_verify.py --profile a6000): the switch is
    # the subject of "requires", the launch already has it on
    changes = _changes("--enable-deepseek-v4-fp4-indexer requires SM100, SM120, or gfx95 GPUs with FP4 indexer "
                       "support.", remedy="flag_named")
    assert changes[0] == ({}, ["--enable-deepseek-v4-fp4-indexer"])
    # the object of "requires", and the subject of "must be enabled", are still asked for
    assert _changes("--enable-megamoe-for-layernorm-sp requires --enable-layernorm-sp.",
                    remedy="flag_named")[0] == ({"--enable-layernorm-sp": True}, [])
    assert ({"--enable-layernorm-sp": True}, []) in _changes(
        "--enable-layernorm-sp must be enabled for this model.", remedy="flag_named")
