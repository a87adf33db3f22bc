#!/usr/bin/env python3
"""Every SGLang failure site in the shapes people paste it in: which category the engine names.

``scripts/inventory_failures.py --measure`` puts each user-facing site of a release into ONE
full, tidy log (launch header, the phase's milestone lines, the scheduler's traceback).  Wild
pastes are rarely that tidy.  This renders each site's message (the inventory's fillings, the
same sample values the measure uses) into the shapes pastes really have, each on its own, and
runs the engine (every layer in rules/) on each:

- ``bare``: the exception line alone (``ValueError: message``; a logged site: its text alone);
- ``wrapped``: SGLang's ``Scheduler hit an exception: Traceback`` (scheduler.py
  run_scheduler_process) with the site's own frame and the exception line, no launch header and
  no milestone lines;
- ``cut``: that traceback cut above its last line (the frames down to the site's, no exception
  line), as a paste that stops one line early has it;
- ``prefixed``: the wrapped traceback behind a log collector's prefix: docker compose
  (``sglang-1  | ``), Ray (``(SchedulerActor pid=4242) ``) or kubectl ``--prefix``
  (``[pod/sglang-0/sglang] ``), one per site in turn;
- ``dead``: the wrapped traceback followed by what the launching process prints after it
  (engine.py: ``Received sigquit from a child process...``, ``Rank 0 scheduler is dead...``,
  ``Exit code: -9`` and its own ``EOFError`` traceback through _wait_for_scheduler_ready);
- ``spawned``: an argument check's exception inside torch's ``ProcessRaisedException``
  wrapper (torch/multiprocessing/spawn.py: ``-- Process 0 terminated with the following
  error:``), as an ``sgl.Engine(...)`` started under ``mp.spawn`` (RL frameworks) prints it
  (argument checks only: every other site raises in the scheduler's subprocess);
- ``logged``: a logger site's line with SGLang's header (``[time TP0] message``) and nothing
  else (logger sites only).

Paste shapes of session 36 (what a launcher, a collector or a terminal makes of the same site):

- ``message``: the message alone, no exception type (a raise site's ``str(e)`` as a wrapper
  prints it; logger sites have this as ``bare`` already);
- ``logger``: that message on another logger's ERROR line, one format per site in turn:
  logging's default ``ERROR:name:message``, the common ``date - name - ERROR - message`` and
  a bracketed date with a level word (``[date] ERROR message``);
- ``launcher``: the exception inside a launcher's own exception line, one per site in turn:
  ``Exception: ValueError: message`` (a wrapper that re-raises ``Exception(str(e))`` with the
  type) and ``RuntimeError: message (exit code 1)`` (one that reports the child's exit);
- ``chained``: the site's plain traceback, then Python's ``The above exception was the direct
  cause of the following exception:`` and the launcher's own traceback (``raise ... from e``);
- ``ray_task``: Ray's ``ray.exceptions.RayTaskError(ValueError): ray::Actor.method() (pid=N,
  ip=...)`` with the remote frames and the exception line (an actor that built the engine);
- ``json``: the scheduler's record as one JSON object per line (a structured log collector:
  ``{"level": "ERROR", "message": "Scheduler hit an exception: Traceback ...\\n..."}``);
- ``frames_only``: the traceback with its ``File`` lines only (the source lines dropped by a
  tool or a paste), header and exception line kept, no SGLang record header;
- ``termwrap``: the wrapped traceback hard-wrapped at a terminal's 80 columns.

Session 36 figures (0.5.23, ``--every 20``, right / sites, no incident): message 11/401 (376),
logger 8/402 (389): a message no rule knows, alone on a line with no type, frame or signal,
forms no incident (nothing in the text says it failed; the honest fallback speaks for it);
launcher 72/401 -> 151/401 after assemble._with_wrapped (the rest are the ``bare`` shape's
class.runtime.after_ready readings of a phase-less exception line); chained 251/401 (the
launcher's own exception is the root the rules read); ray_task 336/401 and frames_only 336/401;
json 396/401; termwrap 257/401 (a folded ``File`` line loses the frame the class rules read).

A native site (a C++ ``c10::Error``) is not in the inventory (it reads Python only), so there is
no C++ shape here.

The expected category is the inventory's (``right_answer``: the site's disposition, and for a
waiver its category); sites whose right answer is ``none`` or ``excluded`` are skipped, and so
are sites whose right answer depends on the phase (the shapes carry no milestone lines, so the
phase is not in them): those are counted as ``phase_dependent``.  A shape is right when the
engine's incidents include the expected category.

Usage: ``python bench/site_shapes.py [--version 0.5.23] [--shapes bare wrapped ...] [--every N]
[--verbose]``.  Reads the shipped inventory (data/inventory/) and the release's wheel (for the
site's source line; ``raise ...`` stands in when the wheel is not there).
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402

SHAPES = ("bare", "wrapped", "cut", "prefixed", "dead", "spawned", "logged",
          "message", "logger", "launcher", "chained", "ray_task", "json", "frames_only", "termwrap")
STAMP = "2026-01-01 00:00:30"
PREFIX = inv_mod.PREFIX
PREFIXES = ("sglang-1  | ", "(SchedulerActor pid=4242) ", "[pod/sglang-0/sglang] ")


class Sources:
    """The source lines of a release's wheel (the site's own line in its frame)."""

    def __init__(self, version: str):
        self.zf = None
        try:
            wheel = inv_mod.find_wheel(version, inv_mod.default_wheel_dir(), download=False)
            self.zf = zipfile.ZipFile(wheel)
        except Exception:  # no wheel here: frames show "raise ..."
            self.zf = None
        self.cache: dict[str, list[str]] = {}

    def line(self, site: dict) -> str:
        stand_in = "assert ..." if site["kind"] == "assert" else "raise ..."
        if self.zf is None:
            return stand_in
        path = "sglang/" + site["file"]
        if path not in self.cache:
            try:
                self.cache[path] = self.zf.read(path).decode("utf-8", errors="replace").splitlines()
            except KeyError:
                self.cache[path] = []
        lines = self.cache[path]
        n = site["line"] - 1
        return lines[n].strip() if 0 <= n < len(lines) and lines[n].strip() else stand_in


def exception_name(site: dict) -> str:
    if site["kind"] == "assert":
        return "AssertionError"
    if site["kind"].endswith(".raise") or site["kind"].startswith("log"):
        return "RuntimeError"
    return site["exception"] or "RuntimeError"


def site_frame(site: dict, source: str) -> str:
    func = site["function"].rsplit(".", 1)[-1]
    return f'  File "{PREFIX}{site["file"]}", line {site["line"]}, in {func}\n    {source}\n'


def scheduler_traceback(site: dict, message: str, source: str, last_line: bool = True, phase: str = "unknown") -> str:
    """scheduler.py run_scheduler_process: ``logger.error(f"Scheduler hit an exception: {tb}")``;
    a site that fails while serving passes through the event loop (as --measure's logs do),
    the others through the Scheduler's construction."""
    if phase == "serving":
        entry = ("    scheduler.run_event_loop()\n"
                 f'  File "{PREFIX}srt/managers/scheduler.py", line 1201, in event_loop_overlap\n'
                 "    batch_result = self.run_batch(batch)\n")
    else:
        entry = "    scheduler = Scheduler(server_args, port_args)\n"
    text = (f"[{STAMP} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            f'  File "{PREFIX}srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
            + entry + site_frame(site, source))
    if last_line:
        text += f"{exception_name(site)}: {message}\n"
    return text + "\n"


# engine.py _wait_for_scheduler_ready (0.5.x): the launcher's lines after a scheduler died
DEAD_EPILOGUE = (
    f"[{STAMP}] Received sigquit from a child process. It usually means the child failed.\n"
    f"[{STAMP}] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
    f"[{STAMP}] Exit code: -9\n"
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '  File "<frozen runpy>", line 88, in _run_code\n'
    f'  File "{PREFIX}launch_server.py", line 32, in <module>\n'
    "    launch_server(server_args)\n"
    f'  File "{PREFIX}srt/entrypoints/http_server.py", line 1524, in launch_server\n'
    "    tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(\n"
    f'  File "{PREFIX}srt/entrypoints/engine.py", line 982, in _launch_subprocesses\n'
    "    scheduler_infos = _wait_for_scheduler_ready(scheduler_pipe_readers, scheduler_procs)\n"
    f'  File "{PREFIX}srt/entrypoints/engine.py", line 897, in _wait_for_scheduler_ready\n'
    "    data = scheduler_pipe_readers[i].recv()\n"
    '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 250, in recv\n'
    "    buf = self._recv_bytes()\n"
    '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 430, in _recv_bytes\n'
    "    buf = self._recv(4)\n"
    '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 399, in _recv\n'
    "    raise EOFError\n"
    "EOFError\n"
)

TORCH = "/usr/local/lib/python3.12/dist-packages/torch/multiprocessing/spawn.py"


ARGUMENT_CHECKS = ("srt/server_args", "srt/arg_groups/", "srt/utils/server_args_config_parser")


def spawned(site: dict, message: str, source: str) -> str | None:
    """torch/multiprocessing/spawn.py: ``ProcessContext.join`` raises ProcessRaisedException
    with ``-- Process N terminated with the following error:`` and the child's traceback.  Only
    an argument check raises in the process that called ``sgl.Engine(...)`` (0.5.23 engine.py
    _launch_subprocesses: ``server_args.resolve_once()`` -> arg_groups/pipeline.py's hooks);
    every other site runs in the scheduler's own subprocess, whose failure reaches the caller
    as "Initialization failed" or an EOFError, not as the site's message."""
    if not site["file"].startswith(ARGUMENT_CHECKS):
        return None
    func = site["function"].rsplit(".", 1)[-1]
    chain = (f'  File "{PREFIX}srt/entrypoints/engine.py", line 1153, in _launch_subprocesses\n'
             "    server_args.resolve_once()\n"
             f'  File "{PREFIX}srt/server_args.py", line 277, in resolve_once\n'
             "    run_resolution_pipeline(self)\n")
    if site["file"].startswith("srt/arg_groups/") and not site["file"].endswith("pipeline.py"):
        chain += (f'  File "{PREFIX}srt/arg_groups/pipeline.py", line 45, in run_resolution_pipeline\n'
                  f"    run_hook({func}, server_args)\n")
    return ("Traceback (most recent call last):\n"
            '  File "/workspace/rollout.py", line 41, in <module>\n'
            "    mp.spawn(run_engine, args=(cfg,), nprocs=2)\n"
            f'  File "{TORCH}", line 340, in spawn\n'
            '    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")\n'
            f'  File "{TORCH}", line 296, in start_processes\n'
            "    while not context.join():\n"
            f'  File "{TORCH}", line 215, in join\n'
            "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
            "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
            "-- Process 0 terminated with the following error:\n"
            "Traceback (most recent call last):\n"
            f'  File "{TORCH}", line 90, in _wrap\n'
            "    fn(i, *args)\n"
            '  File "/workspace/rollout.py", line 22, in run_engine\n'
            "    engine = sgl.Engine(**cfg)\n"
            f'  File "{PREFIX}srt/entrypoints/engine.py", line 336, in __init__\n'
            "    ) = self._launch_subprocesses(\n"
            + chain + site_frame(site, source)
            + f"{exception_name(site)}: {message}\n")


LOGGER_LINES = ("ERROR:sglang.srt.managers.scheduler:{m}",
                "2026-01-01 00:00:30,123 - sglang.launcher - ERROR - {m}",
                "[2026-01-01 00:00:30] ERROR {m}")
LAUNCHER_LINES = ("Exception: {t}: {m}", "RuntimeError: {m} (exit code 1)")
CHAINED_TAIL = ("\nThe above exception was the direct cause of the following exception:\n\n"
                "Traceback (most recent call last):\n"
                '  File "/workspace/launch.py", line 30, in main\n'
                "    engine = sgl.Engine(**cfg)\n"
                "RuntimeError: failed to start the SGLang engine\n")


def plain_traceback(site: dict, message: str, source: str, *, sources: bool = True) -> str:
    """The site's traceback as Python prints it, no SGLang record header (``sources``: with
    the source line under each frame)."""
    frame = site_frame(site, source)
    if not sources:
        frame = frame.splitlines()[0] + "\n"
    return ("Traceback (most recent call last):\n"
            + (f'  File "{PREFIX}srt/managers/scheduler.py", line 3100, in run_scheduler_process\n'
               + ("    scheduler = Scheduler(server_args, port_args)\n" if sources else ""))
            + frame + f"{exception_name(site)}: {message}\n")


def hard_wrap(text: str, width: int = 80) -> str:
    out = []
    for line in text.splitlines():
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out) + "\n"


