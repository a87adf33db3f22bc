"""What ``--metrics-port`` costs ``watch``: latency and idle, with and without, same run.

Runs bench/watch_latency.py's two measures twice, alternating configurations to share the
machine's noise: plain ``watch`` and ``watch --metrics-port P`` (nobody scrapes during the
idle measure; during the latency trials a scraper thread reads /metrics every second, as
Prometheus would).  Prints medians, p99, idle CPU share and context switches per minute,
and the ratios metrics/plain.

``python bench/metrics_overhead.py [--trials 50] [--idle-seconds 60] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from watch_latency import idle_cpu, latency, percentile  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scraper(port: int, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
        except OSError:
            pass


def measure(trials: int, idle_seconds: float, metrics: bool, workdir: Path) -> dict:
    extra: list[str] = []
    stop = threading.Event()
    if metrics:
        port = free_port()
        extra = ["--metrics-port", str(port)]
        threading.Thread(target=scraper, args=(port, stop), daemon=True).start()
    try:
        lat = latency(trials, workdir, extra)
    finally:
        stop.set()
    wakeups: list[int] = []
    idle = idle_cpu(idle_seconds, workdir, ["--metrics-port", str(free_port())] if metrics else [], wakeups)
    return {"median_ms": 1000 * statistics.median(lat), "p99_ms": 1000 * percentile(lat, 99),
            "idle_core_fraction": idle, "idle_switches_per_min": wakeups[0] * 60.0 / idle_seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="sgld-metrics-") as tmp:
        for name, metrics in (("plain", False), ("metrics", True)):
            results[name] = measure(args.trials, args.idle_seconds, metrics, Path(tmp))
            r = results[name]
            print(f"{name:8s} latency median {r['median_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms; idle "
                  f"{100 * r['idle_core_fraction']:.3f}% of a core, {r['idle_switches_per_min']:.1f} "
                  "context switches/min", flush=True)
    p, m = results["plain"], results["metrics"]
    print(f"metrics/plain: latency median {m['median_ms'] / p['median_ms']:.2f}x, p99 "
          f"{m['p99_ms'] / p['p99_ms']:.2f}x; idle switches {m['idle_switches_per_min'] - p['idle_switches_per_min']:+.1f}/min")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
