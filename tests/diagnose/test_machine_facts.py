"""What the text says about the machine (diagnose/hardware.py) and what it adds to the best guess
(diagnose/evidence.py ``from_hardware``): the reader on the lines SGLang, torch and nvidia-smi print,
the pieces on small fragments, and the counter-examples (a healthy T4 launch, an OOM on an A100, a
machine SGLang's kernels cover)."""

from __future__ import annotations

from conftest import best_guess, incident_events

from sglang_doctor.diagnose import evidence, hardware


def facts(*lines: str, server_args: dict | None = None) -> dict:
    hw = hardware.read(lines, server_args)
    return {name: fact.value for name, fact in hw.facts.items()}


# -- the reader --------------------------------------------------------------------------------


def test_torch_incompatible_gpu_warning():
    # torch/cuda/__init__.py _check_cubins' incompatible_device_warn, as printed under a UserWarning
    got = facts("/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:235: UserWarning: ",
                "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch "
                "installation.")
    assert got["gpu"] == "NVIDIA GeForce RTX 5090"
    assert got["sm"] == 120 and got["torch_lacks_arch"] is True and got["memory_gb"] == 32.0


def test_torch_found_gpu_capability_lines():
    # torch 2.7+ _warn_unsupported_code, and the older old_gpu_warn ("... of cuda capability 3.7.")
    assert facts("Found GPU0 Tesla V100-SXM2-16GB which is of compute capability (CC) 7.0.")["sm"] == 70
    old = facts("Found GPU0 Tesla K80 which is of cuda capability 3.7.")
    assert old["sm"] == 37 and old["gpu"] == "Tesla K80" and "memory_gb" not in old  # not in the table: unknown


def test_check_env_lines():
    # sglang/check_env.py get_device_info: "GPU 0,1: <name>", "GPU 0,1 Compute Capability: 8.6"
    got = facts("GPU 0,1: NVIDIA RTX A6000", "GPU 0,1 Compute Capability: 8.6")
    assert got["gpu"] == "NVIDIA RTX A6000" and got["sm"] == 86 and got["gpu_count"] == 2 and got["memory_gb"] == 48.0


def test_nvidia_smi_rows_and_topology():
    got = facts("|   0  Tesla T4                       Off |   00000000:00:1E.0 Off |                    0 |",
                "| N/A   34C    P8               9W /  70W |      5MiB / 15360MiB |      0%      Default |",
                "GPU0     X      PHB     0-31    0               N/A")
    assert got["gpu"] == "Tesla T4" and got["sm"] == 75 and got["memory_gb"] == 16.0 and got["link"] == "pcie"
    assert facts("GPU0     X      NV18    NV18    0-55    0")["link"] == "nvlink"


def test_memory_from_torch_oom_and_moe_config_device_name():
    # c10/cuda/CUDACachingAllocator.cpp's message (torch >= 2.1, and the older form)
    assert facts("GPU 0 has a total capacity of 23.55 GiB of which 1.2 GiB is free.")["memory_gb"] == 23.55
    assert facts("(GPU 0; 23.69 GiB total capacity; 22.1 GiB already allocated)")["memory_gb"] == 23.69
    # fused_moe_triton_config.py's config lookup names the device, spaces as underscores
    got = facts("Config file not found at /sgl/configs/E=64,N=1280,device_name=NVIDIA_H100_80GB_HBM3.json")
    assert got["gpu"] == "NVIDIA H100 80GB HBM3" and got["sm"] == 90 and got["memory_gb"] == 80.0


def test_platforms_and_server_args():
    assert facts("ROCM available: True")["platform"] == "rocm"
    assert facts("torch: 2.6.0+rocm6.3")["platform"] == "rocm"
    got = facts(server_args={"tp_size": "2", "pp_size": "1", "device": "'npu'"})
    assert got["platform"] == "npu" and got["gpus_per_model"] == 2 and got["gpu_count"] == 2


