"""The scheduler's batch lines: the state a serving server was in before it failed.

While serving, the scheduler's stats-logging rank (TP0, or each attention-DP rank's TP0) logs
one line per prefill batch and one per ``--decode-log-interval`` (40) decode steps
(managers/scheduler.py in 0.4.x, scheduler_metrics_mixin.py log_prefill_stats /
log_decode_stats in 0.4.6-0.5.9, scheduler_components/metrics_reporter.py in 0.5.2x):

    Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0
    Decode batch. #running-req: 1, #token: 39, token usage: 0.00, gen throughput (token/s): 9.42, #queue-req: 0
    Prefill batch, #new-seq: 1, ..., #pending-token: 0, cpu graph: False, input throughput (token/s): 4.44
    Decode batch, #running-req: 4, #full token: 141, full token usage: 0.00, mamba num: 4, mamba usage: 0.01, ...
    Prefill batch [12], ...                              (SGLANG_LOG_FORWARD_ITERS)

(a ``.`` or ``,`` after "batch", fields in any order, optional ones for speculative decoding,
hybrid pools, PD disaggregation).  With pressure on the KV pool the scheduler also logs
``KV cache pool is full. Retract requests. #retracted_reqs: N, ...`` (0.4.x: ``Decode out of
memory happened. #retracted_reqs: N, ...``).

One job: turn those lines into a record of the serving state just before a failure --
whether the server was serving (a batch line is evidence it had come up, whether or not the
fragment shows the ready line), the last batch's figures (pool usage, running and queued
requests), a retraction, and how long before the failure the last batch was logged (a hang:
batches stop while requests are running, then a watchdog fires).

Batch lines are most of a serving log, so they are never triggers of the block scanner: the
scanner keeps the last ``KEEP`` lines ``is_batch`` accepts from the text it skips and hands
them to the assembler before the next line it passes on (read/scanner.py, ``keep``), which
keeps the same last ``KEEP`` a reader of every line would.  Retraction lines are rare: they
are trigger literals (``LITERALS``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sglang_doctor.read import records

KEEP = 4  # batch lines the state keeps: the last ones before a failure
# what the block scanner searches the skipped text for (both prefixes end with it)
NEEDLE = b" batch"
RETRACT_LITERALS = ("KV cache pool is full. Retract requests.", "Decode out of memory happened.")
LITERALS: tuple[str, ...] = RETRACT_LITERALS

_BATCH_HEAD = re.compile(r"(?P<kind>Prefill|Decode) batch(?: \[\d+\])?[.,] ")
# "name: value" pairs; names as SGLang spells them ("#running-req", "token usage",
# "gen throughput (token/s)", "cuda graph", "mamba usage", "accept len")
_FIELD = re.compile(r"(?:^|, )(?P<name>#?[A-Za-z][\w\- ]*?(?: \(token/s\)| \(per GPU\))?): "
                    r"(?P<value>-?\d+(?:\.\d+)?%?|True|False)(?=,|\s*$)")
_RETRACTED = re.compile(r"#retracted_reqs: (?P<n>\d+)")
# a usage at or above this is a full pool: admission keeps room for the running requests' next
# tokens (new_token_ratio), so past it new requests wait and the scheduler is near retracting
FULL_USAGE = 0.85
# no batch line for this long before a failure while requests were running: the scheduler had stopped
STALL_SECONDS = 60.0


# A batch line: up to three bracketed headers (SGLang's, an outer one such as kubectl's, 0.2.x's
# ``[gpu_id=0]``; a compose, journald or ray prefix before them), then the batch's words.  No
# quote in a header, so a logged request (a repr) whose text holds the words is not one.  The
# block scanner matches the same pattern over the raw bytes of the lines it skips, so both
# agree on which lines are batch lines (read/scanner.py ``keep``).
BATCH_PATTERN = r"(?:[^\]\n'\"]{0,80}\] ?){0,3}(?P<kind>Prefill|Decode) batch(?: \[\d+\])?[.,] "
BATCH_BYTES = re.compile(BATCH_PATTERN.encode())
_BATCH_TEXT = re.compile(BATCH_PATTERN)


def batch_message(text: str) -> str | None:
    """The message of a batch line (``Decode batch, #running-req: ...``), or None.

    ``text`` is a whole line as the reader gives it (any outer prefix, SGLang's header)."""
    if "batch" not in text:
        return None
    m = _BATCH_TEXT.match(text)
    return text[m.start("kind"):] if m is not None else None


def is_batch(text: str) -> bool:
    return "batch" in text and _BATCH_TEXT.match(text) is not None


def retracted(message: str) -> int | None:
    """The number of requests a retraction line retracted (0 when it does not say), or None."""
    if not any(lit in message for lit in RETRACT_LITERALS):
        return None
    m = _RETRACTED.search(message)
    return int(m.group("n")) if m else 0


def _key(name: str) -> str:
    """SGLang's field name -> a JSON key: "#running-req" -> "running_req", "token usage" ->
    "token_usage", "gen throughput (token/s)" -> "gen_throughput"."""
    name = name.split(" (")[0].lstrip("#").strip().lower()
    return re.sub(r"[^a-z0-9]+", "_", name).strip("_")


def parse(message: str) -> dict[str, Any] | None:
    """A batch line's message -> {"kind": "prefill" | "decode", field: value, ...}."""
    m = _BATCH_HEAD.match(message)
    if m is None:
        return None
    out: dict[str, Any] = {"kind": m.group("kind").lower()}
    rest = message[m.end():].rstrip().rstrip(",")
    for f in _FIELD.finditer(", " + rest):
        value: Any = f.group("value")
        if value in ("True", "False"):
            value = value == "True"
        elif value.endswith("%"):
            value = round(float(value[:-1]) / 100, 4)
        else:
            value = float(value) if "." in value else int(value)
        out.setdefault(_key(f.group("name")), value)
    return out


_USAGE_KEYS = ("token_usage", "full_token_usage", "swa_token_usage", "mamba_usage")


def _fullest(fields: dict[str, Any]) -> tuple[str, float] | None:
    values = [(k, v) for k, v in fields.items()
              if k in _USAGE_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max(values, key=lambda kv: kv[1]) if values else None


def usage(fields: dict[str, Any]) -> float | None:
    """The fullest pool a batch line shows: token usage, or a hybrid model's full / SWA /
    mamba pool usage."""
    found = _fullest(fields)
    return found[1] if found else None


def timestamp(text: str) -> datetime | None:
    """The date and time of SGLang's header on a line (behind any outer prefix), or None."""
    if "[" not in text[:200]:
        return None
    return _time(text)


def _time(text: str) -> datetime | None:
    end = records.outer_prefix_end(text)
    stamp = records.parse_prefix(text[end:] if end else text).timestamp
    if stamp is None or len(stamp) < 19:
        return None
    try:
        return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None


def _warmup_like(fields: dict[str, Any]) -> bool:
    """A prefill batch that could be the server's own warm-up request (one short sequence,
    nothing running, queued or cached): logged before the ready line."""
    return (fields.get("kind") == "prefill" and fields.get("new_seq", 1) <= 1
            and not fields.get("running_req") and not fields.get("queue_req") and not fields.get("cached_token"))


def state(batches: list[tuple[int, str]], retraction: tuple[int, str] | None,
          failure_text: str | None) -> dict[str, Any] | None:
    """The serving-state record of an incident: ``batches`` the last batch lines before it
    ((line number, line text), oldest first), ``retraction`` the last retraction line, if any,
    after the first of them, ``failure_text`` the incident's first line (for its time)."""
    if not batches:
        return None
    parsed = [(number, text, parse(batch_message(text) or "") or {}) for number, text in batches]
    last_number, last_text, last = parsed[-1]
    out: dict[str, Any] = {"batch_lines": len(parsed), "last_batch_line": last_number, "last_batch": last}
    # serving, not the warm-up: a decode batch, a prefill that is not the warm-up's, or two
    # prefill batches of one rank (the warm-up is one request)
    ranks = [records.parse_prefix(text[records.outer_prefix_end(text):]).ranks for _, text, _ in parsed]
    out["serving"] = (any(f.get("kind") == "decode" or not _warmup_like(f) for _, _, f in parsed)
                      or len(ranks) != len(set(ranks)))
    peak = [u for u in (usage(f) for _, _, f in parsed) if u is not None]
    if peak:
        out["usage"] = usage(last)
        out["peak_usage"] = max(peak)
        fullest = _fullest(last)
        if fullest is not None:
            out["usage_field"] = fullest[0].replace("_", " ")
    queued = [f.get("queue_req") for _, _, f in parsed if isinstance(f.get("queue_req"), int)]
    if len(queued) >= 2 and queued[-1] > queued[0]:
        out["queue_growing"] = True
    if retraction is not None:
        out["retraction_line"] = retraction[0]
        out["retracted"] = retracted(retraction[1])
    # PD decode servers count their retracted requests in the batch line (#retracted-req)
    in_batch = [f.get("retracted_req") for _, _, f in parsed if isinstance(f.get("retracted_req"), int)]
    if in_batch and max(in_batch) > 0:
        out["retracted_req"] = max(in_batch)
    started, ended = _time(last_text), _time(failure_text or "")
    if started is not None and ended is not None and ended >= started:
        out["seconds_before"] = int((ended - started).total_seconds())
    return out


def _retracting(record: dict[str, Any]) -> bool:
    return "retraction_line" in record or bool(record.get("retracted_req"))


def pool_full(record: dict[str, Any]) -> bool:
    return (record.get("peak_usage") or 0.0) >= FULL_USAGE or _retracting(record)


def stalled(record: dict[str, Any]) -> bool:
    """Batches had stopped while requests were running (a hang before the failure)."""
    last = record.get("last_batch", {})
    return ((record.get("seconds_before") or 0) >= STALL_SECONDS
            and bool(last.get("running_req") or last.get("queue_req")))


def describe(record: dict[str, Any]) -> str:
    """One line: "last batch 12 s before the failure (line 420), token usage 0.97, 4 running, 40 queued"."""
    last = record.get("last_batch", {})
    when = (f"{record['seconds_before']} s before the failure" if "seconds_before" in record
            else "before the failure")
    parts = [f"last {last.get('kind', '')} batch {when} (line {record.get('last_batch_line')})".replace("  ", " ")]
    if record.get("usage") is not None:
        parts.append(f"{record.get('usage_field', 'token usage')} {record['usage']:.2f}" + (f" (peak {record['peak_usage']:.2f})"
                                                            if record.get("peak_usage", 0) > record["usage"] else ""))
    if isinstance(last.get("running_req"), int):
        parts.append(f"{last['running_req']} running")
    if isinstance(last.get("queue_req"), int):
        parts.append(f"{last['queue_req']} queued" + (" (growing)" if record.get("queue_growing") else ""))
    if "retraction_line" in record:
        parts.append(f"requests retracted (KV cache pool full) at line {record['retraction_line']}")
    elif record.get("retracted_req"):
        parts.append(f"{record['retracted_req']} requests retracted (KV cache pool full)")
    if stalled(record):
        parts.append("no batch logged since: the scheduler had stopped while requests were running")
    return ", ".join(parts)


def evidence(record: dict[str, Any]) -> list[tuple[str, str, float, str]]:
    """What the state says about the failure, as (name, category, weight, why) items for the
    fallback's weighing: a full pool (or a retraction) points at the KV pool being too small
    for the load.  That the server was serving is the ``ready`` evidence (after_ready)."""
    out: list[tuple[str, str, float, str]] = []
    if pool_full(record):
        peak = record.get("peak_usage")
        if peak is not None and peak >= FULL_USAGE:
            why = f"the last batch lines before it show the KV/state pool at {peak:.2f}"
            if _retracting(record):
                why += " and requests retracted (KV cache pool is full)"
        else:
            why = "the scheduler retracted requests (its KV cache pool was full) just before it"
        weight = 0.4 if (peak or 0.0) >= 0.97 or _retracting(record) else 0.35
        out.append(("serving:pool_full", "memory.kv_pool", weight, why))
    return out
