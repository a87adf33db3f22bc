#!/usr/bin/env python3
"""The failure surface of the libraries under SGLang, from their source.

SGLang's own failure sites are inventoried by scripts/inventory_failures.py; launches die as
often inside the libraries SGLang calls (vLLM's quantization methods in 0.4.x, FlashInfer,
sgl-kernel, DeepGEMM, Triton, transformers' config and tokenizer loading, xgrammar).  For a pinned
release of each library this reads the modules an SGLang launch or server reaches (with
``ast``: nothing is imported or executed), lists their user-facing failure sites with
inventory_failures' finder (``raise X(message)``, ``assert cond, message``,
``logger.error/critical/exception``) and gives each a disposition:

1. ``sites:`` in data/inventory/external-dispositions.yaml (key ``file::function::template``);
2. ``rule:<id>``: a specific rule of ``rules/`` whose regex matches the message (as for SGLang);
3. ``patterns:`` in external-dispositions.yaml, in order: class rules by library and message
   words, and waivers (internal invariants, training-only paths, request-level errors);
4. otherwise ``unaccounted`` (tests/diagnose/test_external_inventory.py allows none).

Which modules are read: for vLLM, FlashInfer, sgl-kernel, DeepGEMM and xgrammar, the modules SGLang's
own source imports from the package (``from vllm.x import y`` in the SGLang releases named
below; a name a package's ``__init__`` re-exports is followed to the submodule that defines
it), and the modules those import from the same package (one more step): the code a launch
runs.  For Triton and transformers, whose ``__init__`` re-exports everything, a fixed list
(Triton's runtime, compiler and NVIDIA/AMD driver modules; transformers' configuration, auto
classes, tokenizer loading and hub download).  Tests, benchmarks and training code are left out.

The measure (``--measure``) runs the engine on each site's message in two logs: the
scheduler's traceback whose deepest frame is the library's site under an SGLang frame (the
module of SGLang that calls the library), and the message as a bare cut line (the last line
of a pasted traceback, nothing else), and counts the right category (the site's disposition's
category; a waiver's ``right:``).

Output: ``data/inventory/external-PKG-VERSION.json`` (site key parts, type, disposition; one
line per module) and ``external-measured.json`` (``--measure --record``).  Sources: wheels in
``--wheel-dir`` (default ~/.cache/sglang-doctor/wheels/external, downloaded there with
``pip download --no-deps``), or a release tag of the project's git mirror for a release
PyPI has no wheel of (FlashInfer 0.2.x; ``--mirror``).

    python scripts/inventory_external.py                 # write every package's inventory
    python scripts/inventory_external.py --check         # compare with the shipped files
    python scripts/inventory_external.py --measure --record
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as invf  # noqa: E402  (the finder, templates, fillings, dispositions)

OUT = ROOT / "data" / "inventory"
DISPOSITIONS = OUT / "external-dispositions.yaml"
MEASURED = OUT / "external-measured.json"
SAMPLE_EVERY = 15  # the everyday test's deterministic sample: every 15th site of each package
# the SGLang releases whose imports choose the modules of an import-selected package
SGLANG_04 = ("0.4.3.post2", "0.4.6.post5")
SGLANG_05 = ("0.5.4", "0.5.9", "0.5.23")
_SKIP = ("*/tests/*", "*/test_*.py", "*/testing/*", "*/benchmark*", "*/profiler/*", "*/data/*",
         "*/train*", "*/examples/*", "*/tuning_configs/*")


@dataclass(frozen=True)
class Package:
    """A pinned release of a library and how its SGLang-reached modules are chosen."""

    name: str  # the distribution (pip) name
    version: str
    top: str  # the import name
    sglang: tuple[str, ...] = ()  # SGLang releases whose imports choose the modules
    include: tuple[str, ...] = ()  # or a fixed list of globs (paths inside the wheel)
    steps: int = 1  # import-selected: how many more steps of the package's own imports to follow
    extra: tuple[str, ...] = ()  # import-selected: globs read besides (the JIT builder SGLang never imports)
    git: tuple[str, str] | None = None  # (owner+name mirror, tag) when PyPI has no wheel
    # where SGLang calls the library from: the SGLang frame above the library's in a traceback
    caller: tuple[str, str, str] = ("srt/model_executor/model_runner.py", "load_model", "self.model = get_model(")
    # (glob on "module::function" of the library, SGLang frame) where another SGLang module
    # calls that part; the first that matches
    callers: tuple[tuple[str, tuple[str, str, str]], ...] = ()
    skip: tuple[str, ...] = field(default=_SKIP)

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


# where SGLang calls FlashInfer's parts other than attention (sglang 0.5.23 srt/layers/...)
_FLASHINFER_CALLERS = (
    ("flashinfer/sampling*", ("srt/layers/sampler.py", "_sample_from_probs", "batch_next_token_ids = top_k_top_p_sampling_from_probs(")),
    ("flashinfer/norm*", ("srt/layers/layernorm.py", "forward_cuda", "out = rmsnorm(x, self.weight.data, self.variance_epsilon)")),
    ("flashinfer/activation.py", ("srt/layers/activation.py", "forward_cuda", "silu_and_mul(x, out)")),
    ("flashinfer/comm/*", ("srt/layers/flashinfer_comm_fusion.py", "flashinfer_allreduce_residual_rmsnorm", "trtllm_allreduce_fusion(")),
    ("flashinfer/fused_moe/*", ("srt/layers/moe/fused_moe_triton/layer.py", "forward", "final_hidden_states = self.quant_method.apply(")),
    ("flashinfer/gemm*", ("srt/layers/quantization/modelopt_quant.py", "apply", "out = fp4_gemm(")),
    ("flashinfer/*quantization*", ("srt/layers/quantization/modelopt_quant.py", "apply", "x_fp4, x_scale_interleaved = fp4_quantize(")),
)

# where SGLang 0.4.x calls vLLM's parts (sglang 0.4.3.post2 srt/...)
_VLLM_CALLERS = (("vllm/model_executor/*::*weight_loader*",
                  ("srt/models/llama.py", "load_weights", "weight_loader(param, loaded_weight, shard_id)")),
                 ("vllm/model_executor/*::*_load_*",
                  ("srt/models/llama.py", "load_weights", "weight_loader(param, loaded_weight, shard_id)")),
                 ("vllm/model_executor/layers/quantization/*::*create_weights",
                  ("srt/layers/linear.py", "__init__", "self.quant_method.create_weights(")),
                 ("vllm/model_executor/layers/quantization/*::*.apply",
                  ("srt/layers/linear.py", "forward", "output_parallel = self.quant_method.apply(self, input_, bias)")),
                 ("vllm/model_executor/layers/quantization/*::*process_weights_after_loading",
                  ("srt/model_loader/loader.py", "load_model", "quant_method.process_weights_after_loading(module)")),
                 ("vllm/model_executor/layers/quantization/*",
                  ("srt/model_loader/loader.py", "_get_quantization_config", "quant_config = get_quant_config(")),
                 ("vllm/distributed/*",
                  ("srt/model_executor/model_runner.py", "init_torch_distributed", "initialize_model_parallel(tensor_model_parallel_size=self.tp_size)")),
                 ("vllm/model_executor/layers/fused_moe/*",
                  ("srt/layers/moe/fused_moe_triton/layer.py", "forward", "final_hidden_states = self.quant_method.apply(")))

PACKAGES = (
    # sglang 0.4.3.post2 pins vllm>=0.6.4.post1,<=0.7.2: its quantization methods, custom ops,
    # distributed helpers; 0.4.6.post5 still imports them when vllm is installed
    # (vllm/config.py is imported by attention/layer.py for the CacheConfig type alone: the
    # engine configs it checks are vLLM's, SGLang never builds them)
    Package("vllm", "0.6.4.post1", "vllm", sglang=SGLANG_04, skip=_SKIP + ("vllm/config.py",),
            callers=_VLLM_CALLERS),
    # 0.7.2: the upper end of the same pin (sglang 0.4.2.post4 / 0.4.3.post2: vllm>=0.6.4.post1,
    # <=0.7.2; no later SGLang release pins vLLM for CUDA, 0.4.4+ name it only for ROCm)
    Package("vllm", "0.7.2", "vllm", sglang=SGLANG_04, skip=_SKIP + ("vllm/config.py",),
            callers=_VLLM_CALLERS),
    # sglang 0.5.23 pins sgl-deep-gemm==0.2.3.post2 (import name deep_gemm; its kernels' own
    # checks are C++ DG_HOST_ASSERTs, raised as RuntimeError from the extension: only the
    # Python wrappers' sites are here); SGLang calls it through srt/layers/deep_gemm_wrapper
    Package("sgl-deep-gemm", "0.2.3.post2", "deep_gemm", sglang=SGLANG_05,
            caller=("srt/layers/deep_gemm_wrapper/entrypoint.py", "grouped_gemm_nt_f8f8bf16_contig",
                    "deep_gemm.m_grouped_fp8_gemm_nt_contiguous(")),
    # 0.2.5: sglang 0.4.6.post5's pin (PyPI has only the sdist: the tag of the git mirror)
    Package("flashinfer-python", "0.2.5", "flashinfer", sglang=SGLANG_04, git=("flashinfer-ai+flashinfer", "v0.2.5"),
            caller=("srt/layers/attention/flashinfer_backend.py", "init_forward_metadata", "self.indices_updater_decode.update("),
            callers=_FLASHINFER_CALLERS),
    # 0.7.2 (sglang 0.5.23's pin): only the modules SGLang imports (their own imports reach
    # ~390 modules of kernel-spec generators) and the JIT builder every JIT kernel goes through
    Package("flashinfer-python", "0.7.2", "flashinfer", sglang=SGLANG_05, steps=0,
            extra=("flashinfer/jit/core.py", "flashinfer/jit/cpp_ext.py", "flashinfer/jit/env.py",
                   "flashinfer/compilation_context.py"),
            caller=("srt/layers/attention/flashinfer_backend.py", "init_forward_metadata", "self.indices_updater_decode.update("),
            callers=_FLASHINFER_CALLERS),
    Package("sgl-kernel", "0.1.4", "sgl_kernel", sglang=SGLANG_04,
            caller=("srt/layers/linear.py", "forward", "output_parallel = self.quant_method.apply(self, input_, bias)")),
    Package("sglang-kernel", "0.4.10", "sgl_kernel", sglang=SGLANG_05,
            caller=("srt/layers/linear.py", "forward", "output_parallel = self.quant_method.apply(self, input_, bias)")),
    Package("triton", "3.1.0", "triton",
            include=("triton/runtime/*.py", "triton/compiler/*.py", "triton/backends/nvidia/*.py",
                     "triton/backends/amd/*.py", "triton/backends/compiler.py", "triton/backends/driver.py"),
            caller=("srt/layers/attention/triton_ops/decode_attention.py", "_decode_att_m_fwd", "_fwd_kernel_stage1[grid](")),
    Package("transformers", "4.51.1", "transformers",
            include=("transformers/configuration_utils.py", "transformers/models/auto/*.py",
                     "transformers/tokenization_utils*.py", "transformers/dynamic_module_utils.py",
                     "transformers/utils/hub.py", "transformers/generation/configuration_utils.py",
                     "transformers/processing_utils.py", "transformers/image_processing_base.py",
                     "transformers/feature_extraction_utils.py", "transformers/modeling_rope_utils.py"),
            caller=("srt/hf_transformers_utils.py", "get_config", "config = AutoConfig.from_pretrained(")),
    Package("transformers", "5.19.0", "transformers",
            include=("transformers/configuration_utils.py", "transformers/models/auto/*.py",
                     "transformers/tokenization_utils*.py", "transformers/dynamic_module_utils.py",
                     "transformers/utils/hub.py", "transformers/generation/configuration_utils.py",
                     "transformers/processing_utils.py", "transformers/image_processing_base.py",
                     "transformers/feature_extraction_utils.py", "transformers/modeling_rope_utils.py"),
            caller=("srt/utils/hf_transformers_utils.py", "get_config", "config = AutoConfig.from_pretrained(")),
    Package("xgrammar", "0.1.19", "xgrammar", sglang=SGLANG_04,
            caller=("srt/constrained/xgrammar_backend.py", "dispatch_json", "ctx = self.grammar_compiler.compile_json_schema(")),
)


# -- reading a release --------------------------------------------------------------------------


def default_wheel_dir() -> Path:
    return invf.default_wheel_dir() / "external"


def default_mirror_dir() -> Path:
    return Path(os.environ.get("SGLANG_DOCTOR_MIRRORS", "/work/.mirror"))


def _wheel(pkg: Package, wheel_dir: Path, download: bool = True) -> Path:
    stem = pkg.name.replace("-", "_")

    def existing() -> list[Path]:
        return sorted(wheel_dir.glob(f"{stem}-{pkg.version}-*.whl"))

    found = existing()
    if not found and download:
        wheel_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "--platform",
                        "manylinux2014_x86_64", "--platform", "any", f"{pkg.name}=={pkg.version}",
                        "-d", str(wheel_dir)], check=True)
        found = existing()
    if not found:
        raise SystemExit(f"no wheel for {pkg.name}=={pkg.version} in {wheel_dir}")
    return found[0]


def release_files(pkg: Package, wheel_dir: Path, mirror_dir: Path) -> tuple[str, dict[str, str]]:
    """(where the source came from, {path inside the wheel: source text}) of the package's .py files."""
    if pkg.git:
        repo, tag = pkg.git
        git_dir = mirror_dir / repo / "repo"
        names = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", tag],
                               check=True, capture_output=True, text=True).stdout.split()
        files = {}
        for name in names:
            if name.startswith(pkg.top + "/") and name.endswith(".py"):
                files[name] = subprocess.run(["git", "-C", str(git_dir), "show", f"{tag}:{name}"], check=True,
                                             capture_output=True, text=True, errors="replace").stdout
        return f"{repo.replace('+', '/')}@{tag}", files
    wheel = _wheel(pkg, wheel_dir)
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n).decode("utf-8-sig", errors="replace")
                 for n in zf.namelist() if n.startswith(pkg.top + "/") and n.endswith(".py")}
    return wheel.name, files