def test_unknown_stays_unknown():
    # a bare GPU-like name outside a line that names a device is no GPU (a model's or a path's name)
    got = facts("Loading model Qwen/Qwen2.5-7B-T4-adapter", "--model-path /models/L4-finetune",
                "[2025-01-01 10:00:00] Load weight begin. avail mem=22.10 GB")
    assert got == {}
    assert hardware.capability_gap(hardware.read([])) is None


def test_capability_gap():
    assert "older than Ampere" in hardware.capability_gap(hardware.read(["GPU 0: Tesla T4"]))
    assert "consumer Blackwell" in hardware.capability_gap(hardware.read(["GPU 0: NVIDIA GeForce RTX 5090"]))
    assert hardware.capability_gap(hardware.read(["GPU 0: NVIDIA A100-SXM4-80GB"])) is None
    assert hardware.capability_gap(hardware.read(["GPU 0: NVIDIA H100 80GB HBM3"])) is None


# -- the evidence ------------------------------------------------------------------------------

_PREFIX = "/usr/local/lib/python3.10/dist-packages/sglang/srt/"
# a traceback cut in an attention kernel under CUDA graph capture: alone, the capture phase decides
CAPTURE_KERNEL_CUT = f'''Traceback (most recent call last):
  File "{_PREFIX}managers/scheduler.py", line 2400, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "{_PREFIX}model_executor/model_runner.py", line 300, in initialize
    self.init_cuda_graphs()
  File "{_PREFIX}model_executor/cuda_graph_runner.py", line 400, in capture
    self.capture_one_batch_size(bs, forward)
  File "{_PREFIX}model_executor/cuda_graph_runner.py", line 500, in capture_one_batch_size
    run_once()
  File "{_PREFIX}layers/attention/flashinfer_backend.py", line 700, in forward_decode
    o = decode_wrapper.forward(
'''
T4_ROW = "|   0  Tesla T4                       Off |   00000000:00:1E.0 Off |                    0 |\n"
A100_ENV = "GPU 0: NVIDIA A100-SXM4-80GB\nGPU 0 Compute Capability: 8.0\n"


def _guess(pack, text: str) -> tuple[dict, dict]:
    (ev,) = incident_events(pack, text)
    return ev, best_guess(ev)


def test_old_gpu_turns_a_capture_cut_kernel_into_the_gpu(pack):
    _, plain = _guess(pack, CAPTURE_KERNEL_CUT)
    assert plain["category"] == "cuda_graph"
    ev, guess = _guess(pack, T4_ROW + CAPTURE_KERNEL_CUT)
    assert guess["category"] == "kernel.unsupported_hw"
    assert any(p["name"] == "hardware:capability" for p in guess["evidence"])
    assert "Tesla T4 (SM75)" in ev["explanation"]  # the fallback names the fact


def test_covered_gpu_adds_nothing(pack):
    _, guess = _guess(pack, A100_ENV + CAPTURE_KERNEL_CUT)
    assert guess["category"] == "cuda_graph"
    assert not any(p["name"].startswith("hardware:") for p in guess["evidence"])


def test_oom_on_an_a100_stays_an_oom(pack):
    text = A100_ENV + f'''Traceback (most recent call last):
  File "{_PREFIX}model_executor/cuda_graph_runner.py", line 500, in capture_one_batch_size
    run_once()
  File "{_PREFIX}layers/attention/flashinfer_backend.py", line 700, in forward_decode
    o = decode_wrapper.forward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.
'''
    (ev,) = incident_events(pack, text)
    assert ev["category"] == "memory.cuda_oom"


def test_old_gpu_does_not_outweigh_an_allocation(pack):
    # a cut traceback stopped at an allocation reads as memory: the T4 must not turn it into its kernels
    text = T4_ROW + f'''Traceback (most recent call last):
  File "{_PREFIX}managers/scheduler.py", line 2400, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "{_PREFIX}layers/quantization/fp8.py", line 300, in create_weights
    weight = torch.empty(
'''
    _, guess = _guess(pack, text)
    assert guess["category"] == "memory.cuda_oom"
    assert not any(p["name"] == "hardware:capability" for p in guess["evidence"])


