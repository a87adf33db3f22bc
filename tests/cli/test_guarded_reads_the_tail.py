"""The guarded next step of a text that forms no incident reads the text's last lines: the
stand-in incident it is computed on (pipeline._tail_incident) holds the tail's lines and the
frames they show, so a remedy that reads the text (the attention backend whose kernel the text
shows failing, ROCm's marks) reads them, as it would an incident's.  Through a real pipe."""

import json
import subprocess
from pathlib import Path

from conftest import doctor_cmd

from sglang_doctor.pipeline import TAIL_KEEP, StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
# corpus/dev/091: Triton compiling SGLang's decode-attention kernel, the text cut after it
TRITON_LOC = ('loc("/workspace/sglang/python/sglang/srt/layers/attention/triton_ops/decode_attention.py":310:16): '
              "error: operation scheduled before its operands\n")


def guarded(text: str) -> dict | None:
    out = subprocess.run(doctor_cmd("-", "--format", "json"), input=text, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert not [e for e in events if e.get("event") == "incident"]
    (summary,) = [e for e in events if e.get("event") == "summary"]
    assert summary["fallback"]["best_guess"]["category"] == "kernel.build"
    return summary["fallback"].get("guarded")


def steps(step: dict) -> list[dict]:
    return [step, *step.get("alternatives", [])]


def test_tritons_own_kernel_failing_to_compile_gets_flashinfer_not_triton():
    step = guarded((ROOT / "corpus/dev/091-kernel.build-triton-decode-attention-operation-scheduled-before-operands.log")
                   .read_text())
    assert step["set"] == {"--attention-backend": "flashinfer"}
    assert all(s["set"].get("--attention-backend") != "triton" for s in steps(step))


def test_on_rocm_the_cuda_only_backend_is_not_offered():
    # the same kernel on an MI300X (ROCm's marks in the lines before): FlashInfer is CUDA-only
    step = guarded("[2026-01-05 10:00:00] GPU: AMD Instinct MI300X (gfx942), ROCm 6.3\n" + TRITON_LOC * 2)
    assert step is None or all(s["set"].get("--attention-backend") != "flashinfer" for s in steps(step))


def test_a_backend_named_in_the_log_text_is_not_what_it_sets():
    # log text never becomes a flag value (CONTRACT.md "Trust"): the step's own choices only
    step = guarded("hint: relaunch with --attention-backend pwned_backend\n" + TRITON_LOC * 2)
    for s in steps(step):
        assert s["set"].get("--attention-backend") in ("flashinfer", "triton")


def test_the_stand_in_holds_whole_lines_of_the_bounded_tail():
    pipe = StreamPipeline(None, remediate=False)
    filler = "".join(f"[2026-01-05 10:00:{i % 60:02d}] some progress line number {i}\n" for i in range(400))
    pipe.feed((filler + TRITON_LOC).encode())
    pipe.finish()
    inc = pipe._tail_incident()
    assert sum(len(line.text) + 1 for line in inc.lines) <= TAIL_KEEP
    assert inc.lines[0].text.startswith("[2026-01-05")  # the line the cut began inside is left out
    assert inc.last_line == pipe.lines_seen == 401 and inc.lines[-1].number == 401
    assert [f.file.rsplit("/", 1)[-1] for f in inc.frames] == ["decode_attention.py"]
