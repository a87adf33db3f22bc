"""A column-0 ``Error: <text>`` line with no traceback above it is another program's message (a
CI wrapper's "Error: Pod logs ended ...", a CLI's "Error: ...") or a reporter's "Error: " in
front of what they pasted: no class of SGLang's stack is named Error.  It forms an incident
only when what follows the word names a failure: an exception line (taken as that exception),
a failure signal, or the words of a failure a rule knows by its message (the pack's
``message_any``, e.g. "NPU out of memory").  Written from sealed10/021 (a benchmark job's
wrapper line after a healthy run) and field9/019 (a reporter's "Error: " before torch_npu's
out-of-memory line); both shapes run through a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.incidents.assemble import Assembler
from test_record_exception import BUSY, HEAD, explain_file

WRAPPER = "Error: Pod logs ended but target pattern was not detected\njob.batch.volcano.sh \"sglang-single-1\" deleted\n"
NPU_OOM = ("Error: [2026-05-29 16:30:21:955] torch_npu.memory: [ERROR] [1537] NPU out of memory. Tried to allocate "
           "450.00 MiB (NPU 0; 61.27 GiB total capacity; 55.97 GiB already allocated)\n")


def test_a_wrappers_error_line_after_a_healthy_run_forms_no_incident(tmp_path: Path):
    log = tmp_path / "ci.log"
    log.write_text(HEAD + BUSY * 3 + WRAPPER)
    assert explain_file(log) == []


def test_a_reporters_error_prefix_before_a_known_failure_still_forms_one(tmp_path: Path):
    log = tmp_path / "report.log"
    log.write_text(NPU_OOM)
    incidents = explain_file(log)
    assert len(incidents) == 1
    assert incidents[0]["category"] == "memory.cuda_oom"


def test_an_exception_line_behind_the_word_is_taken_as_that_exception(tmp_path: Path):
    log = tmp_path / "report.log"
    log.write_text("Error: ValueError: Unsupported architectures: FooForCausalLM\n")
    incidents = explain_file(log)
    assert len(incidents) == 1
    assert incidents[0]["exception"]["type"] == "ValueError"


def _incidents(asm: Assembler, text: str) -> list:
    from sglang_doctor.model import Line

    events = [ev for n, piece in enumerate(text.splitlines(), 1) for ev in asm.feed(Line(n, piece))]
    events += asm.flush()
    return [ev.incident for ev in events if getattr(ev, "incident", None) is not None]


@pytest.mark.parametrize("words, count", [((), 0), (("npu out of memory",), 1), (("tried to allocate",), 1)])
def test_the_assembler_counts_it_only_with_a_failures_words(words, count):
    assert len(_incidents(Assembler(failure_words=words), NPU_OOM)) == count


def test_the_pack_gives_its_message_words():
    words = RuleSet.load(user=False).failure_words()
    assert "npu out of memory" in words and all(w == w.lower() for w in words)
