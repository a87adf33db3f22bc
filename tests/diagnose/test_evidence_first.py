"""Issue #12, session 15: the best guess is named by what the text itself holds; the phase's prior
(what usually fails in a phase, counted from labelled logs) and the words of the lines around a
failure only break a tie, or decide when the text holds nothing; the answer says which it rests
on.  A launcher's notice that a scheduler died is printed only during the launch, so a class
rule's "crash while serving" that assumed the server had been ready is not the guess.  Every text
here is written for the test from SGLang's own messages."""

from __future__ import annotations

import pytest

from conftest import only_incident

from sglang_doctor.diagnose import evidence, phase_prior
from sglang_doctor.pipeline import StreamPipeline


def _text(name: str, category: str, weight: float) -> evidence.Evidence:
    return evidence.Evidence(name, category, weight, "a piece of the failure itself")


def test_a_piece_of_the_text_beats_a_heavier_prior():
    prior = phase_prior.pieces("serving", "the server had been ready")
    assert prior and prior[0].weight > 0.25  # the serving row's top category weighs more than the piece below
    found = evidence.weigh(prior + [_text("library_frame", "kernel.build", 0.25)], context_known=True)
    assert found["category"] == "kernel.build"
    assert found["grounds"] == "text" and "library_frame" in found["rests_on"]


def test_the_prior_breaks_a_tie_between_pieces_of_the_text():
    prior = phase_prior.pieces("serving", "the server had been ready")
    top = prior[0].category
    other = next(c for c in ("memory.cuda_oom", "nccl") if c != top)
    pieces = [_text("deepest_frame", other, 0.3), _text("header", top, 0.3)] + prior
    found = evidence.weigh(pieces, context_known=True)
    assert found["category"] == top and found["grounds"] == "text"


def test_words_of_the_lines_around_do_not_outweigh_the_failures_own_piece():
    around = evidence._words("NCCL INFO Channel 00/0 : 0[2] -> 1[3] via NET/Socket/0", evidence.AROUND_WORDS,
                             "the incident's lines")
    assert around and all(p.support for p in around)
    prior = [evidence.Evidence("prior:startup.distributed", "nccl", 0.3, "the phase", support=True)]
    found = evidence.weigh(around + prior + [_text("bind_frame", "network.port", 0.4 - 0.05)], context_known=True)
    assert found["category"] == "network.port"


@pytest.mark.parametrize("phase", ["serving", "startup.load_weights", "startup.cuda_graph"])
def test_a_guess_from_the_phase_alone_says_so(phase):
    found = evidence.weigh(phase_prior.pieces(phase, "the text shows it"), context_known=True)
    assert found["grounds"] == "phase"
    assert found["rests_on"].startswith(f"only the phase the text shows ({phase})")
    assert "no piece of this failure itself" in found["rests_on"]


# the launcher's notice of a dead scheduler, as each release prints it, with no launch header and
# no milestone before it (the class rule then assumes the server had been ready)
DEATHS = [
    "Exception: Rank 0 scheduler is dead. Please check if there are relevant logs. Exit code: -6\n",
    ("Traceback (most recent call last):\n"
     '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/engine.py", line 2039, in '
     "_wait_for_scheduler_ready\n"
     "    raise _scheduler_died_error(j, scheduler_procs[j])\n"
     "RuntimeError: Rank 3 scheduler died during initialization (exit code: -6). If exit code is -9 "
     "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n"),
]


@pytest.mark.parametrize("text", DEATHS)
def test_a_launchers_death_notice_is_no_crash_while_serving(pack, text):
    ev = only_incident(pack, text)
    guess = ev["fallback"]["best_guess"]
    assert guess["category"] != "runtime.crash"
    assert "launch was still under way" in guess["why"] or ev["layer"] == "fallback"
    assert guess["grounds"] in evidence.GROUNDS and guess["rests_on"]
    assert ev["fallback"]["next_step"]


def test_a_crash_while_serving_without_a_launchers_notice_keeps_the_rules_answer(pack):
    ev = only_incident(pack, "Traceback (most recent call last):\n"
                             '  File "/srv/app/client.py", line 12, in main\n'
                             "    run()\n"
                             "RuntimeError: Error\n")
    assert ev["rule"] == "class.runtime.after_ready"
    assert ev["fallback"]["best_guess"]["category"] == "runtime.crash"
    assert ev["fallback"]["best_guess"]["grounds"] == "rule"


def _summary(pack, text: str) -> dict:
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]


def test_a_text_with_no_step_line_rests_on_nothing(pack):
    fb = _summary(pack, "".join(f"[2025-05-01 10:00:0{i}] Some preprocessor option is ignored ({i}).\n"
                                for i in range(6)))
    assert fb["best_guess"]["category"] == "other" and fb["best_guess"]["grounds"] == "none"
    assert fb["best_guess"]["rests_on"].startswith("nothing in the text")


def test_a_text_with_no_failure_that_ends_on_a_step_rests_on_the_phase(pack):
    fb = _summary(pack, "[2025-05-01 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, avail mem=60.00 GB\n"
                        "[2025-05-01 10:00:05 TP0] Capture cuda graph begin. This can take up to several minutes.\n")
    guess = fb["best_guess"]
    assert guess["grounds"] == "phase" and "startup.cuda_graph" in guess["rests_on"]
    assert any(e["name"] == "prior:startup.cuda_graph" for e in guess["evidence"])
