"""GPU profiles: how much memory each GPU has and what its kernels can do.

The planner needs two memory figures per GPU:

* ``total_gb`` — the capacity SGLang's default rules look at.  SGLang reads it with
  ``nvidia-smi --query-gpu=memory.total`` (MiB, min over the visible GPUs) in
  ``get_device_memory_capacity`` (0.5.9 srt/utils/common.py:1724-1755), so ``total_mib``
  below is what those rules compare against their 20/35/60/90/160 GiB thresholds.
* ``usable_gb`` — what ``torch.cuda.mem_get_info`` reports free on an idle GPU (the CUDA
  context already subtracted).  The log's ``Load weight begin. avail mem=`` is this figure
  minus NCCL / custom all-reduce buffers.

Capabilities matter for remedies: SM86 (A6000, 3090) has no FP8 tensor cores and FA3 needs
SM90, so e.g. ``--kv-cache-dtype fp8_e4m3`` or ``--attention-backend fa3`` are not offered there.

``auto`` reads the real GPUs through NVML (nvidia-ml-py) or torch, imported only when asked.

When the log itself names its machine (nvidia-smi's table, ``python -m sglang.check_env``, torch's
capability warning, ``nvidia-smi topo -m``), the remedies use that GPU instead of the profile's
(``for_diagnosis``, below): its SM decides which attention backends are offered, its memory the
defaults a step starts from, its links whether NCCL's P2P switch is advice.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any

DEFAULT_PROFILE = "a6000x2"


@dataclass(frozen=True)
class GPUProfile:
    name: str  # "a6000x2"
    gpu_name: str  # "NVIDIA RTX A6000"
    count: int  # 2
    total_gb: float  # per GPU, GiB as torch / nvidia-smi report it
    usable_gb: float  # free on an idle GPU (torch.cuda.mem_get_info)
    compute_capability: tuple[int, int]  # (8, 6)
    nvlink: bool
    fp8: bool  # FP8 tensor cores (SM89+)
    fa3: bool  # FlashAttention 3 (SM90)
    # "log" when the GPU's model / SM / links are the log's own (``with_machine``), not an assumed profile's
    source: str = "profile"

    @property
    def total_mib(self) -> int:
        """The capacity SGLang's default rules use (nvidia-smi memory.total, MiB)."""
        return int(round(self.total_gb * 1024))

    def to_json(self) -> dict[str, Any]:
        # *_gib are the names; total_gb / usable_gb are the same GiB figures under their old names
        return {
            "name": self.name, "gpu_name": self.gpu_name, "count": self.count,
            "total_gib": round(self.total_gb, 3), "usable_gib": self.usable_gb,
            "total_gb": round(self.total_gb, 3), "usable_gb": self.usable_gb, "total_mib": self.total_mib,
            "compute_capability": list(self.compute_capability), "nvlink": self.nvlink,
            "fp8": self.fp8, "fa3": self.fa3,
        }


