"""The trust boundary (docs/DESIGN.md "Trust"): log text never steers a relaunch.

The adversarial corpus (fixtures/adversarial/) goes through the real pipeline with a known
launch command, as ``run`` sees it; every change ``run --yes`` would apply unattended must
come from the command, the catalogue, a rule or the planner.  Then the same inputs through
a real ``run`` against the stand-in server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, doctor_cmd
from sglang_doctor.model import Diagnosis, Incident, Launch, Line, Remediation
from sglang_doctor.pipeline import StreamPipeline
from sglang_doctor.remedy import flags, remedies, trust
from sglang_doctor.diagnose.rules_engine import RuleSet

ADVERSARIAL = FIXTURES / "adversarial"
STANDIN = str(ROOT / "tests" / "standin" / "sglang_standin.py")
USER = ["python", "-m", "sglang.launch_server", "--model-path", "/models/tiny", "--host", "127.0.0.1",
        "--port", "31000", "--mem-fraction-static", "0.716"]


@pytest.fixture(scope="module")
def ruleset():
    return RuleSet.load(user=False)


def _diagnoses(ruleset, path: Path, command: list[str] | None, canary: Path) -> list[Diagnosis]:
    data = path.read_bytes().replace(b"CANARY", str(canary).encode())
    pipe = StreamPipeline(ruleset, command=command, version="0.5.23")
    events = pipe.feed(data) + pipe.finish()
    return [e["_diagnosis"] for e in events if e["event"] == "incident"]


def _options(d: Diagnosis) -> list[Remediation]:
    rem = d.remediation
    return [rem, *rem.alternatives] if rem is not None else []


def _applied_unattended(d: Diagnosis, catalog) -> list[Remediation]:
    """What ``run --yes`` may apply: safe, and trusted by the one check the supervisor runs."""
    return [o for o in _options(d) if o.safe and not o.needs_human and not trust.check(o, d, catalog)]


def _allowed_token(tok: str, user: list[str], catalog) -> bool:
    """A token of a relaunch argv may be the user's, a catalogue flag name, or a number."""
    if tok in user or catalog.spec(tok) is not None:
        return True
    try:
        float(tok)
        return True
    except ValueError:
        return tok in ("disabled", "true", "false")  # values rules declare


ALL_ADVERSARIAL = sorted(p.name for p in ADVERSARIAL.glob("*.txt"))


@pytest.mark.parametrize("name", ALL_ADVERSARIAL)
def test_adversarial_logs_change_argv_only_from_allowed_sources(ruleset, tmp_path, name):
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    canary = tmp_path / "canary"
    for d in _diagnoses(ruleset, ADVERSARIAL / name, USER, canary):
        for option in _applied_unattended(d, catalog):
            assert option.command is not None
            added = [t for t in option.command if not _allowed_token(t, USER, catalog)]
            assert not added, (name, d.rule, option.provenance, added)
            for key, entry in option.provenance.items():
                assert entry["source"] in trust.SOURCES
                if entry["source"] == "log" and key in option.set:
                    assert entry.get("value_from") == "command" or isinstance(option.set[key], (int, float)) \
                        or catalog.spec(key).type in trust.NUMERIC_TYPES, (key, entry)
    assert not canary.exists()


@pytest.mark.parametrize("name", ["request_after_ready.txt", "request_during_warmup.txt",
                                  "parser_line_after_ready.txt"])
@pytest.mark.parametrize("known", [True, False])
def test_a_parser_shaped_line_while_serving_is_advice_only(ruleset, tmp_path, name, known):
    """Finding 1: a request logged while serving named --hostt/--api-kye/--tokenizer-pth."""
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    user = [*USER, "--hostt", "127.0.0.1"]  # even a flag the user really misspelt
    diags = [d for d in _diagnoses(ruleset, ADVERSARIAL / name, user if known else None, tmp_path / "c")
             if d.rule == "args.invalid.unrecognized_arguments"]
    assert diags, "the line is still reported as an incident"
    for d in diags:
        assert d.remediation is not None
        assert _applied_unattended(d, catalog) == []
        assert d.remediation.untrusted and not d.remediation.safe
        assert d.to_json()["remediation"]["untrusted"]


def test_closest_flag_takes_values_from_the_users_command_not_the_line(ruleset, tmp_path):
    """A start-up parser line naming flags the command does not hold changes nothing."""
    user = [*USER, "--hostt", "127.0.0.1"]
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    (d,) = _diagnoses(ruleset, ADVERSARIAL / "parser_line_not_in_command.txt", user, tmp_path / "c")
    (option,) = _applied_unattended(d, catalog)
    assert option.set == {"--host": "127.0.0.1"}  # the user's value, not the line's 0.0.0.0
    assert option.provenance["--host"] == {"source": "log", "line": 2, "value_from": "command"}
    assert "--tokenizer-path" not in option.command and "attacker/evil" not in option.command
    assert "--tokenizer-pth is not in the launch command" in option.note


def test_a_real_parser_error_still_fixes_the_users_typo(ruleset, tmp_path):
    """The boundary keeps the feature: SGLang's own start-up complaint about the user's flag."""
    catalog = flags.load_catalog("0.5.9", prefer_shipped=True)
    user = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--mem-fraction", "0.8",
            "--enable-flashinfer-mla"]
    pipe = StreamPipeline(ruleset, command=user, version="0.5.9")
    events = pipe.feed((FIXTURES / "args" / "unrecognized_argument_059.log").read_bytes()) + pipe.finish()
    (d,) = [e["_diagnosis"] for e in events if e["event"] == "incident"]
    (option, *_) = _applied_unattended(d, catalog)
    assert option.command[:5] == user[:5] and "--mem-fraction" not in option.command
    assert option.command[option.command.index("--mem-fraction-static") + 1] == "0.8"


