"""One request's failed KV transfer in PD disaggregation (incidents/survived.py ``request_transfer``,
``request_event``, ``every_request_failed``; pipeline.py ``_note_transport``, ``_request_level_at_end``).

SGLang 0.5.9 / 0.5.23 disaggregation/decode.py and prefill.py log "Decode (Prefill) transfer
failed for request rank=N ... with exception KVTransferError(bootstrap_room=R): <reason>", abort
that request with a 500 and go on serving.  So one request's failure for a reason of its own
(the ``record_failure`` reasons of disaggregation/common/conn.py: a timeout, a duplicate or
cancelled room, a DP-routing conflict, NIXL's abort notification) is a request-level event: a
warning the server survived when the launch's batch lines follow, a request-level warning naming
the request and its reason when the paste ends right after it (session 23: the end of the paste
is no evidence of a death; that case flipped from an incident at lowered confidence).  A reason
that names the peer dead or the transport failing, the transport's own error lines, every request
failing for a long span, or a death after it stay ``nccl.kv_transfer_failed``.
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


def _request_warnings(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "request_failed"]


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


def test_requests_failing_one_by_one_are_each_their_own(pack):
    """Two rooms fail with a batch line between them: each is that request's (session 23; on
    session 22's code both stood as the transport's)."""
    reason = ONE_REQUEST["timeout_waiting_0523"]
    text = (UP + SERVING + _failed(ROOM, reason.format(room=ROOM)) + _decode("02:03")
            + _failed(ROOM + 1, reason.format(room=ROOM + 1), stamp="02:04") + GOES_ON)
    events = _events(pack, text)
    assert _rules(events) == [] and len(_warnings(events)) == 2


def test_a_second_requests_failure_after_the_first_was_served_past_is_its_own(pack):
    reason = ONE_REQUEST["timeout_waiting_0523"]
    text = (UP + SERVING + _failed(ROOM, reason.format(room=ROOM)) + GOES_ON
            + _failed(ROOM + 1, reason.format(room=ROOM + 1), stamp="02:07") + GOES_ON)
    events = _events(pack, text)
    assert _rules(events) == [] and len(_warnings(events)) == 2


def _every_request(span_stamps: list[str]) -> str:
    reason = ONE_REQUEST["timeout_bootstrapping_059"]
    return "".join(_failed(ROOM + k, reason.format(room=ROOM + k), stamp=stamp) + _err500(stamp)
                   for k, stamp in enumerate(span_stamps))


def test_every_request_failing_for_a_long_span_is_the_transports(pack):
    """EVERY_REQUEST rooms, LONG_SPAN seconds apart, no batch line between: no request got
    through, the PD pair is not serving; every one of them stands."""
    text = UP + SERVING + _every_request(["02:02", "02:40", "03:10"])
    assert _rules(_events(pack, text)) == [RULE] * survived.EVERY_REQUEST


def test_a_burst_that_times_out_together_is_each_requests(pack):
    """The same three rooms within seconds (requests sent together time out together): the span
    is short, each is its request's."""
    events = _events(pack, UP + SERVING + _every_request(["02:02", "02:02", "02:03"]))
    assert _rules(events) == [] and len(_request_warnings(events)) == survived.EVERY_REQUEST


def test_a_batch_line_between_them_says_requests_got_through(pack):
    stamps = ["02:02", "02:40", "03:10"]
    reason = ONE_REQUEST["timeout_bootstrapping_059"]
    text = (UP + SERVING + _failed(ROOM, reason.format(room=ROOM), stamp=stamps[0]) + _decode("02:20")
            + _every_request(stamps[1:]).replace(str(ROOM), str(ROOM + 7)).replace(str(ROOM + 1), str(ROOM + 8)))
    assert _rules(_events(pack, text)) == []


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
    assert RULE in _rules(events) and _warnings(events) == [] and _request_warnings(events) == []