# One GPU of each kind; count variants come from an "xN" suffix.  total_gb is the vendor's
# nvidia-smi memory.total in MiB / 1024 (A6000: 49140 MiB, L40S: 46068 MiB, H100 SXM: 81559 MiB).
# usable_gb: about 0.5 GiB less (the CUDA context), as measured in the seed log: A6000 pre-load
# free 46.79 GiB after 0.63 GiB of distributed init.
_BASE: dict[str, GPUProfile] = {
    "a6000": GPUProfile("a6000", "NVIDIA RTX A6000", 1, 49140 / 1024, 47.5, (8, 6), False, False, False),
    "a100-40": GPUProfile("a100-40", "NVIDIA A100-SXM4-40GB", 1, 40.0, 39.4, (8, 0), True, False, False),
    "a100-80": GPUProfile("a100-80", "NVIDIA A100-SXM4-80GB", 1, 80.0, 79.2, (8, 0), True, False, False),
    "h100-80": GPUProfile("h100-80", "NVIDIA H100 80GB HBM3", 1, 81559 / 1024, 79.1, (9, 0), True, True, True),
    "l40s": GPUProfile("l40s", "NVIDIA L40S", 1, 46068 / 1024, 44.4, (8, 9), False, True, False),
    "rtx3090": GPUProfile("rtx3090", "NVIDIA GeForce RTX 3090", 1, 24.0, 23.5, (8, 6), False, False, False),
    "rtx4090": GPUProfile("rtx4090", "NVIDIA GeForce RTX 4090", 1, 24564 / 1024, 23.5, (8, 9), False, True, False),
}
_ALIASES = {
    "rtx-a6000": "a6000", "a100": "a100-80", "a100-40gb": "a100-40", "a100-80gb": "a100-80",
    "h100": "h100-80", "3090": "rtx3090", "4090": "rtx4090", "l40": "l40s",
}
_COUNT = re.compile(r"^(?P<base>.+?)x(?P<n>-?\d+)$")
# A custom capacity: per-GPU memory as nvidia-smi (MiB) or torch (GiB) reports it, times a count.
_CAPACITY = re.compile(r"^(?P<size>\d+(?:\.\d+)?)(?P<unit>mib|gib|gb|mb|g|m)(?:x(?P<n>-?\d+))?$")
_MAX_COUNT = 1024


def profile_names() -> list[str]:
    """Names accepted by get_profile (each also takes an xN count suffix, e.g. h100-80x8)."""
    return ["a6000x2", *sorted(_BASE), "auto"]


def describe_choices() -> str:
    """One line for help texts and errors: every way to name the GPUs."""
    return (f"one of {', '.join(sorted(_BASE))} with an optional xN count (e.g. h100-80x8); "
            "a custom per-GPU capacity such as 23034MiBx4 or 48GiBx2; or auto")


def get_profile(name: str, sm: str | None = None) -> GPUProfile:
    """The named profile or custom capacity; "auto" reads this machine's GPUs.

    ``sm`` ("8.6") sets the compute capability (a custom capacity has none otherwise).
    ValueError with a one-line message when the name is not understood.
    """
    key = (name or DEFAULT_PROFILE).strip().lower()
    cc = parse_sm(sm) if sm else None
    if key == "auto":
        found = detect()
        return _with_sm(found, cc) if cc else found
    custom = _CAPACITY.match(key)
    if custom:
        return _custom(name, custom, cc)
    count = 1
    m = _COUNT.match(key)
    if m and (m.group("base") in _BASE or m.group("base") in _ALIASES):
        key, count = m.group("base"), int(m.group("n"))
        _check_count(name, count)
    key = _ALIASES.get(key, key)
    if key not in _BASE:
        raise ValueError(f"--gpus {name}: unknown GPU profile; use {describe_choices()}")
    base = _BASE[key]
    out = replace(base, name=key if count == 1 else f"{key}x{count}", count=count)
    return _with_sm(out, cc) if cc else out


def _check_count(name: str, count: int) -> None:
    if count < 1:
        raise ValueError(f"--gpus {name}: GPU count must be >= 1")
    if count > _MAX_COUNT:
        raise ValueError(f"--gpus {name}: GPU count must be <= {_MAX_COUNT}")


def _custom(name: str, m: re.Match, cc: tuple[int, int] | None) -> GPUProfile:
    unit = m.group("unit")
    if unit in ("gb", "mb", "g", "m"):
        raise ValueError(f"--gpus {name}: say MiB (as nvidia-smi prints memory.total) or GiB, "
                         f"e.g. 23034MiBx4 or 48GiBx2")
    size = float(m.group("size"))
    total_gb = size / 1024 if unit == "mib" else size
    count = int(m.group("n") or 1)
    _check_count(name, count)
    if total_gb < 1:
        raise ValueError(f"--gpus {name}: a GPU needs at least 1 GiB (got {total_gb:.2f} GiB)")
    cc = cc or (0, 0)  # unknown unless --gpu-sm says: no FP8 / FA3 is claimed
    fp8, fa3 = _capabilities(cc) if cc != (0, 0) else (False, False)
    label = f"{m.group('size')}{'MiB' if unit == 'mib' else 'GiB'}"
    return GPUProfile(f"{label}x{count}" if count > 1 else label,
                      f"custom {total_gb:.2f} GiB GPU" + (f" (SM{cc[0]}{cc[1]})" if cc != (0, 0) else ""),
                      count, total_gb, round(max(total_gb - _CUDA_CONTEXT_GB, 0.5), 2), cc, False, fp8, fa3)


