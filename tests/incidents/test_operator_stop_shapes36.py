"""Session 36 (bait36): a terminal's Ctrl-C on a server that was serving, pasted without its start.

A Ctrl-C reaches the whole process group: the scheduler and the detokenizer print their
KeyboardInterrupt tracebacks first, each under multiprocessing's "Process Process-N:", with no
uvicorn frame in them (fixtures/healthy/real-0.5.23/warnings_probes_ctrl_c_twice.log, line 277 on).
The record right above them, uvicorn's access line of a request the server answered, says the HTTP
server was up, which SGLang starts only once every scheduler reported ready
(survived.answered_request).  Counterparts that stay incidents: the same tracebacks under the
warm-up's own ``/model_info`` probe (a warm-up that hung after it), under a ``/health`` 503 (the
server still starting), and an interrupt that came on top of a real error.
"""

from __future__ import annotations

from conftest import incidents_of_lines

from sglang_doctor.incidents import survived

VENV = "/root/venv/lib/python3.11/site-packages"
PY = "/root/.pyenv/versions/3.11.7/lib/python3.11"


def access(path: str, status: str, method: str = "GET") -> str:
    return f'[2026-12-07 10:08:48] INFO:     127.0.0.1:42042 - "{method} {path} HTTP/1.1" {status}'


def child_interrupt(last: str = "KeyboardInterrupt") -> list[str]:
    """A scheduler's traceback as multiprocessing prints it when SIGINT reaches the child."""
    return [
        "Traceback (most recent call last):",
        f'  File "{PY}/multiprocessing/process.py", line 314, in _bootstrap',
        "    self.run()",
        f'  File "{PY}/multiprocessing/process.py", line 108, in run',
        "    self._target(*self._args, **self._kwargs)",
        f'  File "{VENV}/sglang/srt/managers/scheduler.py", line 6368, in run_scheduler_process',
        "    scheduler.run_event_loop()",
        f'  File "{VENV}/sglang/srt/managers/scheduler.py", line 2123, in event_loop_overlap',
        "    self.on_idle()",
        last,
    ]


def test_answered_request_reads_uvicorns_access_line():
    assert survived.answered_request(access("/health", "200 OK"))
    assert survived.answered_request(access("/v1/chat/completions", "200 OK", "POST"))
    assert survived.answered_request("INFO:     10.0.0.7:5100 - \"POST /generate HTTP/1.1\" 200 OK")
    assert not survived.answered_request(access("/model_info", "200 OK"))  # the warm-up's probe
    assert not survived.answered_request(access("/get_model_info", "200 OK"))
    assert not survived.answered_request(access("/health", "503 Service Unavailable"))
    assert not survived.answered_request(access("/generate", "400 Bad Request", "POST"))
    assert not survived.answered_request("Prefill batch, #new-seq: 1, #new-token: 6")
    assert not survived.answered_request(None)


def test_the_childrens_interrupts_below_an_answered_request_are_a_stop(tmp_path):
    lines = [access("/health", "200 OK"), "Process Process-1:", "Process Process-2:"] \
        + child_interrupt() + child_interrupt()
    assert incidents_of_lines(tmp_path, lines) == []
    lines = [access("/v1/chat/completions", "200 OK", "POST")] + child_interrupt()
    assert incidents_of_lines(tmp_path, lines) == []


def test_below_the_warmups_probe_or_a_503_it_stays_an_incident(tmp_path):
    # the warm-up polled /model_info, then its generate hung: the operator's Ctrl-C of a start-up
    # that did not finish is what they want explained
    lines = [access("/model_info", "200 OK"), "Process Process-1:"] + child_interrupt()
    assert len(incidents_of_lines(tmp_path, lines)) == 1
    lines = [access("/health", "503 Service Unavailable"), "Process Process-1:"] + child_interrupt()
    assert len(incidents_of_lines(tmp_path, lines)) == 1


def test_an_error_under_the_interrupt_stays_an_incident(tmp_path):
    lines = [access("/health", "200 OK"), "Process Process-1:"] \
        + child_interrupt("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert len(incidents_of_lines(tmp_path, lines)) == 1


def test_the_recorded_ctrl_c_pasted_from_the_last_access_line(tmp_path):
    """The real recording (SGLang 0.5.23 on CPU, Ctrl-C to the process group): the last "GET
    /health" 200 and the two children's KeyboardInterrupt tracebacks below it, pasted alone."""
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "fixtures/healthy/real-0.5.23/warnings_probes_ctrl_c_twice.log"
    lines = source.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Process Process-1:")) - 1
    end = next(i for i in range(start, len(lines)) if lines[i].endswith("INFO:     Shutting down"))
    assert '"GET /health HTTP/1.1" 200' in lines[start] and lines[end - 1] == "KeyboardInterrupt"
    assert incidents_of_lines(tmp_path, lines[start:end]) == []
    # the same tracebacks below the warm-up's probe instead stay an incident (a start-up that hung)
    probe = lines[start].replace("GET /health", "GET /model_info")
    assert len(incidents_of_lines(tmp_path, [probe] + lines[start + 1:end])) == 1
