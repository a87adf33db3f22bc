"""release_range reads each release's field names along the stored delta chain, without
rebuilding the catalogues: the names must be the rebuilt catalogues' own."""

from sglang_doctor.remedy import flags, release_range


def test_field_names_along_the_delta_chain_equal_the_rebuilt_catalogues():
    assert len(flags.KNOWN_VERSIONS) > 50
    for version in flags.KNOWN_VERSIONS:
        body = flags.shipped_catalog(version).body
        expected = frozenset(body.get("fields", {})) | frozenset(body.get("fields_without_default", []))
        assert release_range._fields_of(version) == expected, version
