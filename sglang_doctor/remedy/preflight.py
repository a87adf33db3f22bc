"""Pre-flight: would this SGLang launch work?  Decided before anything is launched.

Four questions, each answered from data about the target release:

1. flags -- does the release's parser (its shipped catalogue) know every flag?  A typo names
   the closest real flag; a flag of another release names its spelling in this one.
2. values -- would the parser accept each value (type, choices), and is it sane (a fraction
   in (0, 1), a parallel size the GPUs can hold, a context no longer than the model's)?
3. hardware -- does the GPU have what the flags ask for?  ``--quantization`` against the
   minimum capability each method's config returns in that release (catalogs/
   quant-min-capability.json, generated from the releases' source), ``--attention-backend
   fa3`` against the release's assertion, custom all-reduce on PCIe.
4. memory -- the planner's per-GPU budget: fits, which pool does not, and the smallest
   change that fits.

Each finding is an error (the launch would fail), a warning (it would start but probably
not as meant) or a note.  Nothing here launches, imports SGLang or touches a GPU.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.remedy import flags as flags_mod
from sglang_doctor.remedy.hardware import GPUProfile

_LAUNCHERS = ("sglang.launch_server", "sglang/launch_server.py", "launch_server")


@dataclass
class Finding:
    level: str        # "error" | "warning" | "note"
    topic: str        # "flags" | "values" | "hardware" | "memory"
    message: str
    fix: str = ""     # the flag change that addresses it, as command-line text

    def to_json(self) -> dict:
        return {"level": self.level, "topic": self.topic, "message": self.message,
                **({"fix": self.fix} if self.fix else {})}


@dataclass
class Preflight:
    version: str
    version_source: str
    flags_from: str
    args: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    plan: Any = None                 # planner.Plan, when a model config was given
    candidates: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.level == "error" for f in self.findings)

    def to_json(self) -> dict:
        return {
            "ok": self.ok, "sglang_version": self.version, "version_source": self.version_source,
            "flags_from": self.flags_from, "args": self.args,
            "findings": [f.to_json() for f in self.findings],
            "plan": self.plan.to_json() if self.plan is not None else None,
            "candidates": [c.to_json() for c in self.candidates],
        }


# -- the command ---------------------------------------------------------------------------


def launch_argv(command: list[str]) -> list[str]:
    """The SGLang flags of a launch command: what follows ``-m sglang.launch_server`` (or
    ``sglang serve``, or the script); a command that starts with a flag is all flags.
    ValueError when no SGLang launch is found."""
    if not command:
        raise ValueError("no launch command after --")
    if command[0].startswith("--"):
        return list(command)
    for i, word in enumerate(command):
        if any(word == name or word.endswith("/" + name) for name in _LAUNCHERS):
            return list(command[i + 1:])
        if word.endswith("sglang") and i + 1 < len(command) and command[i + 1] == "serve":
            return list(command[i + 2:])
    raise ValueError("not an SGLang launch: expected `python -m sglang.launch_server FLAGS...` "
                     "(or just the flags)")


def _releases_with(option: str) -> list[str]:
    return [v for v in flags_mod.KNOWN_VERSIONS
            if flags_mod.shipped_catalog(v).has_option(option)]


def _span(releases: list[str]) -> str:
    if not releases:
        return ""
    return releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"


def parse_argv(argv: list[str], catalog: flags_mod.Catalog) -> tuple[dict[str, Any], list[Finding]]:
    """argparse's reading of ``argv`` with the release's flags: {dest: value}, findings."""
    args: dict[str, Any] = {}
    findings: list[Finding] = []
    where = f"SGLang {catalog.version}"
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            findings.append(Finding("error", "flags", f"unexpected argument {word!r}: "
                                    f"{where}'s launch_server takes only --flags"))
            continue
        name, eq, inline = word.partition("=")
        spec = catalog.spec(name)
        if spec is None:
            findings.append(_unknown_flag(name, catalog))
            # skip its values so they are not read as stray arguments
            while i < len(argv) and not argv[i].startswith("--"):
                i += 1
            continue
        if name not in (spec.name, *spec.aliases):
            findings.append(Finding(
                "note", "flags", f"{name} is argparse's abbreviation of {spec.name} in {where}; "
                "spell it out (a later release may add a flag with the same prefix)",
                fix=f"{name} -> {spec.name}"))
        if spec.action in ("help", "version"):
            findings.append(Finding("error", "flags", f"{spec.name} prints and exits: not a launch"))
            continue
        if not spec.takes_value:
            if eq:
                findings.append(Finding("error", "values", f"{spec.name} is a switch and takes no value"))
            value: Any = not flags_mod._negative(spec) if spec.action != "store_false" else False
            if spec.action == "store_const":
                value = True
            args[spec.dest] = value
            continue
        many = spec.nargs in ("+", "*") or isinstance(spec.nargs, int)
        if eq:
            values = [inline]
        else:
            values = []
            while i < len(argv) and not (argv[i].startswith("--") or
                                         (argv[i].startswith("-") and not flags_mod._NEGATIVE_NUMBER.match(argv[i]))):
                values.append(argv[i])
                i += 1
                if not many or (isinstance(spec.nargs, int) and len(values) == spec.nargs):
                    break
        if not values and spec.nargs not in ("*", "?"):
            findings.append(Finding("error", "values", f"{spec.name} needs a value"))
            continue
        reason = catalog.validate(spec.name, values if many else (values[0] if values else None))
        if reason:
            findings.append(Finding("error", "values", reason))
            continue
        converted = [_convert(spec, v) for v in values]
        args[spec.dest] = converted if many else (converted[0] if converted else None)
    return args, findings


def _unknown_flag(name: str, catalog: flags_mod.Catalog) -> Finding:
    where = f"SGLang {catalog.version}"
    _, candidates = catalog._matches(name)
    if len(candidates) > 1:
        return Finding("error", "flags", f"{name} is ambiguous in {where}: it could be "
                       f"{', '.join(candidates)} (argparse refuses it)")
    elsewhere = _releases_with(name)
    renamed = flags_mod.translate(name, catalog) if elsewhere else None
    if renamed:
        return Finding("error", "flags", f"{name} is not a flag of {where} (it is in SGLang "
                       f"{_span(elsewhere)}); {where} spells it {renamed}", fix=f"{name} -> {renamed}")
    if elsewhere:
        return Finding("error", "flags", f"{name} is not a flag of {where}: only SGLang "
                       f"{_span(elsewhere)} have it", fix=f"drop {name}")
    later = [v for v in flags_mod.KNOWN_VERSIONS if flags_mod.shipped_catalog(v).spec(name) is not None]
    if later:
        meant = flags_mod.shipped_catalog(later[-1]).spec(name).name
        return Finding("error", "flags", f"{name} is not a flag of {where}: it means {meant} in "
                       f"SGLang {_span(later)}, which {where} does not have", fix=f"drop {name}")
    closest = catalog.closest(name, 1)
    return Finding("error", "flags", f"{name} is not a flag of {where}"
                   + (f"; did you mean {closest[0]}?" if closest else ""),
                   fix=f"{name} -> {closest[0]}" if closest else "")


def _convert(spec: flags_mod.FlagSpec, text: str) -> Any:
    try:
        value = flags_mod._TYPE_CHECKS.get(spec.type, str)(text)
    except Exception:  # noqa: BLE001 - validate() already refused what cannot convert
        return text
    return value


# -- values ----------------------------------------------------------------------------------


def check_values(args: dict[str, Any], hw: GPUProfile, model_config: dict | None) -> list[Finding]:
    out: list[Finding] = []
    mfs = args.get("mem_fraction_static")
    if isinstance(mfs, (int, float)) and not isinstance(mfs, bool):
        if not 0 < mfs < 1:
            out.append(Finding("error", "values", f"--mem-fraction-static {mfs} must be between 0 "
                               "and 1 (the share of free GPU memory for weights and pools)"))
        elif mfs > 0.95:
            out.append(Finding("warning", "values", f"--mem-fraction-static {mfs} leaves under 5% "
                               "for activations and CUDA graphs: expect CUDA out of memory"))
    for dest in ("tp_size", "pp_size", "dp_size", "ep_size", "max_running_requests", "page_size",
                 "context_length", "max_total_tokens"):
        value = args.get(dest)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            out.append(Finding("error", "values", f"--{dest.replace('_', '-')} {value} must be at least 1"))
    tp, pp = _int(args.get("tp_size"), 1), _int(args.get("pp_size"), 1)
    dp = _int(args.get("dp_size"), 1)
    gpus = tp * pp * (1 if args.get("enable_dp_attention") else dp)
    if gpus > hw.count:
        out.append(Finding("error", "values", f"the launch needs {gpus} GPUs (tp {tp} x pp {pp}"
                           + ("" if args.get("enable_dp_attention") or dp == 1 else f" x dp {dp}")
                           + f") but the profile has {hw.count}",
                           fix=f"--tp-size {max(1, hw.count // pp)}"))
    ctx = args.get("context_length")
    if model_config is not None and isinstance(ctx, int):
        text = model_config.get("text_config") or model_config
        limit = text.get("max_position_embeddings") or model_config.get("max_position_embeddings")
        if isinstance(limit, int) and ctx > limit and not (text.get("rope_scaling") or model_config.get("rope_scaling")):
            out.append(Finding("error", "values", f"--context-length {ctx} is longer than the model's "
                               f"max_position_embeddings {limit}: SGLang refuses it (model_config.py: "
                               "\"User-specified context_length ... is greater than the derived "
                               "context_length\") unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
                               fix=f"--context-length {limit}"))
    return out


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


# -- hardware --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _quant_table() -> dict[str, list[dict]]:
    path = importlib.resources.files("sglang_doctor.remedy.catalogs") / "quant-min-capability.json"
    return json.loads(path.read_text(encoding="utf-8"))["methods"]


def quant_min_capability(method: str, version: str) -> tuple[int, str] | None:
    """(minimum capability, source file:line) of a quantization method in ``version``, or
    None when the release's source does not say (method absent, or not a plain number)."""
    key = flags_mod.version_key(version)
    for run in _quant_table().get(method, ()):
        if flags_mod.version_key(run["first"]) <= key <= flags_mod.version_key(run["last"]):
            return run["min_capability"], run["source"]
    return None


