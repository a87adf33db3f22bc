"""The fleet kit against a real Prometheus (Debian's `prometheus`, installed by scripts/test).

Three `watch` processes follow three logs as three nodes; a real Prometheus on 127.0.0.1
scrapes them with the shipped scrape configuration and evaluates the shipped alert rules.
A crash appended to one log must fire `SGLangIncident` with that node's and that
category's labels, and only for that node.

The shipped deploy/prometheus/prometheus.yml is used as it is, with two test-only changes:
the scrape and evaluation intervals (1 s instead of 15 s, so the test takes seconds) and
absolute paths to the shipped rules and the test's targets file.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from conftest import ROOT
from test_metrics import START, free_port, scrape, start_watch, stop, wait_for

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
REQUIRED = os.environ.get("CI") == "true" or os.environ.get("SGLANG_DOCTOR_REQUIRE_PROMETHEUS") == "1"
DEPLOY = ROOT / "deploy" / "prometheus"

pytestmark = pytest.mark.slow


def _need(tool, name):
    if tool is None:
        if REQUIRED:
            pytest.fail(f"{name} is not installed (scripts/test installs Debian's prometheus)")
        pytest.skip(f"{name} not installed (apt-get install prometheus)")


def test_promtool_accepts_the_shipped_rules_and_config(tmp_path):
    _need(PROMTOOL, "promtool")
    r = subprocess.run([PROMTOOL, "check", "rules", str(DEPLOY / "sglang-doctor-alerts.yml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 rules found" in r.stdout
    r = subprocess.run([PROMTOOL, "check", "config", str(DEPLOY / "prometheus.yml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def _api(port, path, **params):
    url = f"http://127.0.0.1:{port}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as resp:
        doc = json.load(resp)
    assert doc["status"] == "success", doc
    return doc["data"]


def _start_prometheus(tmp_path, ports):
    """A real Prometheus with the shipped configuration and rules (intervals 1 s) scraping
    ``ports``; returns (process, its port) once every target is up."""
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    config["global"]["evaluation_interval"] = "1s"
    config["rule_files"] = [str(DEPLOY / name) for name in config["rule_files"]]
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "doctors.json").write_text(json.dumps(
        [{"targets": [f"127.0.0.1:{port}" for port in ports], "labels": {"cluster": "test"}}]))
    config["scrape_configs"][0]["file_sd_configs"][0]["files"] = [str(tmp_path / "targets" / "*.json")]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom_port = free_port()
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.err", "wb"))

    def all_up():
        targets = _api(prom_port, "targets")["activeTargets"]
        return len(targets) == len(ports) and all(t["health"] == "up" for t in targets)

    try:
        wait_for(all_up, timeout=60, what="every target up")
    except BaseException:
        _stop_prometheus(prom)
        raise
    return prom, prom_port


def _stop_prometheus(prom):
    if prom is None:
        return
    prom.send_signal(signal.SIGTERM)
    try:
        prom.wait(20)
    except subprocess.TimeoutExpired:
        prom.kill()
        prom.wait()


def test_an_appended_crash_fires_the_alert_for_its_node_and_category(tmp_path, seed_full):
    _need(PROMETHEUS, "prometheus")
    nodes = ["node-a", "node-b", "node-c"]
    logs, ports, watchers = {}, {}, {}
    prom = None
    try:
        for node in nodes:
            logs[node] = tmp_path / f"{node}.log"
            logs[node].write_bytes(START)
            ports[node] = free_port()
            watchers[node] = start_watch(logs[node], ports[node], node)
        for node in nodes:
            wait_for(lambda n=node: scrape(ports[n]).get(f'sglang_doctor_ready{{node="{n}"}}') == 1.0,
                     what=f"{node} ready")

        prom, prom_port = _start_prometheus(tmp_path, [ports[n] for n in nodes])

        def ready_everywhere():
            result = _api(prom_port, "query", query="sglang_doctor_ready")["result"]
            return len(result) == 3 and all(r["value"][1] == "1" for r in result)

        wait_for(ready_everywhere, timeout=30, what="ready=1 on every node in Prometheus")
        assert _api(prom_port, "alerts")["alerts"] == []

        # node-b relaunches and dies sizing its pools (the seed's first launch)
        with open(logs["node-b"], "ab") as fh:
            fh.write(b"\n".join(seed_full.read_bytes().split(b"\n")[:66]) + b"\n")

        def fired():
            alerts = [a for a in _api(prom_port, "alerts")["alerts"]
                      if a["labels"]["alertname"] == "SGLangIncident" and a["state"] == "firing"]
            return alerts or None

        alerts = wait_for(fired, timeout=60, what="SGLangIncident firing")
        assert len(alerts) == 1, alerts
        labels = alerts[0]["labels"]
        assert labels["node"] == "node-b"
        assert labels["category"] == "memory.kv_pool"
        assert labels["rule"] == "memory.kv_pool.not_enough_memory"
        assert labels["phase"] == "startup.memory_pool"
        assert "node-b" in alerts[0]["annotations"]["summary"]
        ready = {r["metric"]["node"]: r["value"][1]
                 for r in _api(prom_port, "query", query="sglang_doctor_ready")["result"]}
        assert ready == {"node-a": "1", "node-b": "0", "node-c": "1"}
    finally:
        _stop_prometheus(prom)
        for proc in watchers.values():
            stop(proc)


def _evaluated_since(prom_port, t0: float) -> bool:
    """The SGLangIncident rule has been evaluated after wall time ``t0``."""
    for group in _api(prom_port, "rules")["groups"]:
        for rule in group["rules"]:
            if rule["name"] == "SGLangIncident" and rule.get("lastEvaluation"):
                stamp = rule["lastEvaluation"]
                seconds = datetime.datetime.fromisoformat(stamp[:19] + "+00:00").timestamp()
                fraction = stamp[19:].rstrip("Z").split("+")[0]
                return seconds + (float(fraction) if fraction.startswith(".") else 0.0) > t0
    return False


def _ever_alerted(prom_port, node: str) -> list:
    """Every SGLangIncident alert (pending or firing) Prometheus recorded for ``node``."""
    query = f'count_over_time(ALERTS{{alertname="SGLangIncident",node="{node}"}}[1h])'
    return _api(prom_port, "query", query=query)["result"]


def _seen_by_prometheus(prom_port, query: str) -> float:
    """Wall time after Prometheus holds a sample for which ``query`` has a result."""
    wait_for(lambda: _api(prom_port, "query", query=query)["result"], timeout=60, what=query)
    return time.time()


def test_a_provisional_incident_pages_only_once_confirmed(tmp_path):
    """A failure SGLang logs and may go on from (a caught CUDA OOM while the launch starts) is
    provisional in `watch`.  On node-w the launch then comes up: it is withdrawn, and the
    shipped SGLangIncident must never have fired for it, not even while it was open.  On
    node-c the launch dies instead: it is confirmed, and the alert fires with its labels.
    Each part of a log is appended once Prometheus holds what the previous part decided, and
    "never fired" is read from Prometheus's own ALERTS series after an evaluation that saw the
    state: no answer depends on timing.  (The old rule, on incidents_total, fired on node-w.)"""
    _need(PROMETHEUS, "prometheus")
    from tests.incidents.test_survived_before_ready import (CAPTURED, CAUGHT_OOM, DUMP, READY, SCHEDULER_DIED,
                                                            SCHEDULER_UP, START as SLOW_START, UVICORN, WARMUP)

    provisional = (DUMP + SLOW_START + CAUGHT_OOM).encode()
    rule = "memory.cuda_oom.logged_message"
    nodes = ["node-w", "node-c"]
    logs, ports, watchers = {}, {}, {}
    prom = None
    try:
        for node in nodes:
            logs[node] = tmp_path / f"{node}.log"
            logs[node].write_bytes(provisional)
            ports[node] = free_port()
            watchers[node] = start_watch(logs[node], ports[node], node)
        prom, prom_port = _start_prometheus(tmp_path, [ports[n] for n in nodes])

        # both provisional incidents are open and scraped, and the rule has looked at them
        seen = _seen_by_prometheus(prom_port, f'sum(sglang_doctor_incidents_provisional{{rule="{rule}"}}) == 2')
        wait_for(lambda: _evaluated_since(prom_port, seen), timeout=60, what="an evaluation after the scrape")
        assert _api(prom_port, "query", query=f'sum(sglang_doctor_incidents_total{{rule="{rule}"}})')[
            "result"][0]["value"][1] == "2"
        assert _ever_alerted(prom_port, "node-w") == [] and _ever_alerted(prom_port, "node-c") == []

        with open(logs["node-w"], "ab") as fh:  # the launch comes up: withdrawn
            fh.write((CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY).encode())
        with open(logs["node-c"], "ab") as fh:  # the scheduler dies: confirmed
            fh.write(SCHEDULER_DIED.encode())

        def fired():
            alerts = [a for a in _api(prom_port, "alerts")["alerts"]
                      if a["labels"]["alertname"] == "SGLangIncident" and a["state"] == "firing"
                      and a["labels"]["rule"] == rule]
            return alerts or None

        [alert] = wait_for(fired, timeout=60, what="SGLangIncident firing for the confirmed incident")
        assert alert["labels"]["node"] == "node-c" and alert["labels"]["phase"] == "startup.cuda_graph"
        seen = _seen_by_prometheus(prom_port, 'sglang_doctor_withdrawn_total{node="node-w"} == 1')
        wait_for(lambda: _evaluated_since(prom_port, seen), timeout=60, what="an evaluation after the withdrawal")
        assert _ever_alerted(prom_port, "node-w") == []
        open_now = _api(prom_port, "query", query="sum(sglang_doctor_incidents_provisional)")["result"]
        assert open_now[0]["value"][1] == "0"
    finally:
        _stop_prometheus(prom)
        for proc in watchers.values():
            stop(proc)
