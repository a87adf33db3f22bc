"""The rule engine: YAML rules (docs/DESIGN.md, "Rule files") matched against incidents.

Rules are data.  Loading validates every rule and reports each problem as
``file:line: message``; regexes are compiled once with the ``regex`` package and searched
with a timeout, so a catastrophic pattern in a user rule skips that rule for that incident
(reported in ``RuleSet.warnings``) instead of hanging the tool.  Candidate rules are found
through an index on exception type and required literals, so the cost per incident stays
flat as the pack grows.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any


from sglang_doctor.diagnose import fallback
from sglang_doctor.diagnose.fallback import unknown_diagnosis
from sglang_doctor.incidents.assemble import RULE_LITERAL_SIGNAL
from sglang_doctor.incidents.milestones import last_before, phase_after
from sglang_doctor.incidents.cut_match import greedy as _greedy  # noqa: F401  (tests)
from sglang_doctor.incidents.cut_match import held_words as _held_words
from sglang_doctor.incidents.cut_match import literal_words as _literal_words  # noqa: F401
from sglang_doctor.incidents.cut_match import head_match, starts_with_literal_tail, tail_match, words_share
from sglang_doctor.incidents.tracebacks import CUT_MARK, cut_type_matches, inner_type, sglang_frames
from sglang_doctor.model import CATEGORIES, PHASES, Diagnosis, Incident, Launch

REGEX_TIMEOUT = 0.05
# A rule whose matching has cost RULE_TIME_BUDGET in total in one run, at more than
# SLOW_MATCH per incident on average, is dropped for the rest of it: a regex just under
# REGEX_TIMEOUT on every incident would otherwise never be stopped (a fast rule over a
# great many incidents is not "slow" and stays).
# The cost is the matching thread's own CPU time (time.thread_time), not wall time: other
# processes on a busy machine, or one stall, must not change which rules a log is matched
# against (that made diagnoses depend on the machine's load).  A rule is judged only after
# SLOW_TRIES incidents, so a one-off cost (a first compile) cannot drop it either.
RULE_TIME_BUDGET = 1.0
SLOW_MATCH = 0.005
SLOW_TRIES = 5
TRUNCATED_FRAMES_ONLY_FACTOR = 0.6
ASSUMED_FACTOR = 0.85  # per condition the log did not say and that was assumed
CLASS_PREFIX = "class."  # class rules (rules/classes.yaml): matched after every specific rule
CLASS_MAX_CONFIDENCE = 0.7  # a class rule is always less sure than a specific one

REMEDIES = (
    "plan_memory", "set_flag", "raise_flag", "lower_flag", "unset_flag", "set_env", "disable_feature",
    "closest_flag", "change_port", "upgrade_sglang", "needs_human", "flag_named",
    "allocator_fragmentation", "isolate_features", "switch_backend", "drop_feature",
    "disable_in_frames", "env_named", "drop_in_frames", "kv_cache_dtype_step", "expert_parallel",
    "divisor_size", "deepgemm_off",
    "refusal_fix",
    "written_switch",  # args23: argparse's "ignored explicit argument" for a switch
    "choice_elsewhere",  # args23: an "invalid choice" that another release accepts
    "lower_prefill_budget",  # field30: the chunk, or --max-prefill-tokens when chunking was off
    "site_switch_off",  # args35: the switch an argument check's guard needs on, removed
)
RULE_KEYS = {
    "id", "category", "phase", "title", "priority", "confidence", "status", "versions", "match", "explanation",
    "remedy", "examples", "counter_examples", "references", "doc", "category_by_phase",
}
REQUIRED_KEYS = ("id", "category", "phase", "title", "match", "explanation")
MATCH_KEYS = {"kind", "exception", "message", "in_chain", "frames", "line", "literal", "context", "after_ready",
              "truncated", "deepest_frame_module", "message_any", "deepest_frame_module_not", "names_setting",
              "assert_source", "signal", "line_also", "outside_sglang", "argument_site"}
FRAME_KEYS = {"any", "all", "sequence"}


class RuleLoadError(Exception):
    """One or more rule files are invalid; ``problems`` holds ``file:line: message`` strings."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Rule:
    id: str
    category: str
    phase: str
    title: str
    explanation: str
    source: str
    line: int
    priority: int = 0
    confidence: float = 0.9
    kind: str | None = None
    exceptions: tuple[str, ...] = ()
    message: Any = None
    message_needs: str | None = None  # text every match of ``message`` holds (required_head)
    in_chain: bool = False
    frames_any: tuple[str, ...] = ()
    frames_all: tuple[str, ...] = ()
    frames_sequence: tuple[str, ...] = ()
    line_rx: Any = None
    literals: tuple[str, ...] = ()
    # what makes a line failure evidence for the assembler: any line holding a literal
    # (False, the default) or only a line the ``line`` pattern matches (``signal: line``)
    signal_by_line: bool = False
    context: dict[str, Any] = field(default_factory=dict)
    after_ready: bool | None = None
    truncated: bool | None = None  # match only incidents whose end is (not) missing
    deepest_frame: tuple[str, ...] = ()  # "path part" or "path part:function" of the deepest SGLang frame
    message_any: tuple[str, ...] = ()  # lower-case keywords, one of which is in the exception/signal text
    deepest_not: tuple[str, ...] = ()  # the deepest SGLang frame is in none of these (same form as deepest_frame)
    names_setting: bool | None = None  # the exception message does (not) name a setting a user makes
    # (args35) the exception line, with no SGLang frame above it, is (not) the message of one of
    # SGLang's argument checks (diagnose/argument_sites.py, from the releases' inventories)
    argument_site: bool | None = None
    # a regex searched in the source line of the deepest frame of a bare ``AssertionError`` (no
    # message): the assert statement is then the only text the check has
    assert_source: Any = None
    # a regex one line of the incident must also match, besides ``line``'s: not a trigger (it has
    # no literal, so it never forms an incident of its own), only read in the incident that
    # ``line``'s formed (the py-spy dump a watchdog's hang carries names where a thread hung)
    line_also: Any = None
    # the traceback's frames are all outside SGLang's package, its top is not cut and it shows
    # its program's entry (a ``<module>`` frame): the program that raised is one around SGLang
    # (a user's script, an RL framework's driver), not SGLang's serving runtime (True); False:
    # not such a traceback (outside_sglang())
    outside_sglang: bool | None = None
    remedy: list[dict[str, Any]] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    counter_examples: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    doc: dict[str, str] = field(default_factory=dict)
    status: str = "stable"
    # the releases that print the text the rule matches ("0.4.6-0.5.13"; oldest, newest): when
    # the log names no release, the remedy is spelled for the newest of them (pipeline)
    versions: tuple[str, str] | None = None
    # phase -> category: the category follows the phase the failure fell in (a class rule for
    # SGLang's own internal checks, whose cause is no step of the launch); ``category`` is
    # the answer for a phase the map does not name (``unknown``)
    category_by_phase: dict[str, str] = field(default_factory=dict)

    @property
    def conditions(self) -> int:
        return (sum(bool(x) for x in (self.kind, self.exceptions, self.message, self.frames_any, self.frames_all,
                                      self.frames_sequence, self.line_rx, self.context, self.deepest_frame,
                                      self.message_any, self.deepest_not, self.assert_source, self.line_also))
                + (self.after_ready is not None)
                + (self.truncated is not None) + (self.names_setting is not None)
                + (self.outside_sglang is not None)
                + (self.argument_site is not None))

    @property
    def frames_only(self) -> bool:
        return not (self.exceptions or self.message or self.line_rx or self.message_any or self.assert_source
                    or self.line_also)

    @property
    def names_nothing(self) -> bool:
        """Nothing but the kind, the context (after_ready, server_args) and the shape of the
        traceback: no exception type, frame, word or line, and a message condition only when
        any text meets it (``'\\S'``).  Such a rule's answer is its context's: when that
        context is assumed, so is the answer."""
        if (self.exceptions or self.frames_any or self.frames_all or self.frames_sequence or self.line_rx
                or self.deepest_frame or self.message_any or self.line_also or self.outside_sglang
                or self.argument_site):
            return False
        return self.message is None or _search(self.message, "x") is not None

    @property
    def layer(self) -> str:
        return "class" if self.id.startswith(CLASS_PREFIX) else "specific"


# -- loading ---------------------------------------------------------------------------


def builtin_rules_dir() -> Path:
    here = Path(__file__).resolve().parents[2] / "rules"
    if here.is_dir() and any(here.glob("*.yaml")):
        return here
    return Path(str(resources.files("sglang_doctor.rules")))


