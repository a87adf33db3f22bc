"""A rank that only lost its gloo peer right after a reported failure is that failure's
aftermath, not a second incident.

When one pipeline stage (or TP rank) dies, the ranks waiting on it in torch.distributed's CPU
(gloo) group raise "[.../gloo/transport/tcp/pair.cc:553] Connection closed by peer [ip]:port.
This is typically caused by a remote worker crashing" (or "Read error ...: Connection reset by
peer") a few lines later, each with its own "Scheduler hit an exception" traceback.  Written
from field16/010 (PP0's CUDA OOM during a long prefill, the parent's "SIGQUIT received", then
PP1's gloo traceback, which was read as a second, more confident nccl incident); the same gloo
traceback alone, or far from the failure, stays an incident of its own."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import HEAD, explain_file

SCHED = "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py"
OOM = (
    "[2026-10-02 17:07:54 PP0 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{SCHED}", line 3118, in run_scheduler_process\n'
    "    scheduler.event_loop_pp()\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/quantization/fp8.py", line 3271, in apply\n'
    "    down_slots = torch.empty(\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 44.00 MiB. GPU 0 has a total capacity of "
    "21.49 GiB of which 35.25 MiB is free. Including non-PyTorch memory, this process has 21.45 GiB memory in use.\n"
    "\n"
    "[2026-10-02 17:07:54] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
    "[2026-10-02 17:07:54 PP1 TP0] Prefill batch, #new-seq: 1, #new-token: 256, #cached-token: 0, full token usage: 0.67, "
    "#running-req: 0, #queue-req: 0\n")


def gloo(rank: str, port: int, how: str = "Connection closed by peer") -> str:
    return (
        f"[2026-10-02 17:07:54 {rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{SCHED}", line 3118, in run_scheduler_process\n'
        "    scheduler.event_loop_pp()\n"
        '  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 2709, in irecv\n'
        "    return group.recv([tensor], group_src, tag)\n"
        f"RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] {how} "
        f"[192.168.2.6]:{port}. This is typically caused by a remote worker crashing. Check the logs of the remote "
        "worker before reporting an error.\n"
        "\n")


def test_the_peers_gloo_tracebacks_after_the_oom_are_its_aftermath(tmp_path: Path):
    log = tmp_path / "pp.log"
    log.write_text(HEAD + OOM + gloo("PP1 TP0", 2961) + gloo("PP2 TP1", 908))
    incidents = explain_file(log)
    assert [i["category"] for i in incidents] == ["memory.cuda_oom"]


def test_a_read_error_of_the_peer_is_aftermath_too(tmp_path: Path):
    log = tmp_path / "pp.log"
    log.write_text(HEAD + OOM + gloo("PP3 TP0", 59080, "Read error [192.168.2.6]:59080: Connection reset by peer"))
    assert [i["category"] for i in explain_file(log)] == ["memory.cuda_oom"]


def test_the_gloo_traceback_alone_is_still_an_incident(tmp_path: Path):
    log = tmp_path / "tail.log"
    log.write_text(gloo("PP2 TP1", 908))
    incidents = explain_file(log)
    assert len(incidents) == 1
    assert incidents[0]["category"] == "nccl"


def test_a_gloo_failure_long_after_the_reported_one_is_another_incident(tmp_path: Path):
    filler = "".join(f"[2026-10-02 17:08:{n % 60:02d}] INFO:     127.0.0.1:4000{n % 10} - \"GET /health HTTP/1.1\" 200 OK\n"
                     for n in range(250))
    log = tmp_path / "far.log"
    log.write_text(HEAD + OOM + filler + gloo("PP1 TP0", 2961))
    assert [i["category"] for i in explain_file(log)] == ["memory.cuda_oom", "nccl"]
