"""The restart policy with a best guess's guarded advice (remedy/guarded.py).

A crash while serving that no rule knew restarts the same command (the supervisor's restart
policy); the guarded "if this is X, try Y" advice an unknown failure now carries is for a
person and must neither be applied nor stop that restart.
"""

from __future__ import annotations

from types import SimpleNamespace

from sglang_doctor.model import Diagnosis, Incident, Launch
from sglang_doctor.remedy import flags, remedies
from sglang_doctor.run.supervisor import Supervisor

V0523 = flags.load_catalog("0.5.23")


def _unknown_crash_while_serving() -> Diagnosis:
    incident = Incident(kind="traceback", first_line=10, last_line=12, after_ready=True)
    d = Diagnosis(incident=incident, rule="unknown", category="runtime.crash", launch=Launch(index=0, line=1),
                  fallback={"missing": "cut", "next_step": "sglang-doctor explain LOG",
                            "best_guess": {"category": "runtime.crash", "confidence": 0.4, "why": "test"}})
    d.remediation = remedies.remediate(d, command=["python", "-m", "sglang.launch_server", "--model-path", "/m",
                                                   "--enable-mixed-chunk"],
                                       version=V0523.version, catalog=V0523, hardware=None, model_config=None)
    return d


def _supervisor() -> SimpleNamespace:
    return SimpleNamespace(opts=SimpleNamespace(mode="foreground", yes=True), attempts=[{"ready_seconds": 3.0}],
                           tried=set(), catalog=V0523)


def test_guarded_advice_is_given_but_never_chosen_and_the_crash_is_restarted():
    d = _unknown_crash_while_serving()
    assert d.remediation is not None and d.remediation.unset == ["--enable-mixed-chunk"]
    assert d.remediation.needs_human
    me = _supervisor()
    change, why = Supervisor._next_change(me, d, ["python", "-m", "sglang.launch_server"], {})
    assert change is None and "no rule knows" in why
    assert Supervisor._restartable(me, d)


def test_a_known_rule_that_needs_a_human_is_still_not_restarted():
    d = _unknown_crash_while_serving()
    d.rule = "runtime.crash.scheduler_exception"
    assert not Supervisor._restartable(_supervisor(), d)
