"""A Prometheus exporter for ``watch`` and ``run`` (``--metrics-port``).

It listens to the same events the report prints and keeps, per node (``--node``, default
the host name):

- ``sglang_doctor_incidents_total{category, rule, phase, node}``   counter: every incident reported,
                                                                   provisional ones included
- ``sglang_doctor_incidents_confirmed_total{category, rule, phase, node}``
                                                                   counter: incidents that stand: at
                                                                   once, or when a provisional one is
                                                                   confirmed (what SGLangIncident
                                                                   alerts on)
- ``sglang_doctor_incidents_provisional{category, rule, phase, node}``
                                                                   gauge: provisional incidents not
                                                                   decided yet
- ``sglang_doctor_withdrawn_total{category, rule, phase, node}``   counter: provisional incidents
                                                                   the launch then survived
  (for each label set: incidents = confirmed + withdrawn + provisional)
- ``sglang_doctor_launches_total{node}``                           counter
- ``sglang_doctor_ready{node}``                                    1 ready, 0 otherwise
- ``sglang_doctor_startup_seconds{node}``                          launch -> ready of the last launch
                                                                   (the log's own times when it has them)
- ``sglang_doctor_startup_milestone{node, milestone}``             1 for the launch's current step
- ``sglang_doctor_last_incident_timestamp_seconds{node}``          wall time of the last incident
- ``sglang_doctor_last_launch_timestamp_seconds{node}``            wall time the last launch was seen
- ``sglang_doctor_max_total_num_tokens{node}``, ``sglang_doctor_max_running_requests{node}``
                                                                   the pool sizes the log gave

The HTTP server costs nothing while nobody scrapes: its thread blocks in ``select`` with no
timeout (``handle_request`` in a loop), unlike ``prometheus_client.start_http_server``'s
``serve_forever``, which wakes twice a second.
"""

from __future__ import annotations

import calendar
import http.server
import threading
import time
from typing import Any

from sglang_doctor.incidents.milestones import DESCRIPTIONS

MILESTONES = tuple(DESCRIPTIONS)


class MetricsError(Exception):
    """The exporter could not start (port taken, bad address); one line for the user."""


