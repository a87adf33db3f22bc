import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def seed_full() -> Path:
    return FIXTURES / "seed" / "seed_full.log"


@pytest.fixture
def seed_tail() -> Path:
    return FIXTURES / "seed" / "seed_tail20.log"


def doctor_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sglang_doctor", *args]


def explain_incidents(path, *extra: str) -> list[dict]:
    """The incidents of ``explain --format json [EXTRA] PATH`` as a real subprocess (exit 0 or
    1, never a traceback of ours)."""
    import json
    import subprocess

    r = subprocess.run(doctor_cmd("explain", "--format", "json", *extra, str(path)), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback (most recent call last)" not in r.stderr, r.stderr
    return [e for line in r.stdout.splitlines() if line.startswith("{")
            for e in [json.loads(line)] if e["event"] == "incident"]


def primary_incident(path, *extra: str) -> dict:
    """The most confident incident ``explain`` reports for ``path`` (there must be one)."""
    incidents = explain_incidents(path, *extra)
    assert incidents, f"no incident for {path}"
    return max(incidents, key=lambda i: float(i.get("confidence") or 0))


def write_log(tmp_path: Path, text: str, name: str = "paste.log") -> Path:
    """``text`` written to ``tmp_path / name``; the path."""
    log = tmp_path / name
    log.write_text(text)
    return log


def explain_one_incident(path, *extra: str) -> dict:
    """``explain --format json PATH`` as a real subprocess: it exits 1 (incidents found) and
    reports exactly one incident, which is returned."""
    import json
    import subprocess

    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(path), *extra),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    (inc,) = [e for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "incident"]
    return inc


def only_incident(pack, text: str) -> dict:
    """The one incident ``text`` forms, read in process by a fresh pipeline (no remedies)."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack, remediate=False)
    (ev,) = [e for e in pipe.feed(text.encode()) + pipe.finish() if e["event"] == "incident"]
    return ev


def script_module(path: Path, name: str):
    """A script of the repository (bench/, scripts/) imported as module ``name``, registered in
    sys.modules (its dataclasses and pickling look themselves up there)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def incident_events(pack, text: str, whole_log: bool = False) -> list[dict]:
    """The incident events a fresh pipeline of ``pack`` (no remedies) gives ``text`` fed as one chunk."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack, remediate=False, whole_log=whole_log)
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e for e in events if e["event"] == "incident"]


def best_guess(ev: dict) -> dict:
    """The honest fallback's best guess of an incident event."""
    return ev["fallback"]["best_guess"]


def streamed_incidents(text: str):
    """The incidents a fresh default pipeline forms from ``text`` fed as one chunk, and the pipeline."""
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline()
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e["_diagnosis"].incident for e in events if e["event"] == "incident"], pipe


def incidents_of_lines(tmp_path: Path, lines: list[str]):
    """The incidents ``pipeline.read_incidents`` forms from ``lines`` written to a real file."""
    from sglang_doctor import pipeline
    from sglang_doctor.diagnose.rules_engine import RuleSet

    p = tmp_path / "log.txt"
    p.write_text("\n".join(lines) + "\n")
    return pipeline.read_incidents(p, RuleSet.load())[1]


def processes_mentioning(text: str) -> list[int]:
    """Live (not zombie) processes other than this one whose command line contains ``text``."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(entry))
    return found


STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")


@pytest.fixture
def no_standin_left():
    """After the test: no stand-in server may be left running (killed, and the test fails)."""
    import os
    import signal
    import time

    yield
    deadline = time.monotonic() + 5
    while processes_mentioning(STANDIN) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = processes_mentioning(STANDIN)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left


@pytest.fixture(scope="session")
def pack():
    """The shipped rule pack, loaded once (it reads and compiles every rules/*.yaml; no test changes it)."""
    from sglang_doctor.diagnose.rules_engine import RuleSet

    return RuleSet.load(user=False)


def real_sglang_python() -> Path:
    """Real SGLang 0.5.23's python for the tests that launch it: skipped when it is not
    installed, a failure when CI requires it (SGLANG_DOCTOR_REQUIRE_SGLANG=1)."""
    import os

    from realsglang import harness

    python = harness.sglang_python()
    if python is None:
        message = (f"SGLang {harness.SGLANG_VERSION} is not installed in {harness.venv_dir()}: "
                   "run scripts/install-real-sglang (or set SGLANG_VENV / SGLANG_PYTHON)")
        if os.environ.get("SGLANG_DOCTOR_REQUIRE_SGLANG") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return python
