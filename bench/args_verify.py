"""Does the fix sglang-doctor proposes for an argument refusal get past real SGLang's check?

``bench/message_fixes.py --refusals`` counts a remedy that is a concrete change;
``bench/args_fixes.py`` scores thread-confirmed cases by the flag named.  Neither runs the
change.  This does, with the real SGLang 0.5.23 installed by ``scripts/install-real-sglang``
(``~/.cache/sglang-doctor/real-sglang-venv``; on CPU, nothing is launched):

1. **Reach** each argument-check site of the release's inventory (``server_args.py``,
   ``arg_groups/``, ``utils/server_args_config_parser.py`` in
   ``data/inventory/sglang-0.5.23.json``): a launch argv whose checks raise *there*.  The argv
   comes from a small search driven by the site's message (``--search``): the flags (``--x-y``)
   and ServerArgs fields (``x_y``) the message names, each alone and in pairs, with values
   from the flag catalogue (every choice; a few edge numbers for an int or float; a switch
   on), on a tiny local llama and a tiny GDN hybrid model (``tests/realsglang/make_tiny_model``)
   with ``--device cpu``.  What the search finds is written to
   ``fixtures/args_verify/triggers.json`` (site -> argv) and replayed by later runs; sites
   whose condition cannot be met on CPU from the flags the message names stay unreached
   and are counted.
2. **Capture** the refusal as SGLang prints it (``fixtures/args_verify/driver.py`` runs
   ``prepare_server_args(argv)`` and ``resolve_once()``, the first two steps of
   ``python -m sglang.launch_server``, inside the real venv): the lines logged during the
   checks, then the traceback whose top frame is launch_server.py.
3. **Explain** it with the engine (the same ``StreamPipeline`` ``sglang-doctor explain``
   runs, in process, SGLang version from the log; ``--with-command`` also gives it the argv,
   as ``sglang-doctor run`` has it), and **apply** the primary remediation's change, and
   separately the first alternative's, to the argv (``launch_command.apply``: the flag
   catalogue's validation).  Re-run the checks: the fix *passes* when the argv now gets
   through every check; *moved* when the site that fired is gone but another check fires.

Per site: reached / named args.invalid / primary passes / first alternative passes (and, for any
category, either passes: a described GPU's refusals are often kernel.unsupported_hw).

**GPU profiles** (``--profile NAME|all``): the same checks with a GPU described to SGLang, not
present (fixtures/args_verify/gpu_profiles.json: A6000 SM86, 4090 SM89, H100 SM90, B200 SM100,
5090 SM120, T4 SM75, V100 SM70; fixtures/args_verify/gpu_profile.py patches torch.cuda /
torch.version before sglang imports, stands in for sgl_kernel, and sets SGLang's has_flashinfer
platform fact).  On a profile the launch has no ``--device cpu``, the search also tries the tiny
models of fixtures/args_verify/models/ (a DeepSeek-V3 MLA MoE, a GPT-OSS), the backend choices a
message names by their words ("TRTLLM MLA backend" -> ``--attention-backend trtllm_mla``), and
first what reached the site on the CPU or another profile.  Sites stay unreached when their
condition is not in the flags or backend words the message names (most of the 758: model
architectures the tiny configs are not, environment variables, multi-node / PD / EP
deployments, combinations of three or more settings), or when reaching them needs more than a
description of the device (a ROCm profile: SGLang reads AMD memory from rocm-smi).

Usage: ``python bench/args_verify.py [--search] [--sites FILE[:LINE] ...] [--with-command]
[--logs DIR] [--profile cpu|a6000|...|all] [--verbose]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402

VERSION = "0.5.23"
HERE = ROOT / "fixtures" / "args_verify"
DRIVER = HERE / "driver.py"
TRIGGERS = HERE / "triggers.json"
STUBS = ROOT / "tests" / "realsglang" / "stubs"
ARGUMENT_CHECKS = ("srt/server_args.py", "srt/arg_groups/", "srt/utils/server_args_config_parser.py")
MODELS = ("llama", "hybrid")             # tests/realsglang/make_tiny_model's kinds
FAMILY_MODELS = ("mla", "gpt_oss")       # fixtures/args_verify/models/<kind>/config.json on the llama's tokenizer
GPU_PROFILES = HERE / "gpu_profiles.json"
CPU = "cpu"

_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*[a-z0-9]")
_FIELD = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_INT_VALUES = ("0", "-1", "1", "2", "3", "8", "1000000")
_FLOAT_VALUES = ("0", "-1", "0.5", "1.5")
_PER_FLAG = 8    # values per flag tried in a pair
_NAMED = 4       # named flags whose pairs are tried
_BUDGET = 24     # argvs tried per site on the llama (a third of them on the hybrid)
_GENERIC_CHOICES = {"auto", "none", "default", "true", "false", "disabled", "enabled", "all", "model"}


def venv_python() -> Path | None:
    """The real-SGLang venv's interpreter (``$SGLANG_PYTHON``, else the default venv)."""
    explicit = os.environ.get("SGLANG_PYTHON")
    base = Path(os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")))
    python = Path(explicit) if explicit else base / "sglang-doctor" / "real-sglang-venv" / "bin" / "python"
    return python if python.exists() else None


class Driver:
    """fixtures/args_verify/driver.py running in the real venv: one argv in, one answer out."""

    def __init__(self, python: Path, profile: str = CPU):
        env = dict(os.environ)
        env.pop("SGLANG_DOCTOR_GPU_PROFILE", None)
        if profile != CPU:  # the checks see this GPU (fixtures/args_verify/gpu_profile.py)
            env["SGLANG_DOCTOR_GPU_PROFILE"] = profile
        env["PYTHONPATH"] = os.pathsep.join([str(STUBS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen([str(python), str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env, cwd=str(ROOT))
        self.cache: dict[str, dict] = {}

    def check(self, argv: list[str]) -> dict:
        key = json.dumps(argv)
        if key not in self.cache:
            self.proc.stdin.write(json.dumps({"argv": argv}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the real-SGLang driver ended (is sglang importable in its venv?)")
            self.cache[key] = json.loads(line)
        return self.cache[key]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def make_models(where: Path) -> dict[str, str]:
    """The tiny model directories (config + tokenizer, no weights) the argvs name: the
    make_tiny_model kinds, and the model families of fixtures/args_verify/models/ (their
    config.json beside the llama's tokenizer)."""
    import shutil

    from tests.realsglang.make_tiny_model import write_model

    out = {}
    for kind in MODELS + FAMILY_MODELS:
        path = where / kind
        if not (path / "config.json").is_file():
            write_model(path, kind=kind if kind in MODELS else "llama")
            if kind in FAMILY_MODELS:
                shutil.copyfile(HERE / "models" / kind / "config.json", path / "config.json")
        out[kind] = str(path)
    return out


def concrete_argv(template: list[str], models: dict[str, str]) -> list[str]:
    return [models[t[1:-1]] if t.startswith("{") and t[1:-1] in models else t for t in template]


def base_argv(kind: str, profile: str = CPU) -> list[str]:
    """A launch of ``kind``'s tiny model: ``--device cpu`` on the CPU; on a described GPU,
    SGLang's own default device (cuda)."""
    return ["--model-path", "{%s}" % kind] + (["--device", "cpu"] if profile == CPU else [])


def gpu_profiles() -> list[str]:
    return list(json.loads(GPU_PROFILES.read_text(encoding="utf-8"))["profiles"])


# --- sites -------------------------------------------------------------------------------------


def argument_sites(version: str = VERSION) -> list[dict]:
    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    return [s for s in inv_mod.iter_sites(inv) if s["file"].startswith(ARGUMENT_CHECKS)
            and s["kind"] in ("raise", "assert")]


def site_id(site: dict) -> str:
    return f"{site['file']}:{site['line']}"


def which_site(answer: dict, by_function: dict[tuple[str, str], list[int]]) -> str | None:
    """The inventory site an answer's deepest argument-check frame is: same file and function,
    the nearest site line at or above the frame's line (a raise spelled over several lines)."""
    if not answer.get("site"):
        return None
    path, line, function = answer["site"]
    lines = [n for n in by_function.get((path, function), ()) if n <= line <= n + 12]
    return f"{path}:{max(lines)}" if lines else None


# --- the search --------------------------------------------------------------------------------


def named_flags(site: dict, catalog) -> list[str]:
    """The catalogue flags a site's message names: ``--x-y`` options and ``x_y`` fields, in order."""
    text = site.get("full") or site["template"]
    out: list[str] = []
    for m in itertools.chain(_FLAG.finditer(text), _FIELD.finditer(text)):
        word = m.group(0)
        flag = word if word.startswith("--") else "--" + word.replace("_", "-")
        spec = catalog.spec(flag)
        if spec is None or spec.dest in ("model_path", "device"):
            continue
        if spec.name not in out:
            out.append(spec.name)
    return out[:_NAMED]


def values_for(spec) -> list[list[str]]:
    """The argv pieces a flag is tried with."""
    if not spec.takes_value:
        return [[spec.name]]
    if spec.choices:
        return [[spec.name, str(c)] for c in spec.choices if c is not None]
    if spec.type == "int":
        return [[spec.name, v] for v in _INT_VALUES]
    if spec.type == "float":
        return [[spec.name, v] for v in _FLOAT_VALUES]
    return []


def _words(text: str) -> str:
    """A message as ``_``-joined lower-case words: "TRTLLM MLA backend" -> "_trtllm_mla_backend_"."""
    return "_" + "_".join(re.findall(r"[a-z0-9]+", text.lower())) + "_"


def named_choices(site: dict, catalog) -> list[list[str]]:
    """``[flag, choice]`` for each choice of a backend/kernel flag the message names by value,
    spelt as SGLang's messages spell backends ("TRTLLM MLA backend", "FlashMLA", "fa3"): how a
    GPU-only check that names no flag is reached."""
    text = _words(site.get("full") or site["template"])
    out: list[list[str]] = []
    for spec in catalog.specs:
        if not spec.choices or not spec.name.endswith(("-backend", "-kernel", "-dtype")):
            continue
        for choice in spec.choices:
            word = _words(str(choice)) if choice is not None else "__"
            if word.strip("_") not in _GENERIC_CHOICES and len(word) >= 5 and word in text:
                out.append([spec.name, str(choice)])
    return out[:_NAMED * 2]


def candidates(site: dict, catalog) -> list[list[str]]:
    flags = named_flags(site, catalog)
    pieces = {f: values_for(catalog.spec(f)) for f in flags}
    chosen = named_choices(site, catalog)
    out: list[list[str]] = list(chosen)
    out.extend(a + b for a, b in itertools.combinations(chosen, 2) if a[0] != b[0])
    for f in flags:
        out.extend(pieces[f])
    for a, b in itertools.combinations(flags, 2):
        for pa, pb in itertools.product(pieces[a][:_PER_FLAG], pieces[b][:_PER_FLAG]):
            out.append(pa + pb)
    return out[:_BUDGET]


def search(sites: list[dict], driver: Driver, models: dict[str, str], catalog, known: dict,
           profile: str = CPU) -> dict:
    """site id -> argv template that reaches it (``known`` first: what earlier searches found).
    On a GPU profile the model families of fixtures/args_verify/models/ are tried too."""
    by_function = functions_of(sites)
    found = dict(known)
    for site in sites:
        if site_id(site) in found:
            continue
        tried = candidates(site, catalog)
        if profile != CPU:  # what reached it on the CPU or another GPU, first
            tried = seeds(site_id(site), profile) + tried
        for kind in MODELS + (FAMILY_MODELS if profile != CPU else ()):
            for extra in tried if kind == "llama" else tried[:_BUDGET // 3]:
                template = base_argv(kind, profile) + extra
                hit = which_site(driver.check(concrete_argv(template, models)), by_function)
                if hit is not None and hit not in found:
                    found[hit] = template
                if site_id(site) in found:
                    break
            if site_id(site) in found:
                break
        print(f"searched {site_id(site)}: {'reached' if site_id(site) in found else 'not reached'}; "
              f"{len(found)} sites reached so far", file=sys.stderr, flush=True)
    return found


def seeds(sid: str, profile: str) -> list[list[str]]:
    """The flags (past model and device) that reached ``sid`` on the CPU or another GPU profile."""
    doc = _triggers_doc()
    found = [doc.get("triggers", {}).get(sid)]
    found += [t.get(sid) for name, t in sorted(doc.get("gpu_triggers", {}).items()) if name != profile]
    out: list[list[str]] = []
    for template in found:
        if template and cpu_argv_on_gpu(template) not in out:
            out.append(cpu_argv_on_gpu(template))
    return out


def cpu_argv_on_gpu(template: list[str]) -> list[str]:
    """A CPU trigger's flags past its model and ``--device cpu``."""
    return [t for i, t in enumerate(template)
            if i >= 2 and not (t == "--device" or (i > 0 and template[i - 1] == "--device"))]


def functions_of(sites: list[dict]) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for s in sites:
        out.setdefault((s["file"], s["function"]), []).append(s["line"])
    return out


# --- verification ------------------------------------------------------------------------------


def explain(log: str, command: list[str] | None) -> dict | None:
    """The engine's last incident on a log (what ``sglang-doctor explain --format json`` prints)."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(RuleSet.load(builtin=True, user=False), command=command)
    events = pipe.feed(log.encode()) + pipe.finish()
    incidents = [e for e in events if e.get("event") == "incident"]
    return incidents[-1] if incidents else None


def try_change(change: dict | None, argv: list[str], fired: str, driver: Driver, by_function, catalog) -> str:
    """What one remediation change does to the refusal: pass, moved (another check fires),
    same (the same check fires), not applied (no concrete change, or the catalogue refuses it)."""
    from sglang_doctor.remedy import launch_command

    if not change or not (change.get("set") or change.get("unset")):
        return "no change"
    if any(isinstance(v, str) and v.startswith("<") for v in (change.get("set") or {}).values()):
        return "question"
    rem = SimpleNamespace(set=change.get("set") or {}, unset=change.get("unset") or [])
    try:
        after = launch_command.apply(["python", "-m", "sglang.launch_server"] + argv, rem, catalog)[3:]
    except launch_command.CommandError:
        return "not applied"
    answer = driver.check(after)
    if answer["ok"]:
        return "pass"
    where = which_site(answer, by_function)
    return "same" if where == fired else "moved"


def verify(sites: list[dict], triggers: dict, driver: Driver, models: dict[str, str], catalog,
           with_command: bool, logs: Path | None = None) -> list[dict]:
    by_function = functions_of(sites)
    rows = []
    for site in sites:
        sid = site_id(site)
        row = {"site": sid, "reached": sid in triggers, "category": None, "rule": None,
               "primary": "-", "alt1": "-", "message": (site.get("full") or site["template"])[:120]}
        rows.append(row)
        if not row["reached"]:
            continue
        argv = concrete_argv(triggers[sid], models)
        answer = driver.check(argv)
        if which_site(answer, by_function) != sid:
            row["reached"] = False  # the table is stale for this release
            continue
        if logs is not None:  # the refusal as printed, to read or to explain by hand
            logs.mkdir(parents=True, exist_ok=True)
            (logs / (sid.replace("/", "_").replace(":", "_") + ".log")).write_text(answer["log"], encoding="utf-8")
        incident = explain(answer["log"], ["python", "-m", "sglang.launch_server"] + argv if with_command else None)
        if incident is None:
            continue
        row["category"], row["rule"] = incident.get("category"), incident.get("rule")
        rem = incident.get("remediation") or {}
        alts = rem.get("alternatives") or []
        row["primary"] = try_change(rem, argv, sid, driver, by_function, catalog)
        row["alt1"] = try_change(alts[0] if alts else None, argv, sid, driver, by_function, catalog)
        row["change"] = {"set": rem.get("set"), "unset": rem.get("unset")}
        row["alt_change"] = {"set": alts[0].get("set"), "unset": alts[0].get("unset")} if alts else None
    return rows


def summary(rows: list[dict]) -> dict:
    reached = [r for r in rows if r["reached"]]
    named = [r for r in reached if r["category"] == "args.invalid"]
    return {
        "sites": len(rows),
        "reached": len(reached),
        "args_invalid": len(named),
        "primary_pass": sum(r["primary"] == "pass" for r in named),
        "alt1_pass": sum(r["alt1"] == "pass" for r in named),
        "either_pass": sum("pass" in (r["primary"], r["alt1"]) for r in named),
        "primary_outcomes": dict(Counter(r["primary"] for r in named)),
        # a described GPU's refusals are often kernel.unsupported_hw: every named site counts here
        "named": len([r for r in reached if r["category"]]),
        "any_either_pass": sum("pass" in (r["primary"], r["alt1"]) for r in reached if r["category"]),
        "categories": dict(Counter(r["category"] for r in reached)),
    }


def _triggers_doc() -> dict:
    if TRIGGERS.is_file():
        return json.loads(TRIGGERS.read_text(encoding="utf-8"))
    return {}


def load_triggers(profile: str = CPU) -> dict:
    doc = _triggers_doc()
    if profile == CPU:
        return doc.get("triggers", {})
    return doc.get("gpu_triggers", {}).get(profile, {})


def save_triggers(triggers: dict, profile: str = CPU) -> None:
    doc = _triggers_doc()
    doc["sglang_version"] = VERSION
    doc["about"] = ("site (file:line of the 0.5.23 inventory) -> launch argv that reaches it: 'triggers' on "
                    "CPU (--device cpu), 'gpu_triggers' per GPU profile of fixtures/args_verify/gpu_profiles.json "
                    "(described to SGLang, not present); {llama}/{hybrid} name tests/realsglang/make_tiny_model's "
                    "models, {mla}/{gpt_oss} fixtures/args_verify/models/. Made by bench/args_verify.py --search.")
    if profile == CPU:
        doc["triggers"] = dict(sorted(triggers.items()))
    else:
        doc.setdefault("gpu_triggers", {})[profile] = dict(sorted(triggers.items()))
        doc["gpu_triggers"] = dict(sorted(doc["gpu_triggers"].items()))
    TRIGGERS.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def run(selected: list[str] | None = None, do_search: bool = False, with_command: bool = False,
        python: Path | None = None, logs: Path | None = None, profile: str = CPU) -> list[dict]:
    from sglang_doctor.remedy import flags as flags_mod

    python = python or venv_python()
    if python is None:
        raise SystemExit("no real-SGLang venv: run scripts/install-real-sglang (or set SGLANG_PYTHON)")
    catalog = flags_mod.load_catalog(VERSION, prefer_shipped=True)
    sites = argument_sites()
    if selected:
        sites = [s for s in sites if any(site_id(s) == x or s["file"] == x for x in selected)]
    driver = Driver(python, profile)
    try:
        with tempfile.TemporaryDirectory(prefix="args-verify-") as tmp:
            models = make_models(Path(tmp))
            triggers = load_triggers(profile)
            if do_search:
                triggers = search(sites, driver, models, catalog, triggers, profile)
                save_triggers(triggers, profile)
            return verify(sites, triggers, driver, models, catalog, with_command, logs)
    finally:
        driver.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--search", action="store_true", help="search argvs for unreached sites; update triggers.json")
    ap.add_argument("--sites", nargs="*", help="only these sites (file:line) or files")
    ap.add_argument("--with-command", action="store_true", help="give the engine the argv, as `run` does")
    ap.add_argument("--logs", type=Path, help="write each reached site's refusal log into this directory")
    ap.add_argument("--profile", default=CPU,
                    help="cpu (default), a GPU profile of fixtures/args_verify/gpu_profiles.json, or 'all'")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    profiles = [CPU] + gpu_profiles() if args.profile == "all" else [args.profile]
    for profile in profiles:
        logs = args.logs / profile if args.logs is not None and len(profiles) > 1 else args.logs
        rows = run(args.sites, args.search, args.with_command, logs=logs, profile=profile)
        report(rows, profile, args.verbose)
    return 0


def report(rows: list[dict], profile: str, verbose: bool) -> None:
    if verbose:
        for r in rows:
            if r["reached"]:
                print(f"{r['site']:<48} {str(r['category']):<22} primary {r['primary']:<11} alt1 {r['alt1']:<11} "
                      f"{r.get('change')} | {r.get('alt_change')}  <- {r['message'][:90]!r}")
    s = summary(rows)
    print(f"sglang {VERSION} [{profile}]: argument-check sites {s['sites']}, reached {s['reached']}, "
          f"named args.invalid {s['args_invalid']}; fix passes the real checks: primary {s['primary_pass']}, "
          f"first alternative {s['alt1_pass']}, either {s['either_pass']} of {s['args_invalid']}; "
          f"primary outcomes {s['primary_outcomes']}; any category: fix passes {s['any_either_pass']} of "
          f"{s['named']} named {s['categories']}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
