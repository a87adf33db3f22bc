"""An exception line whose message starts on the next line ("ImportError: " and the message
below it, as Python prints an exception whose text begins with a newline: sgl_kernel's
loader) forms an incident with no traceback above it, through a real file, also in a file big
enough for the block scanner's fast path.  A heading ("Error:"), a warning type or an indented
line forms none."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_record_exception import BUSY, HEAD, explain_file

SGL_KERNEL = (
    "ImportError: \n"
    "[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
    "Attempted locations:\n"
    "1. Architecture-specific pattern: /usr/lib/python3/dist-packages/sgl_kernel/sm100/common_ops.* - found files: []\n"
    "Error details from previous import attempts:\n"
    "- ImportError: /usr/lib/python3/dist-packages/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa\n"
)


@pytest.mark.parametrize("busy_lines", [0, 40000])
def test_message_on_the_next_lines_forms_an_incident(tmp_path: Path, busy_lines: int):
    log = tmp_path / "server.log"
    log.write_text(HEAD + BUSY * busy_lines + SGL_KERNEL)
    incidents = explain_file(log)
    assert len(incidents) == 1
    exc = incidents[0]["exception"]
    assert exc["type"] == "ImportError"
    assert exc["message"].startswith("[sgl_kernel] CRITICAL") and "undefined symbol" in exc["message"]
    assert incidents[0]["category"] == "other"


@pytest.mark.parametrize("text", [
    "Error: \nthe configuration below was rejected by an older client\n",
    "DeprecationWarning: \nthis option will be removed in a later release\n",
    "    ValueError: \n    an indented line is a quoted example, not an exception\n",
])
def test_a_heading_a_warning_or_an_indented_line_forms_none(tmp_path: Path, text: str):
    log = tmp_path / "server.log"
    log.write_text(HEAD + BUSY + text + BUSY)
    assert explain_file(log) == []
