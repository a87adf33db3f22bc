"""faulthandler's dump of a fatal signal, read as evidence for the best guess.

SGLang's scheduler calls faulthandler.enable() when it starts (run_scheduler_process), so a
segfault or an abort prints "Fatal Python error: ..." and every thread's frames in CPython's
dump shape, ``File "<path>", line N in <function>`` (no comma, no source line).  A paste that
lost the "Fatal Python error" line still shows the fatal signal by that shape; and a process
killed by a signal inside an attention / MoE kernel crashed there: the frames' "inside a
kernel" reading (a kernel refusing this GPU, which raises a Python exception) turns into a
crash there.  SIGILL (a CPU without the instruction: the hardware's refusal) is not read so."""

from pathlib import Path

from conftest import incident_events, best_guess

ROOT = Path(__file__).resolve().parents[2]
SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
# most recent call first, as faulthandler writes them
MOE_DUMP = (
    f'  File "{SITE}/layers/moe/fused_moe_triton/fused_moe.py", line 1290 in fused_experts_impl\n'
    f'  File "{SITE}/layers/moe/fused_moe_triton/layer.py", line 845 in forward\n'
    '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1784 in _call_impl\n'
    f'  File "{SITE}/models/deepseek_v2.py", line 702 in forward\n'
)
# the same frames as a traceback prints them (most recent call last, commas, source lines), cut
# before its exception line
MOE_TRACEBACK = (
    "Traceback (most recent call last):\n"
    f'  File "{SITE}/models/deepseek_v2.py", line 702, in forward\n'
    "    final_hidden_states = self.experts(hidden_states=hidden_states, topk_output=topk_output)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1784, in _call_impl\n'
    "    return forward_call(*args, **kwargs)\n"
    f'  File "{SITE}/layers/moe/fused_moe_triton/layer.py", line 845, in forward\n'
    "    return self.run_moe_core(dispatch_output)\n"
    f'  File "{SITE}/layers/moe/fused_moe_triton/fused_moe.py", line 1290, in fused_experts_impl\n'
    "    invoke_fused_moe_kernel(\n"
)
THREAD = "Thread 0x00007f1363bff640 (most recent call first):\n"
CURRENT = "Current thread 0x00007f1363bff640 (most recent call first):\n"


incidents = incident_events


guess = best_guess


def pieces(ev):
    return {e["name"]: e["category"] for e in guess(ev)["evidence"]}


def test_faulthandler_frames_without_the_fatal_line_are_a_fatal_signal_in_the_kernel(pack):
    (ev,) = incidents(pack, MOE_DUMP)
    got = pieces(ev)
    assert got.get("faulthandler_frames") == "runtime.crash"
    assert "kernel.unsupported_hw" not in got.values()
    assert guess(ev)["category"] == "runtime.crash"


def test_the_same_frames_as_a_cut_traceback_stay_inside_a_kernel(pack):
    (ev,) = incidents(pack, MOE_TRACEBACK)
    got = pieces(ev)
    assert "faulthandler_frames" not in got
    assert got.get("deepest_frame") == "kernel.unsupported_hw"


def test_a_named_segfault_turns_the_kernel_place_into_a_crash_with_no_second_piece(pack):
    (ev,) = incidents(pack, "Fatal Python error: Segmentation fault\n\n" + CURRENT + MOE_DUMP)
    got = pieces(ev)
    assert got.get("signal:faulthandler") == "runtime.crash"
    assert "faulthandler_frames" not in got  # the line names the signal already
    assert got.get("native_frame") == "runtime.crash"  # the crashing thread's stack, in the MoE kernel
    assert guess(ev)["category"] == "runtime.crash"


def test_illegal_instruction_is_not_read_as_a_crash_in_the_kernel(pack):
    (ev,) = incidents(pack, "Fatal Python error: Illegal instruction\n\n" + CURRENT + MOE_DUMP)
    got = pieces(ev)
    assert "faulthandler_frames" not in got
    assert got.get("native_frame") == "kernel.unsupported_hw"


def test_the_tuned_interleaved_dump_is_a_crash_while_serving(pack):
    # corpus/field31/004 (ktransformers#1774): frames of several processes interleaved, the
    # "Fatal Python error: Segmentation fault" line only in the title
    text = (ROOT / "corpus/field31/004-runtime.crash-kt-kernel-amx-interleaved-faulthandler-frames-multi-turn.log").read_text()
    (ev,) = incidents(pack, text)
    assert ev["category"] == "runtime.crash"
