"""NCCL's own words from its source (session 34, scripts/inventory_nccl.py,
data/inventory/nccl-sites.json) and what the tool makes of them:

- every WARN site of NCCL 2.18 / 2.21 / 2.27 / 2.28 gets a disposition from the code after the
  call: ``error`` (an error return or jump to the error exit), ``survived`` (a fallback value, the
  next device, ``ncclSuccess``), ``unknown``; INFO sites with a failure's words are ``info``;
- a ``survived`` or ``info`` line alone raises no incident (incidents/survived.py
  NONFATAL_NCCL_WARN), an ``error`` or ``unknown`` line alone is read in its category;
- "P2P is disabled between NVLINK connected GPUs" returns ncclUnhandledCudaError in every release
  read: an incident with its own rule (nccl.p2p_disabled_nvlink), no longer a fallback;
- a warning that goes on stays a warning when the ready line follows a repeat of once-per-launch
  lines (bench/robustness.py ``rank_lines``: two ranks' copies of the same output) and a C++
  frame line hard-wrapped by the paste stays part of TCPStore's trace (``wrap80``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sglang_doctor.incidents import survived
from sglang_doctor.model import Line

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402
import inventory_nccl  # noqa: E402
import robustness  # noqa: E402

SIGQUIT = "[2026-01-01 00:00:50] Received sigquit from a child process. It usually means the child failed.\n"
INVENTORY = json.loads(inventory_nccl.OUT.read_text())


@pytest.fixture(scope="module")
def engine():
    return healthy_bait.Engine()


# -- the disposition, from the code after the call ---------------------------------------------

def _judge(code: str) -> str:
    """The one disposition of the snippet's WARN sites (every site of it has the same)."""
    (disposition,) = {site["disposition"] for site in inventory_nccl.find_sites("x.cc", code)}
    return disposition


@pytest.mark.parametrize("code, expected", [
    ('if (x) {\n  WARN("Invalid %s %d", a, b);\n  nt = max;\n}\nreturn nt;\n', "survived"),
    ('if (x) {\n  WARN("bad %d", a);\n  return ncclInternalError;\n}\n', "error"),
    ('if (x) {\n  WARN("bad %d", a);\n  ret = ncclInvalidUsage;\n}\n', "error"),
    ('if (x) {\n  WARN("bad %d", a);\n  ret = ncclSystemError;\n  goto fail;\n}\n', "error"),
    # the error return follows the if / else that holds the call
    ('if (op) {\n  WARN("no op %p", op);\n} else {\n  WARN("null op");\n}\nreturn ncclInternalError;\n', "error"),
    ('for (;;) {\n  if (e) {\n    WARN("event %d", e);\n    break;\n  }\n}\n', "unknown"),
    ('if (x) {\n  WARN("port %d", p);\n  continue;\n}\n', "survived"),
    ('#define CHECKX(cmd) do { \\\n  if (cmd) { \\\n    WARN("failed %s", #cmd); \\\n    return ncclSystemError; \\\n  } \\\n} while (0)\n',
     "error"),
])
def test_the_code_after_a_warn_decides_its_disposition(code, expected):
    assert _judge(code) == expected


def test_an_info_line_is_kept_only_with_a_failure_s_words():
    code = 'INFO(NCCL_INIT, "Connected all rings");\nINFO(NCCL_NET, "NET/IB : No device found.");\n'
    sites = inventory_nccl.find_sites("x.cc", code)
    assert [(s["level"], s["template"], s["disposition"]) for s in sites] == [
        ("INFO", "NET/IB : No device found.", "info")]


def test_the_shipped_inventory_reads_every_release_and_has_every_disposition():
    assert INVENTORY["versions"] == [v.lstrip("v") for v in inventory_nccl.VERSIONS]
    assert INVENTORY["sites"] == len(INVENTORY["entries"]) > 500
    assert {e["disposition"] for e in INVENTORY["entries"]} == {"error", "survived", "unknown", "info"}
    paths = [e for e in INVENTORY["entries"] if "P2P is disabled between NVLINK connected GPUs" in e["template"]]
    assert paths and all(e["disposition"] == "error" for e in paths)


# -- what the tool makes of each site's line -----------------------------------------------------

def _sites(*dispositions):
    return [e for e in INVENTORY["entries"] if e["disposition"] in dispositions]


def test_a_survived_or_info_line_alone_raises_no_incident(engine):
    alarms = [inventory_nccl.render(e) for e in _sites("survived", "info")
              if engine.incidents(inventory_nccl.render(e) + "\n")]
    assert alarms == []


def test_an_error_or_unknown_line_alone_is_read_in_its_category(engine):
    from sglang_doctor.pipeline import StreamPipeline

    missed = []
    for e in _sites("error", "unknown"):
        pipe = StreamPipeline(engine.ruleset, remediate=False, whole_log=True)
        events = pipe.feed((inventory_nccl.render(e) + "\n").encode()) + pipe.finish()
        if not any(ev.get("event") == "incident" and ev.get("category") == e["category"] for ev in events):
            missed.append(inventory_nccl.render(e))
    assert missed == []


NEW_FALLBACKS = [
    "[Service thread] Accept failed Too many open files",
    "[Service thread] Unknown command 7 from localRank 1",
    "[Proxy Service] Failed to set CUDA device 1",
    "Failed to create CUDA context on device 1",
    "commDestroySync: comm 0x55d1c2a0 rank 1 sync hostStream error 1",
    "Unable to open /tmp/topo.xml, not dumping topology.",
    "NET/IB : Unable to query port 2",
]


