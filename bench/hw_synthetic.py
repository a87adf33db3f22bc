"""A synthetic check, from SGLang's source, of what the machine's facts add to the best guess.

Not real data: the fragments are rendered here.  For each of SGLang 0.5.23's own failure sites
whose message is a capability / platform refusal and whose shipped disposition names
kernel.unsupported_hw (data/inventory/sglang-0.5.23.json: the site's rule or class rule), a
fragment is rendered as a paste that lost the traceback's last line: a scheduler frame, then the
site's own frame (its file, line and function), and no exception line.  Each fragment is read
with no machine lines (the baseline), then with lines that name a machine SGLang's kernels often
leave out (a T4 in nvidia-smi's table; SGLang's own "Compute capability below sm80" start-up line; an
RTX 5090 in ``python -m sglang.check_env``'s output),
then with a machine they cover (an H100, check_env): the control, whose guess must not move.
Prints, per variant, how often the honest fallback's best guess names the site's category.

With ``--tuned``, the census of the real side instead: over the tuned parts' no-cause fragments
(scripts/guess_prior.py ``TUNED_PARTS``; never a held-back part), how many name the machine at
all (any fact of diagnose/hardware.py in the lines the pipeline kept, the incident's lines, the
launch's dump and milestones), and how many best guesses rest on a ``hardware:*`` piece.

``--target nccl`` does the same for the distributed sites (disposition nccl), with SGLang's own
line for GPUs without peer-to-peer access, and two GPUs on NVLink as the control.

``--fixes`` scores the fix as well (remedy/hardware.py: the remedies use the GPU the log names):
per variant, the first change proposed (the incident's remediation, or the fallback's guarded step),
and how many of those set an attention backend the variant's GPU cannot run by SGLang's own checks
(``hardware.refuses_backend`` on the machine the variant's lines name), each with the machine
remedies on and off (``for_diagnosis`` / ``refuses_change`` replaced by no-ops: the tool before
session 31).  ``--backend NAME`` adds a ``server_args`` line stating the attention backend in use
(the guarded switch then moves away from it).

Usage: ``python bench/hw_synthetic.py [--json] [--limit N] [--target kernel.unsupported_hw|nccl] [--tuned]
[--fixes [--backend NAME]]``; ``--tuned --fixes`` lists the tuned parts' files (every label) whose first change
or first alternative the machine remedies move.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from sglang_doctor.diagnose.rules_engine import RuleSet  # noqa: E402
from sglang_doctor.pipeline import StreamPipeline  # noqa: E402

INVENTORY = ROOT / "data" / "inventory" / "sglang-0.5.23.json"
TARGET = "kernel.unsupported_hw"
PREFIX = "/usr/local/lib/python3.12/dist-packages/sglang/"

# the machine lines, as the tools print them (hardware.py's docstring names each source)
MACHINES: dict[str, list[str]] = {
    "none": [],
    "T4 (nvidia-smi)": [
        "| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |",
        "|   0  Tesla T4                       Off | 00000000:00:1E.0 Off |                    0 |",
        "| N/A   34C    P8               9W /  70W |      5MiB / 15360MiB |      0%      Default |",
    ],
    "below SM80 (SGLang's own line)": [
        "[2025-05-01 10:00:03 TP0] Compute capability below sm80. Use float16 due to lack of bfloat16 support.",
    ],
    "RTX 5090 (check_env)": [
        "Python: 3.12.3 (main, Feb  4 2025, 14:48:35) [GCC 13.3.0]",
        "CUDA available: True",
        "GPU 0,1: NVIDIA GeForce RTX 5090",
        "GPU 0,1 Compute Capability: 12.0",
    ],
    "V100 (nvidia-smi)": [
        "|   0  Tesla V100-SXM2-32GB           On  | 00000000:00:1E.0 Off |                    0 |",
        "| N/A   33C    P0              42W / 300W |      0MiB / 32768MiB |      0%      Default |",
    ],
    "H100 (check_env, control)": [
        "Python: 3.12.3 (main, Feb  4 2025, 14:48:35) [GCC 13.3.0]",
        "CUDA available: True",
        "GPU 0,1: NVIDIA H100 80GB HBM3",
        "GPU 0,1 Compute Capability: 9.0",
    ],
}


# for ``--target nccl``: the distributed sites, with SGLang's own all-reduce line for GPUs without
# peer-to-peer access (custom_all_reduce_utils.py), and the control, two GPUs on NVLink (nvidia-smi topo -m)
NCCL_MACHINES: dict[str, list[str]] = {
    "none": [],
    "2x RTX 4090, no P2P (SGLang's line)": [
        "GPU 0,1: NVIDIA GeForce RTX 4090",
        "[2025-05-01 10:00:04 TP1] Custom allreduce is disabled because your platform lacks GPU P2P capability or "
        "P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
    ],
    "2x H100 on NVLink (control)": [
        "GPU 0,1: NVIDIA H100 80GB HBM3",
        "GPU0     X      NV18    0-55    0",
    ],
}


def sites(pack: RuleSet, target: str = TARGET) -> list[tuple[str, int, str, str]]:
    """(file, line, function, message) of the inventory's sites whose disposition is a rule of ``target``."""
    inventory = json.loads(INVENTORY.read_text())
    out = []
    for path, rows in inventory["files"].items():
        for line, function, _kind, _exc, message, disposition in rows:
            kind, _, rule_id = disposition.partition(":")
            rule = pack.get(rule_id) if kind in ("rule", "class") else None
            if rule is not None and rule.category == target:
                out.append((path, line, function.rsplit(".", 1)[-1], message or ""))
    return out


