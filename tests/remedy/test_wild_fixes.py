"""Fixes for the logs people paste: no dump, no command, sometimes one line.

* a stepping remedy steps from the release's default and says it was assumed (remedy/assumed.py);
* the warm-up-through-a-proxy fix sets both no_proxy spellings (requests reads the lower-case one
  first);
* an unset that the message itself implies (only the cutlass MoE runner reaches fp8.py's check);
* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True only when torch's figures show fragmentation.

Real files through the CLI (``explain --format json``), as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache

from conftest import FIXTURES, doctor_cmd

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline

FRAGMENTED = FIXTURES / "memory" / "cuda_oom_serving_fragmented_one_line.log"
CUT = FIXTURES / "memory" / "cuda_oom_serving_cut_one_line.log"
CUTLASS_LINE = FIXTURES / "kernel" / "cutlass_fp8_moe_one_line.log"
CUTLASS_DUMP = FIXTURES / "kernel" / "cutlass_fp8_moe_sm86_059.log"
PROXY = FIXTURES / "other" / "warmup_proxy_intercepts_059.log"


def _incidents(path, *extra):
    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(path), *extra),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    return [e for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "incident"]


def _changes(rem):
    return [rem, *rem["alternatives"]]


# -- assumed defaults -------------------------------------------------------------------------


def test_a_one_line_oom_steps_from_the_release_default_and_says_so():
    (inc,) = _incidents(CUT)  # cut before the GPU's size: the --gpus profile (a6000x2) is used
    assert inc["remediation"] is not None, "no value in the log must not mean no fix"
    # the two places read first: the smaller pool (the change confirmed most often,
    # data/fix_evidence.yaml) and the smaller prefill chunk
    first_two = _changes(inc["remediation"])[:2]
    assert "--mem-fraction-static" in first_two[0]["set"]
    (rem,) = [c for c in first_two if "--chunked-prefill-size" in c["set"]]
    # SGLang 0.5.23 picks 4096 for a 48 GiB GPU (arg_groups/memory_hook.py); halved
    assert rem["set"] == {"--chunked-prefill-size": 2048}
    assert "is not in the log" in rem["note"] and "4096" in rem["note"]
    assert "newest known" in rem["note"] and "a6000x2" in rem["note"]
    assert "ASSUMED:" in rem["tradeoff"] and rem["tradeoff"].startswith("smaller prefill chunks")  # its cost, then the assumption
    assert rem["safe"] is False  # a launch that set it lower would be moved the wrong way
    assert rem["provenance"]["--chunked-prefill-size"]["source"] == "planner"
    assert not rem.get("untrusted")  # planner numbers: trusted, yet asked about (safe=false)
    mfs = [c for c in _changes(inc["remediation"]) if "--mem-fraction-static" in c["set"]]
    assert mfs and mfs[0]["set"]["--mem-fraction-static"] < 0.9 and "ASSUMED" in mfs[0]["tradeoff"]


def test_the_assumed_default_follows_the_gpus_and_the_release_given():
    (inc,) = _incidents(CUT, "--gpus", "h100-80x8", "--sglang-version", "0.5.9")
    (rem,) = [c for c in _changes(inc["remediation"])[:2] if "--chunked-prefill-size" in c["set"]]
    # 0.5.9 server_args.py:936-1000: 8192 for GPUs under 160 GiB
    assert rem["set"] == {"--chunked-prefill-size": 4096}
    assert "SGLang 0.5.9 chooses 8192" in rem["note"] and "h100-80x8" in rem["note"]
    assert "newest known" not in rem["note"]


def test_the_gpu_size_torch_reports_beats_the_profile():
    (inc,) = _incidents(FRAGMENTED, "--gpus", "h100-80x8", "--sglang-version", "0.5.9")
    # (the fragmented cache's own change leads, test_expandable_segments_lead_when_they_apply)
    (rem,) = [c for c in _changes(inc["remediation"]) if "--chunked-prefill-size" in c["set"]]
    # torch says 23.64 GiB: 0.5.9's tier under 35 GiB is 2048 (server_args.py:936-1000)
    assert rem["set"] == {"--chunked-prefill-size": 1024}
    assert "23.64 GiB GPU torch reports" in rem["note"] and "h100" not in rem["note"]


def test_a_value_the_dump_states_is_not_assumed():
    (inc,) = _incidents(FIXTURES / "memory" / "cuda_oom_attention_init_059.log")
    rem = inc["remediation"]
    assert rem["set"] == {"--mem-fraction-static": 0.9}  # the dump's 0.95, less 0.05
    for change in _changes(rem):
        assert "not in the log" not in change["note"]
        assert "ASSUMED" not in (change.get("tradeoff") or "")


# -- allocator fragmentation --------------------------------------------------------------------


def _alloc_conf(rem):
    return [c["env"]["PYTORCH_CUDA_ALLOC_CONF"] for c in _changes(rem) if "PYTORCH_CUDA_ALLOC_CONF" in c["env"]]


def test_expandable_segments_when_torch_holds_more_unused_than_it_asked_for():
    (inc,) = _incidents(FRAGMENTED)  # 2.81 GiB reserved but unallocated, 1.25 GiB asked
    assert _alloc_conf(inc["remediation"]) == ["expandable_segments:True"]
    (inc,) = _incidents(FIXTURES / "memory" / "cuda_oom_attention_init_059.log")  # 1.02 GiB vs 512 MiB
    assert _alloc_conf(inc["remediation"]) == ["expandable_segments:True"]


def test_expandable_segments_lead_when_they_apply():
    # a serving OOM whose allocation would have fit in what torch holds unused: the cache's
    # fragmentation failed it, so the change that targets it comes first (field16/010: the
    # operator's fix, 6/6 cold 256K prefills passing afterwards); the headroom changes follow
    (inc,) = _incidents(FRAGMENTED)
    assert inc["rule"] == "memory.cuda_oom.serving"
    assert inc["remediation"]["env"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert any("--chunked-prefill-size" in c["set"] for c in inc["remediation"]["alternatives"])


def test_no_expandable_segments_when_memory_really_ran_out():
    (inc,) = _incidents(FIXTURES / "memory" / "cuda_oom_sampler_059.log")  # 1.02 GiB vs 18.55 GiB
    assert inc["rule"] == "memory.cuda_oom.sampler"
    assert _alloc_conf(inc["remediation"]) == []


# -- the proxy ----------------------------------------------------------------------------------


def test_warmup_through_a_proxy_sets_both_no_proxy_spellings():
    (inc,) = _incidents(PROXY)
    env = inc["remediation"]["env"]
    assert env == {"no_proxy": "localhost,127.0.0.1", "NO_PROXY": "localhost,127.0.0.1"}
    assert inc["remediation"]["provenance"]["env:no_proxy"]["source"] == "rule"


def _bypasses(env: dict[str, str]) -> bool:
    """Whether Python, in a fresh process with ``env``, sends a request to 127.0.0.1 past the
    proxy (urllib's rule; requests reads no_proxy before NO_PROXY the same way)."""
    code = "import urllib.request as u; print(bool(u.proxy_bypass_environment('127.0.0.1')))"
    base = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy")}
    r = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "True"


def test_the_lower_case_no_proxy_hides_the_upper_case_one_so_both_are_set():
    user = {"http_proxy": "http://127.0.0.1:9", "no_proxy": "intranet.example"}
    assert not _bypasses({**user, "NO_PROXY": "localhost,127.0.0.1"})  # the old fix: not enough
    (inc,) = _incidents(PROXY)
    assert _bypasses({**user, **inc["remediation"]["env"]})


# -- an unset the message implies ------------------------------------------------------------------


def test_the_cutlass_check_implies_the_flag_when_the_log_has_no_settings():
    (inc,) = _incidents(CUTLASS_LINE)
    rem = inc["remediation"]
    assert rem["unset"] == ["--moe-runner-backend"] and rem["set"] == {}
    assert "not in the log" in rem["note"] and "cutlass" in rem["note"]
    assert rem["safe"] is False
    assert rem["alternatives"][0]["set"] == {"--moe-runner-backend": "triton"}


def test_a_dump_that_shows_cutlass_still_removes_it():
    (inc,) = _incidents(CUTLASS_DUMP)
    assert inc["remediation"]["unset"] == ["--moe-runner-backend"]
    assert "not in the log" not in inc["remediation"]["note"]


@lru_cache(maxsize=1)
def _rules() -> RuleSet:
    return RuleSet.load(user=False)


def _remediation_with_command(path, command):
    pipe = StreamPipeline(_rules(), command=command, version="0.5.9")
    events = pipe.feed(path.read_bytes()) + pipe.finish()
    (inc,) = [e for e in events if e["event"] == "incident"]
    return inc["remediation"]


def test_a_known_command_without_the_flag_gets_no_implied_unset():
    # the cutlass runner came from elsewhere (0.5.9: --quantization mxfp8 or SGLANG_CUTLASS_MOE=1)
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--quantization", "mxfp8"]
    rem = _remediation_with_command(CUTLASS_LINE, command)
    assert "--moe-runner-backend" not in (rem or {}).get("unset", [])
    command = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--moe-runner-backend", "cutlass"]
    rem = _remediation_with_command(CUTLASS_LINE, command)
    assert rem["unset"] == ["--moe-runner-backend"] and "not in the log" not in rem["note"]


# -- a flag the newest release spells differently ----------------------------------------------------

GRAPH_LINE = FIXTURES / "memory" / "cuda_oom_graph_capture_one_line.log"


def _graph_flags(rem):
    return [(flag, c) for c in _changes(rem) for flag in c["set"] if flag.startswith("--cuda-graph-max-bs")]


def test_with_no_release_named_one_spelling_is_offered_and_the_other_named_in_its_note():
    # one change under two names must not take the fix and its first alternative: the spelling
    # most releases take is the change (0.4.0 to 0.5.19 take --cuda-graph-max-bs, 0.5.14 on
    # --cuda-graph-max-bs-decode; before session 27 the newest release's was), the other is
    # named in its note
    (inc,) = _incidents(GRAPH_LINE)
    found = _graph_flags(inc["remediation"])
    assert [f for f, _ in found] == ["--cuda-graph-max-bs"]
    (_, change), = found
    assert "0.4.0 to 0.5.19 take it" in change["note"]
    assert "0.5.14 to 0.5.23 spell it --cuda-graph-max-bs-decode" in change["note"]


def test_with_no_release_named_a_rename_most_releases_take_in_its_new_spelling_keeps_it():
    # --impl became --model-impl in 0.4.9.post3: most shipped releases take the new name, so the
    # change keeps it (the majority rule of remedies._most_taken goes both ways)
    (inc,) = _incidents(FIXTURES / "classes" / "model_config_refused_activation.log")
    changes = _changes(inc["remediation"])
    assert any(c["set"].get("--model-impl") == "transformers" for c in changes)
    assert not any("--impl" in c["set"] for c in changes)


def test_a_named_release_gets_its_own_spelling_only():
    (inc,) = _incidents(GRAPH_LINE, "--sglang-version", "0.5.23")
    assert [f for f, _ in _graph_flags(inc["remediation"])] == ["--cuda-graph-max-bs-decode"]
    (inc,) = _incidents(GRAPH_LINE, "--sglang-version", "0.5.9")
    found = _graph_flags(inc["remediation"])
    assert [f for f, _ in found] == ["--cuda-graph-max-bs"]
    assert all("spell it" not in c["note"] for _, c in found)


# -- NCCL_P2P_DISABLE is a PCIe work-around ------------------------------------------------------------


def _envs(rem):
    return [name for c in _changes(rem) for name in c["env"]]


def test_p2p_disable_is_offered_on_pcie_gpus_only():
    log = FIXTURES / "nccl" / "unhandled_cuda_error_0523.log"
    (inc,) = _incidents(log)  # the default profile: 2x A6000 on PCIe
    assert inc["remediation"]["env"] == {"NCCL_P2P_DISABLE": "1"}
    (inc,) = _incidents(log, "--gpus", "h100-80x8")  # NVLink
    assert "NCCL_P2P_DISABLE" not in _envs(inc["remediation"])
    assert inc["remediation"]["set"] == {"--disable-custom-all-reduce": True}


def test_a_forced_fp8_gemm_backend_is_removed_from_one_line():
    (inc,) = _incidents(FIXTURES / "kernel" / "fp8_gemm_backend_one_line.log")
    rem = inc["remediation"]
    assert rem is not None and rem["unset"] == ["--fp8-gemm-backend"]
    assert "auto never reaches it" in rem["note"]


# Frames in the graph runner and a message no specific rule knows: class.cuda_graph.runner, whose
# remedy names only --cuda-graph-max-bs (the fixture this test used first is now a specific rule's).
GRAPH_RUNNER_FRAMES = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 388, in __init__
    self.capture()
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 497, in capture
    ) = self.capture_one_batch_size(bs, forward)
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 640, in capture_one_batch_size
    run_once()
RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`
"""


def test_a_rule_naming_only_the_old_spelling_still_offers_the_new_one(tmp_path):
    log = tmp_path / "graph_runner_frames.log"
    log.write_text(GRAPH_RUNNER_FRAMES, encoding="utf-8")
    (inc,) = _incidents(log)
    assert inc["rule"] == "class.cuda_graph.runner"
    # the frames (srt/model_executor/cuda_graph_runner.py) fit only releases that spell it
    # --cuda-graph-max-bs: that spelling, once (remedy/frame_releases.py)
    assert inc["remediation"]["target"]["version_source"] == "frame paths"
    assert [f for f, _ in _graph_flags(inc["remediation"])] == ["--cuda-graph-max-bs"]
    (inc,) = _incidents(log, "--sglang-version", "0.5.23")
    assert [f for f, _ in _graph_flags(inc["remediation"])] == ["--cuda-graph-max-bs-decode"]