# -- the parsed-pack cache ---------------------------------------------------------------
# Parsing YAML costs ~0.3 s for the shipped pack, which would dominate start-up.  The parsed
# YAML of every rule file (plain data: the mappings and lists yaml.safe_load gives) is kept
# as JSON under the user's cache directory, keyed on every rule file's path, size and mtime
# and on this module's own file: any edit re-parses.  Rules are always rebuilt and validated
# from that data, so the cache saves only the YAML parse.
#
# Trust: the cache is plain data, so loading it cannot run code (a pickle could); and since
# rules steer remedies, a cache is used only when it cannot have been written by anyone
# else: its directory and the file must be owned by the current user, be neither
# group- nor world-writable, and not be symlinks.  Otherwise the pack is parsed again (and
# nothing is written into a directory that fails the test).  A cache that cannot be read or
# written is ignored (read-only home, concurrent writers).

CACHE_FORMAT = 2


def _cache_file(dirs: list[Path]) -> Path | None:
    import hashlib

    h = hashlib.sha256()
    try:
        me = Path(__file__).stat()
        h.update(f"{__file__}:{me.st_size}:{me.st_mtime_ns}:{CACHE_FORMAT}".encode())
        for d in dirs:
            h.update(f"dir:{d.resolve()}".encode())
            for path in _rule_files(d):
                st = path.stat()
                h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    except OSError:
        return None
    return _cache_root() / f"rules-{h.hexdigest()[:24]}.json"


def _rule_files(d: Path) -> list[Path]:
    """``sorted(d.glob("*.y*ml"))`` from one ``os.scandir``, sorted by name before the paths are
    made (pathlib's glob and the sort of its paths took 1 ms of every start-up for the pack's
    directory, twice: the cache key and the listing); nothing when the directory cannot be
    listed, as glob gives."""
    from fnmatch import fnmatchcase

    try:
        with os.scandir(d) as entries:
            names = [e.name for e in entries if fnmatchcase(e.name, "*.y*ml")]
    except OSError:
        return []
    return [d / name for name in sorted(names)]  # (the order of sorted paths: one directory's names)


def _cache_root() -> Path:
    """The directory of the rule cache (and of regex_programs' file)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sglang-doctor"


def _private(st: os.stat_result, kind) -> bool:
    """Owned by us, not writable by group or others, of the expected kind (no symlink)."""
    from sglang_doctor.program_cache import private

    return private(st, kind)


def _cache_get(path: Path | None) -> list[list] | None:
    """The cached [path, data] of every rule file, or None (missing, stale, or not safe);
    ``path`` is _cache_file's for the rule directories."""
    import json
    import stat

    if os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return None
    if path is None:
        return None
    try:
        if not _private(os.lstat(path.parent), stat.S_ISDIR):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not _private(os.fstat(fh.fileno()), stat.S_ISREG):
                return None
            blob = json.loads(fh.read())
    except (OSError, ValueError):  # a missing, stale or corrupt cache just means parsing again
        return None
    files = blob.get("files") if isinstance(blob, dict) and blob.get("format") == CACHE_FORMAT else None
    if not isinstance(files, list) or not all(
            isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) for f in files):
        return None
    return files


def _cache_put(dirs: list[Path], files: list[list], path: Path | None) -> None:
    """Keeps ``files`` under ``path``, the key the rule files had before they were read: only
    while they still have it (a file edited while another process parsed it would otherwise
    be kept, as it was, under its new size and mtime)."""
    import json
    import stat

    if os.environ.get("SGLANG_DOCTOR_NO_RULE_CACHE"):
        return
    if path is None or _cache_file(dirs) != path:
        return
    from sglang_doctor.atomic_file import atomic_write

    try:
        blob = json.dumps({"format": CACHE_FORMAT, "files": files})
        if json.loads(blob)["files"] != files:  # not plain JSON data (a date, an int key): no cache
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(os.lstat(path.parent), stat.S_ISDIR):
            return  # someone else's (or a shared) directory: never write rules there
        atomic_write(path, blob.encode("utf-8"))  # a 0600 file (mkstemp)
        # keep the few newest packs (one per rule-directory set in use), drop stale ones and
        # the pickles of earlier versions (never loaded again)
        for old in path.parent.glob("rules-*.pickle"):
            old.unlink()
        for old in sorted(path.parent.glob("rules-*.json"), key=lambda p: p.stat().st_mtime)[:-8]:
            old.unlink()
    except Exception:  # a cache that cannot be written is only a slower next start
        pass


def user_rules_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "sglang-doctor" / "rules"


def _jsonable(value: Any) -> bool:
    """Plain JSON data that comes back equal (no dates, no non-string keys, no tuples)."""
    import json

    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


def _readable_dir(path: Path) -> bool:
    """True for a directory we may list; an unreadable ~/.config (sudo -u) is not an error."""
    try:
        return path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    except OSError:
        return False


_line_loader_class = None


def _line_loader():
    """The YAML loader that records the line of every mapping, so errors can say file:line.
    Built (and yaml imported) on first use: a run whose pack comes from the cache never
    parses YAML, and the import costs about 15 ms of start-up."""
    global _line_loader_class
    if _line_loader_class is not None:
        return _line_loader_class
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster

    class _LineLoader(base):
        """Records the line of every mapping, so errors can say file:line."""

    def _construct_mapping(loader, node, deep=False):
        seen: set[str] = set()
        for key_node, _ in node.value:  # YAML keeps the last of two equal keys, silently
            if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}", key_node.start_mark)
                seen.add(key_node.value)
        mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping

    _LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _line_loader_class = _LineLoader
    return _LineLoader


def load_rule_file(path: Path, repo_root: Path | None, problems: list[str]) -> list[Rule]:
    return rules_from_data(parse_rule_file(path, problems), path, repo_root, problems)


def parse_rule_file(path: Path, problems: list[str]) -> Any:
    """The YAML of one rule file as plain data (mappings carry ``__line__``), or None."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}:1: cannot read: {exc}")
        return None
    loader = _line_loader()
    import yaml

    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problems.append(f"{path}:{line}: malformed YAML: {getattr(exc, 'problem', exc)}")
        return None


def rules_from_data(data: Any, path: Path, repo_root: Path | None, problems: list[str]) -> list[Rule]:
    """Validated rules from a rule file's parsed YAML (consumes ``data``)."""
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        problems.append(f"{path}:1: a rule file is a mapping with a 'rules:' list")
        return []
    out = []
    for item in data["rules"]:
        rule = _build_rule(item, path, repo_root, problems)
        if rule is not None:
            out.append(rule)
    return out


