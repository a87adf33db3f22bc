"""torch's NCCL watchdog lines (the heartbeat monitor's abort, the collective-timeout dump) are
an incident of their own when nothing else is in the text (class.nccl.watchdog_hang /
class.nccl.watchdog_dump), and are less sure than any other rule's answer: pasted below a
rank's own crash they are that crash's aftermath on the ranks left waiting, and the crash
stays the answer a reader takes (the most confident incident of the best layer, as
bench/accuracy.py's primary_incident).  Real fixture files, the real CLI."""

from __future__ import annotations

from pathlib import Path

from test_record_exception import explain_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_LAYER_RANK = {"specific": 2, "class": 1, "fallback": 0}


def _primary(incidents: list[dict]) -> dict:
    ranked = [(_LAYER_RANK.get(i.get("layer") or "fallback", 0), float(i.get("confidence") or 0), -n, n)
              for n, i in enumerate(incidents)]
    return incidents[max(ranked)[3]]


def _joined(tmp_path: Path, *parts: str) -> Path:
    log = tmp_path / "server.log"
    log.write_text("".join((FIXTURES / p).read_text() for p in parts))
    return log


def test_the_watchdog_lines_alone_are_an_nccl_incident():
    (hang,) = explain_file(FIXTURES / "nccl" / "watchdog_heartbeat_hang_1691.log")
    assert (hang["rule"], hang["category"]) == ("class.nccl.watchdog_hang", "nccl")
    (dump,) = explain_file(FIXTURES / "nccl" / "watchdog_dump_signal_collective_timeout.log")
    assert (dump["rule"], dump["category"]) == ("class.nccl.watchdog_dump", "nccl")


def test_a_crash_above_the_watchdog_lines_stays_the_answer(tmp_path: Path):
    log = _joined(tmp_path, "classes/runtime_after_ready_bare.log", "nccl/watchdog_dump_signal_collective_timeout.log",
                  "nccl/watchdog_heartbeat_hang_1691.log")
    incidents = explain_file(log)
    assert [i["category"] for i in incidents] == ["runtime.crash", "nccl"]
    assert _primary(incidents)["rule"] == "class.runtime.serving_path"  # a scheduler batch step (crash35)


def test_a_specific_crash_above_the_heartbeat_lines_stays_the_answer(tmp_path: Path):
    log = _joined(tmp_path, "runtime/illegal_memory_access_0523.log", "nccl/watchdog_heartbeat_hang_1691.log")
    incidents = explain_file(log)
    assert _primary(incidents)["rule"] == "runtime.crash.illegal_memory_access"
