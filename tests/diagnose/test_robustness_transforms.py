"""bench/robustness.py's transforms degrade a paste the way real pastes are degraded, but each
keeps its key line's words: a transform that dropped them would measure nothing (the cut
transforms cut the key line itself, as search excerpts do, and keep its message's words)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
try:
    import robustness
finally:
    sys.path.pop(0)

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
LINES = [
    "[2025-04-12 03:11:01 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=21.73 GB",
    "[2025-04-12 03:11:01 TP1] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=21.70 GB",
    "[2025-04-12 03:11:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{P}/managers/scheduler.py", line 1816, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    f'  File "{P}/managers/tp_worker.py", line 68, in __init__',
    "    self.model_runner = ModelRunner(",
    f'  File "{P}/model_executor/model_runner.py", line 741, in init_cuda_graphs',
    "    self.cuda_graph_runner = CudaGraphRunner(self)",
    f'  File "{P}/model_executor/cuda_graph_runner.py", line 239, in __init__',
    "    raise Exception(",
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB",
    "",
    "[2025-04-12 03:11:10] Received sigquit from a child process. It usually means the child failed.",
]
KEY = 11


@pytest.mark.parametrize("name", sorted(robustness.TRANSFORMS))
def test_a_transform_keeps_the_key_line(name):
    sample = robustness.Sample("x.log", "tune", list(LINES), KEY, "memory.cuda_oom")
    text = robustness.apply(name, sample)
    assert text is not None
    assert text == robustness.apply(name, sample)  # seeded: the same text every run
    if name in ("wrap", "wrap80", "combo"):  # folded: the pieces joined back give the line
        assert LINES[KEY] in text.replace("\r", "").replace("\n", "")
    elif name in ("cut_record_head", "cut_frame"):  # the first line cut above the key line
        assert LINES[KEY] in text
        first = text.split("\n", 1)[0]
        assert first and first not in LINES and any(line.endswith(first) for line in LINES[:KEY])
        if name == "cut_record_head":  # inside the nearest record header: its "]" kept
            assert "TP0] Scheduler hit an exception" in first and not first.startswith("[")
        else:  # inside a frame, past its 'File "'
            assert 'File "' not in first
    elif name == "cut_key_message":  # the type and the message's head go, three quarters stay
        message = LINES[KEY].split(": ", 1)[1]
        first = text.split("\n", 1)[0]
        assert message.endswith(first) and len(first) >= 3 * len(message) // 4 and first != message
        assert not text.startswith("Exception")
    elif name in robustness.CUT_AROUND_KEY:  # the key line itself is cut, its message's words kept
        message = LINES[KEY].split(": ", 1)[1]
        assert " ".join(message.split()[:4]) in text
        if name == "cut_key_head":  # only the type's head goes: the message stays whole
            assert message in text
    else:
        assert LINES[KEY].strip() in text
    assert text != "\n".join(LINES) + "\n"  # it degrades something
