"""Two readings of what a text cut above its error line was doing (diagnose/evidence.py):

- ``capability_check``: a cut traceback whose deepest line asserts or raises on a device / platform query
  (SGLang's is_cuda / is_sm100_supported / get_device_capability / ``_platform_supports_*`` ...), or that
  stops inside the query itself (get_device raising "No accelerator ... is available"), was a check
  refusing the machine: kernel.unsupported_hw, over the class rule that names the module it sits in.
  The frames are real SGLang 0.5.23 text (fixtures/real/hybrid_extra_buffer_unsupported_0523.log,
  fixtures/real/no_accelerator_0523.log), cut above the exception line.
- ``argparse_usage``: a text that ends in argparse's usage block lost the "PROG: error: ..." line argparse
  prints right after it (``ArgumentParser.error``): args.invalid; the block's option names are no words.
"""

from conftest import only_incident

from sglang_doctor.diagnose import evidence
from sglang_doctor.pipeline import StreamPipeline

P = "/venv/lib/python3.11/site-packages/sglang"
HEAD = ("Traceback (most recent call last):\n"
        f'  File "{P}/launch_server.py", line 29, in run_server\n'
        "    server_args.resolve_once()\n"
        f'  File "{P}/srt/server_args.py", line 277, in resolve_once\n'
        "    run_resolution_pipeline(self)\n")
MAMBA = HEAD + (f'  File "{P}/srt/arg_groups/model_hook.py", line 1070, in handle_mamba_radix_cache\n'
                "    validate_mamba_extra_buffer(\n"
                f'  File "{P}/srt/arg_groups/mamba_hook.py", line 120, in validate_mamba_extra_buffer\n'
                "    assert _platform_supports_mamba_cache_extra_buffer(), (\n")
DEVICE = HEAD + (f'  File "{P}/srt/arg_groups/serving_hook.py", line 652, in handle_missing_default_values\n'
                 "    device=get_device(),\n"
                 f'  File "{P}/srt/utils/common.py", line 1124, in get_device\n'
                 "    raise RuntimeError(\n")


def guess(pack, text):
    return only_incident(pack, text)["fallback"]["best_guess"]


def test_a_cut_assert_on_a_platform_query_is_the_machine_refused(pack):
    g = guess(pack, MAMBA)
    assert g["category"] == "kernel.unsupported_hw"
    assert any(e["name"] == "capability_check" for e in g["evidence"])
    assert "_platform_supports_mamba_cache_extra_buffer" in g["why"]


def test_a_cut_traceback_inside_get_device_is_the_machine_refused(pack):
    g = guess(pack, DEVICE)
    assert g["category"] == "kernel.unsupported_hw"
    assert "get_device" in g["why"]


def test_an_argument_check_that_asks_no_machine_question_stays_an_argument(pack):
    text = MAMBA.replace("assert _platform_supports_mamba_cache_extra_buffer(), (",
                         "assert server_args.max_mamba_cache_size > 0, (")
    g = guess(pack, text)
    assert g["category"] == "args.invalid"
    assert not any(e["name"] == "capability_check" for e in g.get("evidence", ()))


def test_a_platform_branch_is_no_check(pack):
    # ``if _is_cuda:`` is how every module dispatches; only an assert / raise on the query is a refusal
    text = MAMBA.replace("assert _platform_supports_mamba_cache_extra_buffer(), (", "if _is_cuda and is_sm100_supported():")
    assert not any(e["name"] == "capability_check" for e in guess(pack, text).get("evidence", ()))


def test_the_whole_traceback_with_its_exception_line_is_not_read_as_cut(pack):
    ev = only_incident(pack, MAMBA + "AssertionError: extra_buffer requires platform support for Mamba cache state.\n")
    assert ev.get("fallback") is None or not any(
        e["name"] == "capability_check" for e in (ev["fallback"].get("best_guess") or {}).get("evidence", ()))


