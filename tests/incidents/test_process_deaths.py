"""Deaths a text reports in words only (signals.PROCESS_DEATHS) form an incident of their own:
a shell's report of a process that SIGILL / SIGFPE / SIGTRAP / SIGSYS / SIGQUIT ended (bash's
strsignal text, its job report, zsh's), and SGLang's "Scheduler or DataParallelController PID
terminated with CODE" of a node that runs only schedulers.  A stop (code 0, -2, -15) and the
bare words in other text stay silent."""

import json
import subprocess
import sys

import pytest

from conftest import incidents_of_lines

# what a start-up prints before it dies (0.5.23 lines), so the death comes after ordinary records
STARTUP = [
    "[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1, mem_fraction_static=0.88)",
    "[2026-05-09 10:00:05 TP0] Init torch distributed begin.",
    "[2026-05-09 10:00:06 TP0] Init torch distributed ends. mem usage=0.00 GB",
    "[2026-05-09 10:00:07 TP0] Load weight begin. avail mem=78.00 GB",
]


@pytest.mark.parametrize("line, signame", [
    ("Illegal instruction (core dumped)", "Illegal instruction"),
    ("Illegal instruction", "Illegal instruction"),
    ("./serve.sh: line 5: 91734 Illegal instruction     (core dumped) python3 -m sglang.launch_server --model-path /m",
     "Illegal instruction"),
    ("[1]+  Floating point exception (core dumped) python3 -m sglang.launch_server --model-path /m",
     "Floating point exception"),
    ("Trace/breakpoint trap (core dumped)", "Trace/breakpoint trap"),
    ("Bad system call (core dumped)", "Bad system call"),
    ("Quit (core dumped)", "Quit"),
])
def test_a_shell_s_report_of_a_fatal_signal_is_an_incident(tmp_path, line, signame):
    (inc,) = incidents_of_lines(tmp_path, STARTUP + [line])
    assert inc.signal_names == ["signal_death"] and inc.captures["signame"] == signame
    assert inc.first_line == inc.last_line == len(STARTUP) + 1


def test_zsh_s_report_is_an_incident(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, ["zsh: illegal hardware instruction  python3 -m sglang.launch_server"])
    assert inc.signal_names == ["signal_death"]
    assert inc.captures["zsh_signame"] == "illegal hardware instruction"


@pytest.mark.parametrize("code", ["-9", "1", "-11"])
def test_a_scheduler_node_s_launcher_reports_its_scheduler_s_death(tmp_path, code):
    line = f"[2026-05-09 10:01:00] Scheduler or DataParallelController 4242 terminated with {code}"
    (inc,) = incidents_of_lines(tmp_path, STARTUP + [line])
    assert inc.signal_names == ["scheduler_terminated"] and inc.captures["exit_code"] == code


def test_the_launcher_s_report_joins_the_scheduler_s_traceback(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, STARTUP + [
        "[2026-05-09 10:01:00 TP8] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 3, in run_scheduler_process',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "[2026-05-09 10:01:01] Scheduler or DataParallelController 4242 terminated with 1",
    ])
    assert inc.exception.type == "RuntimeError" and "scheduler_terminated" in inc.signal_names


@pytest.mark.parametrize("line", [
    "[2026-05-09 10:01:00] Scheduler or DataParallelController 4242 terminated with 0",
    "[2026-05-09 10:01:00] Scheduler or DataParallelController 4242 terminated with -15",
    "[2026-05-09 10:01:00] Scheduler or DataParallelController 4242 terminated with -2",
    "Quit",
    "[2026-05-09 10:01:00] Illegal instruction checks are disabled for this kernel",
    "Illegal instruction detected by the validator",
])
def test_a_stop_and_the_words_elsewhere_stay_silent(tmp_path, line):
    assert incidents_of_lines(tmp_path, STARTUP + [line]) == []


def test_pipe_mode_reports_it_from_a_real_pipe():
    text = "\n".join(STARTUP + ["Floating point exception (core dumped)"]) + "\n"
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "-", "--format", "json"],
                          input=text, capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    incidents = [e for e in events if e["event"] == "incident"]
    assert proc.returncode == 1 and len(incidents) == 1 and incidents[0]["lines"] == [5, 5]


def test_a_death_by_signal_while_serving_is_not_a_survived_failure(tmp_path):
    # later batch lines are another process's (the scheduler's): the one that died by its own
    # signal is still dead, as for a segfault or an abort (survived.DEATH_SIGNALS)
    batch = ("[2026-01-01 10:00:{:02d} TP0] Decode batch. #running-req: 3, #token: 900, token usage: 0.01, "
             "gen throughput (token/s): 120.00, #queue-req: 0")
    path = tmp_path / "serving.log"
    path.write_text("\n".join(["[2026-01-01 10:00:00] The server is fired up and ready to roll!", batch.format(10),
                               "Floating point exception (core dumped)", batch.format(20), batch.format(30)]) + "\n")
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [e["lines"][0] for e in events if e.get("event") == "incident"] == [3], proc.stdout
