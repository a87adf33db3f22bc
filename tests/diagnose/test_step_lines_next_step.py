"""Session 9's best-guess changes, on real pasted fragments of the tuned corpus parts:

- the line that announces a step the server reached (a milestone, a progress bar, a batch line)
  is read as the phase only, never again as words of a failure;
- the phase a text with no failure ends in (fallback.text_phase) and the one an incident shows
  (evidence.context_phase) are what the prior is looked up with;
- the one command that gets the missing part fits what is missing (the lines before a
  traceback whose exception says nothing; the ray worker's log for a wrapper that says the
  server died).

Expected values come from the corpus files and SGLang's own lines, never from a stored result."""

from pathlib import Path

import pytest

from conftest import only_incident
from sglang_doctor.diagnose import evidence, fallback
from sglang_doctor.pipeline import StreamPipeline, read_incidents

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
# frames of the start-up constructors only, cut before the exception
FRAMES_ONLY = CORPUS / "dev" / "022-memory.kv_pool-gemma3-27b-4bit-24gb-frames.log"
# the text ends on SGLang's "KV Cache is allocated" milestone; no failure in it
KV_LINE = CORPUS / "fresh" / "033-memory.cuda_oom-dp-attention-64k-kv-line-only.log"
# slime's rollout engine: "Server process terminated unexpectedly." from its health wait, no SGLang frame
WRAPPER = CORPUS / "late" / "031-cuda_graph-slime-sglangengine-terminated-unexpectedly.log"
# "StopIteration: " with nothing after the type
EMPTY_EXCEPTION = CORPUS / "dev" / "114-other-flashinfer-not-installed-stopiteration-rtx5090.log"


def incidents_of(tmp_path: Path, text: str):
    log = tmp_path / "paste.log"
    log.write_text(text, encoding="utf-8")
    return read_incidents(log)[1]


def one_frame_traceback(path: str, function: str, message: str) -> str:
    """A RuntimeError raised in one frame, as Python prints it."""
    return ("Traceback (most recent call last):\n"
            f'  File "{path}", line 9, in {function}\n'
            f'    raise RuntimeError("{message}")\n'
            f"RuntimeError: {message}\n")


def run(pack, path: Path):
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(path.read_bytes()) + pipe.finish()
    return pipe, [e for e in events if e["event"] == "incident"]


def test_the_prior_piece_is_the_row_of_the_phase_the_text_shows(pack):
    (ev,) = run(pack, FRAMES_ONLY)[1]
    seen = evidence.context_phase(ev["_diagnosis"])
    assert seen is not None
    pieces = [e for e in ev["fallback"]["best_guess"]["evidence"] if e["name"].startswith("prior:")]
    assert pieces and all(e["name"] == f"prior:{seen[0]}" for e in pieces)


def test_a_text_with_no_failure_is_read_by_its_last_step(pack):
    pipe, incidents = run(pack, KV_LINE)
    assert not incidents
    phase, why = fallback.text_phase(pipe.assembler.launches, pipe._tail)
    assert phase == "startup.memory_pool" and "KV Cache is allocated" in why
    guess = pipe.summary()["fallback"]["best_guess"]
    assert any(e["name"] == f"prior:{phase}" for e in guess["evidence"])


def test_the_step_line_is_the_phase_not_a_word(pack):
    pipe, _ = run(pack, KV_LINE)
    guess = pipe.summary()["fallback"]["best_guess"]
    names = [e["name"] for e in guess["evidence"]]
    assert "prior:startup.memory_pool" in names
    # "KV Cache is allocated" names the step the server reached, not a KV-pool failure
    assert "words:kv_pool" not in names
    assert evidence.step_line("[2025-05-05 03:55:08 TP0] KV Cache is allocated. #tokens: 274934, KV size: 17.99 GB")
    assert evidence.step_line("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01]")
    assert not evidence.step_line("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")


def test_a_failure_that_names_the_kv_cache_still_reads_its_words(pack):
    text = ("[2025-05-05 03:55:08 TP0] KV Cache is allocated. #tokens: 274934, KV size: 17.99 GB\n"
            "[2025-05-05 03:55:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
            "    raise RuntimeError(msg)\n"
            "RuntimeError: the kv cache pool is too small for one request\n")
    ev = only_incident(pack, text)
    words = [e for e in evidence.from_words(ev["_diagnosis"].incident) if e.name == "words:kv_pool"]
    assert words and "failure's message" in words[0].why


def test_a_wrapper_that_says_the_server_died_points_to_the_servers_own_output(pack):
    (ev,) = run(pack, WRAPPER)[1]
    inc = ev["_diagnosis"].incident
    assert fallback.wrapper_death(inc) and fallback.under_ray(inc)
    assert "the program that ran SGLang says the server process died" in ev["fallback"]["missing"]
    assert fallback.RAY_LOGS in ev["fallback"]["next_step"]


def test_a_wrapper_death_without_ray_greps_the_servers_log(tmp_path):
    (inc,) = incidents_of(tmp_path, one_frame_traceback("/opt/app/launcher.py", "wait_ready",
                                                        "SGLang server process exited with code 1"))
    assert fallback.wrapper_death(inc) and not fallback.under_ray(inc)
    missing = fallback.missing_part(inc)
    step = fallback.next_step(inc, missing, fragment=True)
    assert "hit an exception|Traceback" in step and "server's own output" in step


def test_an_sglang_traceback_is_no_wrapper(tmp_path):
    (inc,) = incidents_of(tmp_path, one_frame_traceback(
        "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", "run_scheduler_process",
        "the detokenizer process exited"))
    assert not fallback.wrapper_death(inc)


def test_an_exception_that_says_nothing_asks_for_the_lines_before_it(pack):
    incidents = run(pack, EMPTY_EXCEPTION)[1]
    fbs = [ev["fallback"] for ev in incidents if ev.get("fallback")]
    assert any((fb["missing"] or "").startswith("the exception line (") for fb in fbs)
    for fb in fbs:
        if (fb["missing"] or "").startswith("the exception line ("):
            assert fb["next_step"].startswith("grep -n -B40 ")


@pytest.mark.parametrize("line, wanted", [
    # SGLang's engine: a scheduler's death with no status in the text (0.4.x-0.5.9 log it on the
    # line after this one): unknown, not a kill; the status line and the error above it are asked for
    ("[2025-06-01 10:00:00] Rank 0 scheduler is dead. Please check if there are relevant logs.",
     "grep -n -B60 -A1 -E 'scheduler is dead|scheduler died' LOG"),
    # a status of its own (1): a Python error was printed before it, in this rank's output
    ("[2025-06-01 10:00:00] Rank 0 scheduler died during initialization (exit code: 1)", "status 1"),
    # -9: SIGKILL, the OOM killer's signature
    ("[2025-06-01 10:00:00] Rank 0 scheduler died during initialization (exit code: -9)", "dmesg"),
])
def test_an_exit_status_alone_asks_where_its_error_went(tmp_path, line, wanted):
    (inc,) = incidents_of(tmp_path, line + "\n")
    missing = fallback.missing_part(inc)
    assert missing is not None
    step = fallback.next_step(inc, missing, fragment=True)
    assert wanted in step
    if wanted == "status 1":
        assert step.startswith("grep -n -B5 -A80 -E 'hit an exception|Traceback' LOG")
