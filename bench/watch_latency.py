"""How fast ``sglang-doctor watch`` reacts, and what it costs while nothing happens.

Latency: a writer appends a rank's traceback to a followed log, then (50 ms later, well
inside ``--flush-after``) the parent's ``Received sigquit ...`` line, which completes the
incident.  The clock runs from the ``flush()`` of that line to the arrival of the incident's
JSON line on watch's standard output (read by a thread that stamps each line as it comes).
``--trials`` times (default 50); median and 99th percentile are printed.

Idle: watch follows a log nobody writes to; its CPU time (utime + stime from
/proc/<pid>/stat) over ``--idle-seconds`` (default 60) divided by that wall time.

``python bench/watch_latency.py [--trials 50] [--idle-seconds 60] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import doctor_command  # noqa: E402

TRACEBACK = """[{ts} TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 3170, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/layers/logits_processor.py", line 600, in forward
    logits = torch.matmul(hidden_states, lm_head.weight.T)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 0 has a total capacity of 47.53 GiB of which 1.02 GiB is free.
"""
DECODE = ("[{ts} TP0] Decode batch, #running-req: 12, #token: 20480, token usage: 0.31, cuda graph: True, "
          "gen throughput (token/s): 812.33, #queue-req: 0\n")
SIGQUIT = "[{ts}] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"


class Watch:
    """A running ``watch --format json`` whose output lines arrive, time-stamped, in a queue."""

    def __init__(self, log: Path, extra: list[str] = ()):
        self.proc = subprocess.Popen(doctor_command() + ["watch", "--format", "json", *extra, str(log)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for raw in self.proc.stdout:
            self.lines.put((time.perf_counter(), json.loads(raw)))

    def wait_for(self, kind: str, timeout: float) -> float:
        """Arrival time of the next event of this kind."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no {kind} event within {timeout} s")
            stamp, ev = self.lines.get(timeout=left)
            if ev.get("event") == kind:
                return stamp

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def context_switches(self) -> int:
        """Voluntary + involuntary context switches of all the process's threads."""
        total = 0
        for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
            for line in Path(f"/proc/{self.proc.pid}/task/{tid}/status").read_text().splitlines():
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
        return total

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def latency(trials: int, workdir: Path, extra: list[str] = ()) -> list[float]:
    log = workdir / "server.log"
    log.write_text("")
    watch = Watch(log, extra)
    out: list[float] = []
    try:
        with open(log, "a", encoding="utf-8") as fh:
            for i in range(trials + 1):  # the first, uncounted, waits out watch's start-up
                for _ in range(20):
                    fh.write(DECODE.format(ts=stamp()))
                fh.write(TRACEBACK.format(ts=stamp()))
                fh.flush()
                time.sleep(0.05)
                fh.write(SIGQUIT.format(ts=stamp()))
                fh.flush()
                t0 = time.perf_counter()
                arrived = watch.wait_for("incident", 60.0 if i == 0 else 10.0)
                if i:
                    out.append(arrived - t0)
                time.sleep(0.1)
    finally:
        watch.stop()
    return out


def idle_cpu(seconds: float, workdir: Path, extra: list[str] = (), wakeups: list | None = None) -> float:
    """CPU share of an idle watch; ``wakeups`` (when given) gets its context switches."""
    log = workdir / "idle.log"
    log.write_text(DECODE.format(ts=stamp()) + TRACEBACK.format(ts=stamp()) + SIGQUIT.format(ts=stamp()))
    watch = Watch(log, extra)
    try:
        watch.wait_for("incident", 60.0)  # start-up is over once the file's incident is out
        time.sleep(2.0)
        c0, t0, s0 = watch.cpu_seconds(), time.perf_counter(), watch.context_switches()
        time.sleep(seconds)
        c1, t1, s1 = watch.cpu_seconds(), time.perf_counter(), watch.context_switches()
    finally:
        watch.stop()
    if wakeups is not None:
        wakeups.append(s1 - s0)
    return (c1 - c0) / (t1 - t0)


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sgld-watch-") as tmp:
        lat = latency(args.trials, Path(tmp))
        print(f"watch latency over {len(lat)} trials: median {1000 * statistics.median(lat):.1f} ms, "
              f"p99 {1000 * percentile(lat, 99):.1f} ms, max {1000 * max(lat):.1f} ms", flush=True)
        idle = idle_cpu(args.idle_seconds, Path(tmp)) if args.idle_seconds > 0 else None
        if idle is not None:
            print(f"idle watch over {args.idle_seconds:.0f} s: {100 * idle:.2f}% of one core")
    if args.json:
        args.json.write_text(json.dumps({"latency_ms": [round(1000 * x, 2) for x in lat],
                                         "median_ms": 1000 * statistics.median(lat),
                                         "p99_ms": 1000 * percentile(lat, 99),
                                         "idle_core_fraction": idle}, indent=1) + "\n")


if __name__ == "__main__":
    main()