# -- which modules SGLang reaches -----------------------------------------------------------------


def _module_file(module: str, files: dict[str, str]) -> str | None:
    base = module.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if candidate in files:
            return candidate
    return None


def _package_of(path: str) -> str:
    """The dotted package a module's relative imports start from."""
    parts = path[:-3].split("/")
    return ".".join(parts[:-1])


def _imports(tree: ast.AST, top: str, here: str = "") -> list[tuple[str, list[str]]]:
    """(module, names) of every import of ``top`` in a module (relative ones resolved from ``here``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = here.split(".")  # here: the importing module's package + ".x"
                base = base[:len(base) - node.level]
                module = ".".join(base + ([module] if module else []))
            if module.split(".")[0] == top:
                found.append((module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == top]
    return found


def _parse(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _resolve(module: str, names: list[str], files: dict[str, str]) -> set[str]:
    """The files an import reaches: the module, or each imported submodule, or the submodule a
    package's ``__init__`` takes an imported name from (``from flashinfer import
    BatchDecodeWithPagedKVCacheWrapper`` -> flashinfer/decode.py)."""
    reached: set[str] = set()
    own = _module_file(module, files)
    exported: dict[str, str] = {}
    if own and own.endswith("__init__.py"):
        tree = _parse(files[own])
        for sub, subnames in (_imports(tree, module.split(".")[0], module + ".x") if tree else []):
            for n in subnames:
                exported.setdefault(n, sub)
    for name in names:
        sub = _module_file(f"{module}.{name}", files)
        if sub:
            reached.add(sub)
        elif name in exported and _module_file(exported[name], files):
            reached.add(_module_file(exported[name], files))
    if own and (not names or not reached):
        reached.add(own)
    return reached


def sglang_imports(pkg: Package, wheel_dir: Path) -> list[tuple[str, list[str]]]:
    found = []
    for version in pkg.sglang:
        wheel = invf.find_wheel(version, invf.default_wheel_dir())
        for _path, text in invf.sources(wheel):
            tree = _parse(text)
            if tree is not None:
                found += _imports(tree, pkg.top)
    return found


def reached_modules(pkg: Package, files: dict[str, str], wheel_dir: Path) -> list[str]:
    """The package's modules an SGLang launch runs (see the module docstring)."""
    if pkg.include:
        chosen = {p for p in files if any(fnmatch.fnmatchcase(p, g) for g in pkg.include)}
    else:
        chosen = set()
        for module, names in sglang_imports(pkg, wheel_dir):
            chosen |= _resolve(module, names, files)
        for _ in range(pkg.steps):  # what those modules import from the package
            # (the top package's __init__ re-exports the whole library: not followed)
            for path in sorted(p for p in chosen if p != f"{pkg.top}/__init__.py"):
                tree = _parse(files[path])
                for module, names in (_imports(tree, pkg.top, _package_of(path) + ".x") if tree else []):
                    chosen |= _resolve(module, names, files)
        chosen |= {p for p in files if any(fnmatch.fnmatchcase(p, g) for g in pkg.extra)}
    return sorted(p for p in chosen if not any(fnmatch.fnmatchcase(p, g) for g in pkg.skip))


