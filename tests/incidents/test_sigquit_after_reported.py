"""The parent's "Received sigquit from a child process" a few lines after an incident the launch
already reported is that incident's end: SGLang 0.4.x's scheduler watchdog logs its own line,
then the running batch and a py-spy dump, sleeps 5 s and only then sends SIGQUIT to the parent
(0.4.6.post1 scheduler.py watchdog_thread).  It is not a second failure.  A sigquit after the
server went on working (a batch line, a start-up milestone) or far away stays its own incident.
Real files, the real CLI."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import HEAD, explain_file

READY = "[2026-05-09 10:01:00] The server is fired up and ready to roll!\n"
BATCH = "[2026-05-09 10:05:00 TP0] Decode batch. #running-req: 26, #token: 20480, token usage: 0.95, gen throughput (token/s): 310.20, #queue-req: 4\n"
WATCHDOG = "[2026-05-09 10:10:30 TP0] Watchdog timeout (self.watchdog_timeout=300)\n"
DUMP = ("[2026-05-09 10:10:30 TP0] self.cur_batch.batch_size()=26, self.cur_batch.reqs=[Req(rid=3f2a9c)], "
        "self.token_to_kv_pool_allocator.available_size()=1024, self.tree_cache.evictable_size()=0, \n"
        "[2026-05-09 10:10:30 TP0] Pyspy failed to dump PID 63217. Error: /bin/sh: 1: py-spy: not found\n")
SIGQUIT = "[2026-05-09 10:10:35] Received sigquit from a child process. It usually means the child failed.\n"


def test_the_sigquit_after_the_watchdogs_dump_is_not_a_second_incident(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text(HEAD + READY + BATCH + WATCHDOG + DUMP + SIGQUIT + "Killed\n")
    incidents = explain_file(log)
    assert [(i["rule"], i["category"]) for i in incidents] == [("runtime.crash.scheduler_watchdog", "runtime.crash")]


def test_a_sigquit_after_the_server_went_on_stays_its_own_incident(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text(HEAD + READY + BATCH + WATCHDOG + DUMP + BATCH.replace("10:05:00", "10:10:31") + SIGQUIT)
    incidents = explain_file(log)
    assert [i["rule"] for i in incidents] == ["runtime.crash.scheduler_watchdog", "unknown"]
    assert incidents[1]["lines"] == [8, 8]


def test_a_sigquit_far_below_the_reported_incident_stays_its_own_incident(tmp_path: Path):
    filler = "".join(f"[2026-05-09 10:10:31] INFO:     127.0.0.1:{40000 + i} - \"GET /health HTTP/1.1\" 200 OK\n"
                     for i in range(250))
    log = tmp_path / "server.log"
    log.write_text(HEAD + READY + BATCH + WATCHDOG + DUMP + filler + SIGQUIT)
    incidents = explain_file(log)
    assert [i["rule"] for i in incidents] == ["runtime.crash.scheduler_watchdog", "unknown"]


def test_the_0_4_2_to_0_4_3_spelling_of_the_sigquit_line_is_the_same_terminal_line(tmp_path: Path):
    # sglang 0.4.2 and 0.4.3.x's engine.py sigquit_handler logged "Received sigquit from a child
    # proces." (one s); the shell's "Killed" after it is SGLang killing its own process tree
    log = tmp_path / "server.log"
    log.write_text(HEAD + READY + BATCH + WATCHDOG + DUMP
                   + SIGQUIT.replace("child process.", "child proces.") + "Killed\n")
    incidents = explain_file(log)
    assert [(i["rule"], i["category"]) for i in incidents] == [("runtime.crash.scheduler_watchdog", "runtime.crash")]