# FA3's guard, from the releases' source:
#  0.4.4.post2-0.4.6.post1 model_runner.py (0.4.6: line 920): capability major >= 9;
#  0.4.6.post2 on (0.5.9 layers/attention/attention_registry.py:130, 0.5.23 :243):
#  (major == 8 and not an MLA model) or major == 9 -- SM8x without MLA is allowed, SM100/120 not.
_FA3_SM90_ONLY = ("0.4.4.post2", "0.4.6.post1")


def fa3_refusal(version: str, cc: tuple[int, int], mla: bool) -> str | None:
    major = cc[0]
    key = flags_mod.version_key(version)
    if flags_mod.version_key(_FA3_SM90_ONLY[0]) <= key <= flags_mod.version_key(_FA3_SM90_ONLY[1]):
        return None if major >= 9 else "FlashAttention v3 Backend requires SM>=90 (model_runner.py)"
    if key < flags_mod.version_key(_FA3_SM90_ONLY[0]):
        return None  # no fa3 backend yet: the catalogue's choices refuse the value itself
    if (major == 8 and not mla) or major == 9:
        return None
    why = "an MLA model needs SM90" if major == 8 else f"SM{major}x is neither SM8x nor SM90"
    return (f"FlashAttention v3 Backend requires SM>=80 and SM<=90 ({why}; "
            "layers/attention/attention_registry.py create_flashattention_v3_backend)")


