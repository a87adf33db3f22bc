"""False alarms on healthy logs, measured three ways without any held-back data (issue #12:
0 false alarms on healthy logs).

A false alarm is a healthy text (nothing ended the launch) on which ``explain`` raises an
incident.  The held-back parts' healthy logs are mostly *fragments* people pasted: no launch
header, no ready line, cut in the middle.  So besides the tuned parts' healthy files this
bench renders SGLang 0.5.23's own healthy-run lines as such fragments.

(a) ``corpus``: the healthy files (label ``category: none``) of the tuned parts
    (``TUNED_PARTS``), each whole.
(b) ``transforms``: bench/robustness.py's transforms (cut, excerpted, prefixed, wrapped,
    ...) applied to the healthy texts of (a) and ``fixtures/healthy/`` the tool keeps quiet on,
    each output as the transform made it, except that a source which ended inside its last line
    keeps that line cut (``keep_cut_end``).
(c) ``bait``: generated from SGLang 0.5.23's SOURCE, as recorded by the inventories (no log
    text involved):
    - every ``logger.warning / info`` (and ``_once``, ``print``, ``warnings.warn``) site of
      ``data/inventory/warnings-0.5.23.json`` (scripts/inventory_warnings.py reads them from
      the wheel), its template filled with the inventory's sample values
      (scripts/inventory_failures.py ``fillings``), rendered with SGLang's record header
      (``[ts TPn]`` for a scheduler's line) as a *fragment*: ``serving`` (between batch lines
      and uvicorn access lines, no ready line in the text), ``startup`` (between two start-up
      milestone lines, no dump, no ready line) and ``bare`` (the record alone).  The whole-log
      form of the same sites is scripts/inventory_warnings.py's own check.
    - the same for the older releases the warnings inventory reads (0.4.3.post2, 0.4.6.post5,
      0.5.4, 0.5.9: ``OLDER_VERSIONS``), groups ``serving@V`` / ``startup@V`` / ``bare@V``
      (session 32).
    - request-level error paths: every ``raise`` site the failure inventory
      (``data/inventory/sglang-0.5.23.json``) waives as ``request_level`` (a request's
      validation in io_struct, tokenizer_manager, the OpenAI / Anthropic serving layers),
      rendered the way ``OpenAIServingBase.handle_request`` logs it (``logger.exception(f"Error
      in request: {e}")``: the header, the traceback through ``handle_request`` down to the
      raising function, the exception line) followed by uvicorn's ``400 Bad Request`` access
      line and more batch lines; once whole (``request``) and once cut above the traceback
      (``request_cut``: the header line lost, as a paste that starts at ``Traceback`` has it),
      and the exception line alone between serving lines (``request_bare``) or at the end of
      the paste, after the access line (``request_end``).  ``request``, ``request_cut`` and
      ``request_bare`` render every site's exception with a ``400 Bad Request`` after it.
      ``request_end`` only the sites whose exception SGLang answers with a 4xx (ANSWERED_4XX):
      ``ValueError`` and SGLang's own subclasses of it, ``HTTPException`` and
      ``DS32EncodingError`` (serving_base.py ``handle_request``, http_server.py
      ``generate_request``) and the EPD encoder's ``BadRequestError`` (encoder/http_server.py
      answers an MMError with its code, 400 for that one).  Any other type (RuntimeError,
      TypeError, ...) SGLang answers with a 500, so a 400 after it is a text SGLang never prints;
      and its true form, the exception line and a ``500 Internal Server Error`` with nothing
      after, is not a healthy text either: a failed warm-up request ends the same way right before
      "Initialization failed. warmup error" (tuned corpus sealed10/018), so the tool keeps it an
      incident (incidents/survived.py ``client_error_answer``) and the bait leaves it out.

(d) ``nccl``: real healthy-but-scary texts of torch.distributed / NCCL teardown and set-up that
    people pasted (``NCCL_SHAPES``: each file with the thread it came from), whole and under
    every robustness transform: the heartbeat monitor's TCPStore warnings while the store's host
    exits, the watchdog's "driver shutting down" at exit, ProcessGroupNCCL's exit and barrier
    warnings, RCCL's host-settings advice, NCCL_DEBUG=INFO chatter.  None of them is a failure by
    itself (incidents/survived.py ``goes_on_after`` for the ones with a failure's words).
(e) ``real``: other real healthy-but-scary texts people pasted from runs that went on
    (``REAL_SHAPES``: each file with the thread it came from, a thread no held-back part uses),
    whole and under every robustness transform, in the categories the held-back false alarms
    fell in: an NCCL-looking line of a run that goes on (torch's ProcessGroupNCCL environment
    dump, whose words are "kill program", "watchdog", "dump on timeout"; NET/IB's async
    events after "Init COMPLETE"; "CollNet is not supported or fails to initialize, ignoring
    NCCL_ALGO=COLLNET" with the set-up going on after it), a model-load-looking warning (a diffusion model's weights
    "not initialized from checkpoint", logged and served), one request's exception answered by
    uvicorn ("Exception in ASGI application", an ExceptionGroup cut inside its sub-traceback).
    The texts are byte for byte what the thread shows, a search excerpt's cut end included.
(f) ``noise``: real healthy runs of SGLang 0.5.23 (``fixtures/healthy/real-0.5.23/``, recorded by
    scripts/record_healthy_runs.py: request-level errors, client disconnects, aborts, a burst, a
    SIGTERM or SIGINT stop; since session 30 also /metrics scrapes, wrong and missing API keys,
    HEAD / OPTIONS, a bad logprob token id, a batch with one bad item, embeddings on a generation
    model, a client killed with SIGKILL, ``--log-requests``, bytes that are not HTTP, a websocket
    upgrade, and SIGTERM / SIGINT with generations in flight; since session 32 also the warnings
    Python hides by default (PYTHONWARNINGS=default: UserWarning / DeprecationWarning with their
    ``warnings.warn(`` lines), /health answered 503 before ready, SGLang's tool-call and reasoning
    parsers given a malformed call or an unknown parser name (a 500 with uvicorn's "Exception in
    ASGI application"), a weight update from a missing directory, a LoRA load without --enable-lora,
    rerank / score / tokenize misused, generation paused and resumed, Ctrl-C twice to the whole
    process group and SIGTERM twice with generations in flight) with the third-party lines people
    paste around SGLang (``fixtures/healthy/noise/pieces.txt``: ray's ``(pid=N)`` / ``(raylet)``
    lines, wandb's summary and retry, urllib3's retry while the server is not up, torch's
    TORCH_CUDA_ARCH_LIST warning, huggingface_hub / tokenizers warnings, flashinfer JIT loading,
    NCCL INFO of a healthy init; and, from the libraries' source, torch dynamo's recompile-limit
    warning and TypedStorage deprecation, xgrammar's stop-token warning, triton's autotuner
    DeprecationWarning, huggingface_hub's disk-space warning, transformers' generation-flags
    warning, CPython's resource_tracker leak warning, nanobind's exit-time leak report)
    interleaved: each run whole (``whole``), each piece at the run's start, middle and end
    (``piece``), every piece at once (``all``), and that last text under every robustness
    transform (docker compose / kubectl / ray prefixes, cuts, ...).  A piece goes before one of
    SGLang's log records (``_boundaries``), never inside one: logging writes a record, its
    traceback included, in one write.

(g) ``sources``: healthy lines read in their libraries' SOURCE, not pasted by anyone
    (``fixtures/healthy/sources/pieces.txt``, each piece with the source file and the code path
    that goes on after it): NCCL WARN sites that set a fallback value and go on (a thread count
    that is not a multiple of the warp, a spurious connection on NCCL's socket, a profiler plugin
    that failed to load, an IB event NCCL does not know), NCCL INFO lines with a failure's words
    (a plugin not found, no IB device, NVLS not available, P2P disabled by the environment, a
    communicator's teardown), torch.distributed's set-up and teardown warnings (c10d's IPv6 socket
    refusals, Gloo's loopback fallback, a deprecated variable name, expandable_segments not
    supported, ProcessGroupNCCL's INFO lines at exit) and uvicorn's request-level warnings and its
    graceful-shutdown timeout.  Each piece goes where its code runs in a healthy TP2 launch
    (fixtures/healthy/nccl_info_chatter_0523.log, stopped with SIGTERM): ``context`` (the whole
    launch), ``end`` (the launch cut right after the piece: a paste that ends with it), ``bare``
    (the piece alone), and the ``context`` text under every robustness transform.

(h) ``handled``: tracebacks SGLang prints and goes on after, from its SOURCE: every site of
    ``data/inventory/handled-VERSION.json`` (scripts/inventory_handled.py: ``exc_info=``,
    ``logger.exception``, ``traceback.print_exc()``, a formatted traceback in the message) that no
    raise or exit follows, for 0.5.23 and the older releases the inventory reads.  The record (its
    template filled as the warnings bait fills it, SGLang's header, ``[ts TPn]`` for a scheduler's
    line) then the traceback logging appends: the caught exception (the except clause's type, a
    RuntimeError for ``except Exception``) raised in the site's own function.  Shapes: ``life``
    (between batch lines or start-up milestones: the server goes on after it), ``end`` (the
    paste ends right after the exception line), ``cut`` (and inside it), ``bare`` (the record and
    its traceback alone), ``prefixed`` (``end`` under robustness's docker / kubectl / ray
    prefixes).  Groups ``shape:words`` hold the sites whose record says it went on
    (survived.HANDLED_WORDS), ``shape:plain`` the others: for those the text itself does not say
    the code went on, so ``end`` / ``cut`` / ``bare`` of them stay incidents (unknown stays
    unknown) and are counted apart, not as a goal.

(i) ``sites``: NCCL's and torch.distributed's own lines that go on, from their SOURCE
    (scripts/inventory_nccl.py, data/inventory/nccl-sites.json, session 34): every WARN site whose
    code sets a fallback and goes on (``survived``), every INFO site with a failure's words
    (``info``), c10d's socket fallbacks (an address refused, the next one tried) and
    ProcessGroupNCCL's exit and heartbeat warnings, each line where NCCL's set-up runs in the
    healthy TP2 launch of (g) (``context``), the launch cut right after it (``end``), alone
    (``bare``), and ``context`` under robustness's prefix transforms, ``rank_lines``,
    ``rank_copy``, ``wrap80`` and ``cut_top`` (SITE_TRANSFORMS).

(j) ``runs``: real healthy-but-scary runs of SGLang 0.5.23 recorded whole on this machine
    (``RUN_DIRS``: fixtures/healthy/real_runs/ of scripts/record_real_bait.py, session 35: a flood the
    queue limit refuses, cache flushes refused while busy, logprobs out of range, chat input the
    template refuses, LoRA adapters not loaded, weight updates refused, ``--log-level debug``,
    deprecated flags, SIGTERM / Ctrl-C / the main process SIGKILLed under a shell that reports
    ``Killed``; session 36: SIGTERM while the weights load and during the warm-up, a storm of
    streaming clients that disconnect, /abort_request for all and for an unknown id; and the earlier recordings of fixtures/healthy/real-0.5.23/ and fixtures/real/'s
    healthy stops).  Each log whole (``whole``); cut at every scary point (``end``: the paste that
    ends right after a scary record, the record that holds a line with a failure's words,
    ``SCARY``, its traceback included); the scary record alone (``bare``; ``bare:dies`` when the
    record itself reports a process's end, ``DEATH_REPORT``: "crashed with exit code 1",
    "SIGQUIT received ... one child failed" of a Ctrl-C's teardown read alone are a death's
    words, so those stay incidents and are counted apart, not as a goal); and the whole log and
    every ``end`` cut under robustness's prefix, rank and wrap transforms (``RUN_TRANSFORMS``:
    ``whole:T`` / ``end:T``, the cut's scary line as the key line; the rank transforms only on
    the logs of a launch with several ranks, ``tp2_*``: one process never prints a line twice).  A scary record that repeats
    in one log (the same text but for numbers) counts once.

Figures: per measure, texts and false alarms (a text with any incident), with the rule ids.

    python bench/healthy_bait.py                 # all three
    python bench/healthy_bait.py --only bait --show 20
    python bench/healthy_bait.py --only nccl
    python bench/healthy_bait.py --only real
    python bench/healthy_bait.py --only noise
    python bench/healthy_bait.py --only sources
    python bench/healthy_bait.py --only handled --show 5
    python bench/healthy_bait.py --only sites --show 5
    python bench/healthy_bait.py --only runs --show 5
    python bench/healthy_bait.py --json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import accuracy  # noqa: E402
import inventory_failures as invf  # noqa: E402
import inventory_handled as invh  # noqa: E402
import inventory_nccl as invn  # noqa: E402
import inventory_warnings as invw  # noqa: E402
import robustness  # noqa: E402

TUNED_PARTS = ("dev", "fresh", "late", "field", "field9", "field10", "notes10", "sealed10", "field11",
               "field12", "field13", "field14", "field15", "field16", "field17", "field18", "field19", "field20", "field21", "field22", "field23", "field24", "field25", "field26", "field27", "field28", "field29", "field30", "field31", "field32", "field33", "field34", "field35", "field36", "field37", "field38", "field39")
VERSION = "0.5.23"
INVENTORY = ROOT / "data" / "inventory"
SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt/"

SERVING_BEFORE = [
    ("TP0", "Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.02, "
            "#running-req: 3, #queue-req: 0"),
    ("TP0", "Decode batch, #running-req: 4, #token: 1840, token usage: 0.02, cuda graph: True, "
            "gen throughput (token/s): 342.17, #queue-req: 0"),
]
SERVING_AFTER = [
    (False, 'INFO:     127.0.0.1:51750 - "POST /v1/chat/completions HTTP/1.1" 200 OK'),
    ("TP0", "Decode batch, #running-req: 4, #token: 1901, token usage: 0.02, cuda graph: True, "
            "gen throughput (token/s): 351.02, #queue-req: 0"),
]
STARTUP_BEFORE = [(True, "Load weight begin. avail mem=46.89 GB")]
STARTUP_AFTER = [(True, "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=31.45 GB, "
                        "mem usage=15.44 GB.")]


def _emit(lines: list[tuple]) -> str:
    out = []
    for t, (tp, text) in enumerate(lines, start=1):
        stamp = f"2026-01-01 00:{t // 60:02d}:{t % 60:02d}"
        if tp is None:
            out.append(text)
        elif tp == "TP0":
            out.append(f"[{stamp} TP0] {text}")
        elif tp:
            out.extend(f"[{stamp} TP{r}] {text}" for r in (0, 1))
        else:
            out.append(f"[{stamp}] {text}")
    return "\n".join(out) + "\n"


# -- (d) real healthy NCCL / torch.distributed shapes -------------------------------------------

# (file, where its lines were pasted); fixtures/ files, byte for byte what the thread shows
NCCL_SHAPES = (
    ("fixtures/nccl/heartbeat_store_gone_should_dump_fragment.log", "https://github.com/MiniMax-AI/MiniMax-M1/issues/14"),
    ("fixtures/nccl/store_gone_should_dump_two_ranks_fragment.log", "https://github.com/ome-projects/ome/issues/312"),
    ("fixtures/nccl/watchdog_driver_shutting_down_at_exit.log", "https://github.com/NVIDIA/Fuser/issues/2497"),
    ("fixtures/nccl/destroy_process_group_not_called_at_exit.log", "https://github.com/anhvth/opensloth/issues/17"),
    ("fixtures/nccl/process_group_not_destroyed_at_exit.log", "https://github.com/sehoffmann/dmlcloud/issues/61"),
    ("fixtures/nccl/barrier_device_unknown_ray_worker.log", "https://github.com/verl-project/verl/issues/1472"),
    ("fixtures/healthy/rccl_host_settings_warn_fragment.log", "session 24 (fa24): RCCL's ncclInit advice lines"),
    ("fixtures/healthy/nccl_info_chatter_0523.log", "NCCL_DEBUG=INFO start-up chatter of a healthy 0.5.23 launch"),
)


# -- (e) other real healthy-but-scary shapes ------------------------------------------------------

# (file, the thread it was pasted in); fixtures/healthy/ files, byte for byte what the thread shows
REAL_SHAPES = (
    ("fixtures/healthy/torch_nccl_env_dump_fragment.log", "https://github.com/meta-pytorch/torchforge/pull/55"),
    ("fixtures/healthy/nccl_ib_client_reregistration_after_init.log",
     "https://github.com/deepspeedai/DeepSpeedExamples/issues/310"),
    ("fixtures/healthy/diffusion_weights_not_initialized_warning_cut.log",
     "https://github.com/sgl-project/sglang/issues/18653"),
    ("fixtures/healthy/asgi_exception_group_one_request_cut.log", "https://github.com/sgl-project/sglang/issues/9963"),
    # (the thread's two-node run failed later, for a cause these lines do not hold; in them NCCL
    # ignores NCCL_ALGO=COLLNET and its set-up goes on)
    ("fixtures/healthy/collnet_ignored_nccl_algo_setup_goes_on.log", "https://github.com/NVIDIA/nccl-tests/issues/133"),
)


def measure_nccl(engine: "Engine", shapes=NCCL_SHAPES) -> dict:
    """Each real shape whole and under every robustness transform (d, and e with ``shapes``)."""
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for rel, _source in shapes:
        text = (ROOT / rel).read_bytes().decode("utf-8", "replace")
        _count(per["whole"], rel, engine.incidents(text), text)
        for tname in robustness.TRANSFORMS:
            sample = robustness.Sample(rel, "tune", robustness._split_lines(text), 0, "none", healthy=True)
            out = robustness.apply(tname, sample)
            if out is not None:
                _count(per[tname], rel, engine.incidents(keep_cut_end(text, out)), out)
    return per


# -- (c) the bait, from the inventories of SGLang's source --------------------------------------


def warning_sites(version: str = VERSION):
    data = json.loads((INVENTORY / f"warnings-{version}.json").read_text())
    for path, sites in data["files"].items():
        for line, func, kind, phase, template, _status, _rules in sites:
            yield {"file": path, "line": line, "function": func,
                   "kind": kind, "phase": phase, "template": template}


def _site_lines(site: dict, message: str) -> list[tuple]:
    return invw.rendered_lines(site, message)


# the older releases whose warning sites data/inventory holds too (scripts/inventory_warnings.py
# DEFAULT_VERSIONS): their sites as fragments, groups named ``form@version`` (session 32; the
# whole-log form of each is the inventory's own check)
OLDER_VERSIONS = tuple(v for v in invw.DEFAULT_VERSIONS if v != VERSION)


def bait_warnings(version: str = VERSION):
    """(form, name, text) fragments holding one healthy-run line of a warning/info site.  Not the
    sites whose line itself reports a failure (``reports_failure:`` of data/inventory/healthy-lines.yaml:
    a request's KV transfer that failed, a health probe with no answer), as the warnings
    inventory counts them apart.  A release other than VERSION names its forms ``form@version``."""
    failing = invw.failure_lines()
    tag = "" if version == VERSION else f"@{version}"
    for site in warning_sites(version):
        if invw.reports_failure(site, failing):
            continue
        for k, message in enumerate(invw.messages_of(site)[:2]):
            lines = _site_lines(site, message)
            name = f"{version}:{site['file']}:{site['line']}#{k}" if tag else f"{site['file']}:{site['line']}#{k}"
            if site["phase"] == "serving":
                yield "serving" + tag, name, _emit(SERVING_BEFORE + lines + SERVING_AFTER)
            else:
                yield "startup" + tag, name, _emit(STARTUP_BEFORE + lines + STARTUP_AFTER)
            yield "bare" + tag, name, _emit(lines)


def bait_older_warnings():
    """bait_warnings of every release in OLDER_VERSIONS."""
    for version in OLDER_VERSIONS:
        yield from bait_warnings(version)


# The exception types SGLang 0.5.23 answers with a 4xx (above, ``request_end``), read from its
# source: handle_request's ``except HTTPException`` / ``except ValueError`` / ``except
# DS32EncodingError``, and ValueError's subclasses raised on a request's path
# (sampling/watermarking/config.py WatermarkConfigError, responses_tools/beam.py
# ResponseToolChoiceError, constrained/json_schema_validation.py UnsupportedJSONSchemaFeature,
# json's JSONDecodeError); disaggregation/encoder/server.py BadRequestError (code 400).
ANSWERED_4XX = frozenset({"ValueError", "HTTPException", "DS32EncodingError", "JSONDecodeError",
                          "WatermarkConfigError", "ResponseToolChoiceError", "UnsupportedJSONSchemaFeature",
                          "BadRequestError"})


def request_sites(version: str = VERSION):
    data = json.loads((INVENTORY / f"sglang-{version}.json").read_text())
    for path, sites in data["files"].items():
        for line, func, kind, etype, template, disposition in sites:
            if kind == "raise" and disposition == "waiver:request_level" and etype:
                yield {"file": path, "line": line, "function": func, "type": etype, "template": template}


def request_traceback(site: dict, message: str) -> list[str]:
    """The traceback ``logger.exception`` prints below "Error in request: {e}" (serving_base's
    handle_request, down to the raising function)."""
    func = site["function"].rsplit(".", 1)[-1]
    etype = site["type"]
    if etype == "fastapi.HTTPException":
        etype = "fastapi.exceptions.HTTPException"
    return [
        "Traceback (most recent call last):",
        f'  File "{SITE}entrypoints/openai/serving_base.py", line 120, in handle_request',
        "    adapted_request, processed_request = self._convert_to_internal_request(",
        f'  File "{SITE}{site["file"][len("srt/"):]}", line {site["line"]}, in {func}',
        f"    raise {etype.rsplit('.', 1)[-1]}(",
        f"{etype}: {message}",
    ]


def bait_requests(version: str = VERSION):
    for site in request_sites(version):
        fills = invf.fillings(site["template"])
        message = fills[0] if fills else site["template"]
        message = message.replace("\u2026", "")
        tb = request_traceback(site, message)
        name = f"{site['file']}:{site['line']}"
        tail = [(False, 'INFO:     127.0.0.1:51754 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')]
        tail += SERVING_AFTER[1:] + SERVING_BEFORE
        header = [(False, f"Error in request: {message}")]
        yield "request", name, _emit(SERVING_BEFORE + header + [(None, t) for t in tb] + tail)
        yield "request_cut", name, _emit([(None, t) for t in tb] + tail)
        # the exception line alone (a paste of the message someone got back, or of the last line)
        yield "request_bare", name, _emit(SERVING_BEFORE + [(None, tb[-1])] + tail)
        # ... and where the paste ends right after it (nothing shows the server went on), for the
        # types SGLang answers with a 4xx (ANSWERED_4XX: the 400 line is what it prints after them)
        if site["type"].rsplit(".", 1)[-1] in ANSWERED_4XX:
            yield "request_end", name, _emit(SERVING_BEFORE + [(None, tb[-1])] + tail[:1])


# -- running ---------------------------------------------------------------------------------


class Engine(invw.Engine):
    pass


def _count(tally: dict, name: str, rules: list, text: str) -> None:
    """One text of a measure: a false alarm when any incident formed on it."""
    tally["texts"] += 1
    if rules:
        tally["false_alarms"] += 1
        tally["rules"].update(rules)
        tally["examples"].append((name, rules, text))


def measure_bait(engine: Engine, kinds=("warnings", "requests")) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    gens = {"warnings": bait_warnings, "requests": bait_requests, "older": bait_older_warnings}
    for gen in (gens[k] for k in kinds):
        for form, name, text in gen():
            _count(per[form], name, engine.incidents(text), text)
    return per


def measure_corpus(engine: Engine) -> tuple[dict, list]:
    per = {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []}
    quiet = []
    for part in TUNED_PARTS:
        for lab in accuracy.load_labels(part):
            path = accuracy.CORPUS / part / lab["file"]
            if lab.get("category") != "none" or not path.is_file():
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            rules = engine.incidents(text)
            _count(per, f"{part}/{lab['file']}", rules, "")
            if not rules:
                quiet.append((f"{part}/{lab['file']}", text))
    healthy = ROOT / "fixtures" / "healthy"
    for path in sorted(healthy.glob("*.log")) + sorted(REAL_RUNS.glob("*.log")):
        text = path.read_bytes().decode("utf-8", "replace")
        if not engine.incidents(text):
            quiet.append((str(path.relative_to(ROOT)), text))
    return per, quiet


_TAIL_CHARS = 12  # of a cut last line, enough to know it again in a transform's output


def keep_cut_end(source: str, out: str) -> str:
    """A transform's output with the source's own ending: robustness.Sample keeps a text's lines
    without their line ends, and most transforms end their output with one.  A source that ended
    inside its last line (a paste cut mid-line: corpus field20/001, fixtures/healthy/
    pd_client_abort_sibling_rank_cut.log) would then reach the tool with that line complete, a
    text nobody pasted; so when the output still ends with that line (quoted, prefixed, wrapped,
    coloured: its last characters are there), its trailing line ends go.  A transform that ends
    the text elsewhere (a ``</details>`` line, an excerpt) keeps its own ending, and so does every
    output of a source that ended with a line end (robustness.py feeds its outputs as they are:
    ``cut_key_tail`` ends inside a line on purpose)."""
    if not source or source.endswith("\n") or not out.endswith("\n"):
        return out
    tail = source.rsplit("\n", 1)[-1].rstrip()[-_TAIL_CHARS:]
    body = out.rstrip("\r\n")
    last = body.rsplit("\n", 1)[-1].rstrip()
    return body if tail and last.endswith(tail) else out


def measure_transforms(engine: Engine, quiet: list) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for tname in robustness.TRANSFORMS:
        for name, text in quiet:
            sample = robustness.Sample(name, "tune", robustness._split_lines(text), 0, "none", healthy=True)
            out = robustness.apply(tname, sample)
            if out is None:
                continue
            out = keep_cut_end(text, out)
            _count(per[tname], name, engine.incidents(out), out)
    return per


# -- (f) real healthy runs with third-party noise -------------------------------------------------

REAL_RUNS = ROOT / "fixtures" / "healthy" / "real-0.5.23"
NOISE = ROOT / "fixtures" / "healthy" / "noise" / "pieces.txt"


def noise_pieces(path: Path = NOISE) -> list[tuple[str, list[str]]]:
    """(name, lines) of each piece of ``pieces.txt`` ('### name | source' headers, '#' comments)."""
    pieces: list[tuple[str, list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith("### "):
            pieces.append((line[4:].split("|", 1)[0].strip(), []))
        elif pieces:
            pieces[-1][1].append(line)
    return pieces


def _insert(lines: list[str], at: int, piece: list[str]) -> list[str]:
    return lines[:at] + piece + lines[at:]


_RECORD_START = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def _boundaries(lines: list[str]) -> list[int]:
    """Indices of the lines that start one of SGLang's log records: where another process's
    output can land.  Python's logging writes a record (its traceback too) in one write, so a
    foreign line does not split one; the noise goes between records, never inside a traceback."""
    return [i for i, line in enumerate(lines) if _RECORD_START.match(line)] or [0]


def _positions(lines: list[str]) -> dict[str, int]:
    """Where a piece goes: before the second record, the middle one, the last one."""
    starts = _boundaries(lines)
    return {"start": starts[min(1, len(starts) - 1)], "middle": starts[len(starts) // 2], "end": starts[-1]}


def noise_texts(runs: Path = REAL_RUNS, path: Path = NOISE):
    """(group, name, text) of measure (f)."""
    pieces = noise_pieces(path)
    for log in sorted(runs.glob("*.log")):
        text = log.read_bytes().decode("utf-8", "replace")
        lines = robustness._split_lines(text)
        name = str(log.relative_to(ROOT)) if log.is_relative_to(ROOT) else str(log)
        yield "whole", name, text
        for pname, piece in pieces:
            for where, at in _positions(lines).items():
                yield "piece", f"{name}+{pname}@{where}", "\n".join(_insert(lines, at, piece)) + "\n"
        mixed = list(lines)
        starts = _boundaries(lines)
        for k, (_pname, piece) in enumerate(reversed(pieces)):  # from the end: indices stay valid
            mixed = _insert(mixed, starts[(len(starts) * (len(pieces) - k)) // (len(pieces) + 1)], piece)
        mixed_text = "\n".join(mixed) + "\n"
        yield "all", f"{name}+all", mixed_text
        for tname in robustness.TRANSFORMS:
            sample = robustness.Sample(name, "tune", mixed, 0, "none", healthy=True)
            out = robustness.apply(tname, sample)
            if out is not None:
                yield f"all:{tname}", f"{name}+all", out


# -- (g) healthy lines read in the libraries' sources ----------------------------------------------

SOURCES = ROOT / "fixtures" / "healthy" / "sources" / "pieces.txt"
SOURCE_CONTEXT = ROOT / "fixtures" / "healthy" / "nccl_info_chatter_0523.log"
# SGLang 0.5.23's lines of a SIGTERM stop (fixtures/healthy/real-0.5.23/session_sigterm.log)
SIGTERM_STOP = [
    "[2026-01-01 00:00:40] SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
    "[2026-01-01 00:00:41] Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].",
]
# where each place's code runs in the context: before the first line that holds the anchor
# (None: after the last line, the stop's lines appended)
PLACE_ANCHORS = {"rendezvous": "NCCL version", "nccl_init": "- Init COMPLETE", "startup": "Load weight begin",
                 "serving": "Decode batch", "exit": None}


def source_pieces(path: Path = SOURCES) -> list[tuple[str, str, list[str]]]:
    """(name, place, lines) of each piece ('### name | place | source' headers, '#' comments)."""
    pieces: list[tuple[str, str, list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith("### "):
            name, place = (field.strip() for field in line[4:].split("|")[:2])
            if place not in PLACE_ANCHORS:
                raise ValueError(f"{path}: piece {name!r} has an unknown place {place!r}")
            pieces.append((name, place, []))
        elif pieces and not line.startswith("#"):
            pieces[-1][2].append(line)
    return pieces


def _place_at(lines: list[str], place: str) -> int:
    anchor = PLACE_ANCHORS[place]
    if anchor is None:
        return len(lines)
    return next(i for i, line in enumerate(lines) if anchor in line)


def source_texts(path: Path = SOURCES, context: Path = SOURCE_CONTEXT):
    """(group, name, text) of measure (g)."""
    base = robustness._split_lines(context.read_text()) + SIGTERM_STOP
    for name, place, piece in source_pieces(path):
        at = _place_at(base, place)
        yield from placed(name, base, at, piece, robustness.TRANSFORMS)


def placed(name: str, base: list[str], at: int, piece: list[str], transforms):
    """``piece`` in a healthy launch ``base`` at line ``at`` ("context"), as the launch's last lines
    ("end"), alone ("bare"), and the context under each of ``transforms`` ("context:NAME")."""
    whole = "\n".join(base[:at] + piece + base[at:]) + "\n"
    yield "context", name, whole
    yield "end", name, "\n".join(base[:at] + piece) + "\n"
    yield "bare", name, "\n".join(piece) + "\n"
    for tname in transforms:
        sample = robustness.Sample(name, "tune", robustness._split_lines(whole), 0, "none", healthy=True)
        out = robustness.apply(tname, sample)
        if out is not None:
            yield f"context:{tname}", name, keep_cut_end(whole, out)


def measure_sources(engine: Engine) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for group, name, text in source_texts():
        _count(per["transformed" if group.startswith("context:") else group], name, engine.incidents(text), text)
    return per


# -- (h) tracebacks SGLang prints and goes on after ------------------------------------------------

# robustness transforms that put a prefix before every line, as a paste from docker / k8s / ray has it
PREFIX_TRANSFORMS = ("compose", "kubectl", "journald", "ray", "ansi", "quote", "crlf", "logger")
_GENERIC_CAUGHT = {"", "Exception", "BaseException"}


LIFE_READY = [(False, 'INFO:     127.0.0.1:33792 - "POST /generate HTTP/1.1" 200 OK'),
              (False, "The server is fired up and ready to roll!")] + SERVING_BEFORE


def handled_traceback(site: dict) -> list[str]:
    """What logging appends below the site's record: the caught exception's traceback, raised in
    the site's own function (the except clause's first type; RuntimeError for a bare or generic
    clause), with a message that names no failure of its own."""
    caught = next((c for c in site["caught"] if c.rsplit(".", 1)[-1] not in _GENERIC_CAUGHT), "RuntimeError")
    func = site["function"].rsplit(".", 1)[-1]
    return [
        "Traceback (most recent call last):",
        f'  File "{SITE}{site["file"][len("srt/"):]}", line {max(1, site["line"] - 3)}, in {func}',
        "    result = self._attempt(key)",
        f"{caught}: the attempt in {func} did not succeed",
    ]


def handled_lines(site: dict, message: str) -> list[tuple]:
    """The record and its traceback as each rank that runs the site prints them (a scheduler's
    record on TP0 and TP1, each with its own traceback below it; logging writes a record and its
    traceback in one write)."""
    tb = [(None, t) for t in handled_traceback(site)]
    if site["kind"] == "print_exc":
        return ([] if message == "(no message)" else [(None, message)]) + tb
    (tp, text), = invw.rendered_lines({**site, "kind": "log.error"}, message)
    stamp = "2026-01-01 00:00:30"
    if not tp:
        return [(None, f"[{stamp}] {text}")] + tb
    return [line for r in (0, 1) for line in [(None, f"[{stamp} TP{r}] {text}")] + tb]


def bait_handled(version: str = VERSION):
    """(group, name, text) of measure (h)."""
    tag = "" if version == VERSION else f"@{version}"
    for site in invh.iter_sites(invh.load(version)):
        if site["status"] != "handled" or site["kind"].startswith("log.debug"):
            continue  # (debug records are not printed at the default level)
        message = (invw.messages_of(site) or [site["template"]])[0].replace("\u2026", "")
        lines = handled_lines(site, message)
        words = "words" if site["words"] else "plain"
        name = f"{version}:{site['file']}:{site['line']}"
        # life: what shows the server went on, as the engine needs it (survived.py): two batch
        # lines after a serving record (SERVING_PROOF), the launch's ready line after a start-up one
        before, after = ((SERVING_BEFORE, SERVING_AFTER + SERVING_BEFORE) if site["phase"] == "serving"
                         else (STARTUP_BEFORE, STARTUP_AFTER + LIFE_READY))
        yield f"life:{words}{tag}", name, _emit(before + lines + after)
        end = _emit(before + lines)
        yield f"end:{words}{tag}", name, end
        yield f"cut:{words}{tag}", name, end.rstrip("\n")[:-12]
        yield f"bare:{words}{tag}", name, _emit(lines)
        for tname in PREFIX_TRANSFORMS:
            sample = robustness.Sample(name, "tune", robustness._split_lines(end), 0, "none", healthy=True)
            out = robustness.apply(tname, sample)
            if out is not None:
                yield f"prefixed:{words}{tag}", name, out


# -- (i) NCCL's and torch.distributed's own sites ---------------------------------------------------

# the robustness transforms (i) applies to a site's line in its launch: the prefixes a paste from
# docker / k8s / ray puts on every line, two ranks' copies interleaved, a hard wrap, a cut start
SITE_TRANSFORMS = PREFIX_TRANSFORMS + ("rank_lines", "rank_copy", "wrap80", "cut_top")


def site_texts(path: Path = invn.OUT, context: Path = SOURCE_CONTEXT):
    """(group, name, text) of measure (i): every ``survived`` and ``info`` site of
    data/inventory/nccl-sites.json, its line where NCCL's set-up runs in a healthy TP2 launch
    (``context``), the launch cut right after it (``end``), alone (``bare``), and ``context``
    under SITE_TRANSFORMS."""
    base = robustness._split_lines(context.read_text()) + SIGTERM_STOP
    at = _place_at(base, "nccl_init")
    for site in json.loads(path.read_text())["entries"]:
        if site["disposition"] not in ("survived", "info"):
            continue
        line, name = invn.render(site), f"{site['file']}:{site['line']}"
        yield from placed(name, base, at, [line], SITE_TRANSFORMS)


def measure_sites(engine: Engine) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for group, name, text in site_texts():
        _count(per[group], name, engine.incidents(text), text)
    return per


def measure_handled(engine: Engine) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for version in invh.DEFAULT_VERSIONS:
        for group, name, text in bait_handled(version):
            _count(per[group], name, engine.incidents(text), text)
    return per


def measure_noise(engine: Engine) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for group, name, text in noise_texts():
        _count(per[group.split(":")[0]], name, engine.incidents(text), text)
    return per


# -- (j) real healthy-but-scary runs, whole, cut at each scary point, alone, transformed ----------

RUN_DIRS = (ROOT / "fixtures" / "healthy" / "real_runs", ROOT / "fixtures" / "healthy" / "real-0.5.23")
RUN_FILES = (ROOT / "fixtures" / "real" / "healthy_sigterm_0523.log", ROOT / "fixtures" / "real" / "healthy_ctrl_c_0523.log")
RUN_TRANSFORMS = PREFIX_TRANSFORMS + ("rank_lines", "rank_copy", "wrap80")
# a line with a failure's words: what makes a healthy log look like a failure to a reader
SCARY = re.compile(r"Traceback|Error|Exception|error|[Ff]ail|FAIL|[Aa]bort|[Kk]illed|\bSIG[A-Z]{3,}|[Cc]rash|"
                   r"refus|[Ii]nvalid|not (?:found|supported|loaded|allowed)|exceed|[Ww]arning|WARN|[Tt]imeout|"
                   r"[Dd]enied|is full|\" [45]\d\d [A-Z]")
# where a record starts: SGLang's header, uvicorn's level prefix, a shell's report of its child
_RUN_RECORD = re.compile(r"^(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s|bash: )")
_DIGITS = re.compile(r"\d+")
# SGLang's own report of a process's end (its launcher's watchdog, its SIGQUIT handler, a
# scheduler's exception, a shell's Killed): a record holding one reads as a death when it is
# pasted alone, whatever the lines around it in the run said (a stop's); ``bare:dies`` counts
# those apart, as (h) counts its ``plain`` group: unknown stays unknown, not a goal
DEATH_REPORT = re.compile(r"crashed with exit code|SIGQUIT received|Received sigquit|hit an exception|"
                          r"\bKilled\b|exit code:? -?[1-9]")


def run_logs() -> list[Path]:
    return [p for d in RUN_DIRS for p in sorted(d.glob("*.log"))] + [p for p in RUN_FILES if p.is_file()]


def scary_records(lines: list[str]) -> list[tuple[int, int, int]]:
    """(start, scary line, end) of each record holding a line with a failure's words, ``end``
    exclusive; a record whose text (numbers aside) came before in the log is left out."""
    starts = [i for i, line in enumerate(lines) if _RUN_RECORD.match(line)]
    bounds = list(zip([0] + starts, starts + [len(lines)]))
    seen: set[str] = set()
    out = []
    for start, end in bounds:
        if start == end:
            continue
        scary = next((i for i in range(start, end) if SCARY.search(lines[i])), None)
        if scary is None:
            continue
        body = [_RECORD_START.sub("", line) for line in lines[start:end]]
        key = _DIGITS.sub("0", "\n".join(body))
        if key not in seen:
            seen.add(key)
            out.append((start, scary, end))
    return out


# a record of a rank (``[time TPn]``): a launch with several ranks, whose records really meet
_RANK_TAG = re.compile(r"^\[[^\]]* (?:TP|DP|PP|EP)\d+\]", re.M)
RANK_TRANSFORMS = ("rank_lines", "rank_copy")


def _transformed(group: str, name: str, lines: list[str], key: int, source: str):
    """``lines`` under RUN_TRANSFORMS; the rank transforms only where ranks print (a TP1 launch's
    one process never prints its lines twice)."""
    ranks = _RANK_TAG.search(source) is not None
    for tname in RUN_TRANSFORMS:
        if tname in RANK_TRANSFORMS and not ranks:
            continue
        sample = robustness.Sample(name, "tune", lines, key, "none", healthy=True)
        out = robustness.apply(tname, sample)
        if out is not None:
            yield f"{group}:{tname}", name, keep_cut_end(source, out)


def run_texts(logs=None):
    """(group, name, text) of measure (j)."""
    for log in logs if logs is not None else run_logs():
        text = log.read_bytes().decode("utf-8", "replace")
        lines = robustness._split_lines(text)
        name = str(log.relative_to(ROOT)) if log.is_relative_to(ROOT) else str(log)
        yield "whole", name, text
        yield from _transformed("whole", name, lines, len(lines) - 1, text)
        for start, scary, end in scary_records(lines):
            where = f"{name}:{scary + 1}"
            cut = lines[:end]
            yield "end", where, "\n".join(cut) + "\n"
            bare = "\n".join(lines[start:end]) + "\n"
            yield ("bare:dies" if DEATH_REPORT.search(bare) else "bare"), where, bare
            yield from _transformed("end", where, cut, scary, "\n".join(cut) + "\n")


def measure_runs(engine: Engine, logs=None) -> dict:
    per = defaultdict(lambda: {"texts": 0, "false_alarms": 0, "rules": Counter(), "examples": []})
    for group, name, text in run_texts(logs):
        _count(per[group], name, engine.incidents(text), text)
    return per


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("corpus", "transforms", "bait", "nccl", "real", "noise", "sources", "handled",
                                       "sites", "runs"), action="append")
    ap.add_argument("--bait", choices=("warnings", "requests", "older"), action="append",
                    help="which bait to generate (default: all three; older: the warning sites of "
                         "OLDER_VERSIONS)")
    ap.add_argument("--show", type=int, default=0, help="print up to N false alarms per group (with text)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    only = set(args.only or ("corpus", "transforms", "bait", "nccl", "real", "noise", "sources", "handled", "sites",
                             "runs"))
    engine = Engine()
    result: dict = {}
    corpus, quiet = measure_corpus(engine) if only & {"corpus", "transforms"} else (None, [])
    if "corpus" in only:
        result["corpus"] = {"all": corpus}
    if "transforms" in only:
        result["transforms"] = measure_transforms(engine, quiet)
    if "bait" in only:
        result["bait"] = measure_bait(engine, tuple(args.bait or ("warnings", "requests", "older")))
    if "nccl" in only:
        result["nccl"] = measure_nccl(engine)
    if "real" in only:
        result["real"] = measure_nccl(engine, REAL_SHAPES)
    if "noise" in only:
        result["noise"] = measure_noise(engine)
    if "sources" in only:
        result["sources"] = measure_sources(engine)
    if "handled" in only:
        result["handled"] = measure_handled(engine)
    if "sites" in only:
        result["sites"] = measure_sites(engine)
    if "runs" in only:
        result["runs"] = measure_runs(engine)
    if args.json:
        print(json.dumps({m: {g: {"texts": c["texts"], "false_alarms": c["false_alarms"], "rules": dict(c["rules"])}
                              for g, c in groups.items()} for m, groups in result.items()}, indent=1, sort_keys=True))
        return 0
    for measure, groups in result.items():
        tot = sum(c["texts"] for c in groups.values())
        fa = sum(c["false_alarms"] for c in groups.values())
        print(f"== {measure}: false alarms {fa} of {tot}")
        for g, c in sorted(groups.items()):
            print(f"  {g:<16} {c['false_alarms']:>4} of {c['texts']:<5} {dict(c['rules'].most_common(6))}")
            for name, rules, text in c["examples"][:args.show]:
                print(f"    - {name}: {rules}")
                if text:
                    print("      " + text.rstrip("\n").replace("\n", "\n      ")[:1500])
    return 0


if __name__ == "__main__":
    sys.exit(main())
