"""When the best guess is a CUDA out-of-memory whose line is not in the text, the one command that
gets the missing part is the one that shows an OOM line (fallback.CUDA_OOM_STEP), not a generic
"explain the whole log"; a guess of something else keeps its own command.  Through a real pipe."""

import json
import subprocess

from conftest import doctor_cmd

# a text that ends at the KV pool's line: the pool fitted, what allocates next runs out (guess27's
# evidence.pool_allocated), so the guess is a CUDA OOM
KV_LINE = "[2026-05-09 10:00:01 TP0] KV Cache is allocated. #tokens: 274934, K size: 8.99 GB, V size: 8.99 GB\n"
# a text that ends in NCCL's set-up: a nccl guess, whose command asks for every rank's log
NCCL_LINE = "[2026-05-09 10:00:01 TP0] Init torch distributed begin.\n"


def summary_fallback(text: str) -> dict:
    out = subprocess.run(doctor_cmd("-", "--format", "json"), input=text, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    (summary,) = [e for e in events if e.get("event") == "summary"]
    return summary["fallback"]


def test_an_oom_guess_asks_for_the_oom_line():
    fb = summary_fallback(KV_LINE)
    assert fb["best_guess"]["category"] == "memory.cuda_oom"
    step = fb["next_step"]
    assert step.startswith("grep -n -B2 -A3 -E 'out of memory|OutOfMemoryError|Tried to allocate|Not enough memory' LOG")
    assert "nvidia-smi" in step


def test_another_guess_keeps_its_own_command():
    fb = summary_fallback(NCCL_LINE)
    assert fb["best_guess"]["category"] != "memory.cuda_oom"
    assert "out of memory" not in fb["next_step"]