def test_healthy_t4_launch_has_no_incident(pack):
    text = (T4_ROW + "[2025-05-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-0.5B-Instruct', "
            "tp_size=1, attention_backend='triton')\n"
            "[2025-05-01 10:00:05] Load weight begin. avail mem=14.50 GB\n"
            "[2025-05-01 10:00:09] The server is fired up and ready to roll!\n")
    assert incident_events(pack, text) == []


def test_weights_larger_than_the_gpu_piece():
    hw = hardware.read(["|   0  NVIDIA L4                      Off |   00000000:00:03.0 Off |                    0 |"],
                       {"model_path": "'Qwen/Qwen2.5-72B-Instruct'", "tp_size": "1"})
    pieces = evidence.machine_pieces(hw, [], False, False, {"model_path": "'Qwen/Qwen2.5-72B-Instruct'", "tp_size": "1"})
    assert [(p.name, p.category) for p in pieces] == [("hardware:weights", "memory.cuda_oom")]
    # split over 8 GPUs, or quantized to 4 bits over 4, it fits: no piece
    assert evidence.machine_pieces(hardware.read(["GPU 0: NVIDIA L4"], {"tp_size": "8"}), [], False, False,
                                   {"model_path": "Qwen/Qwen2.5-72B-Instruct", "tp_size": "8"}) == []
    assert evidence.machine_pieces(hardware.read(["GPU 0: NVIDIA L4"], {"tp_size": "4"}), [], False, False,
                                   {"model_path": "Qwen/Qwen2.5-72B-Instruct-AWQ", "tp_size": "4"}) == []
    # after ready the weights had been loaded: not their size
    assert evidence.machine_pieces(hw, [], False, True, {"model_path": "Qwen/Qwen2.5-72B-Instruct", "tp_size": "1"}) == []


def test_pcie_piece_needs_a_distributed_piece():
    hw = hardware.read(["GPU 0,1: NVIDIA GeForce RTX 4090"])
    nccl = [evidence.Evidence("deepest_frame", "nccl", 0.4, "it stopped in torch distributed")]
    assert [p.name for p in evidence.machine_pieces(hw, nccl, False, False, None)] == ["hardware:pcie"]
    assert evidence.machine_pieces(hw, [], False, False, None) == []
    # NVLink between the GPUs: no piece
    linked = hardware.read(["GPU 0,1: NVIDIA GeForce RTX 4090", "GPU0     X      NV4     0-31    0"])
    assert evidence.machine_pieces(linked, nccl, False, False, None) == []


# -- a remedy that depends on the platform (remedy/class_remedies.py switch_backend) -----------


def _backend_diagnosis(machine_lines: list[str]):
    from sglang_doctor.model import Diagnosis, Frame, Incident, Launch

    inc = Incident(kind="traceback", first_line=5, last_line=5,
                   frames=[Frame(file=f"{_PREFIX}layers/attention/triton_backend.py", line=1, function="forward")])
    launch = Launch(index=0, line=1, server_args={}, machine_lines=machine_lines)
    return Diagnosis(incident=inc, rule="class.test", category="kernel.unsupported_hw",
                     remedies=[{"switch_backend": {}}], launch=launch)


def _remedy(d):
    from sglang_doctor.remedy import flags, remedies

    catalog = flags.load_catalog("0.5.23")
    return remedies.remediate(d, command=None, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None)


def test_switch_backend_reads_the_platform_from_the_machine_lines():
    # the log said ROCm before the incident: FlashInfer (CUDA-only) is not proposed, and Triton is the
    # backend that failed, so no switch is left
    assert _remedy(_backend_diagnosis(["ROCM available: True"])) is None
    # an NVIDIA GPU named: FlashInfer, with no "if these are NVIDIA GPUs" hedge
    rem = _remedy(_backend_diagnosis(["GPU 0: NVIDIA GeForce RTX 4090"]))
    assert rem.set == {"--attention-backend": "flashinfer"} and "on ROCm use" not in rem.note
    # nothing said: the hedge stays
    assert "on ROCm use triton or aiter" in _remedy(_backend_diagnosis([])).note


