"""Where a log line comes from: SGLang's argument parser at start-up, or a request.

Two small predicates the trust boundary needs (docs/DESIGN.md "Trust"):

- ``is_parser_error``: argparse's own error line, ``PROG: error: ...`` at the start of an
  unprefixed line (``launch_server.py: error: unrecognized arguments: --x`` on 0.5.9,
  ``sglang serve: error: ...`` on 0.5.23).  SGLang's logger prefixes every record with
  ``[timestamp]``; argparse writes to stderr without one, before any logging is set up.
- ``is_request_log``: a line that carries a client's request or its answer
  (``--log-requests``: ``Receive: obj=GenerateReqInput(...)``, ``Finish: obj=...``; an
  access-log line ``"POST /generate HTTP/1.1" 200``).  Its text is the client's, not SGLang's.
"""

from __future__ import annotations

import re

from sglang_doctor.read import records

_PARSER_ERROR = re.compile(r"^[\w.\-]+(?: [\w.\-]+)?: error: ")
_REQUEST = re.compile(
    r"Receive: obj=|Finish: obj=|(?:Generate|Embedding|Tokenized\w*|Batch\w*)ReqInput\(|"
    r"\"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) /\S* HTTP/\d"
)


def is_parser_error(text: str) -> bool:
    """argparse's ``PROG: error: ...`` line (unprefixed, at column 0)."""
    return records.parse_prefix(text).kind == "bare" and _PARSER_ERROR.match(text) is not None


def is_request_log(text: str) -> bool:
    """A line whose text a client chose: a logged request or response, an access-log line."""
    return _REQUEST.search(text) is not None