def parse_sm(text: str) -> tuple[int, int]:
    """'8.6' / '86' / 'sm86' / 'sm_90' -> (8, 6); ValueError naming --gpu-sm otherwise."""
    t = str(text).strip().lower().removeprefix("sm").lstrip("_")
    m = re.fullmatch(r"(\d{1,2})\.(\d)|(\d)(\d)|(\d{2})(\d)", t)
    if not m:
        raise ValueError(f"--gpu-sm {text}: expected a compute capability such as 8.6, 8.9 or 9.0")
    major, minor = [int(g) for g in m.groups() if g is not None]
    if not 3 <= major <= 20:
        raise ValueError(f"--gpu-sm {text}: compute capability {major}.{minor} is not a CUDA GPU's")
    return major, minor


def _with_sm(p: GPUProfile, cc: tuple[int, int]) -> GPUProfile:
    fp8, fa3 = _capabilities(cc)
    return replace(p, compute_capability=cc, fp8=fp8, fa3=fa3)


def _capabilities(cc: tuple[int, int]) -> tuple[bool, bool]:
    """(fp8, fa3) for a compute capability: FP8 tensor cores from SM89, FA3 on SM90 only."""
    return cc >= (8, 9), cc[0] == 9


def detect() -> GPUProfile:
    """This machine's GPUs via NVML, else torch.  ValueError when neither sees a GPU."""
    for reader in (_detect_nvml, _detect_torch):
        try:
            found = reader()
        except Exception:  # noqa: BLE001 - a missing/broken driver just means "try the next"
            found = None
        if found is not None:
            return found
    raise ValueError("--gpus auto: no GPU found (neither NVML nor torch sees one); name a profile instead")


def _detect_nvml() -> GPUProfile | None:
    import pynvml  # nvidia-ml-py, optional

    pynvml.nvmlInit()
    try:
        n = pynvml.nvmlDeviceGetCount()
        if n == 0:
            return None
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        name = pynvml.nvmlDeviceGetName(handles[0])
        name = name.decode() if isinstance(name, bytes) else str(name)
        totals = [pynvml.nvmlDeviceGetMemoryInfo(h).total for h in handles]
        frees = [pynvml.nvmlDeviceGetMemoryInfo(h).free for h in handles]
        cc = tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handles[0]))
        nvlink = False
        try:
            nvlink = bool(pynvml.nvmlDeviceGetNvLinkState(handles[0], 0))
        except Exception:  # noqa: BLE001 - no NVLink support on this GPU
            nvlink = False
    finally:
        pynvml.nvmlShutdown()
    fp8, fa3 = _capabilities(cc)  # type: ignore[arg-type]
    # SGLang takes the minimum over all GPUs (get_device_memory_capacity)
    return GPUProfile("auto", name, n, round(min(totals) / 2**30, 2), round(min(frees) / 2**30, 2),
                      cc, nvlink, fp8, fa3)  # type: ignore[arg-type]


def _detect_torch() -> GPUProfile | None:
    import torch  # optional, only for --gpus auto

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return None
    n = torch.cuda.device_count()
    props = torch.cuda.get_device_properties(0)
    free = min(torch.cuda.mem_get_info(i)[0] for i in range(n))
    total = min(torch.cuda.get_device_properties(i).total_memory for i in range(n))
    cc = (props.major, props.minor)
    fp8, fa3 = _capabilities(cc)
    return GPUProfile("auto", props.name, n, round(total / 2**30, 2), round(free / 2**30, 2), cc, False, fp8, fa3)


