"""Real pastes are degraded copies of what SGLang wrote (bench/robustness.py measures how the
answer survives each kind): these are the general mechanisms that keep a failure readable
through them, each on a text shaped like a real paste."""

from pathlib import Path

from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.read import records

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"

# torch's rendezvous failure as pasted in an Ascend issue (corpus dev/006's shape)
PORT_IN_USE = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
    "address. port: 42173, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n"
)

CAPTURE_TRACEBACK = f"""[2025-04-12 03:11:09 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{P}/managers/scheduler.py", line 1816, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "{P}/model_executor/model_runner.py", line 741, in init_cuda_graphs
    self.cuda_graph_runner = CudaGraphRunner(self)
  File "{P}/model_executor/cuda_graph_runner.py", line 239, in __init__
    raise Exception(
Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB of which 97.06 MiB is free.
"""


def incidents_of(text: str, whole_log: bool = False):
    pipe = StreamPipeline(whole_log=whole_log)  # whole_log: a finished file, as explain reads it
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e["_diagnosis"].incident for e in events if e["event"] == "incident"]


def quoted(text: str) -> str:
    return "".join(("> " + line) if line.strip() else ">\n" for line in text.splitlines(keepends=True))


def test_markdown_quote_mark_is_an_outer_prefix():
    assert records.strip_outer("> [2025-04-12 03:11:09 TP0] Load weight end.") == "[2025-04-12 03:11:09 TP0] Load weight end."
    assert records.strip_outer(">") == ""
    assert records.strip_outer(">   File \"x.py\", line 3, in f") == "  File \"x.py\", line 3, in f"
    # not a quote mark: a Python prompt, a shell redirect inside a command
    assert records.strip_outer(">>> import sglang") == ">>> import sglang"
    assert records.strip_outer(">/dev/null 2>&1") == ">/dev/null 2>&1"


def test_a_quoted_exception_line_is_an_incident():
    (inc,) = incidents_of(quoted(PORT_IN_USE))
    assert inc.exception.type.endswith("DistNetworkError")
    assert "address already in use" in inc.exception.message


def test_a_quoted_traceback_is_read_as_the_unquoted_one():
    (plain,) = incidents_of(CAPTURE_TRACEBACK)
    (inc,) = incidents_of(quoted(CAPTURE_TRACEBACK))
    assert inc.exception == plain.exception
    assert [f.function for f in inc.frames] == [f.function for f in plain.frames]


def fold(text: str, width: int) -> str:
    """What a terminal's copy of the text gives when it folds long lines at ``width``."""
    out = []
    for line in text.splitlines():
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out) + "\n"


def test_a_folded_text_has_its_width_and_a_plain_one_has_none():
    assert records.wrap_width(fold(CAPTURE_TRACEBACK, 80).encode()) == 80
    assert records.wrap_width(fold(CAPTURE_TRACEBACK, 80).replace("\n", "\r\n").encode()) == 80
    assert records.wrap_width(CAPTURE_TRACEBACK.encode()) is None
    # the next record of the same kind at the same length is not a folded piece (a progress
    # bar's lines, two ranks' lines), nor is an INFO: line or a time stamp after a long line
    bars = "".join(f"Loading safetensors checkpoint shards:  {p:2d}% Completed | {p}/163 [00:3{p % 10}<00:12,  3.40it/s]\n"
                   for p in range(10, 30))
    assert records.wrap_width(bars.encode()) is None
    ranks = "".join(f"[2025-04-12 03:11:09 TP{r}] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, "
                    f"avail mem=21.73 GB, mem usage=15.27 GB.\nINFO:     Started server process [{r}]\n" for r in range(4))
    assert records.wrap_width(ranks.encode()) is None
    # one line repeated is not two folded lines (two ranks' sigquit, each before a progress line)
    sigquit = "[2026-12-02 15:54:37] Received sigquit from a child process. It usually means the child failed.\n"
    assert records.wrap_width((sigquit + "Capturing batches (bs=8 avail_mem=20.1 GB):  50%\n").encode() * 2) is None


def test_a_folded_traceback_is_read_whole():
    (plain,) = incidents_of(CAPTURE_TRACEBACK)
    (inc,) = incidents_of(fold(CAPTURE_TRACEBACK, 80), whole_log=True)
    assert inc.exception == plain.exception  # the exception line's three pieces joined back
    assert [f.function for f in inc.frames] == [f.function for f in plain.frames]
    # a joined line is numbered by its first piece: the incident still starts at the header
    assert inc.first_line == 1 and inc.last_line == len(fold(CAPTURE_TRACEBACK, 80).splitlines()) - 1
    # a live stream (pipe, watch) is the server's own output, never folded: read as it comes
    assert all(live.exception != plain.exception for live in incidents_of(fold(CAPTURE_TRACEBACK, 80)))



