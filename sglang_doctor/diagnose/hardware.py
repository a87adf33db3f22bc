"""What a log's text says about the machine: the GPU's model, compute capability and memory, how
many GPUs, the platform, how they are linked.  Each fact keeps the line it came from; what the
text does not say stays unknown (``None``), never a default.

The lines read are the ones SGLang, torch and the tools people paste print about the machine:

- torch's warning for a GPU its wheel has no kernels for (torch/cuda/__init__.py
  ``_check_cubins``: "<name> with CUDA capability sm_120 is not compatible with the current
  PyTorch installation."; 2.7+ ``_warn_unsupported_code``: "Found GPU0 <name> which is of compute
  capability (CC) 12.0."; before it ``old_gpu_warn``: "Found GPU0 <name> which is of cuda
  capability 3.7.") -- the device, its SM, and that this torch lacks its arch;
- SGLang's ``python -m sglang.check_env`` (check_env.py ``get_device_info``: "GPU 0,1: <name>",
  "GPU 0,1 Compute Capability: 8.6"; the HIP / Ascend checkers' "ROCM available", "Ascend Driver
  Version"; "NVIDIA Topology:" with nvidia-smi's link matrix);
- nvidia-smi's table (a row "|   0  NVIDIA GeForce RTX 4090   Off |", its memory "1MiB / 24564MiB")
  and ``nvidia-smi topo -m`` (``NV12`` between two GPUs is NVLink; ``PIX`` / ``PXB`` / ``PHB`` /
  ``NODE`` / ``SYS`` only is PCIe);
- torch's caching allocator's out-of-memory message ("GPU 0 has a total capacity of 23.55 GiB",
  before torch 2.1 "(GPU 0; 23.69 GiB total capacity");
- SGLang's fused-MoE config lookup ("Config file not found at .../E=64,N=1280,device_name=
  NVIDIA_H100_80GB_HBM3.json": fused_moe_triton_config.py, the device name with ``_`` for spaces);
- SGLang's start-up milestones ("Load weight begin. avail mem=23.07 GB": the free memory of a GPU
  before the weights, close to its size; "Load weight end. ... mem usage=14.53 GB": the weights'
  share on one GPU) and the launch's ``server_args`` (``tp_size``, ``pp_size``, ``device``).

The device name is matched against a table from the vendors' public specifications
(``gpu_specs.json``) only where a line names a device: a bare ``T4`` elsewhere (a model's name,
a path) is no GPU.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_SPECS = Path(__file__).with_name("gpu_specs.json")


@dataclass(frozen=True)
class Fact:
    name: str  # gpu / sm / memory_gb / gpu_count / platform / torch_lacks_arch / link / weights_gb / free_gb
    value: object
    line: str  # the text it came from (cut to 160 characters)


@dataclass
class Hardware:
    """The facts one text gives about its machine, at most one of each name (the first seen)."""

    facts: dict[str, Fact] = field(default_factory=dict)

    def add(self, name: str, value: object, line: str) -> None:
        if value is not None and name not in self.facts:
            self.facts[name] = Fact(name, value, line.strip()[:160])

    def get(self, name: str):
        fact = self.facts.get(name)
        return fact.value if fact is not None else None

    def says(self, *names: str) -> str:
        """How the text shows these facts, for an explanation ("the log shows an NVIDIA T4 (SM75)")."""
        shown = [self.facts[n] for n in names if n in self.facts]
        if not shown:
            return ""
        return "the log's " + "; ".join(repr(" ".join(line.split())) for line in dict.fromkeys(f.line for f in shown))

    def gpu_label(self) -> str:
        gpu, sm, platform = self.get("gpu"), self.get("sm"), self.get("platform")
        label = gpu or {"rocm": "an AMD GPU (ROCm)", "npu": "an Ascend NPU", "xpu": "an Intel GPU (XPU)",
                        "jetson": "a Jetson module"}.get(platform or "", "a GPU")
        return f"{label} (SM{sm})" if sm else label


@functools.lru_cache(maxsize=1)
def table() -> tuple[tuple[re.Pattern, dict], ...]:
    """The GPU table (gpu_specs.json), each entry with its name pattern compiled (case-blind)."""
    gpus = json.loads(_SPECS.read_text())["gpus"]
    return tuple((re.compile(g["pattern"], re.IGNORECASE), g) for g in gpus)


def lookup(device: str) -> dict | None:
    """The table's entry for a device name as a tool printed it, or None."""
    for rx, entry in table():
        if rx.search(device):
            return entry
    return None


