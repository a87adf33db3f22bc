"""Session 30 (bait30): healthy shapes a paste without the launch's context still showed as a failure.

- Ctrl-C on a serving 0.5.23 server (fixtures/healthy/real-0.5.23/session_sigint.log): the main
  process's traceback goes through uvicorn's ``Server.run`` and asyncio's runner, which raise
  ``KeyboardInterrupt()`` once uvicorn has shut down (CancelledError, then KeyboardInterrupt).  A
  paste that starts inside it has no launch header, no ready line, no batch line; the HTTP
  server's loop in its frames says the start-up was over (survived.through_http_loop).  The
  same frames with a real error in the chain, or a start-up interrupted in the launch's own wait
  (no uvicorn frame), stay incidents.
- A client's refused-connection line (a script polling ``/health`` as the server goes down)
  between the stop and that traceback is not the server's signal: the traceback stays a stop.
- ``warnings.warn``'s text whose ``FILE:LINE: UserWarning:`` header the paste cut, with the
  call's ``  warnings.warn(`` source line below it (0.5.23 launch_server.py's entrypoint
  warning naming ``--model-path``): a warning, not an exception whose type was cut.  Without
  that source line it stays what it was (unknown stays unknown).
"""

from __future__ import annotations

from conftest import incidents_of_lines

VENV = "/usr/local/lib/python3.11/site-packages"
PY = "/usr/lib/python3.11"
# the tail of the real recording's traceback, from a frame on (the paste's first line cut inside it)
SIGINT_TAIL = [
    'py", line 84, in <module>',
    "    run_server(server_args)",
    f'  File "{VENV}/sglang/launch_server.py", line 67, in run_server',
    "    launch_server(server_args)",
    f'  File "{VENV}/sglang/srt/entrypoints/http_server.py", line 3010, in _setup_and_run_http_server',
    "    server.run()",
    f'  File "{VENV}/uvicorn/server.py", line 86, in run',
    "    return asyncio_run(self.serve(sockets=sockets), loop_factory=self.config.get_loop_factory())",
    f'  File "{VENV}/uvicorn/_compat.py", line 30, in asyncio_run',
    "    return runner.run(main)",
    f'  File "{PY}/asyncio/runners.py", line 123, in run',
    "    raise KeyboardInterrupt()",
    "KeyboardInterrupt",
    "nanobind: leaked 4 instances!",
    ' - leaked instance 0x7fc59999bde8 of type "triton._C.libtriton.ir.attribute"',
]
CANCELLED_HEAD = [
    "Traceback (most recent call last):",
    f'  File "{PY}/asyncio/runners.py", line 118, in run',
    "    return self._loop.run_until_complete(task)",
    '  File "uvloop/loop.pyx", line 1515, in uvloop.loop.Loop.run_until_complete',
    "asyncio.exceptions.CancelledError",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    f'  File "{VENV}/sglang/launch_server.py", line 84, in <module>',
]
CLIENT_RETRY = ("Waiting for server to be ready... (attempt 3/60): HTTPConnectionPool(host='127.0.0.1', port=30000): "
                "Max retries exceeded with url: /health (Caused by NewConnectionError('<urllib3.connection."
                "HTTPConnection object at 0x7f2b5c1d9e10>: Failed to establish a new connection: [Errno 111] "
                "Connection refused'))")


def test_a_ctrl_c_traceback_through_uvicorn_without_the_launch_is_a_stop(tmp_path):
    assert incidents_of_lines(tmp_path, SIGINT_TAIL) == []
    assert incidents_of_lines(tmp_path, CANCELLED_HEAD[1:] + SIGINT_TAIL[1:]) == []


def test_an_error_under_the_interrupt_stays_an_incident(tmp_path):
    lines = CANCELLED_HEAD[:4] + ["RuntimeError: CUDA error: an illegal memory access was encountered"] \
        + CANCELLED_HEAD[5:] + SIGINT_TAIL[1:]
    incs = incidents_of_lines(tmp_path, lines)
    assert len(incs) == 1, incs


def test_a_ctrl_c_outside_the_http_loop_without_the_launch_stays(tmp_path):
    # interrupted in the launch's own wait for its schedulers (engine.py), no uvicorn frame: the
    # start-up may have hung there
    lines = ["Traceback (most recent call last):",
             f'  File "{VENV}/sglang/srt/entrypoints/engine.py", line 912, in _wait_for_scheduler_ready',
             "    data = scheduler_pipe_readers[i].recv()",
             f'  File "{PY}/multiprocessing/connection.py", line 250, in recv',
             "    buf = self._recv_bytes()",
             "KeyboardInterrupt"]
    incs = incidents_of_lines(tmp_path, lines)
    assert len(incs) == 1 and incs[0].exception.type == "KeyboardInterrupt"


def test_a_client_retry_line_before_the_stop_traceback_leaves_it_a_stop(tmp_path):
    lines = ["[2026-12-07 01:07:19] Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, "
             "#running-req: 0, #queue-req: 0",
             "[2026-12-07 01:07:19] INFO:     Shutting down",
             "[2026-12-07 01:07:20] INFO:     Finished server process [21631]",
             CLIENT_RETRY] + CANCELLED_HEAD + SIGINT_TAIL[1:]
    assert incidents_of_lines(tmp_path, lines) == []


def test_a_server_that_died_after_a_client_retry_line_is_still_caught(tmp_path):
    lines = [CLIENT_RETRY,
             "[2026-12-07 01:07:20] Subprocess scheduler_0 (pid=23387) crashed with exit code -9. "
             "Triggering SIGQUIT for cleanup...",
             "Killed"]
    assert incidents_of_lines(tmp_path, lines) != []


WARNING_CUT = ["ll supported, but 'sglang serve' is the recommended entrypoint.",
               "  Example: sglang serve --model-path <model> [options]"]


def test_a_warning_whose_header_was_cut_is_no_exception(tmp_path):
    assert incidents_of_lines(tmp_path, WARNING_CUT + ["  warnings.warn("]) == []


def test_without_the_calls_source_line_the_cut_text_is_still_no_failure(tmp_path):
    # no rule's message words are in it: a paste's first line is read as the end of a cut
    # message only when it holds a rule's own words (the words of a negative lookahead, which a
    # message must NOT hold, do not count: cut_match.literal_words)
    assert incidents_of_lines(tmp_path, WARNING_CUT) == []


# -- one client connection's errors, as uvicorn's ASGI stack raises them ----------------------

H11_LINE = "h11._util.LocalProtocolError: Can't send data when our state is ERROR"


def test_an_h11_protocol_error_of_one_connection_is_request_level(tmp_path):
    assert incidents_of_lines(tmp_path, [H11_LINE]) == []
    assert incidents_of_lines(tmp_path, ["Traceback (most recent call last):",
                                         f'  File "{VENV}/h11/_connection.py", line 483, in send_with_data_passthrough',
                                         "    raise LocalProtocolError(\"Can't send data when our state is ERROR\")",
                                         H11_LINE]) == []


def test_a_client_libraries_protocol_error_stays(tmp_path):
    # httpcore's wrapper is what an HTTP *client* in SGLang raises (a PD peer that vanished)
    incs = incidents_of_lines(tmp_path, ["httpcore.RemoteProtocolError: Server disconnected without sending a response."])
    assert len(incs) == 1, incs


def test_a_death_after_a_connections_error_is_still_caught(tmp_path):
    lines = [H11_LINE,
             "[2025-06-01 10:05:02] Received sigquit from a child process. It usually means the child failed.",
             "Killed"]
    assert incidents_of_lines(tmp_path, lines) != []
