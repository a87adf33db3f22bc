#!/usr/bin/env python3
"""The messages SGLang raises only for one request, from its source (the failure inventory).

``data/inventory/sglang-VERSION.json`` (scripts/inventory_failures.py, read from each release's
wheel) waives as ``request_level`` the ``raise`` sites that validate or fail one request.  Those
in the request path's own modules (``REQUEST_MODULES``: the request structs of io_struct, the
tokenizer manager that validates and tokenizes each request, the OpenAI / Anthropic / Ollama
serving layers and the HTTP server) are raised into that request's handler, which answers it
with an error (400 / 500) and goes on; the offline Engine raises them into the caller's
``generate``.  A pasted exception line with one of these messages is that request's error, not
the launch's, even when the text shows nothing around it (incidents/assemble.py
``_request_rejected``).

Beyond those modules: every other ``request_level`` raise site whose place the inventory's phase
map (data/inventory/dispositions.yaml ``phases:``) ties to no step of its own (``UNPLACED``).
The dispositions waive a site as ``request_level`` by where it lives: the per-request code the
tokenizer manager and the OpenAI / Anthropic layers call while they prepare or answer one request
(the multimodal processors' ``process_mm_data_async`` and media loaders, ``SamplingParams``'
normalisation and ``verify``, the chat templates and parsers, the tool-call detectors, the
grammar backends whose compile error the grammar manager turns into that request's abort),
after the patterns that take the same places' start-up code first (a processor's ``__init__``,
a config or template file read at launch).  A raise there propagates into the request's handler
(``OpenAIServingBase.handle_request`` answers it with an error response, ``generate_request``
with a 400) or into the scheduler's per-request abort, and the server goes on.  A site the phase
map places in the scheduler's forward, a CUDA-graph runner (the vision towers' graph runners),
the memory pool or the weights is left out: it runs in the scheduler's own loop, where nothing
answers one request with it.  So is one in the other entry points (``ENTRYPOINTS``: server
launchers) and one in a constructor, launcher, registration or template loader
(``START_UP_FUNCTION``): such code may run at start-up, where the same raise ends the launch.

Kept: templates whose literal words say what they are (``MIN_LITERAL`` characters of literal
text in all, at least ``MIN_WORDS`` words), and that no site of the same release outside this
set raises with the same text (a message a start-up check also prints is not one request's).
Each template becomes an anchored regex: its literal text escaped, each ``{...}`` placeholder
any text on the line; a template the inventory cut (``…``) matches as a prefix.

Output: ``sglang_doctor/incidents/request_messages.json`` (byte for byte reproducible).

    python scripts/gen_request_messages.py            # write
    python scripts/gen_request_messages.py --check    # compare with the shipped file
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "data" / "inventory"
OUT = ROOT / "sglang_doctor" / "incidents" / "request_messages.json"
VERSIONS = ("0.5.9", "0.5.23")
REQUEST_MODULES = (
    "srt/managers/io_struct.py",
    "srt/managers/tokenizer_manager.py",
    "srt/managers/tokenizer_manager_",  # its mixins (score, multi-item, ...)
    "srt/managers/tokenizer_communicator_mixin.py",
    "srt/entrypoints/openai/",
    "srt/entrypoints/anthropic/",
    "srt/entrypoints/ollama/",
    "srt/entrypoints/http_server.py",
)
# the phase Dispositions.phase gives a site whose place names no step (its catch-all)
UNPLACED = "startup"
# beyond REQUEST_MODULES, the entry points launch servers (http_server_engine's
# launch_server_process: "Server process terminated unexpectedly.", the gRPC server): not a
# request's handler
ENTRYPOINTS = "srt/entrypoints/"
# a function that builds or sets up what the server uses for every request (a grammar backend's
# or a feature pool's constructor, a factory (create_*, from_*), a template a launch flag names, a
# registration decorator) may
# run at start-up, where its raise ends the launch: not counted as one request's
START_UP_FUNCTION = re.compile(r"(?:^|\.)(?:__init__|__post_init__|__new__|decorator|_*(?:launch|serve|register|setup|"
                               r"start|init|create)\w*|from_\w+|_*load\w*templates?)$")
MIN_LITERAL = 24
MIN_WORDS = 4
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_TOKEN = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


def _literal(template: str) -> str:
    return _PLACEHOLDER.sub(" ", template.rstrip("…"))


def pattern(template: str) -> str:
    """An anchored regex for the message a template prints."""
    cut = template.endswith("…")
    # a cut template: the message SGLang printed goes on after the cut; its tail's blanks are
    # not text a pasted line keeps (the engine strips the line it compares)
    body = template.rstrip("…").rstrip() if cut else template
    out, pos = [], 0
    for m in _TOKEN.finditer(body):
        out.append(re.escape(body[pos:m.start()]))
        # an f-string's doubled brace prints one brace; any other {...} is a placeholder
        out.append(re.escape(m.group()[0]) if m.group() in ("{{", "}}") else ".*?")
        pos = m.end()
    out.append(re.escape(body[pos:]))
    regex = "".join(out)
    return regex if cut else regex + r"\s*$"


def _sites(version: str):
    data = json.loads((INVENTORY / f"sglang-{version}.json").read_text())
    for path, sites in data["files"].items():
        for line, func, kind, etype, template, disposition in sites:
            yield path, line, func, kind, etype, template, disposition


# Constructors that only a request's handler calls, read in the releases' source (every call of
# the class, 0.5.9 and 0.5.23): their raise is that request's, although START_UP_FUNCTION would
# take a constructor for start-up code.  FunctionCallParser (function_call/function_call_parser.py,
# "Unsupported tool_call_parser: {tool_call_parser}" for a parser name it has no detector for) is
# built per request: http_server.py ``parse_function_call_request`` (the parser name the request
# sends), serving_chat.py ``_process_messages`` / ``_process_tool_calls`` /
# ``_process_tool_call_stream`` (0.5.9, 0.5.23; 0.5.23 also ``_json_answer_structural_tag``) and
# serving_responses.py ``_parse_text_output`` / ``_uses_required_tool_json`` (0.5.23); the server's
# own --tool-call-parser is checked by argparse's choices at launch.  Not ReasoningParser: the
# scheduler builds one at start-up (0.5.23 managers/scheduler.py, constrained/base_grammar_backend.py).
REQUEST_ONLY_CONSTRUCTORS = frozenset({"FunctionCallParser.__init__"})


def _request_path(disp, path: str, func: str, kind: str, etype: str, template: str, disposition: str) -> bool:
    """A site SGLang raises into one request's handler (the module docstring)."""
    if disposition != "waiver:request_level":
        return False
    if path.startswith(REQUEST_MODULES) or func in REQUEST_ONLY_CONSTRUCTORS:
        return True
    if path.startswith(ENTRYPOINTS) or START_UP_FUNCTION.search(func):
        return False
    site = {"file": path, "function": func, "kind": kind, "exception": etype, "template": template}
    return disp.phase(site) == UNPLACED


