"""A script's own kill -9 of the SGLang server it started (record_real_bait.py ``SHELL_STOP``,
fixtures/healthy/real_runs/debug_log_shell_killed.log): bash's "line N: PID Killed <command>"
names the interpreter by its path ("/venv/bin/python -m sglang.launch_server ...", signals.py
``killed``) and the kill stopped the launch, so the script's "exit status 137" after it is that
stop's (survived.operator_killed_server).  Without the kill in the text it stays the OOM killer's
reading; a kill of another job (a client) stops nothing."""

from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "fixtures" / "healthy" / "real_runs" / "debug_log_shell_killed.log"


def _serving_and_tail() -> tuple[str, list[str]]:
    lines = RUN.read_text().splitlines(keepends=True)
    kill = next(i for i, line in enumerate(lines) if line.startswith("++ kill -9 "))
    return "".join(lines[:kill]), lines[kill:]


def test_the_scripts_kill_of_the_server_and_its_exit_status_are_quiet(tmp_path):
    head, tail = _serving_and_tail()
    assert any(" Killed " in line and "/bin/python -m sglang.launch_server" in line for line in tail)
    log = tmp_path / "run.log"
    log.write_text(head + "".join(tail))
    assert explain_incidents(log) == []


def test_the_same_killed_report_without_the_kill_stays_the_oom_killers(tmp_path):
    head, tail = _serving_and_tail()
    log = tmp_path / "run.log"
    log.write_text(head + "".join(line for line in tail if "kill -9" not in line))
    assert [i["category"] for i in explain_incidents(log)] == ["memory.host_oom"]


def test_a_kill_of_another_job_leaves_a_later_exit_137_an_incident(tmp_path):
    head, _tail = _serving_and_tail()
    log = tmp_path / "run.log"
    log.write_text(head + "+ kill -9 4242\n"
                   "bench.sh: line 9:  4242 Killed                  python3 bench_client.py --port 30000\n"
                   "exit status 137\n")
    assert [i["category"] for i in explain_incidents(log)] == ["memory.host_oom"]
