"""A flag SGLang's own message advises ("please use `--mamba-scheduler-strategy extra_buffer`")
exists in the release that printed it: for a pasted line that names no release, the remedy
keeps that release's spelling instead of respelling the flag for the newest catalogue
(remedy/release_range.advised_flag_range, pipeline._advised_range).  A flag the message
refuses ("unrecognized arguments: --x", "--x is deprecated") dates nothing."""

from __future__ import annotations

import pytest

from conftest import explain_one_incident
from sglang_doctor.remedy import flags, release_range

MAMBA = ("ValueError: Mamba radix cache with overlap schedule is not supported; please use "
         "`--mamba-scheduler-strategy extra_buffer` or --disable-overlap-schedule")


def test_an_advised_flag_dates_the_message_to_the_releases_that_have_it():
    span = release_range.advised_flag_range([MAMBA], "r")
    assert span is not None
    having = [v for v in flags.KNOWN_VERSIONS if "mamba_scheduler_strategy" in release_range._all_fields()[v]]
    assert list(span.releases) == having and len(having) < len(flags.KNOWN_VERSIONS)


@pytest.mark.parametrize("text", [
    "sglang: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer",  # refused, not advised
    "ValueError: --mamba-scheduler-strategy is deprecated",
    "AssertionError: please use --tp-size 2",  # every release has it: dates nothing
    "ValueError: please use --no-such-flag-anywhere",  # no shipped release knows it
])
def test_what_dates_nothing(text):
    assert release_range.advised_flag_range([text], "r") is None


def test_the_fix_keeps_the_spelling_of_the_release_that_printed_the_advice(tmp_path):
    log = tmp_path / "mamba.log"
    log.write_text(MAMBA + "\n")
    inc = explain_one_incident(log)
    rem = inc["remediation"]
    changed = set(rem["set"]) | set(rem["unset"]) | {f for a in rem["alternatives"][:1] for f in (*a["set"], *a["unset"])}
    assert "--mamba-scheduler-strategy" in changed
    assert "--mamba-radix-cache-strategy" not in changed
    assert rem["target"]["version_source"] == "message wording"
    assert "mamba_scheduler_strategy" in release_range._all_fields()[rem["target"]["sglang_version"]]
