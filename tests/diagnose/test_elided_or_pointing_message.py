"""Session 22: an exception line whose message names no cause gets the honest fallback, whatever
layer answered: a message the paste elided (``RuntimeError: ...``, ``ValueError: [...]``) and the
launcher's ``RuntimeError: Initialization failed. Please see the error messages above.``
(entrypoints/engine.py 0.4.6-0.5.23), which only points to the scheduler's error above it.  Before
session 22 a class rule that matched such a traceback by its frames (CUDA graph capture) answered
with no fallback block, as if the cause line were there."""

from sglang_doctor.diagnose import fallback
from conftest import incident_events

HEADER = "[2025-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
CAPTURE = ('  File "/usr/lib/python3/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture\n'
           "    self.capture_one_batch_size(bs, forward)\n")
LAUNCHER = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/site-packages/sglang/srt/entrypoints/engine.py", line 606, in _launch_subprocesses\n'
            "    raise RuntimeError(\n")


def incidents(pack, text: str) -> list[dict]:
    return incident_events(pack, text, whole_log=True)


def test_a_class_answer_on_an_elided_message_carries_the_fallback(pack):
    for message in ("RuntimeError: ...", "RuntimeError: [...]", "RuntimeError: \u2026", "RuntimeError: <truncated>"):
        (inc,) = incidents(pack, HEADER + CAPTURE + message + "\n")
        assert inc["category"] == "cuda_graph"  # the class rule's answer stands
        assert inc["fallback"] and "elided" in inc["fallback"]["missing"], message
        assert inc["fallback"]["best_guess"]["category"] == "cuda_graph"


def test_the_launchers_pointer_to_the_errors_above_is_no_cause(pack):
    (inc,) = incidents(pack, LAUNCHER + "RuntimeError: Initialization failed. Please see the error messages above.\n")
    assert "points to the errors printed before it" in inc["fallback"]["missing"]


def test_a_message_with_words_is_not_read_as_elided_or_pointing(pack):
    for message in ("RuntimeError: CUDA error: an illegal memory access was encountered ...",
                    "RuntimeError: failed to capture (see the error messages above for the kernel)",
                    "ValueError: [1, 2, 3] is not a valid shape"):
        (inc,) = incidents(pack, HEADER + CAPTURE + message + "\n")
        assert fallback.missing_part(inc["_diagnosis"].incident) is None, message
