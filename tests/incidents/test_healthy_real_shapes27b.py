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
