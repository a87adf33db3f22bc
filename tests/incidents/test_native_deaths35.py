"""Deaths that print no Python exception, in the forms that made no incident before session 35
(incidents/signals.py PROCESS_DEATHS): bash's SIGABRT report with no core dumped ("Aborted"
alone, its job report), zsh's signal names ("zsh: abort", "zsh: segmentation fault", "zsh: bus
error"), glog's / abseil's CHECK failure, which aborts.  Each is the death the built-in signal of
the same name is ("aborted", "segfault"), so it reads as that one does, in every phase and after
a stop.  The shell's SIGILL report is named by its class rule (rules/native35_signals.yaml), a
faulthandler dump of one stays the fallback's reading of its frames.  The words in a command,
in prose or in SGLang's own request lines are no death."""

from __future__ import annotations

import pytest

from tests.conftest import incident_events

SERVING = ("[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
           "[2026-05-09 10:00:30] The server is fired up and ready to roll!\n"
           "[2026-05-09 10:05:00 TP0] Decode batch, #running-req: 3, #token: 8192, token usage: 0.12, "
           "gen throughput (token/s): 180.22, #queue-req: 0\n")
CAPTURE = ("[2026-05-09 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
           "[2026-05-09 10:00:20 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB\n")
CMD = "python3 -m sglang.launch_server --model-path /models/m --port 30000"


@pytest.mark.parametrize("line, name", [
    ("Aborted", "aborted"),
    (f"./serve.sh: line 4: 31207 Aborted                 {CMD}", "aborted"),
    (f"[1]+  Aborted                 {CMD}", "aborted"),
    (f"zsh: abort      {CMD}", "aborted"),
    (f"zsh: abort (core dumped)  {CMD}", "aborted"),
    (f"zsh: segmentation fault  {CMD}", "segfault"),
    (f"zsh: segmentation fault (core dumped)  {CMD}", "segfault"),
    (f"zsh: bus error  {CMD}", "signal_death"),
    ("F1207 10:11:12.123456 12345 rdma_context.cpp:88] Check failed: ptr != nullptr ", "aborted"),
    ("*** Check failure stack trace: ***", "aborted"),
])
def test_the_death_is_an_incident_named_as_its_signal(pack, line, name):
    (event,) = incident_events(pack, SERVING + line + "\n")
    incident = event["_diagnosis"].incident
    assert incident.signal_names == [name] and incident.first_line == 4


def test_a_check_failure_and_its_stack_are_one_incident(pack):
    text = SERVING + ("F1207 10:11:12.123456 12345 rdma_context.cpp:88] Check failed: ptr != nullptr \n"
                      "*** Check failure stack trace: ***\n"
                      "    @     0x7f2c1a2b3c4d  google::LogMessage::Fail()\n"
                      "    @     0x7f2c1a2b3c4e  google::LogMessage::SendToLog()\n"
                      "Aborted (core dumped)\n")
    (event,) = incident_events(pack, text)
    assert tuple(event["lines"]) == (4, 8)


@pytest.mark.parametrize("context", [SERVING, CAPTURE], ids=["serving", "capture"])
@pytest.mark.parametrize("line", ["Aborted", f"zsh: abort      {CMD}", f"zsh: segmentation fault  {CMD}"])
def test_it_reads_as_the_shell_s_core_dumped_report_does(pack, context, line):
    # the same death as "Aborted (core dumped)" / "Segmentation fault (core dumped)": the same
    # answer in the same phase (a start-up step's crash is that step's, decided by the phase)
    same = "Segmentation fault (core dumped)" if "segmentation" in line else "Aborted (core dumped)"
    (got,) = incident_events(pack, context + line + "\n")
    (want,) = incident_events(pack, context + same + "\n")
    assert (got["category"], got["rule"], got["phase"]) == (want["category"], want["rule"], want["phase"])


STOPS = {
    "SIGTERM": "[2026-05-09 10:06:00] Received sigterm, shutting down gracefully\n",
    "Ctrl-C": ('^CTraceback (most recent call last):\n  File "/usr/lib/python3/dist-packages/sglang/launch_server.py", '
               "line 14, in <module>\n    launch_server(server_args)\nKeyboardInterrupt\n"),
}


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("line", ["Aborted", f"zsh: abort      {CMD}", f"zsh: segmentation fault  {CMD}",
                                  "F1207 10:11:12.123456 12345 engine.cc:88] Check failed: ptr != nullptr "])
def test_in_a_stop_s_teardown_it_is_no_incident(pack, stop, line):
    assert incident_events(pack, SERVING + STOPS[stop] + line + "\n") == []


@pytest.mark.parametrize("line", [
    "$ grep -c Aborted server.log",
    "+ echo Aborted",
    "Aborted by AbortReq.",
    "[2026-05-09 10:05:01 TP0] Aborted by AbortReq.",
    "Aborted requests are retried by the client",
    "the run was Aborted  and restarted",
    "zsh: abort is what I saw last time",
    "I1207 10:11:12.123456 12345 engine.cc:88] Check failed: never, this is an info line",
])
def test_the_words_elsewhere_are_no_death(pack, line):
    assert incident_events(pack, SERVING + line + "\n") == []


@pytest.mark.parametrize("line", [
    "Illegal instruction (core dumped)",
    "Illegal instruction",
    f"./serve.sh: line 4: 31207 Illegal instruction     (core dumped) {CMD}",
    f"zsh: illegal hardware instruction  {CMD}",
])
def test_the_shell_s_sigill_names_the_cpu_s_instruction_set(pack, line):
    (event,) = incident_events(pack, CAPTURE + line + "\n")
    assert (event["rule"], event["category"]) == ("class.hw.cpu_illegal_instruction", "kernel.unsupported_hw")
    remedy = " ".join(step["needs_human"]["reason"] for step in event["_diagnosis"].remedies)
    assert "dmesg -T | grep -i 'invalid opcode'" in remedy  # the one command that names the library


@pytest.mark.parametrize("text", [
    # a GPU kernel's illegal instruction is CUDA's error of the call, no signal
    "[2026-05-09 10:05:01 TP0] RuntimeError: CUDA error: an illegal instruction was encountered\n",
    # faulthandler's dump of a SIGILL: its frames are the fallback's evidence
    ("Fatal Python error: Illegal instruction\n\nThread 0x00007f01 (most recent call first):\n"
     '  File "/usr/lib/python3/dist-packages/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 300 in forward\n'
     '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2611 in run_scheduler_process\n'),
    "[2026-05-09 10:05:01] Illegal instruction checks are disabled for this kernel\n",
])
def test_other_illegal_instructions_are_not_the_shell_s(pack, text):
    assert all(e["rule"] != "class.hw.cpu_illegal_instruction" for e in incident_events(pack, SERVING + text))