def render(path: str, line: int, function: str, machine: list[str], backend: str | None = None) -> str:
    dump = ([f"[2025-05-01 10:00:00] server_args=ServerArgs(model_path='/models/m', tp_size=1, "
             f"attention_backend='{backend}')"] if backend else [])
    frames = [
        "Traceback (most recent call last):",
        f'  File "{PREFIX}srt/managers/scheduler.py", line 3120, in run_scheduler_process',
        "    scheduler = Scheduler(",
        f'  File "{PREFIX}{path}", line {line}, in {function}',
    ]
    return "\n".join(machine + dump + frames) + "\n"


def guess(pack: RuleSet, text: str) -> str | None:
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    if not incidents:
        note = pipe.summary().get("fallback")
        return note["best_guess"]["category"] if note else None
    ev = max(incidents, key=lambda e: e["confidence"])
    fb = ev.get("fallback")
    return fb["best_guess"]["category"] if fb else ev["category"]


def first_change(pack: RuleSet, text: str) -> dict:
    """The first change the tool proposes for a text: the primary incident's remediation, or the
    fallback's guarded step when no incident formed ({} when none)."""
    pipe = StreamPipeline(pack)
    events = pipe.feed(text.encode()) + pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    if incidents:
        rem = max(incidents, key=lambda e: e["confidence"]).get("remediation") or {}
    else:
        rem = (pipe.summary().get("fallback") or {}).get("guarded") or {}
    return {"set": dict(rem.get("set") or {}), "unset": list(rem.get("unset") or []), "env": dict(rem.get("env") or {})}


def _shown(change: dict) -> str:
    parts = [f"{k} {v}" for k, v in change["set"].items()] + [f"-{k}" for k in change["unset"]]
    parts += [f"{k}={v}" for k, v in change["env"].items()]
    return ", ".join(parts) or "no change"