class Metrics:
    """The doctor's metrics; ``observe(event)`` is called for every event."""

    def __init__(self, node: str):
        from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics

        disable_created_metrics()  # no *_created series: they double what a scrape carries
        self.node = node
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.incidents = Counter("sglang_doctor_incidents", "Incidents diagnosed, by category, rule and phase.",
                                 ["category", "rule", "phase", "node"], registry=r)
        self.confirmed = Counter("sglang_doctor_incidents_confirmed",
                                 "Incidents that stand: reported as such, or provisional ones confirmed since.",
                                 ["category", "rule", "phase", "node"], registry=r)
        self.provisional = Gauge("sglang_doctor_incidents_provisional",
                                 "Provisional incidents not decided yet (the launch may yet survive them).",
                                 ["category", "rule", "phase", "node"], registry=r)
        self.withdrawn = Counter("sglang_doctor_withdrawn",
                                 "Provisional incidents withdrawn: the launch came up or went on serving after them.",
                                 ["category", "rule", "phase", "node"], registry=r)
        self.launches = Counter("sglang_doctor_launches", "Launches (server_args dumps) seen in the log.",
                                ["node"], registry=r)
        self.ready = Gauge("sglang_doctor_ready", "1 when the current launch announced it is ready, else 0.",
                           ["node"], registry=r)
        self.startup_seconds = Gauge("sglang_doctor_startup_seconds",
                                     "Seconds from the last launch to its ready line.", ["node"], registry=r)
        self.milestone = Gauge("sglang_doctor_startup_milestone",
                               "1 for the start-up step the current launch reached last, 0 for the others.",
                               ["node", "milestone"], registry=r)
        self.last_incident = Gauge("sglang_doctor_last_incident_timestamp_seconds",
                                   "Unix time at which the last incident was diagnosed.", ["node"], registry=r)
        self.last_launch = Gauge("sglang_doctor_last_launch_timestamp_seconds",
                                 "Unix time of the last launch (the log's time when it has one).", ["node"],
                                 registry=r)
        self.max_total_num_tokens = Gauge("sglang_doctor_max_total_num_tokens",
                                          "max_total_num_tokens the scheduler logged (KV pool size).", ["node"],
                                          registry=r)
        self.max_running_requests = Gauge("sglang_doctor_max_running_requests",
                                          "max_running_requests the scheduler logged.", ["node"], registry=r)
        self.ready.labels(node).set(0)
        self.launches.labels(node)  # the series exists from the start: increase() sees the first launch
        self._launch_log: float | None = None  # the log's own time of the current launch
        self._launch_seen: float | None = None  # when we saw it (monotonic)
        self._lock = threading.Lock()
        self._open: dict[tuple[str, ...], int] = {}  # provisional incidents not decided, by labels

    def observe(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        node = self.node
        with self._lock:
            if kind == "launch":
                self.launches.labels(node).inc()
                self.ready.labels(node).set(0)
                self._launch_log, self._launch_seen = _log_time(ev), time.monotonic()
                self.last_launch.labels(node).set(time.time())
                self._set_milestone(None)
            elif kind == "milestone":
                name = ev.get("name")
                if name in DESCRIPTIONS:
                    self._set_milestone(name)
                if isinstance(ev.get("max_total_num_tokens"), (int, float)):
                    self.max_total_num_tokens.labels(node).set(ev["max_total_num_tokens"])
                if isinstance(ev.get("max_running_requests"), (int, float)):
                    self.max_running_requests.labels(node).set(ev["max_running_requests"])
            elif kind in ("ready", "healthy"):
                self.ready.labels(node).set(1)
                self._set_milestone("ready")
                if kind == "ready" and self._launch_seen is not None:
                    self.startup_seconds.labels(node).set(self._startup_seconds(ev))
            elif kind == "incident":
                labels = _labels(ev, node)
                self.incidents.labels(*labels).inc()
                if ev.get("provisional"):  # decided later: a ``confirmed`` event or a withdrawal
                    self._open[labels] = self._open.get(labels, 0) + 1
                    self.provisional.labels(*labels).set(self._open[labels])
                else:
                    self.confirmed.labels(*labels).inc()
                self.last_incident.labels(node).set(time.time())
                if ev.get("provisional") != "serving":  # a server that may well go on serving
                    self.ready.labels(node).set(0)
            elif kind == "confirmed" or (kind == "warning" and ev.get("withdraws")):
                labels = _labels(ev, node)
                self._decided(labels)
                (self.confirmed if kind == "confirmed" else self.withdrawn).labels(*labels).inc()

    def _decided(self, labels: tuple[str, ...]) -> None:
        """One provisional incident of these labels is decided (never below 0)."""
        if self._open.get(labels, 0) > 0:
            self._open[labels] -= 1
            self.provisional.labels(*labels).set(self._open[labels])

    def _startup_seconds(self, ready: dict[str, Any]) -> float:
        """From the log's own times when both lines have one, else as we saw them arrive."""
        ready_log = _log_time(ready)
        if ready_log is not None and self._launch_log is not None and ready_log >= self._launch_log:
            return ready_log - self._launch_log
        return time.monotonic() - self._launch_seen

    def _set_milestone(self, current: str | None) -> None:
        for name in MILESTONES:
            self.milestone.labels(self.node, name).set(1 if name == current else 0)


def _labels(ev: dict[str, Any], node: str) -> tuple[str, ...]:
    """category, rule, phase, node of an incident, a ``confirmed`` event or a withdrawal."""
    return (str(ev.get("category") or "other"), str(ev.get("rule") or "unknown"), str(ev.get("phase") or "unknown"),
            node)


def _log_time(ev: dict[str, Any]) -> float | None:
    """The time of an event's log line (``_timestamp``, the server's local time, naive: only
    differences between two of them mean anything)."""
    stamp = ev.get("_timestamp")
    if not isinstance(stamp, str) or len(stamp) != 19:
        return None
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")))
    except ValueError:
        return None


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def serve(metrics: Metrics, host: str, port: int) -> _Server:
    """Serve ``/metrics`` on host:port from a daemon thread; raises MetricsError."""
    from prometheus_client.exposition import MetricsHandler

    handler = MetricsHandler.factory(metrics.registry)
    handler.log_message = lambda *args: None  # no access log on our stderr
    try:
        server = _Server((host, port), handler)
    except OSError as exc:
        raise MetricsError(f"--metrics-port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    server.timeout = None

    def loop() -> None:
        _name_thread(b"sglang-doctor-m")  # visible in /proc/PID/task/*/comm, ps -L, top -H
        while True:  # blocks in select() until a scrape arrives: no wake-ups while idle
            server.handle_request()

    threading.Thread(target=loop, name="sglang-doctor-metrics", daemon=True).start()
    return server


def _name_thread(name: bytes) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(15, name, 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass
