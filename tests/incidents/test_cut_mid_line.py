"""Search excerpts and selections cut mid-line (bench/robustness.py: excerpt, cut_key_head,
cut_key_tail): a paste that starts inside the exception type, or ends inside the message,
keeps its answer; a healthy line cut so stays healthy.  The texts are shaped like real
pastes (the block-FP8 shard message of sglang srt/layers/quantization/fp8.py)."""

from cut_sample import BLOCK_FP8, P, SIGQUIT, answers

FRAMES = f"""Traceback (most recent call last):
  File "{P}/model_executor/model_runner.py", line 905, in load_model
    self.model = get_model(
  File "{P}/layers/quantization/fp8.py", line 447, in create_weights
    raise ValueError(
"""


def test_first_line_cut_inside_the_exception_type():
    # fails on the old code: the type "ueError" / "rror" matched no rule's ValueError
    for head in ("ueError: ", "rror: ", "lueError: "):
        (d,) = answers(head + BLOCK_FP8 + "\n" + SIGQUIT)
        assert d.rule == "args.invalid.block_fp8_partition", (head, d.rule)
        assert d.incident.exception.type.startswith("\u2026")  # shown as a tail, not a type
        assert any("cut by the paste" in a for a in d.assumed)


def test_a_short_tail_needs_the_failure_words():
    # "or: ..." / "ption: ..." end common words (monitor, option): a healthy first line cut so
    # is not an exception
    assert answers("or: started, interval=5s\n[2025-12-05 14:10:22] INFO: Decode batch. #running-req: 1\n") == []
    assert answers("ption: --enable-metrics is set\n") == []
    # the same short tail with a failure's words is one (torch's OOM, cut to "r: ")
    (d,) = answers("r: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.54 GiB\n")
    assert d.category == "memory.cuda_oom"


def test_a_whole_type_on_the_first_line_stays_whole():
    (d,) = answers("Exception: Capture cuda graph failed: [/pytorch/third_party/gloo/gloo/transport/tcp/"
                   "unbound_buffer.cc:133] Timed out waiting 1800000ms for send operation to complete\n")
    assert d.incident.exception.type == "Exception"
    assert d.rule == "nccl.gloo_transport_under_capture"


def test_message_cut_where_the_paste_ends():
    # fails on the old code: the rule's pattern needs the message's end
    (d,) = answers(FRAMES + "ValueError: Weight output_partition_size = 4864 is not divisible by wei")
    assert d.rule == "args.invalid.block_fp8_partition"
    assert d.incident.cut_at_end
    assert any("cut where the paste ends" in a for a in d.assumed)


def test_a_cut_message_is_only_read_partially_at_the_end_of_the_input():
    # the same words on a whole line (a line end follows): the message is what it says
    (d,) = answers(FRAMES + "ValueError: Weight output_partition_size = 4864 is not divisible by wei\n")
    assert d.rule != "args.invalid.block_fp8_partition"
    assert not d.incident.cut_at_end


def test_a_wildcard_is_not_a_start_of_any_cut_message():
    # nccl.custom_allreduce_cuda_error's pattern starts with "(.+)\n": any cut text is a start
    # of it, but none of its own words (custom_all_reduce) is there
    (d,) = answers(FRAMES + "RuntimeError: an unrelated failure whose message runs on and on until the cu")
    assert d.rule != "nccl.custom_allreduce_cuda_error"
