"""Session 25 (hwsites25): SGLang 0.5.9 / 0.5.23 refusals of a platform that generic classes took
(model_config / load_config "... is (currently) not supported in ROCm.", npu_mxfp4 "only
implemented for the Ascend NPU backend", quark "which is AMD ROCm only", deepseek_weight_loader
"not supported for the current device") are kernel.unsupported_hw; an argument check that only
mentions ROCm stays the flags' conflict.  Each test runs the real CLI on a real file: a shipped
fixture, or a log written to tmp_path from SGLang's own message."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, doctor_cmd

PKG = "/usr/local/lib/python3.12/dist-packages/sglang"


def incidents(path) -> list[dict]:
    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(path)), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback (most recent call last)" not in r.stderr, r.stderr
    return [e for line in r.stdout.splitlines() if line.startswith("{")
            for e in [json.loads(line)] if e["event"] == "incident"]


def scheduler_log(tmp_path, site: str, line: int, func: str, exc: str, message: str):
    log = tmp_path / "site.log"
    log.write_text(
        "[2026-12-06 10:00:01] server_args=ServerArgs(model_path='/models/m', tp_size=1, port=30000)\n"
        "[2026-12-06 10:00:20 TP0] Load weight begin. avail mem=46.10 GB\n"
        "[2026-12-06 10:00:21 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{PKG}/srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
        "    scheduler = Scheduler(\n"
        f'  File "{PKG}/srt/{site}", line {line}, in {func}\n'
        "    raise ...\n"
        f"{exc}: {message}\n\n"
        "[2026-12-06 10:00:21] Received sigquit from a child process. It usually means the child failed.\n")
    return log


@pytest.mark.parametrize("fixture, rule", [
    ("hw_platform_only_not_supported_in_rocm.log", "class.hw.platform_only"),
    ("hw_platform_only_ascend_npu_backend.log", "class.hw.platform_only"),
    ("hw_platform_only_amd_rocm_only.log", "class.hw.platform_only"),
    ("hw_capability_current_device.log", "class.hw.capability"),
])
def test_platform_refusals_are_unsupported_hardware(fixture, rule):
    (inc,) = incidents(ROOT / "fixtures/classes" / fixture)
    assert inc["rule"] == rule
    assert inc["category"] == "kernel.unsupported_hw"
    # no flag is proven: the platform is the cause, the remedy says what to choose instead
    assert inc["remediation"]["needs_human"]


def test_the_rocm_load_format_refusal_names_the_load_format_as_a_choice(tmp_path):
    log = scheduler_log(tmp_path, "configs/load_config.py", 170, "_verify_load_format", "ValueError",
                        "load format 'fastsafetensors' is not supported in ROCm. Supported load formats are "
                        "['auto', 'pt', 'safetensors']")
    (inc,) = incidents(log)
    assert inc["category"] == "kernel.unsupported_hw"
    assert "--load-format" in inc["remediation"]["note"]


def test_platforms_in_a_list_with_execution_only(tmp_path):
    log = scheduler_log(tmp_path, "dllm/algorithm/gemma4_renoise.py", 85, "__init__", "ValueError",
                        "DiffusionGemma currently supports CUDA/ROCm GPU execution only")
    (inc,) = incidents(log)
    assert (inc["rule"], inc["category"]) == ("class.hw.platform_only", "kernel.unsupported_hw")


def test_a_graph_named_after_cuda_is_not_the_platform(tmp_path):
    # "only supported for CUDA graph ..." speaks of the capture, not of the device
    log = scheduler_log(tmp_path, "model_executor/cuda_graph_runner.py", 500, "capture", "RuntimeError",
                        "this attention path is only supported for the CUDA graph decode mode")
    assert all(inc["rule"] != "class.hw.platform_only" for inc in incidents(log))


def test_an_argument_check_naming_rocm_stays_the_flags_conflict(tmp_path):
    log = tmp_path / "args.log"
    log.write_text(
        "[2026-12-06 09:50:01] Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        f'  File "{PKG}/launch_server.py", line 32, in <module>\n'
        "    server_args = prepare_server_args(sys.argv[1:])\n"
        f'  File "{PKG}/srt/server_args.py", line 6120, in prepare_server_args\n'
        "    return ServerArgs.from_cli_args(raw_args)\n"
        f'  File "{PKG}/srt/arg_groups/overrides.py", line 1084, in _deterministic_rocm_rccl_check\n'
        "    raise ValueError(\n"
        "ValueError: --disable-custom-all-reduce cannot be combined with --enable-deterministic-inference on ROCm "
        "when --tp-size is above 2: the all-reduce would run through RCCL, which is not batch-invariant.\n")
    (inc,) = incidents(log)
    assert inc["category"] == "args.invalid"
