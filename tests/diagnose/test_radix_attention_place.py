"""RadixAttention.forward as the place a cut traceback stopped (diagnose/evidence.py WHERE):
srt/layers/radix_attention.py only hands the layer to the attention backend's forward, so a
traceback whose text stops there was entering the backend's kernels -- the same place as a frame
inside srt/layers/attention/.  The frames follow SGLang 0.5.2x's layout (a DeepSeek-architecture
model's MLA forward, sglang#40558), cut before the exception line."""

from conftest import only_incident

P = "/home/u/.venv/lib/python3.12/site-packages/sglang/srt"
MODEL = (f'  File "{P}/models/deepseek_v2.py", line 2190, in forward_core\n'
         "    return self.forward_absorb_core(*inner_state)\n"
         f'  File "{P}/models/deepseek_common/attention_forward_methods/forward_mla.py", line 739, in forward_absorb_core\n'
         "    attn_output = self.attn_mqa(\n"
         f'  File "{P}/layers/radix_attention.py", line 290, in forward\n'
         "    return get_attn_backend().forward(\n")


def guess_of(pack, text):
    ev = only_incident(pack, text)
    return ev["fallback"]["best_guess"]


def test_a_traceback_cut_in_radix_attention_forward_was_entering_an_attention_kernel(pack):
    guess = guess_of(pack, MODEL)
    assert guess["category"] == "kernel.unsupported_hw"
    assert any(e["name"] == "deepest_frame" and "RadixAttention.forward" in e["why"] for e in guess["evidence"])


def test_under_cuda_graph_capture_the_same_place_names_the_capture_step(pack):
    capture = (f'  File "{P}/model_executor/cuda_graph_runner.py", line 640, in capture_one_batch_size\n'
               "    run_once()\n")
    guess = guess_of(pack, capture + MODEL)
    # (the kernel a capture runs for the first time says which step, read through the phase prior)
    assert not any(e["name"] == "deepest_frame" for e in guess["evidence"])
    assert any(e["name"] == "prior:startup.cuda_graph" for e in guess["evidence"])
    assert guess["category"] == "cuda_graph"
