"""What the newcomer CLI tests share: the seed log, running the CLI as a subprocess, and the
brief's standard for bad input (one line on stderr, exit 2, no traceback)."""

import subprocess

from conftest import FIXTURES, doctor_cmd

SEED = str(FIXTURES / "seed" / "seed_full.log")


def run(*args, **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run(doctor_cmd(*args), capture_output=True, text=True, **kw)


def one_line_exit_2(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    for needle in needles:
        assert needle in r.stderr, r.stderr
