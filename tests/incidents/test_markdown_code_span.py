"""A paste that wrapped the log in markdown's inline code keeps a backtick on its first line
(```RuntimeError: ...``) and its last (``    t = f(x)` ``): the lines are read without them,
so the exception line is the exception SGLang printed.  A message's own quoted flags
(```--attention-backend flashinfer` ``, in pairs) and a code fence stay as they are."""

import pytest

from conftest import incidents_of_lines
from sglang_doctor.incidents.assemble import _markdown_code_span

NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


@pytest.mark.parametrize("text, read", [
    (f"`{NO_KERNEL}`", NO_KERNEL),
    (f"`torch.AcceleratorError: {NO_KERNEL[14:]}", f"torch.AcceleratorError: {NO_KERNEL[14:]}"),
    ("    t_new = torch.arange(start, new_len, device=device)`", "    t_new = torch.arange(start, new_len, device=device)"),
    ("Please use `--attention-backend flashinfer`.", None),
    ("```", None),
    ("```text", None),
    ("`a` and `b`", None),
    ("no backticks", None),
])
def test_the_span_s_backticks_come_off(text, read):
    assert _markdown_code_span(text) == read


def test_an_exception_in_a_code_span_is_that_exception(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, [f"`{NO_KERNEL}`"])
    assert inc.exception.type == "RuntimeError" and inc.exception.message.endswith("on the device")


def test_a_code_span_over_several_lines(tmp_path):
    (inc,) = incidents_of_lines(tmp_path, [
        f"`torch.AcceleratorError: {NO_KERNEL[14:]}",
        "...",
        'File ".../sglang/srt/layers/rotary_embedding.py", line 210, in _ensure_cos_sin_cache_length',
        "    t_new = torch.arange(start, new_len, dtype=inv_freq.dtype, device=device)`",
    ])
    assert inc.exception.type == "torch.AcceleratorError" and inc.exception.message.startswith(NO_KERNEL[14:])
    assert inc.last_line == 4
