"""What is said of an incident that no rule knows."""

from __future__ import annotations

from sglang_doctor.incidents.milestones import phase_after
from sglang_doctor.incidents.tracebacks import sglang_frames
from sglang_doctor.model import Diagnosis, Incident, Launch


def unknown_diagnosis(incident: Incident, launch: Launch | None) -> Diagnosis:
    """What is said of an incident no rule knows."""
    exc = incident.exception
    if exc is not None:
        title = f"{exc.type}: {exc.message.splitlines()[0] if exc.message else ''}".strip().rstrip(":")
    elif incident.signals:
        title = incident.signals[0].text.strip()[:200]
    else:
        title = "A failure with no exception line"
    deepest = sglang_frames(incident.frames)
    where = ""
    if deepest:
        f = deepest[-1]
        where = f" The deepest SGLang frame is {f.function} ({f.file.split('/sglang/')[-1]}:{f.line})."
    phase = "serving" if incident.after_ready else "unknown"
    if launch is not None and not incident.after_ready:
        last = None
        for ms in launch.milestones:
            if ms.line < incident.first_line:
                last = ms.name
        phase = phase_after(last) if (launch.line is not None or launch.milestones) else "unknown"
    return Diagnosis(
        incident=incident,
        rule="unknown",
        category="runtime.crash" if incident.after_ready else "other",
        phase=phase,
        title=title,
        explanation=f"No rule knew this failure.{where}",
        confidence=0.2,
        launch=launch,
    )