USAGE = ("usage: sglang serve [-h] [--model-path MODEL_PATH] [--tokenizer-path TOKENIZER_PATH]\n"
         + "".join(f"                    [--flag-{i} {{nccl,gloo}}] [--enable-thing-{i}]\n" for i in range(12)))


def summary_guess(pack, text):
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e["event"] == "incident"]
    return pipe.summary()["fallback"]["best_guess"]


def test_a_text_that_ends_in_argparses_usage_block_lost_the_parser_error(pack):
    g = summary_guess(pack, USAGE)
    assert g["category"] == "args.invalid"
    assert [e["name"] for e in g["evidence"]] == ["argparse_usage"]  # the block's words (nccl, ...) are not read


def test_the_wrapped_lines_alone_count_only_when_there_are_enough(pack):
    wrapped = USAGE.splitlines(keepends=True)[1:]
    assert evidence.argparse_usage(wrapped)
    assert not evidence.argparse_usage(wrapped[:evidence.USAGE_RUN - 1])
    # the help's sections after the usage: -h, not an error
    assert not evidence.argparse_usage(USAGE.splitlines() + ["", "options:", "  -h, --help  show this help message"])


# corpus/fresh/004's fragment (verl's rollout, 0.4.x, behind ray's prefix), which begins inside the serving
# traceback and is cut here above its exception line: an illegal memory access of an earlier kernel,
# reported at the host copy
RAY = "(WorkerDict pid=859188) "
SERVING = (f"{RAY}    model_worker_batch = batch.get_model_worker_batch()\n"
           f"{RAY}                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
           f'{RAY}  File "{P}/srt/managers/schedule_batch.py", line 1602, in get_model_worker_batch\n'
           f"{RAY}    seq_lens_cpu = self.seq_lens.cpu()\n"
           f"{RAY}                   ^^^^^^^^^^^^^^^^^^^\n")


def test_a_cut_traceback_at_a_host_copy_reports_an_earlier_kernels_crash(pack):
    g = guess(pack, SERVING)
    assert g["category"] == "runtime.crash"
    assert any(e["name"] == "sync_point" and e["category"] == "runtime.crash" for e in g["evidence"])


def test_a_host_copy_under_capture_is_the_capture_refusing_it(pack):
    text = (f'{RAY}  File "{P}/srt/model_executor/cuda_graph_runner.py", line 400, in capture\n'
            f"{RAY}    self.capture_one_batch_size(bs)\n" + SERVING)
    pieces = [e for e in guess(pack, text)["evidence"] if e["name"] == "sync_point"]
    assert [e["category"] for e in pieces] == ["cuda_graph"]


def test_a_line_that_waits_for_nothing_is_no_sync_point(pack):
    text = SERVING.replace("seq_lens_cpu = self.seq_lens.cpu()", "seq_lens = self.seq_lens")
    assert not any(e["name"] == "sync_point" for e in guess(pack, text).get("evidence", ()))


# corpus/dev/098's shape (a vision tower's 16 heads over TP 6), cut above "AssertionError: 16 is not divisible by 6"
DIVIDE = ("Traceback (most recent call last):\n"
          f'  File "{P}/srt/layers/linear.py", line 420, in __init__\n'
          "    self.num_heads = divide(self.total_num_heads, tp_size)\n"
          f'  File "{P}/srt/distributed/utils.py", line 78, in divide\n'
          "    ensure_divisibility(numerator, denominator)\n"
          f'  File "{P}/srt/distributed/utils.py", line 70, in ensure_divisibility\n'
          '    assert numerator % denominator == 0, "{} is not divisible by {}".format(\n')


def test_a_cut_divisibility_check_is_the_tp_size_against_the_model_not_nccl(pack):
    g = guess(pack, DIVIDE)
    assert g["category"] == "args.invalid"
    assert "ensure_divisibility" in g["why"]


def test_another_function_of_the_distributed_utils_stays_nccl(pack):
    text = DIVIDE.replace("in ensure_divisibility", "in init_gloo_group").replace("in divide", "in init_groups")
    assert guess(pack, text)["category"] == "nccl"
