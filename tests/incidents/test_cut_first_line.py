"""A paste whose FIRST line was cut inside a record header or inside the key message
(bench/robustness.py: cut_record_head, cut_key_message): ``TP0] ValueError: ...``,
``0:12:03 TP1] Scheduler hit an exception: ...``, ``of memory. Tried to allocate 2.00 GiB``.
The failure is still named; a healthy first line that only quotes a rule's words (a command
line, a server_args dump) stays healthy.  Messages are SGLang's and torch's own (sglang
srt/layers/quantization/fp8.py's block-FP8 check, torch's CUDA OOM)."""

import regex

from cut_sample import BLOCK_FP8, P, SIGQUIT, answers
from sglang_doctor.diagnose.rules_engine import _greedy, _partial_search
from sglang_doctor.read.records import parse_cut_prefix

OOM = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.54 GiB of which "
       "1.12 GiB is free. Including non-PyTorch memory, this process has 46.41 GiB memory in use.")
FRAMES = f"""  File "{P}/model_executor/model_runner.py", line 905, in load_model
    self.model = get_model(
  File "{P}/layers/quantization/fp8.py", line 447, in create_weights
    raise ValueError(
"""


def test_a_header_tail_reads_as_the_record():
    assert parse_cut_prefix("TP0] ValueError: x").ranks == ("TP0",)
    p = parse_cut_prefix("0:12:03 TP1] Scheduler hit an exception: Traceback (most recent call last):")
    assert p.ranks == ("TP1",) and p.message.startswith("Scheduler hit")
    assert parse_cut_prefix("25-03-26 17:10:21.123 DP0 TP5] x").ranks == ("DP0", "TP5")
    assert parse_cut_prefix("P0] x").ranks == ()  # a cut rank is not kept
    # not the end of a header: any text's bracket
    for text in ("foo] x", "0] x", "] x", "x TP0] y", "[2025-01-01 00:00:00] x", "see [1] for details"):
        assert parse_cut_prefix(text) is None, text


def test_first_line_cut_inside_the_record_header():
    # fails on the old code: "TP0] ValueError: ..." read as an ordinary line, only the sigquit left
    for head in ("TP0] ", "05 14:10:21 TP0] ", ":21 TP0] "):
        (d,) = answers(head + "ValueError: " + BLOCK_FP8 + "\n" + SIGQUIT)
        assert d.rule == "args.invalid.block_fp8_partition", (head, d.rule)
        assert d.incident.ranks == ["TP0"]


def test_first_line_cut_inside_a_traceback_record_header():
    text = ("0:21 TP1] Scheduler hit an exception: Traceback (most recent call last):\n" + FRAMES
            + "ValueError: " + BLOCK_FP8 + "\n" + SIGQUIT)
    (d,) = answers(text)
    assert d.rule == "args.invalid.block_fp8_partition"
    assert d.incident.ranks == ["TP1"]


def test_first_line_cut_inside_the_message():
    # fails on the old code: with its type gone, the message's end was an ordinary line
    (d,) = answers(OOM[9:] + "\n" + SIGQUIT)  # "of memory. Tried to allocate 2.00 GiB. ..."
    assert d.category == "memory.cuda_oom"
    assert d.incident.exception.type == "\u2026"  # the whole type lost
    assert any("cut where the paste begins" in a for a in d.assumed)
    (d,) = answers(BLOCK_FP8[14:] + "\n" + SIGQUIT)  # "put_partition_size = 4864 is not divisible ..."
    assert d.rule == "args.invalid.block_fp8_partition"


def test_a_message_tail_is_only_read_so_on_the_first_line():
    (d,) = answers("[2025-12-05 14:10:20] Load weight begin.\n" + OOM[9:] + "\n" + SIGQUIT)
    assert d.category != "memory.cuda_oom"


def test_a_healthy_first_line_that_quotes_a_rules_words_stays_healthy():
    # the rule's words later in the line (a command line's flag) or inside a wildcard's run (a
    # server_args dump ends with ")" as the quantization-mismatch message's "(...)" does)
    cmd = "$ python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp-size 2 --mem-fraction-static 0.85\n"
    dump = ("server_args=ServerArgs(model_path='/models/Qwen2-7B-Instruct', quantization=None, "
            "quantization_param_path=None, load_format='auto', dtype='auto', kv_cache_dtype='auto', "
            "served_model_name='/models/Qwen2-7B-Instruct', chat_template=None, is_embedding=False, "
            "mem_fraction_static=0.88, max_running_requests=None, nnodes=1, node_rank=None)\n")
    ready = "[2025-12-05 14:10:22] The server is fired up and ready to roll!\n"
    assert answers(cmd + ready) == []
    assert answers(dump + ready) == []


