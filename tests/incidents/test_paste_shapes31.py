"""Browser-joined pastes (runs of lines joined by two spaces, bench/robustness.py browser_join)
that session 30's splits left whole, each with a counter-example (session 31):

- a frame's source line with the exception line joined onto it, inside a traceback whose frames
  stood on lines of their own (``    raise KeyboardInterrupt()  KeyboardInterrupt``), and an
  exception line without a message with the next line joined onto it (``KeyboardInterrupt
  nanobind: leaked 4 instances!``): tracebacks.split_source_and_exception, read only while a
  traceback's frames are being read.  The exception line is then the exception, not text after it.
- a paste that ends inside the next record's header (``... Traceback (most recent call last):
  [2025-``): that header's start is a line of its own (records.split_joined_records).
- an exception group's traceback joined: split at Python's group decoration (``  + Exception
  Group Traceback``, ``  | ``; tracebacks.split_joined_group); uvicorn's "Exception in ASGI
  application" joined before it still makes it that request's.
- a batch line with the next line joined on (SGLang separates a batch line's fields with ", ",
  never two spaces; assemble._split_after_batch).
- torch's C++ log header (``[rank7]:[W624 12:52:07.296197118 TCPStore.cpp:106]``) behind a
  wrapper's logger prefix is a record the prefix is learnt from (tracebacks.logger_prefix), as
  SGLang's own header was (session 30).
(The operator's joined or logged ``+ kill -9 <pid>``: tests/incidents/test_operator_kill.py.)
"""

from __future__ import annotations

from conftest import incident_events, incidents_of_lines
from sglang_doctor.incidents import tracebacks
from sglang_doctor.read import records
from tests.incidents.test_paste_shapes30 import SCHED_TB


def test_a_source_line_and_the_exception_line_joined():
    assert tracebacks.split_source_and_exception("    raise KeyboardInterrupt()  KeyboardInterrupt") == [
        "    raise KeyboardInterrupt()", "KeyboardInterrupt"]
    assert tracebacks.split_source_and_exception(
        "    return fn()             ^^^^  torch.OutOfMemoryError: CUDA out of memory.") == [
        "    return fn()             ^^^^", "torch.OutOfMemoryError: CUDA out of memory."]
    assert tracebacks.split_source_and_exception("KeyboardInterrupt  nanobind: leaked 4 instances!") == [
        "KeyboardInterrupt", "nanobind: leaked 4 instances!"]
    # a comment or an argument that names a type, an exception with its message, a word: no join
    assert tracebacks.split_source_and_exception("    x = 1  # ValueError: y") is None
    assert tracebacks.split_source_and_exception("    print(a,  ValueError)") is None
    assert tracebacks.split_source_and_exception("ValueError: a  b") is None
    assert tracebacks.split_source_and_exception("Loading  weights") is None


def test_the_joined_exception_is_the_tracebacks(tmp_path):
    lines = SCHED_TB[:4] + [SCHED_TB[4] + "  " + SCHED_TB[5]]
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.exception.type == "RuntimeError" and "Not enough memory" in inc.exception.message
    # a bare exception with the next line joined on reads as the two lines do
    unjoined = SCHED_TB[:4] + ["    raise KeyboardInterrupt()", "KeyboardInterrupt", "nanobind: leaked 4 instances!"]
    (want,) = incidents_of_lines(tmp_path, unjoined)
    (inc,) = incidents_of_lines(tmp_path, unjoined[:-2] + ["  ".join(unjoined[-2:])])
    assert inc.exception.type == want.exception.type == "KeyboardInterrupt"
    assert inc.exception.message == want.exception.message and inc.lines[-1].text == want.lines[-1].text


def test_outside_a_traceback_an_indented_line_stays_whole(tmp_path):
    # a source-looking line with no traceback open is no frame's source line: nothing is split off
    lines = ["[2025-06-01 10:00:00] Load weight begin. avail mem=20.00 GB",
             "    raise RuntimeError()  RuntimeError: boom"]
    incs = incidents_of_lines(tmp_path, lines)
    assert all(inc.exception is None or inc.exception.message != "boom" for inc in incs)


def test_a_paste_that_ends_inside_a_record_header():
    assert records.split_joined_records("[2025-07-16 14:47:06] Traceback (most recent call last):  [2025-") == [
        "[2025-07-16 14:47:06] Traceback (most recent call last):", "[2025-"]
    assert records.split_joined_records("a  [2025-07-16 14:47:06 TP") == ["a", "[2025-07-16 14:47:06 TP"]
    # shorter than a year and its dash, or no header's start: text
    assert records.split_joined_records("see  [20") is None
    assert records.split_joined_records("see  [2025]") is None
    assert records.split_joined_records("see  [x-") is None


def test_a_request_error_cut_inside_the_next_header_stays_quiet(tmp_path):
    """A request's error record cut right after its traceback's header, the lines joined: what
    the unjoined paste is (quiet: tuned corpus dev/074)."""
    joined = ('[2025-07-16 14:47:06] INFO:     10.0.0.1:0 - "POST /v1/chat/completions HTTP/1.1" 500 Internal '
              "Server Error  [2025-07-16 14:47:06] Error in request:   [2025-07-16 14:47:06] Traceback (most "
              "recent call last):  [2025-")
    p = tmp_path / "log.txt"
    p.write_text(joined)
    from sglang_doctor import pipeline
    from sglang_doctor.diagnose.rules_engine import RuleSet

    assert pipeline.read_incidents(p, RuleSet.load())[1] == []
    assert incidents_of_lines(tmp_path, joined.split("  [")[:1]) == []


