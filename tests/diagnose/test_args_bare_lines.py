"""Issue #12, argument refusals pasted as one line (bench/message_fixes.py --bare): the launch's
own settings named in words by 0.5.23's arg_groups/ and 0.5.9's server_args.py (a config file,
an "argument x-y-z" written without its dashes, the keys of --lora-paths, IB devices) are an
argument check at start-up, not a crash while serving; a one-line crash that merely shares a
word ("invalid", "expected a") with them stays a crash.  Each test runs the real CLI on a real
file under fixtures/ (the first three were answered runtime.crash before session 25)."""

from __future__ import annotations

import pytest

from test_assumed_answer import incidents

REFUSALS = [
    "fixtures/classes/args_refused_config_file_line_0523.log",
    "fixtures/classes/args_refused_argument_without_dashes_0523.log",
    "fixtures/classes/args_refused_lora_paths_keys_0523.log",
    "fixtures/classes/args_refused_duplicate_ib_devices_059.log",
]
CRASHES = [
    "fixtures/classes/runtime_bare_invalid_expected_a_list.log",
    "fixtures/classes/runtime_bare_lora_expected_a_tensor.log",
]


@pytest.mark.parametrize("rel", REFUSALS)
def test_a_refusal_of_a_launch_setting_in_words_is_an_argument_check(rel):
    (inc,) = incidents(rel)
    assert inc["rule"] == "class.args.setting_refused_in_words"
    assert inc["category"] == "args.invalid" and inc["phase"] == "startup.args"
    assert "had not been ready" in inc["explanation"]  # the assumption is said, not silent


@pytest.mark.parametrize("rel", CRASHES)
def test_a_one_line_crash_sharing_a_word_stays_a_crash(rel):
    (inc,) = incidents(rel)
    assert inc["category"] == "runtime.crash" and inc["rule"] == "class.runtime.after_ready"
