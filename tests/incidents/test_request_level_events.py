"""A failure SGLang handles for one request, with nothing after it: a request-level warning, not
an incident (incidents/survived.py "one request's handled failure"; pipeline.py
``_request_level_at_end``), unless a death of the launch follows it.

Two kinds: one PD request's failed KV transfer for a reason of its own (disaggregation/decode.py
and prefill.py abort that request with a 500 and go on), and an exception line that the next
line shows answered to its client with a 4xx (entrypoints/openai/serving_base.py
``handle_request`` and http_server.py answer ``ValueError`` / ``HTTPException`` so).
"""

from __future__ import annotations

from sglang_doctor.incidents import survived
from tests.incidents.test_survived_before_ready import _events, _incidents

# sgl-project/sglang#11648 (free), the decode node's log pasted in the issue body, verbatim as
# pasted (0.5.3, DeepSeek R1 PD on 6x8 H20, `sglang bench` at concurrency 128): several requests
# time out waiting for their KV in the same second, the paste is cut inside the next line.
ISSUE_11648 = (
    "[2025-10-15 11:03:35 DP6 TP6 EP6] Some requests fail to receive KV Cache transfer done signal after bootstrapping. "
    "If a greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to "
    "relax the timeout condition. \n"
    "[2025-10-15 11:03:35 DP6 TP6 EP6] Decode transfer failed for request rank=6 "
    "decode_req.req.rid='cd00baf7d2fc4dcf8535c3a25f0288a3' decode_req.req.bootstrap_room=8360203925601259718 with "
    "exception KVTransferError(bootstrap_room=8360203925601259718): Request 8360203925601259718 timed out after 600.0s "
    "in KVPoll.WaitingForInput\n"
    "[2025-10-15 11:03:35 DP6 TP6 EP6] Decode transfer failed for request rank=6 "
    "decode_req.req.rid='de2b8335632d474fb24b2eed0658e1e7' decode_req.req.bootstrap_room=4699239566385471430 with "
    "exception KVTransferError(bootstrap_room=4699239566385471430): Request 4699239566385471430 timed out after 600.0s "
    "in KVPoll.WaitingForInput\n"
    "[2025-10-15 11:03:35 DP0 TP0 EP0] Some requests fail to receive KV Cache transfer done signal after bootstrapping. "
    "If a greater mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 minutes) to "
    "relax the timeout condition. \n"
    "[2025-10-15 11:03:35 DP0 TP0 EP0] Decode transfer failed for request rank=0 decode_req.req.rid='50af9"
)
SIGQUIT = "[2025-10-15 11:03:36] Received sigquit from a child process. It usually means the child failed.\n"


def _request_warnings(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "request_failed"]


def test_a_real_burst_of_request_timeouts_that_the_paste_ends_in_is_no_incident(pack):
    """Fails on session 22's code (two rooms: the transport's, incidents)."""
    events = _events(pack, ISSUE_11648)
    assert _incidents(events) == []
    warnings = _request_warnings(events)
    assert [i for w in warnings for i in w["request"]["ids"]] == ["cd00baf7d2fc4dcf8535c3a25f0288a3",
                                                                  "de2b8335632d474fb24b2eed0658e1e7"]
    assert all("timed out after 600.0s in KVPoll.WaitingForInput" in w["request"]["reason"] for w in warnings)


def test_the_same_paste_with_a_death_after_it_keeps_the_incidents(pack):
    """The real paste, completed with the parent's sigquit line: positive evidence of a death."""
    events = _events(pack, ISSUE_11648 + "\n" + SIGQUIT)
    assert "nccl.kv_transfer_failed" in [e["rule"] for e in _incidents(events)]
    assert _request_warnings(events) == []


