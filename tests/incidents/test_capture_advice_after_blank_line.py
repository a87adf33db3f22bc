"""SGLang's graph runners raise ``f"Capture cuda graph failed: {e}\\n{advice}"``.  torch's CUDA
errors end with a newline (``... Compile with `TORCH_USE_CUDA_DSA` to enable device-side
assertions.\\n``), so one blank line stands between the message and SGLang's "Possible
solutions:" list.  The list is still the exception's message: one incident, whose message
holds the advice that says which runner failed, not a traceback plus a second, advice-only
incident.  A blank line before any other text still ends the message."""

from conftest import incidents_of_lines

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
HEAD = [
    "[2026-02-20 03:45:48 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{P}/managers/scheduler.py", line 3130, in run_scheduler_process',
    "    scheduler = Scheduler(",
    f'  File "{P}/model_executor/cuda_graph_runner.py", line 375, in __init__',
    "    raise Exception(",
    "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
]
ADVICE = [
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
]


def test_the_advice_after_the_blank_line_is_the_message(tmp_path):
    incidents = incidents_of_lines(tmp_path, HEAD + ADVICE + ["", "[2026-02-20 03:45:48] Received sigquit from a child process. It usually means the child failed."])
    assert len(incidents) == 1
    message = incidents[0].exception.message
    assert message.startswith("Capture cuda graph failed: CUDA error: operation not permitted")
    assert "\n\nPossible solutions:\n" in message and "--cuda-graph-max-bs to a smaller value" in message


def test_other_text_after_the_blank_line_is_not_the_message(tmp_path):
    incidents = incidents_of_lines(tmp_path, HEAD + ["Possible causes: a kernel that synchronizes the stream"])
    assert incidents and "Possible causes" not in incidents[0].exception.message


def test_another_failure_s_message_does_not_take_the_list(tmp_path):
    head = HEAD[:5] + ["RuntimeError: CUDA error: an illegal memory access was encountered",
                       "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]
    incidents = incidents_of_lines(tmp_path, head + ADVICE)
    assert incidents and "Possible solutions" not in incidents[0].exception.message