def test_the_fold_width_is_judged_the_same_whatever_the_block_sizes():
    """explain judges the fold on the text's first bytes, not on its first block: a paste fed
    in small pieces (a gzip member's chunks, a pipe) is joined back as when read in one block."""
    text = fold(CAPTURE_TRACEBACK, 80).encode()
    pipe = StreamPipeline(whole_log=True)
    events = []
    for i in range(0, len(text), 37):
        events += pipe.feed(text[i:i + 37])
    events += pipe.finish()
    (inc,) = [e["_diagnosis"].incident for e in events if e["event"] == "incident"]
    (whole,) = incidents_of(fold(CAPTURE_TRACEBACK, 80), whole_log=True)
    assert inc.exception == whole.exception and "Capture cuda graph failed" in inc.exception.message
    assert (inc.first_line, inc.last_line) == (whole.first_line, whole.last_line)

def test_a_folded_line_whose_last_piece_ends_the_text_is_kept():
    from sglang_doctor.incidents.assemble import Assembler
    from sglang_doctor.model import Line

    line = PORT_IN_USE.rstrip("\n")
    width = len(line) // 2
    asm = Assembler()
    asm.wrap_width = width
    pieces = [line[:width], line[width:2 * width]]  # the text ends on a piece of exactly the width
    events = [ev for n, piece in enumerate(pieces, 1) for ev in asm.feed(Line(n, piece))]
    assert events == [] and asm.active  # the held piece keeps the assembler listening
    (ev,) = asm.flush()
    message = ev.incident.exception.message
    assert "\n" not in message and message.endswith(line[2 * width - 20:2 * width])  # one line again


# transformers' KeyError under SGLang's tokenizer set-up, the paste cut inside the last frame
# line and its indentation lost (corpus fresh/026's shape, dedented)
CUT_IN_A_FRAME_DEDENTED = f"""File "/usr/local/lib/python3.10/dist-packages/transformers/models/auto/configuration_auto.py", line 815, in __getitem__
raise KeyError(key)
KeyError: 'qwen3_moe'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
File "{P}/managers/scheduler.py", line 2014, in run_scheduler_process
scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
File "{P}/managers/scheduler.py", line 433, in init_tokenizer
self.model_config = ModelConfig(
File "/usr/local/
"""


def test_a_frame_line_cut_short_at_column_0_is_not_the_exception():
    (inc,) = incidents_of(CUT_IN_A_FRAME_DEDENTED)
    assert [e.type for e in inc.chain] == ["KeyError"]  # no exception "File \"/usr/local/"
    assert inc.exception.message == "'qwen3_moe'"


def test_kubectl_timestamps_keep_the_lines_own_indentation():
    assert records.strip_outer('2025-06-01T08:15:41.121883252Z   File "x.py", line 3, in f') == '  File "x.py", line 3, in f'
    assert records.strip_outer("2025-06-01T08:15:41.121883252Z     call()") == "    call()"
    assert records.strip_outer("2025-11-05T01:56:54.286620Z  INFO scheduler.__init__: x") == "INFO scheduler.__init__: x"
    text = "".join(f"2025-06-01T08:15:{i:02d}.121883252Z {line}\n" for i, line in enumerate(CAPTURE_TRACEBACK.splitlines()))
    (plain,) = incidents_of(CAPTURE_TRACEBACK)
    (inc,) = incidents_of(text)
    assert [(f.function, f.source) for f in inc.frames] == [(f.function, f.source) for f in plain.frames]


def test_a_closing_code_fence_or_details_tag_is_not_part_of_the_message():
    (plain,) = incidents_of(PORT_IN_USE)
    for closing in ("```\n", "```\n\n</details>\n", "</details>\n", "~~~\n"):
        (inc,) = incidents_of("<details><summary>log</summary>\n\n```log\n" + PORT_IN_USE + closing)
        assert inc.exception == plain.exception, closing


# one frame line and one source line folded (a width the text has only once: no global width)
ONE_FOLD = f"""Traceback (most recent call last):
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/server_args.py", line 712, in prepare_server_args
    server_args.resolve_once()
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/arg_groups/mamba_hook.py", line 150, in _
ba_radix_strategy
    assert self.disable_overlap_schedule, (self.mamba_radix_cache_strategy, self.disable_over
lap_schedule)
AssertionError: no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.
"""


