"""The spellings of SGLang's releases before 0.4.0 (no shipped catalogue): the renames
scripts/gen_pre040_renames.py reads in the old wheels' server_args.py lead an old command's
flags to the current spelling, and the diagnose stage knows the old options as SGLang's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from conftest import ROOT
from sglang_doctor.diagnose.rules_engine import is_sglang_flag
from sglang_doctor.remedy import flags

_spec = importlib.util.spec_from_file_location("gen_pre040_renames", ROOT / "scripts" / "gen_pre040_renames.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


@pytest.mark.parametrize("old,version,new", [
    ("--schedule-heuristic", "0.5.23", "--schedule-policy"),                      # 0.2.7, same choices
    ("--attention-reduce-in-fp32", "0.5.23", "--triton-attention-reduce-in-fp32"),  # 0.2.14, help
    ("--max-prefill-num-token", "0.5.23", "--max-prefill-tokens"),               # 0.1.17, help
    ("--max-torch-compile-bs", "0.5.9", "--torch-compile-max-bs"),                # 0.3.5, help
    ("--disable-regex-jump-forward", "0.4.0", "--disable-jump-forward"),           # 0.3.5.post1, name
])
def test_an_old_spelling_translates_to_the_release_asked_for(old, version, new):
    assert flags.translate(old, flags.shipped_catalog(version)) == new


def test_an_opposite_switch_or_another_setting_is_not_a_rename():
    renamed = {r.old for r in flags.pre_040_renames()}
    # --enable-mla gave way to --disable-mla (0.3.1.post2), --enable-flashinfer to
    # --disable-flashinfer (0.1.18): the same help, the opposite meaning
    assert "--enable-mla" not in renamed and "--enable-flashinfer" not in renamed
    # --max-num-reqs (the request pool's size) lived beside --max-running-requests (0.2.8-0.3.0)
    assert flags.translate("--max-num-reqs", flags.shipped_catalog("0.5.23")) is None


def test_an_unrecognized_old_flag_gets_the_new_spelling_not_removal():
    catalog = flags.shipped_catalog("0.5.23")
    assert catalog.closest("--schedule-heuristic")[:1] == ["--schedule-policy"]


def test_the_old_options_are_sglang_flags_for_the_diagnose_stage():
    assert flags.pre_040_options()["--schedule-heuristic"] == ("0.1.3", "0.2.6")
    assert is_sglang_flag("--schedule-heuristic") and is_sglang_flag("--attention-reduce-in-fp32")
    assert not is_sglang_flag("--force-reinstall")


def test_actions_are_read_from_the_source_without_running_it():
    source = '''
def add_cli_args(parser):
    parser.add_argument("--schedule-policy", type=str, choices=["lpm", "fcfs"], help="The scheduling policy.")
    parser.add_argument("--disable-x", action="store_true", help="Disable x" " for good.")
    parser.add_argument("-v", help="short only")
'''
    actions = gen.actions_of(source)
    assert [a["option_strings"] for a in actions] == [["--disable-x"], ["--schedule-policy"]]
    assert actions[0]["nargs"] == 0 and actions[0]["help"] == "Disable x for good."
    assert actions[1]["choices"] == ["lpm", "fcfs"] and actions[1]["dest"] == "schedule_policy"


@pytest.mark.slow
def test_the_shipped_file_is_what_the_script_makes():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_pre040_renames.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_current_launch_with_a_0_2_command_is_told_the_new_spelling(tmp_path):
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import diagnose_file

    log = tmp_path / "old_command.log"
    log.write_text(
        "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n"
        "                        [--host HOST] [--port PORT]\n"
        "launch_server.py: error: unrecognized arguments: --schedule-heuristic lpm\n")
    diagnoses = diagnose_file(log, RuleSet.load(builtin=True, user=False), remediate=True)
    rem = next(d for d in diagnoses if d.rule == "args.invalid.unrecognized_arguments").remediation
    assert "--schedule-policy" in " ".join(rem.set), rem
