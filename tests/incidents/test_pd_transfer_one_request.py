"""One request's failed KV transfer in PD disaggregation (incidents/survived.py ``request_transfer``,
pipeline.py ``_note_transport``).

SGLang 0.5.9 / 0.5.23 disaggregation/decode.py and prefill.py log "Decode (Prefill) transfer
failed for request rank=N ... with exception KVTransferError(bootstrap_room=R): <reason>", abort
that request with a 500 and go on serving.  So one request's failure for a reason of its own
(the ``record_failure`` reasons of disaggregation/common/conn.py: a timeout, a duplicate or
cancelled room, a DP-routing conflict, NIXL's abort notification) followed by the launch's batch
lines is a warning the server survived; a reason that names the peer dead or the transport
failing, a second request's failure, the transport's own error lines, or a death after it stay
``nccl.kv_transfer_failed``.  A paste that ends right after it keeps the incident with lowered
confidence and says so.
"""

from __future__ import annotations

import pytest

from sglang_doctor.incidents import survived
from tests.incidents.test_survived_before_ready import _events, _incidents
from tests.incidents.test_survived_while_serving import GOES_ON, SERVING, UP, _decode, _ok, _warnings

RULE = "nccl.kv_transfer_failed"


def _failed(room: int, reason: str, stamp: str = "02:02", ranks=(0, 1), side: str = "Decode") -> str:
    req = "decode_req.req" if side == "Decode" else "req"
    return "".join(f"[2026-01-01 00:{stamp} TP{r}] {side} transfer failed for request rank={r} {req}.rid='5a0c19e2d4b8"
                   f"{room % 1000:03d}' {req}.bootstrap_room={room} with exception KVTransferError(bootstrap_room="
                   f"{room}): {reason}\n" for r in ranks)


def _err500(stamp: str = "02:02") -> str:
    return f'[2026-01-01 00:{stamp}] INFO:     127.0.0.1:51736 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'


# the record_failure reasons about one request alone (0.5.9 mooncake/conn.py, 0.5.23 common/conn.py, nixl/conn.py)
ONE_REQUEST = {
    "timeout_bootstrapping_059": "Request {room} timed out after 300.0s in KVPoll.Bootstrapping",
    "timeout_waiting_0523": "Request {room} timed out after 300.0s in KVPoll.WaitingForInput",
    "prefill_wait_0523": "Timed out waiting for prefill completion",
    "duplicate_room_0523": "Duplicate or cancelled bootstrap room",
    "duplicate_decode_room_0523": "Duplicate decode bootstrap room",
    "dp_conflict_0523": ("follow_bootstrap_room conflict: dispatched to dp_rank 1 but bootstrap_room {room} implies "
                         "dp_rank 0. Set SGLANG_DISAGGREGATION_FORCE_QUERY_PREFILL_DP_RANK=1 to allow mixed routing."),
    "nixl_abort_0523": "Aborted by decode-side abort notification.",
}
# reasons that name the peer dead / unreachable or the transfer engine failing
TRANSPORT = {
    "heartbeat_lost_0523": "Lost connection with prefill instance (bootstrap_addr: 10.0.0.5:8998)",
    "heartbeat_losing_059": "Losing connection with prefill instance (bootstrap_addr: 10.0.0.5:8998)",
    "might_be_dead": "Failed to get kvcache from prefill instance, it might be dead",
    "now_down_0523": ("Prefill server with bootstrap_addr: 10.0.0.5:8998 is healthy before, but now it is down. "
                      "Request (bootstrap_room: {room}) has been marked as failed."),
    "parallel_info": "Could not fetch prefill parallel info from bootstrap_addr: 10.0.0.5:8998",
    "send_chunk_059": "Failed to send kv chunk of {room} to 10.0.0.6:17001",
    "send_chunk_cut": "Failed to send kv chunk",
    "connect_0523": "connect to prefill 10.0.0.5:17001 failed",
    "other_rank": "Failed due to an unknown reason from another rank",
}
ROOM = 8815522904417


def _rules(events: list[dict]) -> list[str]:
    return [e["rule"] for e in _incidents(events)]


@pytest.mark.parametrize("reason", sorted(ONE_REQUEST))
def test_one_requests_failure_the_server_serves_past_is_survived(pack, reason: str):
    """Fails on the old code: every failed transfer was an incident whatever followed."""
    text = UP + SERVING + _failed(ROOM, ONE_REQUEST[reason].format(room=ROOM)) + _err500() + GOES_ON
    events = _events(pack, text)
    assert _rules(events) == []
    [warning] = _warnings(events)
    assert warning["rule"] == RULE and "went on serving" in warning["message"]


