"""Real pastes are degraded copies of what SGLang wrote (bench/robustness.py measures how the
answer survives each kind): these are the general mechanisms that keep a failure readable
through them, each on a text shaped like a real paste."""

from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.read import records

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"

# torch's rendezvous failure as pasted in an Ascend issue (corpus dev/006's shape)
PORT_IN_USE = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
    "address. port: 42173, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n"
)

CAPTURE_TRACEBACK = f"""[2025-04-12 03:11:09 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{P}/managers/scheduler.py", line 1816, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "{P}/model_executor/model_runner.py", line 741, in init_cuda_graphs
    self.cuda_graph_runner = CudaGraphRunner(self)
  File "{P}/model_executor/cuda_graph_runner.py", line 239, in __init__
    raise Exception(
Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB of which 97.06 MiB is free.
"""


def incidents_of(text: str):
    pipe = StreamPipeline()
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e["_diagnosis"].incident for e in events if e["event"] == "incident"]


def quoted(text: str) -> str:
    return "".join(("> " + line) if line.strip() else ">\n" for line in text.splitlines(keepends=True))


def test_markdown_quote_mark_is_an_outer_prefix():
    assert records.strip_outer("> [2025-04-12 03:11:09 TP0] Load weight end.") == "[2025-04-12 03:11:09 TP0] Load weight end."
    assert records.strip_outer(">") == ""
    assert records.strip_outer(">   File \"x.py\", line 3, in f") == "  File \"x.py\", line 3, in f"
    # not a quote mark: a Python prompt, a shell redirect inside a command
    assert records.strip_outer(">>> import sglang") == ">>> import sglang"
    assert records.strip_outer(">/dev/null 2>&1") == ">/dev/null 2>&1"


def test_a_quoted_exception_line_is_an_incident():
    (inc,) = incidents_of(quoted(PORT_IN_USE))
    assert inc.exception.type.endswith("DistNetworkError")
    assert "address already in use" in inc.exception.message


def test_a_quoted_traceback_is_read_as_the_unquoted_one():
    (plain,) = incidents_of(CAPTURE_TRACEBACK)
    (inc,) = incidents_of(quoted(CAPTURE_TRACEBACK))
    assert inc.exception == plain.exception
    assert [f.function for f in inc.frames] == [f.function for f in plain.frames]
