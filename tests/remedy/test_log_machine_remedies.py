"""Remedies for the machine the log names (remedy/hardware.py ``read_machine`` / ``for_diagnosis``).

A paste that holds nvidia-smi's table or ``python -m sglang.check_env``'s lines says which GPU
failed: the fix is for that GPU, not for the ``--gpus`` profile's (a6000x2 unless given).  Each
change is checked on a real-shaped log with the machine lines (fixtures/machine/) and on the same
log without them (its fixture elsewhere: the remedy as before).  Lines that disagree leave the
fact unknown; log text only selects among gpu_specs.json's entries.
"""

from __future__ import annotations

from conftest import FIXTURES, explain_one_incident

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.remedy import flags, hardware, remedies

MACHINE = FIXTURES / "machine"
SMI_H100 = ["|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |",
            "| N/A   31C    P0             71W /  700W |       1MiB /  81559MiB |      0%      Default |"]
TOPO_NVLINK = ["GPU0     X      NV4     0-31    0               N/A",
               "GPU1    NV4      X      0-31    0               N/A"]
TOPO_PCIE = ["GPU0     X      PHB     0-31    0               N/A",
             "GPU1    PHB      X      0-31    0               N/A"]


def _sets(incident: dict) -> list[dict]:
    rem = incident["remediation"]
    return [c["set"] for c in [rem, *rem["alternatives"]]]


# -- what the lines say ----------------------------------------------------------------------

def test_an_nvidia_smi_row_names_the_gpu_its_sm_memory_and_the_topology_its_links():
    m = hardware.read_machine(SMI_H100 + TOPO_NVLINK)
    assert (m.model, m.sm, m.link, m.disagreements) == ("H100", 90, "nvlink", ())
    assert 79 < m.memory_gb < 80  # nvidia-smi's 81559 MiB, the smaller of the two figures
    p = hardware.with_machine(hardware.get_profile("a6000x2"), m)
    assert (p.compute_capability, p.fp8, p.fa3, p.nvlink, p.count, p.source) == ((9, 0), True, True, True, 2, "log")
    assert hardware.read_machine(TOPO_PCIE).link == "pcie"


def test_lines_that_disagree_leave_the_fact_unknown_and_say_so():
    two = hardware.read_machine(["GPU 0: NVIDIA H100 80GB HBM3", "GPU 1: NVIDIA RTX A6000"])
    assert two.model is None and two.sm is None and any("2 different GPU models" in d for d in two.disagreements)
    wrong_size = hardware.read_machine(["|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |"
                                        "                    0 |",
                                        "| N/A   31C    P0   71W /  700W |       1MiB /  24564MiB |      0%      Default |"])
    assert wrong_size.model == "H100" and wrong_size.memory_gb is None and wrong_size.disagreements
    mixed = hardware.read_machine(TOPO_NVLINK[:1] + TOPO_PCIE[1:])
    assert mixed.link is None and mixed.disagreements


def test_no_machine_line_keeps_the_profile_as_it_was():
    base = hardware.get_profile("a6000x2")
    assert hardware.with_machine(base, hardware.read_machine(["[TP0] Load weight begin. avail mem=46.1 GB"])) is base
    assert not hardware.refuses_backend(base, "fa3")  # an assumed profile refuses nothing


def test_the_gpu_name_shown_is_the_tables_never_the_logs_text():
    m = hardware.read_machine(["GPU 0,1: NVIDIA H100 80GB HBM3 $(touch /tmp/x)"])
    p = hardware.with_machine(hardware.get_profile("a6000x2"), m)
    assert m.model == "H100" and "touch" not in p.gpu_name and "$(" not in p.name


def test_backends_the_sm_cannot_run():
    v100 = hardware.with_machine(None, hardware.read_machine(["|   0  Tesla V100-SXM2-32GB           On  | "
                                                             "00000000:00:1E.0 Off |                    0 |"]))
    rtx5090 = hardware.with_machine(None, hardware.read_machine(["GPU 0: NVIDIA GeForce RTX 5090",
                                                                "GPU 0 Compute Capability: 12.0"]))
    assert v100.compute_capability == (7, 0)
    assert hardware.refuses_backend(v100, "flashinfer") and hardware.refuses_backend(v100, "fa3")
    assert not hardware.refuses_backend(v100, "triton")
    assert hardware.refuses_backend(rtx5090, "fa3") and not hardware.refuses_backend(rtx5090, "flashinfer")


# -- the remedies that change, on real-shaped logs --------------------------------------------