# CUDA context an idle process holds before SGLang's own "Init ... begin" (about 0.5 GiB).
_CUDA_CONTEXT_GB = 0.5


def from_log(launch) -> GPUProfile | None:
    """A profile from a launch's own memory figures, when the log has them.

    ``Load weight begin. avail mem=`` is free memory after distributed init; adding back the
    init's ``mem usage`` gives what an idle GPU had free.  The GPU model, its capabilities and
    its links come from the launch's lines about the machine (``read_machine``) when it has
    them; otherwise they are left unknown ((0, 0), no FP8/FA3/NVLink claimed).
    """
    begin = launch.milestone("load_weights_begin") if launch is not None else None
    if begin is None or "avail_mem_gb" not in begin.figures:
        return None
    pre = float(begin.figures["avail_mem_gb"])
    init = launch.milestone("distributed_end") or launch.milestone("memory_baseline")
    init_gb = float(init.figures.get("mem_usage_gb", 0.0)) if init is not None else 0.0
    args = launch.server_args or {}
    count = int(args.get("tp_size") or 1) * int(args.get("pp_size") or 1)
    usable = round(pre + max(init_gb, 0.0), 2)
    measured = GPUProfile("from-log", "unknown (from the log's avail mem figures)", count,
                          round(usable + _CUDA_CONTEXT_GB, 2), usable, (0, 0), False, False, False)
    machine = read_machine(list(getattr(launch, "machine_lines", None) or []))
    # the avail mem figures are measured on this GPU: they stay; the machine lines add what the
    # figures cannot say (its model, SM, links), unless their memory contradicts the figures
    if machine.memory_gb is not None and usable > machine.memory_gb * (1 + _MEMORY_SPREAD):
        machine = replace(machine, model=None, sm=None, memory_gb=None, disagreements=machine.disagreements + (
            f"the log's free memory {usable:g} GB is more than its GPU's {machine.memory_gb:g} GiB",))
    return replace(with_machine(measured, replace(machine, memory_gb=None)) or measured, name="from-log")


# -- the machine the log names ---------------------------------------------------------------
#
# The lines a log holds about its machine (diagnose/hardware.py: nvidia-smi's table, torch's
# capability warnings, ``python -m sglang.check_env``, ``nvidia-smi topo -m``, torch's OOM
# capacity, SGLang's own "lacks GPU P2P capability" line) say which GPU failed, and a fix is for
# that GPU, not for the ``--gpus`` profile's.  Each line is read on its own so that two lines that
# disagree (two GPU models, two compute capabilities, a memory figure the model cannot have) are
# seen: that fact stays unknown, and the profile keeps what it had.  The log's text only selects
# among gpu_specs.json's entries (the name shown is the table's, never the log's) and gives
# numbers that pass range checks (docs/CONTRACT.md "Trust").

# how far two memory figures of one GPU may differ (nominal 80 GB, nvidia-smi 79.6 GiB, torch 79.1 GiB)
_MEMORY_SPREAD = 0.12
_SM_RANGE = (30, 200)
_MEMORY_RANGE_GB = (1.0, 1024.0)


@dataclass(frozen=True)
class LogMachine:
    """What a log's lines agree on about its machine; None where they say nothing or disagree."""

    model: str | None = None  # gpu_specs.json's entry name ("H100")
    sm: int | None = None  # 86
    memory_gb: float | None = None  # per GPU
    link: str | None = None  # "nvlink" / "pcie" (SGLang's no-P2P line counts as pcie)
    platform: str | None = None  # cuda / rocm / npu / xpu / jetson
    count: int | None = None  # GPUs check_env lists ("GPU 0,1: ...")
    disagreements: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        """The log names the GPU (its model or its SM) or how the GPUs are linked."""
        return self.model is not None or self.sm is not None or self.link is not None