def render_new(shape: str, site: dict, message: str, source: str, index: int, phase: str,
               logged_only: bool) -> str | None:
    """Session 36's shapes (module docstring)."""
    etype = exception_name(site)
    if shape == "message":
        return None if logged_only else message + "\n"
    if shape == "logger":
        return LOGGER_LINES[index % len(LOGGER_LINES)].format(m=message) + "\n"
    if logged_only:
        return None
    if shape == "launcher":
        return LAUNCHER_LINES[index % len(LAUNCHER_LINES)].format(t=etype, m=message) + "\n"
    if shape == "chained":
        return plain_traceback(site, message, source) + CHAINED_TAIL
    if shape == "ray_task":
        func = site["function"].rsplit(".", 1)[-1]
        return (f"ray.exceptions.RayTaskError({etype.rsplit('.', 1)[-1]}): ray::SGLangRollout.__init__() "
                "(pid=4242, ip=10.0.0.2, actor_id=8f1c2a, repr=<SGLangRollout object at 0x7f00>)\n"
                '  File "/workspace/rollout.py", line 22, in __init__\n'
                "    self.engine = sgl.Engine(**cfg)\n"
                + site_frame(site, source) + f"{etype}: {message}\n") if func else None
    if shape == "json":
        record = {"time": "2026-01-01T00:00:30Z", "level": "ERROR", "logger": "sglang.srt.managers.scheduler",
                  "message": "Scheduler hit an exception: " + scheduler_traceback(site, message, source, phase=phase)
                  .split("Scheduler hit an exception: ", 1)[1].rstrip("\n")}
        return json.dumps(record) + "\n"
    if shape == "frames_only":
        return plain_traceback(site, message, source, sources=False)
    if shape == "termwrap":
        return hard_wrap(scheduler_traceback(site, message, source, phase=phase))
    raise ValueError(shape)