# -- the lines that name the machine --------------------------------------------------------

_TORCH_INCOMPATIBLE = re.compile(r"(?P<device>[\w .()-]{3,60}?) with CUDA capability sm_(?P<sm>\d{2,3}) is not "
                                 r"compatible with the current PyTorch installation")
_TORCH_FOUND = re.compile(r"Found GPU\d+ (?P<device>[\w .()-]{3,60}?) which is of (?:cuda|compute) capability "
                          r"(?:\(CC\) )?(?P<major>\d{1,2})\.(?P<minor>\d)")
_CHECK_ENV_GPU = re.compile(r"^\s*GPU (?P<ids>\d+(?:,\d+)*): (?P<device>[^\n]{3,60})$")
_CHECK_ENV_CC = re.compile(r"^\s*GPU (?P<ids>\d+(?:,\d+)*) Compute Capability: (?P<major>\d{1,2})\.(?P<minor>\d)")
_SMI_ROW = re.compile(r"^\|\s+(?P<id>\d+)\s+(?P<device>(?:NVIDIA|Tesla|Quadro|GeForce)[\w .-]{2,40}?)\s+(?:On|Off)\s+\|")
_SMI_MEM = re.compile(r"\|\s*\d+MiB\s*/\s*(?P<mib>\d{4,7})MiB\s*\|")
_DEVICE_NAME = re.compile(r"device_name=(?P<device>[A-Za-z][\w-]{2,60}?)(?:[,.]|\.json)")


def _word(word: str) -> str:
    """``\\b`` and ``word`` (which starts with a word character), with the boundary said by a
    lookbehind after the word: a pattern whose branches open with a literal lets ``re`` skip to
    the positions holding their first characters, one opening with ``\\b`` makes it try every
    position (the same matches; a 430-character request record that holds "GPU": 35 -> 4 us
    for the ROCm pattern)."""
    return f"{re.escape(word)}(?<!\\w{re.escape(word)})"


_VENDOR_NAME = re.compile(rf"(?P<device>(?:{_word('NVIDIA')}|{_word('Tesla')}|{_word('AMD Instinct')})[ _]"
                          r"(?:GeForce[ _])?[A-Z][\w-]{1,12}(?:[ _][\w-]{1,10}){0,3})")
_CAPACITY = re.compile(r"GPU (?P<id>\d+) has a total capacity of (?P<gb>[\d.]+) ?GiB|"
                       r"\(GPU (?P<id2>\d+); (?P<gb2>[\d.]+) ?GiB total capacity")
# SGLang's own start-up lines that tell the GPU's generation or its links, in every launch on such a
# machine: load_model_utils.py (model_runner.py before 0.5.2x) ``maybe_downgrade_dtype_for_legacy_gpu``
# "Compute capability below sm80. Use float16 due to lack of bfloat16 support."; custom_all_reduce_utils.py
# "... is disabled because your platform lacks GPU P2P capability or P2P test failed." and "... not
# supported on more than two PCIe-only GPUs." (custom / quick all-reduce, vLLM's wording in 0.4.x);
# arg_groups/overrides.py "Setting KV cache dtype to ... for DeepSeek DSA on SM{major} device."
_BELOW_SM80 = re.compile(r"Compute capability below sm80")
_NO_P2P = re.compile(r"lacks GPU P2P capability")
_PCIE_ONLY = re.compile(r"more than two PCIe-only GPUs")
_SM_MAJOR = re.compile(r"DeepSeek DSA on SM(?P<major>\d{1,2}) device")
_TOPO_ROW = re.compile(r"^\s*GPU\d+\s+(?:(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)\s+){2,}")
_PLATFORMS = (
    ("rocm", re.compile(rf"{_word('ROCM available')}\b|\+rocm\d|{_word('gfx9')}\d\w\b|{_word('HIP version')}\b|"
                        rf"{_word('hipErr')}\w+|{_word('ROCm')}\b")),
    ("npu", re.compile(rf"{_word('torch_npu')}\b|{_word('Ascend')}\b|{_word('910B')}\d?\b|" + _word("device='npu'"))),
    ("xpu", re.compile(_word("device='xpu'") + rf"|{_word('intel_extension_for_pytorch')}\b|{_word('XPU')}\b")),
    ("jetson", re.compile(rf"{_word('Jetson')}\b|{_word('tegra')}\b|{_word('L4T')}\b")),
)


