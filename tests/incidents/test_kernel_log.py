"""The kernel's log as evidence (session 26): dmesg / dmesg -T / journalctl -k lines pasted next
to SGLang's output, or instead of it.

- Their prefixes (``[ 8123.456789] ``, ``[Sat Dec  6 10:00:01 2025] ``, ``May 18 19:02:39
  kernel: ``, dmesg -H's ``[Nov19 10:33] `` / ``[  +0.000388] ``) are taken off like any outer
  prefix, and records.is_kernel_prefix says they were the kernel's.
- A GPU fault the driver logged (an Xid, an amdgpu page fault or ring timeout), a segfault line
  and the OOM killer's lines form an incident on their own (rules/kernel_log.yaml).
- Pasted right after SGLang's failure they join it, the driver's context lines between them
  included: the kernel's fault is the cause (the Xid 79 under a CUDA error, the OOM kill under a
  shell's ``Killed``).  Nothing is ordered by the kernel's clock, only by where it was pasted.
- Benign kernel lines (module loads, amdgpu's set-up, oom_score_adj changes, Xid 45's clean-up)
  form nothing.
"""

from __future__ import annotations

from conftest import FIXTURES, explain_incidents, incidents_of_lines
from sglang_doctor.read import records

S = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
DECODE = ("[2025-06-01 10:05:00 TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, "
          "cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0")
CUDA_ERROR_TRACEBACK = [
    "[2025-06-01 10:05:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{S}/managers/scheduler.py", line 2312, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    f'  File "{S}/managers/scheduler.py", line 1689, in run_batch',
    "    logits_output, next_token_ids, can_run_cuda_graph = self.tp_worker.forward_batch_generation(model_worker_batch)",
    "RuntimeError: CUDA error: unspecified launch failure",
]
XID79 = ["[ 9312.004211] NVRM: GPU at PCI:0000:86:00: GPU-1d2e3f40-5a6b-7c8d-9e0f-a1b2c3d4e5f6",
         "[ 9312.004230] NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."]


def test_kernel_prefixes_are_taken_off_and_known_as_the_kernel_s():
    cases = {
        "[ 8123.456801] NVRM: Xid (PCI:0000:3b:00): 79, x": "NVRM: Xid (PCI:0000:3b:00): 79, x",
        "[Sat Dec  6 10:00:01 2025] Out of memory: Killed process 1 (python3)": "Out of memory: Killed process 1 (python3)",
        "May 18 19:02:39 kernel: NVRM: GPU at PCI:0000:2b:00: GPU-0b11": "NVRM: GPU at PCI:0000:2b:00: GPU-0b11",
        "Jan 18 11:38:05 localhost kernel: [ 269.516977] NVRM: GPU at 0000:01:00.0 has fallen off the bus.":
            "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
        "[Nov19 10:33] [drm:mes_v11_0_submit_pkt_and_poll_completion] x": "[drm:mes_v11_0_submit_pkt_and_poll_completion] x",
        "[  +0.000388] amdgpu: failed to remove hardware queue from MES": "amdgpu: failed to remove hardware queue from MES",
    }
    for text, body in cases.items():
        end = records.outer_prefix_end(text)
        assert text[end:] == body, text
        assert records.is_kernel_prefix(text[:end]), text


def test_other_prefixes_and_sglang_s_own_lines_are_not_the_kernel_s():
    for text in ("sglang-1  | [2025-06-01 10:00:00] x", "May 09 10:00:01 host sglang[123]: x",
                 "2025-07-25T07:53:08.21+08:00 stdout F x"):
        end = records.outer_prefix_end(text)
        assert end and not records.is_kernel_prefix(text[:end]), text
    for text in ("[2025-06-01 10:00:00 TP0] Decode batch", "[15:14:17] /project/cpp/tokenizer_info.cc:146: Warning"):
        assert records.outer_prefix_end(text) == 0, text


def test_an_xid_alone_forms_an_incident(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, [DECODE, *XID79])
    assert inc.first_line == 3  # the driver's context line before it is not the failure
    assert [s.text for s in inc.signals] == [XID79[1].split("] ", 1)[1]]
    assert inc.ranks == []  # the kernel's line is no rank's, though TP0's record came before it