def test_the_tuned_abortreq_paste_stays_quiet(pack):
    """corpus/field20/001 (tuned, category none): a client's abort, never an incident."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "corpus" / "field20"
            / "001-none-pd-decode-kv-transfer-aborted-by-abortreq-after-ready-cut.log").read_text()
    assert _incidents(_events(pack, text)) == []


BATCHES = (
    "[2026-01-01 00:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.02, "
    "#running-req: 3, #queue-req: 0\n"
    "[2026-01-01 00:00:02 TP0] Decode batch, #running-req: 4, #token: 1840, token usage: 0.02, cuda graph: True, "
    "gen throughput (token/s): 342.17, #queue-req: 0\n"
)


def _answered(status: str, exception: str = "ValueError: Invalid key_type: lora_path=abc") -> str:
    return (BATCHES + exception + "\n"
            + f'[2026-01-01 00:00:04] INFO:     127.0.0.1:51754 - "POST /v1/chat/completions HTTP/1.1" {status}\n')


def test_an_exception_answered_with_a_400_at_the_end_is_a_request_warning(pack):
    events = _events(pack, _answered("400 Bad Request"))
    assert _incidents(events) == []
    [warning] = _request_warnings(events)
    assert warning["request"]["answer"] == '"POST /v1/chat/completions HTTP/1.1" 400 Bad Request'
    assert warning["request"]["reason"].startswith("ValueError: Invalid key_type")


def test_a_blank_line_before_the_answer_changes_nothing(pack):
    text = _answered("400 Bad Request").replace("abc\n", "abc\n\n")
    assert _incidents(_events(pack, text)) == []


def test_a_500_answer_ties_nothing(pack):
    """A 500 is also what a request gets when its scheduler aborted it for any reason."""
    assert len(_incidents(_events(pack, _answered("500 Internal Server Error")))) == 1


def test_a_type_the_handlers_answer_with_a_500_stays_an_incident(pack):
    """serving_base answers a RuntimeError with a 500 (and logs "Error in request: "): a 400
    after one is another request's."""
    text = _answered("400 Bad Request", "RuntimeError: Invalid key_type: lora_path=abc")
    assert len(_incidents(_events(pack, text))) == 1


def test_no_answer_after_it_stays_an_incident_at_lowered_confidence(pack):
    [incident] = _incidents(_events(pack, BATCHES + "ValueError: Invalid key_type: lora_path=abc\n"))
    assert incident["confidence"] <= survived.UNPROVED_CONFIDENCE


def test_a_death_after_the_answer_keeps_it(pack):
    text = _answered("400 Bad Request") + SIGQUIT
    events = _events(pack, text)
    assert _incidents(events) and _request_warnings(events) == []


def test_explain_exits_0_and_says_which_request(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "decode.log"
    log.write_text(ISSUE_11648)
    proc = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "text", str(log)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "requests cd00baf7d2fc4dcf8535c3a25f0288a3, de2b8335632d474fb24b2eed0658e1e7 failed" in proc.stdout


def test_a_live_stream_that_goes_quiet_after_it_withdraws_it(pack):
    """watch: a quiet server after one request's failure is an idle one, not a death (the
    confirm wait's ``stand`` gives the request-level warning, never a ``confirmed``)."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack)  # live: not whole_log
    events = pipe.feed(ISSUE_11648.rsplit("\n", 1)[0].encode() + b"\n") + pipe.flush_idle()
    [held] = pipe.undecided()
    events += pipe.stand(held, 30)
    assert [e for e in events if e["event"] == "confirmed"] == []
    [warning] = _request_warnings(events)
    assert warning["withdraws"]["rule"] == "nccl.kv_transfer_failed"


def test_a_transfer_line_cut_inside_its_reason_at_the_end_is_a_request_warning_that_says_so(pack):
    """Any KVPoll.Failed is handled for its request; the reason only says whether the PD pair's
    transport is failing, and a cut one says nothing: the warning says it is not ruled out."""
    line = ISSUE_11648.split("\n")[1]
    text = line[:line.index("KVTransferError(") + len("KVTransferError(bootstr")] + "\n"
    events = _events(pack, BATCHES + text)
    assert _incidents(events) == []
    [warning] = _request_warnings(events)
    assert warning["request"]["reason"] is None and "is not ruled out" in warning["message"]


def test_the_tuned_cut_transfer_line_after_the_transports_error_stays_an_incident(pack):
    """corpus/field9/018 (tuned, nccl): Mooncake's TCP transport error, then the prefill's
    transfer line cut after "with exception": the transport's."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "corpus" / "field9"
            / "018-nccl-pd-mooncake-tcp-writebody-bad-address-prefill-cut.log").read_text()
    assert "nccl.kv_transfer_failed" in [e["rule"] for e in _incidents(_events(pack, text))]


def test_the_tuned_abortreq_paste_cut_at_its_key_lines_head_stays_quiet(pack):
    """corpus/field20/001 cut inside its first transfer line ("code transfer failed ...
    Aborted by AbortReq.", as bench/healthy_bait.py's cut_key_head makes it), then the sibling
    rank's line the paste cut: a client's abort, one request's (fails on session 22's code)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "corpus" / "field20"
            / "001-none-pd-decode-kv-transfer-aborted-by-abortreq-after-ready-cut.log").read_text()
    start = text.index("Decode transfer failed") + len("De")
    events = _events(pack, text[start:])
    assert _incidents(events) == []
    [warning] = _request_warnings(events)
    assert warning["request"]["reason"].endswith("Aborted by AbortReq.")
