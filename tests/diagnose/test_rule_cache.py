"""The parsed-rules cache (issue 11 item 10) and user rule files that fail to load (item 13).

The cache is JSON (plain data: loading it cannot run code) and is used only when the
current user owns it and its directory and nobody else can write either; otherwise the
pack is parsed again.  A bad user rule file is skipped with a warning outside `rules lint`;
a bad built-in pack is still an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_doctor.diagnose import rules_engine
from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet

ROOT = Path(__file__).resolve().parents[2]

RULE = """\
rules:
  - id: user.cached
    category: other
    phase: auto
    title: the title in the YAML file
    match:
      exception: RuntimeError
    explanation: e
"""


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("SGLANG_DOCTOR_NO_RULE_CACHE", raising=False)
    return home / "sglang-doctor"


def user_dir(tmp_path: Path, text: str = RULE, name: str = "r.yaml") -> Path:
    d = tmp_path / "rules"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def tamper(cache_dir: Path) -> Path:
    """Rewrite the one cache file so that the rule's title differs from the YAML's."""
    (path,) = cache_dir.glob("rules-*.json")
    blob = json.loads(path.read_text())
    for _, data in blob["files"]:
        for rule in (data or {}).get("rules", []):
            if rule.get("id") == "user.cached":
                rule["title"] = "a title only the cache has"
    path.write_text(json.dumps(blob))
    return path


def title(d: Path) -> str:
    return RuleSet.load([d], builtin=False, user=False).get("user.cached").title


def test_cache_is_plain_json_private_and_used(tmp_path, cache_home):
    d = user_dir(tmp_path)
    assert title(d) == "the title in the YAML file"
    (path,) = cache_home.glob("rules-*.json")
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    json.loads(path.read_text())  # data, not a pickle
    assert not list(cache_home.glob("*.pickle"))
    tamper(cache_home)
    assert title(d) == "a title only the cache has"  # a private cache is used (so the checks below can fail)


@pytest.mark.parametrize("how", ["group-writable file", "world-writable directory", "file of another user",
                                 "directory of another user", "symlinked file"])
def test_cache_anyone_else_could_write_is_ignored(tmp_path, cache_home, how):
    d = user_dir(tmp_path)
    title(d)
    path = tamper(cache_home)
    if how == "group-writable file":
        path.chmod(0o660)
    elif how == "world-writable directory":
        cache_home.chmod(0o777)
    elif how == "file of another user":
        if os.geteuid() != 0:
            pytest.skip("needs root to chown")
        os.chown(path, 4242, 4242)
    elif how == "directory of another user":
        if os.geteuid() != 0:
            pytest.skip("needs root to chown")
        os.chown(cache_home, 4242, 4242)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
    assert title(d) == "the title in the YAML file"


def test_no_cache_is_written_into_a_directory_others_can_write(tmp_path, cache_home):
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)
    title(user_dir(tmp_path))
    assert not list(cache_home.glob("rules-*"))


def test_a_bad_user_rule_file_is_skipped_with_a_warning(tmp_path):
    d = user_dir(tmp_path)
    (d / "bad.yaml").write_text("rules:\n  - id: user.bad\n    category: nonsense\n")
    rs = RuleSet.load([d], builtin=False, user=False)
    assert rs.get("user.cached") is not None and rs.get("user.bad") is None
    (warning,) = rs.load_warnings
    assert str(d / "bad.yaml") in warning and "skipped" in warning
    with pytest.raises(RuleLoadError):
        RuleSet.load([d], builtin=False, user=False, strict=True)


def test_a_bad_builtin_pack_is_still_an_error(tmp_path, monkeypatch):
    d = user_dir(tmp_path, "rules:\n  - id: builtin.bad\n    category: nonsense\n")
    monkeypatch.setattr(rules_engine, "builtin_rules_dir", lambda: d)
    with pytest.raises(RuleLoadError):
        RuleSet.load(builtin=True, user=False)


def test_bad_file_in_the_config_directory_warns_and_explain_goes_on(tmp_path):
    """~/.config/sglang-doctor/rules/ holds a broken file: explain warns once, still diagnoses
    (exit 1 on the seed tail); `rules lint` of that directory still exits 2."""
    config = tmp_path / "config"
    rules_dir = config / "sglang-doctor" / "rules"
    rules_dir.mkdir(parents=True)
    (rules_dir / "broken.yaml").write_text("rules: [\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "SGLANG_DOCTOR_NO_RULE_CACHE": "1"}
    r = subprocess.run([sys.executable, "-m", "sglang_doctor", "explain", "--format", "json",
                        str(ROOT / "fixtures" / "seed" / "seed_tail20.log")],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    warnings = [w for w in r.stderr.splitlines() if "broken.yaml" in w]
    assert len(warnings) == 1 and "skipped" in warnings[0]
    lint = subprocess.run([sys.executable, "-m", "sglang_doctor", "rules", "lint", str(rules_dir)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert lint.returncode == 2 and "broken.yaml" in lint.stderr


def _slow_rule_incident():
    """A one-line RuntimeError the slow test rule matches."""
    from sglang_doctor.model import ExceptionInfo, Incident, Line

    inc = Incident(kind="traceback", first_line=1, last_line=1, lines=[Line(1, "RuntimeError: xxxy")],
                   ranks=[], signals=[], launch_index=0, after_ready=False)
    inc.exception = ExceptionInfo("RuntimeError", "xxxy")
    inc.chain = [inc.exception]
    return inc


def test_a_rule_slow_on_every_incident_is_dropped_once_over_its_budget(tmp_path, monkeypatch):
    """Item 13: a regex just under the per-match timeout, on every incident, is stopped by the
    per-rule budget (made small here, so that no timing decides the test)."""
    slow = RULE.replace("user.cached", "user.slow").replace("exception: RuntimeError",
                                                               "exception: RuntimeError\n      message: 'x+y'")
    rs = RuleSet.load([user_dir(tmp_path, slow)], builtin=False, user=False)
    monkeypatch.setattr(rules_engine, "RULE_TIME_BUDGET", 0.0)
    monkeypatch.setattr(rules_engine, "SLOW_MATCH", 0.0)
    monkeypatch.setattr(rules_engine, "SLOW_TRIES", 1)

    assert rs.diagnose(_slow_rule_incident(), None).rule == "user.slow"  # the match that crossed the budget counts
    assert rs.diagnose(_slow_rule_incident(), None).rule == "unknown"  # later ones go without the rule
    assert len(rs.warnings) == 1 and "user.slow" in rs.warnings[0] and "budget" in rs.warnings[0]


def test_a_rule_is_judged_slow_only_after_several_incidents(tmp_path, monkeypatch):
    """One costly try (a first compile, a stall on a busy machine) must not drop a rule: a
    log's diagnosis may not depend on the machine's load.  With the budget at zero, the rule
    still answers for the first SLOW_TRIES - 1 incidents and is dropped after the next."""
    slow = RULE.replace("user.cached", "user.slow").replace("exception: RuntimeError",
                                                               "exception: RuntimeError\n      message: 'x+y'")
    rs = RuleSet.load([user_dir(tmp_path, slow)], builtin=False, user=False)
    monkeypatch.setattr(rules_engine, "RULE_TIME_BUDGET", 0.0)
    monkeypatch.setattr(rules_engine, "SLOW_MATCH", 0.0)

    got = [rs.diagnose(_slow_rule_incident(), None).rule for _ in range(rules_engine.SLOW_TRIES + 1)]
    assert rules_engine.SLOW_TRIES > 1
    assert got == ["user.slow"] * rules_engine.SLOW_TRIES + ["unknown"]
    assert len(rs.warnings) == 1 and "user.slow" in rs.warnings[0]


def test_rules_from_the_cache_compile_their_regexes_on_first_use(cache_home):
    """Data from the cache loaded without a problem before, so its regexes are compiled when
    a rule is first tried (start-up pays for none); a fresh parse and ``strict`` (lint)
    compile every one at load, where a bad one is reported."""
    fresh = RuleSet.load(user=False)
    cached = RuleSet.load(user=False)
    strict = RuleSet.load(user=False, strict=True)
    lazy = 0
    for a, b, c in zip(fresh.rules, cached.rules, strict.rules):
        assert a.id == b.id == c.id
        for attr in ("message", "line_rx"):
            x, y, z = getattr(a, attr), getattr(b, attr), getattr(c, attr)
            assert (x is None) == (y is None) == (z is None)
            if x is None:
                continue
            assert not isinstance(x, rules_engine._LazyPattern) and not isinstance(z, rules_engine._LazyPattern)
            lazy += isinstance(y, rules_engine._LazyPattern)
            assert y._rx is None if isinstance(y, rules_engine._LazyPattern) else True
            assert (y.pattern, y.flags, y.groupindex) == (x.pattern, x.flags, x.groupindex)
    assert lazy > 100
    example = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    for a, b in zip(fresh.rules, cached.rules):
        if a.message is not None:
            assert bool(a.message.search(example)) == bool(b.message.search(example))


def test_a_file_edited_while_it_is_parsed_is_not_kept_under_its_new_stats(tmp_path, cache_home, monkeypatch):
    """A rule file rewritten while a process parses it (another explain loading the pack while
    the user edits a rule) must not leave the old text cached under the new file's size and
    mtime: the next load would read the old rule and never see the edit."""
    d = user_dir(tmp_path)
    path = d / "r.yaml"
    parse = rules_engine.parse_rule_file
    calls = []

    def parse_then_edit(p, problems):
        data = parse(p, problems)
        if not calls:
            calls.append(p)
            path.write_text(RULE.replace("the title in the YAML file", "the edited title, a little longer"))
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
        return data

    monkeypatch.setattr(rules_engine, "parse_rule_file", parse_then_edit)
    first = RuleSet.load([d], builtin=False, user=False)
    assert first.get("user.cached").title == "the title in the YAML file"  # what was read
    monkeypatch.setattr(rules_engine, "parse_rule_file", parse)
    again = RuleSet.load([d], builtin=False, user=False)
    assert again.get("user.cached").title == "the edited title, a little longer"
