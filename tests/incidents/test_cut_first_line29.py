"""A paste whose first line was cut inside the key line (bench/robustness.py: cut_key_message,
cut_key_head), session 29: the end of a message CPython gives a built-in exception; a rule's
message whose wildcard took a path; the message after a cut type's one word; a short type tail
or ``Error: `` before a message a specific rule knows; Ray's wrapper without its module path.
Messages are the libraries' own: CPython's (Objects/object.c, Objects/abstract.c, Python/ceval.c),
transformers' (a config without an attribute, an unknown model type), FlashInfer's trtllm-gen
runner, triton's OutOfResources, SGLang's mamba pool assert (srt/mem_cache/memory_pool.py)."""

import pytest

from cut_sample import SIGQUIT, answers
from sglang_doctor.incidents.cut_match import weighed_length, words_share
from sglang_doctor.incidents.tracebacks import CUT_MARK, bare_exception, python_message_tail
from sglang_doctor.diagnose.rules_engine import _running_text


@pytest.mark.parametrize("line, name", [
    ("pe' object has no attribute 'cpu'", "AttributeError"),
    ("me 'ModelRunner' is not defined", "NameError"),
    ("orted operand type(s) for -: 'float' and 'NoneType'", "TypeError"),
    ("gument of type 'NoneType' is not iterable", "TypeError"),
    ("pack non-iterable ForwardMetadata object", "TypeError"),
    ("dsa_core_npu() missing 1 required positional argument: 'v'", "TypeError"),
    ("ot import name 'is_valid_list_of_images' from 'transformers.models.mllama' (/venv/lib/x.py)", "ImportError"),
])
def test_the_end_of_a_cpython_message_names_its_exception(line, name):
    assert python_message_tail(line) == name


@pytest.mark.parametrize("line", [
    "led: 'X' object has no attribute 'y'",  # another record quoting the message at its end
    "is not defined",  # too short to say whose
    "dule named 'foo'",  # too few of the form's own words left
    "the model is not iterable yet, waiting for it",
])
def test_other_lines_are_no_cpython_message_end(line):
    assert python_message_tail(line) is None


def test_a_cut_cpython_message_is_that_exception():
    # fails on the old code: the line read as nothing, no incident
    (d,) = answers("orted operand type(s) for -: 'float' and 'NoneType'\n")
    assert d.incident.exception.type == CUT_MARK + "TypeError"
    assert d.category == "runtime.crash"


def test_a_cut_cpython_message_is_matched_by_a_rule_from_its_end():
    # the rule's pattern starts with the quote and the config's name the paste cut: the type
    # the message names (…AttributeError) leaves the message read from its end, as a lost one
    (d,) = answers("n2_5OmniConfig' object has no attribute 'hidden_size'\n")
    assert d.rule == "model.unsupported.config_missing_attribute"
    assert any("cut where the paste begins" in a for a in d.assumed)


def test_a_quoted_cpython_message_at_a_line_end_stays_quiet():
    assert answers("[2025-12-05 14:10:21] Skipping plugin: 'NoneType' object has no attribute 'items'\n") == []


def test_a_path_counts_as_one_word_when_a_match_is_weighed():
    path = "/mnt/d/code/app/.venv/lib/python3.12/site-packages/flashinfer/data/include/fmhaRunner.cuh:30:"
    assert weighed_length(f"at {path} Unsupported architecture") == 2 + 1 + 16 + 1 + 11 + 1 + 12
    rx = "Error in function '(?P<runner>TllmGen\\w*)' at [^\\n]*?:\\d+: Unsupported architecture"
    assert words_share(rx, f"FmhaRunner' at {path} Unsupported architecture", 23)
    dump = ", ".join(f"option_{i}='value_{i}'" for i in range(40)) + " Unsupported architecture"
    assert not words_share(rx, dump, 23)  # a dump is many words
    # a pattern's word inside an identifier the wildcard took is not the pattern's own
    rx = r"Runtime check failed at \S*custom_all_reduce\w*\.cuh:\d+: (?P<cuda_error>[^\n]+)"
    line = "INFO custom_all_reduce.register_graph_buffers: Registering 595 cuda graph addresses"
    assert not words_share(rx, line, 17)


def test_a_progress_line_holding_a_rules_word_in_an_identifier_stays_quiet():
    # a dynamo-prefixed SGLang progress line whose logger name holds ``custom_all_reduce`` (the
    # rule's ``[^\n]+`` took the whole line back to its start): no cut message of that rule
    text = "".join(f"2025-11-05T01:56:54.24{i}Z  INFO custom_all_reduce.register_graph_buffers: "
                   "Registering 595 cuda graph addresses\n" for i in range(2))
    assert answers(text) == []


