#!/usr/bin/env python3
"""False alarms from SGLang's own healthy chatter: every warning and info site, from its source.

A healthy SGLang server prints many lines with scary words ("error", "failed", "not
supported", "fallback", "OOM", "disable", "deprecated").  A false alarm is a healthy launch on
which the engine raises an incident (issue #12: none on healthy logs).  Instead of hoping the
corpus' healthy logs hold every such line, this lists every place under ``sglang/srt`` of a
release's wheel that prints a line a healthy run can show, and runs the engine on a healthy log
holding each one:

- ``logger.warning / warn / info / warning_once / info_once(message...)`` (a logger-like name,
  as scripts/inventory_failures.py reads them), SGLang's own helpers ``print_warning_once``,
  ``print_info_once``, ``rank0_log(msg)`` and ``log_info_on_rank0(logger, msg)``;
- ``warnings.warn(message, Category)`` (printed raw on stderr: ``path:line: Category: msg``);
- ``print(message...)`` (a bare stdout line).

Not sites (they do not appear in a healthy run): ``logger.debug`` (the default log level is
info), a line that a ``raise`` / ``sys.exit`` / ``os._exit`` / ``kill_process_tree`` follows in
the same block (it accompanies a failure), and test and debug code (``srt/*/test_*.py``,
``srt/*/tests/*``, ``srt/debug_utils/*``: not on a launch or serving path).

Each site's message is its template (``scripts/inventory_failures.py``: f-strings, ``%``,
``.format``, a ``msg`` built earlier in the function) filled with sample values, uncut.  The
healthy log is a normal launch of that release as it prints it (sglang-notes 1.2-1.5: the
server_args dump, the start-up milestones, uvicorn, warmup, ``The server is fired up and ready
to roll!``, prefill and decode batch lines), with the site's line placed in its phase
(``phases:`` of data/inventory/dispositions.yaml, plus the request-serving entry points):
before the dump for argument resolution, between the milestones of its start-up step, after
the ready line while serving.  A scheduler-process line carries the TP rank prefix and is
printed by both ranks of a tp=2 launch.

Besides SGLang's sites, data/inventory/healthy-lines.yaml lists the lines the libraries under
SGLang print on a healthy run (NCCL INFO/WARN, torch, transformers, huggingface_hub, pydantic,
flashinfer, CPython), each with the library source it was taken from, and SGLang lines whose
healthy form depends on a value the template does not show (a client's abort as the
exception of a PD transfer); they are run the same way.

A site whose line itself reports a failure (``reports_failure:`` of healthy-lines.yaml, each
with its reason: a request's KV transfer that failed, a health probe that got no answer) is not
a healthy-run line: an incident there is no false alarm, and it is counted apart.

Output: ``data/inventory/warnings-VERSION.json`` (per site: line, function, kind, phase,
message template, status ``clean`` / ``false_alarm`` / ``reports_failure`` and the rule ids
of its incidents) and its figures; the everyday test re-runs every site of 0.5.23
and 0.5.9 recorded there (and 0.4.6.post5's, the 0.4.x release wild logs still come from:
its healthy launch is written with its own strings) and holds the false-alarm count at or below
the recorded one.

    python scripts/inventory_warnings.py                    # 0.4.6.post5, 0.5.9 and 0.5.23: write
    python scripts/inventory_warnings.py --check            # recompute, compare with the files
    python scripts/inventory_warnings.py --versions 0.5.23 --show   # list the false alarms
    python scripts/inventory_warnings.py --versions 0.5.23 --probe-exceptions   # {e} filled
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as invf  # noqa: E402  (reuses the wheel reading and the templates)

DEFAULT_VERSIONS = ("0.4.3.post2", "0.4.6.post5", "0.5.4", "0.5.9", "0.5.23")
DEFAULT_OUT = ROOT / "data" / "inventory"
LIBRARY_LINES = DEFAULT_OUT / "healthy-lines.yaml"

WARN_METHODS = {"warning": "warning", "warn": "warning", "warning_once": "warning",
                "info": "info", "info_once": "info"}
HELPERS = {"print_warning_once": ("warning", 0), "print_info_once": ("info", 0), "rank0_log": ("info", 0),
           "log_info_on_rank0": ("info", 1)}
# a call after which the process ends: a line printed before it goes with a failure
_ENDING_CALLS = {"sys.exit", "exit", "os._exit", "kill_process_tree", "kill_itself_when_parent_died"}
EXCLUDED_PATHS = ("srt/*/test_*.py", "srt/*/tests/*", "srt/debug_utils/*")
# request-serving entry points SGLang runs after the ready line (phases: knows the scheduler's)
SERVING_PATHS = ("srt/disaggregation/*", "srt/entrypoints/openai/*", "srt/entrypoints/anthropic/*", "srt/entrypoints/ollama/*",
                 "srt/function_call/*", "srt/parser/reasoning_parser.py", "srt/managers/tokenizer_manager*",
                 "srt/managers/detokenizer_manager*", "srt/managers/multi_tokenizer_mixin.py")
# request handlers in modules that also start the server: (path, function glob); 0.5.9's gRPC
# servicer answers Generate / Embed / Abort / HealthCheck once the server is up
SERVING_FUNCTIONS = (("srt/entrypoints/grpc_server.py", "SGLangSchedulerServicer.[A-Z]*"),)
# lines printed by the main process (the http server, tokenizer manager, argument resolution):
# no TP prefix; everything else runs in the scheduler processes
MAIN_PROCESS_PATHS = ("srt/entrypoints/*", "srt/server_args*", "srt/arg_groups/*", "srt/managers/tokenizer*",
                      "srt/managers/detokenizer*", "srt/managers/template_manager.py", "srt/parser/*",
                      "srt/function_call/*", "srt/utils/hf_transformers*", "srt/managers/multi_tokenizer_mixin.py")


def _ends_process(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        name = invf._unparse(stmt.value.func)
        return name in _ENDING_CALLS or name.rsplit(".", 1)[-1] in {"kill_process_tree", "_exit"}
    return False


class _WarnFinder(invf._Finder):
    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for i, stmt in enumerate(stmts):
                    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                            and any(_ends_process(x) for x in stmts[i + 1:])):
                        self.raised_after.add(id(stmt.value))
        ast.NodeVisitor.generic_visit(self, node)

    def visit_Raise(self, node):  # failure sites are scripts/inventory_failures.py's
        ast.NodeVisitor.generic_visit(self, node)

    visit_Assert = visit_Return = visit_Raise

    def _warn_add(self, node, kind, msg, extra=None):
        if id(node) in self.raised_after:
            return  # the line goes with a failure that follows it
        self._add(node, kind, "", self._message(msg, extra))

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WARN_METHODS and node.args:
            owner = func.value
            name = owner.id if isinstance(owner, ast.Name) else (owner.attr if isinstance(owner, ast.Attribute) else "")
            if name == "warnings" and func.attr == "warn":
                category = invf._unparse(node.args[1]) if len(node.args) > 1 else next(
                    (invf._unparse(k.value) for k in node.keywords if k.arg == "category"), "UserWarning")
                self._warn_add(node, "warn." + category.rsplit(".", 1)[-1], node.args[0])
            elif name in invf.LOGGER_NAMES or name.lower().endswith("logger"):
                self._warn_add(node, "log." + WARN_METHODS[func.attr], node.args[0], list(node.args[1:]))
        elif isinstance(func, ast.Name) and func.id in HELPERS:
            level, pos = HELPERS[func.id]
            if len(node.args) > pos:
                self._warn_add(node, "log." + level, node.args[pos])
        elif isinstance(func, ast.Name) and func.id == "print" and node.args:
            parts: list = []
            for i, arg in enumerate(node.args):
                parts += ([" "] if i else []) + self._message(arg)
            if id(node) not in self.raised_after:
                self._add(node, "print", "", parts)
        ast.NodeVisitor.generic_visit(self, node)


def find_sites(path: str, text: str) -> list[dict]:
    """The healthy-run print sites of one source file."""
    return invf.find_sites(path, text, _WarnFinder)


def site_phase(site: dict, disp: invf.Dispositions) -> str:
    """Where a healthy run prints the line: the failure inventory's phase of the place (a
    logged line is a ``log`` site there), the request-serving entry points after ready."""
    phase = disp.phase({**site, "kind": "log"})
    if any(fnmatch.fnmatchcase(site["file"], path) and fnmatch.fnmatchcase(site["function"], function)
           for path, function in SERVING_FUNCTIONS):
        return "serving"
    if phase != "serving" and any(fnmatch.fnmatchcase(site["file"], g) for g in SERVING_PATHS) \
            and not re.search(r"(^|\.)(__init__|__post_init__|_?init\w*|_?load\w*|_?setup\w*)$", site["function"]):
        return "serving"
    return phase


# -- the healthy log ----------------------------------------------------------------------------

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
_DUMP = {
    "0.5.23": ("server_args={'model_path': '%s', 'tokenizer_path': '%s', 'host': '127.0.0.1', 'port': 30000, "
               "'tp_size': 2, 'mem_fraction_static': 0.88, 'chunked_prefill_size': 8192, 'sglang_version': '0.5.23'}"
               % (MODEL, MODEL)),
    "0.5.9": ("server_args=ServerArgs(model_path='%s', tokenizer_path='%s', host='127.0.0.1', port=30000, "
              "tp_size=2, mem_fraction_static=0.88, chunked_prefill_size=8192, cuda_graph_max_bs=256)" % (MODEL, MODEL)),
    # 0.4.x: engine.py ``logger.info(f"{server_args=}")`` of the dataclass, as 0.5.9
    "0.4.6.post5": ("server_args=ServerArgs(model_path='%s', tokenizer_path='%s', host='127.0.0.1', port=30000, "
                    "tp_size=2, mem_fraction_static=0.88, chunked_prefill_size=8192, cuda_graph_max_bs=160)"
                    % (MODEL, MODEL)),
}
# (step, TP-prefixed, text) of a healthy tp=2 launch, sglang-notes 1.3 (both releases' strings)
_MILESTONES = {
    "0.5.23": [
        ("startup.distributed", True, "Init parallel begin."),
        ("startup.distributed", True, "Init parallel ends. elapsed=0.31 s"),
        ("startup.distributed", True, "Memory baseline taken. mem usage=0.41 GB"),
        ("startup.load_weights", True, "Load weight begin. avail mem=78.50 GB"),
        ("startup.memory_pool", True, "Load weight end. elapsed=38.12 s, type=LlamaForCausalLM, avail mem=62.31 GB, "
                                      "mem usage=16.19 GB."),
        ("startup.memory_pool", True, "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 420000, "
                                      "K size: 24.00 GB, V size: 24.00 GB"),
        ("startup", True, "Memory pool end. avail mem=13.20 GB"),
        ("startup.cuda_graph", True, "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
                                     "avail mem=13.10 GB"),
        ("startup.cuda_graph.end", True, "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16, 24, 32], "
                                         "elapsed=21.40 s, mem usage=0.52 GB, avail mem=12.58 GB."),
    ],
    "0.5.9": [
        ("startup.distributed", True, "Init torch distributed begin."),
        ("startup.distributed", True, "Init torch distributed ends. elapsed=0.52 s, mem usage=0.41 GB"),
        ("startup.load_weights", True, "Load weight begin. avail mem=78.50 GB"),
        ("startup.memory_pool", True, "Load weight end. elapsed=38.12 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
                                      "avail mem=62.31 GB, mem usage=16.19 GB."),
        ("startup.memory_pool", True, "KV Cache is allocated. #tokens: 420000, K size: 24.00 GB, V size: 24.00 GB"),
        ("startup", True, "Memory pool end. avail mem=13.20 GB"),
        ("startup.cuda_graph", True, "Capture cuda graph begin. This can take up to several minutes. avail mem=13.10 GB"),
        ("startup.cuda_graph.end", True, "Capture cuda graph end. Time elapsed: 21.40 s. mem usage=0.52 GB. "
                                         "avail mem=12.58 GB."),
    ],
    # 0.4.6.post5 model_runner.py (its strings: no elapsed on the distributed end line, no
    # "Memory baseline"), mem_cache/memory_pool.py
    "0.4.6.post5": [
        ("startup.distributed", True, "Init torch distributed begin."),
        ("startup.distributed", True, "Init torch distributed ends. mem usage=0.41 GB"),
        ("startup.load_weights", True, "Load weight begin. avail mem=78.50 GB"),
        ("startup.memory_pool", True, "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
                                      "avail mem=62.31 GB, mem usage=16.19 GB."),
        ("startup.memory_pool", True, "KV Cache is allocated. #tokens: 420000, K size: 24.00 GB, V size: 24.00 GB"),
        ("startup", True, "Memory pool end. avail mem=13.20 GB"),
        ("startup.cuda_graph", True, "Capture cuda graph begin. This can take up to several minutes. avail mem=13.10 GB"),
        ("startup.cuda_graph.end", True, "Capture cuda graph end. Time elapsed: 21.40 s. mem usage=0.52 GB. "
                                         "avail mem=12.58 GB."),
    ],
}
_READY = {
    "0.5.23": [
        ("TP0", "max_total_num_tokens=420000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
               "max_running_requests=2048, context_len=131072, available_gpu_mem=12.58 GB"),
        (False, "Engine startup timings (s): load_weight=38.12, kv_cache_allocation=4.07, scheduler_e2e=71.60, "
                "cuda_graph={prefill=0.00, decode=21.40, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00, "
                "draft_extend=0.00}, tokenizer_e2e=75.23"),
        (False, "INFO:     Started server process [10649]"),
        (False, "INFO:     Waiting for application startup."),
        (False, "INFO:     Application startup complete."),
        (False, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
        (False, 'INFO:     127.0.0.1:33788 - "GET /model_info HTTP/1.1" 200 OK'),
        ("TP0", "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
               "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 4.44"),
        (False, 'INFO:     127.0.0.1:33792 - "POST /generate HTTP/1.1" 200 OK'),
        (False, "The server is fired up and ready to roll!"),
    ],
    "0.5.9": [
        ("TP0", "max_total_num_tokens=420000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
               "max_running_requests=2048, context_len=131072, available_gpu_mem=12.58 GB"),
        (False, "INFO:     Started server process [10649]"),
        (False, "INFO:     Waiting for application startup."),
        (False, "INFO:     Application startup complete."),
        (False, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
        (False, 'INFO:     127.0.0.1:33788 - "GET /get_model_info HTTP/1.1" 200 OK'),
        ("TP0", "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
               "#queue-req: 0, input throughput (token/s): 4.44, cuda graph: False"),
        (False, 'INFO:     127.0.0.1:33792 - "POST /generate HTTP/1.1" 200 OK'),
        (False, "The server is fired up and ready to roll!"),
    ],
    # 0.4.6.post5 scheduler.py (no available_gpu_mem before 0.4.7; "Prefill batch." with a
    # period), http_server.py (/get_model_info, then the warm-up /generate)
    "0.4.6.post5": [
        ("TP0", "max_total_num_tokens=420000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
               "max_running_requests=2048, context_len=131072"),
        (False, "INFO:     Started server process [10649]"),
        (False, "INFO:     Waiting for application startup."),
        (False, "INFO:     Application startup complete."),
        (False, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
        (False, 'INFO:     127.0.0.1:33788 - "GET /get_model_info HTTP/1.1" 200 OK'),
        ("TP0", "Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
               "#queue-req: 0"),
        (False, 'INFO:     127.0.0.1:33792 - "POST /generate HTTP/1.1" 200 OK'),
        (False, "The server is fired up and ready to roll!"),
    ],
}
_SERVING = {
    "0.5.23": [
        ("TP0", "Prefill batch, #new-seq: 3, #new-token: 1532, #cached-token: 0, token usage: 0.01, #running-req: 1, "
               "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 4131.00"),
        (False, 'INFO:     127.0.0.1:51734 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch, #running-req: 4, #token: 1741, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 342.88, #queue-req: 0"),
        (False, 'INFO:     127.0.0.1:51750 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch, #running-req: 4, #token: 1901, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 351.02, #queue-req: 0"),
    ],
    "0.5.9": [
        ("TP0", "Prefill batch, #new-seq: 3, #new-token: 1532, #cached-token: 0, token usage: 0.01, #running-req: 1, "
               "#queue-req: 0, input throughput (token/s): 4131.00, cuda graph: False"),
        (False, 'INFO:     127.0.0.1:51734 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch, #running-req: 4, #token: 1741, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 342.88, #queue-req: 0"),
        (False, 'INFO:     127.0.0.1:51750 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch, #running-req: 4, #token: 1901, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 351.02, #queue-req: 0"),
    ],
    "0.4.6.post5": [
        ("TP0", "Prefill batch. #new-seq: 3, #new-token: 1532, #cached-token: 0, token usage: 0.01, #running-req: 1, "
               "#queue-req: 0"),
        (False, 'INFO:     127.0.0.1:51734 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch. #running-req: 4, #token: 1741, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 342.88, #queue-req: 0"),
        (False, 'INFO:     127.0.0.1:51750 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
        ("TP0", "Decode batch. #running-req: 4, #token: 1901, token usage: 0.01, cuda graph: True, "
               "gen throughput (token/s): 351.02, #queue-req: 0"),
    ],
}
STAMP = "2026-01-01 00:{:02d}:{:02d}"
PREFIX = "/usr/local/lib/python3.12/dist-packages/"


def _main_process(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, g) for g in MAIN_PROCESS_PATHS)


def rendered_lines(site: dict, message: str) -> list[tuple[bool | None, str]]:
    """(TP-prefixed?, text) lines the site prints; None: a raw line (no SGLang prefix)."""
    kind = site["kind"]
    if kind.startswith("warn."):
        # warnings.showwarning: "path:lineno: Category: message" and the source line, on stderr
        return [(None, f"{PREFIX}sglang/{site['file']}:{site['line']}: {kind[5:]}: {message}"),
                (None, "  warnings.warn(")]
    if kind == "print":
        return [(None, line) for line in message.split("\n")]
    return [(not _main_process(site["file"]), message)]


def _style(version: str) -> str:
    """The release whose healthy-launch lines stand for ``version``'s (0.4.x: 0.4.6.post5's)."""
    if version in _MILESTONES:
        return version
    return "0.4.6.post5" if version.startswith("0.4.") else "0.5.23"


def healthy_log(version: str, phase: str, lines: list[tuple[bool | str | None, str]]) -> str:
    """A healthy tp=2 launch of ``version`` with ``lines`` printed where ``phase`` prints them."""
    version = _style(version)
    out: list[str] = []
    clock = iter(range(1, 10_000))

    def emit(tp: bool | str | None, text: str) -> None:
        t = next(clock)
        stamp = STAMP.format(t // 60, t % 60)
        if tp is None:
            out.append(text)
        elif tp == "TP0":  # the stats-logging rank only
            out.append(f"[{stamp} TP0] {text}")
        elif tp:
            out.extend(f"[{stamp} TP{r}] {text}" for r in (0, 1))
        else:
            out.append(f"[{stamp}] {text}")

    def site_lines() -> None:
        for tp, text in lines:
            emit(tp, text)

    placed = False
    if phase == "startup.args":
        site_lines()
        placed = True
    emit(False, _DUMP[version])
    for step, tp, text in _MILESTONES[version]:
        if not placed and step == "startup.cuda_graph.end" and phase == "startup.cuda_graph":
            site_lines()  # while capturing: after the begin line, before the end line
            placed = True
        emit(tp, text)
        if not placed and step == phase and phase != "startup.cuda_graph" and \
                text.startswith(("Init parallel begin", "Init torch distributed begin", "Load weight begin",
                                 "Load weight end", "Memory pool end")):
            site_lines()
            placed = True
    ready = _READY[version]
    for tp, text in ready:
        if not placed and phase != "serving" and text.startswith("max_total_num_tokens"):
            site_lines()  # a start-up step the place does not tell: before the scheduler is ready
            placed = True
        emit(tp, text)
    serving = _SERVING[version]
    emit(*serving[0])
    if not placed:
        site_lines()
    for tp, text in serving[1:]:
        emit(tp, text)
    return "\n".join(out) + "\n"


# -- the engine --------------------------------------------------------------------------------


class Engine:
    """The engine as ``explain`` runs it on a finished log (every rule layer, whole log)."""

    def __init__(self):
        from sglang_doctor.diagnose.rules_engine import RuleSet

        self.ruleset = RuleSet.load(builtin=True, user=False)

    def incidents(self, text: str) -> list[str]:
        from sglang_doctor.pipeline import StreamPipeline

        pipe = StreamPipeline(self.ruleset, remediate=False, whole_log=True)
        events = pipe.feed(text.encode()) + pipe.finish()
        return sorted({f"{ev.get('rule')}" for ev in events if ev.get("event") == "incident"})


def messages_of(site: dict) -> list[str]:
    """The site's message with the failure inventory's sample fillings a healthy run can print
    (numbers, names, a list, 1), the distinct ones; a template without placeholders has one.
    Not the negative number: it stands for a failure's value (a profiled pool size below zero
    is the failure the pool_profiled_negative signal names)."""
    fills = invf.fillings(site["template"])
    return list(dict.fromkeys(fills[:2] + fills[3:]))


def alarm(engine: Engine, version: str, site: dict) -> list[str]:
    """The rule ids of the incidents a healthy log raises with this site's line in it, under
    any of its fillings (a false alarm under one is a false alarm)."""
    found: set[str] = set()
    for message in messages_of(site):
        found.update(engine.incidents(healthy_log(version, site["phase"], rendered_lines(site, message))))
    return sorted(found)


def library_lines(path: Path = LIBRARY_LINES) -> list[dict]:
    data = invf._load_yaml(path) if path.is_file() else None
    return list((data or {}).get("lines") or [])


def failure_lines(path: Path = LIBRARY_LINES) -> list[dict]:
    """``reports_failure:`` of healthy-lines.yaml: sites whose line itself reports a failure (a
    request's failed KV transfer, a health probe that got no answer), each with its reason and,
    where the line has a healthy form, the entry of ``lines:`` that checks it."""
    data = invf._load_yaml(path) if path.is_file() else None
    out = []
    for entry in (data or {}).get("reports_failure") or []:
        out.append({**entry, "_message": re.compile(entry["message"])})
    return out


def reports_failure(site: dict, entries: list[dict]) -> dict | None:
    for entry in entries:
        if fnmatch.fnmatchcase(site["file"], entry["path"]) and entry["_message"].search(site["template"]):
            return entry
    return None


def library_alarm(engine: Engine, version: str, entry: dict) -> list[str]:
    lines: list[tuple[bool | None, str]] = [(None, t) for t in entry["text"].rstrip("\n").split("\n")]
    return engine.incidents(healthy_log(version, entry["phase"], lines))


# -- the inventory --------------------------------------------------------------------------------


# --probe-exceptions: a handled exception's text where a site prints ``{e}`` (``str(e)``, ...):
# what a healthy run's optional imports, missing caches and refused connections print, and a
# caught CUDA out-of-memory error.  Not recorded: which exception a real run hands each site is
# not in the source, so the figure says which words in such lines the engine takes as failures.
_EXC_EXPR = re.compile(r"^(?:e|err|exc|ex|error|exception|(?:str|repr)\((?:e|err|exc|ex|error)\)|"
                       r"traceback\.format_exc\(\))$")
EXCEPTION_VALUES = ("No module named 'flash_attn'", "[Errno 2] No such file or directory: '/root/.cache/x.json'",
                    "[Errno 111] Connection refused",
                    "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB")


def probe_exceptions(inv: dict, version: str, engine: Engine) -> tuple[int, Counter]:
    sites, found = 0, Counter()
    for site in iter_sites(inv):
        exprs = [m.group(1) for m in invf._PLACEHOLDER.finditer(site["template"]) if m.group(1)]
        if site["status"] == "reports_failure" or not any(_EXC_EXPR.match(x) for x in exprs):
            continue
        sites += 1
        for value in EXCEPTION_VALUES:
            message = invf._PLACEHOLDER.sub(lambda m: m.group(0)[0] if m.group(0) in ("{{", "}}") else (
                value if _EXC_EXPR.match(m.group(1)) else "X"), site["template"])
            for rule in engine.incidents(healthy_log(version, site["phase"], rendered_lines(site, message))):
                found[(value.split(".")[0][:40], rule)] += 1
    return sites, found


def inventory(version: str, wheel: Path, disp: invf.Dispositions, engine: Engine) -> dict:
    files: dict[str, list] = {}
    kinds: Counter = Counter()
    alarms = excluded = failing = 0
    failures = failure_lines()
    for path, text in invf.sources(wheel):
        if any(fnmatch.fnmatchcase(path, g) for g in EXCLUDED_PATHS):
            excluded += len(find_sites(path, text))
            continue
        for s in find_sites(path, text):
            site = {"file": s["file"], "line": s["line"], "function": s["function"], "kind": s["kind"],
                    "template": s["full"]}
            site["phase"] = site_phase(site, disp)
            rules = alarm(engine, version, site)
            kinds[s["kind"]] += 1
            status = "clean"
            if rules:
                status = "reports_failure" if reports_failure(site, failures) else "false_alarm"
            alarms += status == "false_alarm"
            failing += status == "reports_failure"
            files.setdefault(path, []).append([s["line"], s["function"], s["kind"], site["phase"], s["full"],
                                               status, ",".join(rules)])
    sites = sum(kinds.values()) - failing
    lib = [(e, library_alarm(engine, version, e)) for e in library_lines()]
    lib_alarms = sum(bool(r) for _, r in lib)
    return {"sglang_version": version, "wheel": wheel.name, "sites": sites, "reports_failure": failing,
            "excluded_test_debug": excluded,
            "kinds": dict(sorted(kinds.items())), "false_alarms": alarms,
            "share_clean": round(1 - alarms / sites, 4) if sites else 1.0,
            "library_lines": len(lib), "library_false_alarms": lib_alarms,
            "library": {e["id"]: ",".join(r) for e, r in lib},
            "files": files}


def iter_sites(inv: dict):
    for path, sites in inv["files"].items():
        for line, function, kind, phase, template, status, rules in sites:
            yield {"file": path, "line": line, "function": function, "kind": kind, "phase": phase,
                   "template": template, "status": status, "alarm": rules}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="+", default=list(DEFAULT_VERSIONS))
    ap.add_argument("--wheel-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    ap.add_argument("--show", action="store_true", help="print every false alarm")
    ap.add_argument("--probe-exceptions", action="store_true",
                    help="with the recorded files: fill each {e} with a handled exception's text and count incidents")
    args = ap.parse_args(argv)
    if args.probe_exceptions:
        engine = Engine()
        for version in args.versions:
            recorded = json.loads((args.out / f"warnings-{version}.json").read_text(encoding="utf-8"))
            sites, found = probe_exceptions(recorded, version, engine)
            print(f"sglang {version}: {sites} sites print a handled exception's text")
            for (value, rule), n in found.most_common():
                print(f"  {n:5d} {value!r} -> {rule}")
        return 0
    wheel_dir = args.wheel_dir or invf.default_wheel_dir()
    disp = invf.Dispositions.load()
    engine = Engine()
    status = 0
    for version in args.versions:
        inv = inventory(version, invf.find_wheel(version, wheel_dir), disp, engine)
        target = args.out / f"warnings-{version}.json"
        text = invf.dumps(inv)
        status |= invf.check_or_write(target, text, args.check)
        print(f"sglang {version}: {inv['sites']} healthy-run sites {inv['kinds']} (and {inv['reports_failure']} whose "
              f"line reports a failure); false alarms {inv['false_alarms']} "
              f"({100 * (1 - inv['share_clean']):.2f}%); library lines {inv['library_lines']}, "
              f"false alarms {inv['library_false_alarms']}")
        if args.show:
            by_rule: Counter = Counter()
            for site in iter_sites(inv):
                if site["alarm"]:
                    by_rule.update(site["alarm"].split(","))
                    print(f"  {site['status']}: {site['file']}:{site['line']} [{site['kind']} {site['phase']}] "
                          f"{site['template'][:150]} -> {site['alarm']}")
            for key, rules in inv["library"].items():
                if rules:
                    by_rule.update(rules.split(","))
                    print(f"  library {key} -> {rules}")
            for rule, n in by_rule.most_common():
                print(f"    {n:4d} {rule}")
    return status


if __name__ == "__main__":
    sys.exit(main())