def _one(values: list, what: str, disagreements: list[str]):
    """The value every line agrees on; None (and a note) when they disagree."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) > 1:
        disagreements.append(f"the log's lines name {len(distinct)} different {what} "
                             f"({', '.join(str(v) for v in distinct[:3])}): left unknown")
        return None
    return distinct[0] if distinct else None


def _memory(figures: list[float], disagreements: list[str]) -> float | None:
    """The smallest of a GPU's memory figures when they agree within the usual spread (SGLang
    sizes for the smallest GPU); None when one contradicts another."""
    if not figures:
        return None
    low, high = min(figures), max(figures)
    if high > low * (1 + _MEMORY_SPREAD):
        disagreements.append(f"the log's memory figures for one GPU disagree ({low:g} and {high:g} GiB): "
                             "left unknown")
        return None
    return low


@functools.lru_cache(maxsize=256)
def _line_facts(text: str):
    """What one line says of the machine (diagnose/hardware.read_line into a Hardware of its own),
    read once: every diagnosis of a log reads the same machine lines (only read, never changed)."""
    from sglang_doctor.diagnose import hardware as facts

    hw = facts.Hardware()
    facts.read_line(hw, text)
    return hw


def read_machine(lines) -> LogMachine:
    """The machine facts ``lines`` agree on (each line read on its own by diagnose/hardware.py)."""
    from sglang_doctor.diagnose import hardware as facts

    models, sms, memories, links, platforms, counts = [], [], [], [], [], []
    for text in lines:
        hw = _line_facts(text)
        if not hw.facts:
            continue
        entry = facts.lookup(str(hw.get("gpu"))) if hw.get("gpu") else None
        if entry is not None:
            models.append(entry["name"])
        sm = hw.get("sm")
        if isinstance(sm, int) and _SM_RANGE[0] <= sm <= _SM_RANGE[1]:
            sms.append(sm)
        gb = hw.get("memory_gb")
        if isinstance(gb, (int, float)) and _MEMORY_RANGE_GB[0] <= gb <= _MEMORY_RANGE_GB[1]:
            memories.append(float(gb))
        link = hw.get("link")
        if link in ("nvlink", "pcie", "no_p2p"):
            links.append("pcie" if link == "no_p2p" else link)
        if hw.get("platform") in ("cuda", "rocm", "npu", "xpu", "jetson"):
            platforms.append(hw.get("platform"))
        if isinstance(hw.get("gpu_count"), int) and 1 <= hw.get("gpu_count") <= _MAX_COUNT:
            counts.append(hw.get("gpu_count"))
    notes: list[str] = []
    model = _one(models, "GPU models", notes)
    sm = _one(sms, "compute capabilities", notes)
    memory = _memory(memories, notes)
    if model is not None and memory is not None:
        sizes = next((e["memory_gb"] for _rx, e in facts.table() if e["name"] == model), [])
        if sizes and not any(abs(memory - s) <= s * _MEMORY_SPREAD for s in sizes):
            notes.append(f"the log's memory figure {memory:g} GiB is not a {model}'s ({sizes} GB): left unknown")
            memory = None
    # a mixed topology (some pairs on NVLink, some not) is no one answer
    link = _one(links, "GPU links", notes)
    platform = _one(platforms, "platforms", notes)
    # check_env lists GPUs of one model on one line ("GPU 0,1: ..."): several lines are several models
    count = counts[0] if len(counts) == 1 else None
    return LogMachine(model, sm, memory, link, platform, count, tuple(notes))


def with_machine(base: GPUProfile | None, machine: LogMachine) -> GPUProfile | None:
    """``base`` (the ``--gpus`` profile, or None) with what the log's machine says in place of its
    own facts; ``base`` itself when the log names no GPU and no link (the remedies as before)."""
    if not machine.known:
        return base
    if base is None:
        base = GPUProfile("from-log", "unknown", 1, 0.0, 0.0, (0, 0), False, False, False)
    out = base
    cc = out.compute_capability
    if machine.sm is not None:
        cc = (machine.sm // 10, machine.sm % 10)
    elif machine.model is not None or machine.platform not in (None, "cuda"):
        cc = (0, 0)  # an entry without an SM (an AMD part): not CUDA
    if cc != out.compute_capability or machine.model is not None:
        fp8, fa3 = _capabilities(cc) if cc != (0, 0) else (False, False)
        out = replace(out, compute_capability=cc, fp8=fp8, fa3=fa3, gpu_name=_label(machine, cc))
    if machine.memory_gb is not None:
        out = replace(out, total_gb=machine.memory_gb,
                      usable_gb=round(max(machine.memory_gb - _CUDA_CONTEXT_GB, 0.5), 2))
    if machine.link is not None:
        out = replace(out, nvlink=machine.link == "nvlink")
    if machine.count is not None:
        out = replace(out, count=machine.count)
    return replace(out, source="log", name="from-log")


# The SMs an attention backend's kernels run on, where SGLang's own check (or the library's) says:
# FA3 "requires SM>=80 and SM<=90" (0.5.23 layers/attention/attention_registry.py
# create_flashattention_v3_backend: major 8 without MLA, or 9); FlashInfer's CUDA kernels are built
# for SM75 and up (its docs; remedy/guarded.py's tradeoff); Triton's attention runs on any CUDA GPU.
_BACKEND_SM = {"fa3": (80, 99), "flashinfer": (75, 999)}  # lowest and highest SM, both included


def refuses_backend(profile: GPUProfile | None, backend: str) -> bool:
    """The GPU the log itself names cannot run ``backend``'s attention kernels.  False when the
    SM is not the log's (an assumed ``--gpus`` profile) or unknown: unknown is no refusal."""
    if profile is None or getattr(profile, "source", "profile") != "log" or profile.compute_capability == (0, 0):
        return False
    span = _BACKEND_SM.get(backend)
    if span is None:
        return False
    major, minor = profile.compute_capability
    return not span[0] <= major * 10 + minor <= span[1]


