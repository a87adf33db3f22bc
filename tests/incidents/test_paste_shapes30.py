"""Shapes of real pastes incident forming got wrong (session 30), each with a counter-example:

- rich's traceback box (tracebacks.RichBox): a wrapper or CLI that installed rich's traceback
  handler prints ``╭── Traceback (most recent call last) ──╮``, a row per frame
  ``│ /path/file.py:N in func │`` (folded mid-path or before the function on a narrow
  terminal), numbered source rows, ``locals`` boxes, then the exception line under the box.
  The box is read as Python's traceback: its frames (so the class rules see where it failed)
  and its exception.  The texts are rendered by the installed rich itself, from a module at an
  installed SGLang's path.  A rich panel that is no traceback stays text, and its rows of the
  box's width are no hard-wrapped lines (records.starts_own_line).
- a traceback logged line by line through another program's logger (tracebacks.logger_prefix):
  the same prefix before every line (``ERROR:root:``, loguru's, glog's, hydra's
  ``[time][name][LEVEL] - `` that starts like SGLang's own header, vLLM's, behind a ray
  prefix), its numbers changing from line to line.  The prefix learnt from the header's line is
  taken off the lines after it; a line without it ends it, and SGLang's own ``... hit an
  exception: Traceback`` records of two ranks stay two records.
- a line written onto a tqdm bar's line (records.split_bar): tqdm ends a redraw with ``\\r``, so
  in a ``tee``'d log what comes next (another rank's record, an exception line) follows the bar's
  ``[elapsed<remaining, rate]`` on the same line.  It is read as a line of its own; the bar is a
  progress line before it, except inside an open traceback (another writer's bar) and never
  the end of a message cut at the paste's first line; a milestone on the bar's line is newer.
- a browser copy of a log shown as wrapped text: runs of lines joined by two spaces.  An SGLang
  record header after two spaces starts a line of its own (records.split_joined_records), and
  a joined traceback's continuation that starts with the source line of the frame above it
  (indented, then two spaces and the next frame) is split like one that starts at a frame
  (tracebacks.split_joined_traceback).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import incidents_of_lines
from sglang_doctor.incidents import tracebacks
from sglang_doctor.read import records

MODEL_RUNNER = '''class ModelRunner:
    def __init__(self, min_per_gpu_memory):
        self.initialize(min_per_gpu_memory)

    def initialize(self, min_per_gpu_memory):
        self.init_memory_pool(min_per_gpu_memory)

    def init_memory_pool(self, total_gpu_memory):
        self.max_total_num_tokens = 0
        if self.max_total_num_tokens <= 0:
            raise RuntimeError(
                "Not enough memory. Please try to increase --mem-fraction-static."
            )
'''


def rich_traceback(tmp_path, width: int, show_locals: bool = False) -> list[str]:
    """rich's rendering of an exception raised in ``sglang/srt/model_executor/model_runner.py``."""
    from rich.console import Console
    from rich.traceback import Traceback

    path = tmp_path / "usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py"
    path.parent.mkdir(parents=True)
    path.write_text(MODEL_RUNNER)
    spec = importlib.util.spec_from_file_location("rich_shape_model_runner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    console = Console(width=width, color_system=None, force_terminal=False, record=True)
    try:
        module.ModelRunner(80)
    except RuntimeError:
        with console.capture() as capture:
            console.print(Traceback(show_locals=show_locals, width=width))
    sys.modules.pop("rich_shape_model_runner", None)
    return capture.get().rstrip("\n").split("\n")


@pytest.mark.parametrize("width,show_locals", [(140, False), (100, False), (72, False), (100, True)])
def test_a_rich_box_is_read_as_its_traceback(tmp_path, width, show_locals):
    lines = rich_traceback(tmp_path, width, show_locals)
    assert lines[0].startswith("╭") and any(line.startswith("│ ❱") for line in lines)
    incs = incidents_of_lines(tmp_path, ["[2026-01-01 10:00:00] Load weight end. type=X"] + lines)
    assert len(incs) == 1
    inc = incs[0]
    assert inc.kind == "traceback" and not inc.truncated
    assert inc.exception.type == "RuntimeError" and inc.exception.message.startswith("Not enough memory.")
    functions = [f.function for f in inc.frames if f.file.endswith("sglang/srt/model_executor/model_runner.py")]
    assert functions == ["__init__", "initialize", "init_memory_pool"]
    assert [f.source for f in inc.frames][-1] == "raise RuntimeError("


def test_behind_a_launchers_prefix(tmp_path):
    lines = rich_traceback(tmp_path, 100)
    incs = incidents_of_lines(tmp_path, ["(WorkerDict pid=4012) " + line for line in lines])
    assert len(incs) == 1 and [f.function for f in incs[0].frames][-1] == "init_memory_pool"


def test_the_box_rows_are_python_lines():
    box = tracebacks.RichBox()
    assert box.line("│ /x/sglang/srt/a.py:3 in f │") is None  # no box open: not a row
    assert box.line("╭──── Traceback (most recent call last) ────╮") == tracebacks.HEADER
    assert box.line("│ /x/dist-packages/sg                  │") == ""  # a folded path's first piece
    assert box.line("│ lang/srt/a.py:3 in                   │") == ""
    assert box.line("│ forward                              │") == '  File "/x/dist-packages/sglang/srt/a.py", line 3, in forward'
    assert box.line("│    2 │   def forward(self):          │") == ""  # a context row
    assert box.line("│ ❱  3 │   │   return self.run()       │") == "    return self.run()"
    assert box.line("╰──────────────────────────────────────╯") == ""
    assert box.line("RuntimeError: boom") is None and not box.open


def test_a_panel_that_is_no_traceback_stays_quiet(tmp_path):
    panel = ["╭──────────────── SGLang launcher ────────────────╮",
             "│ model: /models/Qwen3-8B                          │",
             "│ error: none                                      │",
             "╰──────────────────────────────────────────────────╯",
             "[2026-01-01 10:00:00] The server is fired up and ready to roll!"]
    assert incidents_of_lines(tmp_path, panel) == []
    assert tracebacks.RichBox().line(panel[0]) is None


def test_box_rows_of_one_width_are_no_folded_lines(tmp_path):
    lines = rich_traceback(tmp_path, 100)
    assert records.wrap_width(("\n".join(lines) + "\n").encode()) is None
    # a real fold is still one: a line cut at the width and its rest
    folded = ["[2026-01-01 10:00:00 TP0] " + "x" * 74, "continues here", "[2026-01-01 10:00:01 TP0] " + "y" * 74,
              "and here too"]
    assert records.wrap_width(("\n".join(folded) + "\n").encode()) == 100


SERVER_ARGS_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/launch_server.py", line 14, in <module>',
    "    server_args = prepare_server_args(sys.argv[1:])",
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", line 2011, in check_server_args',
    '    assert self.foo_bar_baz is None, "odd combination here"',
    "AssertionError: odd combination here",
]