_VENDOR = re.compile(r"\b(?:NVIDIA|Tesla|Quadro|GeForce|AMD|Instinct|Radeon)\b")


def _device(hw: Hardware, device: str, line: str, sm: int | None = None) -> None:
    """Record a device name and what the table knows of it (its SM, memory, links, platform);
    an SM the line itself prints wins over the table's."""
    device = re.sub(r"\s+", " ", device.replace("_", " ")).strip()
    vendor = _VENDOR.search(device)
    if vendor is not None:
        device = device[vendor.start():]  # a log prefix before the name ("WARNING 01-02 NVIDIA ...")
    entry = lookup(device)
    hw.add("gpu", device, line)
    if sm is not None:
        hw.add("sm", sm, line)
    if entry is None:
        return
    hw.add("sm", entry.get("sm"), line)
    hw.add("platform", entry["platform"], line)
    named = re.search(r"(\d{2,3}) ?GB\b", device)  # "A100-SXM4-80GB", "H100 80GB HBM3"
    sizes = entry["memory_gb"]
    if named and int(named.group(1)) in sizes:
        hw.add("memory_gb", float(named.group(1)), line)
    elif len(sizes) == 1:
        hw.add("memory_gb", float(sizes[0]), line)
    hw.add("nvlink_capable", entry["nvlink"], line)


# every line read_line reads holds one of these (a cheap test before the patterns).  "npu" / "xpu"
# where no letter runs into them is said by a lookbehind AFTER the word ("npu(?<![A-Za-z]npu)"), not
# before it: a pattern whose every branch opens with a literal lets ``re`` skip to the positions
# holding one of their first characters, and one opening with an assertion makes it try every
# position (the same matches; on the 8,400 lines bench/run.py's 1 GB log hands over, 82 -> 16 ms)
_HINT = re.compile(r"capability|GPU|NVIDIA|Tesla|AMD|MiB|device_name|ROCM|ROCm|rocm|gfx9|HIP|hipErr|npu(?<![A-Za-z]npu)|"
                   r"Ascend|910B|xpu(?<![A-Za-z]xpu)|XPU|intel_extension|Jetson|tegra|L4T|Instinct|DSA on SM")


# The literals of the lines above (as the block scanner searches them, case and all): the pipeline
# passes a line holding one to ``names_machine`` and keeps it for the launch (``KEEP`` at most).
# Each is long enough to be rare in a block: a short one ("GPU0 ", "Tesla") made the block search
# of bench/run.py's 1 GB log 10-25% slower (session 30, docs/PERFORMANCE.md), so torch's
# "Found GPU0 ..." is found by its capability words and nvidia-smi's table by its "Tesla X" names,
# and ``nvidia-smi topo -m``'s rows only where the scanner hands lines over anyway (its header's
# "CPU Affinity" passes).  The memory column is found by "MiB / " with its space, as nvidia-smi
# prints it ("%5dMiB / %5dMiB"): the native pass tests a literal under six bytes at every
# position ("MiB /" cost 0.016 ns/byte of its 0.58, session 31), a longer one at hashed windows.
LITERALS: tuple[str, ...] = ("apability", "NVIDIA", "Tesla T", "Tesla V", "Tesla P", "Tesla K", "Tesla M", "Tesla A",
                             "Instinct", "device_name=", "MiB / ", "total capacity", "ROCM available", "torch_npu",
                             "Ascend", "Jetson", "CPU Affinity", "PCIe-only GPUs", "DeepSeek DSA on SM")
KEEP = 64
# a line longer than this is a record of a request or a settings dump, not a line about the machine
# (torch's longest, the "sm_120 is not compatible" warning, is about 400 characters): the hint
# pattern has no match to stop at in a 12 KB request record and would scan it whole (session 31)
LONGEST = 2000


def names_machine(text: str) -> bool:
    """The line may say something about the machine (a cheap test before ``read_line``'s patterns;
    "npu" / "xpu" only where no letter runs into them: every batch line's "input throughput" held
    "npu", and 64 of them (``KEEP``) pushed a serving log's later machine lines out);
    a traceback's frame line or indented source line is code, whose names (``torch_npu.npu_format_cast``)
    say what it can call, not which machine ran it; a line over ``LONGEST`` is a record or a dump."""
    if text[:1].isspace() or len(text) > LONGEST or 'File "' in text:
        return False
    return bool(_HINT.search(text))