# -- the inventory --------------------------------------------------------------------------------


def inventory(pkg: Package, disp: invf.Dispositions, rules: invf.RuleMatcher, wheel_dir: Path,
              mirror_dir: Path) -> dict:
    source, files = release_files(pkg, wheel_dir, mirror_dir)
    modules = reached_modules(pkg, files, wheel_dir)
    sites = []
    for path in modules:
        sites += invf.find_sites(path, files[path])
    by_file: dict[str, list] = {}
    counts: Counter = Counter()
    full: dict[str, str] = {}
    for site in sites:
        if site["full"] != site["template"]:
            full[invf.site_key(site)] = site["full"]
        d = invf.dispose(site, disp, rules)
        counts[d.split(":", 1)[0]] += 1
        by_file.setdefault(site["file"], []).append(
            [site["line"], site["function"], site["kind"], site["exception"], site["template"], d])
    return {"package": pkg.name, "version": pkg.version, "source": source, "modules": len(modules),
            "sites": len(sites), "counts": dict(sorted(counts.items())), "files": by_file, "_full": full}


def inventory_path(pkg: Package, out: Path = OUT) -> Path:
    return out / f"external-{pkg.key}.json"


def dumps(inv: dict) -> str:
    return invf.dumps(inv)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def iter_sites(inv: dict):
    return invf.iter_sites(inv)


