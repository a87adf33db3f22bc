"""Flag catalogues and version-aware validation (sglang_doctor/remedy/flags.py).

Most tests read the shipped catalogues, which are dumps of SGLang's real parsers (see
scripts/gen_flag_catalog.py); the facts they check are from the wheels' source and from
running the real parsers (../shared/sglang-notes.md section 4).  The drift tests at the end
compare a shipped catalogue with the live parser of an installed SGLang.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sglang_doctor.remedy import flags

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "sglang_doctor" / "remedy" / "catalogs"
OLD, NEW = "0.5.9", "0.5.23"


@pytest.fixture(scope="module")
def old() -> flags.Catalog:
    return flags.shipped_catalog(OLD)


@pytest.fixture(scope="module")
def new() -> flags.Catalog:
    return flags.shipped_catalog(NEW)


def run_isolated(code: str, *paths: Path) -> str:
    """Run ``code`` with no site-packages (so no installed SGLang is visible) and ``paths``
    (then the repository) first on sys.path; return its stdout."""
    prelude = ("import sys\n"
               f"sys.path[:0] = {[str(p) for p in paths] + [str(ROOT)]!r}\n")
    done = subprocess.run([sys.executable, "-S", "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def fake_install(where: Path, version: str, init: str | None = None) -> Path:
    """A distribution record for sglang==version (and optionally a package) in ``where``."""
    info = where / f"sglang-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
    if init is not None:
        (where / "sglang").mkdir()
        (where / "sglang" / "__init__.py").write_text(init)
    return where


# --- the shipped catalogues -----------------------------------------------------------


def test_known_versions_are_the_shipped_files_oldest_first():
    stored = {p.name.replace(".delta", "") for p in CATALOGUES.glob("sglang-*.json")}
    assert stored == {f"sglang-{v}.json" for v in flags.KNOWN_VERSIONS}
    assert OLD in flags.KNOWN_VERSIONS and NEW in flags.KNOWN_VERSIONS
    keys = [flags.version_key(v) for v in flags.KNOWN_VERSIONS]
    assert keys == sorted(keys)


@pytest.mark.parametrize("version", [OLD, NEW])
def test_catalogue_is_a_parser_dump_in_canonical_bytes(version):
    document = flags.read_shipped(f"sglang-{version}.json")
    assert document["sglang_version"] == version
    assert document["generated_by"]["script"] == "scripts/gen_flag_catalog.py"
    # sorted keys, fixed indentation: regenerating gives the same bytes, stored or rebuilt
    for path in CATALOGUES.glob(f"sglang-{version}*.json"):
        assert flags.catalogue_json(json.loads(path.read_text())) == path.read_text()
    assert flags.catalogue_json(json.loads(flags.catalogue_json(document))) == flags.catalogue_json(document)
    options = [o for a in document["actions"] for o in a["option_strings"]]
    assert len(options) == len(set(options)), "an option string appears twice"
    assert "--model-path" in options and "--help" in options


def test_the_old_catalogue_says_what_was_stubbed(old):
    generated = flags.read_shipped(f"sglang-{OLD}.json")["generated_by"]
    assert set(generated["stubbed_modules"]) <= {"torchvision", "decord"}
    assert f"sglang=={OLD} --no-deps" in generated["requirements"]


def test_flag_counts_differ_by_version(old, new):
    old_names = {s.name for s in old.specs}
    new_names = {s.name for s in new.specs}
    assert "--cuda-graph-max-bs" in old_names - new_names
    assert "--cuda-graph-max-bs-decode" in new_names - old_names
    assert "--enable-piecewise-cuda-graph" in old_names - new_names
    assert len(new_names) > len(old_names)


def test_canonical_names_agree_across_versions(old, new):
    """The canonical spelling is the one naming the ServerArgs field, which both versions
    share even where 0.5.9 lists the long form first (`--tensor-parallel-size`, `--tp-size`)."""
    for spec in old.specs:
        twin = new.by_dest(spec.dest)
        if twin is not None and spec.action != "help" and not spec.name.startswith("--no-"):
            if twin.takes_value == spec.takes_value:
                assert twin.name == spec.name, (spec, twin)


# --- spelling: aliases and argparse abbreviations --------------------------------------


@pytest.mark.parametrize("version", [OLD, NEW])
@pytest.mark.parametrize("typed, meant", [
    ("--speculative-algo", "--speculative-algorithm"),
    ("--mem-frac", "--mem-fraction-static"),
    ("--max-running", "--max-running-requests"),
    ("--speculative-num-draft", "--speculative-num-draft-tokens"),
    ("--tp", "--tp-size"),
    ("--tensor-parallel-size", "--tp-size"),
    ("--model", "--model-path"),
    ("--speculative-draft-model", "--speculative-draft-model-path"),
    ("--ep", "--ep-size"),
    ("--nccl-init-addr", "--dist-init-addr"),
    ("--mem-fraction-static=0.8", "--mem-fraction-static"),
])
def test_aliases_and_unique_prefixes_resolve(version, typed, meant):
    assert flags.shipped_catalog(version).canonical(typed) == meant


def test_context_prefix_is_unique_in_old_and_ambiguous_in_new(old, new):
    assert old.canonical("--context") == "--context-length"
    assert new.canonical("--context") is None
    assert "could match --context-bucket, --context-length" in new.validate("--context", 65536)


def test_removed_flag_is_an_ambiguous_prefix_in_new(old, new):
    assert old.spec("--cuda-graph-max-bs").dest == "cuda_graph_max_bs"
    assert new.spec("--cuda-graph-max-bs") is None
    reason = new.validate("--cuda-graph-max-bs", 16)
    assert reason.startswith("ambiguous option") and "--cuda-graph-max-bs-decode" in reason


def test_unknown_flag_names_the_closest(new):
    assert new.spec("--enable-piecewise-cuda-graph") is None
    reason = new.validate("--mem-fraction-statc", 0.8)
    assert "not a flag of SGLang 0.5.23" in reason and "--mem-fraction-static" in reason


def test_by_dest_knows_fields_and_argparse_dests(old, new):
    assert old.by_dest("tp_size").name == "--tp-size"
    assert old.by_dest("tensor_parallel_size").name == "--tp-size"  # 0.5.9's argparse dest
    assert new.by_dest("tp_size").name == "--tp-size"
    assert new.by_dest("no_such_field") is None


def test_a_negative_switch_keeps_its_own_name(new):
    spec = new.spec("--no-enable-tf32-matmul")
    assert spec.name == "--no-enable-tf32-matmul" and spec.action == "boolean_optional"
    assert new.canonical("--enable-tf32-matmul") == "--enable-tf32-matmul"
    assert new.by_dest("enable_tf32_matmul").name == "--enable-tf32-matmul"


# --- values ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [OLD, NEW])
def test_switches_take_true_only(version):
    catalog = flags.shipped_catalog(version)
    assert catalog.validate("--disable-cuda-graph", True) is None
    for value in (False, "true", 1, None, "1"):
        assert "takes no value" in catalog.validate("--disable-cuda-graph", value)


@pytest.mark.parametrize("version", [OLD, NEW])
def test_int_values(version):
    catalog = flags.shipped_catalog(version)
    assert catalog.validate("--max-running-requests", 8) is None
    assert catalog.validate("--max-running-requests", "8") is None
    for bad in (8.5, "eight", "8.0", True, None, [8]):
        assert catalog.validate("--max-running-requests", bad), bad


@pytest.mark.parametrize("version", [OLD, NEW])
def test_float_values_must_be_finite(version):
    catalog = flags.shipped_catalog(version)
    assert catalog.validate("--mem-fraction-static", 0.85) is None
    assert catalog.validate("--mem-fraction-static", "0.85") is None
    for bad in (float("nan"), float("inf"), "inf", "-inf", "nan", "0.8x"):
        assert catalog.validate("--mem-fraction-static", bad), bad


def test_human_readable_ints_only_in_new(old, new):
    assert new.validate("--context-length", "64k") is None
    assert new.validate("--max-total-tokens", "1Mi") is None
    assert "invalid" in new.validate("--context-length", "1.5Ki")
    assert "invalid int value '64k'" in old.validate("--context-length", "64k")


@pytest.mark.parametrize("version", [OLD, NEW])
def test_choices(version):
    catalog = flags.shipped_catalog(version)
    assert catalog.validate("--kv-cache-dtype", "fp8_e4m3") is None
    assert "invalid choice 'fp8'" in catalog.validate("--kv-cache-dtype", "fp8")
    assert "invalid choice" in catalog.validate("--mamba-ssm-dtype", "bf16")
    assert catalog.validate("--mamba-ssm-dtype", "bfloat16") is None


def test_choices_changed_between_versions(old, new):
    assert new.validate("--kv-cache-dtype", "mxfp8") is None
    assert "invalid choice" in old.validate("--kv-cache-dtype", "mxfp8")
    # 0.5.9 enforces speculative algorithm choices; 0.5.23 takes any name (plugins)
    assert "invalid choice 'MTP'" in old.validate("--speculative-algorithm", "MTP")
    assert old.validate("--speculative-algorithm", "NEXTN") is None
    assert new.validate("--speculative-algorithm", "MTP") is None


def test_list_values_for_nargs_flags(old, new):
    assert old.validate("--cuda-graph-bs", [1, 2, 4]) is None
    assert new.validate("--cuda-graph-bs-decode", [1, 2, 4]) is None
    assert new.validate("--cuda-graph-bs-decode", 8) is None
    assert "needs at least one value" in new.validate("--cuda-graph-bs-decode", [])
    assert "invalid int" in new.validate("--cuda-graph-bs-decode", [1, "x"])
    assert "not a list" in new.validate("--tp-size", [1, 2])


@pytest.mark.parametrize("char", sorted(flags.SHELL_METACHARACTERS))
def test_shell_metacharacters_are_refused(new, char):
    reason = new.validate("--served-model-name", f"name{char}x")
    assert reason and "refused value" in reason


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "a\0b", "a\x1bb", "a\u2028b", "a\u202eb",
                                  "--port", "-x"])
def test_control_characters_and_leading_dashes_are_refused(new, text):
    assert "refused value" in new.validate("--served-model-name", text)


def test_negative_numbers_are_values_not_flags(new):
    assert new.validate("--mamba-max-states-per-path", -1) is None
    # argparse reads "-1e3" as an option, not a number
    assert "starts with '-'" in new.validate("--mamba-max-states-per-path", "-1e3")
    assert new.validate("--served-model-name", "my-model_1.5/x:y") is None


def test_help_is_not_a_launch_setting(new):
    assert "not a launch setting" in new.validate("--help", True)


def test_defaults_are_the_parsers(old, new):
    assert old.defaults()["tp_size"] == 1 and new.defaults()["tp_size"] == 1
    assert old.defaults()["mem_fraction_static"] is None
    assert old.defaults()["max_prefill_tokens"] == 16384
    assert old.field_defaults()["mamba_full_memory_ratio"] == 0.9
    assert new.field_defaults()["mamba_full_memory_ratio"] is None
    assert new.field_defaults()["kv_cache_dtype"] == "auto"


# --- typos and renames ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [OLD, NEW])
def test_closest_for_a_typo(version):
    catalog = flags.shipped_catalog(version)
    assert catalog.closest("--mem-fraction-statc")[0] == "--mem-fraction-static"
    assert catalog.closest("--max-runing-requests")[0] == "--max-running-requests"
    assert catalog.closest("--tp-size") == ["--tp-size"]
    assert len(catalog.closest("--mem-fraction-statc", n=2)) <= 2


def test_closest_follows_a_rename(new, old):
    assert new.closest("--cuda-graph-max-bs")[0] == "--cuda-graph-max-bs-decode"
    assert new.closest("--mamba-scheduler-strategy")[0] == "--mamba-radix-cache-strategy"
    assert old.closest("--cuda-graph-max-bs-decode")[0] == "--cuda-graph-max-bs"


@pytest.mark.parametrize("source, target, expected", [
    (OLD, NEW, {"--cuda-graph-max-bs": "--cuda-graph-max-bs-decode",
                "--cuda-graph-bs": "--cuda-graph-bs-decode",
                "--mamba-scheduler-strategy": "--mamba-radix-cache-strategy",
                "--tensor-parallel-size": "--tp-size",
                "--mem-fraction-static": "--mem-fraction-static",
                "--disable-cuda-graph": "--disable-cuda-graph",
                "--enable-piecewise-cuda-graph": None,
                "--no-such-flag": None}),
    (NEW, OLD, {"--cuda-graph-max-bs-decode": "--cuda-graph-max-bs",
                "--cuda-graph-bs-decode": "--cuda-graph-bs",
                "--mamba-radix-cache-strategy": "--mamba-scheduler-strategy",
                "--tp-size": "--tp-size",
                # 0.5.14 made --piecewise-cuda-graph-max-tokens its deprecated alias
                "--cuda-graph-max-bs-prefill": "--piecewise-cuda-graph-max-tokens",
                "--no-enable-tf32-matmul": None}),
])
def test_translate(source, target, expected):
    to = flags.shipped_catalog(target)
    for flag, spelled in expected.items():
        assert flags.translate(flag, to) == spelled, flag


def test_every_derived_rename_is_real_in_both_releases():
    for rename in flags.derived_renames():
        before, after = flags.shipped_catalog(rename.before), flags.shipped_catalog(rename.after)
        assert rename.old in before._by_option and rename.new not in before._by_option
        assert rename.new in after._by_option
        assert rename.old not in after._by_option or after.spec(rename.old).deprecated
        a, b = before.spec(rename.old), after.spec(rename.new)
        assert a.takes_value == b.takes_value


# --- versions ------------------------------------------------------------------------------


def test_version_order():
    key = flags.version_key
    assert key("0.5.9") < key("0.5.10rc1") < key("0.5.10") < key("0.5.10.post1") < key("0.6")
    assert key("0.4.1.post2") < key("0.4.1.post7") < key("0.4.2") < key("0.4.10")
    assert key("0.0.0.dev5") < key("0.4.0") and key("0.5.10rc1") < key("0.5.10rc2")
    assert key("v0.5.9") == key("0.5.9")
    with pytest.raises(ValueError):
        key("latest")


def test_nearest_catalogue_at_or_below():
    assert flags.shipped_catalogue_for("0.5.9") == "sglang-0.5.9.json"
    assert flags.shipped_catalogue_for("0.5.10rc0") == "sglang-0.5.9.json"
    assert flags.shipped_catalogue_for("0.5.23") == "sglang-0.5.23.json"
    assert flags.shipped_catalogue_for("0.7.0") == "sglang-0.5.23.json"
    oldest = flags.KNOWN_VERSIONS[0]
    assert flags.shipped_catalogue_for("0.3.6") == f"sglang-{oldest}.json"
    for version in flags.KNOWN_VERSIONS:
        assert flags.shipped_catalogue_for(version) == f"sglang-{version}.json"


def test_load_catalog_says_which_catalogue_it_used():
    catalog = flags.load_catalog("0.5.10rc0")
    assert catalog.version == "0.5.10rc0"
    assert catalog.source == "catalogue sglang-0.5.9.json (nearest shipped to 0.5.10rc0)"
    assert flags.load_catalog("0.5.10rc0") is catalog  # cached
    with pytest.raises(ValueError):
        flags.load_catalog("main")


def test_resolve_version_order(tmp_path):
    out = run_isolated("""
        from sglang_doctor.remedy import flags
        print(flags.resolve_version("0.5.9", "0.5.23"))
        print(flags.resolve_version(None, "0.5.23"))
        print(flags.resolve_version(None, None))
        print(flags.resolve_version("", " v0.5.9 "))
        print(flags.resolve_version("garbage from a log", "0.5.9"))
        try:
            flags.resolve_version(None, "latest")
        except ValueError as exc:
            print("ValueError", exc)
    """)
    assert out.splitlines() == ["('0.5.9', 'log')", "('0.5.23', 'option')",
                                "('0.5.23', 'newest catalogue')", "('0.5.9', 'option')",
                                "('0.5.9', 'option')",
                                "ValueError not an SGLang version: 'latest'"]
    out = run_isolated("""
        import sys
        from sglang_doctor.remedy import flags
        print(flags.resolve_version(None, "0.5.23"), flags.resolve_version("0.5.23", None))
        print(sorted(m for m in sys.modules if m.split('.')[0] in ('sglang', 'torch')))
    """, fake_install(tmp_path, "0.5.17", init="raise RuntimeError('imported')"))
    assert out.splitlines() == ["('0.5.23', 'option') ('0.5.23', 'log')", "[]"]
    out = run_isolated("""
        from sglang_doctor.remedy import flags
        print(flags.resolve_version(None, None, "0.5.9-style"), flags.resolve_version(None, None))
    """, fake_install(tmp_path / "again", "0.5.17", init="raise RuntimeError('imported')"))
    assert out.splitlines() == ["('0.5.9', 'log style') ('0.5.17', 'installed')"]


def test_a_broken_installed_sglang_falls_back_to_the_catalogue(tmp_path):
    out = run_isolated("""
        from sglang_doctor.remedy import flags
        catalog = flags.load_catalog("0.5.23")
        print(catalog.source)
        print(catalog.canonical("--tp"))
    """, fake_install(tmp_path, "0.5.23", init="raise ImportError('no kernels here')"))
    source, tp = out.splitlines()
    assert source == ("catalogue sglang-0.5.23.json (the installed SGLang's parser failed: "
                      "ImportError: no kernels here)")
    assert tp == "--tp-size"


def test_importing_flags_imports_neither_sglang_nor_torch():
    out = run_isolated("""
        import sys
        from sglang_doctor.remedy import flags
        flags.load_catalog("0.5.9").validate("--tp", 2)
        print(sorted(m for m in sys.modules if m.split('.')[0] in ('sglang', 'torch')))
    """)
    assert out.strip() == "[]"


@pytest.mark.slow
def test_a_built_wheel_ships_the_catalogues(tmp_path):
    """A non-editable install only has what pyproject's package-data names."""
    import shutil
    import zipfile

    source = tmp_path / "src"  # a copy: building writes build/ and egg-info beside the tree
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("sglang_doctor", "rules", "fixtures"):  # fixtures: the pack's example logs ship too
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "-w", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("sglang_doctor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    stored = [p.name for p in CATALOGUES.glob("sglang-*.json")]
    assert len(stored) == len(flags.KNOWN_VERSIONS)
    for name in stored + ["quant-min-capability.json"]:
        assert f"sglang_doctor/remedy/catalogs/{name}" in names


# --- drift against the real parser -----------------------------------------------------------


def _live_version_or_skip() -> str:
    """The installed SGLang's version, else skip -- or fail when CI says it must be there."""
    required = os.environ.get("SGLANG_DOCTOR_REQUIRE_SGLANG") == "1"
    version = flags.installed_version()
    if version is None:
        if required:
            pytest.fail("SGLANG_DOCTOR_REQUIRE_SGLANG=1 but SGLang is not installed")
        pytest.skip("SGLang is not installed")
    if version not in flags.KNOWN_VERSIONS:
        if required:
            pytest.fail(f"no shipped catalogue for the installed SGLang {version}")
        pytest.skip(f"no shipped catalogue for the installed SGLang {version}")
    return version


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_flag_catalog", ROOT / "scripts" / "gen_flag_catalog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _dump(version: str) -> dict:
    return _generator().dump_catalog(version)


@pytest.fixture(scope="module")
def live_dump():
    version = _live_version_or_skip()
    return version, _dump(version)


def test_shipped_catalogue_matches_the_live_parser():
    # not through the fixture: a missing SGLang under SGLANG_DOCTOR_REQUIRE_SGLANG=1 must be
    # a failure of this test, not an error of a fixture
    version = _live_version_or_skip()
    fresh = _dump(version)
    shipped = flags.read_shipped(f"sglang-{version}.json")  # rebuilt from base + deltas
    for key in ("actions", "fields", "fields_without_default"):
        if fresh[key] != shipped[key]:
            if key == "actions":
                a = {json.dumps(r, sort_keys=True) for r in shipped[key]}
                b = {json.dumps(r, sort_keys=True) for r in fresh[key]}
                detail = f"only shipped: {sorted(a - b)[:3]}; only live: {sorted(b - a)[:3]}"
            else:
                detail = ""
            pytest.fail(f"sglang-{version}.json drifted from the real parser ({key}); "
                        f"rerun scripts/gen_flag_catalog.py {version}. {detail}")


def test_live_catalog_comes_from_the_parser(live_dump):
    version, _ = live_dump
    catalog = flags.load_catalog(version)
    assert catalog.source == "parser"
    shipped = flags.shipped_catalog(version)
    assert [s.name for s in catalog.specs] == [s.name for s in shipped.specs]


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def test_prefix_resolution_matches_argparse(live_dump):
    """For every prefix of every option string, argparse itself (this Python's, on the real
    parser) and Catalog.spec agree on the action, or on the text being ambiguous."""
    from sglang.srt.server_args import ServerArgs

    version, _ = live_dump
    parser = _RaisingParser()
    ServerArgs.add_cli_args(parser)
    catalog = flags.load_catalog(version)
    prefixes = {o[:i] for o in parser._option_string_actions if o.startswith("--")
                for i in range(3, len(o) + 1)}
    assert len(prefixes) > 5000
    for prefix in sorted(prefixes):
        try:
            found = parser._parse_optional(prefix)
        except ValueError:
            found = None  # ambiguous
        action = found[0] if found else None
        spec = catalog.spec(prefix)
        if action is None:
            assert spec is None, prefix
        else:
            assert spec is not None and spec.name in action.option_strings, prefix


@pytest.mark.parametrize("flag, value", [
    ("--context-length", "64k"), ("--context-length", "1.5Ki"), ("--max-total-tokens", "1Mi"),
    ("--mem-fraction-static", "0.9"), ("--mem-fraction-static", "x"),
    ("--kv-cache-dtype", "fp8"), ("--kv-cache-dtype", "fp8_e4m3"),
    ("--cuda-graph-backend-decode", "tc_piecewise"), ("--cuda-graph-backend-decode", "full"),
    ("--cuda-graph-bs-decode", "3"), ("--speculative-algorithm", "EAGLE"),
    ("--json-model-override-args", "{}"), ("--json-model-override-args", "[1,2]"),
])
def test_shipped_validation_agrees_with_the_live_parser(live_dump, flag, value):
    version, _ = live_dump
    live, shipped = flags.load_catalog(version), flags.shipped_catalog(version)
    if live.spec(flag) is None:
        pytest.skip(f"{flag} is not in SGLang {version}")
    assert (live.validate(flag, value) is None) == (shipped.validate(flag, value) is None)
