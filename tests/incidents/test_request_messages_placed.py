"""Messages SGLang raises into one request's handler, beyond the request path's own modules
(scripts/gen_request_messages.py: every ``request_level`` raise site whose place the inventory's
phase map ties to no scheduler or start-up step).

A pasted exception line with such a message at the END of a serving fragment (nothing after it
shows the server went on) is that request's error: SamplingParams.verify / normalize (called by
the tokenizer manager for each request), the multimodal processors' loaders, the chat-template
conversion, the tool-call detectors.  The old catalog held only io_struct / tokenizer_manager /
the OpenAI layer's messages, so these formed a low-confidence incident (bench/healthy_bait.py's
``request_end``).  Kept out: a request_level site the phase map places in a CUDA-graph runner
(the vision towers' graph runners run in the scheduler's forward), and any message a site
outside that set also raises.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sglang_doctor.incidents.request_errors import is_request_message
from tests.incidents.test_survived_before_ready import _events, _incidents

ROOT = Path(__file__).resolve().parents[2]
BUSY = ("[2026-05-09 10:05:00 TP0] Decode batch, #running-req: 3, #token: 8192, token usage: 0.12, "
        "gen throughput (token/s): 180.22, #queue-req: 0\n")
BAD = '[2026-05-09 10:05:01] INFO:     127.0.0.1:51754 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'

# (exception line, where 0.5.9 / 0.5.23 raise it)
PER_REQUEST = {
    "sampling_verify": ("ValueError: top_p must be in (0, 1], got 1.5.", "srt/sampling/sampling_params.py SamplingParams.verify"),
    "sampling_normalize": ("ValueError: at most 128 stop strings are allowed, got 300",
                           "srt/sampling/sampling_params.py SamplingParams.normalize (0.5.23)"),
    "mm_placeholders": ("ValueError: Prompt has 2 image placeholders but 1 image inputs were provided",
                        "srt/multimodal/processors/base_processor.py _placeholder_mismatch_error (0.5.23)"),
    "chat_conv": ("ValueError: The system message should be a single text.", "srt/parser/conversation.py generate_chat_conv"),
    "tool_call": ("ValueError: Tool call arguments must be literals", "srt/function_call/pythonic_detector.py"),
}


@pytest.mark.parametrize("case", sorted(PER_REQUEST))
def test_a_per_request_check_at_the_end_of_a_fragment_is_no_incident(pack, case: str):
    """Fails on the old code (the catalog had none of these modules)."""
    line = PER_REQUEST[case][0]
    assert _incidents(_events(pack, BUSY + BUSY + line + "\n" + BAD)) == []


def test_a_vision_towers_cuda_graph_check_stays_an_incident(pack):
    """srt/multimodal/vit_cuda_graph_runner.py is waived request_level by its directory, but the
    phase map places it in a CUDA-graph runner: the scheduler's own loop, not a request's handler."""
    assert not is_request_message("RuntimeError", "ViT CUDA graph does not support attention backend: fa3")
    events = _events(pack, BUSY + "RuntimeError: ViT CUDA graph does not support attention backend: fa3\n")
    assert _incidents(events) != []


def test_the_type_must_still_be_the_sites():
    assert is_request_message("ValueError", "top_p must be in (0, 1], got 1.5.")
    assert not is_request_message("RuntimeError", "top_p must be in (0, 1], got 1.5.")


def test_doubled_braces_and_cut_templates_become_the_printed_text():
    """An f-string's ``{{`` prints one brace; a template the inventory cut (…) matches as a prefix
    whatever blank ended the cut (fails on the old generator: no match for either)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import re

    import gen_request_messages as gen

    rx = re.compile(gen.pattern("transform placeholder '{{{path}}}' is not defined. Available: {sorted(scope)}"))
    assert rx.match("transform placeholder '{user.name}' is not defined. Available: ['a', 'b']")
    rx = re.compile(gen.pattern("tool_choice 'required' or a named tool cannot be combined with response_format, regex, or …"))
    assert rx.match("tool_choice 'required' or a named tool cannot be combined with response_format, regex, or ebnf")


@pytest.mark.parametrize("etype,message", [
    # srt/entrypoints/http_server_engine.py launch_server_process: the server a wrapper launched died
    ("Exception", "Server process terminated unexpectedly."),
    # srt/constrained/base_grammar_backend.py create_grammar_backend: the scheduler's start-up
    ("ValueError", "--enable-strict-thinking requires a grammar backend that supports token filtering, but "
                   "grammar backend xgrammar does not"),
    # srt/constrained/xgrammar_backend.py XGrammarGrammarBackend.__init__: built once at start-up
    ("TokenizerNotSupportedError", "Tokenizer type Foo is not supported by XGrammar"),
])
def test_launch_and_set_up_code_waived_by_its_directory_is_not_a_requests(etype: str, message: str):
    """request_level by its directory, but a launcher (ENTRYPOINTS) or set-up code
    (START_UP_FUNCTION) whose raise ends a launch: not in the catalog."""
    assert not is_request_message(etype, message)
