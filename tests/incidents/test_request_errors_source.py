"""Every header of incidents/request_errors.py is in the source of the releases it names.

Reads the wheels that scripts/inventory_failures.py downloads into the user's cache
(``~/.cache/sglang-doctor/wheels``); a release whose wheel is not there is skipped (slow tier:
``pip download --no-deps sglang==X -d ~/.cache/sglang-doctor/wheels`` makes it).
"""

from __future__ import annotations

import re
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest

from sglang_doctor.incidents import request_errors

WHEELS = Path.home() / ".cache" / "sglang-doctor" / "wheels"
# a header built from a call's result, not a literal in the source: the literal part that is
_SOURCE_FORM = {"error: Traceback (most recent call last):": 'f"error: {get_exception_traceback()}"'}


@lru_cache(maxsize=None)
def _source(version: str) -> str | None:
    found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
    if not found:
        return None
    with zipfile.ZipFile(found[0]) as whl:
        return "\n".join(whl.read(n).decode("utf-8", "replace") for n in whl.namelist()
                         if n.startswith("sglang/srt/") and n.endswith(".py"))


def _cases():
    for head, where in request_errors.HEADERS:
        for version in re.findall(r"\b0\.\d+\.\d+(?:\.post\d+)?\b", where.rsplit("(", 1)[-1]):
            yield pytest.param(head, version, id=f"{head.strip()[:30]}@{version}")


@pytest.mark.slow
@pytest.mark.parametrize("head,version", list(_cases()))
def test_the_header_is_in_the_releases_source(head: str, version: str):
    source = _source(version)
    if source is None:
        pytest.skip(f"no sglang {version} wheel in {WHEELS}")
    assert _SOURCE_FORM.get(head, head) in source, f"{head!r} not in sglang {version}'s srt/"
