"""Healthy lines read in their libraries' sources (session 32, bench/healthy_bait.py measure (g)
``sources``, fixtures/healthy/sources/pieces.txt) and what made some of them read as failures:

- NCCL WARN sites whose code sets a fallback and goes on (2.21 / 2.27: the thread-count clamps of
  graph/tuning.cc, socket.cc's spurious connection, the profiler plugin that failed to load, net_ib's
  merged-device count and unknown async event, register.cc's deregistration at teardown):
  incidents/survived.py NONFATAL_NCCL_WARN;
- a paste's first line that opens with another logger's record head (uvicorn's ``WARNING:  ``,
  NCCL's ``host:pid:tid [dev] NCCL INFO``, glog's / c10's ``I1207 ... file.cc:N]``) is that
  record's start, never the middle of an exception message whose type the paste cut
  (read/records.py OWN_RECORD_HEAD, incidents/assemble.py ``_cut_first_line``);
- a first line that ends with the own words of an NCCL line that goes on (the plugin probe's
  ``: when loading libnccl-net.so``) is that line with its head cut, whatever it quotes
  (survived.NONFATAL_NCCL_TAIL).

The counterparts stay failures: the same warnings followed by a death, the WARN sites next to
them that return an error, a paste that begins inside a real exception's message.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sglang_doctor.read import records

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402

SIGQUIT = "[2026-01-01 00:00:50] Received sigquit from a child process. It usually means the child failed.\n"


@pytest.fixture(scope="module")
def engine():
    return healthy_bait.Engine()


def test_every_source_piece_names_its_place_and_source():
    pieces = healthy_bait.source_pieces()
    assert len(pieces) >= 20
    headers = [line for line in healthy_bait.SOURCES.read_text().splitlines() if line.startswith("### ")]
    assert len(headers) == len(pieces)
    for header in headers:
        fields = [f.strip() for f in header[4:].split("|")]
        assert len(fields) == 3 and all(fields), header
        assert fields[1] in healthy_bait.PLACE_ANCHORS, header
    assert all(lines for _name, _place, lines in pieces)


def test_the_source_pieces_raise_no_incident_in_place_at_the_end_or_alone(engine):
    alarms = {(group, name) for group, name, text in healthy_bait.source_texts()
              if group in ("context", "end", "bare") and engine.incidents(text)}
    assert alarms == set()


NEW_FALLBACKS = [
    "gpu-node-1:2301:2330 [0] graph/tuning.cc:19 NCCL WARN Invalid NCCL_NTHREADS 100 (must be a multiple of 32)",
    "gpu-node-1:2301:2338 [0] misc/socket.cc:432 NCCL WARN socketFinalizeAccept: wrong magic 20544547 != 3c0ad41f2c2f6e7b",
    "gpu-node-1:2301:2330 [0] plugin/profiler.cc:172 NCCL WARN Profiler init failed with error (2). Continue without profiler.",
    "gpu-node-1:2301:2350 [0] transport/net_ib.cc:204 NCCL WARN NET/IB : mlx5_0:1 unknown event type (18)",
]


@pytest.mark.parametrize("line", NEW_FALLBACKS)
def test_an_nccl_fallback_alone_is_quiet_and_with_a_death_after_it_is_not(engine, line):
    assert engine.incidents(line + "\n") == []
    assert engine.incidents(line + "\n" + SIGQUIT) != []


@pytest.mark.parametrize("line", [
    # 2.21 socket.cc: the wrong TYPE sets the socket's error state (an error return), unlike a wrong magic
    "gpu-node-1:2301:2338 [0] misc/socket.cc:442 NCCL WARN socketFinalizeAccept: wrong type 3 != 4",
    # 2.27 net_ib.cc: an async ERROR event of the port, not an unknown one
    "gpu-node-1:2301:2350 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_0:1 Got async error event: port error",
    # 2.21 graph/tuning.cc's neighbour that is no clamp
    "gpu-node-1:2301:2330 [0] enqueue.cc:1825 NCCL WARN Error : no algorithm/protocol available for function "
    "AllReduce with datatype ncclBfloat16. NCCL_ALGO was set to NVLS.",
])
def test_the_warn_sites_next_to_them_that_return_an_error_stay_failures(engine, line):
    assert engine.incidents(line + "\n") != []


@pytest.mark.parametrize("text", [
    "WARNING:  Unsupported upgrade request.",
    "ERROR:    Cancel 2 running task(s), timeout graceful shutdown exceeded",
    "CRITICAL: something",
    "gpu-node-1:2301:2352 [0] NCCL INFO [Service thread] Connection closed by localRank 1",
    "gpu-node-1:2301:2330 [0] graph/tuning.cc:19 NCCL WARN Invalid NCCL_NTHREADS 100 (must be a multiple of 32)",
    "I1207 10:05:01.231141 58627 ProcessGroupNCCL.cpp:1132] [PG ID 0 PG GUID 0(default_pg) Rank 0] destroyed",
    "[W1207 10:00:01.123456789 socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500",
    "[rank0]:[W1207 10:00:01.123456789 ProcessGroupNCCL.cpp:1476] Warning: WARNING: destroy_process_group()",
    "[W socket.cpp:464] [c10d] The server socket cannot be initialized",
])
def test_another_loggers_record_head_opens_a_record(text):
    assert records.opens_record(text)


@pytest.mark.parametrize("text", [
    "ERROR: Could not find a version that satisfies the requirement sglang==9.9",  # pip's, one space
    "of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.68 GiB",
    "WARNING: something",  # python logging's basicConfig has no padding: not uvicorn's head
    "Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated",
])
def test_other_lines_open_no_record(text):
    assert not records.opens_record(text)


def test_a_paste_that_begins_with_uvicorns_warning_is_no_cut_exception(engine):
    text = ('WARNING:  Unsupported upgrade request.\n'
            'WARNING:  No supported WebSocket library detected. Please use "pip install \'uvicorn[standard]\'", '
            "or install 'websockets' or 'wsproto' manually.\n")
    assert engine.incidents(text) == []


def test_a_paste_that_begins_inside_a_real_message_still_is_one(engine):
    text = ("of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.68 GiB of which 1.02 GiB is "
            "free. Including non-PyTorch memory, this process has 22.64 GiB memory in use.\n" + SIGQUIT)
    assert engine.incidents(text) != []


def test_the_nccl_plugin_probe_cut_at_its_head_is_that_probe(engine):
    text = (ROOT / "fixtures/other/nccl_plugin_probe_line_cut_head.log").read_text()
    assert engine.incidents(text) == []
    # a loader's error of its own, cut the same way, is still a missing library
    own = "ile: libcudart.so.12: cannot open shared object file: No such file or directory\n" + SIGQUIT
    assert engine.incidents(own) != []


# -- one request's traceback under the HTTP dispatch, its "Exception in ASGI application" cut ----

RUN = ROOT / "fixtures/healthy/real-0.5.23/tool_parser_sigterm_twice.log"
BATCH = ("[2026-12-07 10:11:4{n}] Decode batch, #running-req: 1, #token: 40, token usage: 0.00, cpu graph: False, "
         "gen throughput (token/s): 44.84, #queue-req: 0\n")
WARMUP_FAILED = ("[2026-12-07 10:11:40] Initialization failed. warmup error: Traceback (most recent call last):\n"
                 "[2026-12-07 10:11:41] Received sigquit from a child process. It usually means the child failed.\n")


def _asgi_traceback_cut_in_its_frames() -> str:
    """The real run's traceback of one /parse_function_call request (a 500), the paste begun
    inside the path of fastapi's routing frame: uvicorn's "Exception in ASGI application" and the
    frames above are lost (robustness.py ``cut_frame``)."""
    lines = RUN.read_text().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.startswith("ValueError: Unsupported tool_call_parser"))
    start = next(i for i in range(end, 0, -1) if "fastapi/routing.py\", line 161" in lines[i])
    first = lines[start][lines[start].index("api/routing.py"):]
    return first + "".join(lines[start + 1:end + 1])


def test_a_requests_traceback_with_the_server_serving_after_it_is_no_incident(engine):
    text = _asgi_traceback_cut_in_its_frames()
    assert engine.incidents(text + BATCH.format(n=1) + BATCH.format(n=2)) == []


def test_the_same_traceback_before_a_death_or_at_the_end_stays_an_incident(engine):
    text = _asgi_traceback_cut_in_its_frames()
    assert engine.incidents(text + WARMUP_FAILED) != []
    assert engine.incidents(text + BATCH.format(n=1) + WARMUP_FAILED) != []
    # nothing says the server went on: unknown stays unknown, for an exception SGLang's start-up
    # may raise too (ReasoningParser's: the scheduler builds one at start-up) ...
    reasoning = text.replace("ValueError: Unsupported tool_call_parser: no-such-parser",
                             "ValueError: Unsupported model type: no-such-parser")
    assert reasoning != text and engine.incidents(reasoning) != []
    # ... while FunctionCallParser's message is one request's by its source (only request handlers
    # build one: scripts/gen_request_messages.py REQUEST_ONLY_CONSTRUCTORS, session 35)
    assert engine.incidents(text) == []