def test_reverse_partial_matching_takes_no_lazy_shortcut():
    # regex's reverse partial matching lets a lazy quantifier reach the text's start: the
    # greedy form of the pattern matches the same texts without that
    assert _greedy(r"a+?b*?c??d{1,2}?[+?]\??") == r"a+b*c?d{1,2}[+?]\??"
    rx = regex.compile(r"under --mem-fraction-static=(?P<mfs>[0-9.]+?)\.?(?:\s|$)")
    assert _partial_search(rx, "--port 30000 --tp-size 2 --mem-fraction-static 0.85", at_start=True) is None
    assert _partial_search(rx, "ction-static=0.88. Raise it", at_start=True) is None  # too little of its words
    m = _partial_search(rx, "der --mem-fraction-static=0.88. Raise it", at_start=True)
    assert m is not None and m.start() == 0


def test_first_line_cut_inside_a_rule_literal():
    # fails on the old code: NCCL's shmutils.cc line lost "Error whi", the rule's literal
    (d,) = answers("le creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n" + SIGQUIT)
    assert d.rule == "memory.host_oom.dev_shm"
    assert any("cut where the paste begins" in a for a in d.assumed)
    # too little of the literal left: no claim
    assert all(d.rule != "memory.host_oom.dev_shm" for d in answers("memory segment /dev/shm/nccl-vzIpS6\n" + SIGQUIT))


def test_first_line_cut_inside_a_repr_exception_type():
    # fails on the old code: the repr form's type lost its head (triton's fp8 check)
    (d,) = answers("""rror("type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')")\n""")
    assert d.rule == "kernel.unsupported_hw.fp8e4nv"
    assert d.incident.exception.type == "\u2026rror"
    assert answers('print("type fp8e4nv is what we asked for")\n') == []  # a call is no exception


# -- session 21: more ways a paste's first line begins inside the key line ----------------------

def test_first_line_cut_just_before_a_space():
    # fails on the old code: one leading space read as indentation, the line as nothing
    (d,) = answers(" fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\n")
    assert d.rule == "kernel.unsupported_hw.fp8e4nv"
    # indentation (a frame's two spaces, a source line's four) is still indentation
    assert answers("    fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\n") == []


def test_the_line_just_above_the_parents_sigquit_is_the_childs_exception():
    # fails on the old code (only the sigquit, unknown): distributed/utils.ensure_divisibility's
    # AssertionError "{} is not divisible by {}", the paste begun inside it
    for gap in ("\n", "\n\n"):
        (d,) = answers("0 is not divisible by 3" + gap + SIGQUIT)
        assert d.rule == "args.invalid.not_divisible", d.rule
        assert d.incident.exception.type == "\u2026"
    # another line between: the first line is not the child's exception
    (d,) = answers("0 is not divisible by 3\n[2025-12-05 14:10:21] Load weight begin. avail mem=23.10 GB\n" + SIGQUIT)
    assert d.rule != "args.invalid.not_divisible"
    # no sigquit: nothing says a process failed
    assert answers("0 is not divisible by 3\n[2025-12-05 14:10:21] Load weight begin. avail mem=23.10 GB\n") == []


def test_a_rules_whole_message_past_the_first_lines_start():
    # fails on the old code: transformers' message whole, but not from the line's first character
    (d,) = answers("trying to load has model type `gemma3` but Transformers does not recognize this architecture. "
                   "This could be because of an issue with the checkpoint, or because your version of Transformers "
                   "is out of date.\n")
    assert d.rule == "model.unsupported.transformers_model_type"
    # the words after another kind of line's "X: " (a warning that quotes them) are not a cut message
    assert answers("/usr/lib/python3.10/site-packages/x/configuration.py:812: UserWarning: a checkpoint with model "
                   "type `gemma3` but Transformers does not recognize this architecture is loaded as a plain model\n") == []


def test_a_rules_line_cut_before_its_literal():
    # fails on the old code: argparse's "prog: error: argument ..." lost "prog: "; the literal is whole
    (d,) = answers("error: argument --context-length: invalid int value: '64k'\n")
    assert d.rule == "args.invalid.invalid_value"
    assert "--context-length" in d.title
    assert any("cut where the paste begins" in a for a in d.assumed)


def test_a_short_type_tail_with_pythons_own_message_wording():
    # fails on the old code: "r" ends too many names, and the message held no rule's words
    (d,) = answers("r: cannot import name 'build_regex_from_schema' from 'outlines.fsm.json_schema' "
                   "(/opt/venv/lib/python3.11/site-packages/outlines/fsm/json_schema.py)\n")
    assert d.incident.exception.type == "\u2026ImportError"
    assert d.rule == "other.grammar_backend_import_outlines"
    # a short tail whose message is not in CPython's wording stays a plain line
    assert answers("r: cannot load the theme 'dark' from 'settings.json'\n") == []