def test_a_paste_that_ends_after_it_is_a_request_level_warning(pack):
    """SGLang's code says what follows (the request is aborted with a 500, the loop goes on): no
    incident; a warning that names the request and the reason (session 23: flipped from an
    incident at survived.UNPROVED_CONFIDENCE, the assumption said)."""
    text = _decode("02:00") + _decode("02:01") + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + _err500()
    events = _events(pack, text)
    assert _incidents(events) == [] and _warnings(events) == []
    [warning] = _request_warnings(events)
    assert warning["rule"] == RULE
    assert warning["request"] == {"id": "5a0c19e2d4b8417", "ids": ["5a0c19e2d4b8417"],
                                  "reason": "KVTransferError(bootstrap_room=8815522904417): Timed out waiting for "
                                            "prefill completion"}
    assert "request 5a0c19e2d4b8417 failed" in warning["message"]


@pytest.mark.parametrize("reason", sorted(TRANSPORT))
def test_a_transport_reason_at_the_end_stays_an_incident(pack, reason: str):
    """The peer or the transport is failing: the tuned labels name it an incident (nccl)."""
    text = _decode("02:00") + _decode("02:01") + _failed(ROOM, TRANSPORT[reason].format(room=ROOM)) + _err500()
    [incident] = _incidents(_events(pack, text))
    assert incident["rule"] == RULE


SCHEDULER_DIED = ("[2026-01-01 00:02:03 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                  '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2700, in run_scheduler_process\n'
                  "    scheduler.event_loop_normal_disagg_decode()\n"
                  '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/decode.py", line 870, in pop_transferred\n'
                  "    raise RuntimeError(\"Unexpected poll case\")\n"
                  "RuntimeError: Unexpected poll case\n")


@pytest.mark.parametrize("after", ["sigquit", "scheduler", "killed"])
def test_a_death_after_it_at_the_end_keeps_it(pack, after: str):
    death = {"sigquit": "[2026-01-01 00:02:03] Received sigquit from a child process. It usually means the child failed.\n",
             "scheduler": SCHEDULER_DIED,
             "killed": "Killed\n"}[after]
    text = _decode("02:00") + _decode("02:01") + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + death
    events = _events(pack, text)
    assert RULE in _rules(events) and _warnings(events) == [] and _request_warnings(events) == []


def test_a_fragment_without_a_ready_line_is_judged_by_its_batch_lines(pack):
    """The line itself is printed only while serving (the warm-up's bootstrap host is fake): a
    fragment with no ready line that serves past it is a warning (fails on the old code)."""
    text = _decode("02:00") + _failed(ROOM, ONE_REQUEST["timeout_waiting_0523"].format(room=ROOM)) + GOES_ON
    events = _events(pack, text)
    assert _rules(events) == [] and _warnings(events)


def test_a_live_stream_withdraws_it_when_the_input_ends_after_it(pack):
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack)  # live: not whole_log
    text = _decode("02:00") + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + _err500()
    events = pipe.feed(text.encode()) + pipe.finish()
    [incident] = _incidents(events)
    assert incident["provisional"] == "serving"
    [warning] = [w for w in events if w["event"] == "warning"]
    assert warning["kind"] == "request_failed" and warning["withdraws"]["rule"] == RULE
    assert not [e for e in events if e["event"] == "confirmed"]


def test_a_live_stream_reports_it_provisional_and_withdraws_it(pack):
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack)  # live: not whole_log
    text = UP + SERVING + _failed(ROOM, ONE_REQUEST["prefill_wait_0523"]) + GOES_ON
    events = pipe.feed(text.encode()) + pipe.flush_idle() + pipe.finish()
    [incident] = _incidents(events)
    assert incident["provisional"] == "serving"
    assert [w for w in events if w["event"] == "warning" and w.get("withdraws")]


# -- a sibling rank's echo of the request's failure (session 24) ----------------------------

OTHER_RANK = TRANSPORT["other_rank"]