# -- measuring: the site's message under an SGLang launch --------------------------------------

LIB_PREFIX = "/usr/local/lib/python3.12/dist-packages/"
# the classes that name a site by where it failed (the SGLang frame above the library's), not by
# its words: a bare line, without frames, cannot show them
# (class.kernel.library_shape_check: a size check raised inside FlashInfer / sgl-kernel /
# DeepGEMM; the same words in a bare line are SGLang's own argument checks as often)
WHERE_CLASSES = {"class:class.feature.attention_backend", "class:class.model.load", "class:class.kernel.library_shape_check"}


def traceback_log(site: dict, pkg: Package, message: str, phase: str) -> str:
    """The scheduler's traceback: SGLang's scheduler, the SGLang module that calls the library,
    then the library's site (its deepest frame) and ``ExceptionType: message``; a logged site
    is its line alone; a logged site a raise follows, the line and then the traceback."""
    stamp = invf.STAMP.format(30)
    head = invf._context(phase)
    if site["kind"].startswith("log") and not site["kind"].endswith(".raise"):
        return head + f"[{stamp} TP0] {message}\n"
    exc = {"assert": "AssertionError"}.get(site["kind"], site["exception"] or "RuntimeError")
    if site["kind"].endswith(".raise"):
        exc = "RuntimeError"
        head += f"[{stamp} TP0] {message}\n"
    caller_file, caller_func, caller_line = next(
        (c for glob, c in pkg.callers if fnmatch.fnmatchcase(f"{site['file']}::{site['function']}", glob + ("" if "::" in glob else "::*"))),
        pkg.caller)
    loop = (f'  File "{invf.PREFIX}srt/managers/scheduler.py", line 1201, in event_loop_overlap\n'
            f"    batch_result = self.run_batch(batch)\n") if phase == "serving" else ""
    return (head + f"[{stamp} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{invf.PREFIX}srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
            f"    scheduler = Scheduler(\n" + loop +
            f'  File "{invf.PREFIX}{caller_file}", line 412, in {caller_func}\n    {caller_line}\n'
            f'  File "{LIB_PREFIX}{site["file"]}", line {site["line"]}, in {site["function"].rsplit(".", 1)[-1]}\n'
            f"    {'assert' if site['kind'] == 'assert' else 'raise'} ...\n"
            f"{exc}: {message}\n\n")