def test_sglangs_own_lines_about_the_gpu():
    # load_model_utils.py maybe_downgrade_dtype_for_legacy_gpu; custom_all_reduce_utils.py's P2P / PCIe checks
    got = facts("[2025-05-01 10:00:03 TP0] Compute capability below sm80. Use float16 due to lack of bfloat16 support.")
    assert got == {"pre_ampere": True}
    assert "below SM80" in hardware.capability_gap(hardware.read(
        ["Compute capability below sm80. Use float16 due to lack of bfloat16 support."]))
    no_p2p = ("[2025-05-01 10:00:04 TP1] Custom allreduce is disabled because your platform lacks GPU P2P capability "
              "or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.")
    assert facts(no_p2p)["link"] == "no_p2p"
    nccl = [evidence.Evidence("deepest_frame", "nccl", 0.4, "it stopped in torch distributed")]
    assert [p.name for p in evidence.machine_pieces(hardware.read([no_p2p]), nccl, False, False, None)] == ["hardware:pcie"]
    assert facts("Setting KV cache dtype to bfloat16 for DeepSeek DSA on SM9 device.")["sm"] == 90


def test_synthetic_check_moves_with_an_old_gpu_and_not_with_a_covered_one(pack):
    from conftest import ROOT, script_module

    synthetic = script_module(ROOT / "bench" / "hw_synthetic.py", "hw_synthetic")
    sites = [s for s in synthetic.sites(pack) if "attention_hook" in s[0]][:4]
    assert sites  # 0.5.23's attention-backend checks are kernel.unsupported_hw sites of the inventory

    def right(machine: str) -> int:
        return sum(synthetic.guess(pack, synthetic.render(path, line, function, synthetic.MACHINES[machine]))
                   == synthetic.TARGET for path, line, function, _ in sites)

    none = right("none")
    assert right("T4 (nvidia-smi)") > none
    assert right("H100 (check_env, control)") == none


