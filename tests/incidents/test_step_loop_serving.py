"""Before the Scheduler (0.1.x router/model_rpc.py ModelRpcServer, 0.2.x-0.3.x tp_worker.py
ModelTpServer), the serving loop is a step loop: the router's / controller's ``loop_for_forward``
and run_tp_server's ``while True`` call ``exposed_step`` only once the server was built, and only
``exposed_step`` calls ``forward_step``, which alone calls ``forward_fill_batch`` /
``forward_prefill_batch`` / ``forward_decode_batch`` (sglang 0.1.12 model_rpc.py, 0.2.7
tp_worker.py and controller_single.py).  A fragment whose traceback passes that loop was serving,
like one through the Scheduler's event loop (test_event_loop_serving.py).  sgl-project/sglang#1130
(field38/005) pasted only the last frame, forward_prefill_batch, and a TypeError of a call whose
signature had changed under a partial pull: a call mismatch while serving is a crash while serving."""

from __future__ import annotations

from conftest import incidents_of_lines
from sglang_doctor.incidents import tracebacks
from sglang_doctor.model import Frame

SITE = "/opt/conda/lib/python3.10/site-packages/sglang/srt/managers"


def _frame(function: str, source: str = "", file: str = f"{SITE}/tp_worker.py") -> Frame:
    return Frame(file=file, line=1, function=function, source=source)


def test_the_step_loop_as_frame_or_as_the_call_a_frame_makes():
    for function in ("exposed_step", "forward_step", "forward_prefill_batch", "forward_decode_batch"):
        assert tracebacks.event_loop_reason([_frame(function)])
    assert tracebacks.event_loop_reason([_frame("forward_fill_batch", file=f"{SITE}/router/model_rpc.py")])
    assert tracebacks.event_loop_reason([_frame("loop_for_forward", file=f"{SITE}/controller_single.py")])
    # cut right below run_tp_server's loop line
    assert tracebacks.event_loop_reason([_frame("run_tp_server", "model_server.exposed_step(recv_reqs)")])


def test_the_same_names_outside_sglang_or_the_constructor_call_are_no_loop():
    assert tracebacks.event_loop_reason([_frame("forward_step", file="/opt/app/trainer/loop.py")]) is None
    assert tracebacks.event_loop_reason([_frame("run_tp_server", "model_server = ModelTpServer(")]) is None


MISMATCH = [
    f'  File "{SITE}/tp_worker.py", line 441, in forward_prefill_batch',
    "    batch.prepare_for_extend(self.model_config.vocab_size)",
    "TypeError: ScheduleBatch.prepare_for_extend() missing 1 required positional argument: 'int_token_logit_bias'",
    "",
]


def test_a_cut_fragment_through_the_step_loop_was_serving(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, MISMATCH)
    assert inc.after_ready_known and inc.after_ready
    assert "forward_prefill_batch" in inc.captures["serving_frames"]


def test_a_fragment_through_the_tp_servers_constructor_was_starting(tmp_path):
    lines = ["Traceback (most recent call last):",
             f'  File "{SITE}/tp_worker.py", line 828, in run_tp_server',
             "    model_server = ModelTpServer(",
             f'  File "{SITE}/tp_worker.py", line 95, in __init__',
             "    self.model_runner = ModelRunner(",
             "TypeError: ModelRunner.__init__() got an unexpected keyword argument 'nccl_port'",
             ""]
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.after_ready_known and not inc.after_ready