@pytest.mark.parametrize("message", NEW_FALLBACKS)
def test_a_new_fallback_alone_is_quiet_and_with_a_death_after_it_is_not(engine, message):
    line = "gpu-node-1:2301:2330 [0] proxy.cc:1402 NCCL WARN " + message + "\n"
    assert engine.incidents(line) == []
    assert engine.incidents(line + SIGQUIT) != []


def test_a_proxy_operation_other_than_close_that_failed_stays_an_incident(engine):
    line = "gpu-node-1:2301:2330 [0] proxy.cc:1519 NCCL WARN [Proxy Service 3] Failed to execute operation Setup from rank 3, retcode 1\n"
    assert engine.incidents(line) != []


def test_p2p_disabled_between_nvlink_gpus_is_a_failure_with_its_rule(engine):
    line = ("h100-node-3:8812:8890 [1] graph/paths.cc:351 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. "
            "This should not be the case given their connectivity, and is probably due to a hardware issue. If you still "
            "want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.\n")
    assert not survived.NONFATAL_NCCL_WARN.search(line)
    assert engine.incidents(line) == ["nccl.p2p_disabled_nvlink"]


# -- paste shapes -------------------------------------------------------------------------------

def test_the_source_pieces_under_rank_lines_raise_no_incident(engine):
    alarms = [name for group, name, text in healthy_bait.source_texts()
              if group == "context:rank_lines" and engine.incidents(text)]
    assert alarms == []


def test_the_same_piece_under_rank_lines_with_a_death_before_ready_stays_an_incident(engine):
    for group, name, text in healthy_bait.source_texts():
        if group == "context:rank_lines" and name == "nccl_fifo_bytes_ignored":
            lines = text.splitlines()
            at = next(i for i, line in enumerate(lines) if "Init parallel ends" in line)
            assert engine.incidents("\n".join(lines[:at] + [SIGQUIT.strip()] + lines[at:]) + "\n") != []
            return
    raise AssertionError("no rank_lines text of nccl_fifo_bytes_ignored")


def test_the_heartbeat_fragment_wrapped_at_80_columns_is_quiet(engine):
    rel = "fixtures/nccl/heartbeat_store_gone_should_dump_fragment.log"
    text = (ROOT / rel).read_text()
    sample = robustness.Sample(rel, "tune", robustness._split_lines(text), 0, "none", healthy=True)
    out = healthy_bait.keep_cut_end(text, robustness.apply("wrap80", sample))
    assert engine.incidents(out) == []


def _lines(*texts):
    return [Line(number=i + 1, text=t) for i, t in enumerate(texts)]


def test_a_frame_line_s_wrapped_rest_is_read_as_part_of_the_trace():
    lines = _lines("frame #1: <unknown function> + 0x5ba8afe (0x7f4d1b3a8afe in /opt/venv/lib/python",
                   "3.12/site-packages/torch/lib/libtorch_cpu.so)",
                   "RuntimeError: boom)")
    assert survived._frame_rest(lines, 1)
    assert not survived._frame_rest(lines, 2)  # not after a frame line
    assert not survived._frame_rest(lines, 0)


def test_the_c10d_sites_read_by_hand_are_in_the_shipped_inventory():
    c10d = [e for e in INVENTORY["entries"] if e["level"] == "C10D"]
    assert len(c10d) == len(inventory_nccl.C10D_SITES) + len(inventory_nccl.PG_SITES)
    assert {e["disposition"] for e in c10d} == {"survived", "error"}


def test_measure_i_places_every_going_on_site_in_the_launch_at_its_end_and_alone(engine):
    """bench/healthy_bait.py measure (i) ``sites``, its untransformed groups (the transformed ones
    are the bench's)."""
    texts = [(group, name, text) for group, name, text in healthy_bait.site_texts()
             if group in ("context", "end", "bare")]
    assert len(texts) == 3 * len(_sites("survived", "info"))
    assert [(group, name) for group, name, text in texts if engine.incidents(text)] == []


def test_a_duplicate_gpu_is_its_rule_in_both_of_torch_s_shapes(engine):
    warn = "gpu-box:29880:30398 [0] init.cc:795 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
    assert engine.incidents(warn) == ["nccl.duplicate_gpu"]
    last_error = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
                  "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n"
                  "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
                  "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n")
    assert engine.incidents(last_error) == ["nccl.duplicate_gpu"]


def test_nccl_s_own_peer_access_failure_is_nccl_s_p2p_transport_not_the_custom_all_reduce(engine):
    """NCCL's CUDACHECK line (as a WARN or torch's Last error) takes NCCL_P2P_DISABLE=1; sgl-kernel's
    own "CUDART error: peer access ..." stays the custom all-reduce's rule."""
    nccl = ("l40s-node:4120:4188 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 217 "
            "'peer access is not supported between these two devices'\n")
    assert engine.incidents(nccl) == ["nccl.p2p_transport_peer_access"]
    custom = (ROOT / "fixtures" / "nccl" / "custom_allreduce_peer_access_059.log").read_text()
    assert engine.incidents(custom) == ["nccl.p2p_peer_access"]