def _build_rule(item: Any, path: Path, repo_root: Path | None, problems: list[str]) -> Rule | None:
    if not isinstance(item, dict):
        problems.append(f"{path}:1: each rule is a mapping")
        return None
    line = item.pop("__line__", 1)
    where = f"{path}:{line}"
    before = len(problems)

    def bad(msg: str) -> None:
        problems.append(f"{where}: {item.get('id', '?')}: {msg}")

    for key in sorted(set(item) - RULE_KEYS, key=str):
        bad(f"unknown key {key!r}")
    for key in REQUIRED_KEYS:
        if key not in item:
            bad(f"missing required key {key!r}")
    for key in ("id", "category", "phase", "title", "explanation"):
        if key in item and not isinstance(item[key], str):
            bad(f"{key} must be a string")
    if len(problems) > before:
        return None
    if item["category"] not in CATEGORIES:
        bad(f"unknown category {item['category']!r}")
    if item["phase"] not in PHASES and item["phase"] != "auto":
        bad(f"unknown phase {item['phase']!r}")
    rule = Rule(id=item["id"], category=item["category"], phase=item["phase"], title=item["title"],
                explanation=item["explanation"], source=str(path), line=line)
    if not isinstance(item.get("priority", 0), int):
        bad("priority must be an integer")
    else:
        rule.priority = item.get("priority", 0)
    conf = item.get("confidence", 0.9)
    if not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
        bad("confidence must be a number from 0 to 1")
    else:
        rule.confidence = float(conf)
    _build_match(rule, item["match"], bad)
    by_phase = item.get("category_by_phase", {})
    if not isinstance(by_phase, dict):
        bad("category_by_phase must be a mapping of phase: category")
    else:
        for phase_name, category in by_phase.items():
            if phase_name == "__line__":
                continue
            if phase_name not in PHASES:
                bad(f"category_by_phase: unknown phase {phase_name!r}")
            elif category not in CATEGORIES:
                bad(f"category_by_phase: unknown category {category!r}")
            else:
                rule.category_by_phase[phase_name] = category
    if rule.layer == "class" and rule.confidence > CLASS_MAX_CONFIDENCE:
        bad(f"a class rule's confidence must be at most {CLASS_MAX_CONFIDENCE} (below the specific rules')")
    if rule.layer != "class" and (rule.deepest_frame or rule.message_any) and path.name == "classes.yaml":
        bad(f"rules in classes.yaml have ids starting with {CLASS_PREFIX!r}")
    remedy = item.get("remedy", [])
    if not isinstance(remedy, list):
        bad("remedy must be a list of {name: {params}}")
    else:
        for entry in remedy:
            if isinstance(entry, dict):
                entry = {k: v for k, v in entry.items() if k != "__line__"}
            if not isinstance(entry, dict) or len(entry) != 1:
                bad("each remedy is a one-key mapping {name: {params}}")
                continue
            (name, params), = entry.items()
            if name not in REMEDIES:
                bad(f"unknown remedy {name!r} (known: {', '.join(REMEDIES)})")
            params = {k: v for k, v in (params or {}).items() if k != "__line__"} if isinstance(params or {}, dict) else None
            if params is None:
                bad(f"remedy {name!r} parameters must be a mapping")
                continue
            # the entry-level conditions (remedies._passes_words / _passes_phase)
            for key in ("when_words", "unless_words"):
                words = params.get(key)
                if words is not None and (not isinstance(words, list) or not words
                                          or not all(isinstance(w, str) and w and w == w.lower() for w in words)):
                    bad(f"remedy {name!r}: {key} must be a list of lower-case substrings")
            phases = params.get("when_phase")
            if phases is not None and (not isinstance(phases, list) or not phases
                                       or not all(isinstance(x, str) and x in PHASES for x in phases)):
                bad(f"remedy {name!r}: when_phase must be a list of CONTRACT phases ({', '.join(PHASES)})")
            rule.remedy.append({name: params})
    for key in ("examples", "counter_examples", "references"):
        value = item.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            bad(f"{key} must be a list of strings")
            continue
        setattr(rule, key, list(value))
    if repo_root is not None:
        # (os.path, not a Path per example: the pack names ~850 example files, and a checkout
        # checks them on every load, in explain's serial start-up; the trailing "/" dropped as
        # Path drops it)
        root = str(repo_root)
        for example in rule.examples + rule.counter_examples:
            if not os.path.isfile(os.path.join(root, example.rstrip("/") or example)):
                bad(f"example file {example} does not exist")
    doc = item.get("doc", {})
    if isinstance(doc, dict):
        rule.doc = {k: str(v) for k, v in doc.items() if k != "__line__"}
    rule.status = str(item.get("status", "stable"))
    if "versions" in item:
        found = _VERSIONS.fullmatch(str(item["versions"]).strip())
        if found is None:
            bad("versions must be a release or a range of them, e.g. '0.4.6-0.5.13'")
        else:
            rule.versions = (found["oldest"], found["newest"] or found["oldest"])
    return rule if len(problems) == before else None


_RELEASE = r"\d+\.\d+\.\d+(?:\.post\d+)?"
_VERSIONS = re.compile(rf"(?P<oldest>{_RELEASE})(?:\s*-\s*(?P<newest>{_RELEASE}))?")


# required_head: a pattern's plain characters from its start, an escaped punctuation character
# as itself; stopped by any other syntax, and by a quantifier with the character it repeats
_HEAD_CHAR = re.compile(r"[A-Za-z0-9 _,;:'\"/<>=@#%&~`!-]|\\[^A-Za-z0-9]")
_QUANTIFIERS = ("*", "?", "{")
# inline flags (case, verbose), branch resets, conditionals...: anything but groups and lookarounds
_OTHER_GROUP = re.compile(r"\(\?(?!P<|P=|:|=|!|<=|<!)")
MIN_NEEDED = 4


def required_head(source: str) -> str | None:
    """Text that every match of the rule regex ``source`` holds: its head of plain characters
    (MIN_NEEDED or more), or None.  Only a pattern with no alternation and no inline flag is
    read (``|`` anywhere, ``(?i)``, ``(?x)``: None), so what starts it is in every match as
    written."""
    if "|" in source or _OTHER_GROUP.search(source):
        return None
    pos = 1 if source.startswith("^") else 0
    head: list[str] = []
    while (m := _HEAD_CHAR.match(source, pos)) is not None:
        head.append(m.group(0)[-1])
        pos = m.end()
    if source.startswith(_QUANTIFIERS, pos) and head:
        head.pop()  # (the character the quantifier repeats may be absent or other)
    text = "".join(head)
    return text if len(text) >= MIN_NEEDED else None