# _HINT's words as plain literals: a line _HINT matches holds one of them ("npu" / "xpu" with no
# letter before them, which ``names_machine`` then tells)
_HINT_WORDS = ("capability", "GPU", "NVIDIA", "Tesla", "AMD", "MiB", "device_name", "ROCM", "ROCm", "rocm", "gfx9",
               "HIP", "hipErr", "npu", "Ascend", "910B", "xpu", "XPU", "intel_extension", "Jetson", "tegra", "L4T",
               "Instinct", "DSA on SM")


def naming_lines(texts: list[str]) -> list[int]:
    """The indexes of ``texts`` that ``names_machine`` says name the machine, in order.

    The lines the pipeline hands over (8,400 on bench/run.py's 1 GB log, 66 of them naming the
    machine) are searched together, joined, by the C extension's literal pass for _HINT's words
    (4-5 ms in all, where _HINT line by line took 16-18 ms), and ``names_machine`` is asked only
    about the lines that hold one; without the extension, about every line."""
    matcher = _hint_matcher()
    if matcher is None or not texts:
        return [i for i, text in enumerate(texts) if names_machine(text)]
    joined = "\n".join(texts)
    data = joined.encode("utf-8", "surrogatepass")
    lengths = map(len, texts) if len(data) == len(joined) else [  # (a tqdm bar's blocks: 3 bytes a character)
        len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in texts]
    starts = list(itertools.accumulate(lengths, lambda at, n: at + n + 1, initial=0))  # (each text's first byte)
    # every batch line's "input" holds an "npu" a letter runs into, never _HINT's: blanked (the
    # same length, so the offsets stay; no other word of _HINT_WORDS can overlap "inpu"), so that
    # only the lines with another "npu" are asked about
    data = data.replace(b"inpu", b"i pu")
    pairs = matcher.scan(data, 0, len(data))[0]
    if not pairs:
        return []
    holding = sorted({bisect.bisect_right(starts, k) - 1 for k in memoryview(pairs).cast("q")[0::2]})
    return [i for i in holding if names_machine(texts[i])]


@functools.lru_cache(maxsize=1)
def _hint_matcher():
    """The C extension's literal pass over _HINT_WORDS, or None where it is not built."""
    try:
        from sglang_doctor.read import _native

        return _native.Matcher([word.encode() for word in _HINT_WORDS])
    except (ImportError, ValueError, TypeError, MemoryError):
        return None


def read_line(hw: Hardware, text: str) -> None:
    """Add what one line says about the machine."""
    if not _HINT.search(text):
        return
    # (the two torch patterns open with a lazy device name, tried at every position: a substring
    # test first keeps a 12 KB request record from costing milliseconds, session 31)
    if "capability sm_" in text and (m := _TORCH_INCOMPATIBLE.search(text)) is not None:
        _device(hw, m.group("device"), text, int(m.group("sm")))
        hw.add("torch_lacks_arch", True, text)
    elif "Found GPU" in text and (m := _TORCH_FOUND.search(text)) is not None:
        _device(hw, m.group("device"), text, int(m.group("major")) * 10 + int(m.group("minor")))
        hw.add("torch_lacks_arch", True, text)
    elif (m := _CHECK_ENV_CC.match(text)) is not None:
        hw.add("sm", int(m.group("major")) * 10 + int(m.group("minor")), text)
    elif (m := _CHECK_ENV_GPU.match(text)) is not None:
        _device(hw, m.group("device"), text)
        hw.add("gpu_count", len(m.group("ids").split(",")), text)
    elif (m := _SMI_ROW.match(text)) is not None:
        _device(hw, m.group("device"), text)
    elif (m := _DEVICE_NAME.search(text)) is not None and lookup(m.group("device").replace("_", " ")):
        _device(hw, m.group("device"), text)
    elif (m := _VENDOR_NAME.search(text)) is not None and lookup(m.group("device").replace("_", " ")):
        _device(hw, m.group("device"), text)
    if _BELOW_SM80.search(text):
        hw.add("pre_ampere", True, text)
    if (m := _SM_MAJOR.search(text)) is not None:
        hw.add("sm", int(m.group("major")) * 10, text)
    if _NO_P2P.search(text):
        hw.add("link", "no_p2p", text)
    elif _PCIE_ONLY.search(text):
        hw.add("link", "pcie", text)
    if (m := _SMI_MEM.search(text)) is not None:
        hw.add("memory_gb", round(int(m.group("mib")) / 1024, 1), text)
    if (m := _CAPACITY.search(text)) is not None:
        hw.add("memory_gb", float(m.group("gb") or m.group("gb2")), text)
    if _TOPO_ROW.match(text):
        hw.add("link", "nvlink" if re.search(r"\bNV\d+\b", text) else "pcie", text)
    for platform, rx in _PLATFORMS:
        if rx.search(text):
            hw.add("platform", platform, text)
            break


