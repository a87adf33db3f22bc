"""Which CUDA toolkit's compiler knows a GPU architecture: the advice of a JIT build that nvcc or
ptxas refused because the architecture was not theirs (``needs_human {arch: "{arch}"}`` in a rule,
remedies.needs_human).

Each nvcc / ptxas knows the architectures of its own CUDA release: a GPU newer than the toolkit
(``Unsupported gpu architecture 'compute_120a'`` from CUDA 12.4) needs a newer one, and CUDA 13
dropped the oldest ones (offline compilation for Maxwell, Pascal and Volta, sm_50 to sm_72), so
the same message from a CUDA 13 nvcc on a V100 needs an older toolkit, not a newer one.

Sources: the CUDA Toolkit release notes (sm_89 and sm_90 in 11.8, the ``a`` targets in 12.0,
sm_100 / sm_101 / sm_120 in 12.8, sm_103 / sm_121 and the ``f`` family targets in 12.9, sm_101
renamed sm_110 in 13.0; 13.0 removed sm_50 to sm_72).
"""

from __future__ import annotations

import re


# the first CUDA release whose nvcc / ptxas knows an architecture (its number, no suffix)
FIRST_CUDA: dict[int, str] = {
    50: "6.0", 52: "6.5", 53: "7.0", 60: "8.0", 61: "8.0", 62: "8.0", 70: "9.0", 72: "10.0",
    75: "10.0", 80: "11.0", 86: "11.1", 87: "11.4", 89: "11.8", 90: "11.8",
    100: "12.8", 101: "12.8", 120: "12.8", 103: "12.9", 121: "12.9", 110: "13.0",
}
# suffixed targets came later than their plain architecture
FIRST_CUDA_ACCEL = "12.0"  # sm_90a, the first "a" target
FIRST_CUDA_FAMILY = "12.9"  # sm_100f, sm_120f, ...
LAST_BEFORE_13 = 72  # CUDA 13 no longer compiles for sm_72 and older
RENAMED_IN_13 = 101  # sm_101 (Thor) is sm_110 from CUDA 13.0

_ARCH = re.compile(r"^(?:compute|sm)_(\d{2,3})([af]?)$")


def first_cuda(arch: str) -> str | None:
    """The first CUDA release that compiles for ``arch`` (``sm_120a``, ``compute_90a``), or None
    for an architecture this table does not know (then nothing is claimed about it)."""
    m = _ARCH.match(arch.strip())
    if m is None:
        return None
    number, suffix = int(m.group(1)), m.group(2)
    base = FIRST_CUDA.get(number)
    if base is None:
        return None
    if suffix == "f":
        return max(base, FIRST_CUDA_FAMILY, key=_version_key)
    if suffix == "a":
        return max(base, FIRST_CUDA_ACCEL, key=_version_key)
    return base


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def toolkit_advice(arch: str, tool: str = "nvcc") -> str | None:
    """One sentence: which toolkit's ``tool`` knows ``arch``; None when the table does not know it."""
    m = _ARCH.match(arch.strip())
    first = first_cuda(arch)
    if m is None or first is None:
        return None
    if int(m.group(1)) == RENAMED_IN_13:
        return f"{arch} is known to the {tool} of CUDA 12.8 and 12.9 only (CUDA 13 calls it sm_110)"
    if int(m.group(1)) <= LAST_BEFORE_13:
        return (f"{arch} is known to the {tool} of CUDA {first} to 12.9 only (CUDA 13 dropped sm_72 and "
                f"older): a toolkit in that range, matching torch's CUDA")
    return f"{arch} needs the {tool} of CUDA {first} or newer"
