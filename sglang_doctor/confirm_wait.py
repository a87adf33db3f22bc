"""The bounded wait for a provisional incident's evidence, in ``watch`` and pipe mode.

A live stream reports a failure SGLang logs and may go on from as provisional, and the log
decides it later (pipeline.py): withdrawn when the launch comes up or goes on serving,
confirmed when it dies or is relaunched.  When the log simply stops after it, nothing would
ever decide it: ``watch --exit-on-incident`` would wait for ever, the exporter's provisional
gauge would stay up and never page.  So a provisional incident stands (its ``confirmed``
event, with ``"after_quiet_s"`` and ``"unresolved": true``: an assumption, said as one) once
its evidence has been quiet for a bounded time:

- before ready (``startup_s``, ``--confirm-after``): no new input at all for that long.  A
  start-up that still writes is still going (weight loading and CUDA graph capture print
  progress, tqdm's carriage-return updates count too); the ready line or a death may yet come.
- while serving (``serving_s``, ``--confirm-serving-after``): no new batch line of its launch
  for that long (the evidence it waits for: survived.SERVING_PROOF batch lines).  An idle
  server logs none and neither does a hung one; other lines (a health check's access line)
  say nothing of the scheduler.

The checks are made only where the reader has caught up with the input available (the live
loops call ``check`` when a read found nothing), so 0 is deterministic: an incident stands at
the first such check after it was reported, unless the input read so far decided it.  The
clock is injected (``clock``), so a test decides outcomes without sleeping.
"""

from __future__ import annotations

import time
from typing import Any, Callable

STARTUP_S = 600  # --confirm-after's default (docs/DESIGN.md "Live modes: provisional incidents")
SERVING_S = 3600  # --confirm-serving-after's default
MAX_SLEEP_S = 3600.0  # a select() timeout must stay finite and small enough for the platform


class ConfirmWait:
    def __init__(self, pipe: Any, startup_s: float = STARTUP_S, serving_s: float = SERVING_S,
                 clock: Callable[[], float] = time.monotonic):
        self.pipe = pipe
        self.startup_s = startup_s
        self.serving_s = serving_s
        self.clock = clock
        self._input = 0  # reads of input seen (the start-up's evidence mark)
        self._input_at = clock()  # when the last input came
        # id(event) -> (event, evidence mark, when the mark last changed) of the undecided incidents
        self._marks: dict[int, tuple[dict, int, float]] = {}

    def saw_input(self) -> None:
        """Input was just fed to the pipeline (call after ``pipe.feed``)."""
        self._input += 1
        self._input_at = self.clock()
        self._update()

    def remaining(self) -> float | None:
        """Seconds until the next undecided incident stands (0: due now); None when none waits."""
        self._update()
        now = self.clock()
        waits = [since + self._limit(ev) - now for ev, _, since in self._marks.values()]
        return min(MAX_SLEEP_S, max(0.0, min(waits))) if waits else None

    def check(self) -> list[dict]:
        """Call where no more input is available now: the events of what stands (and of what
        the input already read decided first), in the log's order."""
        if not self.pipe.undecided():
            return []
        events = self.pipe.catch_up()  # the kept batch lines decide first
        self._update()
        now = self.clock()
        for ev, _, since in list(self._marks.values()):
            limit = self._limit(ev)
            if now - since >= limit:
                events += self.pipe.stand(ev, limit)
        self._update()
        return events

    def _limit(self, ev: dict) -> float:
        return self.serving_s if ev.get("provisional") == "serving" else self.startup_s

    def _mark(self, ev: dict) -> int:
        """What new evidence changes: for one while serving, its launch's batch lines after it;
        for one before ready, any input."""
        if ev.get("provisional") != "serving":
            return self._input
        diagnosis = ev.get("_diagnosis")
        incident = getattr(diagnosis, "incident", None)
        launches = self.pipe.assembler.launches
        if incident is None or not 0 <= incident.launch_index < len(launches):
            return 0
        return sum(1 for n in launches[incident.launch_index].batch_lines if n > incident.last_line)

    def _update(self) -> None:
        """Follow the pipeline's undecided incidents; a changed mark restarts that one's wait
        from the last input (the evidence came with it)."""
        marks = {}
        for ev in self.pipe.undecided():
            mark = self._mark(ev)
            old = self._marks.get(id(ev))
            if old is not None and old[0] is ev and old[1] == mark:
                marks[id(ev)] = old
            else:
                marks[id(ev)] = (ev, mark, self._input_at)
        self._marks = marks
