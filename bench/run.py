"""The benchmark, in one command: ``python bench/run.py [--sizes 100M,1G] [--with-4g]``.

For each size it generates a seeded log into ./bench-data (once; gitignored), warms the
page cache, then runs side by side, interleaved, ``--runs`` times each:

- the floor: ``grep -c -F -e Traceback -e 'Not enough memory' -e NCCL`` (its output goes to a
  pipe: GNU grep stops at the first match when it writes to /dev/null);
- ``sglang-doctor explain --format json`` on the same file, whose output is then held to the
  generator's manifest (every planted incident found, whole) by bench/check.py;

and, once, Drain3's template mining over the first 1M lines (lines per second; Drain3 is run
in the Python given by ``--drain3-python``, default /tmp/bench-venv/bin/python, created with
``pip install drain3`` when missing).  Medians of wall time, CPU time (user+sys) and peak RSS
(``resource.getrusage(RUSAGE_CHILDREN)`` is cumulative, so each run is measured by
``/usr/bin/time -f``) are printed with the ratios the targets are stated in.

With ``--json FILE`` the numbers are also written as JSON for docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import check  # noqa: E402
import generate  # noqa: E402

DATA = ROOT / "bench-data"
GREP = ["grep", "-c", "-F", "-e", "Traceback", "-e", "Not enough memory", "-e", "NCCL"]
DRAIN_LINES = 1_000_000
DRAIN_SCRIPT = r"""
import sys, time
from drain3 import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig
cfg = TemplateMinerConfig()
cfg.profiling_enabled = False
miner = TemplateMiner(config=cfg)
lines = []
with open(sys.argv[1], "rb") as fh:
    for raw in fh:
        lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
        if len(lines) == int(sys.argv[2]):
            break
n = len(lines)
t = time.perf_counter()
for line in lines:
    miner.add_log_message(line)
dt = time.perf_counter() - t
print(n / dt, len(miner.drain.clusters), n)
"""


def doctor_command() -> list[str]:
    exe = shutil.which("sglang-doctor", path=str(Path(sys.executable).parent)) or shutil.which("sglang-doctor")
    return [exe] if exe else [sys.executable, "-m", "sglang_doctor"]


def before_command(src: Path) -> tuple[list[str], dict]:
    """explain from ``src``, a checkout of earlier code (``git worktree add DIR COMMIT`` or
    ``git archive COMMIT | tar -x -C DIR``), run by this venv's Python from outside any
    checkout, so that PYTHONPATH decides which code runs."""
    env = dict(os.environ, PYTHONPATH=str(src.resolve()))
    return [sys.executable, "-m", "sglang_doctor"], env


def timed(cmd: list[str], stdout, env: dict | None = None) -> dict:
    """Wall, CPU and peak RSS of one run of cmd (via /usr/bin/time)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%U %S %M", *cmd], stdout=stdout,
                              stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir() if env else None)
        wall = time.perf_counter() - t
        user, sys_, rss = tf.read().split()[-3:]
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return {"wall": wall, "cpu": float(user) + float(sys_), "rss_mb": int(rss) / 1024}


def ensure_log(size_name: str, seed: int, variety: str = "v2") -> Path:
    DATA.mkdir(exist_ok=True)
    path = DATA / (f"log-{size_name.lower()}.log" if variety == "v1" else f"log-{variety}-{size_name.lower()}.log")
    manifest = Path(str(path) + ".manifest.json")
    size = generate.parse_size(size_name)
    m = json.loads(manifest.read_text()) if path.exists() and manifest.exists() else {}
    if not (m.get("size") == size and m.get("seed") == seed and m.get("variety", "v1") == variety):
        print(f"generating {path} ({size_name}, generator {variety}) ...", flush=True)
        generate.generate(path, size, seed=seed, incidents=20, variety=variety)
    return path


def compile_bytecode(trees: list[Path]) -> None:
    """Write the .pyc files of each tree, as ``pip install`` does: with
    PYTHONDONTWRITEBYTECODE set (this sandbox) or a fresh checkout, each run would otherwise
    compile every module again, and a stale cache on one side only would skew the ratio."""
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=False, stdout=subprocess.DEVNULL)


def doctor_package() -> Path:
    import sglang_doctor

    return Path(sglang_doctor.__file__).resolve().parent


def warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(16 << 20):
            pass


