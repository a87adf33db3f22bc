"""Real healthy-but-scary texts people pasted from runs that went on (bench/healthy_bait.py
``REAL_SHAPES``, measure (e) ``real``): each is quiet whole, through ``explain`` as a user runs
it, and each names the public thread it came from.

- torch's ProcessGroupNCCL environment dump at a process group's creation (I/W glog records whose
  words are "kill program when no watchdog heartbeat detected", "DUMP_ON_TIMEOUT"): settings, not
  a failure (meta-pytorch/torchforge#55);
- NCCL's NET/IB "Got async event : client reregistration" after every rank's "Init COMPLETE": a
  routine InfiniBand port event (rules/nccl.yaml nccl.ib_transport leaves these out) and the job
  went on (deepspeedai/DeepSpeedExamples#310);
- SGLang's diffusion runtime logging "Following model weights were not initialized from
  checkpoint: {...}" while it started serving (sgl-project/sglang#18653): a warning there; the
  same words raised as ``ValueError:`` are a load failure (gpustack/gpustack#4615) and stay one;
- uvicorn's "Exception in ASGI application" for one streaming request (an ExceptionGroup whose
  sub-traceback runs through uvicorn's run_asgi), cut inside the sub-traceback
  (sgl-project/sglang#9963): uvicorn answers that request and goes on."""

import re
import sys
from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402

GITHUB_THREAD = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+$")


def test_every_real_shape_names_its_thread_and_is_a_healthy_fixture():
    assert len(healthy_bait.REAL_SHAPES) >= 4
    for rel, source in healthy_bait.REAL_SHAPES:
        assert GITHUB_THREAD.match(source), (rel, source)
        assert rel.startswith("fixtures/healthy/") and (ROOT / rel).is_file(), rel


def test_every_real_shape_is_quiet_whole():
    for rel, _source in healthy_bait.REAL_SHAPES:
        assert explain_incidents(ROOT / rel) == [], rel


def test_the_same_words_raised_as_an_exception_stay_a_failure(tmp_path):
    # gpustack/gpustack#4615: the loader raises what #18653's runtime logged
    line = (ROOT / "fixtures/healthy/diffusion_weights_not_initialized_warning_cut.log").read_text().split("\n")[0]
    log = tmp_path / "raised.log"
    log.write_text("Traceback (most recent call last):\n"
                   '  File "/usr/local/lib/python3.12/dist-packages/sglang/multimodal_gen/runtime/loader/'
                   'component_loader.py", line 516, in load_model\n'
                   "    raise ValueError(\n"
                   f"ValueError: {line}'}}\n")
    assert explain_incidents(log) != []


COLLNET_FALLBACKS = (
    # graph/tuning.cc (2.12-2.19): ring and tree turned back on
    "nodea:26799:27025 [0] graph/tuning.cc:187 NCCL WARN CollNet is not supported or fails to initialize, "
    "ignoring NCCL_ALGO=COLLNET\n",
    # transport.cc: init.cc ignores ncclCollNetSetup's result
    "node1:1234:1300 [0] transport.cc:464 NCCL WARN Cannot initialize CollNet, using point-to-point network instead\n",
    # net_ib/connect.cc: the dlid is used
    "node1:1234:1300 [0] transport/net_ib/connect.cc:431 NCCL WARN Warning: remote FLID configured as zero even "
    "when endpoints are on different subnets, using dlid as fallback\n",
)
IB_ERROR = ("node1:1234:1300 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45678> "
            "with error 12, opcode 0, len 0, vendor err 129\n")


def test_nccl_fallbacks_it_goes_on_after_are_quiet_and_a_failure_next_to_them_is_named(tmp_path):
    for k, line in enumerate(COLLNET_FALLBACKS):
        log = tmp_path / f"fallback{k}.log"
        log.write_text(line)
        assert explain_incidents(log) == [], line
        log.write_text(line + IB_ERROR)
        (inc,) = explain_incidents(log)
        assert inc["rule"] == "nccl.ib_transport", line
