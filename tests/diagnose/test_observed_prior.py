"""Session 9's best-guess changes, on real pasted fragments of the tuned corpus parts:

- the phase prior is counted by the phase *the tool sees* in each labelled file
  (scripts/guess_prior.py, diagnose/evidence.context_phase, diagnose/fallback.text_phase), not
  by the labeller's ``phase``, which the thread told and the text may not;
- the line that announces a step the server reached (a milestone, a progress bar, a batch line)
  is read as the phase only, never again as words of a failure;
- the one command that gets the missing part fits what is missing (the lines before a
  traceback whose exception says nothing; the ray worker's log for a wrapper that says the
  server died).

Expected values come from the corpus files and SGLang's own lines, never from a stored result."""

import importlib.util
from pathlib import Path

import pytest
import yaml

from sglang_doctor.diagnose import evidence, fallback, phase_prior
from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline, read_incidents

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
# the labeller placed it in load_weights (from the thread); the text is frames of the start-up
# constructors only, cut before the exception
FRAMES_ONLY = CORPUS / "dev" / "022-memory.kv_pool-gemma3-27b-4bit-24gb-frames.log"
# the text ends on SGLang's "KV Cache is allocated" milestone; no failure in it
KV_LINE = CORPUS / "fresh" / "033-memory.cuda_oom-dp-attention-64k-kv-line-only.log"
# slime's rollout engine: "Server process terminated unexpectedly." from its health wait, no SGLang frame
WRAPPER = CORPUS / "late" / "031-cuda_graph-slime-sglangengine-terminated-unexpectedly.log"
# "StopIteration: " with nothing after the type
EMPTY_EXCEPTION = CORPUS / "dev" / "114-other-flashinfer-not-installed-stopiteration-rtx5090.log"


@pytest.fixture(scope="module")
def pack():
    return RuleSet.load(user=False)


@pytest.fixture(scope="module")
def guess_prior():
    spec = importlib.util.spec_from_file_location("guess_prior", ROOT / "scripts" / "guess_prior.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(pack, path: Path):
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(path.read_bytes()) + pipe.finish()
    return pipe, [e for e in events if e["event"] == "incident"]


def label_of(path: Path) -> dict:
    labels = yaml.safe_load((path.parent / "labels.yaml").read_text(encoding="utf-8"))
    return next(lab for lab in labels if lab["file"] == path.name)


def test_the_prior_counts_a_file_where_the_tool_sees_it(pack, guess_prior):
    lab = label_of(FRAMES_ONLY)
    (ev,) = run(pack, FRAMES_ONLY)[1]
    seen = evidence.context_phase(ev["_diagnosis"])
    assert seen is not None and seen[0] != lab["phase"]  # the text does not show the labeller's phase
    assert guess_prior.seen_phase(FRAMES_ONLY) == seen[0]
    # counted from dev alone: the file's label is in the row the tool looks it up in
    counts = guess_prior.count(("dev",))
    assert counts[seen[0]].get(lab["best_guess_category"], 0) >= 1
    # and the shipped prior's piece for this text is that row's
    piece = [e for e in ev["fallback"]["best_guess"]["evidence"] if e["name"].startswith("prior:")]
    assert piece and all(e["name"] == f"prior:{seen[0]}" for e in piece)


def test_a_text_with_no_failure_is_counted_by_its_last_step(pack, guess_prior):
    pipe, incidents = run(pack, KV_LINE)
    assert not incidents
    phase, why = fallback.text_phase(pipe.assembler.launches, pipe._tail)
    assert phase == "startup.memory_pool" and "KV Cache is allocated" in why
    assert guess_prior.seen_phase(KV_LINE) == phase


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
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    (ev,) = [e for e in events if e["event"] == "incident"]
    words = [e for e in evidence.from_words(ev["_diagnosis"].incident) if e.name == "words:kv_pool"]
    assert words and "failure's message" in words[0].why


def test_the_none_row_is_counted_but_gives_no_piece(pack):
    # a text that shows no phase gets no prior (phase_prior's docstring: measured worse)
    assert phase_prior.NONE in phase_prior.COUNTS
    (_, incidents) = run(pack, EMPTY_EXCEPTION)
    for ev in incidents:
        if evidence.context_phase(ev["_diagnosis"]) is None:
            assert not any(e["name"].startswith("prior:") for e in ev["fallback"]["best_guess"]["evidence"])


def test_a_wrapper_that_says_the_server_died_points_to_the_servers_own_output(pack):
    (ev,) = run(pack, WRAPPER)[1]
    inc = ev["_diagnosis"].incident
    assert fallback.wrapper_death(inc) and fallback.under_ray(inc)
    assert "the program that ran SGLang says the server process died" in ev["fallback"]["missing"]
    assert fallback.RAY_LOGS in ev["fallback"]["next_step"]


def test_a_wrapper_death_without_ray_greps_the_servers_log(pack):
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/app/launcher.py", line 40, in wait_ready\n'
            '    raise RuntimeError("SGLang server process exited with code 1")\n'
            "RuntimeError: SGLang server process exited with code 1\n")
    (inc,) = read_incidents_text(text)
    assert fallback.wrapper_death(inc) and not fallback.under_ray(inc)
    missing = fallback.missing_part(inc)
    step = fallback.next_step(inc, missing, fragment=True)
    assert "hit an exception|Traceback" in step and "server's own output" in step


def test_an_sglang_traceback_is_no_wrapper(pack):
    text = ("Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 9, in run_scheduler_process\n'
            '    raise RuntimeError("the detokenizer process exited")\n'
            "RuntimeError: the detokenizer process exited\n")
    (inc,) = read_incidents_text(text)
    assert not fallback.wrapper_death(inc)


def test_an_exception_that_says_nothing_asks_for_the_lines_before_it(pack):
    incidents = run(pack, EMPTY_EXCEPTION)[1]
    fbs = [ev["fallback"] for ev in incidents if ev.get("fallback")]
    assert any((fb["missing"] or "").startswith("the exception line (") for fb in fbs)
    for fb in fbs:
        if (fb["missing"] or "").startswith("the exception line ("):
            assert fb["next_step"].startswith("grep -n -B40 ")


def read_incidents_text(text: str):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        fh.write(text)
        name = fh.name
    try:
        return read_incidents(name)[1]
    finally:
        Path(name).unlink()
