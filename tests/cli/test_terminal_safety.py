"""Issue 11 item 12: control characters from a log never reach the terminal in text or rich
output; JSON keeps the raw text (escaped by JSON)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_doctor.report import terminal_safe

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "fixtures" / "seed" / "seed_full.log"
# as Python's repr prints them in a server_args dump: the parser turns them into real ESC/BEL
ESCAPED = r"/root/models/\x1b]0;pwned\x07\x1b[2J\x9b31mQwen3.6-27B"
UNSAFE = ("\x1b", "\x07", "\x9b")


@pytest.fixture
def hostile_log(tmp_path) -> Path:
    text = SEED.read_text(encoding="utf-8")
    assert "model_path='/root/models/Qwen3.6-27B'" in text
    text = text.replace("model_path='/root/models/Qwen3.6-27B'", f"model_path='{ESCAPED}'")
    # and a raw C1 CSI plus a lone ESC in a traceback line
    text = text.replace("RuntimeError: Not enough memory.", "RuntimeError: Not enough memory.\u009b2J\x1b", 1)
    log = tmp_path / "hostile.log"
    log.write_text(text, encoding="utf-8")
    return log


def explain(log: Path, fmt: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", fmt, str(log)],
                          capture_output=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("fmt", ["text", "rich"])
def test_text_and_rich_print_no_control_characters_from_the_log(hostile_log, fmt):
    r = explain(hostile_log, fmt)
    assert r.returncode == 1, r.stderr
    out = r.stdout.decode("utf-8")
    assert "pwned" in out  # the field is shown ...
    for ch in UNSAFE:
        assert ch not in out, (fmt, repr(ch))  # ... without what a terminal would act on


def test_json_keeps_the_raw_text(hostile_log):
    r = explain(hostile_log, "json")
    assert r.returncode == 1
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout  # JSON escapes them ...
    launches = [json.loads(x) for x in r.stdout.decode().splitlines() if '"event": "launch"' in x]
    assert launches[0]["server_args"]["model_path"] == "/root/models/\x1b]0;pwned\x07\x1b[2J\x9b31mQwen3.6-27B"


def test_terminal_safe_keeps_tab_newline_and_text():
    assert terminal_safe("a\tb\nc\x1b]0;x\x07d\x00\x7f\x85é") == "a\tb\nc]0;xdé"
    assert terminal_safe({"k\x1b": ["v\x9b", ("w\x07",)], "_raw": "\x1b"}) == {"k": ["v", ("w",)], "_raw": "\x1b"}
