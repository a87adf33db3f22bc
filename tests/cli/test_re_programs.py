"""``re``'s compiled programs kept between runs of the command line (sglang_doctor/cli/re_programs.py).

Each check runs the CLI's import in a real subprocess (the module replaces a function of
``re``: the test process is left alone) with a cache directory of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# in the child: import the CLI (which installs the cache), then report what it holds
REPORT = r"""
import json, sys
import sglang_doctor.cli.app
from sglang_doctor.cli import re_programs as r
print(json.dumps({"installed": r._installed, "new": len(r._new), "stored": len(r._programs())}))
"""

# in the child: every stored program against what re gives the engine for that pattern now
# (re's own compile, its call to the engine recorded), and the patterns made both ways
# against the same texts
RECHECK = r"""
import json, re, sys, _sre
from re import _compiler
import sglang_doctor.cli.app
from sglang_doctor.cli import re_programs as r
original = _compiler.compile.__closure__
original = next(c.cell_contents for c in original
                if callable(c.cell_contents) and getattr(c.cell_contents, "__name__", "") == "compile")
bad = []
checked = 0
for key, args in r._programs().items():
    kind, rest = key[0], key[1:]
    flags, text = rest.split(":", 1)
    p = text.encode("latin-1") if kind == "b" else text
    pattern, fresh = r._record(_compiler, _sre, original, p, int(flags))
    try:
        stored = _sre.compile(p, *r._unpack(args))
    except RuntimeError as exc:  # (not a program of this engine: re_programs compiles anew then)
        bad.append([key, str(exc), args == json.loads(json.dumps(fresh))])
        continue
    if json.loads(json.dumps(fresh)) != args or stored.flags != pattern.flags or stored.groupindex != pattern.groupindex:
        bad.append(key)
    sample = (b"Traceback (most recent call last): x=1 [2026-05-09 09:36:27 TP0] Error: NCCL"
              if kind == "b" else "Traceback (most recent call last): x=1 [2026-05-09 09:36:27 TP0] Error: NCCL")
    if [m.span() for m in stored.finditer(sample)] != [m.span() for m in pattern.finditer(sample)]:
        bad.append(key)
    checked += 1
