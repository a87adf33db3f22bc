"""The launcher's report of a child its own Ctrl-C stop killed (survived.STOP_KILL_REPORT).

0.5.23's launch_server runs the server in ``try: ... finally: kill_process_tree(...)``: on Ctrl-C
its SubprocessWatchdog sees the scheduler it just SIGKILLed and logs "Subprocess scheduler_0
(pid=N) crashed with exit code -9. Triggering SIGQUIT for cleanup..." right above the
interrupt's traceback (fixtures/healthy/real-0.5.23/session_sigint.log).  That record pasted
alone is the stop's teardown; the same line without the interrupt stays a kill."""

import sys
from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402
import robustness  # noqa: E402

SIGINT_RUN = ROOT / "fixtures" / "healthy" / "real-0.5.23" / "session_sigint.log"


def _kill_record() -> list[str]:
    lines = robustness._split_lines(SIGINT_RUN.read_text())
    start, _scary, end = next(r for r in healthy_bait.scary_records(lines)
                              if "crashed with exit code -9" in lines[r[0]])
    return lines[start:end]


def test_the_stop_kill_report_with_the_interrupt_below_it_is_quiet(tmp_path):
    record = _kill_record()
    assert any(line == "KeyboardInterrupt" for line in record)
    log = tmp_path / "ctrl_c.log"
    log.write_text("\n".join(record) + "\n")
    assert explain_incidents(log) == []


def test_the_same_report_without_the_interrupt_stays_a_kill(tmp_path):
    log = tmp_path / "killed.log"
    log.write_text(_kill_record()[0] + "\n")
    assert [i["category"] for i in explain_incidents(log)] == ["memory.host_oom"]


def test_the_report_above_an_error_that_is_not_an_interrupt_stays_an_incident(tmp_path):
    record = _kill_record()
    last = max(i for i, line in enumerate(record) if line == "KeyboardInterrupt")
    log = tmp_path / "error.log"
    log.write_text("\n".join(record[:last] + ["RuntimeError: CUDA error: an illegal memory access was encountered"]
                             + record[last + 1:]) + "\n")
    assert explain_incidents(log) != []