def check_hardware(args: dict[str, Any], hw: GPUProfile, version: str,
                   model_config: dict | None) -> list[Finding]:
    out: list[Finding] = []
    cc = hw.compute_capability
    known = cc != (0, 0)
    sm = cc[0] * 10 + cc[1]
    methods = []
    if isinstance(args.get("quantization"), str):
        methods.append((args["quantization"], "--quantization"))
    elif model_config is not None:
        qc = model_config.get("quantization_config") or (model_config.get("text_config") or {}).get("quantization_config")
        if isinstance(qc, dict) and isinstance(qc.get("quant_method"), str):
            methods.append((qc["quant_method"], "the checkpoint's quantization_config"))
    for method, origin in methods:
        found = quant_min_capability(method, version)
        if found is None or not known:
            continue
        need, source = found
        if sm < need:
            out.append(Finding("error", "hardware",
                               f"quantization {method} ({origin}) needs compute capability {need} in "
                               f"SGLang {version} ({source}); {hw.gpu_name} is SM{sm}: "
                               "model_loader/loader.py raises \"The quantization method ... is not "
                               "supported for the current GPU\"",
                               fix="a checkpoint in bf16 or a method this GPU supports"))
        elif method in ("fp8", "fbgemm_fp8") and not hw.fp8:
            out.append(Finding("note", "hardware", f"{hw.gpu_name} (SM{sm}) has no FP8 tensor cores: "
                               f"{method} runs as weight-only FP8 (Marlin kernels), saving memory "
                               "but not compute"))
    mla = bool(model_config and ((model_config.get("text_config") or model_config).get("kv_lora_rank")))
    for dest in ("attention_backend", "prefill_attention_backend", "decode_attention_backend"):
        if args.get(dest) == "fa3" and known:
            refusal = fa3_refusal(version, cc, mla)
            if refusal:
                out.append(Finding("error", "hardware", f"--{dest.replace('_', '-')} fa3 on "
                                   f"{hw.gpu_name} (SM{sm}) in SGLang {version}: {refusal}",
                                   fix=f"--{dest.replace('_', '-')} flashinfer"))
    tp = _int(args.get("tp_size"), 1)
    if tp > 1 and not hw.nvlink and not args.get("disable_custom_all_reduce"):
        if tp > 2:
            out.append(Finding("note", "hardware", f"tp {tp} on PCIe GPUs: SGLang turns custom "
                               "all-reduce off itself (\"not supported on more than two PCIe-only "
                               "GPUs\", custom_all_reduce.py) and uses NCCL"))
        else:
            out.append(Finding("warning", "hardware", "tp 2 on PCIe GPUs without NVLink: custom "
                               "all-reduce runs only if SGLang's P2P test passes (custom_all_reduce.py "
                               "_can_p2p), else it falls back to NCCL; in a container or VM where P2P "
                               "is reported but broken, start-up hangs at distributed init",
                               fix="--disable-custom-all-reduce (if P2P is not really available)"))
    return out