def _label(machine: LogMachine, cc: tuple[int, int]) -> str:
    sm = f" (SM{cc[0]}{cc[1]})" if cc != (0, 0) else ""
    if machine.model is not None:
        return f"{machine.model}{sm}, as the log shows"
    return f"a GPU{sm}, as the log shows"


def _diagnosis_lines(diagnosis) -> list[str]:
    """The log's lines about the machine a diagnosis has: its launch's kept machine lines and the
    incident's own lines, without a traceback's code (diagnose/evidence.py ``machine``)."""
    inc = diagnosis.incident
    own = [line.text for line in inc.lines
           if not (inc.kind == "traceback" and (line.text[:1].isspace() or 'File "' in line.text))]
    launch = diagnosis.launch
    return (list(launch.machine_lines) if launch is not None else []) + own


def for_diagnosis(diagnosis, base: GPUProfile | None, warnings: list[str] | None = None) -> GPUProfile | None:
    """The GPU profile a diagnosis's remedies use: ``base`` with the facts its log gives about the
    machine (``with_machine``); what the log's lines disagree on is said in ``warnings``."""
    try:
        machine = read_machine(_diagnosis_lines(diagnosis))
    except (AttributeError, TypeError):
        return base
    if warnings is not None:
        warnings.extend(n for n in machine.disagreements if n not in warnings)
    return with_machine(base, machine)


_BACKEND_FLAGS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend")


def refuses_change(profile: GPUProfile | None, changes: dict | None) -> bool:
    """A change that sets an attention backend the log's own GPU cannot run (``refuses_backend``)."""
    return any(isinstance(changes.get(flag), str) and refuses_backend(profile, changes[flag])
               for flag in _BACKEND_FLAGS) if changes else False
