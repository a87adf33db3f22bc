"""After the operator's stop (SGLang logged the SIGTERM), the stop's own SIGKILL once its grace
ran out is no failure: a shell's ``Killed``, docker compose's ``exited with code 137``,
systemd's ``code=killed, status=9/KILL`` (incidents/assemble.py ``_stopping``).  The kernel's
OOM killer stays a failure, and so does a ``Killed`` with no stop before it.

SIGTERM lines as each release logs them: tokenizer_manager.py ``sigterm_handler`` ("SIGTERM
received. {signum=} {frame=}. Draining requests and shutting down...", 0.4.6.post5-0.5.23),
``sigterm_watchdog`` ("Gracefully exiting... remaining number of requests N" in 0.4.6.post5,
"Gracefully exiting... Remaining number of requests N. Remaining requests remaining_rids=[...]."
later), 0.5.9 grpc_server.py ("... Shutting down gRPC server..."), 0.5.23 engine.py on a
non-zero node ("SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast
to stop the schedulers.").
"""

from __future__ import annotations

import pytest

from tests.incidents.test_survived_before_ready import _events, _incidents
from tests.incidents.test_survived_while_serving import GOES_ON, SERVING, UP

SERVED = UP + SERVING + GOES_ON
STOPS = {
    "0.5.23": ["SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
               "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]."],
    "0.5.23-node1": ["SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast to stop the "
                     "schedulers."],
    "0.5.9-grpc": ["SIGTERM received. signum=None frame=None. Shutting down gRPC server..."],
    "0.4.6.post5": ["SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
                    "Gracefully exiting... remaining number of requests 2"],
}
UVICORN_DOWN = ("[2026-01-01 00:09:01] INFO:     Shutting down\n"
                "[2026-01-01 00:09:01] INFO:     Waiting for application shutdown.\n"
                "[2026-01-01 00:09:01] INFO:     Application shutdown complete.\n"
                "[2026-01-01 00:09:01] INFO:     Finished server process [10649]\n")
CMD = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --port 30000"
ENDS = {
    "shell": f"./serve.sh: line 12: 10649 Killed                  {CMD}\n",
    "bare": "Killed\n",
    "compose": "sglang-1 exited with code 137\n",
    "systemd": ("May 09 10:09:10 host systemd[1]: sglang.service: State 'stop-sigterm' timed out. Killing.\n"
                "May 09 10:09:10 host systemd[1]: sglang.service: Main process exited, code=killed, status=9/KILL\n"),
}


def _stop(release: str) -> str:
    return "".join(f"[2026-01-01 00:09:00] {line}\n" for line in STOPS[release])


@pytest.mark.parametrize("release", sorted(STOPS))
@pytest.mark.parametrize("end", sorted(ENDS))
def test_the_stops_sigkill_after_a_sigterm_is_no_failure(pack, release: str, end: str):
    events = _events(pack, SERVED + _stop(release) + UVICORN_DOWN + ENDS[end])
    assert _incidents(events) == []


def test_under_a_container_prefix_too(pack):
    text = "".join("sglang-1  | " + line for line in (SERVED + _stop("0.5.23") + UVICORN_DOWN).splitlines(True))
    assert _incidents(_events(pack, text + ENDS["compose"])) == []


def test_killed_without_a_stop_stays_a_failure(pack):
    incidents = _incidents(_events(pack, SERVED + ENDS["shell"]))
    assert [i["category"] for i in incidents] == ["memory.host_oom"]


def test_the_kernels_oom_killer_during_a_stop_stays_a_failure(pack):
    oom = "[Thu May  9 10:09:05 2026] Out of memory: Killed process 10649 (python3) total-vm:98765432kB, anon-rss:65432100kB\n"
    incidents = _incidents(_events(pack, SERVED + _stop("0.5.23") + oom))
    assert [i["category"] for i in incidents] == ["memory.host_oom"]


def test_a_relaunch_after_the_stop_is_judged_on_its_own(pack):
    """The stop belongs to the launch that logged it: the next launch's Killed is a failure."""
    incidents = _incidents(_events(pack, SERVED + _stop("0.5.23") + UVICORN_DOWN + UP + ENDS["shell"]))
    assert [i["category"] for i in incidents] == ["memory.host_oom"]


NCCL_TEARDOWN = ("node1:2241:2318 [1] NCCL WARN [Service thread] Error encountered progressing operation=Connect, "
                 "res=3, closing connection\n")


def test_nccl_warnings_of_the_peers_closing_after_the_stop_are_no_failure(pack):
    events = _events(pack, SERVED + _stop("0.5.23") + NCCL_TEARDOWN + UVICORN_DOWN)
    assert _incidents(events) == []


def test_the_same_nccl_warning_with_no_stop_before_it_is_a_warning_unless_a_death_follows(pack):
    """Session 26 (fa26): NCCL's proxy service thread logs it, closes that one connection and
    goes on (proxy.cc); the rank whose request failed reports its own failure.  Alone it is a
    warning (incidents/survived.py ``goes_on_after``); a death of the launch after it keeps it."""
    events = _events(pack, SERVED + NCCL_TEARDOWN)
    assert _incidents(events) == []
    assert [e["kind"] for e in events if e["event"] == "warning"] == ["nonfatal_warning"]
    died = "[2026-05-09 10:09:09] Received sigquit from a child process. It usually means the child failed.\n"
    assert [i["category"] for i in _incidents(_events(pack, SERVED + NCCL_TEARDOWN + died))] == ["nccl"]