def test_a_folded_frame_or_source_line_is_not_the_exception_line():
    (inc,) = incidents_of(ONE_FOLD, whole_log=True)
    assert inc.exception.type == "AssertionError" and inc.exception.message.startswith("no_buffer")
    assert [f.function for f in inc.frames] == ["prepare_server_args", "_ba_radix_strategy"]
    assert inc.frames[-1].source.endswith("self.disable_overlap_schedule)")
    assert not inc.truncated


def test_two_ranks_copies_of_a_line_are_not_folded_pieces():
    # each rank's record followed by the shell's line (fixtures/classes/bus_error_shm.log, two ranks)
    text = "".join(f"[2026-05-09 10:00:01 TP{r}] Load weight begin. avail mem=47.00 GB, the weights of rank {r}\n"
                   "Bus error (core dumped)\n" for r in range(2))
    assert records.wrap_width(text.encode()) is None
    assert [i.signal_names for i in incidents_of(text, whole_log=True)] == [i.signal_names for i in incidents_of(text)]


def test_an_exception_line_no_deeper_than_its_frame_ends_an_indented_paste():
    """A paste that indented every line (a markdown list, a quoted block): Python puts a
    frame's source deeper than its frame line, so an exception-shaped line no deeper than the
    frame is the exception, not source."""
    text = (f'  File "{P}/layers/quantization/fp8.py", line 350, in validate_block_quant_shapes\n'
            "      raise ValueError(\n"
            "  ValueError: Weight output_partition_size = 320 is not divisible by weight quantization block_n = 128.\n")
    (inc,) = incidents_of(text, whole_log=True)
    assert inc.exception is not None and inc.exception.type == "ValueError"
    assert inc.exception.message.startswith("Weight output_partition_size = 320")


def test_an_exception_shaped_source_line_deeper_than_its_frame_stays_source():
    text = ("Traceback (most recent call last):\n"
            f'  File "{P}/server_args.py", line 900, in check\n'
            "    ValueError: int = 3\n"
            "RuntimeError: the real exception\n")
    (inc,) = incidents_of(text, whole_log=True)
    assert inc.exception.type == "RuntimeError"


def test_a_tests_own_assertion_is_not_the_servers_failure():
    """A CI job ran a benchmark test against a healthy server; the test's threshold check
    failed (unittest's assertGreaterEqual, under SGLang's CustomTestCase retry wrapper)."""
    text = ("Traceback (most recent call last):\n"
            f'  File "{P}/utils/common.py", line 2527, in retry\n'
            "    return fn()\n"
            '  File "/usr/lib/python3.11/unittest/case.py", line 579, in _callTestMethod\n'
            "    if method() is not None:\n"
            '  File "/repo/test/nightly/test_perf.py", line 91, in test_throughput\n'
            "    self.assertGreaterEqual(throughput, 2078.3)\n"
            '  File "/usr/lib/python3.11/unittest/case.py", line 703, in fail\n'
            "    raise self.failureException(msg)\n"
            "AssertionError: 1963.81 not greater than or equal to 2078.3\n")
    assert incidents_of(text, whole_log=True) == []


def test_an_assertion_inside_sglang_under_a_test_is_still_an_incident():
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.11/unittest/case.py", line 579, in _callTestMethod\n'
            "    if method() is not None:\n"
            f'  File "{P}/entrypoints/engine.py", line 160, in __init__\n'
            "    assert self.server_args.tp_size > 0, 'tp_size must be positive'\n"
            "AssertionError: tp_size must be positive\n")
    assert len(incidents_of(text, whole_log=True)) == 1



def _html_escaped(text: str) -> str:
    """What a web page's HTML source or an issue's API body holds for ``text`` (corpus field9/013)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def test_html_escapes_left_in_a_paste_are_read_as_their_characters():
    # fails on the old code: argparse's quotes as &#39; missed the rule's pattern; the frames'
    # File &quot;...&quot; were no frames
    from cut_sample import answers

    (d,) = answers(_html_escaped("launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8' "
                                 "(choose from 'auto', 'fp8_e5m2', 'fp8_e4m3')\n"))
    assert d.rule == "args.invalid.invalid_choice"
    root = Path(__file__).resolve().parents[2]
    for name in ("moe_block_fp8_experts_059.log", "router_worker_urls_none.log"):
        text = (root / "fixtures" / "args" / name).read_text()
        assert [x.rule for x in answers(_html_escaped(text))] == [x.rule for x in answers(text)], name
