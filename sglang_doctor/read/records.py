"""SGLang's log-record headers.

SGLang's formatter is ``[%(asctime)s{.msecs}{prefix}] %(message)s`` where the prefix is
`` DP{n}``, `` PP{n}``, `` ATTN_CP{n}``, `` MOE_DP{n}``, `` TP{n}``, `` EP{n}`` in that order,
each only when that kind of parallelism is on (sglang-notes §1.1).  Only the first line of a
multi-line message is prefixed: a record begins at a prefixed line and owns the unprefixed
lines after it.
"""

from __future__ import annotations

import re

from sglang_doctor.model import Prefix

_SGLANG = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d{1,6})?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)
# xgrammar and other C++ code: "[15:14:17] /project/cpp/tokenizer_info.cc:146: Warning: ..."
_TIME_ONLY = re.compile(r"\[(\d\d:\d\d:\d\d)(?:\.\d+)?\] ")
_UVICORN = re.compile(r"(INFO|WARNING|ERROR|DEBUG|CRITICAL): {1,6}")

BARE = Prefix(None, (), "", "bare")


def parse_prefix(text: str) -> Prefix:
    """Split a line into its SGLang header (if any) and message."""
    if text.startswith("["):
        m = _SGLANG.match(text)
        if m:
            ranks = tuple(m.group(2).split()) if m.group(2) else ()
            message = text[m.end():]
            kind = "uvicorn" if _UVICORN.match(message) else "sglang"
            return Prefix(m.group(1), ranks, message, kind)
        m = _TIME_ONLY.match(text)
        if m:
            return Prefix(m.group(1), (), text[m.end():], "time_only")
    elif _UVICORN.match(text):
        return Prefix(None, (), text, "uvicorn")
    return Prefix(None, (), text, "bare")


def is_record_start(text: str) -> bool:
    """True for a line that starts a new record (it carries a header)."""
    return text.startswith("[") and (_SGLANG.match(text) is not None or _TIME_ONLY.match(text) is not None)


def rank_label(ranks: tuple[str, ...]) -> str:
    return " ".join(ranks)