def fix_report(pack: RuleSet, found, machines: dict[str, list[str]], backend: str | None) -> dict:
    """Per machine variant: the first changes proposed and how many set a backend its GPU cannot
    run, with the machine remedies on (this tree) and off (before session 31)."""
    from sglang_doctor.remedy import hardware

    proposed: dict[tuple[str, str], list[dict]] = {}
    for mode in ("before", "after"):
        saved = (hardware.for_diagnosis, hardware.refuses_change, hardware.refuses_backend)
        if mode == "before":
            hardware.for_diagnosis = lambda diagnosis, base, warnings=None: base
            hardware.refuses_change = lambda profile, changes: False
            hardware.refuses_backend = lambda profile, backend: False
        try:
            for name, machine in machines.items():
                proposed[name, mode] = [first_change(pack, render(path, line, function, machine, backend))
                                        for path, line, function, _ in found]
        finally:
            hardware.for_diagnosis, hardware.refuses_change, hardware.refuses_backend = saved
    out: dict[str, dict] = {}
    for (name, mode), changes in proposed.items():
        gpu = hardware.with_machine(None, hardware.read_machine(machines[name]))
        row = out.setdefault(name, {"total": len(found)})
        row[mode] = {"refused_by_gpu": sum(hardware.refuses_change(gpu, c["set"]) for c in changes),
                     "changes": dict(Counter(_shown(c) for c in changes).most_common())}
    return out


def _tuned_answer(pack: RuleSet, path: Path) -> tuple:
    """The primary incident's changes and its first alternative's, as ``explain`` (--gpus a6000x2) gives them."""
    from sglang_doctor.pipeline import open_log
    from sglang_doctor.remedy import hardware

    pipe = StreamPipeline(pack, whole_log=True, hardware=hardware.get_profile(hardware.DEFAULT_PROFILE))
    events = []
    for block in open_log(path):
        events += pipe.feed(block)
    events += pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    rem = (max(incidents, key=lambda e: e["confidence"]).get("remediation") if incidents
           else (pipe.summary().get("fallback") or {}).get("guarded")) or {}
    return tuple(_shown({"set": r.get("set") or {}, "unset": r.get("unset") or [], "env": r.get("env") or {}})
                 for r in [rem, *(rem.get("alternatives") or [])[:1]])


def tuned_fix_changes() -> dict:
    """Over every labelled file of the tuned parts (scripts/guess_prior.py ``TUNED_PARTS``; never a
    held-back part): the files whose first change or first alternative moves when the machine
    remedies are turned off (the tool before session 31)."""
    import yaml
    from guess_prior import TUNED_PARTS

    from sglang_doctor.remedy import hardware

    pack = RuleSet.load(user=False)
    out = {"files": 0, "moved": []}
    for part in TUNED_PARTS:
        labels = yaml.safe_load((ROOT / "corpus" / part / "labels.yaml").read_text()) or []
        for lab in labels:
            path = ROOT / "corpus" / part / str(lab.get("file"))
            if not isinstance(lab, dict) or not path.is_file():
                continue
            out["files"] += 1
            after = _tuned_answer(pack, path)
            saved = (hardware.for_diagnosis, hardware.refuses_change, hardware.refuses_backend)
            hardware.for_diagnosis = lambda diagnosis, base, warnings=None: base
            hardware.refuses_change = lambda profile, changes: False
            hardware.refuses_backend = lambda profile, backend: False
            try:
                before = _tuned_answer(pack, path)
            finally:
                hardware.for_diagnosis, hardware.refuses_change, hardware.refuses_backend = saved
            if before != after:
                out["moved"].append({"file": f"{part}/{lab['file']}", "label": lab.get("category"),
                                     "fix_label": lab.get("fix_flags") or lab.get("fix_env"),
                                     "before": before, "after": after})
    return out


