"""Lines a thread logs and goes on after are warnings, not a launch's failure (session 26, fa26;
incidents/survived.py ``goes_on_after``, pipeline.py ``_goes_on_after``).

- torch's TCPStore client under the NCCL heartbeat monitor ("[c10d] sendBytes / recvValue failed
  ... Broken pipe" and the monitor's "Failed to check the \"should dump\" flag on TCPStore"),
  printed by every rank while the store's host exits: real pastes MiniMax-AI/MiniMax-M1#14
  (fixtures/nccl/heartbeat_store_gone_should_dump_fragment.log) and ome-projects/ome#312
  (fixtures/nccl/store_gone_should_dump_two_ranks_fragment.log);
- torch's watchdog at a process's exit, "CUDA error: driver shutting down" (NVIDIA/Fuser#2497,
  fixtures/nccl/watchdog_driver_shutting_down_at_exit.log);
- NCCL's proxy-thread / teardown WARN lines whose code path goes on (NVIDIA/nccl src/proxy.cc,
  init.cc), each as NCCL formats it.

What stays an incident: the same lines followed by a death of the launch, any other failure line
with them (NVIDIA/nccl#1485: "[Proxy Service 3] Failed to execute operation Setup ..." before
"Cuda failure 'driver shutting down'", fixtures/nccl/proxy_setup_failed_then_driver_shutting_down.txt),
and the c10d line with the exception a main-thread store operation raised from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.incidents import survived
from tests.incidents.test_survived_before_ready import _events, _incidents

ROOT = Path(__file__).resolve().parents[2]
NCCL = ROOT / "fixtures" / "nccl"
BATCH = ("[2026-01-01 00:00:0{n} TP0] Decode batch, #running-req: 1, #token: 1207, token usage: 0.00, cuda graph: "
         "True, gen throughput (token/s): 60.12, #queue-req: 0\n")
SIGQUIT = "[2026-01-01 00:00:09] Received sigquit from a child process. It usually means the child failed.\n"


def _warnings(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "nonfatal_warning"]


@pytest.mark.parametrize("name", ["heartbeat_store_gone_should_dump_fragment.log",
                                  "store_gone_should_dump_two_ranks_fragment.log",
                                  "watchdog_driver_shutting_down_at_exit.log"])
def test_a_fragment_of_only_such_lines_is_a_warning(pack, name: str):
    events = _events(pack, (NCCL / name).read_text())
    assert _incidents(events) == []
    (warning,) = _warnings(events)
    assert "goes on" in warning["message"] and "nothing of a death" in warning["message"]
    # the fallback still says what it cannot see and gives its guess
    assert events[-1]["fallback"]["best_guess"]["category"]


def test_a_death_after_them_keeps_the_incident(pack):
    text = (NCCL / "heartbeat_store_gone_should_dump_fragment.log").read_text() + SIGQUIT
    events = _events(pack, text)
    assert _incidents(events) and _warnings(events) == []


def test_another_failure_line_among_them_keeps_the_incident(pack):
    events = _events(pack, (NCCL / "proxy_setup_failed_then_driver_shutting_down.txt").read_text())
    (incident,) = _incidents(events)
    assert incident["category"] == "nccl" and _warnings(events) == []


def test_a_store_operation_that_raised_keeps_the_incident(pack):
    lines = (NCCL / "store_gone_should_dump_two_ranks_fragment.log").read_text().splitlines()[1:]
    text = "\n".join(lines) + ("\n[rank82]: torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. "
                               "Connection was likely closed. Did the remote server shutdown or crash?\n")
    events = _events(pack, text)
    assert _incidents(events) and _warnings(events) == []


# NCCL's WARN lines as its WARN macro prints them: "host:pid:tid [dev] file:line NCCL WARN <message>"
HEAD = "gpu-node-1:2301:2330 [0] proxy.cc:1861 NCCL WARN "


@pytest.mark.parametrize("message", [
    "[Service thread] Error encountered progressing operation=Connect, res=3, closing connection",
    "[Service thread] Could not receive type from localRank 1, res=3, closed=1",
    "[Proxy Service] proxyDestroy failed",
    "[Proxy Service 1] Failed to execute operation Close from rank 1, retcode 3",
    "commReclaim: comm 0x55d1c2a0 (rank = 1) in commDestroySync, error 3",
    "ncclProxyStop: comm 0x55d1c2a0 (rank = 1) destroys proxy resource error 3",
    "Cuda failure 'driver shutting down'",
    "NCCL_WORK_FIFO_BYTES=1000 is being ignored because it is not a power of 2.",
    "NET/Socket : NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
    "NET/IB : mlx5_0:1 Got non-fatal async event: port active(9)",
    "NET/IB : mlx5_0:1 GID table changed",
    "No NVML device handle. Skipping nvlink detection.",
    "Could not find a path for pattern 4, falling back to simple order",
    "NET/IB : Unable to open device mlx5_3",
])
def test_nccls_going_on_warnings_after_serving_lines_are_warnings(pack, message: str):
    events = _events(pack, BATCH.format(n=1) + HEAD + message + "\n")
    assert _incidents(events) == [] and len(_warnings(events)) == 1


@pytest.mark.parametrize("message", [
    "[Proxy Service 3] Failed to execute operation Setup from rank 3, retcode 1",
    "socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort",
    "Cuda failure 'out of memory'",
    "NET/IB : Got completion from peer 10.0.35.1<49189> with error 4, opcode 5327, len 5327, vendor err 81 (Send)",
    "NET/IB : mlx5_0:1 async fatal event: local catastrophic error",
])
def test_nccls_failing_warnings_stay_incidents(pack, message: str):
    events = _events(pack, BATCH.format(n=1) + HEAD + message + "\n")
    assert [e["category"] for e in _incidents(events)] == ["nccl"]


def test_a_going_on_warning_the_launch_serves_past_is_taken_back_as_before(pack):
    text = (BATCH.format(n=1) + HEAD + "[Service thread] Could not receive type from localRank 1, res=3, closed=1\n"
            + BATCH.format(n=2) + BATCH.format(n=3))
    events = _events(pack, text)
    assert _incidents(events) == []
    assert [w["kind"] for w in events if w["event"] == "warning"] == ["survived_while_serving"]


def test_goes_on_after_names_what_printed_them():
    from sglang_doctor.model import Incident, Line

    line = Line(1, HEAD + "commReclaim: comm 0x1 (rank = 0) in commDestroySync, error 3")
    inc = Incident("signal", 1, 1, lines=[line], signals=[line], signal_names=["nccl_warn"])
    assert survived.goes_on_after(inc) == "NCCL's proxy thread or teardown"
    bad = Line(1, HEAD + "Cuda failure 'out of memory'")
    assert survived.goes_on_after(Incident("signal", 1, 1, lines=[bad], signals=[bad], signal_names=["nccl_warn"])) is None


# An HTTP client's failed connection (urllib3's NewConnectionError) printed while the server loads:
# a script polling /health before the port is open.  The ready line shows the launch came up after
# it; only a line that names the PD side (the bootstrap server, prefill / decode) is the KV
# transport's, which the warm-up does not exercise (incidents/survived.py ``is_transport``).
POLL = ("Waiting for server... HTTPConnectionPool(host='127.0.0.1', port=30000): Max retries exceeded with url: "
        "/health (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f1>: Failed to "
        "establish a new connection: [Errno 111] Connection refused'))\n")
PD_FETCH = ("[2026-01-01 00:00:50 TP0] Error fetching prefill parallel info from bootstrap: HTTPConnectionPool("
            "host='10.0.0.2', port=8998): Max retries exceeded with url: /route (Caused by NewConnectionError("
            "\"HTTPConnection(host='10.0.0.2', port=8998): Failed to establish a new connection: [Errno 111] "
            "Connection refused\"))\n")


def test_a_clients_refused_connection_while_the_server_loads_is_survived(pack):
    from tests.incidents.test_survived_before_ready import (CAPTURED, DUMP, READY, SCHEDULER_UP, START, UVICORN,
                                                            WARMUP)

    events = _events(pack, DUMP + START + POLL + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY)
    assert _incidents(events) == []
    assert [w["kind"] for w in events if w["event"] == "warning"] == ["survived_before_ready"]


def test_the_pd_bootstraps_refused_connection_stays_the_transports(pack):
    from tests.incidents.test_survived_before_ready import (CAPTURED, DUMP, READY, SCHEDULER_UP, START, UVICORN,
                                                            WARMUP)

    events = _events(pack, DUMP + START + PD_FETCH + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY)
    assert [e["category"] for e in _incidents(events)] == ["nccl"]



def _signal_incident(text: str):
    from sglang_doctor.model import Incident, Line

    line = Line(1, text.rstrip("\n"))
    return Incident("signal", 1, 1, lines=[line], signals=[line], signal_names=["transfer_error"])


def test_a_clients_refused_connection_alone_is_a_warning(pack):
    # a script's /health poll pasted with the server's log, after its stop or from before it was up
    # (bench/healthy_bait.py (f) noise): another process's retried line, not the server's failure
    events = _events(pack, POLL)
    assert _incidents(events) == []
    (warning,) = _warnings(events)
    assert "HTTP client" in warning["message"]
    assert "HTTP client" in survived.goes_on_after(_signal_incident(POLL))


def test_a_clients_refused_connection_before_a_death_keeps_the_incident(pack):
    events = _events(pack, POLL + SIGQUIT)
    assert _incidents(events) and _warnings(events) == []


def test_the_pd_bootstraps_refused_connection_is_no_clients_line():
    assert survived.goes_on_after(_signal_incident(PD_FETCH)) is None