ASGI_GROUP = [
    "ERROR 2025-08-07 21:37:03 h11_impl.py:408] Exception in ASGI application",
    "  + Exception Group Traceback (most recent call last):",
    '  |   File "/usr/local/lib/python3.10/dist-packages/starlette/_utils.py", line 77, in collapse_excgroups',
    "  |     yield",
    '  |   File "/usr/local/lib/python3.10/dist-packages/starlette/responses.py", line 271, in __call__',
    "  |     async with anyio.create_task_group() as task_group:",
    '  |   File "/usr/local/lib/python3.10/dist-packages/anyio/_backends/_asyncio.py", line 772, in __aexit__',
    "  |     raise BaseExceptionGroup(",
    "  | exceptiongroup.ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
]


def test_an_exception_groups_joined_lines_are_lines_again():
    assert tracebacks.split_joined_group("  ".join(ASGI_GROUP[:5])) == ASGI_GROUP[:5]
    assert tracebacks.split_joined_group("  ".join(ASGI_GROUP[5:])) == ASGI_GROUP[5:]
    # a line with neither the group's header nor its decoration first, or no join: not split
    assert tracebacks.split_joined_group("x  |   y  | z") is None
    assert tracebacks.split_joined_group(ASGI_GROUP[2]) is None
    assert tracebacks.split_joined_group("  | a table | with | cells |") is None


def test_a_joined_request_group_reads_as_the_unjoined_one(tmp_path):
    """One request's exception group under uvicorn's "Exception in ASGI application": joined by a
    browser copy, the record and the group's header on one line, it is still that request's
    (what the unjoined text is: no incident)."""
    assert incidents_of_lines(tmp_path, ASGI_GROUP) == []
    joined = ["  ".join(ASGI_GROUP[:5]), "  ".join(ASGI_GROUP[5:8]), ASGI_GROUP[8]]
    assert incidents_of_lines(tmp_path, joined) == []


BATCH = ("[2026-12-07 04:10:01] Prefill batch, #new-seq: 1, #new-token: 2, #cached-token: 0, token usage: 0.00, "
         "#running-req: 0, #queue-req: 0, #pending-token: 0, cpu graph: False, input throughput (token/s): 1.33")
RETRY = ("Waiting for server to be ready... (attempt 3/60): HTTPConnectionPool(host='127.0.0.1', port=30000): Max "
         "retries exceeded with url: /health (Caused by NewConnectionError('<urllib3.connection.HTTPConnection "
         "object at 0x7f2b5c1d9e10>: Failed to establish a new connection: [Errno 111] Connection refused'))")


def test_a_line_joined_after_a_batch_line_is_a_line_of_its_own(pack):
    """SGLang separates a batch line's fields with ", ", never two spaces: text after two spaces
    is the next line a copy joined on (a client's retry message here), read as what it is."""
    from sglang_doctor.incidents.assemble import _split_after_batch

    assert _split_after_batch(BATCH + "  " + RETRY) == [BATCH, RETRY]
    assert _split_after_batch(BATCH + "  " + "  warnings.warn(") == [BATCH, "  warnings.warn("]
    assert _split_after_batch(BATCH) is None and _split_after_batch(BATCH + "   ") is None
    assert _split_after_batch("web-1  | " + BATCH) is None  # a compose prefix's spaces come before the batch
    after = ['[2026-12-07 04:10:05] INFO:     127.0.0.1:49678 - "GET /health HTTP/1.1" 200 OK',
             BATCH.replace("04:10:01", "04:10:06")]
    ready = "[2026-12-07 04:10:00] The server is fired up and ready to roll!"
    text = "\n".join([ready, BATCH, RETRY] + after) + "\n"
    assert incident_events(pack, text, whole_log=True) == []  # a client's retry while the server went on
    assert incident_events(pack, text.replace(BATCH + "\n", BATCH + "  "), whole_log=True) == []


def test_a_wrappers_logger_before_torchs_own_records():
    """torch's C++ log header (c10's ``[W624 12:52:07.296197118 ProcessGroupNCCL.cpp:1659]``, month
    unpadded, the ``[rank7]:`` torch.distributed puts before it) behind a wrapper's logger prefix:
    the prefix is learnt there, as before SGLang's own header."""
    pref = "E0601 08:15:02.000000 32387 server.py:88] "
    line = pref + ("[rank7]:[W624 12:52:07.296197118 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID 0 Rank 7] Failed "
                   'to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early)')
    got = tracebacks.logger_prefix(line)
    assert got is not None and got[1] is True and got[0].match(line).end() == len(pref)
    assert tracebacks.has_record_inside(pref + "[W1124 01:02:03.000001 TCPStore.cpp:106] [c10d] sendBytes failed")
    # a C++ file named in a message, a bracket that is no torch header: no record inside
    assert not tracebacks.has_record_inside(pref + "see [csrc/foo.cpp:12] for details")
    assert not tracebacks.has_record_inside("error in foo.cpp:12 [W624 x]")


def test_torchs_store_warnings_behind_a_logger_stay_quiet(pack):
    """The heartbeat monitor's and TCPStore's warnings of a run whose store's host had gone
    (fixtures/nccl: quiet as pasted) relayed line by line through a glog-style logger."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "fixtures/nccl/heartbeat_store_gone_should_dump_fragment.log").read_text()
    assert incident_events(pack, text, whole_log=True) == []
    logged = "".join(f"E0601 08:15:{2 + i // 7:02d}.{37 * i % 1000:03d}000 32387 server.py:88] {line}\n"
                     for i, line in enumerate(text.splitlines()))
    assert incident_events(pack, logged, whole_log=True) == []
