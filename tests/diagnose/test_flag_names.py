"""The flag names the diagnose stage checks a named flag against are the shipped catalogues'."""

import subprocess
import sys

from conftest import ROOT


def test_flag_names_are_in_step_with_the_catalogues():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_flag_names.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