@pytest.mark.parametrize("side", ["Decode", "Prefill"])
@pytest.mark.parametrize("reason", sorted(TRANSPORT))
def test_a_reason_that_names_the_peer_or_the_transport_stays_an_incident(pack, reason: str, side: str):
    """Served past or not: the batch lines after it do not take it back (the peer or the
    transport is gone, every later request to it fails the same way)."""
    text = UP + SERVING + _failed(ROOM, TRANSPORT[reason].format(room=ROOM), side=side) + _err500() + GOES_ON
    events = _events(pack, text)
    assert _rules(events) == [RULE] and _warnings(events) == []


@pytest.mark.parametrize("exception", ["RuntimeError: Request 123 timed out after 3.0s",
                                       "RuntimeError: Mooncake transfer of 40 pages returned -1"])
def test_an_exception_that_is_not_KVTransferError_stays_an_incident(pack, exception: str):
    """A rule's literal takes the line, not the transport's signal: still the KV transport's
    failure, even with a one-request reason's words."""
    failed = ("[2026-01-01 00:02:02 TP0] Prefill transfer failed for request rank=0 req.rid=5f1c2b "
              f"req.bootstrap_room=123 with exception {exception}\n")
    events = _events(pack, UP + SERVING + failed + GOES_ON)
    assert len(_incidents(events)) == 1 and _warnings(events) == []


def test_a_second_requests_failure_makes_both_the_transports(pack):
    """Two rooms fail before the batch lines that would take the first back: both stand (the
    held one is confirmed), none is a warning."""
    reason = ONE_REQUEST["timeout_waiting_0523"]
    text = (UP + SERVING + _failed(ROOM, reason.format(room=ROOM)) + _decode("02:03")
            + _failed(ROOM + 1, reason.format(room=ROOM + 1), stamp="02:04") + GOES_ON)
    events = _events(pack, text)
    assert _rules(events) == [RULE, RULE] and _warnings(events) == []


def test_a_second_requests_failure_after_the_first_was_served_past_stays(pack):
    reason = ONE_REQUEST["timeout_waiting_0523"]
    text = (UP + SERVING + _failed(ROOM, reason.format(room=ROOM)) + GOES_ON
            + _failed(ROOM + 1, reason.format(room=ROOM + 1), stamp="02:07") + GOES_ON)
    events = _events(pack, text)
    assert _rules(events) == [RULE] and len(_warnings(events)) == 1


def test_the_same_requests_ranks_split_by_another_line_are_one_request(pack):
    """TP1's line of the same room after an access line: still one request (fails on the old code)."""
    reason = ONE_REQUEST["duplicate_room_0523"]
    text = (UP + SERVING + _failed(ROOM, reason, ranks=(0,)) + _ok("02:02")
            + _failed(ROOM, reason, ranks=(1,)) + GOES_ON)
    events = _events(pack, text)
    assert _rules(events) == [] and _warnings(events)


def test_the_transports_own_error_line_in_the_launch_keeps_it(pack):
    """A Mooncake error line (transfer_error) earlier in the launch: the transport is failing."""
    mooncake = "E0101 00:02:01.940686 572100 rdma_transport.cpp:529] Memory region not registered by any active device(s): 0x7f4e02001680\n"
    text = (UP + SERVING + mooncake + _decode("02:01") + _decode("02:01") + _decode("02:01")
            + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + GOES_ON)
    assert RULE in _rules(_events(pack, text))


def test_a_death_after_it_keeps_it(pack):
    died = "[2026-01-01 00:02:03] Received sigquit from a child process. It usually means the child failed.\n"
    text = UP + SERVING + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + died
    events = _events(pack, text)
    assert RULE in _rules(events) and _warnings(events) == []


def test_a_paste_that_ends_after_it_keeps_it_with_lower_confidence(pack):
    """Unknown stays unknown: an incident, at most survived.UNPROVED_CONFIDENCE, the assumption
    said (fails on the old code: 0.8, nothing said)."""
    text = _decode("02:00") + _decode("02:01") + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + _err500()
    [incident] = _incidents(_events(pack, text))
    assert incident["rule"] == RULE
    assert incident["confidence"] <= survived.UNPROVED_CONFIDENCE
    assert survived.UNPROVED_ASSUMPTION in incident["assumed"]


def test_a_fragment_without_a_ready_line_is_judged_by_its_batch_lines(pack):
    """The line itself is printed only while serving (the warm-up's bootstrap host is fake): a
    fragment with no ready line that serves past it is a warning (fails on the old code)."""
    text = _decode("02:00") + _failed(ROOM, ONE_REQUEST["timeout_waiting_0523"].format(room=ROOM)) + GOES_ON
    events = _events(pack, text)
    assert _rules(events) == [] and _warnings(events)


def test_a_live_stream_reports_it_provisional_and_withdraws_it(pack):
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack)  # live: not whole_log
    text = UP + SERVING + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + GOES_ON
    events = pipe.feed(text.encode()) + pipe.flush_idle() + pipe.finish()
    [incident] = _incidents(events)
    assert incident["provisional"] == "serving"
    assert [w for w in events if w["event"] == "warning" and w.get("withdraws")]
