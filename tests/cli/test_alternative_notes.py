"""An alternative shows what its changes assume, as the main fix does: a removal proposed on a
pasted line with no launch settings says it holds only "if your launch sets" the switches.
The real CLI, on a real file, both renderings."""

from __future__ import annotations

import subprocess

from conftest import doctor_cmd

LINE = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def _explain(path, *extra: str) -> str:
    proc = subprocess.run(doctor_cmd("explain", *extra, str(path)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout


def test_a_conditional_removal_says_its_condition(tmp_path):
    path = tmp_path / "one.log"
    path.write_text(LINE)
    out = _explain(path, "--format", "text")
    lines = out.splitlines()
    alt = next(i for i, line in enumerate(lines) if "alternative 1:" in line and "remove --enable-" in line)
    assert "your launch sets" in lines[alt + 1] and "not in the log" in lines[alt + 1], out


def test_the_rich_rendering_says_it_too(tmp_path):
    path = tmp_path / "one.log"
    path.write_text(LINE)
    out = _explain(path, "--format", "rich")
    assert "your launch sets" in " ".join(out.split()), out
