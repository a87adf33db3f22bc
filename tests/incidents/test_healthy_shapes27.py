"""Healthy shapes the tool raised incidents on (bench/healthy_bait.py, session 27), and the
failures next to them that must stay incidents:

- serving_base.py ``handle_request`` logs a request's DS32EncodingError at INFO ("DS32EncodingError:
  <e>", a record that reads as a bare exception line) and answers 400: a type SGLang raises only
  for one request (request_errors.REQUEST_ONLY_TYPES);
- ``except ValueError`` answers SGLang's own ValueError subclasses with a 400 as well, and the EPD
  encoder its BadRequestError (survived.CLIENT_ERROR_TYPES); a RuntimeError with a 400 ties nothing;
- engine.py ``sigchld_handler`` prints os.waitpid's status: 15 / 2 is a child SIGTERM / SIGINT
  stopped (signals.py ``child_stopped``); 256 (exit 1) and 9 (SIGKILL) stay what they were;
- bash's "<script>: line N: <pid> Killed" whose command wrapped onto the next line keeps its pid,
  so the operator's own ``kill -9 <pid>`` above it explains it."""

from pathlib import Path

from conftest import explain_incidents

from conftest import streamed_incidents

ROOT = Path(__file__).resolve().parents[2]
BATCH = ("[2026-01-01 00:00:02 TP0] Decode batch, #running-req: 4, #token: 1840, token usage: 0.02, cuda graph: True, "
         "gen throughput (token/s): 342.17, #queue-req: 0\n")
ANSWER_400 = '[2026-01-01 00:00:04] INFO:     127.0.0.1:51754 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'


def incidents_of(text: str):
    return streamed_incidents(text)[0]


def test_a_ds32_encoding_error_record_is_one_requests_error():
    assert explain_incidents(ROOT / "fixtures/healthy/ds32_encoding_error_answered_0523.log") == []
    assert incidents_of("[2026-01-01 00:00:01] DS32EncodingError: X\n") == []


def test_sglangs_value_error_subclasses_answered_400_are_one_requests_error(tmp_path):
    for k, line in enumerate(("WatermarkConfigError: watermark config contains unknown fields\n",
                              "BadRequestError: Failed to process mm items: image too large\n")):
        log = tmp_path / f"answered{k}.log"
        log.write_text(BATCH + line + ANSWER_400)
        assert explain_incidents(log) == [], line


def test_a_runtime_error_with_a_400_after_it_stays_an_incident(tmp_path):
    log = tmp_path / "runtime_error.log"
    log.write_text(BATCH + "RuntimeError: Unsupported device: npu\n" + ANSWER_400)
    (inc,) = explain_incidents(log)
    assert "RuntimeError" in inc["title"]


# field10/004 (ai-dynamo/dynamo#2294) without its SIGHUP / SIGTERM lines, as a paste cut above them
CHILD_STATUS = "2025-08-05T10:33:30.228Z  WARN engine.sigchld_handler: Child process unexpectedly failed with exitcode={}. pid=212396\n"
CUT_TRACEBACK = ("Traceback (most recent call last):\n"
                 '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
                 '  File "/opt/dynamo/venv/lib/python3.12/site-packages/typer/main.py", line 341, in __call__\n'
                 "    raise e\n"
                 '  File "/opt/dynamo/venv/lib/python3.12/site-p')


def test_a_child_ended_by_sigterm_or_sigint_is_a_stop():
    for status in (15, 2):
        assert incidents_of(CHILD_STATUS.format(status) * 2 + CUT_TRACEBACK) == [], status
    assert incidents_of("Child process unexpectedly failed with an exit code 15. pid=4242\n" + CUT_TRACEBACK) == []


def test_a_child_that_exited_1_or_was_sigkilled_is_not_a_stop():
    for status in (256, 9):
        assert incidents_of(CHILD_STATUS.format(status) + CUT_TRACEBACK) != [], status


KILLED_WRAPPED = ("/home/u/bench/run.sh: line 62: 18229 Killed     \n"
                  "             python3 -m sglang.launch_server --model /data/m --tp 8 --port 8552\n")


def test_a_wrapped_killed_line_after_the_operators_kill_of_its_pid_is_not_an_incident():
    assert incidents_of("+ kill -9 18229\n>>> killing server ...\n+ sleep 3\n" + KILLED_WRAPPED + "DONE TP=8\n") == []


def test_a_wrapped_killed_line_without_that_kill_stays_evidence():
    for before in ("", "+ kill -9 4242\n"):
        incs = incidents_of(before + KILLED_WRAPPED + "DONE TP=8\n")
        assert [i.signal_names for i in incs] == [["killed"]], before

