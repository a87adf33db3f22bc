"""Issue 12: argument refusals with the fix people confirmed (fixtures/args_fixes/cases.yaml,
scored by bench/args_fixes.py as bench/accuracy.py scores a label's fix), and the one-line form
of the argument checks bench/message_fixes.py --bare pastes.  The thread cases (their text under
fixtures/args_fixes/) run here through the CLI as a user runs it; the corpus cases are
bench/accuracy.py's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from args_fixes import load_cases  # noqa: E402
from fixes import score  # noqa: E402

KINDS = {"remove", "respell", "partner", "value", "backend"}


def test_the_cases_are_well_formed():
    cases = load_cases()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)) and len(ids) >= 19
    for case in cases:
        assert (ROOT / case["log"]).is_file(), case["id"]
        assert case.get("fix_flags") or case.get("fix_env"), case["id"]
        assert case["half"] in ("tune", "check") and case["kind"] in KINDS, case["id"]
        assert case.get("source") and case.get("confirmed_by"), case["id"]
        if case["log"].startswith("fixtures/"):
            assert case["log"].endswith(".txt"), "a *.log under fixtures/ must be a rule's example (rules test)"
    assert {c["half"] for c in cases} == {"tune", "check"}


@pytest.mark.parametrize("case", [c for c in load_cases() if c["log"].startswith("fixtures/")], ids=lambda c: c["id"])
def test_a_thread_case_gets_its_confirmed_fix(case):
    row = score(case)
    assert not row["crash"]
    assert row["hit"], f"{case['id']}: confirmed {case.get('fix_flags')}; tool: {row['primary']} | {row['alt1']}"


def test_the_bare_line_of_an_argument_check():
    from message_fixes import bare_line

    raise_site = {"kind": "raise", "exception": "builtins.ValueError", "template": "--dcp-size {x} must divide --tp-size {y}."}
    line = bare_line(raise_site)
    assert line.startswith("ValueError: --dcp-size ") and line.endswith("\n") and line.count("\n") == 1
    assert bare_line({"kind": "assert", "exception": None, "template": "tp_size must be positive"}) == \
        "AssertionError: tp_size must be positive\n"
    assert bare_line({"kind": "log.warning", "exception": None, "template": "a warning"}) is None
    assert bare_line({"kind": "assert", "exception": None, "template": ""}) is None


def test_the_pasted_shapes_of_an_argument_check():
    from message_fixes import SHAPES, shaped, valid_in

    import inventory_failures as inv_mod
    from sglang_doctor.remedy import flags

    site = {"file": "srt/server_args.py", "line": 5143, "function": "ServerArgs.check_server_args", "kind": "raise",
            "exception": "builtins.ValueError", "template": "multi-node data parallel is not supported unless dp attention!"}
    log = inv_mod.synthetic_log(site, "startup.args")
    assert "server_args=" in log
    for shape in SHAPES:
        text = shaped(site, log, shape)
        assert text is not None and "data parallel is not supported" in text, shape
        if shape != "full":
            assert "server_args=" not in text, f"{shape}: the launch header is what these pastes lack"
    assert all(line.startswith("2") and "Z " in line for line in shaped(site, log, "kubectl").splitlines())
    old = flags.shipped_catalog("0.5.9")
    assert valid_in({"set": {"--enable-dp-attention": True}}, old)
    assert not valid_in({"set": {"--attn-dp-size": 2}}, old), "0.5.22's spelling is no flag of 0.5.9"
    assert not valid_in({"unset": ["--mamba-radix-cache-strategy"]}, old)
