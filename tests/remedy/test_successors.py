"""A removed flag's successor, as the deprecated flag's own help text in SGLang's parser names it
(flags.successor), and closest_flag's use of it for a flag the running release rejected."""

from __future__ import annotations

import json
import subprocess

from conftest import doctor_cmd

from sglang_doctor.remedy import flags

V059 = flags.load_catalog("0.5.9")
V0523 = flags.load_catalog("0.5.23")


def test_a_switch_that_became_a_choice_of_another_flag_follows_its_help_text():
    # 0.4.4.post4's help: "... Please use '--attention-backend flashinfer' instead ..."
    assert flags.successor("--enable-flashinfer-mla", V059) == ("--attention-backend", "flashinfer")
    # 0.5.1's deprecated MoE switches became --moe-runner-backend choices
    assert flags.successor("--enable-flashinfer-cutedsl-moe", V0523) == ("--moe-runner-backend", "flashinfer_cutedsl")


def test_a_renamed_value_flag_comes_without_a_value_for_the_caller_to_fill():
    assert flags.successor("--hybrid-kvcache-ratio", V0523) == ("--swa-full-tokens-ratio", None)


def test_a_help_text_s_misspelt_value_is_the_one_choice_it_misspells():
    # 0.4.0's help names "--sampling-backend pytroch" (sic): the choice is pytorch
    assert flags.successor("--disable-flashinfer-sampling", V0523) == ("--sampling-backend", "pytorch")


def test_a_successor_the_target_release_would_refuse_is_none():
    assert flags.successor("--not-a-flag-anywhere", V0523) is None
    spec = V0523.spec("--sampling-backend")
    assert flags.close_choice(spec, "pytroch") == "pytorch"
    assert flags.close_choice(spec, "numpy") is None  # no choice it misspells: refused, not guessed


def _fix(tmp_path, arguments: str, version: str) -> dict:
    log = tmp_path / "args.log"
    log.write_text("usage: launch_server.py [-h] --model-path MODEL_PATH\n"
                   f"launch_server.py: error: unrecognized arguments: {arguments}\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", version, str(log)),
                         capture_output=True, text=True, timeout=120)
    return next(json.loads(line) for line in out.stdout.splitlines() if '"event": "incident"' in line)["remediation"]


def test_an_unrecognized_removed_flag_is_replaced_by_its_successor(tmp_path):
    rem = _fix(tmp_path, "--enable-flashinfer-mla", "0.5.9")
    assert rem["set"] == {"--attention-backend": "flashinfer"} and rem["unset"] == ["--enable-flashinfer-mla"]
    assert "deprecation note" in rem["note"]


def test_a_removed_value_flag_keeps_the_launchs_value_under_its_successor(tmp_path):
    rem = _fix(tmp_path, "--hybrid-kvcache-ratio 0.5", "0.5.23")
    assert rem["set"] == {"--swa-full-tokens-ratio": "0.5"} and rem["unset"] == ["--hybrid-kvcache-ratio"]


def test_a_successor_that_takes_another_flags_value_names_that_flag():
    # 0.5.3-0.5.4's help: "NOTE: --enable-ep-moe is deprecated. Please set `--ep-size` to the same
    # value as `--tp-size` instead." (not the word "the" as a value)
    assert flags.successor("--enable-ep-moe", V0523) == ("--ep-size", flags.SameAs("--tp-size"))


def test_a_removed_switch_takes_the_launchs_value_of_the_flag_its_note_names(tmp_path):
    log = tmp_path / "args.log"
    log.write_text("[2025-11-02 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=8, port=30000)\n"
                   "launch_server.py: error: unrecognized arguments: --enable-ep-moe\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", "0.5.23", str(log)),
                         capture_output=True, text=True, timeout=120)
    rem = next(json.loads(line) for line in out.stdout.splitlines() if '"event": "incident"' in line)["remediation"]
    assert rem["set"] == {"--ep-size": 8} and rem["unset"] == ["--enable-ep-moe"]
    assert "same value" not in rem["note"] and "--tp-size (8 in this launch)" in rem["note"]


def test_a_removed_switch_asks_for_the_value_the_log_does_not_show(tmp_path):
    rem = _fix(tmp_path, "--enable-ep-moe", "0.5.23")
    assert rem["set"] == {"--ep-size": "<the same value as --tp-size>"} and rem["unset"] == ["--enable-ep-moe"]
    assert rem["needs_human"] and not rem["safe"]
