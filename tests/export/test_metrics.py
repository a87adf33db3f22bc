"""The Prometheus exporter and the OTel fields, through the real CLI: a real `watch`
subprocess following a real file, scraped over HTTP; `explain --format json` output."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import FIXTURES, doctor_cmd

START = (b"[2026-05-09 09:30:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
         b"[2026-05-09 09:31:00] max_total_num_tokens=1000, chunked_prefill_size=4096, max_prefill_tokens=16384, "
         b"max_running_requests=48, context_len=2048\n"
         b"[2026-05-09 09:32:10] The server is fired up and ready to roll!\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> dict[str, float]:
    """Every sample of /metrics, keyed by its name and labels as printed."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            samples[key] = float(value)
    return samples


def wait_for(predicate, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except OSError as exc:  # the exporter not listening yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached in {timeout}s (last: {last!r})")


def start_watch(log, port, node, *extra):
    return subprocess.Popen(doctor_cmd("watch", str(log), "--format", "json", "--flush-after", "0.3",
                                       "--metrics-port", str(port), "--node", node, *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_watch_exports_launches_readiness_pool_sizes_and_incidents(tmp_path, seed_full):
    log = tmp_path / "sglang.log"
    log.write_bytes(START)
    port = free_port()
    proc = start_watch(log, port, "gpu-node-7")
    try:
        ready = 'sglang_doctor_ready{node="gpu-node-7"}'
        wait_for(lambda: scrape(port).get(ready) == 1.0, what="ready=1")
        m = scrape(port)
        assert m['sglang_doctor_launches_total{node="gpu-node-7"}'] == 1.0
        assert m['sglang_doctor_max_total_num_tokens{node="gpu-node-7"}'] == 1000.0
        assert m['sglang_doctor_max_running_requests{node="gpu-node-7"}'] == 48.0
        # the log's own times: 09:30:00 -> 09:32:10
        assert m['sglang_doctor_startup_seconds{node="gpu-node-7"}'] == 130.0
        assert m['sglang_doctor_startup_milestone{milestone="ready",node="gpu-node-7"}'] == 1.0
        assert not [k for k in m if k.startswith("sglang_doctor_incidents_total")]
        assert not [k for k in m if k.endswith("_created")]

        # a relaunch that dies sizing its pools (the seed's first launch)
        before = time.time()
        with open(log, "ab") as fh:
            fh.write(b"\n".join(seed_full.read_bytes().split(b"\n")[:66]) + b"\n")
        key = ('sglang_doctor_incidents_total{category="memory.kv_pool",node="gpu-node-7",'
               'phase="startup.memory_pool",rule="memory.kv_pool.not_enough_memory"}')
        m = wait_for(lambda: (lambda s: s if s.get(key) == 1.0 else None)(scrape(port)), what="incident counted")
        assert m['sglang_doctor_launches_total{node="gpu-node-7"}'] == 2.0
        assert m[ready] == 0.0
        assert before <= m['sglang_doctor_last_incident_timestamp_seconds{node="gpu-node-7"}'] <= time.time()
        current = [k for k, v in m.items() if k.startswith("sglang_doctor_startup_milestone") and v == 1.0]
        assert len(current) == 1 and 'milestone="ready"' not in current[0]
    finally:
        stop(proc)


def test_node_defaults_to_the_host_name(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_bytes(START)
    port = free_port()
    proc = subprocess.Popen(doctor_cmd("watch", str(log), "--format", "json", "--metrics-port", str(port)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        key = f'sglang_doctor_ready{{node="{socket.gethostname()}"}}'
        wait_for(lambda: scrape(port).get(key) == 1.0, what="ready under the host name")
    finally:
        stop(proc)


def test_a_taken_metrics_port_is_one_line_and_exit_2(tmp_path):
    log = tmp_path / "sglang.log"
    log.write_bytes(START)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run(doctor_cmd("watch", str(log), "--metrics-port", str(port)), capture_output=True,
                           text=True, timeout=30)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--metrics-port" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("bad", ["0", "70000", "http"])
def test_a_bad_metrics_port_is_refused(tmp_path, bad):
    r = subprocess.run(doctor_cmd("watch", str(tmp_path / "x.log"), "--metrics-port", bad), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_incident_json_carries_the_otel_fields(seed_full):
    r = subprocess.run(doctor_cmd("explain", str(seed_full), "--format", "json"), capture_output=True, text=True,
                       timeout=60)
    events = [json.loads(line) for line in r.stdout.splitlines()]
    incidents = [e for e in events if e["event"] == "incident"]
    assert len(incidents) == 2
    inc = incidents[1]
    # the CONTRACT fields are still there, untouched
    assert inc["rule"] == "memory.kv_pool.not_enough_memory" and inc["lines"] == [86, 132]
    # the OTel names beside them
    assert inc["severity_text"] == "ERROR" and inc["severity_number"] == 17
    assert inc["body"] == inc["title"]
    assert inc["exception.type"] == inc["exception"]["type"] == "RuntimeError"
    assert inc["exception.message"] == inc["exception"]["message"]
    assert inc["exception.stacktrace"] == inc["traceback"]
    assert inc["timestamp"] == "2026-05-09T09:32:36"  # the first line of the incident (line 86)
    assert inc["log.file.path"] == os.path.abspath(seed_full)
    assert inc["host.name"] == socket.gethostname()
    assert inc["service.name"] == "sglang"
    assert "process.pid" not in inc  # explain did not start the server: unknown, so absent
    launch = next(e for e in events if e["event"] == "launch")
    assert launch["severity_text"] == "INFO" and launch["timestamp"].startswith("2026-05-09T")
    assert all("observed_timestamp" in e for e in events if e["event"] != "summary")
    assert events[-1] == {"event": "summary", "incidents": 2, "launches": 2, "lines": 132}  # a tally, as CONTRACT


def test_service_version_only_when_the_log_says(seed_full):
    # the seed never prints its release (its flags are checked against 0.5.9 by the log's
    # style, a guess): the field stays absent rather than guessed
    r = subprocess.run(doctor_cmd("explain", str(seed_full), "--format", "json"), capture_output=True, text=True,
                       timeout=60)
    assert not [line for line in r.stdout.splitlines() if '"service.version"' in line]
    # a launch that does say carries it, and so does everything after it in that stream
    from sglang_doctor.export import otel

    resource = otel.Resource(log_path="/var/log/sglang.log", host_name="n1")
    launch = otel.add_fields({"event": "launch", "line": 3, "index": 0, "sglang_version": "0.5.23"}, resource)
    later = otel.add_fields({"event": "milestone", "line": 9, "name": "ready"}, resource)
    assert launch["service.version"] == later["service.version"] == "0.5.23"
    assert later["body"] == "ready" and later["host.name"] == "n1"


def test_pipe_mode_json_has_no_file_path(seed_tail):
    with open(seed_tail, "rb") as fh:
        r = subprocess.run(doctor_cmd("-", "--format", "json"), stdin=fh, capture_output=True, text=True, timeout=60)
    inc = next(json.loads(line) for line in r.stdout.splitlines() if '"incident"' in line)
    assert "log.file.path" not in inc and inc["service.name"] == "sglang"
    assert inc["exception.stacktrace"] == inc["traceback"]


def test_metrics_server_thread_sleeps_while_idle(tmp_path):
    """Between events the exporter's thread blocks in select() with no timeout: its context
    switches do not grow while nobody scrapes (prometheus_client's serve_forever wakes
    twice a second)."""
    log = tmp_path / "sglang.log"
    log.write_bytes(START)
    port = free_port()
    proc = start_watch(log, port, "idle")
    try:
        wait_for(lambda: scrape(port).get('sglang_doctor_ready{node="idle"}') == 1.0, what="ready")

        def switches():
            for tid in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{tid}/comm") as fh:
                    if fh.read().strip().startswith("sglang-doctor-m"):
                        with open(f"/proc/{proc.pid}/task/{tid}/status") as st:
                            fields = dict(line.split(":\t") for line in st.read().splitlines() if ":\t" in line)
                        return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])
            raise AssertionError("no metrics thread")

        first = switches()
        select.select([], [], [], 2.0)
        assert switches() == first
    finally:
        stop(proc)


def test_a_withdrawn_incident_is_counted_apart_and_a_provisional_one_while_serving_keeps_ready():
    """Live modes report an incident the launch may survive as provisional, then withdraw it
    (pipeline.py): the counter of incidents cannot go down, so withdrawn ones have their own,
    and one that may well be survived while serving does not mark the server not ready."""
    pytest.importorskip("prometheus_client")
    from prometheus_client import generate_latest

    from sglang_doctor.export.metrics import Metrics

    m = Metrics("n1")
    m.observe({"event": "ready", "line": 10})
    incident = {"event": "incident", "category": "memory.cuda_oom", "rule": "memory.cuda_oom.logged_message",
                "phase": "serving", "provisional": "serving"}
    m.observe(incident)
    m.observe({"event": "warning", "kind": "survived_while_serving", "category": "memory.cuda_oom",
               "rule": "memory.cuda_oom.logged_message", "phase": "serving",
               "withdraws": {"rule": "memory.cuda_oom.logged_message", "lines": [12, 12]}})
    text = generate_latest(m.registry).decode()
    assert 'sglang_doctor_ready{node="n1"} 1.0' in text
    assert ('sglang_doctor_withdrawn_total{category="memory.cuda_oom",node="n1",phase="serving",'
            'rule="memory.cuda_oom.logged_message"} 1.0') in text
    m.observe({**incident, "provisional": None})  # an incident that stands still marks it not ready
    assert 'sglang_doctor_ready{node="n1"} 0.0' in generate_latest(m.registry).decode()


def test_a_provisional_incident_counts_as_confirmed_only_once_confirmed():
    """incidents_total counts every incident reported; incidents_confirmed_total (what the
    SGLangIncident alert reads) only those that stand: at once, or a provisional one when its
    ``confirmed`` event comes; the provisional gauge holds the undecided ones.  For each label
    set: incidents = confirmed + withdrawn + provisional."""
    pytest.importorskip("prometheus_client")
    from prometheus_client import generate_latest

    from sglang_doctor.export.metrics import Metrics

    labels = {"category": "memory.cuda_oom", "rule": "memory.cuda_oom.logged_message", "phase": "startup.cuda_graph"}
    series = 'category="memory.cuda_oom",node="n1",phase="startup.cuda_graph",rule="memory.cuda_oom.logged_message"'

    def value(name):
        for line in generate_latest(m.registry).decode().splitlines():
            if line.startswith(f"{name}{{{series}}} "):
                return float(line.rsplit(" ", 1)[1])
        return None

    m = Metrics("n1")
    m.observe({"event": "launch", "index": 0, "line": 1})
    for lines in ([16, 17], [30, 31]):
        m.observe({"event": "incident", **labels, "lines": lines, "provisional": "ready"})
    assert value("sglang_doctor_incidents_total") == 2.0
    assert value("sglang_doctor_incidents_provisional") == 2.0
    assert value("sglang_doctor_incidents_confirmed_total") is None  # no series: nothing can alert
    m.observe({"event": "warning", "kind": "survived_before_ready", **labels,
               "withdraws": {"rule": labels["rule"], "lines": [16, 17]}})
    m.observe({"event": "confirmed", **labels, "confirms": {"rule": labels["rule"], "lines": [30, 31]},
               "provisional": "ready", "message": "... stands: launch 1 died after it (line 40)"})
    assert value("sglang_doctor_incidents_provisional") == 0.0
    assert value("sglang_doctor_withdrawn_total") == 1.0
    assert value("sglang_doctor_incidents_confirmed_total") == 1.0
    m.observe({"event": "incident", **labels, "lines": [50, 50]})  # one that stands at once
    assert value("sglang_doctor_incidents_confirmed_total") == 2.0
    assert value("sglang_doctor_incidents_total") == 3.0
    m.observe({"event": "confirmed", **labels})  # a decision with nothing open never goes below 0
    assert value("sglang_doctor_incidents_provisional") == 0.0