# -- memory ----------------------------------------------------------------------------------


def check_memory(args: dict[str, Any], hw: GPUProfile, version: str, model_config: dict,
                 catalog: flags_mod.Catalog) -> tuple[list[Finding], Any, list]:
    from sglang_doctor.remedy import planner

    result = planner.plan(model_config, hw, args, version)
    findings: list[Finding] = []
    candidates: list = []
    summary = (f"max_total_num_tokens={result.max_total_num_tokens}, "
               f"max_running_requests={result.max_running_requests}"
               + (f", mamba slots={result.mamba_cache_size}" if result.mamba_cache_size is not None else ""))
    if result.fits:
        findings.append(Finding("note", "memory", f"the memory plan fits on {hw.count} x {hw.gpu_name} "
                                f"with {result.headroom_gb:.1f} GiB headroom per GPU: {summary}"))
        return findings, result, candidates
    candidates = planner.search(model_config, hw, args, version)
    fix = ""
    if candidates:
        fix = " ".join(_flag_text(k, v, catalog) for k, v in candidates[0].changes.items())
    plain = {"mamba state pool": "recurrent-state (mamba) pool",
             "mamba spec intermediate": "speculative-decoding intermediate states"}
    pools = []
    for name, gb in result.rows:
        if name.startswith(("mamba", "KV cache", "draft")):
            for prefix, words in plain.items():
                if name.startswith(prefix):
                    name = words + name[len(prefix):]
            pools.append(f"{name} {gb:.2f} GiB")
    findings.append(Finding("error", "memory", f"the memory plan does not fit ({result.failing}): "
                            f"{result.error or summary}"
                            + (f" [pools per GPU: {', '.join(pools)}]" if pools else ""), fix=fix))
    return findings, result, candidates


def _flag_text(dest: str, value: Any, catalog: flags_mod.Catalog) -> str:
    spec = catalog.by_dest(dest)
    if spec is None and dest == "cuda_graph_max_bs":
        spec = catalog.by_dest("cuda_graph_max_bs_decode")
    name = spec.name if spec is not None else "--" + dest.replace("_", "-")
    if value is None:
        return f"(drop {name})"
    if value is True:
        return name
    return f"{name} {value}"


# -- all together ----------------------------------------------------------------------------


def check(command: list[str], version: str, version_source: str, hw: GPUProfile,
          model_config: dict | None) -> Preflight:
    """The pre-flight of ``command`` for SGLang ``version`` on ``hw``.  ValueError when the
    command is not an SGLang launch."""
    argv = launch_argv(command)
    catalog = flags_mod.load_catalog(version, prefer_shipped=True)
    args, findings = parse_argv(argv, catalog)
    report = Preflight(version=catalog.version, version_source=version_source,
                       flags_from=catalog.source, args=args, findings=findings)
    report.findings += check_values(args, hw, model_config)
    report.findings += check_hardware(args, hw, catalog.version, model_config)
    if model_config is None:
        report.findings.append(Finding("note", "memory", "no memory plan: give --model-config "
                                       "(the model's config.json) to size the pools"))
    elif not any(f.level == "error" and f.topic in ("flags", "values") for f in report.findings):
        memory, report.plan, report.candidates = check_memory(args, hw, catalog.version,
                                                              model_config, catalog)
        report.findings += memory
    return report

