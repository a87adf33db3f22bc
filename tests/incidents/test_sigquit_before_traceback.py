"""The parent's "Received sigquit from a child process" can reach the log before the failed
child's traceback (two processes write to one stream): the traceback that follows right after
it is the same incident, diagnosed by its exception.  A sigquit followed by ordinary output,
or by a traceback only after other records, stays apart as before.  Real files, the real CLI."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import HEAD, explain_file

SIGQUIT = "[2026-05-01 15:16:15] Received sigquit from a child process. It usually means the child failed.\n"
TRACEBACK = (
    "[2026-05-01 15:16:15 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3118, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", line 495, in initialize\n'
    "    self.load_model()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 2 has a total capacity of 79.19 GiB of which 512.00 MiB is free.\n"
)
LOADING = "[2026-05-01 15:16:14 TP0] Load weight begin. avail mem=78.50 GB\n"
OTHER = "[2026-05-01 15:16:16] INFO:     Shutting down\n"


def test_the_childs_traceback_right_after_the_sigquit_is_one_incident(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text(HEAD + LOADING + SIGQUIT + TRACEBACK)
    incidents = explain_file(log)
    assert len(incidents) == 1
    inc = incidents[0]
    assert inc["category"] == "memory.cuda_oom"
    assert inc["exception"]["type"] == "torch.OutOfMemoryError"
    assert inc["lines"][0] == 3  # the sigquit line belongs to it


def test_a_sigquit_followed_by_other_records_stays_its_own_incident(tmp_path: Path):
    log = tmp_path / "server.log"
    log.write_text(HEAD + LOADING + SIGQUIT + OTHER + LOADING + TRACEBACK)
    incidents = explain_file(log)
    assert len(incidents) == 2
    assert incidents[0]["lines"] == [3, 3]
    assert incidents[1]["exception"]["type"] == "torch.OutOfMemoryError"