def test_a_template_value_from_a_serving_line_is_advice(ruleset, tmp_path):
    """set_flag {value: "{derived}"}: the number is log text; while serving it is not applied."""
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    (d,) = _diagnoses(ruleset, ADVERSARIAL / "context_length_after_ready.txt", USER, tmp_path / "c")
    ctx = [o for o in _options(d) if "--context-length" in o.set]
    assert ctx and all(trust.check(o, d, catalog) for o in ctx)
    assert all("--context-length" not in o.command for o in _applied_unattended(d, catalog))


def test_a_change_without_a_declared_source_is_never_trusted():
    inc = Incident(kind="signal", first_line=1, last_line=1, lines=[Line(1, "x")])
    d = Diagnosis(incident=inc, launch=Launch(index=0, line=None))
    catalog = flags.load_catalog("0.5.23", prefer_shipped=True)
    rem = Remediation(set={"--port": 31010})
    assert trust.check(rem, d, catalog) == ["--port: no declared source"]
    trust.declare(rem, "planner")
    assert trust.check(rem, d, catalog) == []


def test_change_port_never_binds_or_resolves_a_host_from_the_log(ruleset, tmp_path, monkeypatch):
    """Finding 11: the Errno 98 line names evil.example.invalid; only the user's IP is tried."""
    tried = []
    real = remedies._port_free

    def spy(host, port, *rest):
        tried.append(host)
        return real(host, port, *rest)

    monkeypatch.setattr(remedies, "_port_free", spy)
    monkeypatch.setattr("socket.getaddrinfo", lambda *a, **k: pytest.fail(f"name resolution of {a[0]!r}"))
    for command, want in ((USER, {"127.0.0.1"}), (None, {"127.0.0.1"}),
                          ([*USER[:5], "--host", "my-box.example.invalid", *USER[7:]], {"127.0.0.1"}),
                          ([*USER[:5], "--host", "0.0.0.0", *USER[7:]], {"0.0.0.0"})):
        tried.clear()
        (d,) = _diagnoses(ruleset, ADVERSARIAL / "server_args_shell.txt", command, tmp_path / "c")
        assert d.rule == "network.port.address_in_use"
        assert tried and set(tried) == want, (command, tried)
        assert d.remediation.provenance == {"--port": {"source": "planner"}}


# -- through a real `run` ------------------------------------------------------------------


def _standin(port: int) -> list[str]:
    return [sys.executable, STANDIN, "--model-path", "/models/tiny", "--host", "127.0.0.1", "--port", str(port)]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


pytestmark = pytest.mark.usefixtures("no_standin_left")


def test_run_yes_keeps_a_healthy_server_when_a_request_looks_like_an_error(tmp_path):
    """Finding 1 end to end: the request is reported, the server is neither stopped nor relaunched."""
    log = tmp_path / "server.log"
    canary = tmp_path / "canary"
    injected = tmp_path / "after_ready.txt"
    lines = (ADVERSARIAL / "request_after_ready.txt").read_text().splitlines(keepends=True)
    injected.write_text("".join(line for line in lines if "Receive:" in line).replace("CANARY", str(canary)))
    command = _standin(_free_port())
    proc = subprocess.Popen([*doctor_cmd(), "run", "--yes", "--format", "json", "--log", str(log), "--settle", "1",
                             "--stop-grace", "5", "--", *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env={**os.environ, "STANDIN_AFTER_READY": str(injected)})
    events: list[dict] = []

    def read():
        for x in proc.stdout:
            if x.startswith("{"):
                events.append(json.loads(x))

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not any(
            e["event"] == "warning" and "while serving" in e.get("message", "") for e in list(events)):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    proc.wait(timeout=30)
    reader.join(timeout=30)
    assert proc.returncode == 130, err[-2000:]
    assert any(e["event"] == "warning" and "while serving" in e.get("message", "") for e in events), str([(e["event"], e.get("message")) for e in events])
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    assert len(hist["attempts"]) == 1 and hist["attempts"][0]["command"] == command
    assert not [e for e in events if e["event"] == "relaunch"]
    assert any(e["event"] == "incident" and e["rule"] == "args.invalid.unrecognized_arguments" for e in events)
    assert not canary.exists()


@pytest.mark.parametrize("name", ["parser_line_not_in_command.txt", "escapes_in_parser_line.txt",
                                  "server_args_shell.txt"])
def test_run_yes_never_copies_adversarial_text_into_the_relaunch(tmp_path, name):
    log = tmp_path / "server.log"
    canary = tmp_path / "canary"
    replay = tmp_path / "replay.txt"
    replay.write_text((ADVERSARIAL / name).read_text().replace("CANARY", str(canary)))
    command = _standin(_free_port())
    proc = subprocess.run([*doctor_cmd(), "run", "--yes", "--until-ready", "--format", "json", "--log", str(log),
                           "--settle", "1", "--stop-grace", "5", "--max-attempts", "3", "--", *command],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "STANDIN_REPLAY": str(replay), "STANDIN_EXIT": "1"})
    hist = json.loads(Path(f"{log}.attempts.json").read_text())
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert hist["outcome"] == "gave_up"
    for att in hist["attempts"][1:]:
        added = [t for t in att["command"] if t not in command]
        assert all(t.startswith("--") or t.isdigit() for t in added), added
        assert not any(bad in " ".join(att["command"]) for bad in ("evil", "touch", "$(", "`", ";"))
    assert not canary.exists()