@pytest.mark.parametrize("prefix", [
    "ERROR:root:",
    "2025-06-01 08:15:0{n}.12{n} | ERROR    | verl.workers.rollout:init:4{n} - ",
    "E0601 08:15:0{n}.12345{n} 4012 rollout.py:42] ",
    "[2025-06-01 08:15:0{n},12{n}][verl][ERROR] - ",
    "ERROR 06-01 08:15:0{n} [rollout.py:42] ",
    "(RolloutWorker pid=4012) ERROR 06-01 08:15:0{n} [rollout.py:42] ",
])
def test_a_traceback_logged_line_by_line(tmp_path, prefix):
    lines = [prefix.format(n=i % 10) + line for i, line in enumerate(SERVER_ARGS_TRACEBACK)]
    incs = incidents_of_lines(tmp_path, lines + ["INFO:root:relaunching in 10 s"])
    assert len(incs) == 1
    inc = incs[0]
    assert inc.kind == "traceback" and inc.exception.type == "AssertionError"
    assert [f.function for f in inc.frames] == ["<module>", "check_server_args"]
    assert inc.last_line == len(SERVER_ARGS_TRACEBACK)


def test_the_prefix_is_the_text_before_the_header():
    rx, before_record = tracebacks.logger_prefix("E0601 08:15:02.123456 4012 rollout.py:42] Traceback (most recent call last):")
    assert not before_record
    assert rx.match("E0601 08:15:03.000001 4012 rollout.py:42]   File \"x.py\", line 1, in f")
    assert not rx.match("I0601 08:15:03.000001 4012 rollout.py:42] ok")
    assert tracebacks.logger_prefix("Traceback (most recent call last):") is None
    assert tracebacks.logger_prefix("    | Traceback (most recent call last):") is None  # an exception group's decoration


def test_two_ranks_records_stay_two(tmp_path):
    """SGLang's own records: the second rank's header line is no line of the first's traceback."""
    lines = []
    for rank in (0, 1):
        lines += [f"[2025-06-01 10:00:0{rank} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):",
                  '  File "/x/dist-packages/sglang/srt/managers/scheduler.py", line 3, in run_scheduler_process',
                  "    scheduler.event_loop_normal()",
                  "RuntimeError: NCCL error: unhandled system error"]
    incs = incidents_of_lines(tmp_path, lines)
    assert {r for inc in incs for r in inc.ranks} == {"TP0", "TP1"}
    assert all(inc.exception.type == "RuntimeError" for inc in incs)


BAR = "Loading safetensors checkpoint shards:  75% Completed | 6/8 [00:12<00:04,  1.52it/s]"
TQDM = "Capturing batches (bs=4 avail_mem=20.1 GB):  50%|█████     | 26/52 [00:03<00:03,  7.20it/s]"
SCHED_TB = [
    "[2025-06-01 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/x/dist-packages/sglang/srt/managers/scheduler.py", line 3, in run_scheduler_process',
    "    scheduler = Scheduler(",
    '  File "/x/dist-packages/sglang/srt/model_executor/model_runner.py", line 20, in init_memory_pool',
    "    raise RuntimeError(",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
]