def _as_tuple(value: Any, bad, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    bad(f"{what} must be a string or a list of strings")
    return ()


class _LazyPattern:
    """A regex of rule data that compiled before (the rule cache holds only data that loaded
    without a problem): compiled on first use, so that a run pays only for the rules its
    incidents reach (the pack's ~240 regexes cost 0.12-0.3 s to compile at start-up); and
    from the program an earlier run stored (``regex_programs``: 107 patterns in 5-8 ms instead
    of 50-110 ms on the benchmark log)."""

    __slots__ = ("_source", "_rx")

    def __init__(self, source: str):
        self._source = source
        self._rx = None

    def __getattr__(self, name: str):
        rx = self._rx
        if rx is None:
            rx = _COMPILED.get(self._source)
            if rx is None:
                import regex

                from sglang_doctor.diagnose import regex_programs

                # (what regex.compile makes, from the program stored by an earlier run)
                rx = _COMPILED[self._source] = regex_programs.compile(self._source, regex.MULTILINE)
            self._rx = rx
        return getattr(rx, name)


# source -> compiled pattern, shared by the lazy patterns of a process: several rules of the
# pack hold the same regex (one of them in 10 rules), and compiling is pure-Python parsing
# in the ``regex`` module (about 0.35 ms a pattern).  A compiled pattern is immutable.
_COMPILED: dict[str, Any] = {}


_lazy_regexes = False  # True while RuleSet.load builds rules from the cache's (validated) data


def _rules_from_cached(lazy: bool, data: Any, path: Path, repo_root: Path | None, problems: list[str]) -> list[Rule]:
    """rules_from_data, with the regexes compiled on first use when ``lazy``."""
    global _lazy_regexes
    _lazy_regexes = lazy
    try:
        return rules_from_data(data, path, repo_root, problems)
    finally:
        _lazy_regexes = False


def _compile(pattern: Any, bad, what: str):
    if not isinstance(pattern, str):
        bad(f"{what} must be a regex string")
        return None
    if _lazy_regexes:
        return _LazyPattern(pattern)
    # (imported here: a pack from the cache compiles its regexes on first use, so the ``regex``
    # module, about 5-10 ms of imports, is not needed before the first incident)
    import regex

    try:
        return regex.compile(pattern, regex.MULTILINE)
    except regex.error as exc:
        bad(f"{what} does not compile: {exc}")
        return None


def _build_match(rule: Rule, match: Any, bad) -> None:
    if not isinstance(match, dict):
        bad("match must be a mapping")
        return
    for key in sorted(set(match) - MATCH_KEYS - {"__line__"}, key=str):
        bad(f"unknown match key {key!r}")
    rule.kind = match.get("kind")
    if rule.kind not in (None, "traceback", "signal"):
        bad("match.kind must be traceback or signal")
    rule.exceptions = _as_tuple(match.get("exception"), bad, "match.exception")
    if "message" in match:
        rule.message = _compile(match["message"], bad, "match.message")
        if isinstance(match["message"], str):
            rule.message_needs = required_head(match["message"])
    rule.in_chain = match.get("in_chain", False)
    if not isinstance(rule.in_chain, bool):
        bad("match.in_chain must be true or false")
    frames = match.get("frames")
    if frames is not None:
        if not isinstance(frames, dict):
            bad("match.frames must be a mapping of any/all/sequence")
        else:
            for key in sorted(set(frames) - FRAME_KEYS - {"__line__"}, key=str):
                bad(f"unknown match.frames key {key!r}")
            rule.frames_any = _as_tuple(frames.get("any"), bad, "match.frames.any")
            rule.frames_all = _as_tuple(frames.get("all"), bad, "match.frames.all")
            rule.frames_sequence = _as_tuple(frames.get("sequence"), bad, "match.frames.sequence")
    if "line" in match:
        rule.line_rx = _compile(match["line"], bad, "match.line")
        rule.literals = _as_tuple(match.get("literal"), bad, "match.literal")
        if not rule.literals:
            bad("match.line needs match.literal (plain substrings that prefilter lines)")
    if "signal" in match:
        if match["signal"] not in ("literal", "line"):
            bad("match.signal must be literal or line")
        elif match["signal"] == "line":
            if "line" not in match:
                bad("match.signal: line needs match.line")
            else:
                try:
                    re.compile(match["line"])  # the assembler's signals are re patterns
                    rule.signal_by_line = True
                except (re.error, TypeError):
                    bad("match.signal: line needs a line pattern Python's re module compiles")
    if "line_also" in match:
        rule.line_also = _compile(match["line_also"], bad, "match.line_also")
        if "line" not in match:
            bad("match.line_also needs match.line (the line that forms the incident; line_also only narrows)")
    context = match.get("context", {})
    if not isinstance(context, dict):
        bad("match.context must be a mapping")
    else:
        rule.context = {k: v for k, v in context.items() if k != "__line__"}
    rule.deepest_frame = _as_tuple(match.get("deepest_frame_module"), bad, "match.deepest_frame_module")
    rule.message_any = tuple(k.lower() for k in _as_tuple(match.get("message_any"), bad, "match.message_any"))
    rule.deepest_not = _as_tuple(match.get("deepest_frame_module_not"), bad, "match.deepest_frame_module_not")
    if "assert_source" in match:
        rule.assert_source = _compile(match["assert_source"], bad, "match.assert_source")
    if "names_setting" in match:
        if isinstance(match["names_setting"], bool):
            rule.names_setting = match["names_setting"]
        else:
            bad("match.names_setting must be true or false")
    if "outside_sglang" in match:
        if isinstance(match["outside_sglang"], bool):
            rule.outside_sglang = match["outside_sglang"]
        else:
            bad("match.outside_sglang must be true or false")
    if "argument_site" in match:
        if isinstance(match["argument_site"], bool):
            rule.argument_site = match["argument_site"]
        else:
            bad("match.argument_site must be true or false")
    if "after_ready" in match:
        if isinstance(match["after_ready"], bool):
            rule.after_ready = match["after_ready"]
        else:
            bad("match.after_ready must be true or false")
    if "truncated" in match:
        if not isinstance(match["truncated"], bool):
            bad("match.truncated must be true or false")
        else:
            rule.truncated = match["truncated"]
    if not rule.conditions:
        bad("match has no condition")
    elif not _lazy_regexes:  # (data from the cache passed this check when it was written)
        _lint_positive(rule, bad)


def _matches_nothing_required(rx) -> bool:
    """The regex matches the empty text: a purely negative pattern (``^(?!.*foo)``) or an
    all-optional one requires no text at all, so as a condition it excludes, never names."""
    try:
        return rx is not None and rx.search("") is not None
    except Exception:  # noqa: BLE001  (a pattern that fails here is reported where it compiles)
        return False


def _lint_positive(rule: Rule, bad) -> None:
    """A rule names a failure by something the text holds: at least one condition must be
    positive (an exception type, a frame, a line, a word, the deepest frame, the source of an
    assert, a server argument, or a message regex that requires text).  ``after_ready``,
    ``truncated``, ``names_setting`` and ``deepest_frame_module_not`` only narrow, and a
    ``message`` that matches the empty text only excludes.  A specific rule's ``message`` is
    also what the failure inventory reads as the text the rule names
    (scripts/inventory_failures.py): one that matches the empty text would credit every site
    to the rule (session 24, nccl.torch_distributed_exception), so there it must require text;
    an exclusion goes with the positive part in one pattern or in a class rule."""
    empty_message = _matches_nothing_required(rule.message)
    positive = (rule.kind, rule.exceptions, rule.frames_any, rule.frames_all, rule.frames_sequence,
                rule.line_rx is not None and not _matches_nothing_required(rule.line_rx), rule.context,
                rule.deepest_frame, rule.message_any, rule.assert_source is not None,
                rule.message is not None and not empty_message, rule.outside_sglang, rule.argument_site)
    if not any(positive):
        bad("match has no positive condition (a message regex that matches the empty text, e.g. "
            "'^(?!.*foo)', only excludes; after_ready, truncated, names_setting and "
            "deepest_frame_module_not only narrow)")
    elif empty_message and rule.layer != "class":
        bad("match.message matches the empty text (a purely negative or all-optional regex): in a "
            "specific rule the message is what the rule names, and the failure inventory would credit "
            "every site to it; require some text (the positive words) or move the exclusion to a class rule")


# -- matching --------------------------------------------------------------------------


class _Timeout(Exception):
    pass


def is_sglang_flag(flag: str) -> bool:
    """``--foo-bar`` (or a ``foo_bar`` field) is an option of some shipped SGLang release."""
    from sglang_doctor.diagnose.flag_names import FLAG_NAMES

    name = flag if flag.startswith("--") else "--" + flag.replace("_", "-")
    return name in FLAG_NAMES


def _first_sglang_flag(rx, text: str, first):
    """The first match of ``rx`` in ``text`` whose ``flag`` capture is one of SGLang's flags
    (a rule that names the flag to change never names pip's ``--force-reinstall``), or None."""
    m = first
    checked = 0
    while m is not None and checked < 20:
        if m.group("flag") is None or is_sglang_flag(m.group("flag")):
            return m
        checked += 1
        try:
            m = rx.search(text, m.end() if m.end() > m.start() else m.end() + 1, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            raise _Timeout from None
    return None


def _search(rx, text: str):
    try:
        return rx.search(text, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        raise _Timeout from None


# A message cut where the paste ends matches a rule's pattern when it is a start of what the
# pattern matches, and that start is long enough to carry the failure's own words.
MIN_PARTIAL_CHARS = 24
# A paste's first line that holds a rule's whole message past its first character: so many
# characters of the pattern's own words, no command line or dump quotes (RuleSet.reads_as_message)
MIN_QUOTED_WORDS = 32


# what a paste's first line holds before a rule's quoted message when that is the exception's
# own line with its type cut at its head: one word, ``: `` (``ources: out of resource: ...`` of
# triton's ``OutOfResources``)
_CUT_TYPE_HEAD = re.compile(r"[\w.]+: ")


# a message pattern that opens with a positive lookahead (``(?i)^(?=[\s\S]*(?:bits|scheme...))...``)
# puts the words a message must hold in a condition on the whole message: run backwards from a
# cut, the lookahead is cut away and what is left ("not supported") is any line's words (a vLLM
# ``WARNING ... rocm.py:17] `fork` method is not supported by ROCm`` before a traceback was read as
# the end of a quantization refusal: session 31).  (Patterns that open with a negative lookahead
# only, ``^(?![\s\S]*...)[\s\S]*\w``, hold no words of their own: cut_match.literal_words leaves a
# negative lookaround's words out, so they never reach MIN_PARTIAL_CHARS here.)
_CONDITIONS_ONLY = re.compile(r"^(?:\(\?[a-zA-Z]+\))?\^\(\?=")


# the head of a line Python's warnings module prints (warnings.formatwarning:
# ``{filename}:{lineno}: {category}: {message}``), whatever the paste cut of the file's path
_PY_WARNING_LINE = re.compile(r"^\S*:\d+: [A-Z]\w*Warning: ")


def _running_text(head: str) -> bool:
    """Whether ``head``, what a first line holds before the rule's message, leaves that
    message the line's own: running text with no ``: `` (the paste began inside the
    message's head), or one word and ``: `` (the paste began inside the exception's type),
    not the tail of a warning's type (``...py:138: UserWarning: `` quotes words, it fails
    nothing)."""
    if ": " not in head:
        return True
    if _CUT_TYPE_HEAD.fullmatch(head) is None:
        return False
    word = head[:-2].rsplit(".", 1)[-1]
    return not ("Warning".endswith(word) or word.endswith("Warning"))


def _partial_search(rx, text: str, *, at_start: bool = False):
    """A match of ``rx`` that the end of ``text`` cut short (cut_match.head_match), or None;
    a whole match is _search's.  ``at_start``: a match that the *start* of ``text`` cut short
    instead (the paste began inside the message: cut_match.tail_match)."""
    try:
        if at_start:
            return tail_match(rx, text.strip(), MIN_PARTIAL_CHARS, timeout=REGEX_TIMEOUT)
        return head_match(rx, text, MIN_PARTIAL_CHARS, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        raise _Timeout from None
    except TypeError:  # a pattern object without partial matching (the stdlib's re)
        return None


def _message_cut_at_start(exc, incident: Incident) -> bool:
    """Whether ``exc``'s message is the paste's first line whole, its type lost (``…`` alone,
    or ``…TypeError`` named by the message's CPython words: tracebacks.python_message_tail):
    the paste began inside the message, not inside the type (``r: msg`` keeps its message)."""
    if not exc.type.startswith(CUT_MARK):
        return False
    if exc.type == CUT_MARK:
        return True
    first = incident.lines[0] if incident.lines else None
    return first is not None and first.number == 1 and first.text.strip() == exc.message.strip()


def _frame_hit(pattern: str, frame) -> bool:
    """A frame is the pattern's function, in its file (a path part), or, for
    ``part:function``, that function in a file whose path holds the part (a nested
    ``run_once`` of a graph runner, not the dummy run's)."""
    part, sep, function = pattern.rpartition(":")
    if sep and part and "/" not in function:
        return part in frame.file.replace("\\", "/") and (
            frame.function == function or frame.function.endswith("." + function))
    return frame.function == pattern or pattern in frame.file or frame.function.endswith("." + pattern)


def _compare(value: Any, cond: Any) -> bool:
    if cond == "present":
        return value not in (None, False, "", [], {})
    if cond == "absent":
        return value in (None, False, "", [], {})
    if isinstance(cond, list):
        return value in cond
    if isinstance(cond, str):
        for op in (">=", "<=", "!=", "==", ">", "<"):
            if cond.startswith(op):
                try:
                    a, b = float(value), float(cond[len(op):])
                except (TypeError, ValueError):
                    return False
                return {">=": a >= b, "<=": a <= b, "!=": a != b, "==": a == b, ">": a > b, "<": a < b}[op]
    return value == cond


class _Defaults(dict):
    def __missing__(self, key):
        return "?"


class RuleSet:
    def __init__(self, rules: list[Rule]):
        self.rules = sorted(rules, key=lambda r: r.id)
        self.warnings: list[str] = []
        self.load_warnings: list[str] = []  # user rule files skipped at load (see load)
        self.too_slow: set[str] = set()  # rules whose regex timed out: not tried again
        self.spent: dict[str, float] = {}  # seconds each rule's matching has cost so far
        self.tries: dict[str, int] = {}  # incidents each rule was matched against
        self._by_exception: dict[str, list[Rule]] = {}
        self._general: list[Rule] = []
        # Rules keyed on a line regex are only tried on incidents that hold one of their
        # literals, so adding such rules does not add per-incident regex work.
        self._by_literal: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.exceptions and not rule.in_chain:
                for name in rule.exceptions:
                    self._by_exception.setdefault(name.rsplit(".", 1)[-1], []).append(rule)
            elif rule.line_rx is not None and rule.literals:
                for lit in rule.literals:
                    self._by_literal.setdefault(lit, []).append(rule)
            else:
                self._general.append(rule)
        self._where_typed = [r for r in self.rules if r.layer == "class" and r.exceptions and not r.in_chain
                             and (r.deepest_frame or r.frames_any or r.frames_all or r.frames_sequence)]

    @classmethod
    def load(cls, extra_dirs=(), *, builtin: bool = True, user: bool = True, strict: bool = False) -> "RuleSet":
        """The built-in pack, ~/.config/sglang-doctor/rules/ and ``extra_dirs``.

        A problem in the built-in pack, or a rule directory that cannot be read, raises
        RuleLoadError.  A problem in a user rule file (``--rules`` or the config directory)
        skips that file with a warning in ``load_warnings`` (the caller prints it), unless
        ``strict`` (``rules lint``), where every problem raises."""
        import json

        dirs: list[Path] = []
        if builtin:
            dirs.append(builtin_rules_dir())
        if user and _readable_dir(user_rules_dir()):
            dirs.append(user_rules_dir())
        dirs += [Path(d) for d in extra_dirs]
        builtin_dir = dirs[0] if builtin else None
        problems: list[str] = []
        key = _cache_file(dirs)  # the files' sizes and mtimes before any is read
        cached = _cache_get(key)
        files: dict[str, list] = {}  # path -> [parsed data, parse problems]
        if cached is not None:
            files = {path: [data, []] for path, data in cached}
        listing: list[tuple[Path, list[Path]]] = []
        for d in dirs:
            try:
                if not d.is_dir():
                    problems.append(f"{d}:1: not a directory")
                    continue
                paths = _rule_files(d) if os.access(d, os.R_OK | os.X_OK) else None
            except OSError:
                paths = None
            if paths is None:
                problems.append(f"{d}:1: cannot read the rule directory (permission denied)")
                continue
            listing.append((d, paths))
            for path in paths:
                if str(path) not in files:
                    parse_problems: list[str] = []
                    files[str(path)] = [parse_rule_file(path, parse_problems), parse_problems]
        if problems:
            raise RuleLoadError(problems)
        fresh = None if cached is not None else [[p, data] for p, (data, _) in files.items()]
        blob = json.dumps(fresh) if fresh is not None and _jsonable(fresh) else None  # before rules consume it
        by_id: dict[str, Rule] = {}
        warnings: list[str] = []
        for d, paths in listing:
            seen: dict[str, str] = {}
            root = d.parent if (d.parent / "fixtures").is_dir() else None
            for path in paths:
                data, file_problems = files[str(path)]
                file_problems = list(file_problems)
                # data from the cache loaded without a problem before: its regexes compile on first use
                rules = _rules_from_cached(cached is not None and not strict, data, path, root, file_problems)
                ids: dict[str, str] = {}
                for rule in rules:
                    also = seen.get(rule.id) or ids.get(rule.id)
                    if also:
                        file_problems.append(f"{path}:{rule.line}: duplicate rule id {rule.id!r} (also {also})")
                    else:
                        ids[rule.id] = f"{path}:{rule.line}"
                if file_problems and (strict or d == builtin_dir):
                    problems += file_problems
                    continue
                if file_problems:
                    warnings.append(f"rule file {path} skipped: {file_problems[0]}"
                                    + (f" (and {len(file_problems) - 1} more; `sglang-doctor rules lint {d}` "
                                       f"lists them)" if len(file_problems) > 1 else ""))
                    continue
                seen.update(ids)
                for rule in rules:
                    by_id[rule.id] = rule
        if problems:
            raise RuleLoadError(problems)
        if blob is not None and not warnings:
            _cache_put(dirs, json.loads(blob), key)
        ruleset = cls(list(by_id.values()))
        ruleset.load_warnings = warnings
        return ruleset

    def get(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def line_literals(self) -> set[str]:
        return {lit for r in self.rules for lit in r.literals}

    def line_signals(self) -> list[tuple[str, tuple[str, ...], str]]:
        """The assembler's signals from the rules' literals, as (name, literals, regex): a
        literal's line is failure evidence (its regex the literal itself), except for a rule
        with ``signal: line``, whose literals only find lines for its ``line`` pattern (one
        signal per rule, that pattern): a short literal shared by a family of lines, of which
        only some are failures (``NVRM: Xid (`` of every Xid, of which 45 is a process's
        ordinary clean-up), costs the block search less than one literal per failing line."""
        plain = sorted({lit for r in self.rules if not r.signal_by_line for lit in r.literals})
        out = [(f"{RULE_LITERAL_SIGNAL}{lit}", (lit,), re.escape(lit)) for lit in plain]
        for r in self.rules:
            if r.signal_by_line:
                source = r.line_rx._source if isinstance(r.line_rx, _LazyPattern) else r.line_rx.pattern
                out.append((f"{RULE_LITERAL_SIGNAL}{r.id}", tuple(r.literals), source))
        return out

    def failure_words(self) -> set[str]:
        """The lower-case words of failures the pack knows by their message (every rule's
        ``message_any``): what lets a line that is not SGLang's own (``Error: ...`` from a
        wrapper or a reporter) still count as naming a failure (incidents.Assembler)."""
        return {w for r in self.rules for w in r.message_any}

    def reads_as_message(self, text: str) -> bool:
        """Whether ``text``, a paste's first line that reads as nothing else, is the end of a
        message a specific rule knows (the paste began inside it: ``of memory. Tried to
        allocate 2.00 GiB ...``): the rule's message pattern matched backwards, cut short
        where the line starts, over MIN_PARTIAL_CHARS characters that hold the pattern's own
        words (as _partial_search); or that message whole from the line's first character,
        its type lost.  A match that starts later in the line is another text that quotes the
        words (a command line's ``--mem-fraction-static 0.85``), unless it holds
        MIN_QUOTED_WORDS characters of the pattern's own words after running text (``... has
        model type `gemma3` but Transformers does not recognize this architecture``: the paste
        began inside the message's head, before the part the rule reads) or after one word
        and ``: `` (``ources: out of resource: ...``, the exception's type cut at its head); a
        ``: `` otherwise before the match is a line of another kind (``...py:138: UserWarning:
        CUDA initialization: ...``: _running_text).  The match's share of the pattern's own
        words is weighed by words (cut_match.words_share: a path counts as one).  Only rules
        whose words the line holds are tried (a substring test each), and none whose message is
        words in a lookahead on the whole message (_CONDITIONS_ONLY)."""
        floor = MIN_PARTIAL_CHARS * 2 // 3
        if _PY_WARNING_LINE.search(text):
            return False  # a warning (warnings.formatwarning's ``file:line: category: ``) fails nothing
        for rule in self.rules:
            if rule.layer != "specific" or rule.message is None:
                continue
            source = rule.message._source if isinstance(rule.message, _LazyPattern) else rule.message.pattern
            if _held_words(source, text) < floor or _CONDITIONS_ONLY.match(source):
                continue
            try:
                m = _search(rule.message, text)
                if m is not None and floor <= (held := _held_words(source, m.group(0))) \
                        and words_share(source, m.group(0), held) \
                        and (m.start() == 0 or (held >= MIN_QUOTED_WORDS and _running_text(text[:m.start()]))):
                    return True
                if _partial_search(rule.message, text, at_start=True) is not None:
                    return True
            except _Timeout:
                continue
        return False

    def candidates(self, incident: Incident) -> list[Rule]:
        names = ({e.type.rsplit(".", 1)[-1] for e in incident.chain[-1:]} | {inner_type(e.type) for e in incident.chain[-1:]}
                 if incident.chain else set())
        out = list(self._general)
        if not incident.chain and incident.truncated and incident.frames:
            # a traceback cut above its exception line: the class rules that read where it was
            # raised are tried without a type (_exception_line_cut says which can match)
            out += self._where_typed
        for name in list(names):
            if name.startswith(CUT_MARK):  # a type the paste cut at its head: every name it can end
                names |= set(cut_type_matches(name, self._by_exception))
        for name in names:
            out += self._by_exception.get(name, [])
        if self._by_literal:
            text = "\n".join(line.text for line in incident.lines)
            seen = set()
            first = incident.lines[0].text.strip() if incident.lines and incident.lines[0].number == 1 else None
            for lit, rules in self._by_literal.items():
                if lit in text or (first is not None and starts_with_literal_tail(first, lit)):
                    for rule in rules:
                        if rule.id not in seen:
                            seen.add(rule.id)
                            out.append(rule)
        return out

    def match(self, rule: Rule, incident: Incident, launch: Launch | None) -> dict[str, str] | None:
        """The named captures when the rule matches, else None."""
        return self._match(rule, incident, launch, [])

    def _match(self, rule: Rule, incident: Incident, launch: Launch | None,
               assumed: list[str], memo: dict | None = None) -> dict[str, str] | None:
        """As match(); conditions the log does not answer are appended to ``assumed``
        instead of vetoing the rule (unknown is not false)."""
        captures: dict[str, str] = dict(incident.captures)
        if rule.kind and rule.kind != incident.kind:
            return None
        if rule.after_ready is not None:
            if getattr(incident, "after_ready_known", True):
                if rule.after_ready != incident.after_ready:
                    return None
            else:
                hint = incident.captures.get("startup_hint")
                if rule.after_ready and hint and rule.category == "runtime.crash":
                    # the failure's own words point to start-up or a first forward pass: it is
                    # not named a crash while serving on an assumption (a rule that names the
                    # failure itself, an OOM, still assumes the phase and says so)
                    return None
                assumed.append("the server had been ready before it failed" if rule.after_ready
                               else "the server had not been ready yet when it failed")
        if rule.truncated is not None and rule.truncated != bool(incident.truncated or incident.truncated_top):
            return None
        exc = incident.exception
        chain = incident.chain if rule.in_chain else ([exc] if exc else [])
        line_cut = _exception_line_cut(rule, incident)
        if line_cut:
            # the paste stops above the exception line: where the failure was raised (the
            # frames) is the evidence, and the deepest frame's statement (``raise X(`` /
            # ``assert``) its type; the message only had to miss the words the class excludes
            raised = raised_type(incident.frames)
            if rule.exceptions and raised not in {e.rsplit(".", 1)[-1] for e in rule.exceptions}:
                return None
            assumed.append(f"the exception line, cut by the paste, was the {raised} the deepest frame raises")
        elif rule.exceptions:
            wanted = {e.rsplit(".", 1)[-1] for e in rule.exceptions} | set(rule.exceptions)
            chain = [e for e in chain if e.type in wanted or e.type.rsplit(".", 1)[-1] in wanted
                     or inner_type(e.type) in wanted or self._cut_type_in(e.type, wanted, rule)]
            if not chain:
                return None
            if any(e.type.startswith(CUT_MARK) for e in chain):
                assumed.append(f"the exception's type, cut by the paste ({chain[-1].type}), is "
                               f"{' or '.join(sorted(cut_type_matches(chain[-1].type, rule.exceptions)) or rule.exceptions)}")
        if rule.message_any:  # the failure's words: its exceptions' and its signal lines'
            key = ("words", tuple(id(e) for e in chain))
            text = memo.get(key) if memo is not None else None
            if text is None:
                text = "\n".join([f"{e.type}: {e.message}" for e in chain] + [line.text for line in incident.signals]).lower()
                if memo is not None:
                    memo[key] = text
            if not any(k in text for k in rule.message_any):
                return None
        if rule.names_setting is not None:
            if not chain or any(names_setting(e.message) for e in chain) != rule.names_setting:
                return None
        frames = incident.frames
        if rule.argument_site is not None:
            site = _argument_site(chain, frames, launch)
            if (site is not None) != rule.argument_site:
                return None
            if site is not None:
                captures.update(site_where=site.where[0], site_switches=" ".join(site.switches))
        if rule.assert_source is not None:
            # a bare assert (no message): the statement in the deepest frame is the check's text
            if exc is None or exc.type.rsplit(".", 1)[-1] != "AssertionError" or exc.message.strip() \
                    or not frames or not frames[-1].source:
                return None
            m = _search(rule.assert_source, frames[-1].source)
            if not m:
                return None
            captures.update({k: v for k, v in m.groupdict().items() if v is not None})
        if rule.deepest_frame and not _deepest_hit(rule.deepest_frame, frames):
            return None
        if rule.outside_sglang is not None and outside_sglang(incident) != rule.outside_sglang:
            return None
        if rule.deepest_not and (not sglang_frames(frames) or _deepest_hit(rule.deepest_not, frames)):
            return None
        if rule.frames_any and not any(_frame_hit(p, f) for p in rule.frames_any for f in frames):
            return None
        if rule.frames_all and not all(any(_frame_hit(p, f) for f in frames) for p in rule.frames_all):
            return None
        if rule.frames_sequence:
            i = 0
            for f in frames:
                if i < len(rule.frames_sequence) and _frame_hit(rule.frames_sequence[i], f):
                    i += 1
            if i < len(rule.frames_sequence):
                return None
        # the regexes after the conditions that cost no regex (the same result: each one can
        # only veto, and none of them reads what the message's match captures or assumes):
        # a rule that a cheap condition rules out neither compiles nor searches its pattern
        if rule.message is not None and not line_cut:
            needs = rule.message_needs
            for e in chain:
                # (a message without the text every match holds is not searched: nor compiled,
                # for a rule no incident of the run reaches so far)
                m = _search(rule.message, e.message) if needs is None or needs in e.message else None
                if m and rule.layer == "class" and "flag" in rule.message.groupindex:
                    # a class rule names whatever flag-shaped word the message holds: only an
                    # SGLang flag is named as the one to change (a specific rule's is, by its
                    # author, SGLang's own, even when newer than the shipped catalogues)
                    m = _first_sglang_flag(rule.message, e.message, m)
                if not m and incident.cut_at_end and chain and e is chain[-1] and rule.layer == "specific":
                    # (a class rule's pattern is keywords around wildcards: a start of it is
                    # any text that holds one of its words)
                    m = _partial_search(rule.message, e.message)
                    if m:
                        assumed.append("the message, cut where the paste ends, went on as this failure's does")
                if not m and rule.layer == "specific" and _message_cut_at_start(e, incident):
                    # the paste began inside the message (its type lost with its head): the
                    # end left is this failure's message's end (RuleSet.reads_as_message)
                    m = _partial_search(rule.message, e.message, at_start=True)
                    if m:
                        assumed.append("the message, cut where the paste begins (its exception type lost), "
                                       "began as this failure's does")
                if m:
                    captures.update({k: v for k, v in m.groupdict().items() if v is not None})
                    break
            else:
                return None
        if rule.line_rx is not None:
            for line in incident.lines:
                if any(lit in line.text for lit in rule.literals):
                    m = _search(rule.line_rx, line.text)
                    if m:
                        captures.update({k: v for k, v in m.groupdict().items() if v is not None})
                        break
                    if line.number == 1 and (m := _partial_search(rule.line_rx, line.text, at_start=True)):
                        # the literal is whole but the paste began inside what the pattern
                        # reads before it (``error: argument ...`` of ``prog: error: ...``)
                        captures.update({k: v for k, v in m.groupdict().items() if v is not None})
                        assumed.append("the line, cut where the paste begins, began as this failure's does")
                        break
                elif line.number == 1 and any(starts_with_literal_tail(line.text.strip(), lit) for lit in rule.literals):
                    # the paste began inside the line's literal: the rest of the line is read
                    # as the end of the rule's line (its pattern matched backwards)
                    m = _partial_search(rule.line_rx, line.text, at_start=True)
                    if m:
                        assumed.append("the line, cut where the paste begins, began as this failure's does")
                        break
            else:
                return None
        if rule.line_also is not None:
            for line in incident.lines:
                m = _search(rule.line_also, line.text)
                if m:
                    captures.update({k: v for k, v in m.groupdict().items() if v is not None})
                    break
            else:
                return None
        if rule.context:
            args = launch.server_args if launch else {}
            for key, cond in rule.context.items():
                if _compare(args.get(key), cond):
                    continue
                if args:  # the dump is there and says otherwise
                    return None
                assumed.append(f"{key} {cond} (the log has no server_args dump)")
        return captures

    def _cut_type_in(self, etype: str, wanted: set[str], rule: Rule) -> bool:
        """Whether a type the paste cut at its head (``…rror``) can be one of ``wanted``: a
        rule that also reads the message or its words may take any type it is the tail of;
        a rule on the type alone only a tail no other type of the pack ends with."""
        if not etype.startswith(CUT_MARK) or not cut_type_matches(etype, wanted):
            return False
        if rule.message is not None or rule.message_any or rule.line_rx is not None:
            return True
        return len(cut_type_matches(etype, self._by_exception)) == 1

    def diagnose(self, incident: Incident, launch: Launch | None) -> Diagnosis:
        """Specific rules first, then class rules, then the honest fallback."""
        best: dict[str, tuple] = {}
        # (args35) the best class rule that reads an argument refusal by its words: it keeps the
        # incident when class.args.argument_site (the message is a check's, whatever its words)
        # also matches -- the site only lifts args.invalid above other categories' words
        by_words: tuple | None = None
        memo: dict = {}  # what several rules read of this incident, computed once
        for rule in self.candidates(incident):
            if rule.id in self.too_slow:
                continue
            t0 = time.thread_time()
            assumed: list[str] = []
            try:
                captures = self._match(rule, incident, launch, assumed, memo)
            except _Timeout:
                # once is enough: a pattern that can backtrack catastrophically would cost
                # REGEX_TIMEOUT on every later incident of a long log
                self.too_slow.add(rule.id)
                self.warnings.append(f"rule {rule.id} is too slow (regex timed out after {REGEX_TIMEOUT}s, "
                                     f"{rule.source}:{rule.line}); skipped for the rest of this run")
                continue
            finally:
                spent = self.spent[rule.id] = self.spent.get(rule.id, 0.0) + time.thread_time() - t0
                tries = self.tries[rule.id] = self.tries.get(rule.id, 0) + 1
            if tries >= SLOW_TRIES and spent > RULE_TIME_BUDGET and spent / tries > SLOW_MATCH and rule.id not in self.too_slow:
                # systematically slow (each match under REGEX_TIMEOUT): this match counts,
                # later incidents go without the rule
                self.too_slow.add(rule.id)
                self.warnings.append(f"rule {rule.id} is too slow ({spent:.1f}s of matching over {tries} incidents "
                                     f"in this run, budget {RULE_TIME_BUDGET}s, {rule.source}:{rule.line}); skipped "
                                     f"for the rest of this run")
            if captures is None:
                continue
            key = (not _crash_on_assumption(rule, incident, launch), rule.priority, rule.conditions - len(assumed),
                   _neg(rule.id))
            held = best.get(rule.layer)
            if held is None or key > held[0]:
                best[rule.layer] = (key, rule, captures, assumed)
            if rule.layer == "class" and rule.category == "args.invalid" and rule.argument_site is None \
                    and (by_words is None or key > by_words[0]):
                by_words = (key, rule, captures, assumed)
        if by_words is not None and "class" in best and best["class"][1].argument_site:
            site = {k: v for k, v in best["class"][2].items() if k in ("site_where", "site_switches")}
            best["class"] = (by_words[0], by_words[1], {**by_words[2], **site}, by_words[3])
        chosen = best.get("specific") or best.get("class")
        if chosen is None:
            return fallback.attach(unknown_diagnosis(incident, launch))
        if "class" in best and chosen is best.get("specific") and _yields_to_class(chosen[1], best["class"][1], incident, launch):
            chosen = best["class"]
        _, rule, captures, assumed = chosen
        values = _Defaults({k: v for k, v in (launch.server_args if launch else {}).items()})
        values.update(captures)
        if incident.exception is not None and incident.exception.type:
            values.setdefault("exc_type", incident.exception.type)
        confidence = rule.confidence
        if incident.truncated and rule.frames_only:
            confidence *= TRUNCATED_FRAMES_ONLY_FACTOR
        confidence *= ASSUMED_FACTOR ** len(assumed)
        phase = _rule_phase(rule, incident, launch)
        category = rule.category_by_phase.get(phase, rule.category)
        if rule.category_by_phase and phase == "unknown":
            # the rule's category follows the phase and the text shows none: its default answers
            # for a context the log does not give (fallback.assumed_context says so)
            captures = dict(captures, category_follows_phase=", ".join(
                f"{p}: {c}" for p, c in rule.category_by_phase.items()))
        values.setdefault("phase", phase)
        explanation = _fill(rule.explanation, values).strip() + fallback.context_note(incident)
        if assumed:
            explanation += " Assumed (the log does not say): " + "; ".join(assumed) + "."
        diagnosis = Diagnosis(
            incident=incident, rule=rule.id, category=category, phase=phase,
            title=_fill(rule.title, values), explanation=explanation,
            confidence=confidence, remedies=[dict(r) for r in rule.remedy], captures=captures, launch=launch,
            layer=rule.layer, assumed=list(assumed), assumed_only=bool(assumed) and rule.names_nothing,
        )
        if diagnosis.assumed_only:
            # the answer rests on an assumption alone: the text's own evidence, when it names
            # another category, is the answer (fallback.over_assumption)
            diagnosis = fallback.over_assumption(diagnosis) or diagnosis
        return fallback.attach(diagnosis)


def _argument_site(chain, frames, launch: Launch | None):
    """(args35) The argument check whose message the exception line is, when no SGLang frame
    says where it was raised (a bare line, or only a library's frames): argument_sites.site_of,
    the log's release preferred when it names one."""
    if not chain or sglang_frames(frames):
        return None
    from sglang_doctor.diagnose.argument_sites import site_of

    version = launch.sglang_version if launch is not None else None
    return site_of(chain[-1].type, chain[-1].message, version)


def _exception_line_cut(rule: Rule, incident: Incident) -> bool:
    """A traceback whose paste ends in its frames (no exception line: a copy that stopped one
    line early, a collector that cut the record) at the statement that raised (the deepest
    frame's source is ``raise X(`` or ``assert``: raised_type), and a class rule that names the
    failure by where it was raised (the deepest SGLang frame's module, or the frames), whose
    other conditions are the exception's type and words it excludes: the frames are its
    evidence, the statement its type, the words it excludes are assumed absent.  A rule that
    needs the message's own words (a positive pattern, words, a named setting, an assert's
    source) cannot be read without the line."""
    if rule.layer != "class" or incident.kind != "traceback" or incident.exception is not None \
            or incident.chain or not incident.truncated or not incident.frames:
        return False
    if not (rule.deepest_frame or rule.frames_any or rule.frames_all or rule.frames_sequence):
        return False
    if raised_type(incident.frames) is None:
        # the deepest frame shown calls on (the paste stopped mid-stack, the failure was deeper
        # down): its place is not where the failure was raised, so it names nothing (real cut
        # pastes mostly stop so; bench/accuracy.py's no-cause guesses fell when it was read)
        return False
    if rule.message_any or rule.names_setting is not None or rule.argument_site is not None or rule.assert_source is not None or rule.line_rx is not None:
        return False
    if not rule.exceptions and rule.message is None:
        return False  # it reads nothing of the exception line: it matches as it always did
    return rule.message is None or _matches_nothing_required(rule.message)


_RAISE_STMT = re.compile(r"^\s*raise\s+(?:[A-Za-z_][\w]*\.)*([A-Z][\w]*)\s*(?:\(|$)")
_ASSERT_STMT = re.compile(r"^\s*assert\b")


def raised_type(frames) -> str | None:
    """The exception the deepest frame's own statement raises (``raise ValueError(`` ->
    ValueError, ``assert ...`` -> AssertionError), when its source line shows one."""
    if not frames or not frames[-1].source:
        return None
    source = frames[-1].source
    if _ASSERT_STMT.match(source):
        return "AssertionError"
    m = _RAISE_STMT.match(source)
    return m.group(1) if m else None


def _rule_phase(rule: Rule, incident: Incident, launch: Launch | None) -> str:
    """The phase a rule's diagnosis of this incident names (``phase: auto``: the log's)."""
    phase = rule.phase
    if phase == "auto":
        if not getattr(incident, "after_ready_known", True):
            phase = "serving" if rule.after_ready else "unknown"
        else:
            phase = "serving" if incident.after_ready else phase_after(_last_milestone(launch, incident))
    return phase


def _crash_on_assumption(rule: Rule, incident: Incident, launch: Launch | None) -> bool:
    """The rule names a crash while serving only because it assumed the server had been ready
    (a fragment with no ready line, no launch header and no start-up milestone): such a rule
    ranks below every rule of its layer that does not rest on that assumption, whatever their
    priorities.  Where the failure happened (the deepest frame's module), its exception family
    and its words name a category from the text; "while serving" was only assumed, so a
    runtime.crash answer there is the last resort, not a rival (a broken invariant in the
    distributed layer is a crash while serving only after ready: before it, or when unknown,
    class.nccl.distributed's reading of the same frames stands)."""
    if rule.after_ready is not True or getattr(incident, "after_ready_known", True):
        return False
    return rule.category_by_phase.get(_rule_phase(rule, incident, launch), rule.category) == "runtime.crash"


# A generic specific rule that knows only the traceback's shape (frames only, a low priority:
# runtime.crash.scheduler_exception knows the scheduler's event loop raised, nothing of what)
# names where the failure surfaced, not what it was.
YIELDING_PRIORITY = 5


def _yields_to_class(specific: Rule, cls: Rule, incident: Incident, launch: Launch | None) -> bool:
    """The specific rule matched only by the traceback's shape, and a class rule that knows the
    failure itself (its exception type, message, words or the deepest SGLang frame: not a rule
    whose answer is its context's) names another category: the class rule's answer says more
    (a setting SGLang refused at its first batch of a kind is args.invalid, not a crash).

    So does a specific rule whose crash-while-serving answer rests only on an assumed ready line
    (_crash_on_assumption: a fragment with no ready line, no launch header, no milestone), to a
    class rule that reads where the failure was raised (its frames) and names another category
    without that assumption: an asynchronous CUDA fault in a forward pass that a graph runner was
    capturing (class.cuda_graph.in_capture) failed in the capture, which no server that had been
    ready runs.  Words are not enough there: a watchdog's or a wrapper's line that reports the
    same CUDA fault (class.nccl.signal's "ProcessGroupNCCL ... watchdog thread terminated with
    exception: CUDA error: an illegal memory access") names who noticed it, not where it was."""
    if cls.names_nothing:
        return False
    category = cls.category_by_phase.get(_rule_phase(cls, incident, launch), cls.category)
    if category == specific.category:
        return False
    if _crash_on_assumption(specific, incident, launch):
        where = cls.frames_any or cls.frames_all or cls.frames_sequence or cls.deepest_frame
        return bool(where) and cls.after_ready is None and not _crash_on_assumption(cls, incident, launch)
    if not specific.frames_only or specific.priority > YIELDING_PRIORITY:
        return False
    if (category == "args.invalid" and cls.after_ready is not True and (specific.after_ready or incident.after_ready)
            and not any(names_setting(e.message) for e in incident.chain)):
        # a setting refused is args.invalid; a value check that names no setting a user makes
        # (no --flag, environment switch or server_args field), met while serving, checks a value
        # computed while serving (a batch's size, a request's input: "tokens_per_req must be >= 1,
        # got 0", "audio length 1001 is not divisible by 4"), not the launch's.  The class rules
        # written for a refusal after ready (after_ready: true) read their own message for that.
        return False
    return True


def outside_sglang(incident: Incident) -> bool:
    """The incident's traceback shows its program's entry (its top is not cut and a frame is
    a script's or module's top level, ``<module>``: ``python script.py``, ``python -m pkg``'s
    runpy frames above it) and no frame of it is SGLang's: the exception was raised by a program
    around SGLang (a user's script, an RL framework's driver, a client), which the text itself
    says.  A traceback cut above its frames (the paste began below SGLang's frames, in a library)
    says nothing; nor does a thread's (a library's thread inside SGLang's own process, such as
    multiprocessing's resource_sharer serving a tensor's file descriptor: its stack starts at
    the thread's run function, with no ``<module>`` frame)."""
    frames = incident.frames
    return (bool(frames) and not incident.truncated_top and not sglang_frames(frames)
            and any(f.function == "<module>" for f in frames))


def _deepest_hit(patterns: tuple[str, ...], frames) -> bool:
    """The deepest SGLang frame's path holds one pattern's path part (and, for
    ``part:function``, has that function)."""
    ours = sglang_frames(frames)
    if not ours:
        return False
    f = ours[-1]
    path = f.file.replace("\\", "/")
    func = f.function.rsplit(".", 1)[-1]
    for pattern in patterns:
        part, sep, function = pattern.rpartition(":")
        if not sep or "/" in function:
            part, function = pattern, ""
        if part in path and (not function or func == function
                             or ("*" in function and fnmatch.fnmatchcase(func, function))):
            return True
    return False


# a flag-shaped word (--foo-bar), an environment switch, or a multi-word field that is the
# field of an SGLang flag (page_size: --page-size)
_FLAG_WORD = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_ENV_WORD = re.compile(r"\b(?:SGLANG|NCCL|MOONCAKE|CUDA|PYTORCH|TORCH|FLASHINFER|HF|NVSHMEM|UCX)_[A-Z0-9_]{2,}\b")
_SHORT_FLAG_WORD = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*\b")
_FIELD_WORD = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def names_setting(message: str) -> bool:
    """The message names a setting a user makes: a ``--flag``, an environment switch
    (``SGLANG_*``, ``NCCL_*``, ...) or the ``foo_bar`` field of an SGLang flag.  A value check
    that names none of them checks a value SGLang computed (its own invariant), not one a
    user gave."""
    text = message[:2000]
    if _FLAG_WORD.search(text) or _ENV_WORD.search(text):
        return True
    if any(is_sglang_flag(w) for w in _SHORT_FLAG_WORD.findall(text)):  # --port, --sidecar
        return True
    return any(is_sglang_flag(w) for w in _FIELD_WORD.findall(text))


def _neg(rule_id: str) -> tuple[int, ...]:
    """Sort key so that, all else equal, the alphabetically first id wins."""
    return tuple(-ord(c) for c in rule_id)


def _fill(template: str, values: dict) -> str:
    try:
        return template.format_map(values)
    except (ValueError, IndexError, KeyError, AttributeError):
        return template


def _last_milestone(launch: Launch | None, incident: Incident) -> str | None:
    if launch is None:
        return None
    last = last_before(launch, incident.first_line)
    return last.name if last else None
