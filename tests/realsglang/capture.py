"""Re-create fixtures/real/: genuine SGLang 0.5.23 logs from real launches on this machine.

Why: the parser and the rules must be tested against what SGLang really prints, not against
hand-written approximations.  Each scenario below is one real launch (tiny made-up models,
dummy weights, CPU) that ends the way an operator's launch ends: ready and stopped with
SIGTERM, or one of the failures sglang-notes §6 lists.  The log is kept byte for byte as
SGLang wrote it (stdout and stderr together, as with ``> log 2>&1``); the only change is the
scratch directory holding the models, replaced by ``/opt/models``.

A capture fails loudly when a scenario's log lacks the line it exists to show (``expect``):
a fixture that silently recorded some other failure would teach the tests the wrong thing.

Usage (scripts/capture-real-fixtures wraps this)::

    python -m tests.realsglang.capture [--out fixtures/real] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import harness
from .make_tiny_model import write_model

PLACEHOLDER = "/opt/models"
# Not ".log" for now: `sglang-doctor rules test` requires every fixtures/**/*.log that a rule
# claims to be listed among that rule's examples, and these are not listed yet.  Renaming
# them to .log is the rule pack's step when it adopts them as examples.
SUFFIX = ".log"

# Model directories, by name: keyword arguments of make_tiny_model.write_model.
MODELS: dict[str, dict] = {
    "tiny": {"kind": "llama"},
    # ~1.0 GB of bf16 dummy weights.  --mem-fraction-static 0.01 leaves a KV budget of
    # 1% of the host's ~21 GB "avail mem" (~0.2 GB) minus the weights: negative, with a
    # margin (~0.8 GB) wider than the swings of host free memory while other work runs
    # (a 0.39 GB model was not enough: avail mem moved by more than the margin).
    "big": {"kind": "llama", "hidden": 2048, "intermediate": 8192, "layers": 6, "vocab": 32000},
    "hybrid": {"kind": "hybrid", "layers": 4},
}


@dataclass(frozen=True)
class Scenario:
    name: str  # the fixture is fixtures/real/<name>.log
    what: str  # one line for the README
    expect: str  # a fragment the real log must contain
    model: str = "tiny"
    extra_args: tuple[str, ...] = harness.DEFAULT_FLAGS
    device: str | None = "cpu"
    env: dict[str, str] = field(default_factory=dict)
    # "exit": wait for the process to end by itself; "serve": wait until ready, query it,
    # stop it with SIGTERM; "hang": wait for `expect`, watch it not exit for `linger` s, stop.
    mode: str = "exit"
    occupy_port: bool = False
    linger: float = 20.0
    timeout: float = 900.0  # a loaded 2-core machine took 5 min to reach "Load weight"
    # how a "serve" scenario is stopped: the signal, to the main PID or to the whole group
    stop_signal: int = signal.SIGTERM
    stop_group: bool = False


SCENARIOS: list[Scenario] = [
    Scenario(
        name="healthy_sigterm_0523",
        what="healthy start, /health + /generate + /v1/models, then SIGTERM to the main PID",
        expect=harness.READY_LINE,
        mode="serve",
    ),
    Scenario(
        name="healthy_ctrl_c_0523",
        what="healthy start, /health + /generate + /v1/models, then a terminal's Ctrl-C: SIGINT to the process group",
        expect=harness.READY_LINE,
        mode="serve",
        stop_signal=signal.SIGINT,
        stop_group=True,
    ),
    Scenario(
        name="mem_fraction_too_small_0523",
        what="--mem-fraction-static 0.01 with ~1 GB of dummy weights: no KV budget",
        expect="Loaded weights leave no GPU memory for the KV cache",
        model="big",
        extra_args=("--mem-fraction-static", "0.01") + harness.DEFAULT_FLAGS,
    ),
    Scenario(
        name="max_total_tokens_zero_0523",
        what="--max-total-tokens 0: a KV pool of 0 tokens (the pool-size check)",
        expect="Not enough memory. Please try to increase --mem-fraction-static",
        extra_args=("--max-total-tokens", "0"),
    ),
    Scenario(
        name="port_in_use_0523",
        what="the port is already bound by another listener; SGLang hangs after the bind error",
        expect="address already in use",
        mode="hang",
        occupy_port=True,
    ),
    Scenario(
        name="context_length_too_long_0523",
        what="--context-length 100000 on a model whose config says 2048",
        expect="User-specified context_length (100000) is greater than the derived",
        extra_args=("--context-length", "100000") + harness.DEFAULT_FLAGS,
    ),
    Scenario(
        name="unrecognized_argument_0523",
        what="--enable-piecewise-cuda-graph, a 0.5.9 flag removed in 0.5.23",
        expect="unrecognized arguments: --enable-piecewise-cuda-graph",
        extra_args=("--enable-piecewise-cuda-graph",) + harness.DEFAULT_FLAGS,
    ),
    Scenario(
        name="ambiguous_argument_0523",
        what="--cuda-graph-max-bs 16, a 0.5.9 flag that is now a prefix of two flags",
        expect="ambiguous option: --cuda-graph-max-bs could match",
        extra_args=("--cuda-graph-max-bs", "16") + harness.DEFAULT_FLAGS,
    ),
    Scenario(
        name="no_accelerator_0523",
        what="no --device on a machine without a GPU",
        expect="No accelerator (CUDA, XPU, HPU, NPU, MUSA, MPS) or platform plugin is available",
        device=None,
    ),
    Scenario(
        name="tp2_no_omp_threads_bind_0523",
        what="--tp 2 on CPU without SGLANG_CPU_OMP_THREADS_BIND",
        expect="SGLANG_CPU_OMP_THREADS_BIND is not set",
        extra_args=("--tp", "2") + harness.DEFAULT_FLAGS,
    ),
    Scenario(
        name="hybrid_extra_buffer_unsupported_0523",
        what="a tiny Gated-DeltaNet hybrid with default flags (mamba extra_buffer strategy)",
        expect="extra_buffer requires platform support for Mamba cache state snapshots",
        model="hybrid",
    ),
    Scenario(
        name="hybrid_no_buffer_overlap_0523",
        what="the hybrid with --mamba-radix-cache-strategy no_buffer (overlap schedule on)",
        expect="no_buffer do not support overlap schedule",
        model="hybrid",
        extra_args=("--mamba-radix-cache-strategy", "no_buffer") + harness.DEFAULT_FLAGS,
    ),
]


def sanitize(text: str, scratch: Path) -> str:
    """Replace the scratch prefix (and its resolved form) with the placeholder, nothing else."""
    for prefix in {str(scratch.resolve()), str(scratch)}:
        text = text.replace(prefix, PLACEHOLDER)
    return text


def display_command(scenario: Scenario, launch: harness.Launch, scratch: Path) -> str:
    """The launch as a copy-pasteable shell line, with the stubs and env it ran with."""
    env = [f"PYTHONPATH=tests/realsglang/stubs"] + [f"{k}={v}" for k, v in scenario.env.items()]
    argv = ["python"] + launch.argv[1:]
    return sanitize(" ".join(env + [shlex.join(argv)]), scratch)


def run_scenario(scenario: Scenario, scratch: Path, python: Path) -> dict:
    """Launch one scenario, wait for its end condition, stop it; return what happened."""
    model_dir = scratch / scenario.model
    if not (model_dir / "config.json").exists():
        write_model(model_dir, **MODELS[scenario.model])
    holder = None
    port = harness.free_port()
    if scenario.occupy_port:
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        holder.bind(("127.0.0.1", port))
        holder.listen(1)
    launch = harness.build_launch(
        model_dir,
        port=port,
        python=python,
        device=scenario.device,
        extra_args=scenario.extra_args,
        env=scenario.env,
    )
    log_path = scratch / "logs" / f"{scenario.name}.log"
    started = time.monotonic()
    proc = harness.start(launch, log_path, cwd=scratch)
    outcome: dict = {"name": scenario.name}
    try:
        if scenario.mode == "serve":
            outcome["seconds_to_ready"] = round(harness.wait_ready(proc, launch, log_path), 1)
            outcome["health"] = harness.http_status(launch.base_url + "/health")
            outcome["generate"] = harness.post_json(
                launch.base_url + "/generate",
                {"text": "hello world", "sampling_params": {"max_new_tokens": 4}},
            )[0]
            outcome["v1_models"] = harness.http_status(launch.base_url + "/v1/models")
        elif scenario.mode == "hang":
            seen = harness.wait_for_line(proc, log_path, scenario.expect, scenario.timeout)
            if seen:
                time.sleep(scenario.linger)
                outcome["still_running_after_s"] = (
                    scenario.linger if proc.poll() is None else None
                )
        else:
            try:
                proc.wait(timeout=scenario.timeout)
            except Exception:  # noqa: BLE001 - timeout: stopped below, recorded as such
                outcome["timed_out"] = True
    finally:
        stop = harness.stop(proc, grace=30.0, signum=scenario.stop_signal, to_group=scenario.stop_group)
        if holder is not None:
            holder.close()
    outcome.update(
        returncode=stop.returncode,
        killed_group=stop.killed_group,
        seconds=round(time.monotonic() - started, 1),
        command=display_command(scenario, launch, scratch),
        what=scenario.what,
        expect=scenario.expect,
    )
    text = log_path.read_text(errors="replace")
    if scenario.expect not in text:
        raise RuntimeError(
            f"{scenario.name}: the log lacks {scenario.expect!r}; tail:\n"
            + harness.log_tail(log_path, 40)
        )
    outcome["log"] = log_path
    return outcome


def write_readme(out: Path, outcomes: list[dict]) -> None:
    lines = [
        "# Real SGLang 0.5.23 logs",
        "",
        "Captured by `scripts/capture-real-fixtures` (tests/realsglang/capture.py) from real",
        "launches of SGLang 0.5.23 on a CPU-only machine: made-up tiny models",
        "(tests/realsglang/make_tiny_model.py), `--load-format dummy`, the stubs of",
        "tests/realsglang/stubs/ on PYTHONPATH.  Each log is verbatim (stdout and stderr",
        f"together); only the scratch directory of the models was replaced by `{PLACEHOLDER}`.",
        "`manifest.json` has the same facts in machine-readable form.",
        "Each is an example of the rule that diagnoses it (`sglang-doctor rules test`).",
        "",
    ]
    for o in outcomes:
        lines += [
            f"## {o['name']}{SUFFIX}",
            "",
            o["what"] + ".",
            "",
            "```",
            o["command"],
            "```",
            "",
            f"- shows: `{o['expect']}`",
            f"- exit code {o['returncode']}"
            + (" after SIGKILL to the group" if o.get("killed_group") else "")
            + f", {o['seconds']} s"
            + (f", ready after {o['seconds_to_ready']} s" if "seconds_to_ready" in o else "")
            + (
                f", still running {o['still_running_after_s']} s after that line"
                if o.get("still_running_after_s")
                else ""
            ),
            "",
        ]
    (out / "README.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Capture real SGLang logs as fixtures.")
    parser.add_argument("--out", type=Path, default=harness.REPO / "fixtures" / "real")
    parser.add_argument("--only", nargs="*", default=None, help="scenario names")
    parser.add_argument("--keep-scratch", action="store_true")
    args = parser.parse_args(argv)
    python = harness.sglang_python()
    if python is None:
        print(
            f"SGLang {harness.SGLANG_VERSION} not found in {harness.venv_dir()}; "
            "run scripts/install-real-sglang first",
            file=sys.stderr,
        )
        return 2
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.exists() else []
    by_name = {o["name"]: o for o in previous}
    failures = 0
    with tempfile.TemporaryDirectory(prefix="realsg-capture-") as tmp:
        scratch = Path(tmp)
        for scenario in chosen:
            print(f"== {scenario.name}: {scenario.what}", flush=True)
            try:
                outcome = run_scenario(scenario, scratch, python)
            except Exception as err:  # noqa: BLE001 - report every scenario, fail at the end
                failures += 1
                print(f"   FAILED: {err}", file=sys.stderr, flush=True)
                continue
            log_text = outcome.pop("log").read_text(errors="replace")
            (args.out / f"{scenario.name}{SUFFIX}").write_text(sanitize(log_text, scratch))
            by_name[scenario.name] = outcome
            print(f"   rc={outcome['returncode']} in {outcome['seconds']} s", flush=True)
    order = [s.name for s in SCENARIOS]
    outcomes = sorted(by_name.values(), key=lambda o: order.index(o["name"]) if o["name"] in order else 99)
    manifest_path.write_text(json.dumps(outcomes, indent=1) + "\n")
    write_readme(args.out, outcomes)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