@pytest.mark.parametrize("order", ["reason_first", "echo_first"])
def test_a_sibling_ranks_echo_of_a_requests_own_reason_is_that_requests(pack, order: str):
    """0.5.23 common/conn.py ``failure_exception``: a rank with no failure record of its own
    raises "Failed due to an unknown reason from another rank" when the poll all-reduced over the
    TP ranks says another rank's transfer failed; with that other rank's line giving a reason of
    the request alone it is that request's failure (fails on the old code: an incident)."""
    own = _failed(ROOM, ONE_REQUEST["timeout_waiting_0523"].format(room=ROOM), ranks=(0,))
    echo = _failed(ROOM, OTHER_RANK, ranks=(1,))
    lines = own + echo if order == "reason_first" else echo + own
    events = _events(pack, UP + SERVING + lines + _err500() + GOES_ON)
    assert _rules(events) == []
    [warning] = _warnings(events)
    assert warning["rule"] == RULE
    ended = _events(pack, _decode("02:00") + _decode("02:01") + lines + _err500())
    assert _incidents(ended) == []
    [request] = _request_warnings(ended)
    assert "timed out after 300.0s" in request["request"]["reason"]


def test_an_echo_of_another_requests_reason_stays_the_transports(pack):
    """The echo names another room than the request whose own reason is given: what failed for
    it is not said, as with the echo alone (fresh/014)."""
    other = ROOM + 1
    text = (UP + SERVING + _failed(ROOM, ONE_REQUEST["timeout_waiting_0523"].format(room=ROOM), ranks=(0,))
            + _failed(other, OTHER_RANK, ranks=(1,)) + _err500() + GOES_ON)
    assert _rules(_events(pack, text)) == [RULE]


# -- the handshake and the bootstrap before the transfer (session 24) ------------------------


def _failed_before(room: int, reason: str, head: str, ranks=(0, 1)) -> str:
    req = "decode_req.req" if head.startswith("Decode") else "req"
    return "".join(f"[2026-01-01 00:02:02 TP{r}] {head} for request rank={r} {req}.rid='5a0c19e2d4b8{room % 1000:03d}' "
                   f"{req}.bootstrap_room={room} with exception KVTransferError(bootstrap_room={room}): {reason}\n"
                   for r in ranks)


@pytest.mark.parametrize("head", ["Decode handshake failed", "Prefill bootstrap failed"])
def test_a_failed_handshake_or_bootstrap_is_judged_as_a_failed_transfer(pack, head: str):
    """0.5.9 decode.py:452 / prefill.py:288, 0.5.23 prefill.py:1355 handle these as the transfer's
    line: logged, the request aborted with a 500, the loop goes on.  Before: no signal at all
    (a transport reason formed no incident; a fragment of them was 'no SGLang launch')."""
    timeout = ONE_REQUEST["timeout_bootstrapping_059"].format(room=ROOM)
    events = _events(pack, UP + SERVING + _failed_before(ROOM, timeout, head) + _err500() + GOES_ON)
    assert _rules(events) == [] and [w["rule"] for w in _warnings(events)] == [RULE]
    ended = _events(pack, _decode("02:00") + _decode("02:01") + _failed_before(ROOM, timeout, head))
    assert _incidents(ended) == [] and [w["rule"] for w in _request_warnings(ended)] == [RULE]
    lost = _failed_before(ROOM, TRANSPORT["parallel_info"], head)
    assert _rules(_events(pack, UP + SERVING + lost + _err500() + GOES_ON)) == [RULE]


def test_the_prefills_failed_bootstrap_reported_to_the_decode_is_that_requests(pack):
    """0.5.23 common/conn.py: a prefill whose bootstrap of the request failed sends the decode
    the status Failed with the reason "Prefill bootstrap failed" (that request's)."""
    text = UP + SERVING + _failed(ROOM, "Prefill bootstrap failed") + _err500() + GOES_ON
    events = _events(pack, text)
    assert _rules(events) == [] and [w["rule"] for w in _warnings(events)] == [RULE]
