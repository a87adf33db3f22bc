"""Is a parsed JSON value a model config.json the memory planner can use?

``--model-config`` and the config.json found at a dump's ``model_path`` both pass through
``problem``: valid JSON that is not a config (``{"foo": 1}``, ``[1, 2]``) is named in one
line here, instead of surfacing later as a ``KeyError`` inside the planner.
"""

from __future__ import annotations

from typing import Any


def problem(cfg: Any) -> str | None:
    """Why ``cfg`` is not a model config.json the planner can read, or None."""
    if not isinstance(cfg, dict):
        return f"not a model config.json (a JSON {type(cfg).__name__}, not an object)"
    body = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else cfg
    missing = [k for k in ("num_hidden_layers", "hidden_size") if k not in body]
    if missing:
        return f"not a model config.json (no {' or '.join(missing)})"
    try:
        from sglang_doctor.remedy import planner
    except ImportError:
        return None
    try:
        planner.model_shape(cfg)
    except Exception as exc:  # noqa: BLE001 - any failure here means the planner cannot use it
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return f"a config.json the memory planner cannot read ({detail})"
    return None