def test_torch_arch_warning_counts_before_ready_only():
    hw = hardware.read(["NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                        "PyTorch installation."])
    assert [p.name for p in evidence.machine_pieces(hw, [], False, False, None)] == ["hardware:torch_arch"]
    assert evidence.machine_pieces(hw, [], True, True, None) == []  # it served: its kernels ran on this GPU


def test_batch_lines_do_not_fill_the_machine_lines(pack):
    # "input throughput" holds "npu": every prefill batch line was taken for a machine line, and
    # the first KEEP of them pushed a later nvidia-smi row out
    assert not hardware.names_machine("Prefill batch. #new-seq: 1, #new-token: 7, input throughput (token/s): 0.00")
    assert hardware.names_machine("[2025-05-01 10:00:01] torch_npu 2.1.0 found")
    batches = "".join(f"[2025-05-01 10:00:{i % 60:02d}] Prefill batch. #new-seq: 1, #new-token: {i}, #cached-token: 0, "
                      f"token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 9.{i}\n"
                      for i in range(hardware.KEEP + 10))
    _, guess = _guess(pack, batches + T4_ROW + CAPTURE_KERNEL_CUT)
    assert any(p["name"] == "hardware:capability" for p in guess["evidence"])


def test_naming_lines_is_names_machine_on_each_line(monkeypatch):
    """The pipeline asks about the lines handed over together (hardware.naming_lines: one literal
    search of them all, joined): the same lines as ``names_machine`` asked about each one, with
    "npu" / "xpu" where a letter runs into them or not ("input", "torch_npu", a line's first
    word), a batch line's "input" beside a real "npu", non-ASCII text before the word (the byte
    offsets), and the lines ``names_machine`` leaves out (indented, a frame, over LONGEST)."""
    import random

    lines = ["Prefill batch. #new-seq: 1, input throughput (token/s): 0.00", "torch_npu 2.1.0 found",
             "npu graph: True", "xpu", "an xpu here", "dxpu", "inpu npu", "input npu", "Xinput", "│ █ GPU 0 ▏ NVIDIA",
             "ünïcödé then AMD", "ünïcödé then amd", "  GPU 0: NVIDIA A100", 'File "x.py", line 1, in GPU', "GPU" * 700,
             "Ascend910B", "gfx90a", "hipErrorNoBinaryForGpu", "DeepSeek DSA on SM90 device", "Compute Capability: 8.6",
             "device_name=NVIDIA_H100", "intel_extension_for_pytorch", "Jetson", "tegra", "L4T", "Instinct", "MiB",
             "ROCM available", "ROCm", "rocm6.2", "HIP version", "Tesla T4", "no machine here", "", "capabilities",
             "inpuxpu", "kinpu", "on GPU 3", "[2025-01-01 00:00:00 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 9"]
    rng = random.Random(32)
    texts = lines + ["".join(rng.choice(lines[:12]) for _ in range(rng.randint(1, 3))) for _ in range(300)]
    rng.shuffle(texts)
    want = [i for i, text in enumerate(texts) if hardware.names_machine(text)]
    assert 0 < len(want) < len(texts)
    assert hardware.naming_lines(texts) == want
    for k in range(0, len(texts), 37):  # (any share of them: a block's, one line)
        part = texts[k:k + 37]
        assert hardware.naming_lines(part) == [i for i, text in enumerate(part) if hardware.names_machine(text)]
        assert hardware.naming_lines(part[:1]) == ([0] if hardware.names_machine(part[0]) else [])
    monkeypatch.setattr(hardware, "_hint_matcher", lambda: None)  # without the C extension
    assert hardware.naming_lines(texts) == want


def test_word_patterns_match_as_their_boundary_spellings():
    """hardware._word puts a word's ``\\b`` in a lookbehind after it (so ``re`` can skip to the
    word's first character): the platform and vendor patterns find what ``\\b`` + word found,
    at the same place, with the same groups."""
    import random
    import re

    spelled = {
        "vendor": re.compile(r"\b(?P<device>(?:NVIDIA|Tesla|AMD Instinct)[ _](?:GeForce[ _])?[A-Z][\w-]{1,12}"
                             r"(?:[ _][\w-]{1,10}){0,3})"),
        "rocm": re.compile(r"\bROCM available\b|\+rocm\d|\bgfx9\d\w\b|\bHIP version\b|\bhipErr\w+|\bROCm\b"),
        "npu": re.compile(r"\btorch_npu\b|\bAscend\b|\b910B\d?\b|\bdevice='npu'"),
        "xpu": re.compile(r"\bdevice='xpu'|\bintel_extension_for_pytorch\b|\bXPU\b"),
        "jetson": re.compile(r"\bJetson\b|\btegra\b|\bL4T\b"),
    }
    written = {"vendor": hardware._VENDOR_NAME, **dict(hardware._PLATFORMS)}
    pieces = ["NVIDIA", "Tesla", "AMD Instinct", "ROCM available", "+rocm6", "gfx90a", "HIP version", "hipErrorX",
              "ROCm", "torch_npu", "Ascend", "910B2", "device='npu'", "device='xpu'", "intel_extension_for_pytorch",
              "XPU", "Jetson", "tegra", "L4T", "x", "_", " ", "é", "1", "-", " A100", "_H100 80GB", "GeForce RTX"]
    rng = random.Random(32)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    found = 0
    for text in texts:
        for name, rx in spelled.items():
            want, got = rx.search(text), written[name].search(text)
            assert (want is None) == (got is None), (name, text)
            if want is not None:
                found += 1
                assert want.span() == got.span() and want.groupdict() == got.groupdict(), (name, text)
    assert found > 1000