def render(shape: str, site: dict, message: str, source: str, index: int = 0, phase: str = "unknown") -> str | None:
    """The paste of one shape for a site, or None when the shape does not apply to it (a
    logger site has only its line; a site that fails while serving is not raised through
    ``mp.spawn``'s child: the engine's constructor has returned by then)."""
    logged_only = site["kind"].startswith("log") and not site["kind"].endswith(".raise")
    if shape in SHAPES[7:]:
        return render_new(shape, site, message, source, index, phase, logged_only)
    if shape == "logged":
        return f"[{STAMP} TP0] {message}\n" if logged_only else None
    if logged_only:
        return message + "\n" if shape == "bare" else None
    if shape == "bare":
        return f"{exception_name(site)}: {message}\n"
    if shape == "wrapped":
        return scheduler_traceback(site, message, source, phase=phase)
    if shape == "cut":
        return scheduler_traceback(site, message, source, last_line=False, phase=phase)
    if shape == "prefixed":
        prefix = PREFIXES[index % len(PREFIXES)]
        return "".join(prefix + line + "\n" for line in scheduler_traceback(site, message, source, phase=phase).splitlines())
    if shape == "dead":
        # engine.py _wait_for_scheduler_ready: a start-up death only (serving has no such wait)
        return None if phase == "serving" else scheduler_traceback(site, message, source, phase=phase) + DEAD_EPILOGUE
    if shape == "spawned":
        return None if phase == "serving" else spawned(site, message, source)
    raise ValueError(shape)


