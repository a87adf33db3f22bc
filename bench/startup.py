"""Start-up cost: ``sglang-doctor explain`` on a 20-line log against ``python3 -c pass``.

Both are run ``--runs`` times (default 15), interleaved so they share the machine's noise;
the medians and their ratio are printed (the target: at most 10x).  ``--profile`` adds
where the doctor's own start-up goes: importing the CLI, and loading the rule pack.

``python bench/startup.py [--runs 15] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from run import doctor_command  # noqa: E402

SEED_TAIL = ROOT / "fixtures" / "seed" / "seed_full.log"

PROFILE = r"""
import time
t0 = time.perf_counter()
import sglang_doctor.cli.app as cli
t1 = time.perf_counter()
rules = cli.load_ruleset(())
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, len(rules.rules) if rules is not None else 0)
"""


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sgld-startup-") as tmp:
        log = Path(tmp) / "twenty.log"
        lines = SEED_TAIL.read_text(encoding="utf-8").splitlines(keepends=True)
        log.write_text("".join(lines[-20:]), encoding="utf-8")  # the failure and what led to it
        doctor = doctor_command() + ["explain", "--format", "json", str(log)]
        base = ["python3", "-c", "pass"]
        wall(doctor)  # warm the file cache and .pyc files
        doc_t, base_t = [], []
        for _ in range(args.runs):
            base_t.append(wall(base))
            doc_t.append(wall(doctor))
    d, b = statistics.median(doc_t), statistics.median(base_t)
    print(f"explain on 20 lines: median {1000 * d:.0f} ms; python3 -c pass: median {1000 * b:.0f} ms; "
          f"ratio {d / b:.1f}x (over {args.runs} interleaved runs)")
    prof = subprocess.run([sys.executable, "-c", PROFILE], capture_output=True, text=True, cwd=ROOT)
    parts = None
    if prof.returncode == 0:
        imp, rules, count = (float(x) for x in prof.stdout.split())
        parts = {"import_cli_s": imp, "load_rules_s": rules, "rules": int(count)}
        print(f"of which: import of the CLI {1000 * imp:.0f} ms, loading {int(count)} rules {1000 * rules:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps({"explain_ms": 1000 * d, "python_pass_ms": 1000 * b, "ratio": d / b,
                                         "explain_runs_ms": [round(1000 * x, 1) for x in doc_t],
                                         "python_runs_ms": [round(1000 * x, 1) for x in base_t],
                                         "parts": parts}, indent=1) + "\n")


if __name__ == "__main__":
    main()