print(json.dumps({"checked": checked, "bad": bad[:5]}))
"""


def child(code: str, cache: Path, **env) -> dict:
    run_env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    run_env.pop("SGLANG_DOCTOR_NO_RULE_CACHE", None)
    run_env.update(env)
    out = subprocess.run([sys.executable, "-c", code], env=run_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def cache_file(cache: Path) -> Path:
    files = list((cache / "sglang-doctor").glob("re-code-*.json"))
    assert len(files) == 1, files
    return files[0]


def test_the_first_run_records_and_the_next_one_compiles_nothing_anew(tmp_path):
    first = child(REPORT, tmp_path)
    assert first["installed"] and first["new"] > 100 and first["stored"] == 0
    path = cache_file(tmp_path)
    assert path.stat().st_mode & 0o077 == 0  # a private file
    second = child(REPORT, tmp_path)
    assert second == {"installed": True, "new": 0, "stored": first["new"]}


def test_every_stored_program_is_what_re_makes(tmp_path):
    child(REPORT, tmp_path)
    got = child(RECHECK, tmp_path)
    assert got["checked"] > 100 and got["bad"] == []


def test_a_file_others_can_write_is_not_used(tmp_path):
    child(REPORT, tmp_path)
    path = cache_file(tmp_path)
    path.chmod(0o666)
    again = child(REPORT, tmp_path)
    assert again["stored"] == 0 and again["new"] > 100  # compiled by re, as without a cache


def test_stored_arguments_the_engine_refuses_fall_back_to_re(tmp_path):
    child(REPORT, tmp_path)
    path = cache_file(tmp_path)
    blob = json.loads(path.read_text())
    for args in blob["programs"].values():
        args[1] = array("I", [999999] * (len(args[1]) // 8)).tobytes().hex()  # code words of no program of this engine
    path.write_text(json.dumps(blob))
    path.chmod(0o600)
    again = child(REPORT, tmp_path)  # every pattern compiled by re instead (and stored again at exit)
    assert again["new"] == again["stored"] > 100
    got = child(RECHECK, tmp_path)
    assert got["checked"] == again["new"] and got["bad"] == []


LIMIT = r"""
import json, re
import sglang_doctor.cli.app
from sglang_doctor.cli import re_programs as r
r.MAX_PROGRAMS = len(r._new)
before = len(r._new)
assert re.compile("a pattern no module has (?P<n>[0-9]+)").match("a pattern no module has 12").group("n") == "12"
print(json.dumps({"recorded": len(r._new) - before}))
"""


def test_no_more_than_max_programs_are_recorded_in_a_run(tmp_path):
    child(REPORT, tmp_path)
    assert child(LIMIT, tmp_path) == {"recorded": 0}  # (compiled by re, and not kept)


def test_a_full_file_keeps_what_the_run_used_and_recorded(monkeypatch):
    """The file's others go first: a file filled with stale programs (an earlier release's,
    another checkout's) does not keep a run's new patterns out of it."""
    from sglang_doctor.cli import re_programs as r

    monkeypatch.setattr(r, "MAX_PROGRAMS", 4)
    stored = {f"s0:old{i}": [i] for i in range(4)}
    got = r.kept(stored, {"s0:new": [9]}, {"s0:old3"})
    assert list(got) == ["s0:new", "s0:old3", "s0:old0", "s0:old1"]
    assert len(r.kept(stored, {f"s0:new{i}": [i] for i in range(6)}, set(stored))) == 4
    assert r.kept({"s0:a": [1]}, {"s0:b": [2]}, set()) == {"s0:b": [2], "s0:a": [1]}  # room: all kept


def test_a_cache_full_of_stale_programs_takes_the_runs_own(tmp_path):
    child(REPORT, tmp_path)
    path = cache_file(tmp_path)
    blob = json.loads(path.read_text())
    ours = len(blob["programs"])
    stale = {f"s0:a stale pattern {i}": args for i, args in enumerate([next(iter(blob["programs"].values()))] * 1024)}
    blob["programs"] = stale  # full (MAX_PROGRAMS), none of them this release's
    path.write_text(json.dumps(blob))
    path.chmod(0o600)
    child(REPORT, tmp_path)  # compiled by re, recorded, and kept at exit in place of stale ones
    kept = json.loads(path.read_text())["programs"]
    assert len(kept) == 1024 and sum(k not in stale for k in kept) == ours
    assert child(REPORT, tmp_path)["new"] == 0  # the next run compiles them from the file


def test_off_with_the_caches(tmp_path):
    got = child(REPORT, tmp_path, SGLANG_DOCTOR_NO_RULE_CACHE="1")
    assert got == {"installed": False, "new": 0, "stored": 0}
    assert not (tmp_path / "sglang-doctor").exists() or not list((tmp_path / "sglang-doctor").glob("re-*"))


@pytest.mark.parametrize("argv", [["explain", "--format", "json"]])
def test_the_cli_gives_the_same_events_with_the_cache(tmp_path, argv):
    """explain on the seed log: the same JSON events from a cold and a warm cache."""
    log = ROOT / "fixtures" / "seed" / "seed_full.log"
    code = "import sys; from sglang_doctor.cli.app import main; main()"

    def explain() -> list[dict]:
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
        env.pop("SGLANG_DOCTOR_NO_RULE_CACHE", None)
        out = subprocess.run([sys.executable, "-c", code, *argv, str(log)], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode in (0, 1), out.stderr
        events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        for ev in events:  # (wall-clock fields)
            ev.pop("seconds", None)
            ev.pop("observed_timestamp", None)
        return events

    cold = explain()
    cache_file(tmp_path)
    assert explain() == cold and cold