def spread(res: dict, who: str) -> str:
    """The range of one side's runs: 'wall lo-hi s / cpu lo-hi s'."""
    w, c = res[f"{who}_walls"], res[f"{who}_cpus"]
    return f"{min(w):.2f}-{max(w):.2f} s / {min(c):.2f}-{max(c):.2f} s"


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def bench_size(path: Path, runs: int, doctor: list[str], before: Path | None = None) -> dict:
    warm(path)
    load_at_start = os.getloadavg()[0]
    manifest = check.load_manifest(path)
    grep_runs, doc_runs, before_runs, problems = [], [], [], []
    out_path = DATA / (path.name + ".explain.jsonl")
    path = path.resolve()
    for i in range(runs):  # interleaved, so all see the same noise
        if before is not None:
            cmd, env = before_command(before)
            with open(os.devnull, "wb") as out:
                before_runs.append(timed(cmd + ["explain", "--format", "json", str(path)], out, env))
        grep_runs.append(timed(GREP + [str(path)], subprocess.PIPE))
        with open(out_path, "wb") as out:
            doc_runs.append(timed(doctor + ["explain", "--format", "json", str(path)], out))
        if i == 0:
            problems = check.check(manifest, out_path.read_text(encoding="utf-8").splitlines())
    res = {
        "file": path.name, "bytes": manifest["bytes"], "lines": manifest["lines"],
        "incidents_planted": len(manifest["incidents"]), "problems": problems,
        "grep_wall": median(grep_runs, "wall"), "grep_cpu": median(grep_runs, "cpu"),
        "explain_wall": median(doc_runs, "wall"), "explain_cpu": median(doc_runs, "cpu"),
        "explain_rss_mb": max(r["rss_mb"] for r in doc_runs),
        "explain_walls": [round(r["wall"], 3) for r in doc_runs], "grep_walls": [round(r["wall"], 3) for r in grep_runs],
        "explain_cpus": [round(r["cpu"], 3) for r in doc_runs], "grep_cpus": [round(r["cpu"], 3) for r in grep_runs],
    }
    res["ratio_wall"] = res["explain_wall"] / res["grep_wall"]
    res["ratio_cpu"] = res["explain_cpu"] / res["grep_cpu"]
    res["explain_lines_per_s"] = manifest["lines"] / res["explain_wall"]
    if before_runs:
        res["before_wall"], res["before_cpu"] = median(before_runs, "wall"), median(before_runs, "cpu")
        res["before_rss_mb"] = max(r["rss_mb"] for r in before_runs)
        res["before_walls"] = [round(r["wall"], 3) for r in before_runs]
        res["before_cpus"] = [round(r["cpu"], 3) for r in before_runs]
        res["before_ratio_wall"] = res["before_wall"] / res["grep_wall"]
        res["before_ratio_cpu"] = res["before_cpu"] / res["grep_cpu"]
    res["load_average"] = os.getloadavg()[0]
    res["load_at_start"] = load_at_start
    return res