def expected(site: dict, disp, categories: dict, class_by_phase: dict) -> str | None:
    """The site's category whatever its phase; None when it depends on the phase."""
    phase = disp.phase(site)
    want = inv_mod.right_answer(site, disp, categories, phase, class_by_phase)
    if want != inv_mod.right_answer(site, disp, categories, "unknown", class_by_phase):
        return None
    return want


def run(version: str, shapes: tuple[str, ...] = SHAPES, every: int = 1, verbose: bool = False) -> dict:
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import StreamPipeline

    inv = inv_mod.load_inventory(ROOT / "data" / "inventory" / f"sglang-{version}.json")
    disp = inv_mod.Dispositions.load()
    ruleset = RuleSet.load(builtin=True, user=False)
    categories = inv_mod.class_categories()
    categories.update({r.id: r.category for r in ruleset.rules})
    class_by_phase = inv_mod.class_phase_categories()
    sources = Sources(version)
    result = {s: {"sites": 0, "right": 0, "by_category": {}, "answered": Counter()} for s in shapes}
    misses: dict[str, Counter] = {s: Counter() for s in shapes}
    skipped = Counter()
    for i, site in enumerate(inv_mod.iter_sites(inv)):
        if i % every:
            continue
        want = expected(site, disp, categories, class_by_phase)
        if want is None:
            skipped["phase_dependent"] += 1
            continue
        if want in ("none", "excluded"):
            skipped[want] += 1
            continue
        kind, _, name = site["disposition"].partition(":")
        message = None
        if kind == "rule":  # the fillings that make the message the rule credited (as --measure)
            rule = ruleset.get(name)
            logged = site["kind"].startswith("log") and not site["kind"].endswith(".raise")
            rx = None if rule is None else (rule.line_rx if logged or rule.message is None else rule.message)
            message = next((t for t in inv_mod.fillings(site["full"] or site["template"])
                            if rx is not None and rx.search(t)), None)
        if message is None:
            message = inv_mod.fillings(site.get("full") or site["template"])[0]
        if not message.strip():
            skipped["empty"] += 1
            continue
        source = sources.line(site)
        for shape in shapes:
            text = render(shape, site, message, source, i, disp.phase(site))
            if text is None:
                continue
            pipe = StreamPipeline(ruleset, remediate=False)
            events = pipe.feed(text.encode()) + pipe.finish()
            got = [(ev["category"], ev.get("rule")) for ev in events if ev["event"] == "incident"]
            cats = [c for c, _ in got]
            r = result[shape]
            r["sites"] += 1
            per = r["by_category"].setdefault(want, {"sites": 0, "right": 0, "as": Counter()})
            per["sites"] += 1
            if want in cats:
                r["right"] += 1
                per["right"] += 1
                continue
            answer = cats[-1] if cats else "no incident"
            per["as"][answer] += 1
            r["answered"][answer] += 1
            misses[shape][f"{want} -> {answer} [{got[-1][1] if got else '-'}] "
                          f"{site['file'].rsplit('/', 1)[-1]}::{site['function']} {message[:90]!r}"] += 1
    if verbose:
        for shape in shapes:
            for key, n in misses[shape].most_common():
                print(f"  {shape:8s} {n:3d} {key}")
    for r in result.values():
        r["answered"] = dict(r["answered"].most_common())
        for per in r["by_category"].values():
            per["as"] = dict(per["as"].most_common())
    return {"version": version, "every": every, "skipped": dict(skipped), "shapes": result}