def test_the_bar_is_split_off_what_follows_it():
    assert records.split_bar(BAR + SCHED_TB[0]) == (BAR, SCHED_TB[0])
    assert records.split_bar(TQDM + "RuntimeError: boom") == (TQDM, "RuntimeError: boom")
    assert records.split_bar(BAR) is None and records.split_bar(BAR + "   ") is None
    assert records.split_bar("[2025-06-01 10:00:00] Decode batch, #running-req: 3, gen throughput (token/s): 7.20it/s]") is None


def test_a_record_written_onto_a_bar_is_read(tmp_path):
    incs = incidents_of_lines(tmp_path, ["\r" + BAR.replace("75%", "62%") + "\r" + BAR + SCHED_TB[0]] + SCHED_TB[1:])
    assert len(incs) == 1
    inc = incs[0]
    assert inc.ranks == ["TP1"] and inc.exception.type == "RuntimeError"
    assert inc.captures.get("progress_phase") == "startup.load_weights"


def test_a_bar_inside_a_traceback_is_no_line_of_it(tmp_path):
    lines = SCHED_TB[:3] + [BAR + SCHED_TB[3]] + SCHED_TB[4:]
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.exception.type == "RuntimeError" and inc.exception.message.startswith("Not enough memory")
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "init_memory_pool"]


def test_a_bar_on_the_first_line_is_no_cut_message(tmp_path):
    sigquit = "[2025-06-01 10:00:01] Received sigquit from a child process. It usually means the child failed."
    incs = incidents_of_lines(tmp_path, [BAR + sigquit])
    assert all(inc.exception is None or "Loading safetensors" not in (inc.exception.message or "") for inc in incs)


def test_a_milestone_on_the_bars_line_is_newer_than_the_bar(tmp_path):
    lines = [BAR + "[2025-06-01 10:00:00 TP0] Init torch distributed begin.",
             "Fatal Python error: Segmentation fault", "",
             'Thread 0x00007f39a0232b80 (most recent call first):',
             '  File "/x/dist-packages/sglang/srt/distributed/parallel_state.py", line 20 in init_world_group']
    incs = incidents_of_lines(tmp_path, lines)
    assert incs and all(inc.captures.get("progress_phase") != "startup.load_weights" for inc in incs)


def test_records_joined_by_two_spaces_are_lines_again(tmp_path):
    joined = ("[2025-06-01 10:00:00 TP0] Load weight end. type=X, avail mem=20.00 GB  "
              "[2025-06-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):")
    assert records.split_joined_records(joined) == [joined.split("  ")[0], joined.split("  ")[1]]
    assert records.split_joined_records("[2025-06-01 10:00:00] nvcc fatal   : Unsupported gpu architecture") is None
    assert records.split_joined_records("[2025-06-01 10:00:00] a  [x] b") is None  # no record header after the spaces


def test_a_joined_continuation_that_starts_with_a_source_line(tmp_path):
    lines = ['Process Process-6:  Traceback (most recent call last):    File "/usr/lib/python3.10/multiprocessing/'
             'process.py", line 314, in _bootstrap      self.run()',
             '    self._target(*self._args, **self._kwargs)    File "/usr/local/lib/python3.10/dist-packages/sglang/'
             'srt/managers/scheduler.py", line 1984, in run_scheduler_process      faulthandler.enable()  '
             'OSError: [Errno 12] Cannot allocate memory']
    got = tracebacks.split_joined_traceback(lines[1])
    assert got is not None and got[0] == "    self._target(*self._args, **self._kwargs)"
    assert got[-1] == "OSError: [Errno 12] Cannot allocate memory"
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.exception.type == "OSError" and [f.function for f in inc.frames][-1] == "run_scheduler_process"
    # a line of prose that mentions a frame is no traceback's continuation
    assert tracebacks.split_joined_traceback('see  File "/x/y.py", line 3, in f  ValueError: z') is None
    # a frame's start cut short before the next frame is no source line (the fuzz suite's find: the
    # piece came out re-indented, a text the input does not hold)
    assert tracebacks.split_joined_traceback('  File "  File "/x/sglang/srt/a.py", line 100, in f') is None


def test_a_wrappers_logger_before_sglangs_own_records(tmp_path):
    """A wrapper that relayed SGLang's output through its logger: the prefix stands before SGLang's
    record header, learnt there, taken off that line and the traceback's lines after it."""
    pref = "E0601 08:15:0{n}.12345{n} 4012 server.py:88] "
    lines = [pref.format(n=i % 10) + line for i, line in enumerate(SCHED_TB)]
    (inc,) = incidents_of_lines(tmp_path, lines)
    assert inc.ranks == ["TP1"] and inc.exception.type == "RuntimeError"
    assert [f.function for f in inc.frames] == ["run_scheduler_process", "init_memory_pool"]
    got = tracebacks.logger_prefix(lines[0])
    assert got is not None and got[1] is True
    # a warning glued before a record is no logger's prefix: its end is no separator
    assert tracebacks.logger_prefix("x.py:3: UserWarning: deprecated[2025-06-01 10:00:00] ok") is None