def bare_log(site: dict, message: str) -> str:
    """The message as the one line a paste keeps (``ExceptionType: message``, or the logged line)."""
    if site["kind"].startswith("log") and not site["kind"].endswith(".raise"):
        return message + "\n"
    exc = {"assert": "AssertionError"}.get(site["kind"], site["exception"] or "RuntimeError")
    return f"{exc}: {message}\n"


def _categories(ruleset) -> dict[str, str]:
    categories = invf.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    return categories


def _phase(disp: invf.Dispositions, site: dict) -> str:
    return disp.phase(site)


def measure(inv: dict, pkg: Package, disp: invf.Dispositions, every: int = 1, verbose: bool = False) -> dict:
    """Run the engine on each site's traceback log, and on its bare line when the site's right
    answer is a category its message names (a rule or a class) or no incident; right when the
    incidents include the site's right category (``none``: no incident)."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    ruleset = RuleSet.load(builtin=True, user=False)
    categories = _categories(ruleset)
    class_by_phase = invf.class_phase_categories()
    result = {"traceback": [0, 0], "bare": [0, 0]}
    wrong: Counter = Counter()
    excluded = 0
    for i, site in enumerate(iter_sites(inv)):
        if i % every:
            continue
        phase = _phase(disp, site)
        want = invf.right_answer(site, disp, categories, phase, class_by_phase)
        if want in (None, "excluded"):
            excluded += 1
            continue
        message = invf.fillings(site["full"] or site["template"])[0]
        if want == "none" and not site["kind"].startswith("log"):
            # a request the library refuses (a grammar xgrammar cannot compile): SGLang answers
            # the request with an error and serves on, as for its own request-level errors
            forms = [("traceback", invf.synthetic_log(site, phase, want, message))]
        else:
            forms = [("traceback", traceback_log(site, pkg, message, phase))]
        if (site["disposition"].split(":")[0] in ("rule", "class") and site["disposition"] not in WHERE_CLASSES) \
                or want == "none":
            # a bare line carries no phase and no frames: only a category the message itself
            # names (a rule's, a class's by message words) or no incident can be right there
            forms.append(("bare", bare_log(site, message)))
        for form, text in forms:
            pipe = StreamPipeline(ruleset, remediate=False)
            events = pipe.feed(text.encode()) + pipe.finish()
            got = [ev["category"] for ev in events if ev["event"] == "incident"]
            ok = (not got) if want == "none" else (want in got)
            result[form][0] += 1
            result[form][1] += ok
            if not ok:
                wrong[f"{form} {site['disposition']} want {want} -> {','.join(got) or 'none'}"] += 1
                if verbose:
                    print(f"    miss {form}: {site['file']}:{site['line']} [{site['exception'] or site['kind']}] "
                          f"{site['template'][:100]} want {want} -> {','.join(got) or 'none'}")
    if verbose:
        for key, n in wrong.most_common(20):
            print(f"    {n:5d} {key}")
    return {"every": every, "excluded": excluded,
            **{form: {"sites": c[0], "right": c[1]} for form, c in result.items()}}


def print_summary(pkg: Package, inv: dict, result: dict | None = None) -> None:
    c = inv["counts"]
    line = (f"{pkg.key}: {inv['modules']} modules, {inv['sites']} sites; rule {c.get('rule', 0)}, class {c.get('class', 0)}, "
            f"waiver {c.get('waiver', 0)}, unaccounted {c.get('unaccounted', 0)}")
    if result:
        line += "".join(f"; right {form} {result[form]['right']}/{result[form]['sites']}" for form in ("traceback", "bare"))
    print(line)


# -- command line ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", nargs="+", default=None, help="PKG-VERSION keys (default: all)")
    ap.add_argument("--wheel-dir", type=Path, default=None)
    ap.add_argument("--mirror", type=Path, default=None, help="git mirrors (owner+name/repo)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--dispositions", type=Path, default=DISPOSITIONS)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    ap.add_argument("--measure", action="store_true", help="run the engine on each site's two logs")
    ap.add_argument("--record", action="store_true", help=f"with --measure: write the figures to {MEASURED.name}")
    ap.add_argument("--show", default=None, help="print the sites whose disposition starts with this")
    ap.add_argument("--verbose", action="store_true", help="with --measure: print every miss")
    ap.add_argument("--every", type=int, default=1, help="--measure every Nth site only (a deterministic sample)")
    args = ap.parse_args(argv)
    wheel_dir = args.wheel_dir or default_wheel_dir()
    mirror_dir = args.mirror or default_mirror_dir()
    disp = invf.Dispositions.load(args.dispositions)
    rules = invf.RuleMatcher()
    status = 0
    recorded = load(MEASURED) if MEASURED.is_file() else {}
    for pkg in PACKAGES:
        if args.packages and pkg.key not in args.packages:
            continue
        inv = inventory(pkg, disp, rules, wheel_dir, mirror_dir)
        target = inventory_path(pkg, args.out)
        text = dumps(inv)
        status |= invf.check_or_write(target, text, args.check)
        result = measure(inv, pkg, disp, every=args.every, verbose=args.verbose) if args.measure else None
        print_summary(pkg, inv, result)
        if args.show:
            for site in iter_sites(inv):
                if site["disposition"].startswith(args.show):
                    print(f"  {site['file']}:{site['line']} {site['function']} [{site['exception'] or site['kind']}] "
                          f"{site['template'][:140]} -> {site['disposition']}")
        if result and args.record:
            sample = result if args.every == SAMPLE_EVERY else measure(inv, pkg, disp, every=SAMPLE_EVERY)
            recorded[pkg.key] = {"full": result, "sample": sample}
    if args.record:
        MEASURED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
