"""A hard scheduler watchdog's py-spy dump is part of its incident (session 27).

SGLang's watchdog logs, with its "watchdog timeout" line, the batch it waited on and a py-spy
dump of every scheduler: 0.4.x (scheduler.py watchdog_thread) after its line, 0.5.x
(utils/watchdog.py _watchdog_once) before it.  The dump names where each thread hung, so it is
the failure's evidence: a thread waiting in a kernel's JIT build or its lock makes the hang a
kernel.build failure (kernel.build.jit_wait_under_watchdog), a thread waiting in a collective
leaves it the watchdog's generic hang (runtime.crash.scheduler_watchdog).  The dump's frame only
narrows the watchdog's rule (match.line_also): a py-spy line alone forms no incident.
"""

from __future__ import annotations

from conftest import FIXTURES, explain_incidents, incidents_of_lines

RUNTIME = FIXTURES / "runtime"
WATCHDOG_046 = "[2025-04-03 20:06:34 TP0] Watchdog timeout (self.watchdog_timeout=300)"
DUMP = [
    "[2025-04-03 20:06:34 TP0] Pyspy dump for PID 112694:",
    "Process 112694: sglang::scheduler_TP0",
    "Python v3.12.9 (/usr/bin/python3.12)",
    "",
    'Thread 114788 (idle): "Thread-4 (forward_thread_func)"',
    "    acquire (filelock/_api.py:344)",
    "    load_cuda_ops (flashinfer/jit/core.py:122)",
    "    forward_extend (flashinfer_backend.py:445)",
    "    forward_thread_func (tp_worker_overlap_thread.py:112)",
]


def test_dump_after_the_line_joins_the_incident_and_names_the_jit_hang():
    incs = explain_incidents(RUNTIME / "watchdog_pyspy_flashinfer_jit_lock_044.log")
    assert len(incs) == 1
    inc = incs[0]
    assert inc["rule"] == "kernel.build.jit_wait_under_watchdog" and inc["category"] == "kernel.build"
    assert inc["lines"] == [3, 165]  # the watchdog line to the second dump's end
    assert "flashinfer/jit" in inc["title"]


def test_dump_before_the_line_joins_the_incident_0523_order():
    incs = explain_incidents(RUNTIME / "watchdog_pyspy_before_line_jit_0523.log")
    assert len(incs) == 1
    inc = incs[0]
    assert inc["rule"] == "kernel.build.jit_wait_under_watchdog"
    assert inc["lines"][0] == 3  # "Pyspy dump for PID ..." opens it
    assert inc["phase"] == "serving"  # the ready line is above


def test_a_dump_waiting_in_a_collective_stays_the_generic_hang():
    incs = explain_incidents(RUNTIME / "watchdog_pyspy_nccl_wait_044.log")
    assert [i["rule"] for i in incs] == ["runtime.crash.scheduler_watchdog"]
    assert incs[0]["lines"][1] > 100  # the dumps are in it all the same


def test_a_py_spy_dump_without_a_watchdog_line_forms_nothing(tmp_path):
    # (the soft watchdog's dump, a py-spy run by hand): the JIT frame is no trigger of its own
    assert incidents_of_lines(tmp_path, DUMP) == []


def test_soft_watchdog_is_not_the_jit_hang(tmp_path):
    soft = "[2025-04-03 20:06:35 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)"
    p = tmp_path / "soft.log"
    p.write_text("\n".join(DUMP + [soft]) + "\n")
    assert all(i["rule"] != "kernel.build.jit_wait_under_watchdog" for i in explain_incidents(p))


def test_unrelated_record_between_ends_the_dump(tmp_path):
    # a dump, then another record, then (far later) a watchdog line: the dump is not its evidence
    lines = DUMP + ["[2025-04-03 20:06:35 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, "
                    "gen throughput (token/s): 120.00, #queue-req: 0"] + [WATCHDOG_046]
    p = tmp_path / "apart.log"
    p.write_text("\n".join(lines) + "\n")
    incs = explain_incidents(p)
    assert [i["rule"] for i in incs] == ["runtime.crash.scheduler_watchdog"]
    assert incs[0]["lines"][0] == len(lines)


def test_line_also_needs_line(tmp_path):
    from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet

    d = tmp_path / "rules"
    d.mkdir()
    (d / "r.yaml").write_text(
        "rules:\n"
        "  - id: kernel.build.only_line_also\n"
        "    category: kernel.build\n"
        "    phase: auto\n"
        "    title: t\n"
        "    match:\n"
        "      kind: signal\n"
        "      line_also: 'flashinfer/jit'\n"
        "    explanation: e\n")
    try:
        RuleSet.load([d], builtin=False, user=False, strict=True)
    except RuleLoadError as e:
        assert "line_also needs match.line" in str(e)
    else:
        raise AssertionError("a rule with line_also and no line loaded")
