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


@pytest.mark.parametrize("bad", ["b300", "x2", "a6000-48"])
def test_unknown_profile_lists_the_names(bad):
    with pytest.raises(ValueError, match="unknown GPU profile") as err:
        hardware.get_profile(bad)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"--gpus {bad}")
    for name in ("a6000", "h100-80", "rtx4090", "23034MiBx4", "auto"):
        assert name in message


def test_empty_name_is_the_default():
    assert hardware.get_profile("").name == "a6000x2"


@pytest.mark.parametrize("bad", ["a6000x0", "h100-80x0", "h100x-1", "48GiBx0"])
def test_a_zero_count_says_so(bad):
    with pytest.raises(ValueError, match="GPU count must be >= 1"):
        hardware.get_profile(bad)


@pytest.mark.parametrize("name, total_gib, count", [
    ("23034MiBx4", 23034 / 1024, 4),
    ("48GiBx2", 48.0, 2),
    ("80GiB", 80.0, 1),
    ("49140mib x2".replace(" ", ""), 49140 / 1024, 2),
])
def test_custom_capacity(name, total_gib, count):
    p = hardware.get_profile(name)
    assert (p.count, round(p.total_gb, 4)) == (count, round(total_gib, 4))
    assert p.usable_gb < p.total_gb  # the CUDA context is not free
    assert p.compute_capability == (0, 0) and not p.fp8 and not p.fa3  # unknown: nothing claimed
    assert p.to_json()["total_gib"] == round(total_gib, 3)


def test_custom_capacity_matches_the_named_profile_it_describes():
    named, custom = hardware.get_profile("a6000x2"), hardware.get_profile("49140MiBx2", sm="8.6")
    assert (custom.total_mib, custom.count, custom.compute_capability) == (named.total_mib, 2, (8, 6))
    assert abs(custom.usable_gb - named.usable_gb) < 0.05


@pytest.mark.parametrize("sm, cc, fp8, fa3", [("8.6", (8, 6), False, False), ("89", (8, 9), True, False),
                                              ("sm_90", (9, 0), True, True), ("9.0", (9, 0), True, True)])
def test_gpu_sm_sets_capabilities(sm, cc, fp8, fa3):
    p = hardware.get_profile("24GiBx2", sm=sm)
    assert (p.compute_capability, p.fp8, p.fa3) == (cc, fp8, fa3)
    assert hardware.get_profile("a6000", sm=sm).compute_capability == cc


@pytest.mark.parametrize("bad, match", [("48GBx2", "MiB"), ("0.5GiB", "at least 1 GiB"), ("48GiBx5000", "<= 1024")])
def test_bad_custom_capacity(bad, match):
    with pytest.raises(ValueError, match=match):
        hardware.get_profile(bad)


@pytest.mark.parametrize("bad", ["abc", "8", "1.2.3", "99.9"])
def test_bad_gpu_sm(bad):
    with pytest.raises(ValueError, match="--gpu-sm"):
        hardware.get_profile("48GiB", sm=bad)


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
