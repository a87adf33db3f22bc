"""The metrics options shared by ``watch`` and ``run`` (export/metrics.py does the work)."""

from __future__ import annotations

import click

from sglang_doctor.pipeline import InputError
from sglang_doctor.report import Reporter


def metrics_options(f):
    """--metrics-port / --metrics-host / --node: a Prometheus exporter beside watch and run."""
    f = click.option("--node", default=None,
                     help="The node label of the metrics (default: this host's name).")(f)
    f = click.option("--metrics-host", default="127.0.0.1", show_default=True,
                     help="Address the metrics exporter listens on.")(f)
    f = click.option("--metrics-port", type=click.IntRange(1, 65535), default=None,
                     help="Serve Prometheus metrics on http://HOST:PORT/metrics (docs/FLEET.md).")(f)
    return f


def start_metrics(reporter: Reporter, metrics_port: int | None, metrics_host: str, node: str | None) -> None:
    """Start the exporter (before any work, so a taken port is an exit 2 at once)."""
    if metrics_port is None:
        return
    import socket

    from sglang_doctor.export import metrics

    exporter = metrics.Metrics(node or socket.gethostname())
    try:
        metrics.serve(exporter, metrics_host, metrics_port)
    except metrics.MetricsError as exc:
        raise InputError(str(exc)) from None
    reporter.listeners.append(exporter.observe)
