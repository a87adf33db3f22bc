"""Hardware profiles: names, count suffixes, capabilities, profiles from a log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sglang_doctor.remedy import hardware
from sglang_doctor.pipeline import read_incidents

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_default_profile_is_two_a6000s_without_fp8_or_fa3():
    p = hardware.get_profile("a6000x2")
    assert (p.count, p.compute_capability, p.nvlink, p.fp8, p.fa3) == (2, (8, 6), False, False, False)
    assert 47.0 <= p.usable_gb <= 47.9 < p.total_gb
    # SGLang's capacity rules see nvidia-smi's 49140 MiB for an A6000
    assert abs(p.total_mib - 49140) <= 10


@pytest.mark.parametrize("name,count,cc,fp8,fa3", [
    ("h100-80x8", 8, (9, 0), True, True),
    ("h100x2", 2, (9, 0), True, True),
    ("a100-40", 1, (8, 0), False, False),
    ("a100-80x4", 4, (8, 0), False, False),
    ("l40s", 1, (8, 9), True, False),
    ("rtx3090x2", 2, (8, 6), False, False),
    ("4090", 1, (8, 9), True, False),
])
def test_named_profiles_and_count_suffix(name, count, cc, fp8, fa3):
    p = hardware.get_profile(name)
    assert (p.count, p.compute_capability, p.fp8, p.fa3) == (count, cc, fp8, fa3)


@pytest.mark.parametrize("bad", ["b300", "h100x0", "x2", ""])
def test_unknown_profile_is_a_value_error(bad):
    if bad == "":
        assert hardware.get_profile(bad).name == "a6000x2"  # empty means the default
        return
    with pytest.raises(ValueError, match="unknown GPU profile"):
        hardware.get_profile(bad)


def test_profile_names_lists_auto_and_default():
    names = hardware.profile_names()
    assert "auto" in names and "a6000x2" in names and "h100-80" in names


def test_auto_without_any_gpu_says_so(monkeypatch):
    # no NVML and no torch importable: a clear ValueError, not an ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ValueError, match="no GPU found"):
        hardware.get_profile("auto")


def test_module_import_does_not_pull_torch():
    import subprocess

    code = "import sys, sglang_doctor.remedy.hardware, sglang_doctor.remedy.planner; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_from_log_uses_avail_mem_figures_of_the_seed():
    launches, _ = read_incidents(FIXTURES / "seed" / "seed_full.log")
    p = hardware.from_log(launches[0])
    assert p is not None and p.count == 2  # tp_size=2 in the dump
    # Load weight begin avail 46.79 + distributed init mem usage 0.63
    assert p.usable_gb == pytest.approx(47.42, abs=0.01)
    assert p.compute_capability == (0, 0) and not p.fp8


def test_from_log_without_figures_is_none():
    launches, _ = read_incidents(FIXTURES / "startup" / "vllm_21348_qwen3_235b_fp8_tp4.log")
    assert all(hardware.from_log(l) is None for l in launches) or not launches
