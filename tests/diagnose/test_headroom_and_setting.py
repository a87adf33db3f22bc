"""Session 33: two readings of what the launch itself says, for a text cut before its cause.

- ``pool_headroom``: the dump's ``mem_fraction_static`` and the free memory before the weights ("Load weight
  begin. avail mem=F GB") leave ``F x (1 - mem_fraction_static)`` to what comes after the pools (SGLang's own
  sizing); under ``evidence.LOW_AVAIL_GB``, a text that stops past the pools with no free figure of its own is
  read as a CUDA OOM after them.
- ``hardware:setting``: the launch sets an attention backend or KV-cache dtype whose kernels the GPU the log
  names cannot run (``evidence.SETTING_SM``), before ready."""

from sglang_doctor.diagnose import evidence, hardware
from sglang_doctor.pipeline import StreamPipeline

DUMP = ("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/models/m', tokenizer_path='/models/m', "
        "mem_fraction_static={mfs}, tp_size=1, attention_backend={backend}, kv_cache_dtype='auto', device='cuda')\n")
BEGIN = "[2026-01-01 00:00:03 TP0] Load weight begin. avail mem=23.10 GB\n"
END = ("[2026-01-01 00:00:05 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=8.52 GB, "
       "mem usage=14.50 GB.\n")
KV = "[2026-01-01 00:00:06 TP0] KV Cache is allocated. #tokens: 30000, K size: 3.00 GB, V size: 3.00 GB\n"
POOL_END = "[2026-01-01 00:00:06 TP0] Memory pool end. avail mem=2.90 GB\n"
CUT = ('Traceback (most recent call last):\n'
       '  File "/usr/lib/python3/site-packages/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process\n'
       '    scheduler = Scheduler(\n'
       '  File "/usr/lib/python3/site-packages/sglang/srt/model_executor/model_runner.py", line 400, in '
       'init_attention_backend\n'
       '    self.attn_backend = self._get_attention_backend()\n')


def summary_guess(pack, text: str) -> dict:
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]["best_guess"]


def incident_guess(pack, text: str) -> dict:
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    incidents = [e for e in events if e["event"] == "incident"]
    assert len(incidents) == 1
    return incidents[0]["fallback"]["best_guess"]


def names(guess: dict) -> list[str]:
    return [ev["name"] for ev in guess["evidence"]]


def test_a_fraction_that_leaves_almost_nothing_after_the_pools_is_a_memory_piece(pack):
    guess = summary_guess(pack, DUMP.format(mfs=0.95, backend="'flashinfer'") + BEGIN + END + KV)
    assert "pool_headroom" in names(guess)
    assert guess["category"] == "memory.cuda_oom"
    assert guess["grounds"] == "text"


def test_a_fraction_that_leaves_room_is_no_piece(pack):
    guess = summary_guess(pack, DUMP.format(mfs=0.85, backend="'flashinfer'") + BEGIN + END + KV)
    assert "pool_headroom" not in names(guess)


def test_a_free_figure_after_the_pools_is_read_instead_of_the_prediction(pack):
    # (the last milestone prints its own free memory: low_memory reads it, the prediction is not made)
    guess = summary_guess(pack, DUMP.format(mfs=0.95, backend="'flashinfer'") + BEGIN + END + KV + POOL_END)
    assert "pool_headroom" not in names(guess)


def test_no_headroom_piece_before_the_pools_are_sized(pack):
    guess = summary_guess(pack, DUMP.format(mfs=0.95, backend="'flashinfer'") + BEGIN + END)
    assert "pool_headroom" not in names(guess)


def test_a_backend_the_named_gpu_cannot_run_is_a_hardware_piece_for_a_cut_traceback(pack):
    text = "[2026-01-01 00:00:00] GPU 0: NVIDIA B200\n" + DUMP.format(mfs=0.85, backend="'fa3'") + BEGIN + END + CUT
    guess = incident_guess(pack, text)
    assert "hardware:setting" in names(guess)
    assert guess["category"] == "kernel.unsupported_hw"


def test_the_same_backend_on_a_gpu_that_runs_it_is_no_piece(pack):
    text = "[2026-01-01 00:00:00] GPU 0: NVIDIA H100 80GB HBM3\n" + DUMP.format(mfs=0.85, backend="'fa3'") + BEGIN + END
    guess = summary_guess(pack, text)
    assert "hardware:setting" not in names(guess)


def _hw(sm: int, platform: str = "cuda") -> hardware.Hardware:
    hw = hardware.Hardware()
    hw.add("sm", sm, "a line")
    hw.add("platform", platform, "a line")
    return hw


def test_setting_gap_reads_each_release_s_refusals():
    assert evidence.setting_gap(_hw(100), {"attention_backend": "'fa3'"}) is not None
    assert evidence.setting_gap(_hw(89), {"attention_backend": "'fa3'"}) is None
    assert evidence.setting_gap(_hw(75), {"attention_backend": "fa3"}) is not None
    assert evidence.setting_gap(_hw(90), {"decode_attention_backend": "'trtllm_mla'"}) is not None
    assert evidence.setting_gap(_hw(100), {"decode_attention_backend": "'trtllm_mla'"}) is None
    assert evidence.setting_gap(_hw(86), {"attention_backend": "'flashmla'"}) is not None
    assert evidence.setting_gap(_hw(90), {"kv_cache_dtype": "'fp4_e2m1'"}) is not None
    assert evidence.setting_gap(_hw(90), {"kv_cache_dtype": "'fp8_e4m3'"}) is None
    # unknown stays unknown: no SM, another platform, no dump
    assert evidence.setting_gap(hardware.Hardware(), {"attention_backend": "'fa3'"}) is None
    assert evidence.setting_gap(_hw(94, "rocm"), {"attention_backend": "'fa3'"}) is None
    assert evidence.setting_gap(_hw(100), None) is None


def test_no_setting_piece_after_ready():
    pieces = evidence.machine_pieces(_hw(100), [], True, True, {"attention_backend": "'fa3'"})
    assert not [p for p in pieces if p.name == "hardware:setting"]
    pieces = evidence.machine_pieces(_hw(100), [], True, False, {"attention_backend": "'fa3'"})
    assert [p.category for p in pieces if p.name == "hardware:setting"] == ["kernel.unsupported_hw"]


def test_no_headroom_piece_on_a_cpu_launch(pack):
    # (a CPU launch's "avail mem=" is host memory, not what SGLang leaves a GPU)
    text = DUMP.format(mfs=0.95, backend="'torch_native'").replace("device='cuda'", "device='cpu'") + BEGIN + END + KV
    guess = summary_guess(pack, text)
    assert "pool_headroom" not in names(guess)


def test_the_setting_is_read_instead_of_the_generation_alone():
    # (SM75 is a generation SGLang's kernels often leave out; the launch's fa3 is the precise reading)
    pieces = evidence.machine_pieces(_hw(75), [], True, False, {"attention_backend": "'fa3'"})
    assert [p.name for p in pieces if p.category == "kernel.unsupported_hw"] == ["hardware:setting"]
    pieces = evidence.machine_pieces(_hw(75), [], True, False, {"attention_backend": "'triton'"})
    assert [p.name for p in pieces if p.category == "kernel.unsupported_hw"] == ["hardware:capability"]