def drain3_rate(path: Path, python: str) -> dict | None:
    if not Path(python).exists():
        venv = Path(python).parent.parent
        print(f"creating {venv} with drain3 ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "drain3"], check=True)
    proc = subprocess.run([python, "-c", DRAIN_SCRIPT, str(path), str(DRAIN_LINES)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"drain3 failed: {proc.stderr[-500:]}")
        return None
    rate, clusters, lines = proc.stdout.split()
    return {"lines_per_s": float(rate), "clusters": int(clusters), "lines": int(lines)}


def literal_scaling(path: Path, limit: int = 256 << 20) -> list[dict]:
    """Block-search cost per byte with 10, all, and all+200 literals, for each engine installed.

    A boring log has no hits, so this is the per-line cost of boring lines; the literals past
    the real ones are made-up rule literals that never occur."""
    from sglang_doctor.incidents import assemble as incidents
    from sglang_doctor.read import scanner

    real = list(incidents.TRIGGER_LITERALS)
    sets = {"10": real[:10], f"{len(real)} (engine)": real,
            f"{len(real) + 200} (+200 rule literals)": real + [f"zq made-up rule literal {i}" for i in range(200)]}
    blocks = []
    with open(path, "rb") as fh:
        while sum(map(len, blocks)) < limit and (block := fh.read(8 << 20)):
            blocks.append(block)
    size = sum(map(len, blocks))
    out = []
    for engine in scanner.ENGINES:
        for label, lits in sets.items():
            try:
                finder = scanner.make_finder(scanner.line_literals(lits), engine)
            except ImportError:
                break
            t = time.process_time()
            for block in blocks:
                finder.starts(block, 0, len(block))
            dt = time.process_time() - t
            out.append({"engine": engine, "literals": label, "ns_per_byte": 1e9 * dt / size})
            print(f"  {engine:13s} {label:26s} {1e9 * dt / size:6.2f} ns/byte", flush=True)
    return out


def block_search_engine():
    """The finder explain's scanner builds for its big blocks (the shipped rule pack's
    literals too: how many covers there are decides between the engines)."""
    from sglang_doctor.cli.app import load_ruleset
    from sglang_doctor.pipeline import StreamPipeline

    return StreamPipeline(load_ruleset(())).scanner._worker_finder()


def main() -> None:
    ap = argparse.ArgumentParser(description="sglang-doctor explain vs grep and Drain3 on generated logs")
    ap.add_argument("--sizes", default="100M,1G")
    ap.add_argument("--with-4g", action="store_true", help="add a 4 GiB file (about 9 minutes to generate)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variety", choices=generate.VARIETIES, default="v2",
                    help="the generator: v1 (the first one) or v2 (issue 13: requests, warnings with trigger "
                         "words, NCCL INFO, tqdm bars)")
    ap.add_argument("--drain3-python", default="/tmp/bench-venv/bin/python")
    ap.add_argument("--no-drain3", action="store_true")
    ap.add_argument("--literals", action="store_true", help="also time the block search with 10 / all / +200 literals")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--before", type=Path, help="also time explain from this checkout of earlier code, in the "
                                                  "same interleaved runs (see before_command)")
    args = ap.parse_args()
    sizes = [s for s in args.sizes.split(",") if s] + (["4G"] if args.with_4g else [])
    doctor = doctor_command()
    compile_bytecode([doctor_package()] + ([args.before / "sglang_doctor"] if args.before else []))
    finder = block_search_engine()
    print(f"doctor: {' '.join(doctor)}  (block search: {finder.name}; generator {args.variety})")
    print(f"machine: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    results = {"sizes": [], "engine": finder.name, "variety": args.variety}
    for size in sizes:
        path = ensure_log(size, args.seed, args.variety)
        r = bench_size(path, args.runs, doctor, args.before)
        r["variety"] = args.variety
        results["sizes"].append(r)
        verdict = "all planted incidents found whole" if not r["problems"] else "; ".join(r["problems"][:5])
        print(f"{size:>5}: grep {r['grep_wall']:.2f}s (cpu {r['grep_cpu']:.2f})  explain {r['explain_wall']:.2f}s "
              f"(cpu {r['explain_cpu']:.2f}, {r['explain_rss_mb']:.0f} MB)  ratio wall {r['ratio_wall']:.2f}x "
              f"cpu {r['ratio_cpu']:.2f}x  {r['explain_lines_per_s'] / 1e6:.1f}M lines/s  -- {verdict}", flush=True)
        if "before_wall" in r:
            print(f"{'':>5}  before ({args.before}): explain {r['before_wall']:.2f}s (cpu {r['before_cpu']:.2f}, "
                  f"{r['before_rss_mb']:.0f} MB)  ratio wall {r['before_ratio_wall']:.2f}x cpu "
                  f"{r['before_ratio_cpu']:.2f}x  (load at the end {r['load_average']:.2f})", flush=True)
        print(f"{'':>5}  spread of the {args.runs} runs, wall / cpu: grep {spread(r, 'grep')}; explain "
              f"{spread(r, 'explain')}" + (f"; before {spread(r, 'before')}" if "before_walls" in r else "")
              + f"  (load {r['load_at_start']:.2f} at the start, {r['load_average']:.2f} at the end)", flush=True)
    if not args.no_drain3:
        d = drain3_rate(ensure_log(sizes[-1], args.seed, args.variety), args.drain3_python)
        if d:
            results["drain3"] = d
            best = max(r["explain_lines_per_s"] for r in results["sizes"])
            worst = min(r["explain_lines_per_s"] for r in results["sizes"])
            print(f"drain3: {d['lines_per_s']:.0f} lines/s ({d['clusters']} templates); explain is "
                  f"{worst / d['lines_per_s']:.0f}x-{best / d['lines_per_s']:.0f}x faster")
    rss = [r["explain_rss_mb"] for r in results["sizes"]]
    print(f"peak RSS: {', '.join(f'{x:.0f} MB' for x in rss)} (spread {100 * (max(rss) / min(rss) - 1):.0f}%)")
    if len(results["sizes"]) > 1:
        a, b = results["sizes"][0], results["sizes"][-1]
        print(f"scaling {a['file']} -> {b['file']}: bytes x{b['bytes'] / a['bytes']:.1f}, "
              f"explain wall x{b['explain_wall'] / a['explain_wall']:.1f}, cpu x{b['explain_cpu'] / a['explain_cpu']:.1f}")
    if args.literals:
        print(f"block search cost vs literal count (first 256 MiB of {sizes[-1]}):")
        results["literal_scaling"] = literal_scaling(ensure_log(sizes[-1], args.seed, args.variety))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    if any(r["problems"] for r in results["sizes"]):
        sys.exit(1)


if __name__ == "__main__":
    main()
