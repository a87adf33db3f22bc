"""regex_programs: the rule regexes' programs stored by one run and given to the engine by the next."""

import json
import os

import pytest
import regex
import regex._main

from sglang_doctor.diagnose import regex_programs
from sglang_doctor.diagnose.rules_engine import RuleSet, _LazyPattern

FLAGS = regex.MULTILINE
TEXTS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "ValueError: invalid literal for int() with base 10: 'abc'\nsecond line --tp-size 2",
    "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error",
    "",
]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """regex_programs with no programs loaded or recorded, its cache under tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SGLANG_DOCTOR_NO_RULE_CACHE", raising=False)
    monkeypatch.setattr(regex_programs, "_stored", None)
    monkeypatch.setattr(regex_programs, "_new", {})
    return tmp_path


def _forget(monkeypatch):
    """As a new process: nothing loaded, nothing recorded."""
    monkeypatch.setattr(regex_programs, "_stored", None)
    monkeypatch.setattr(regex_programs, "_new", {})


def _pack_sources() -> list[str]:
    rules = RuleSet.load().rules
    return sorted({p._source if isinstance(p, _LazyPattern) else p.pattern
                   for r in rules for p in (r.message, r.line_rx) if p is not None})


def _same(a, b, text: str) -> None:
    ma, mb = a.search(text), b.search(text)
    assert (ma is None) == (mb is None)
    if ma is not None:
        assert (ma.span(), ma.groupdict(), ma.groups()) == (mb.span(), mb.groupdict(), mb.groups())


def test_a_stored_program_gives_the_pattern_regex_compile_gives_without_compiling_it(fresh, monkeypatch):
    sources = _pack_sources()
    assert len(sources) > 100  # (the shipped pack's regexes)
    for source in sources:
        regex_programs.compile(source, FLAGS)
    regex_programs.save()
    files = list((fresh / "sglang-doctor").glob("regex-programs-*.json"))
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    _forget(monkeypatch)

    def no_compiling(*args, **kwargs):
        raise AssertionError("regex compiled a pattern whose program was stored")

    with monkeypatch.context() as m:
        m.setattr(regex._main, "_compile", no_compiling)
        for source in sources:
            assert regex_programs.compile(source, FLAGS).pattern == source
    for source in sources:
        _forget(monkeypatch)
        stored = regex_programs.compile(source, FLAGS)  # (from the file written above)
        compiled = regex.compile(source, FLAGS, cache_pattern=False)
        assert (stored.pattern, stored.flags, dict(stored.groupindex), stored.groups) == \
            (compiled.pattern, compiled.flags, dict(compiled.groupindex), compiled.groups)
        for text in TEXTS:
            _same(stored, compiled, text)


def test_a_first_run_records_and_the_programs_survive_the_save(fresh, monkeypatch):
    source = r"(?i)out of memory (?P<gib>\d+(?:\.\d+)?) GiB|^RuntimeError: (?P<msg>.+)$"
    pattern = regex_programs.compile(source, FLAGS)
    assert pattern.search("CUDA OUT OF MEMORY 2.5 GiB").group("gib") == "2.5"
    assert regex_programs._new  # recorded, not saved yet
    regex_programs.save()
    blob = json.loads(next((fresh / "sglang-doctor").glob("regex-programs-*.json")).read_text())
    assert blob["format"] == regex_programs.FORMAT and f"{FLAGS}:{source}" in blob["programs"]
    _forget(monkeypatch)
    again = regex_programs.compile(source, FLAGS)
    assert not regex_programs._new  # from the file
    assert again.search("x\nRuntimeError: boom").group("msg") == "boom"


@pytest.mark.parametrize("content", [b"not json", b'{"format": 2, "programs": []}',
                                     b'{"format": 2, "programs": {"8:a(b)": [1, "zz", [], [], 0, [], 0, 1]}}',
                                     b'{"format": 2, "programs": {"8:a(b)": ["8", "00", [], [], 0, [], 0, 1]}}'])
def test_a_bad_cache_file_means_compiling_as_before(fresh, monkeypatch, content):
    regex_programs.compile("a(b)", FLAGS)
    regex_programs.save()
    path = next((fresh / "sglang-doctor").glob("regex-programs-*.json"))
    path.write_bytes(content)
    _forget(monkeypatch)
    pattern = regex_programs.compile("a(b)", FLAGS)
    assert pattern.search("xab").span() == (1, 3) and pattern.groups == 1


def test_a_cache_directory_others_can_write_is_not_read(fresh, monkeypatch):
    regex_programs.compile("a(b)", FLAGS)
    regex_programs.save()
    os.chmod(fresh / "sglang-doctor", 0o777)
    _forget(monkeypatch)
    assert regex_programs._programs() == {}
    regex_programs.compile("a(b)", FLAGS)
    assert regex_programs._new  # compiled anew


def test_no_rule_cache_means_no_programs_file(fresh, monkeypatch):
    monkeypatch.setenv("SGLANG_DOCTOR_NO_RULE_CACHE", "1")
    regex_programs.compile("a(b)", FLAGS)
    regex_programs.save()
    assert not list(fresh.glob("sglang-doctor/regex-programs-*.json"))