def tuned_census() -> dict:
    """Machine facts and hardware pieces on the tuned parts' no-cause fragments (see the docstring)."""
    from guess_prior import TUNED_PARTS, no_cause, run

    from sglang_doctor.diagnose import evidence
    from sglang_doctor.diagnose import fallback as fallback_mod

    out = {"fragments": 0, "with_facts": 0, "facts": Counter(), "hardware_pieces": Counter(), "files": []}
    for part in TUNED_PARTS:
        for lab in no_cause(part):
            pipe, diagnoses, primary = run(ROOT / "corpus" / part / lab["file"])
            out["fragments"] += 1
            names: set[str] = set()
            for d in diagnoses:
                names |= set(evidence.machine(d).facts)
            if not diagnoses:
                # a text with no incident: the facts fallback.no_incident reads (the kept lines, the last lines)
                launch = pipe.launches[-1] if pipe.launches else None
                tail = fallback_mod._last_lines(pipe._tail, 40)
                names |= set(evidence.launch_machine(launch, tail).facts)
            fb = (primary.fallback if primary is not None else pipe.summary().get("fallback")) or {}
            pieces = [ev["name"] for ev in (fb.get("best_guess") or {}).get("evidence", ())
                      if ev["name"].startswith("hardware:")]
            if names or pieces:
                out["with_facts"] += 1
                out["facts"].update(names)
                out["files"].append(f"{part}/{lab['file'][:60]}: {sorted(names)} {pieces}")
            out["hardware_pieces"].update(pieces)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sites (0: all)")
    ap.add_argument("--target", choices=(TARGET, "nccl"), default=TARGET,
                    help="the sites' category: kernel.unsupported_hw (GPUs the kernels leave out) or nccl (links)")
    ap.add_argument("--tuned", action="store_true", help="the census of the tuned parts' no-cause fragments")
    ap.add_argument("--fixes", action="store_true", help="score the first change proposed, machine remedies on/off")
    ap.add_argument("--backend", default=None, choices=("triton", "flashinfer", "fa3"),
                    help="with --fixes: a server_args line naming the attention backend in use")
    args = ap.parse_args(argv)
    if args.tuned and args.fixes:
        moved = tuned_fix_changes()
        if args.json:
            print(json.dumps(moved, indent=1))
            return 0
        print(f"tuned files {moved['files']}: first change or first alternative moved by the machine remedies "
              f"{len(moved['moved'])}")
        for m in moved["moved"]:
            print(f"  {m['file'][:70]} [{m['label']}; fix {m['fix_label']}]: {m['before']} -> {m['after']}")
        return 0
    if args.tuned:
        census = tuned_census()
        if args.json:
            print(json.dumps(census, indent=1, default=dict))
            return 0
        print(f"tuned no-cause fragments {census['fragments']}: naming the machine {census['with_facts']} "
              f"(facts {dict(census['facts'])}); hardware pieces in the best guess {dict(census['hardware_pieces'])}")
        for line in census["files"]:
            print("  " + line)
        return 0
    pack = RuleSet.load(user=False)
    target = args.target
    found = sites(pack, target)
    if args.limit:
        found = found[:args.limit]
    machines = NCCL_MACHINES if target == "nccl" else MACHINES
    if args.fixes:
        fixes = fix_report(pack, found, machines, args.backend)
        if args.json:
            print(json.dumps(fixes, indent=1))
            return 0
        print(f"synthetic fixes (SGLang 0.5.23's {target} sites, cut above the exception line"
              f"{'; backend in use ' + args.backend if args.backend else ''}; not real data)")
        for name, r in fixes.items():
            for mode in ("before", "after"):
                print(f"  machine {name:36} {mode:6} backend the GPU cannot run {r[mode]['refused_by_gpu']}/{r['total']}"
                      f"  first changes {r[mode]['changes']}")
        return 0
    report: dict[str, dict] = {}
    for name, machine in machines.items():
        answers = Counter(guess(pack, render(path, line, function, machine)) for path, line, function, _ in found)
        report[name] = {"right": answers.get(target, 0), "total": len(found), "answers": dict(answers.most_common())}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"synthetic (rendered from SGLang 0.5.23's {target} sites, traceback cut above its exception line; "
          "not real data)")
    for name, r in report.items():
        print(f"  machine {name:36} best guess {target} {r['right']}/{r['total']}  answers {r['answers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