def test_the_xid_under_a_cuda_error_joins_it_and_is_its_cause(tmp_path):
    # the scheduler's CUDA error, a blank line, then dmesg: the driver's "GPU at" line between
    # them does not end the incident, so the Xid joins the failure it explains
    p = tmp_path / "xid.log"
    p.write_text("\n".join([DECODE, *CUDA_ERROR_TRACEBACK, "", *XID79]) + "\n")
    (inc,) = explain_incidents(p)
    assert inc["rule"] == "runtime.crash.gpu_fell_off_bus"
    assert inc["lines"] == [2, 10]
    assert inc["exception"]["message"] == "CUDA error: unspecified launch failure"
    assert "seconds since boot" in inc["explanation"]  # no ordering by the kernel's clock
    assert inc["remediation"] is None or not inc["remediation"].get("set")


def test_a_cuda_error_alone_stays_what_it_was(tmp_path):
    p = tmp_path / "cuda.log"
    p.write_text("\n".join([DECODE, *CUDA_ERROR_TRACEBACK]) + "\n")
    (inc,) = explain_incidents(p)
    assert inc["rule"] == "runtime.crash.cuda_unspecified_launch_failure"


def test_kernel_lines_far_below_a_failure_are_a_failure_of_their_own(tmp_path):
    filler = [f"[2025-06-01 10:06:{i % 60:02d}] INFO:     127.0.0.1:5 - \"GET /health HTTP/1.1\" 200 OK"
              for i in range(3)]
    incs = incidents_of_lines(tmp_path, [DECODE, *CUDA_ERROR_TRACEBACK, *filler, *XID79])
    assert len(incs) == 2


def test_the_shell_s_killed_and_the_oom_killer_s_lines_are_one_incident(tmp_path):
    (ev,) = explain_incidents(FIXTURES / "kernel_log" / "killed_and_oom_reaper.log")
    assert ev["rule"] == "memory.host_oom.oom_killer_lines"
    assert ev["lines"] == [4, 6]
    assert "48211 (python3)" in ev["title"]


def test_a_container_s_memory_limit_is_not_the_host_s_ram(tmp_path):
    (ev,) = explain_incidents(FIXTURES / "kernel_log" / "oom_killer_cgroup.log")
    assert ev["category"] == "memory.host_oom"
    assert ev["rule"] == "memory.host_oom.oom_killer_cgroup"
    assert "48211 (python3)" in ev["title"]


def test_a_segfault_line_names_its_library(tmp_path):
    (ev,) = explain_incidents(FIXTURES / "kernel_log" / "segfault_libcuda.log")
    assert ev["category"] == "runtime.crash"
    assert "libcuda.so.535.104.05" in ev["title"]


def test_benign_kernel_lines_stay_quiet(tmp_path):
    lines = ["[    4.234567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
             "[    4.345678] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  535.104.05",
             "[    6.333333] [drm] Initialized amdgpu 3.57.0 20150101 for 0000:c1:00.0 on minor 1",
             "[  100.000000] python3 (48211): oom_score_adj changed to 0",
             "[ 5210.881954] NVRM: Xid (PCI:0000:07:00): 45, pid=51220, name=python3, Ch 00000010",
             "[2025-06-01 10:00:00] The server is fired up and ready to roll!", DECODE]
    assert incidents_of_lines(tmp_path, lines) == []


def test_benign_kernel_lines_after_a_failure_do_not_change_it(tmp_path):
    # the failure stays the CUDA error (the kernel's lines hold no fault)
    p = tmp_path / "benign-after.log"
    p.write_text("\n".join([DECODE, *CUDA_ERROR_TRACEBACK,
                            "[ 9312.004211] NVRM: GPU at PCI:0000:86:00: GPU-1d2e3f40-5a6b-7c8d-9e0f-a1b2c3d4e5f6"]) + "\n")
    (inc,) = explain_incidents(p)
    assert inc["rule"] == "runtime.crash.cuda_unspecified_launch_failure"
