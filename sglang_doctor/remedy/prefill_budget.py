"""``lower_prefill_budget``: shrink what one prefill batch may take, with the flag that bounds it.

A prefill batch's activations grow with its new tokens.  Two flags bound them: the chunk
(--chunked-prefill-size: with chunked prefill on, SGLang's PrefillAdder fills a batch up to
``rem_chunk_tokens``, so a batch's ``#new-token`` never passes the chunk) and the batch budget
(--max-prefill-tokens: ``rem_input_tokens``, every release).  When chunked prefill was off, no
chunk bounded a batch of several prompts, and lowering the chunk size only turns chunking on at a value the
launch never ran with; the budget is the flag that bounded it (0.2.x ran with chunking off by
default; -1 turns it off in every release).  The scheduler's last prefill batch line shows
which: a batch of several sequences and more new tokens than the chunk the launch had (stated,
else the release's default) was not chunked.  One long prompt is the chunk's to split, whatever
the budget, so a one-sequence batch keeps the chunk step.

Seen fixed this way: sgl-project/sglang#1030 (0.2.x, 17 concurrent prompts in one 13938-token
prefill batch; "it works with --max-prefill 4096").  With chunking on, or no batch line to
tell, the entry halves the chunk as before.
"""

from __future__ import annotations

from typing import Any

from sglang_doctor.model import Remediation
from sglang_doctor.remedy import trust
from sglang_doctor.remedy.remedies import Context, lower_flag, remedy

CHUNK = "--chunked-prefill-size"
BUDGET = "--max-prefill-tokens"
TRADEOFF = ("fewer new tokens in one prefill batch: concurrent prompts are prefilled over more steps "
            "(slower time to first token under load); a single prompt longer than the budget needs "
            "chunked prefill on")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def last_prefill_tokens(ctx: Context) -> int | None:
    """The new tokens of the scheduler's last batch line before the failure, when it is a
    prefill of several sequences.  One long prompt is bounded by the chunk alone (chunking on at
    a smaller size splits it; a lower batch budget does not), so a one-sequence batch gives none."""
    serving = ctx.diagnosis.incident.serving or {}
    batch = serving.get("last_batch") or {}
    tokens, seqs = batch.get("new_token"), batch.get("new_seq")
    if batch.get("kind") != "prefill" or isinstance(tokens, bool) or not isinstance(tokens, int):
        return None
    if isinstance(seqs, bool) or not isinstance(seqs, int) or seqs < 2:
        return None
    return tokens


def unchunked(ctx: Context, tokens: int | None) -> str | None:
    """Why the failing prefill ran unchunked, or None when it did not or the log cannot tell."""
    flag = ctx.flag(CHUNK)
    if flag is None:
        return "this release has no chunked prefill"
    stated = _number(ctx.stated(flag))
    if tokens is None:
        return None
    if stated is not None and stated <= 0:
        return f"the launch ran with {flag} {int(stated)} (chunked prefill off) and the last prefill batch took {tokens} new tokens"
    chunk = stated if stated is not None else _number(ctx.current_or_assumed(flag)[0])
    if chunk is None or tokens <= chunk:
        return None
    where = "the launch's" if stated is not None else "the release's default"
    return (f"the last prefill batch took {tokens} new tokens, more than {where} chunk of {int(chunk)}: "
            "chunked prefill was off, and the batch of several prompts is bounded by the budget")


def _power_of_two_at_most(value: float) -> int:
    power = 1
    while power * 2 <= value:
        power *= 2
    return power


@remedy("lower_prefill_budget")
def lower_prefill_budget(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    floor = int(_number(params.get("min")) or 512)
    tokens = last_prefill_tokens(ctx)
    why = unchunked(ctx, tokens)
    budget = ctx.flag(BUDGET)
    if why is None or budget is None:
        return lower_flag(ctx, {"flag": CHUNK, "factor": 0.5, "min": floor, "tradeoff": params.get("tradeoff")})
    current, guess = ctx.current_or_assumed(budget)
    current_n = _number(current)
    # half of what the failing batch took, on a power of two; never above half the launch's budget
    wanted = [tokens / 2] if tokens else []
    if current_n is not None and current_n > 0:
        wanted.append(current_n / 2)
    if not wanted:
        return lower_flag(ctx, {"flag": budget, "factor": 0.5, "min": floor, "tradeoff": TRADEOFF})
    new = max(floor, _power_of_two_at_most(min(wanted)))
    if current_n is not None and current_n > 0 and new >= current_n:
        return None  # already at its floor
    if ctx.catalog.validate(budget, new) is not None:
        return None
    was = "unset" if current_n is None else str(int(current_n))
    note = f"lower {budget} from {was} to {new} ({why})"
    tradeoff = TRADEOFF if guess is None else f"{TRADEOFF}; ASSUMED: {guess.why}; check your command's value first"
    rem = Remediation(set={budget: new}, note=note, tradeoff=tradeoff, safe=guess is None)
    # the flag is the rule's choice; its value is computed from the log's batch line (an integer,
    # clamped to the floor, a power of two, validated against the release's catalogue)
    line = (ctx.diagnosis.incident.serving or {}).get("last_batch_line")
    return trust.declare(rem, "rule", line=line if tokens else None, value_from="log" if tokens else None)
