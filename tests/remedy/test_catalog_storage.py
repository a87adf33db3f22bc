"""Every release's flag catalogue, stored as a base and per-release differences (issue 14).

The catalogues are dumps of each release's real parser (scripts/gen_flag_catalog.py); these
tests check the storage (round trip, chain, size), the renames derived from the data, the
release range a dump's fields allow, and -- in the slow tier -- that regenerating a 0.4.x and
a 0.5.x catalogue from their wheels gives the shipped bytes.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_doctor.incidents import server_args
from sglang_doctor.remedy import flags, release_range

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "sglang_doctor" / "remedy" / "catalogs"


def stored() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in CATALOGUES.glob("sglang-*.json")}


def test_at_least_forty_releases_from_040_to_0523_ship():
    assert len(flags.KNOWN_VERSIONS) >= 40
    assert flags.KNOWN_VERSIONS[0] == "0.4.0" and flags.KNOWN_VERSIONS[-1] == "0.5.23"
    assert {"0.4.6", "0.4.10", "0.5.9", "0.5.10.post1", "0.5.15.post1"} <= set(flags.KNOWN_VERSIONS)
    keys = [flags.version_key(v) for v in flags.KNOWN_VERSIONS]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_one_base_and_a_chain_of_deltas_each_from_the_release_before():
    files = stored()
    whole = [name for name, doc in files.items() if "delta_from" not in doc]
    assert whole == ["sglang-0.4.0.json"]
    versions = flags.KNOWN_VERSIONS
    for before, after in zip(versions, versions[1:]):
        delta = files[f"sglang-{after}.delta.json"]
        assert delta["delta_from"] == before and delta["sglang_version"] == after


def test_storage_is_compact():
    size = sum(p.stat().st_size for p in CATALOGUES.glob("sglang-*.json"))
    whole = len(flags.catalogue_json(flags.read_shipped("sglang-0.5.23.json")))
    assert size < 3 * 1024 * 1024
    assert size < len(flags.KNOWN_VERSIONS) * whole / 4  # far from one whole copy per release


def test_packing_the_rebuilt_documents_gives_the_stored_files_back():
    documents = [flags.read_shipped(f"sglang-{v}.json") for v in flags.KNOWN_VERSIONS]
    packed = flags.pack_catalogues(documents)
    assert packed.keys() == {p.name for p in CATALOGUES.glob("sglang-*.json")}
    for name, text in packed.items():
        assert (CATALOGUES / name).read_text() == text, name


def test_a_delta_rebuilds_its_release_exactly():
    a, b = (flags.read_shipped(f"sglang-{v}.json") for v in ("0.4.6", "0.5.23"))
    delta = flags.make_delta(a, b)
    assert flags.catalogue_json(flags.apply_delta(a, delta)) == flags.catalogue_json(b)
    with pytest.raises(ValueError):
        flags.apply_delta(b, delta)


def test_rebuilt_documents_are_parser_dumps():
    for version in ("0.4.0", "0.4.6.post5", "0.5.9", "0.5.23"):
        document = flags.read_shipped(f"sglang-{version}.json")
        assert document["sglang_version"] == version
        assert f"sglang=={version} --no-deps" in document["generated_by"]["requirements"]
        options = [o for a in document["actions"] for o in a["option_strings"]]
        assert len(options) == len(set(options)) and "--model-path" in options


def test_what_was_stubbed_is_recorded_per_release():
    for version in flags.KNOWN_VERSIONS:
        stubs = flags.read_shipped(f"sglang-{version}.json")["generated_by"]["stubbed_modules"]
        assert set(stubs) <= {"torchvision", "decord"}, version


# -- renames derived from the data ------------------------------------------------------------


def test_renames_are_found_between_adjacent_releases():
    renames = flags.derived_renames()
    pairs = {(r.old, r.new) for r in renames}
    assert ("--mamba-scheduler-strategy", "--mamba-radix-cache-strategy") in pairs
    assert ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode") in pairs
    versions = flags.KNOWN_VERSIONS
    for rename in renames:
        assert versions.index(rename.after) == versions.index(rename.before) + 1
        before, after = flags.shipped_catalog(rename.before), flags.shipped_catalog(rename.after)
        assert rename.old in before._by_option and rename.new not in before._by_option
        assert rename.new in after._by_option
        if rename.evidence == "deprecated alias":  # kept for a while as an alias of the new one
            assert after.spec(rename.old).deprecated
        else:
            assert rename.old not in after._by_option
        assert rename.evidence in ("dest", "help", "deprecated alias")


def test_translate_follows_a_derived_rename_both_ways():
    old, new = flags.shipped_catalog("0.5.9"), flags.shipped_catalog("0.5.23")
    assert flags.translate("--mamba-scheduler-strategy", new) == "--mamba-radix-cache-strategy"
    assert flags.translate("--mamba-radix-cache-strategy", old) == "--mamba-scheduler-strategy"


# -- the release range of a dump ----------------------------------------------------------------


def _fields(version: str) -> dict:
    body = flags.read_shipped(f"sglang-{version}.json")
    return {**{k: None for k in body["fields_without_default"]}, **body["fields"]}


@pytest.mark.parametrize("version", ["0.4.0", "0.4.6.post2", "0.5.3", "0.5.9", "0.5.23"])
def test_a_complete_dump_of_a_release_names_a_range_containing_it(version):
    found = release_range.release_range(_fields(version), complete=True)
    assert found is not None and version in found.releases and found.complete
    assert flags.version_key(found.oldest) <= flags.version_key(version) <= flags.version_key(found.newest)


def test_a_cut_dump_only_bounds_from_below():
    fields = dict(list(_fields("0.5.9").items())[:5])
    cut = release_range.release_range(fields, complete=False)
    full = release_range.release_range(_fields("0.5.9"), complete=True)
    assert set(full.releases) <= set(cut.releases) and not cut.complete


def test_a_field_pins_the_range():
    """A dump with field X and without Y: only releases with X and without Y."""
    x = "mamba_scheduler_strategy"
    having = [v for v in flags.KNOWN_VERSIONS if x in _fields(v)]
    found = release_range.release_range(_fields(having[-1]), complete=True)
    assert set(found.releases) <= set(having)
    assert found.spec.startswith(("==", ">="))


def test_the_seed_dump_is_059s():
    text = (ROOT / "fixtures" / "seed" / "seed_full.log").read_text()
    line = next(l for l in text.splitlines() if "server_args=" in l)
    dump = server_args.find_dump(line)
    fields, _ = server_args.parse_dump(dump)
    found = release_range.release_range(fields, server_args.dump_is_complete(dump))
    assert found is not None and "0.5.9" in found.releases


def test_nothing_fits_a_dump_of_unknown_fields():
    assert release_range.release_range({"no_such_field_anywhere": 1}, complete=False) is None
    assert release_range.release_range({}, complete=True) is None


# -- regenerating from the wheels (slow: venvs, wheels, two real imports) -----------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.4.6.post5", "0.5.15"])
def test_regenerating_from_the_wheel_gives_the_shipped_bytes(version, tmp_path):
    out = tmp_path / f"sglang-{version}.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_flag_catalog.py"), version,
                           "--out", str(out)], capture_output=True, text=True, timeout=3600,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "SGL_"))})
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.read_text() == flags.catalogue_json(flags.read_shipped(f"sglang-{version}.json"))
    # and `sglang-doctor flags` prints exactly the regenerated parser's option strings
    fresh = json.loads(out.read_text())
    shown = subprocess.run([sys.executable, "-m", "sglang_doctor", "flags", "--sglang-version", version],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert shown.stdout.splitlines() == sorted(o for a in fresh["actions"] for o in a["option_strings"])


def test_a_release_is_rebuilt_without_a_document_of_every_release_before_it():
    # (session 18: the first launch of a log paid for 92 sorted documents, in explain's serial
    # part; the chain is now applied to one keyed set, and each stored file is parsed once,
    # for the chain and release_range alike)
    flags._document.cache_clear()
    flags._read_stored.cache_clear()
    flags._KEYED.clear()  # (the keyed releases hold the records of the files parsed before)
    release_range._all_fields.cache_clear()
    try:
        flags._document("0.5.23")
        assert flags._document.cache_info().currsize == 1
        parsed = flags._read_stored.cache_info().currsize
        assert parsed == len(flags.KNOWN_VERSIONS)
        release_range._all_fields()
        assert flags._read_stored.cache_info().currsize == parsed  # nothing parsed again
    finally:
        flags._document.cache_clear()


def test_a_release_after_one_already_rebuilt_is_what_the_chain_from_the_base_gives():
    """(flags._keyed starts from the nearest release already keyed: a release rebuilt after a
    later one, or after one far before it, is the same document)"""
    flags._document.cache_clear()
    flags._KEYED.clear()
    try:
        newest = flags.catalogue_json(flags._document(flags.KNOWN_VERSIONS[-1]))
        middle = flags.KNOWN_VERSIONS[len(flags.KNOWN_VERSIONS) // 2]
        got = flags.catalogue_json(flags._document(middle))
        flags._document.cache_clear()
        flags._KEYED.clear()
        assert flags.catalogue_json(flags._document(middle)) == got
        assert flags.catalogue_json(flags._document(flags.KNOWN_VERSIONS[-1])) == newest
    finally:
        flags._document.cache_clear()


def test_a_shipped_catalogue_shares_specs_that_are_the_ones_made_anew():
    """(flags._specs_of: a record of the shipped documents makes its specs once per process)"""
    for version in flags.KNOWN_VERSIONS:
        shared = flags.shipped_catalog(version)
        fresh = flags.Catalog(version, shared.source, copy.deepcopy(shared.body))
        assert shared.specs == fresh.specs, version
        assert shared._by_option == fresh._by_option and shared._by_dest == fresh._by_dest, version
        assert shared._options == fresh._options, version


def test_the_rebuilt_chain_is_what_apply_delta_gives_release_by_release():
    versions = flags.KNOWN_VERSIONS
    document = flags._read_stored(flags._stored_files()[versions[0]])
    for version in versions[1:]:
        document = flags.apply_delta(document, flags._read_stored(flags._stored_files()[version]))
        assert flags.catalogue_json(flags._document(version)) == flags.catalogue_json(document), version