def test_a_rule_message_whose_wildcard_took_a_path():
    # fails on the old code: the path made the pattern's own words under a quarter of the match
    line = ("ction 'TllmGenFmhaRunner' at /mnt/d/code/mini-sglang/.venv/lib/python3.12/site-packages/flashinfer/"
            "data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:30: Unsupported architecture\n")
    (d,) = answers(line)
    assert d.rule == "kernel.unsupported_hw.trtllm_gen_arch"


def test_a_message_after_the_one_word_a_cut_type_left():
    assert _running_text("ources: ")
    assert _running_text("the paste began here ")
    for head in ("Warning: ", "ning: ", "UserWarning: ", "y:138: UserWarning: ", "INFO 12:00:01 model: "):
        assert not _running_text(head), head
    (d,) = answers("ources: out of resource: shared memory, Required: 131072, Hardware limit: 101376. "
                   "Reducing block sizes or `num_stages` may help.\n")
    assert d.category == "kernel.unsupported_hw"


@pytest.mark.parametrize("line, rule", [
    ("r: The checkpoint you are trying to load has model type `gemma3` but Transformers does not recognize "
     "this architecture. This could be because of an issue with the checkpoint, or because your version of "
     "Transformers is out of date.", "model.unsupported.transformers_model_type"),
    ("Error: Not enough space for mamba ping pong idx", "memory.kv_pool.mamba_pool_exhausted"),
])
def test_a_cut_type_tail_before_a_message_a_rule_knows(line, rule):
    # fails on the old code: a short tail (``r: ``, ``Error: ``) needed a failure's keywords (a
    # one-line paste; with the parent's sigquit below, the line above it was read so already)
    (d,) = answers(line + "\n")
    assert d.rule == rule
    (d,) = answers(line + "\n" + SIGQUIT)
    assert d.rule == rule


def test_error_word_on_a_later_line_is_still_another_programs_message():
    text = "[2025-12-05 14:10:21] Load weight begin.\nError: Not enough space for mamba ping pong idx\n"
    assert answers(text) == []


def test_rays_wrapper_without_its_module_path_is_an_exception_line():
    exc = bare_exception("RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)")
    assert exc is not None and exc.type == "RayTaskError(OutOfMemoryError)"
    assert bare_exception("Task(Runner): not an exception") is None


def test_a_python_warning_line_is_no_cut_message():
    # bench/healthy_bait.py (c): with a path weighed as one word, a rule's broad pattern run back
    # over a warning's ``file.py:N: UserWarning: ...`` read it as a message's end
    for path in ("/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/quantization/awq/awq.py", "y"):
        text = f"{path}:53: UserWarning: Only CUDA, HIP and XPU support AWQ currently.\n  warnings.warn(\n"
        assert answers(text) == [], path


def test_the_last_word_a_pattern_spells_out_after_its_alternatives():
    from sglang_doctor.incidents.cut_match import _last_literal_word

    assert _last_literal_word(r"Runtime check failed at \S*custom_all_reduce\w*\.cuh:\d+: (?P<e>[^\n]+)") == "cuh"
    assert _last_literal_word(r"^Capture (?:cuda|CUDA) graph failed: (?P<c>\[[^\]\n]*gloo/transport/[^\]\n]*\])") \
        == "transport"
    assert _last_literal_word(r"[|(]abc (?:x|y) tail") == "tail"  # a class's "|" is a member
    assert _last_literal_word("first words|other words") is None  # the pattern's own alternatives
    assert _last_literal_word("x (?:foo|bar)") is None


def test_a_pattern_with_a_lookaround_is_not_weighed_by_words():
    # the router rule's lookahead (its paths) is its guard, which a backwards partial match does
    # not check: dynamo's own worker.rs panic stays a crash, not the router's (EXPECTED.yaml)
    from sglang_doctor.incidents.cut_match import words_share

    rx = r"thread '(?=actix-rt|[^'\n]*' panicked at [^\n']*?sgl[-_]router)(?P<t>[^'\n]*)' panicked at (?P<w>[^\n']+?\.rs)"
    line = "thread 'tokio-runtime-worker' panicked at lib/engines/sglang/src/worker.rs"
    assert not words_share(rx, line, 14)
    assert words_share(rx.replace(r"(?=actix-rt|[^'\n]*' panicked at [^\n']*?sgl[-_]router)", ""), line, 14)