def collect() -> list[dict]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from inventory_failures import Dispositions

    disp = Dispositions.load()
    entries: dict[tuple[str, str], dict] = {}
    for version in VERSIONS:
        sites = list(_sites(version))
        request = {(p, ln) for p, ln, f, k, e, t, d in sites if _request_path(disp, p, f, k, e, t, d)}
        elsewhere = {t for p, ln, _f, _k, _e, t, _d in sites if (p, ln) not in request}
        for path, line, func, kind, etype, template, disposition in sites:
            if kind != "raise" or (path, line) not in request:
                continue
            if not etype or template in elsewhere:
                continue
            literal = _literal(template)
            if len(literal.strip()) < MIN_LITERAL or len(re.findall(r"[A-Za-z]{2,}", literal)) < MIN_WORDS:
                continue
            key = (etype.rsplit(".", 1)[-1], template)
            entry = entries.setdefault(key, {"type": key[0], "template": template, "regex": pattern(template),
                                             "sources": []})
            entry["sources"].append(f"{version} {path}:{line} {func}")
    return sorted(entries.values(), key=lambda e: (e["type"], e["template"]))


def dumps(entries: list[dict]) -> str:
    return json.dumps({"generated_by": "scripts/gen_request_messages.py", "versions": list(VERSIONS),
                       "messages": entries}, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = dumps(collect())
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date: run scripts/gen_request_messages.py", file=sys.stderr)
            return 1
        print(f"{OUT}: up to date")
        return 0
    OUT.write_text(text)
    print(f"{OUT}: {len(json.loads(text)['messages'])} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