def _server_args(hw: Hardware, args: dict) -> None:
    """The launch's own settings: how many GPUs it spans on this node, its device."""
    def number(key: str) -> int | None:
        try:
            return int(str(args.get(key)).strip())
        except (TypeError, ValueError):
            return None
    tp, pp, nnodes = number("tp_size"), number("pp_size") or 1, number("nnodes") or 1
    if tp is not None:
        hw.add("gpus_per_model", tp * pp, f"server_args: tp_size={tp}, pp_size={pp}")
        hw.add("gpu_count", max(1, tp * pp // nnodes), f"server_args: tp_size={tp}, pp_size={pp}, nnodes={nnodes}")
    device = str(args.get("device") or "").strip("'\" ")
    if device in ("npu", "xpu", "hpu", "cpu"):
        hw.add("platform", device, f"server_args: device={device!r}")


def _gb(value) -> float | None:
    """A milestone's figure in GB, or None when it has none (or one that is not a positive number)."""
    try:
        gb = float(value)
    except (TypeError, ValueError):
        return None
    return gb if gb > 0 else None


def read(lines, server_args: dict | None = None, milestones=()) -> Hardware:
    """The facts the text's lines, the launch's ``server_args`` and its start-up milestones give."""
    hw = Hardware()
    for text in lines:
        read_line(hw, text)
    for ms in milestones:
        if ms.name == "load_weights_begin":
            hw.add("free_gb", _gb(ms.figures.get("avail_mem_gb")), ms.text or f"line {ms.line}")
        if ms.name == "load_weights_end":
            hw.add("weights_gb", _gb(ms.figures.get("mem_usage_gb")), ms.text or f"line {ms.line}")
    if server_args:
        _server_args(hw, server_args)
    return hw


# -- what the facts say of a GPU ------------------------------------------------------------

# The GPU generations SGLang's kernels leave out (the attention backends', the quantization and MoE
# kernels' own capability checks; sgl-kernel's wheels): before Ampere (SM < 80: no bf16 tensor
# cores, no FlashAttention 2/3, no FP8, Marlin and most of sgl-kernel's ops need SM80), and the
# consumer Blackwell parts (SM120/121: not SM100's tcgen05 / TMEM, so the SM100 paths of
# flashinfer / TRT-LLM / DeepGEMM / FA4 refuse them), and Jetson Thor (SM110), which few wheels build.
PRE_AMPERE = 80
CONSUMER_BLACKWELL = (120, 121)


def capability_gap(hw: Hardware) -> str | None:
    """Why this machine's GPU is one SGLang's kernels often have no code for, or None (unknown, or
    an SM they cover)."""
    sm, platform = hw.get("sm"), hw.get("platform")
    if hw.get("torch_lacks_arch"):
        return f"torch's own warning says this torch has no kernels for {hw.gpu_label()}"
    if platform in ("rocm", "npu", "xpu"):
        return f"the log shows {hw.gpu_label()}, a non-CUDA platform where SGLang's CUDA kernels do not run"
    if hw.get("pre_ampere") and not isinstance(sm, int):
        return ("SGLang's own start-up line says the GPU's compute capability is below SM80 (older than Ampere), "
                "which most of SGLang's kernels require")
    if isinstance(sm, int) and sm < PRE_AMPERE:
        return f"the log shows {hw.gpu_label()}, older than Ampere (SM80), which most of SGLang's kernels require"
    if sm in CONSUMER_BLACKWELL:
        return (f"the log shows {hw.gpu_label()}, a consumer Blackwell GPU: SM100's kernel paths (flashinfer, "
                "TRT-LLM, DeepGEMM) refuse it")
    if sm == 110 or platform == "jetson":
        return f"the log shows {hw.gpu_label()}, a Jetson module, which few kernel wheels are built for"
    return None
