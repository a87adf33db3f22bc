"""What usually kills a launch at each phase: the prior of the best guess.

When the line that names a failure's cause is not in the text, the phase the text does show
(the server had been ready; the last start-up milestone or progress line; frames of a
start-up step) still says a lot: past "Init torch distributed ends" a failure is no longer
NCCL's set-up; while serving most failures are crashes of the serving loop.  A fixed "this
phase means that category" reading overstates it: what fails during CUDA graph capture is
as often a kernel that has no code for the GPU (capture is the first time every kernel runs)
or a kernel build as the capture itself.  So the prior spreads: each category gets a share of
``PRIOR_WEIGHT`` in proportion to how often a failure in that phase was that category.

Where the numbers come from: ``COUNTS`` is, per phase, the number of labelled failures of
the tuned corpus parts (every one of scripts/guess_prior.py's ``TUNED_PARTS``: ``labels.yaml``'s ``phase``
and its ``category``, or ``best_guess_category`` when the cause is not in the text) of each
category, in ``phase_prior.json`` (``python scripts/guess_prior.py --write`` writes it again
from the labels; a test keeps the two in step).  The counts agree with where SGLang raises (``sglang/srt``): the
argument checks (server_args.py, the model config) raise before any milestone, NCCL and the
process groups are set up between "Init torch distributed begin" and "ends", weights are
read between "Load weight begin" and "end", the pools are sized after that, and capture
runs every attention / MoE / quantization kernel for the first time; after the ready line
the scheduler's event loop does the work.  A text that shows no phase gets no prior: the
``unknown`` row (failures whose phase the labeller could not tell) is kept in the counts but
not used, since the labeller knew the thread and the tool does not (measured with
bench/guess_cv.py: using it turned three right "other" guesses into wrong ones for one gained).

The prior's pieces are support (``Evidence.support``): a piece the text holds of the failure
itself (a frame, a failure line, a word of its message) names the category whatever the prior
says; the prior breaks a tie between such pieces, or decides when the text holds none
(``evidence.weigh``, session 15).

A share is smoothed towards the whole table's (``SMOOTHING`` pseudo-counts) so that a phase
with few labelled failures does not name a category on two files, and categories with a
share below ``MIN_SHARE`` give no piece.  ``other`` (a failure outside the categories, or
one the labels could not place) is a category like the rest: when it is the commonest in a
phase, the prior says so rather than naming a category it has no ground for.
"""

from __future__ import annotations

import json
from pathlib import Path

from sglang_doctor.incidents import progress
from sglang_doctor.incidents.milestones import last_before, phase_after
from sglang_doctor.model import Diagnosis

DATA = Path(__file__).with_name("phase_prior.json")


def _load() -> dict[str, dict[str, int]]:
    try:
        return json.loads(DATA.read_text(encoding="utf-8")).get("phase_counts", {})
    except (OSError, ValueError):
        return {}


# Labelled failures per (phase, category) in the tuned parts (guess_prior.TUNED_PARTS)
# (phase_prior.json, written by ``python scripts/guess_prior.py --write``; a test keeps it in
# step with the labels).
COUNTS: dict[str, dict[str, int]] = _load()
STARTUP = "startup"  # a start-up step the text does not name (frames of a start-up constructor)

# The weight a category holding every failure of its phase would get.  bench/guess_cv.py scores
# 0.3 to 0.6 the same, rotated; 0.5 keeps a phase where one category holds more than half
# (startup.distributed: nccl) at the confidence (0.25) at which the fallback names the
# incident's category (fallback.attach), as the fixed table's 0.25 did.
PRIOR_WEIGHT = 0.5
SMOOTHING = 2.0  # pseudo-counts spread like the whole table
MIN_SHARE = 0.15  # a smaller share gives no piece


def _row(phase: str, counts: dict[str, dict[str, int]]) -> dict[str, int]:
    if phase == STARTUP:  # every start-up step together
        row: dict[str, int] = {}
        for name, cats in counts.items():
            if name.startswith("startup."):
                for cat, n in cats.items():
                    row[cat] = row.get(cat, 0) + n
        return row
    return dict(counts.get(phase, {}))


def shares(phase: str, counts: dict[str, dict[str, int]] | None = None) -> dict[str, float]:
    """Each category's smoothed share of the labelled failures of ``phase``, largest first."""
    counts = COUNTS if counts is None else counts
    row = _row(phase, counts)
    total: dict[str, int] = {}
    for cats in counts.values():
        for cat, n in cats.items():
            total[cat] = total.get(cat, 0) + n
    whole = sum(total.values()) or 1
    n = sum(row.values())
    out = {cat: (row.get(cat, 0) + SMOOTHING * total[cat] / whole) / (n + SMOOTHING) for cat in total}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def observed_phase(diagnosis: Diagnosis) -> tuple[str, str] | None:
    """The phase the text shows for an incident and how it shows it, or None when it shows none.

    The ready line first (serving), then the last start-up progress line before the failure
    (a step under way), then the last start-up milestone before it, then frames of a start-up
    constructor or SGLang's launch-phase sigquit handler (some start-up step)."""
    inc = diagnosis.incident
    if inc.after_ready:
        if inc.captures.get("serving_from"):
            return "serving", "the server had been ready before it failed (the scheduler's batch lines before it show it serving)"
        return "serving", "the server had been ready before it failed"
    phase = inc.captures.get("progress_phase")
    if phase and phase != progress.JIT_BUILD and phase in COUNTS:
        return phase, f"the last progress line before it (line {inc.captures.get('progress_line', '?')}) shows {phase}"
    launch = diagnosis.launch
    if launch is not None:
        last = last_before(launch, inc.first_line)
        if last is not None:
            return phase_after(last.name), f"the last start-up milestone before it is {last.name} (line {last.line})"
        if launch.line is not None and inc.after_ready_known:
            return "startup.args", "the launch's header is here and no start-up milestone came before the failure"
    if inc.captures.get("startup_frames"):
        return STARTUP, f"its frames show a start-up step ({inc.captures['startup_frames']})"
    if "sigquit_launch" in inc.signal_names:
        return STARTUP, "SGLang's launch-phase sigquit handler logged it (the server was still starting)"
    return None


def pieces(phase: str, how: str, counts: dict[str, dict[str, int]] | None = None) -> list:
    """The prior's evidence for ``phase``, one piece per category with a share of at least
    ``MIN_SHARE``, named ``prior:PHASE``; ``how`` says how the text shows the phase."""
    from sglang_doctor.diagnose.evidence import Evidence  # (evidence imports this module)

    counts = COUNTS if counts is None else counts
    row = _row(phase, counts)
    n = sum(row.values())
    out = []
    for cat, share in shares(phase, counts).items():
        if share < MIN_SHARE:
            break
        out.append(Evidence(f"prior:{phase}", cat, round(PRIOR_WEIGHT * share, 3),
                            f"{how}; {row.get(cat, 0)} of the {n} labelled failures in {phase} were {cat} "
                            f"(share {share:.2f})", support=True))
    return out
