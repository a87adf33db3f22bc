"""Shapes of real pastes incident forming lost (session 27), each with a counter-example:

- IPython's / Jupyter's own traceback format (IPython/core/ultratb.py): the header without its
  colon after the padded type, ``Cell In[1], line 11`` and ``File PATH:LINE, in FUNC(ARGS)``
  frames, numbered source lines and ``---> N`` markers (corpus field29/004).  A line that only
  mentions the header's words is no traceback.
- Frames pasted without their ``File "<prefix>/`` head (``sglang/srt/server_args.py", line
  1084, in prepare_server_args``, corpus field24/008): still frames, and ``sglang/...`` is
  SGLang's code.  A quoted name followed by ``", line`` in prose is no frame.
- uvicorn's "Exception in ASGI application" with a blank line before its traceback (a viewer that
  doubles line breaks): still one request's error.  A record between them unties them.
- An exception group whose sub-exception went through uvicorn's / starlette's request dispatch:
  one request's.  A group without such frames stays an incident.
- Ctrl-C's KeyboardInterrupt (SGLang raises none itself, sgl-project/sglang#11094) after batch
  lines in a paste with none of the launch's start: the operator's stop.  With the launch's start
  in the text and no ready line, an interrupted start-up stays an incident.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import incidents_of_lines
from sglang_doctor.incidents import startup_hints, tracebacks

ENV = "~/.venv/lib/python3.11/site-packages"
IPYTHON = [
    "In [1]: import sglang as sgl",
    "   ...: llm = sgl.Engine(model_path='/models/x')",
    "",
    "---------------------------------------------------------------------------",
    "RuntimeError                              Traceback (most recent call last)",
    "Cell In[1], line 2",
    "      1 import sglang as sgl",
    "----> 2 llm = sgl.Engine(model_path='/models/x')",
    "",
    f"File {ENV}/sglang/srt/entrypoints/engine.py:121, in Engine.__init__(self, **kwargs)",
    "    119 # Launch subprocesses",
    "--> 121 tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(",
    "    122     server_args=server_args,",
    "    123 )",
    "",
    f"File {ENV}/sglang/srt/entrypoints/engine.py:873, in _launch_subprocesses(server_args, port_args)",
    "    871     if data[\"status\"] != \"ready\":",
    "--> 873         raise RuntimeError(",
    "    874             \"Initialization failed. Please see the error messages above.\"",
    "    875         )",
    "",
    "RuntimeError: Initialization failed. Please see the error messages above.",
]


def test_ipython_traceback_is_read_with_its_frames(tmp_path):
    incs = incidents_of_lines(tmp_path, IPYTHON)
    assert len(incs) == 1
    inc = incs[0]
    assert inc.kind == "traceback" and not inc.truncated_top
    assert inc.exception.type == "RuntimeError"
    assert [(f.file, f.line, f.function) for f in inc.frames] == [
        ("Cell In[1]", 2, "<module>"),
        (f"{ENV}/sglang/srt/entrypoints/engine.py", 121, "Engine.__init__"),
        (f"{ENV}/sglang/srt/entrypoints/engine.py", 873, "_launch_subprocesses"),
    ]
    # the marked line is the frame's source line
    assert inc.frames[-1].source == "raise RuntimeError("
    # the launcher's frame says the launch never came up
    assert startup_hints.frames_reason(inc.frames) is not None


def test_ipython_older_frame_forms():
    assert tracebacks.parse_ipython_frame("Input In [3], in <cell line: 7>()").line == 7
    f = tracebacks.parse_ipython_frame("~/x/site-packages/sglang/api.py in Engine(*args, **kwargs)")
    assert (f.file, f.function) == ("~/x/site-packages/sglang/api.py", "Engine")
    f = tracebacks.parse_ipython_frame("File ~/x/sglang/srt/entrypoints/engine.py:52")
    assert (f.line, f.function) == (52, "<module>")


def test_header_words_in_prose_are_no_traceback(tmp_path):
    lines = ["[2025-06-01 10:00:00] The server is fired up and ready to roll!",
             "note: paste the part after Traceback (most recent call last) here",
             "see the Traceback (most recent call last) section below"]
    assert not tracebacks.is_ipython_header(lines[1])
    assert not tracebacks.is_ipython_header("see Traceback (most recent call last)")
    assert not tracebacks.is_ipython_header("Traceback (most recent call last)")
    # IPython pads the type and the header to 75 characters: a long type gets no space
    assert tracebacks.is_ipython_header("torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
                                        "Traceback (most recent call last)")
    assert incidents_of_lines(tmp_path, lines) == []


STRIPPED = [
    'sglang/launch_server.py", line 11, in <module>',
    "   server_args = prepare_server_args(sys.argv[1:])",
    'sglang/srt/server_args.py", line 4071, in prepare_server_args',
    "   raw_args = parser.parse_args(argv)",
    'argparse.py", line 1904, in parse_args',
    "   args, argv = self.parse_known_args(args, namespace)",
    "IndexError: list index out of range",
]


def test_frames_without_their_file_head_are_frames(tmp_path):
    incs = incidents_of_lines(tmp_path, STRIPPED)
    assert len(incs) == 1
    inc = incs[0]
    assert [f.function for f in inc.frames] == ["<module>", "prepare_server_args", "parse_args"]
    assert [f.file for f in tracebacks.sglang_frames(inc.frames)] == ["sglang/launch_server.py",
                                                                      "sglang/srt/server_args.py"]
    assert inc.exception.type == "IndexError"
    # the argument checks place it at start-up, not serving
    assert "launch arguments" in startup_hints.frames_reason(inc.frames)


def test_a_quoted_name_and_line_in_prose_is_no_frame(tmp_path):
    text = 'Parsed "chat_template.jinja", line 3 of 40 as the template'
    assert not tracebacks.is_frame(text)
    assert not tracebacks.is_frame('see "notes.py", line 3, in the docs')  # no .py" at its head
    assert not tracebacks.is_sglang_file("mysglang/x.py")


SP = "/usr/local/lib/python3.12/dist-packages"
ASGI_TRACEBACK = [
    "Traceback (most recent call last):",
    f'  File "{SP}/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
    f'  File "{SP}/sglang/srt/entrypoints/http_server.py", line 512, in openai_v1_chat_completions',
    "    return await raw_request.app.state.openai_serving_chat.handle_request(request, raw_request)",
    "ValueError: harmony parse error",
]
READY = "[2025-06-01 10:00:00] The server is fired up and ready to roll!"


def _doubled(lines):
    return [x for line in lines for x in (line, "")]


def test_asgi_error_through_a_blank_line_is_one_request(tmp_path):
    lines = [READY, "[2025-06-01 10:05:00] ERROR:    Exception in ASGI application", ""] + [
        f.replace(f'{SP}/uvicorn/protocols/http/httptools_impl.py', f"{SP}/sglang/srt/utils/common.py")
        for f in ASGI_TRACEBACK]
    assert incidents_of_lines(tmp_path, lines) == []
    # every line doubled, as a web viewer copies it
    assert incidents_of_lines(tmp_path, _doubled(lines)) == []


def test_a_record_between_unties_the_asgi_line(tmp_path):
    lines = [READY, "[2025-06-01 10:05:00] ERROR:    Exception in ASGI application", "",
             "[2025-06-01 10:05:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             f'  File "{SP}/sglang/srt/managers/scheduler.py", line 3130, in run_scheduler_process',
             "    scheduler.event_loop_overlap()",
             "RuntimeError: boom"]
    incs = incidents_of_lines(tmp_path, lines)
    assert len(incs) == 1 and incs[0].exception.type == "RuntimeError"


GROUP = [
    "  + Exception Group Traceback (most recent call last):",
    f'  |   File "{SP}/starlette/_utils.py", line 77, in collapse_excgroups',
    "  |     yield",
    f'  |   File "{SP}/anyio/_backends/_asyncio.py", line 772, in __aexit__',
    "  |     raise BaseExceptionGroup(",
    "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
    "  +-+---------------- 1 ----------------",
    "    | Traceback (most recent call last):",
    f'    |   File "{SP}/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
    "    |     result = await app(  # type: ignore[func-returns-value]",
    f'    |   File "{SP}/sglang/srt/entrypoints/openai/serving_chat.py", line 700, in _process',
    "    |     raise ValueError('unexpected tokens remaining in message header')",
    "    | ValueError: unexpected tokens remaining in message header",
    "    +------------------------------------",
]


def test_exception_group_through_the_request_dispatch_is_one_request(tmp_path):
    assert incidents_of_lines(tmp_path, [READY] + GROUP) == []
    assert incidents_of_lines(tmp_path, [READY] + _doubled(GROUP)) == []


def test_exception_group_without_request_frames_stays(tmp_path):
    lines = [line.replace(f"{SP}/uvicorn/protocols/http/httptools_impl.py", f"{SP}/sglang/srt/managers/scheduler.py")
             .replace("run_asgi", "event_loop_overlap") for line in GROUP]
    incs = incidents_of_lines(tmp_path, [READY] + lines)
    assert len(incs) == 1


DECODE = ("[2025-06-01 10:05:00 TP0] Decode batch, #running-req: 1, #token: 300, token usage: 0.00, "
          "cuda graph: True, gen throughput (token/s): 40.00, #queue-req: 0")
INTERRUPT = [
    "Traceback (most recent call last):",
    f'  File "{SP}/sglang/srt/managers/scheduler.py", line 3130, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    f'  File "{SP}/sglang/srt/managers/scheduler.py", line 812, in event_loop_overlap',
    "    recv_reqs = self.recv_requests()",
    "KeyboardInterrupt",
]


def test_ctrl_c_after_batch_lines_in_a_tail_paste_is_a_stop(tmp_path):
    assert incidents_of_lines(tmp_path, [DECODE, DECODE.replace("10:05:00", "10:05:01")] + INTERRUPT) == []


def test_ctrl_c_in_a_start_up_that_never_came_ready_stays(tmp_path):
    lines = ["[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/x', tp_size=1)",
             "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=46.79 GB",
             "[2025-06-01 10:00:06 TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, "
             "token usage: 0.00, #running-req: 0, #queue-req: 0"] + INTERRUPT
    incs = incidents_of_lines(tmp_path, lines)
    assert len(incs) == 1 and incs[0].exception.type == "KeyboardInterrupt"


def test_block_search_reads_the_new_shapes(tmp_path):
    """Through the CLI's block search: a long healthy stretch the scanner skips, then the
    IPython traceback and the headless frames, each found with its frames; the doubled ASGI
    error (no request frame in its traceback) is not an incident."""
    filler = [DECODE] * 3000
    asgi = [line.replace(f"{SP}/uvicorn/protocols/http/httptools_impl.py", f"{SP}/sglang/srt/utils/common.py")
            for line in ASGI_TRACEBACK]
    p = tmp_path / "log.txt"
    p.write_text("\n".join(filler + IPYTHON + [""] + filler + _doubled(
        ["[2025-06-01 10:05:00] ERROR:    Exception in ASGI application"] + asgi) + filler
        + STRIPPED) + "\n")
    r = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json", str(p)],
                       capture_output=True, text=True, check=False)
    events = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    incidents = [e for e in events if e["event"] == "incident"]
    assert [(e["exception"]["type"], len(e["frames"])) for e in incidents] == [("RuntimeError", 3), ("IndexError", 3)], \
        r.stdout[-2000:]