def test_an_attention_backend_the_named_gpu_cannot_run_is_not_proposed():
    # sgl-kernel's FA3 refuses SM < 90; FlashInfer is the rule's first way out, but not on a V100 (SM70)
    without = explain_one_incident(FIXTURES / "kernel" / "sgl_kernel_fa3_text_sm86.log")
    v100 = explain_one_incident(MACHINE / "sgl_kernel_fa3_v100_smi.txt")
    rtx3090 = explain_one_incident(MACHINE / "sgl_kernel_fa3_3090_smi.txt")
    assert without["rule"] == v100["rule"] == rtx3090["rule"] == "kernel.unsupported_hw.sgl_kernel_fa3"
    assert _sets(without) == _sets(rtx3090) == [{"--attention-backend": "flashinfer"}, {"--attention-backend": "triton"}]
    assert _sets(v100) == [{"--attention-backend": "triton"}]


def test_the_assumed_default_fraction_is_the_named_gpus():
    # no dump: the step starts from the release's default, which SGLang sizes by the GPU's memory
    without = explain_one_incident(FIXTURES / "memory" / "memory_saver_resume_oom.log")
    h100 = explain_one_incident(MACHINE / "memory_saver_resume_oom_h100_smi.txt")
    two = explain_one_incident(MACHINE / "memory_saver_resume_oom_two_models.txt")
    assert "--gpus a6000x2" in without["remediation"]["note"]
    assert "H100 (SM90), as the log shows" in h100["remediation"]["note"]
    assert _sets(h100)[0]["--mem-fraction-static"] != _sets(without)[0]["--mem-fraction-static"]
    assert _sets(two) == _sets(without)  # two GPU models: the profile's as before


def _nccl_remediation(machine_lines: list[str]):
    pack = RuleSet.load(user=False)
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed((FIXTURES / "nccl" / "unhandled_system_error_059.log").read_bytes()) + pipe.finish()
    (diagnosis,) = [e["_diagnosis"] for e in events
                    if e["event"] == "incident" and e["_diagnosis"].rule == "nccl.unhandled_system_error"]
    diagnosis.launch.machine_lines = list(machine_lines)
    catalog = flags.load_catalog("0.5.9", prefer_shipped=True)
    rem = remedies.remediate(diagnosis, command=None, version=catalog.version, catalog=catalog,
                             hardware=hardware.get_profile("a6000x2"), model_config=None)
    return [env for r in [rem, *rem.alternatives] for env in r.env]


def test_nccl_p2p_off_is_not_proposed_for_gpus_the_topology_shows_on_nvlink():
    assert "NCCL_P2P_DISABLE" in _nccl_remediation([])
    assert "NCCL_P2P_DISABLE" in _nccl_remediation(TOPO_PCIE)
    assert "NCCL_P2P_DISABLE" not in _nccl_remediation(TOPO_NVLINK)


def test_from_log_keeps_the_measured_memory_and_adds_the_named_gpu():
    from dataclasses import replace

    from sglang_doctor.pipeline import read_incidents

    launches, _ = read_incidents(FIXTURES / "seed" / "seed_full.log")
    seed = launches[0]
    plain = hardware.from_log(seed)
    named = hardware.from_log(replace(seed, machine_lines=["GPU 0,1: NVIDIA RTX A6000",
                                                           "GPU 0,1 Compute Capability: 8.6"]))
    assert plain.compute_capability == (0, 0)  # the seed's log names no GPU: as before
    assert (named.usable_gb, named.count) == (plain.usable_gb, plain.count)  # the measured figures stay
    assert (named.compute_capability, named.fp8, named.fa3, named.source) == ((8, 6), False, False, "log")
    # a GPU whose size the measured free memory exceeds is not this launch's: left unknown
    small = hardware.from_log(replace(seed, machine_lines=["GPU 0,1: NVIDIA GeForce RTX 4090"]))
    assert small.compute_capability == (0, 0) and small.gpu_name.startswith("unknown")


def test_check_env_says_how_many_gpus():
    m = hardware.read_machine(["GPU 0,1,2,3: NVIDIA GeForce RTX 4090", "GPU 0,1,2,3 Compute Capability: 8.9"])
    assert (m.model, m.sm, m.count) == ("GeForce RTX 4090", 89, 4)
    assert hardware.with_machine(hardware.get_profile("a6000x2"), m).count == 4
    assert hardware.read_machine(["GPU 0: NVIDIA H100 80GB HBM3", "GPU 1: NVIDIA H100 80GB HBM3"]).count is None
