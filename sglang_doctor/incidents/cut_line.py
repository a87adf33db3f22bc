"""The last line of a text that ends mid-line (a paste or a search excerpt cut inside a line).

Two readings of such a line, each from what the rest of the text or SGLang's own wording says:

* ``repeats_handled``: SGLang's tensor-parallel ranks log the same record one after another
  ("[... TP0] Decode transfer failed for request rank=0 ... Aborted by AbortReq.", then TP2's).
  A cut line that, up to the cut, is a record another rank logged complete just before (numbers
  aside: ranks, ids) is that record; when the complete one was handled (a client's abort, not
  a failure), so is the cut one.
* ``complete_literal``: the cut fell inside a signal's own words ("... detected by wat"): the
  line is read as going on with them when the words before the cut are most of them, and the
  signal's pattern matches the line completed so.  The captures come from that completion.

Neither applies to a line that ends with a line end: only the input's very last line can be cut.
"""

from __future__ import annotations

import math
import re

from sglang_doctor.incidents import signals as signals_mod
from sglang_doctor.read import records

# a cut line shorter than this (after its prefix) says too little to be read as another record
MIN_REPEAT_CHARS = 24
# the words of a literal before the cut: at least this many characters, and this share of it
MIN_LITERAL_CHARS = 8
MIN_LITERAL_SHARE = 0.6
_NUMBER = re.compile(r"\d+")


def normalized(text: str) -> str:
    """A record's message without its prefix, every number the same (ranks, ids, counts)."""
    return _NUMBER.sub("#", records.parse_prefix(text).message.strip())


def repeats_handled(cut_text: str, handled: list[str]) -> bool:
    """The cut line is, up to where it is cut, one of the ``handled`` records (normalized)."""
    cut = normalized(cut_text)
    if len(cut) < MIN_REPEAT_CHARS:
        return False
    return any(full.startswith(cut) and len(full) > len(cut) for full in handled)


def complete_literal(message: str, candidates: tuple[signals_mod.Signal, ...]):
    """``(signal, captures, literal)`` for the first signal one of whose literals the message
    ends inside (most of the literal before the cut, at a word start), and whose pattern
    matches the message completed with the rest of that literal there; else None."""
    for sig in candidates:
        for lit in sig.literals:
            need = max(MIN_LITERAL_CHARS, math.ceil(len(lit) * MIN_LITERAL_SHARE))
            for k in range(len(lit) - 1, need - 1, -1):
                head = lit[:k]
                if not message.endswith(head):
                    continue
                start = len(message) - k
                if start > 0 and lit[0].isalnum() and message[start - 1].isalnum():
                    continue  # the words would start inside another word
                completed = message + lit[k:]
                m = sig.regex.search(completed)
                if m and m.end() > start:  # the completion is what the pattern matched
                    return sig, {key: v for key, v in m.groupdict().items() if v is not None}, lit
                break
    return None