def print_result(res: dict, per_category: bool = True) -> None:
    print(f"sglang {res['version']} (every {res['every']}; skipped {res['skipped']})")
    for shape, r in res["shapes"].items():
        share = 100 * r["right"] / r["sites"] if r["sites"] else 0.0
        print(f"  {shape:11s} {r['right']:5d}/{r['sites']:<5d} {share:5.1f}%  no incident {r['answered'].get('no incident', 0):4d}"
              f"  misses as {r['answered']}")
        if per_category:
            for cat, per in sorted(r["by_category"].items()):
                if per["right"] < per["sites"]:
                    print(f"      {cat:24s} {per['right']:5d}/{per['sites']:<5d} as {per['as']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default="0.5.23")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--every", type=int, default=1, help="every Nth site only (a deterministic sample)")
    ap.add_argument("--verbose", action="store_true", help="list the misses")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if args.every < 1:
        ap.error("--every must be at least 1")
    if not (ROOT / "data" / "inventory" / f"sglang-{args.version}.json").is_file():
        print(f"site_shapes: no inventory for sglang {args.version} in data/inventory/", file=sys.stderr)
        return 2
    res = run(args.version, tuple(args.shapes), args.every, args.verbose)
    if args.json:
        print(json.dumps(res, indent=1, sort_keys=True))
    else:
        print_result(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
