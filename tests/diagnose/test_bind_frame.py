"""A traceback cut off inside a socket bind (pyzmq's Socket.bind under SGLang's IPC or PD
bootstrap sockets, socketserver's server_bind, uvicorn's bind_socket) failed to bind an
address: the best guess is network.port.  A traceback that stops in another socket call, or
that keeps its exception line, is not read that way."""

from conftest import only_incident

BIND = """  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/common/conn.py", line 96, in _bind_server_socket
    self.server_socket.bind(format_tcp_address(self.local_ip, self.rank_port))
  File "/usr/local/lib/python3.12/dist-packages/zmq/sugar/socket.py", line 320, in bind
    super().bind(addr)
  File "zmq/backend/cython/_zmq.py", line 1009, in zmq.backend.cython._zmq.Socket.bind
"""

RECV = """  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1040, in recv_requests
    recv_req = self.recv_from_tokenizer.recv_pyobj(zmq.NOBLOCK)
  File "/usr/local/lib/python3.12/dist-packages/zmq/sugar/socket.py", line 989, in recv_pyobj
    msg = self.recv(flags)
  File "zmq/backend/cython/_zmq.py", line 1204, in zmq.backend.cython._zmq.Socket.recv
"""


def _guess(ev):
    return (ev.get("fallback") or {}).get("best_guess") or {}


def test_a_traceback_cut_inside_a_zmq_bind_guesses_a_port(pack):
    guess = _guess(only_incident(pack, BIND))
    assert guess["category"] == "network.port"
    assert any(e["name"] == "bind_frame" for e in guess["evidence"])


def test_a_traceback_cut_inside_socketserver_s_bind_guesses_a_port(pack):
    text = ('  File "/usr/lib/python3.10/socketserver.py", line 452, in __init__\n'
            "    self.server_bind()\n"
            '  File "/usr/lib/python3.10/http/server.py", line 137, in server_bind\n'
            "    socketserver.TCPServer.server_bind(self)\n")
    assert any(e["name"] == "bind_frame" for e in _guess(only_incident(pack, text))["evidence"])


def test_a_traceback_cut_inside_another_socket_call_is_no_bind(pack):
    guess = _guess(only_incident(pack, RECV))
    assert not any(e["name"] == "bind_frame" for e in guess.get("evidence", []))


def test_with_its_exception_line_the_exception_speaks_not_the_frame(pack):
    ev = only_incident(pack, "Traceback (most recent call last):\n" + BIND
                       + "zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.5:18123')\n")
    assert ev["rule"] == "network.port.zmq_address_in_use"
    assert not any(e["name"] == "bind_frame" for e in _guess(ev).get("evidence", []))


def test_inspect_s_signature_bind_binds_arguments_not_a_port(pack):
    text = ('  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/utils/common.py", line 812, in wrapper\n'
            "    bound = sig.bind(*args, **kwargs)\n"
            '  File "/usr/lib/python3.12/inspect.py", line 3280, in bind\n'
            "    return self._bind(args, kwargs)\n")
    guess = _guess(only_incident(pack, text))
    assert not any(e["name"] == "bind_frame" for e in guess.get("evidence", []))
