"""A dead scheduler's exit status means what it means (engine.py's launcher, 0.4.x-0.5.23).

0.4.x-0.5.9 log "Rank N scheduler is dead. Please check if there are relevant logs." and then
"Exit code: N" on a line of its own (multiprocessing's exitcode: -N for signal N), then the
EOFError of the pipe the launcher waited on; 0.5.10+ raise "Rank N scheduler died during
initialization (exit code: N). If exit code is -9 (SIGKILL), a common cause is the OS OOM
killer. ..." for every code.  -9 / 137 (SIGKILL) comes from outside, most often the OOM killer;
-6 / 134 (SIGABRT) is the scheduler's own abort, whose message is above; no status in the text
is unknown, not a kill.
"""

import pytest

from conftest import only_incident

from sglang_doctor.diagnose import evidence

HEAD = ("[2026-05-09 17:30:02] server_args=ServerArgs(model_path='/models/Qwen2.5-32B-Instruct', tp_size=2)\n"
        "[2026-05-09 17:30:10 TP0] Load weight begin. avail mem=46.79 GB\n")
DEAD = "[2026-05-09 17:31:40] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
EOF_TB = ("Traceback (most recent call last):\n"
          '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/entrypoints/engine.py", line 894, in '
          "_wait_for_scheduler_ready\n"
          "    data = scheduler_pipe_readers[i].recv()\n"
          '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 383, in _recv\n'
          "    raise EOFError\n"
          "EOFError\n")


def died(code):
    return ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/engine.py", line 2039, in '
            "_wait_for_scheduler_ready\n"
            "    raise _scheduler_died_error(j, scheduler_procs[j])\n"
            f"RuntimeError: Rank 1 scheduler died during initialization (exit code: {code}). If exit code is -9 "
            "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n")


@pytest.mark.parametrize("code, meaning", [("-9", "killed"), ("137", "killed"), ("-6", "aborted"),
                                           ("134", "aborted"), ("-11", "native"), ("-7", "signal"),
                                           ("1", "exited"), (None, None)])
def test_exit_meaning(code, meaning):
    assert evidence.exit_meaning(code) == meaning


@pytest.mark.parametrize("tail", [f"[2026-05-09 17:31:40] Exit code: -6\n",
                                  f"[2026-05-09 17:31:40] Exit code: -6\n{EOF_TB}",
                                  died("-6")])
def test_a_sigabrt_is_no_host_oom_and_the_fallback_asks_for_the_abort(pack, tail):
    ev = only_incident(pack, HEAD + (DEAD if "Exit code" in tail else "") + tail)
    assert ev["category"] != "memory.host_oom" and ev["rule"] == "unknown"
    assert ev["fallback"]["best_guess"]["category"] != "memory.host_oom"
    assert "SIGABRT" in ev["fallback"]["missing"] and "above" in ev["fallback"]["missing"]
    assert ev["fallback"]["next_step"].startswith("grep ") and "terminate called" in ev["fallback"]["next_step"]
    # SGLang's fixed hint ("a common cause is the OS OOM killer") is no word of this failure
    assert not any(e["name"] == "words:cuda_oom" for e in ev["fallback"]["best_guess"]["evidence"])


@pytest.mark.parametrize("tail", [f"[2026-05-09 17:31:40] Exit code: -9\n",
                                  f"[2026-05-09 17:31:40] Exit code: -9\n{EOF_TB}",
                                  "[2026-05-09 17:31:40] Exit code: 137\n"])
def test_a_sigkill_is_the_oom_killer_rule(pack, tail):
    ev = only_incident(pack, HEAD + DEAD + tail)
    assert (ev["rule"], ev["category"]) == ("memory.host_oom.scheduler_killed", "memory.host_oom")


def test_a_sigkill_in_the_0523_message_is_still_named(pack):
    ev = only_incident(pack, HEAD + died("-9"))
    assert ev["category"] == "memory.host_oom" and ev["rule"] != "unknown"
    assert "fallback" not in ev  # the status is in the message: nothing is missing


def test_no_exit_code_is_unknown_and_asks_for_it(pack):
    ev = only_incident(pack, HEAD + DEAD)
    assert ev["rule"] == "unknown" and ev["category"] == "other" and ev["confidence"] <= 0.25
    assert "no exit code" in ev["fallback"]["missing"]
    step = ev["fallback"]["next_step"]
    assert "scheduler is dead" in step and "-A1" in step and "-B" in step


def test_an_exit_status_of_its_own_asks_for_the_traceback_above(pack):
    ev = only_incident(pack, HEAD + DEAD + "[2026-05-09 17:31:40] Exit code: 1\n")
    assert ev["category"] != "memory.host_oom"
    assert "Traceback" in ev["fallback"]["next_step"] and "status 1" in ev["fallback"]["next_step"]
