"""A text that forms no incident gets, on its summary's fallback, the same guarded next step
an incident no rule knew gets (remedy/guarded.py): "if this is X (a best guess): try Y",
needs_human, in JSON (``fallback.guarded``), text and rich output, through a real pipe."""

import json
import subprocess

from conftest import doctor_cmd

KV_LINE = "[2026-05-09 10:00:01 TP0] KV Cache is allocated. #tokens: 274934, K size: 8.99 GB, V size: 8.99 GB\n"
DECODE_LINE = ("[2026-05-09 10:00:01 TP0] Decode batch, #running-req: 6, #token: 1920, token usage: 0.94, "
               "cuda graph: True, gen throughput (token/s): 446.45, #queue-req: 5\n")


def pipe(text: str, fmt: str) -> subprocess.CompletedProcess:
    return subprocess.run(doctor_cmd("-", "--format", fmt), input=text, capture_output=True, text=True, timeout=120)


def summary_of(stdout: str) -> dict:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    (summary,) = [e for e in events if e.get("event") == "summary"]
    assert not [e for e in events if e.get("event") == "incident"]
    return summary


def test_a_fragment_ending_at_the_kv_pool_gets_the_guarded_step_in_json():
    out = pipe(KV_LINE, "json")
    assert out.returncode == 0, out.stderr
    fb = summary_of(out.stdout)["fallback"]
    # the pool fitted (its line is the text: SGLang raises its "Not enough memory" before it
    # allocates the pool), so a memory failure that may follow is a CUDA OOM of what allocates
    # next from what the pool left (evidence.pool_allocated): the fraction goes down
    assert fb["best_guess"]["category"] == "memory.cuda_oom"
    step = fb["guarded"]
    assert step["needs_human"] is True and step["safe"] is False
    assert "--mem-fraction-static" in step["set"] and step["remedy"] == "lower_flag"
    # it is said to be a guess, on a failure the text does not show
    assert step["note"].startswith("if the server did fail after these lines and that was a CUDA out-of-memory")
    assert f"a best guess, confidence {fb['best_guess']['confidence']:.2f}" in step["note"]


def test_text_and_rich_output_print_it_as_advice(tmp_path):
    for fmt in ("text", "rich"):
        out = pipe(KV_LINE, fmt)
        assert out.returncode == 0, out.stderr
        text = " ".join(out.stdout.split())  # rich wraps at its width
        assert "best guess: memory.cuda_oom" in text
        assert "advice, for you to decide:" in text and "--mem-fraction-static" in text
        assert "if the server did fail after these lines and that was a CUDA out-of-memory" in text
        assert "fix:" not in text  # never a firm fix


def test_a_text_that_shows_the_server_serving_gets_no_advice():
    # a healthy decode line: the guess "a crash while serving" rests on the phase alone, and
    # turning features off on it would be advice on a healthy log
    for fmt in ("json", "text"):
        out = pipe(DECODE_LINE, fmt)
        assert out.returncode == 0, out.stderr
        if fmt == "json":
            fb = summary_of(out.stdout)["fallback"]
            assert fb["best_guess"]["category"] == "runtime.crash"
            assert "guarded" not in fb
        else:
            assert "advice, for you to decide" not in out.stdout and "--enable-mixed-chunk" not in out.stdout


def test_a_guess_with_no_usual_change_gets_none(tmp_path):
    log = tmp_path / "warn.log"
    log.write_text("[2026-05-09 10:00:01] Downloading tokenizer files\n[2026-05-09 10:00:02] still downloading\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True, timeout=120)
    fb = summary_of(out.stdout).get("fallback")
    assert fb is not None and fb["best_guess"]["category"] == "other"
    assert "guarded" not in fb
