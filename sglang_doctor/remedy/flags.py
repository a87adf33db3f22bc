"""SGLang launch flags per version: what exists, what a value must look like, and renames.

Every flag a remedy emits goes into a real SGLang's argv, so it must be spelled the way *that*
SGLang's argparse parser accepts it.  The truth is SGLang's own parser
(``ServerArgs.add_cli_args`` on a plain ``argparse.ArgumentParser``): when the requested
version is the installed one, :func:`load_catalog` builds it (importing SGLang lazily; any
failure falls back silently and is recorded in :attr:`Catalog.source`).  Otherwise it reads a
catalogue shipped in ``sglang_doctor/remedy/catalogs/``; those are dumps of the same parser made by
``scripts/gen_flag_catalog.py`` with :func:`snapshot_parser`, never written by hand.

Nothing here imports SGLang or torch at module import time.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import enum
import functools
import importlib.resources
import json
import math
import re
import unicodedata
from typing import Any, Callable, Iterable

CATALOGUE_FORMAT = 1
_CATALOGUE_PACKAGE = "sglang_doctor.remedy.catalogs"
# A release's catalogue is stored either whole (``sglang-V.json``, the oldest release: the
# base) or as the differences from the release before it (``sglang-V.delta.json``); see
# "Storage" below.  Either way its logical name is ``sglang-V.json``.
_CATALOGUE_NAME = re.compile(
    r"^sglang-(?P<version>\d+(?:\.\d+)*(?:\.?(?:post|dev|rc)\d+)?)(?P<delta>\.delta)?\.json$")

# A value goes into an argv list (never a shell), but text from a log may be hostile, so a
# value that would mean anything to a shell is refused outright: bash's metacharacters
# (space, tab, newline, | & ; ( ) < >) and its quoting and expansion characters (" ' \ ` $).
SHELL_METACHARACTERS = frozenset(" \t\n|&;()<>\"'\\`$")

_ACTION_NAMES = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "_ExtendAction": "extend",
    "BooleanOptionalAction": "boolean_optional",
}
_TYPE_NAMES = {"loads": "json"}  # json.loads / orjson.loads


# --------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------


def version_key(version: str) -> tuple:
    """Sort key for SGLang version strings: "0.0.0.dev7" < "0.5.9" < "0.5.10rc1" < "0.5.10"
    < "0.5.10.post1" < "0.5.10.post2" < "0.5.11".

    The release numbers, then the phase: a pre-release or dev build (rc, a, b, dev) sorts
    before its release, a post release after it, each by its number.
    """
    text = version.strip().lstrip("vV")
    match = re.match(r"^(\d+(?:\.\d+)*)(.*)$", text)
    if not match:
        raise ValueError(f"not an SGLang version: {version!r}")
    release = tuple(int(part) for part in match.group(1).split("."))
    release = release + (0,) * (4 - len(release)) if len(release) < 4 else release
    rest = match.group(2).lower().lstrip(".-_")
    number = re.search(r"\d+", rest)
    serial = int(number.group()) if number else 0
    if re.match(r"^(a|b|c|rc|alpha|beta|pre|preview|dev)", rest):
        return release + (0, serial)
    if rest.startswith("post"):
        return release + (2, serial)
    return release + (1, 0)


@functools.lru_cache(maxsize=None)
def _stored_files() -> dict[str, str]:
    """version -> the file that stores it (whole or as a delta) in the package."""
    found = {}
    for entry in importlib.resources.files(_CATALOGUE_PACKAGE).iterdir():
        match = _CATALOGUE_NAME.match(entry.name)
        if match:
            found[match.group("version")] = entry.name
    return found


def _shipped_files() -> dict[str, str]:
    """version -> logical file name (``sglang-V.json``) of every catalogue in the package."""
    return {version: f"sglang-{version}.json" for version in _stored_files()}


KNOWN_VERSIONS: tuple[str, ...] = tuple(sorted(_shipped_files(), key=version_key))


def installed_version() -> str | None:
    """The installed SGLang's version from its distribution metadata (never imports it)."""
    import importlib.metadata  # (here: about 10-25 ms of imports a run whose log names its version skips)

    try:
        return importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_version(log_version: str | None, cli_version: str | None,
                    log_style: str | None = None) -> tuple[str, str]:
    """(version, source) of the SGLang the flags are for.

    In order: the version the log states; ``--sglang-version``; the log's style (0.5.9's
    dataclass dump vs the newer dict dump: evidence about the server that wrote the log,
    which may run elsewhere; "V-fields": the newest release whose ServerArgs fields match the
    dump, source "dump fields"; "V-frames": the newest release the traceback frames of a log
    without a dump fit, source "frame paths", remedy/frame_releases.py; "V-wording": the newest
    release that prints the matched rule's text, source "message wording",
    release_range.wording_range); the installed SGLang (metadata only, never imported); the
    newest shipped catalogue.  source is "log", "option", "log style", "dump fields", "frame
    paths", "message wording", "installed" or "newest catalogue".
    """
    style_version = log_style.rsplit("-", 1)[0] if log_style else None
    style_source = "log style"
    if log_style and log_style.endswith("-fields"):
        style_source = "dump fields"
    elif log_style and log_style.endswith("-frames"):
        style_source = "frame paths"
    elif log_style and log_style.endswith("-wording"):
        style_source = "message wording"
    # the installed version is looked up only when nothing before it gives one: the lookup
    # searches every sys.path entry for SGLang's metadata (about 1 ms), and explain asks for
    # each of a log's launches and incidents (54 times on the benchmark's GiB)
    for value, source in ((log_version, "log"), (cli_version, "option"), (style_version, style_source),
                          (None, "installed")):
        if source == "installed":
            value = installed_version()
        if value and value.strip():
            version = value.strip().lstrip("vV")
            try:
                version_key(version)
            except ValueError:
                if source == "option":
                    raise  # the user's own typo: say so
                continue  # a log or a metadata record is not trusted to be well-formed
            return version, source
    return KNOWN_VERSIONS[-1], "newest catalogue"


def shipped_catalogue_for(version: str) -> str:
    """File name of the shipped catalogue nearest at-or-below ``version`` (the oldest when
    ``version`` predates them all; the newest when it is newer than all)."""
    files = _shipped_files()
    key = version_key(version)
    below = [v for v in KNOWN_VERSIONS if version_key(v) <= key]
    return files[below[-1] if below else KNOWN_VERSIONS[0]]


# --------------------------------------------------------------------------------------
# Dumping a live parser (used by scripts/gen_flag_catalog.py and by load_catalog)
# --------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-safe, deterministic form of a parser default or choice."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(item) for item in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    return {"repr": repr(value)}


def _action_record(action) -> dict[str, Any]:
    """One argparse action as the catalogue stores it: what argparse itself knows."""
    kind = _ACTION_NAMES.get(type(action).__name__, type(action).__name__)
    type_name = None
    if action.type is not None:
        raw = getattr(action.type, "__name__", type(action.type).__name__)
        type_name = _TYPE_NAMES.get(raw, raw)
    help_text = action.help if isinstance(action.help, str) else ""
    return {
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "action": kind,
        "nargs": action.nargs,
        "type": type_name,
        "choices": None if action.choices is None else _plain(action.choices),
        "default": _plain(action.default),
        "const": _plain(action.const),
        "help": help_text.strip().splitlines()[0].strip() if help_text.strip() else "",
    }


def _field_defaults(server_args_cls) -> tuple[dict[str, Any], list[str]]:
    """ServerArgs field defaults (a dataclass in 0.5.9, a msgspec Struct in 0.5.23):
    (name -> default, names without a default)."""
    defaults: dict[str, Any] = {}
    required: list[str] = []
    if dataclasses.is_dataclass(server_args_cls):
        fields, missing = dataclasses.fields(server_args_cls), dataclasses.MISSING
    else:
        import msgspec  # SGLang >= 0.5.2x defines ServerArgs with msgspec.defstruct

        fields, missing = msgspec.structs.fields(server_args_cls), msgspec.NODEFAULT
    for field in fields:  # both kinds of field have name, default and default_factory
        if field.default is not missing:
            defaults[field.name] = _plain(field.default)
        elif field.default_factory is not missing:
            defaults[field.name] = _plain(field.default_factory())
        else:
            required.append(field.name)
    return defaults, sorted(required)


def _live_parser():
    """(argparse parser built by the installed SGLang, its ServerArgs class)."""
    import argparse

    from sglang.srt.server_args import ServerArgs  # lazy: heavy, and optional

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser, ServerArgs


def snapshot_parser(parser=None, server_args_cls=None) -> dict[str, Any]:
    """The catalogue body for the installed SGLang: every parser action and every ServerArgs
    field default, in a deterministic order.  This is what the shipped catalogues contain."""
    if parser is None or server_args_cls is None:
        parser, server_args_cls = _live_parser()
    actions = sorted((_action_record(a) for a in parser._actions),
                     key=lambda r: (r["option_strings"], r["dest"]))
    defaults, required = _field_defaults(server_args_cls)
    return {"actions": actions, "fields": defaults, "fields_without_default": required}


def catalogue_json(document: dict[str, Any]) -> str:
    """The exact bytes a catalogue file holds (sorted keys, so regeneration is identical)."""
    return json.dumps(document, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


# --------------------------------------------------------------------------------------
# Flags and catalogues
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FlagSpec:
    """One spelling family of one argparse action (a ``--x/--no-x`` pair is two specs, so
    that a canonical name never flips a switch's meaning)."""

    name: str                       # canonical long option, e.g. "--tp-size"
    aliases: tuple[str, ...]        # other option strings, e.g. ("--tensor-parallel-size",)
    dest: str                       # the ServerArgs field it sets, e.g. "tp_size"
    takes_value: bool               # False for store_true / store_false style switches
    type: str                       # "int" | "float" | "str" | "bool" | "json" | ...
    choices: tuple | None
    default: Any
    nargs: str | int | None
    action: str = "store"           # "store", "store_true", "boolean_optional", "help", ...
    help: str = ""                  # first line of the parser's help

    @property
    def deprecated(self) -> bool:
        """SGLang registers a deprecated flag with its own Deprecated* action class
        (0.5.23's `--disable-cuda-graph`, `--enable-dp-attention`): avoid emitting it."""
        return self.action.startswith("Deprecated")


def free_text(spec: FlagSpec) -> bool:
    """A flag whose value is free text (a path, a name, JSON): it takes a value that is neither a
    number nor one of listed choices.  Its parser accepts any word, so the catalogue's validation
    cannot tell a value from prose: a value a log's message gives it is only the message's when
    the message quotes it ("--ssl-certfile and --ssl-keyfile" names two flags, not the file
    "and")."""
    return spec.takes_value and spec.choices is None and not (
        spec.type in ("int", "float") or spec.type.endswith("_int"))


def quoted_in(text: str, value: str) -> bool:
    """``value`` appears in ``text`` between quotes or backticks (``'x'``, ``"x"``, `` `x` ``)."""
    return re.search(r"[`'\"]" + re.escape(value) + r"[`'\"]", text) is not None


def _field_name(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def _specs_of(record: dict[str, Any], fields: set[str], shared: bool = False) -> list[FlagSpec]:
    """FlagSpecs of one dumped action.  Canonical name: the long option that names a
    ServerArgs field (0.5.9's `--tensor-parallel-size/--tp-size` -> `--tp-size`, the spelling
    both versions share and the dump uses), else the first long option.

    ``shared``: the record belongs to a shipped catalogue (``_document``'s, kept for the process
    and never modified): its specs are made once and handed to every release that holds the same
    record (the delta chain shares an unchanged action's record between releases), for the same
    canonical field.  A paste whose release is a guess reads the spelling of every shipped
    release (remedies._most_taken): 92 catalogues, ~20,000 records, 110 ms of its ~270 ms."""
    kept = _SHARED_SPECS.get(id(record)) if shared else None
    if kept is None or kept[0] is not record:
        longs = [o for o in record["option_strings"] if o.startswith("--")]
        kept = (record, longs, [_field_name(o) for o in longs], {})
        if shared:  # (the record is kept in the entry: its id is no other record's while it lives)
            _SHARED_SPECS[id(record)] = kept
    _, longs, named, by_dest = kept
    if not longs:
        return []
    dest = next((n for n in named if n in fields), record["dest"])
    specs = by_dest.get(dest)
    if specs is None:
        specs = by_dest[dest] = _make_specs(record, longs, dest)
    return specs


# id of a shipped catalogue's action record -> (the record, its long options, their field
# names, dest -> its specs): _specs_of
_SHARED_SPECS: dict[int, tuple[dict[str, Any], list[str], list[str], dict[str, list[FlagSpec]]]] = {}


def _make_specs(record: dict[str, Any], longs: list[str], dest: str) -> list[FlagSpec]:
    """_specs_of's specs of ``record``, whose long options are ``longs``, setting ``dest``."""
    kind = record["action"]
    nargs = record["nargs"]
    takes_value = nargs != 0
    choices = tuple(record["choices"]) if record["choices"] is not None else None
    type_name = record["type"] or ("bool" if not takes_value else "str")
    if kind == "boolean_optional":
        negatives = [o for o in longs if o.startswith("--no-")]
        positives = [o for o in longs if o not in negatives]
        groups = [(positives, record["default"]), (negatives, record["default"])]
    else:
        groups = [(longs, record["default"])]
    specs = []
    for group, default in groups:
        if not group:
            continue
        name = next((o for o in group if _field_name(o) == dest), group[0])
        specs.append(FlagSpec(
            name=name,
            aliases=tuple(o for o in group if o != name),
            dest=dest,
            takes_value=takes_value,
            type=type_name,
            choices=choices,
            default=default,
            nargs=nargs,
            action=kind,
            help=record["help"],
        ))
    return specs


class Catalog:
    """The flags of one SGLang version, with argparse's spelling rules."""

    def __init__(self, version: str, source: str, body: dict[str, Any],
                 live_actions: dict[str, Any] | None = None, shared: bool = False):
        """``shared``: ``body`` is a shipped catalogue's document (_specs_of)."""
        self.version = version
        self.source = source
        self.body = body
        self._fields: dict[str, Any] = dict(body.get("fields", {}))
        names = set(self._fields) | set(body.get("fields_without_default", []))
        self.specs: list[FlagSpec] = []
        self._by_option: dict[str, FlagSpec] = {}
        for record in body["actions"]:
            for spec in _specs_of(record, names, shared):
                self.specs.append(spec)
                for option in (spec.name, *spec.aliases):
                    self._by_option[option] = spec
        # argparse considers every option string when resolving a prefix, -h/--help included.
        self._options = sorted(self._by_option)
        self._by_dest: dict[str, FlagSpec] = {}
        for spec in self.specs:
            self._by_dest.setdefault(spec.dest, spec)
        by_option = self._by_option
        for record in body["actions"]:  # 0.5.9's dest "tensor_parallel_size" finds --tp-size
            for option in record["option_strings"]:
                if option in by_option:
                    self._by_dest.setdefault(record["dest"], by_option[option])
                    break
        self._live_actions = live_actions or {}

    def __repr__(self) -> str:
        return f"Catalog({self.version!r}, source={self.source!r}, flags={len(self.specs)})"

    # -- spelling --------------------------------------------------------------------

    def _matches(self, flag: str) -> tuple[FlagSpec | None, list[str]]:
        """(spec, candidates) with argparse's rules: an exact option string wins, else every
        option string the text is a prefix of; one match resolves, several are ambiguous."""
        text = flag.split("=", 1)[0].strip()
        if text in self._by_option:
            return self._by_option[text], [text]
        if not text.startswith("--") or len(text) <= 2:
            return None, []
        candidates = [o for o in self._options if o.startswith(text)]
        if len(candidates) == 1:
            return self._by_option[candidates[0]], candidates
        return None, candidates

    def spec(self, flag: str) -> FlagSpec | None:
        """The flag's spec; accepts aliases and unique argparse prefixes ("--tp", "--mem-frac")."""
        return self._matches(flag)[0]

    def canonical(self, flag: str) -> str | None:
        found = self.spec(flag)
        return found.name if found else None

    def has_option(self, option: str) -> bool:
        """``option`` is exactly one of this release's option strings (an alias counts; a
        prefix argparse would accept does not)."""
        return option in self._by_option

    def by_dest(self, dest: str) -> FlagSpec | None:
        """The flag that sets ServerArgs field (or argparse dest) ``dest``."""
        return self._by_dest.get(dest)

    def defaults(self) -> dict[str, Any]:
        """dest -> default as SGLang's parser gives it (the parser default of each flag)."""
        out: dict[str, Any] = {}
        for spec in self.specs:
            if spec.action != "help":
                out.setdefault(spec.dest, spec.default)
        return out

    def field_defaults(self) -> dict[str, Any]:
        """ServerArgs field -> its declared default (the names the log's dump uses)."""
        return dict(self._fields)

    # -- values ----------------------------------------------------------------------

    def validate(self, flag: str, value: Any, *, ours: bool = True) -> str | None:
        """None when ``flag value`` would be accepted by this version's parser and is safe to
        put into argv; else a one-line reason.  Switches take ``True`` only; a list is for
        nargs flags; each value is rendered as ``str(value)``.  ``ours=False`` checks a value
        of the user's own command: parser type and choices only (a path with a space is the
        user's to give; the shell-metacharacter refusal is for values the doctor emits)."""
        found, candidates = self._matches(flag)
        where = f"SGLang {self.version}"
        if found is None:
            if len(candidates) > 1:
                return (f"ambiguous option in {where}: {flag} could match "
                        f"{', '.join(candidates)}")
            hint = self.closest(flag, 1)
            return (f"{flag} is not a flag of {where}"
                    + (f" (closest: {hint[0]})" if hint else ""))
        if found.action in ("help", "version"):
            return f"{found.name} is not a launch setting"
        if not found.takes_value:
            if value is True:
                return None
            return f"{found.name} is a switch and takes no value: give True to pass it"
        items = self._value_items(found, value)
        if isinstance(items, str):
            return items
        for item in items:
            reason = self._check_item(found, item, ours)
            if reason:
                return reason
        return None

    def _value_items(self, spec: FlagSpec, value: Any) -> list[Any] | str:
        if value is None:
            return f"{spec.name} needs a value"
        many = spec.nargs in ("+", "*") or isinstance(spec.nargs, int)
        if isinstance(value, (list, tuple)):
            if not many:
                return f"{spec.name} takes one value, not a list"
            items = list(value)
        else:
            items = [value]
        if spec.nargs == "+" and not items:
            return f"{spec.name} needs at least one value"
        if isinstance(spec.nargs, int) and len(items) != spec.nargs:
            return f"{spec.name} takes exactly {spec.nargs} values, got {len(items)}"
        return items

    def _check_item(self, spec: FlagSpec, item: Any, ours: bool = True) -> str | None:
        if isinstance(item, bool):
            return f"{spec.name} takes a {spec.type} value, not a boolean"
        if isinstance(item, float) and not math.isfinite(item):
            return f"{spec.name}: {item!r} is not a finite number"
        if not isinstance(item, (str, int, float)):
            return f"{spec.name}: a {type(item).__name__} cannot go into a command line"
        text = str(item)
        reason = unsafe_reason(text) if ours else None
        if reason:
            return f"{spec.name}: refused value {text!r}: {reason}"
        try:
            converted = self._convert(spec, text)
        except (ValueError, TypeError, ArithmeticError) as exc:
            return f"{spec.name}: invalid {spec.type} value {text!r}" + (
                f" ({_first_line(exc)})" if _first_line(exc) else "")
        except Exception as exc:  # argparse.ArgumentTypeError and SGLang's own errors
            return f"{spec.name}: invalid value {text!r} ({_first_line(exc)})"
        if isinstance(converted, float) and not math.isfinite(converted):
            return f"{spec.name}: {text!r} is not a finite number"
        if spec.choices is not None and converted not in spec.choices:
            return (f"{spec.name}: invalid choice {text!r} in SGLang {self.version} "
                    f"(choose from {', '.join(map(str, spec.choices))})")
        return None

    def _convert(self, spec: FlagSpec, text: str) -> Any:
        """The value argparse would store: the live parser's own type callable when this
        catalogue came from it, else the named type's reimplementation."""
        live = self._live_actions.get(spec.name)
        if live is not None and live.type is not None:
            return live.type(text)
        return _TYPE_CHECKS.get(spec.type, str)(text)

    # -- typos and renames -----------------------------------------------------------

    def closest(self, flag: str, n: int = 3) -> list[str]:
        """Canonical names nearest to ``flag``: a known flag itself; a renamed flag's new
        spelling; the options an ambiguous prefix could mean; then difflib's best ratios
        over every canonical name and alias."""
        text = flag.split("=", 1)[0].strip()
        found, candidates = self._matches(text)
        if found is not None:
            return [found.name]
        out: list[str] = []
        renamed = translate(text, self)
        if renamed:
            out.append(renamed)
        out.extend(self._by_option[o].name for o in candidates)
        pool = [o for o in self._options if o.startswith("--") and o != "--help"]
        out.extend(self._by_option[o].name
                   for o in difflib.get_close_matches(text, pool, n=n * 3, cutoff=0.6))
        return _unique(out)[:n]


def _negative(spec: FlagSpec) -> bool:
    """True for the `--no-x` half of a `--x/--no-x` pair (it stores the opposite)."""
    return spec.action == "boolean_optional" and spec.name.startswith("--no-")


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def unsafe_reason(text: str) -> str | None:
    """Why ``text`` may not go into a launch command, or None.  Control characters (newline,
    NUL, Unicode line separators and format controls such as bidi overrides) and shell
    metacharacters are refused always; a leading '-' would be read by argparse as a flag."""
    for char in text:
        if char in "\n\r":
            return "contains a newline"
        if char == "\0":
            return "contains a NUL byte"
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return f"contains control character U+{ord(char):04X}"
        if char in SHELL_METACHARACTERS:
            return f"contains shell metacharacter {char!r}"
    if text.startswith("-") and not _NEGATIVE_NUMBER.match(text):
        return "starts with '-' (argparse would read it as a flag)"
    return None


# What argparse (3.11, ArgumentParser._negative_number_matcher) takes for a negative number
# rather than an option: "-1", "-0.5", "-.5" -- not "-1e5" or "-inf".
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


# -- named types of the shipped catalogues (what SGLang's own type callables accept) ------


def _int(text: str) -> int:
    return int(text)


def _human_readable_int(text: str) -> int:
    """SGLang 0.5.23 utils/common.py:3394: an int, or an SI (k, M, G, T; decimals allowed)
    or IEC (Ki, Mi, Gi, Ti; integers only) suffixed number; suffixes are case-sensitive."""
    value = text.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        from decimal import Decimal

        number, suffix = match.groups()
        iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
        si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
        if suffix in iec:
            if "." in number:
                raise ValueError(f"decimals are not allowed with IEC suffix {suffix!r}")
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    return int(value)


def _json(text: str) -> Any:
    return json.loads(text)


def _json_object(text: str) -> dict:
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError(f"must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _cuda_graph_backend(text: str) -> str:
    """SGLang 0.5.23 model_executor/cuda_graph_config.py:237 refuses the retired backend."""
    if text == "tc_piecewise":
        raise ValueError("tc_piecewise was removed; select breakable, full, or disabled")
    return text


def _nullable_str(text: str) -> str | None:
    return None if not text or text == "None" else text


_TYPE_CHECKS: dict[str, Callable[[str], Any]] = {
    "int": _int,
    "float": float,
    "str": str,
    "human_readable_int": _human_readable_int,
    "json": _json,
    "json_list_type": _json,
    "nullable_str": _nullable_str,
    "parse_cuda_graph_backend_arg": _cuda_graph_backend,
    "parse_cuda_graph_config_arg": _json_object,
}


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


# -- storage: a base and per-release differences ------------------------------------------
#
# Ninety-odd releases of whole catalogues would be ~15 MB; consecutive releases differ in a
# few actions and defaults.  So the oldest shipped release is stored whole and every later
# one as its differences from the release before it: actions are keyed by (option strings,
# dest) -- removed keys, added or changed records --, fields by name -- removed names,
# added or changed defaults --; ``fields_without_default`` and ``generated_by`` are stored
# whole (they are short).  Rebuilding a release applies the chain from the base;
# :func:`catalogue_json` of the rebuilt document is byte for byte what the generator dumped.


def _action_key(record: dict[str, Any]) -> str:
    return json.dumps([record["option_strings"], record["dest"]])


def _sorted_actions(actions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(actions, key=lambda r: (r["option_strings"], r["dest"]))


def make_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The stored form of catalogue ``after`` as differences from catalogue ``before``."""
    old = {_action_key(r): r for r in before["actions"]}
    new = {_action_key(r): r for r in after["actions"]}
    old_fields, new_fields = before["fields"], after["fields"]
    return {
        "catalogue_format": after["catalogue_format"],
        "sglang_version": after["sglang_version"],
        "delta_from": before["sglang_version"],
        "generated_by": after["generated_by"],
        "actions_removed": sorted(json.loads(k) for k in old.keys() - new.keys()),
        "actions_set": _sorted_actions(r for k, r in new.items() if old.get(k) != r),
        "fields_removed": sorted(old_fields.keys() - new_fields.keys()),
        "fields_set": {k: v for k, v in new_fields.items()
                       if k not in old_fields or old_fields[k] != v},
        "fields_without_default": after["fields_without_default"],
    }


def apply_delta(before: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Catalogue ``delta`` describes, rebuilt on ``before`` (neither is modified)."""
    if delta["delta_from"] != before["sglang_version"]:
        raise ValueError(f"delta for {delta['sglang_version']} is from "
                         f"{delta['delta_from']}, not {before['sglang_version']}")
    actions = {_tuple_key(r): r for r in before["actions"]}
    fields = dict(before["fields"])
    _step(actions, fields, delta)
    return _whole_document(delta, actions.values(), fields)


def _tuple_key(action: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    # (a tuple key here: _action_key's json.dumps for every action of every release in the
    # chain was about half of loading a catalogue; the result is sorted, so the key's form
    # does not show)
    return tuple(action["option_strings"]), action["dest"]


def _step(actions: dict[tuple[tuple[str, ...], str], dict[str, Any]], fields: dict[str, Any],
          delta: dict[str, Any]) -> None:
    """Apply one release's ``delta`` to keyed ``actions`` and ``fields``, in place."""
    for key in delta["actions_removed"]:
        actions.pop((tuple(key[0]), key[1]), None)
    actions.update((_tuple_key(r), r) for r in delta["actions_set"])
    for name in delta["fields_removed"]:
        fields.pop(name, None)
    fields.update(delta["fields_set"])


def _whole_document(meta: dict[str, Any], actions: Iterable[dict[str, Any]], fields: dict[str, Any]) -> dict[str, Any]:
    """A whole catalogue: ``meta``'s release, format and generator, these actions and fields sorted."""
    return {
        "catalogue_format": meta["catalogue_format"],
        "sglang_version": meta["sglang_version"],
        "generated_by": meta["generated_by"],
        "actions": _sorted_actions(actions),
        "fields": dict(sorted(fields.items())),
        "fields_without_default": meta["fields_without_default"],
    }


def pack_catalogues(documents: Iterable[dict[str, Any]]) -> dict[str, str]:
    """file name -> text of the stored form of these whole catalogues: the oldest whole,
    each later one as a delta from the one before it."""
    ordered = sorted(documents, key=lambda d: version_key(d["sglang_version"]))
    files: dict[str, str] = {}
    previous = None
    for document in ordered:
        version = document["sglang_version"]
        if previous is None:
            files[f"sglang-{version}.json"] = catalogue_json(document)
        else:
            files[f"sglang-{version}.delta.json"] = catalogue_json(make_delta(previous, document))
        previous = document
    return files


@functools.lru_cache(maxsize=None)
def _catalogue_dir():
    return importlib.resources.files(_CATALOGUE_PACKAGE)


@functools.lru_cache(maxsize=None)
def _read_stored(file_name: str) -> dict[str, Any]:
    """A stored file, parsed once per process (shared: callers must not modify it; the
    delta chain and release_range both read every file of it)."""
    return json.loads((_catalogue_dir() / file_name).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _document(version: str) -> dict[str, Any]:
    """Shipped release ``version``'s whole catalogue (shared: callers must not modify it).

    The chain from the base is applied to one keyed set of actions and fields, and only
    this release's document is built and sorted: what ``apply_delta`` gives step by step,
    without a sorted document of every release on the way (a log's first launch paid for
    92 of them, in the serial part of explain; docs/PERFORMANCE.md, session 18)."""
    stored = _read_stored(_stored_files()[version])
    if "delta_from" not in stored:
        return stored
    actions, fields = _keyed(version)
    return _whole_document(stored, actions.values(), fields)


def _keyed(version: str) -> tuple[dict[tuple[tuple[str, ...], str], dict[str, Any]], dict[str, Any]]:
    """Release ``version``'s keyed actions and its fields (shared: callers must not modify
    them): the deltas after the nearest release already keyed (or the base) applied to a copy
    of its, and kept.  One release costs what the chain from the base costs; every release in
    order (a paste whose release is a guess reads them all: remedies._most_taken) applies each
    delta once, not the chain from the base for each (4,300 steps for 92: 27 ms)."""
    chain = []
    at = version
    while at not in _KEYED:
        stored = _read_stored(_stored_files()[at])
        if "delta_from" not in stored:
            _KEYED[at] = {_tuple_key(r): r for r in stored["actions"]}, dict(stored["fields"])
            break
        chain.append(stored)
        at = stored["delta_from"]
    actions, fields = _KEYED[at]
    if chain:
        actions, fields = dict(actions), dict(fields)
        for delta in reversed(chain):
            _step(actions, fields, delta)
        _KEYED[version] = actions, fields
    return actions, fields


# release -> its keyed actions and fields (_keyed)
_KEYED: dict[str, tuple[dict[tuple[tuple[str, ...], str], dict[str, Any]], dict[str, Any]]] = {}


def read_shipped(file_name: str) -> dict[str, Any]:
    """A shipped catalogue document, whole (``sglang-V.json``, however it is stored)."""
    return copy.deepcopy(_shipped_document(file_name))


def _shipped_document(file_name: str) -> dict[str, Any]:
    """``read_shipped`` without the copy, for the cached catalogues built here (a ``Catalog``
    only reads its body; the deep copy was 20k calls for the two a log's launches need)."""
    match = _CATALOGUE_NAME.match(file_name)
    if not match or match.group("version") not in _stored_files():
        raise FileNotFoundError(f"no shipped catalogue {file_name}")
    return _document(match.group("version"))


@functools.lru_cache(maxsize=None)
def load_catalog(version: str, prefer_shipped: bool = False) -> Catalog:
    """The catalogue of SGLang ``version``: its real parser when that version is the
    installed one, else the shipped catalogue nearest at-or-below it.

    ``prefer_shipped``: take the shipped catalogue when one exists for exactly this version
    (the drift test holds it equal to the real parser), so that reading a log does not pay
    for importing SGLang and torch (10-60 s here); the live parser is still used for an
    installed version no catalogue covers.
    """
    version = version.strip().lstrip("vV")
    version_key(version)
    fallback_note = ""
    if not (prefer_shipped and version in KNOWN_VERSIONS) and installed_version() == version:
        try:
            parser, server_args_cls = _live_parser()
            body = snapshot_parser(parser, server_args_cls)
            live = {o: a for a in parser._actions for o in a.option_strings}
            return Catalog(version, "parser", body, live_actions=live)
        except Exception as exc:  # a broken or partial install: fall back, but say so
            fallback_note = (f" (the installed SGLang's parser failed: "
                             f"{type(exc).__name__}: {_first_line(exc)})")
    file_name = shipped_catalogue_for(version)
    document = _shipped_document(file_name)
    note = fallback_note
    if document["sglang_version"] != version and not note:
        note = f" (nearest shipped to {version})"
    return Catalog(version, f"catalogue {file_name}{note}", document, shared=True)


def _shipped_catalogs() -> list[Catalog]:
    return [shipped_catalog(v) for v in KNOWN_VERSIONS]


@functools.lru_cache(maxsize=None)
def shipped_catalog(version: str) -> Catalog:
    """The shipped catalogue of exactly ``version`` (one of KNOWN_VERSIONS), never the
    live parser: what other versions' spellings are looked up in."""
    file_name = _shipped_files()[version]
    return Catalog(version, f"catalogue {file_name}", _shipped_document(file_name), shared=True)


@dataclasses.dataclass(frozen=True)
class Rename:
    """A setting whose option string changed between two adjacent shipped releases."""

    old: str            # canonical option in ``before``
    new: str            # canonical option in ``after``
    before: str         # the release that last has ``old``
    after: str          # the next shipped release, the first with ``new``
    evidence: str       # "dest" (same ServerArgs field), "help" (same help text) or
                        # "deprecated alias" (the old option became an alias of the new one)


def _renames_between(a: Catalog, b: Catalog) -> list[Rename]:
    gone = [s for s in a.specs if s.action not in ("help", "version")
            and not any(o in b._by_option for o in (s.name, *s.aliases))]
    came = [s for s in b.specs if s.action not in ("help", "version")
            and not any(o in a._by_option for o in (s.name, *s.aliases))]
    out = []
    for old in gone:
        for new in came:
            if old.takes_value != new.takes_value or _negative(old) != _negative(new):
                continue
            if old.dest == new.dest:
                evidence = "dest"
            elif old.help and old.help == new.help:
                evidence = "help"
            else:
                continue
            out.append(Rename(old.name, new.name, a.version, b.version, evidence))
    # An option that stays but becomes a Deprecated* alias of a new option: same dest as
    # the new option's in ``b`` (0.5.14: `--mamba-scheduler-strategy` ->
    # `--mamba-radix-cache-strategy`).
    for record in b.body["actions"]:
        if not record["action"].startswith("Deprecated"):
            continue
        kept = [o for o in record["option_strings"] if o.startswith("--")
                and a._by_option.get(o) is not None and not a._by_option[o].deprecated]
        targets = [t for t in b.body["actions"] if t is not record and t["dest"] == record["dest"]
                   and not t["action"].startswith("Deprecated")
                   and not any(o in a._by_option for o in t["option_strings"])]
        for option in kept:
            for target in targets:
                new = b.spec(next((o for o in target["option_strings"] if o.startswith("--")), ""))
                if new is not None and new.takes_value == a._by_option[option].takes_value:
                    out.append(Rename(a._by_option[option].name, new.name, a.version, b.version,
                                      "deprecated alias"))
    return out


@functools.lru_cache(maxsize=None)
def derived_renames() -> tuple[Rename, ...]:
    """Every rename between adjacent shipped releases, found in the catalogues' data: an
    option that disappears while another appears with the same ServerArgs field, or with
    the same (non-empty) help text, and the same kind (switch or value); or an option that
    turns into a deprecated alias of a newly added one."""
    catalogs = _shipped_catalogs()
    out: list[Rename] = []
    for a, b in zip(catalogs, catalogs[1:]):
        out.extend(_renames_between(a, b))
    return tuple(out)


PRE_040_FILE = "pre-0.4.0-renames.json"


@functools.lru_cache(maxsize=None)
def _pre_040() -> dict[str, Any]:
    path = importlib.resources.files(_CATALOGUE_PACKAGE) / PRE_040_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


@functools.lru_cache(maxsize=None)
def pre_040_renames() -> tuple[Rename, ...]:
    """The renames between the releases before 0.4.0 (0.1.x-0.3.x, which have no shipped
    catalogue) and on to 0.4.0, found by scripts/gen_pre040_renames.py in each wheel's
    server_args.py: the rule of :func:`derived_renames`, plus the same choices, a nearly equal
    help text or a name containing the other's (``--schedule-heuristic`` ->
    ``--schedule-policy``, 0.2.7)."""
    return tuple(Rename(r["old"], r["new"], r["before"], r["after"], r["evidence"])
                 for r in _pre_040().get("renames", ()))


def pre_040_options() -> dict[str, tuple[str, str]]:
    """Option strings of the releases before 0.4.0 that no shipped catalogue has -> (first,
    last) release that has them."""
    return {o: (v["first"], v["last"]) for o, v in _pre_040().get("options", {}).items()}


@functools.lru_cache(maxsize=None)
def _option_meanings() -> dict[str, tuple[tuple[str, bool, bool], ...]]:
    """option string -> the (dest, takes_value, negative) it had in any shipped release,
    newest release first."""
    found: dict[str, dict[tuple[str, bool, bool], None]] = {}
    for catalog in reversed(_shipped_catalogs()):
        for spec in catalog.specs:
            if spec.action in ("help", "version"):
                continue
            for option in (spec.name, *spec.aliases):
                found.setdefault(option, {})[(spec.dest, spec.takes_value, _negative(spec))] = None
    return {option: tuple(meanings) for option, meanings in found.items()}


def translate(flag: str, to: Catalog) -> str | None:
    """The spelling of the same setting in ``to``'s version, or None.  The flag may be any
    shipped release's exact spelling: it keeps its name if ``to`` has it exactly, else it
    follows its ServerArgs field (dest) into ``to``, else the renames derived from the
    catalogues (:func:`derived_renames`) and those of the releases before 0.4.0
    (:func:`pre_040_renames`), followed in either direction and transitively."""
    text = flag.split("=", 1)[0].strip()
    if text in to._by_option:
        return to._by_option[text].name

    def same_setting(option: str) -> str | None:
        for dest, takes_value, negative in _option_meanings().get(option, ()):
            same = [t for t in to.specs if t.dest == dest
                    and t.takes_value == takes_value and _negative(t) == negative]
            if same:
                return same[0].name
        return None

    found = same_setting(text)
    if found:
        return found
    seen, frontier = {text}, [text]
    while frontier:
        following = []
        for option in frontier:
            for rename in (*pre_040_renames(), *derived_renames()):
                for source, target in ((rename.old, rename.new), (rename.new, rename.old)):
                    if source == option and target not in seen:
                        seen.add(target)
                        following.append(target)
        for option in following:
            if option in to._by_option:
                return to._by_option[option].name
            found = same_setting(option)
            if found:
                return found
        frontier = following
    return None


# --------------------------------------------------------------------------------------
# What changed between two releases
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FlagChange:
    """One difference between two releases' parsers."""

    kind: str            # "added" | "removed" | "renamed" | "changed"
    option: str          # the option string (for "renamed": the old one)
    new_option: str = ""  # "renamed": the new spelling
    detail: str = ""     # "changed": what changed, e.g. "default 0.88 -> None"


def option_strings(catalog: Catalog) -> list[str]:
    """Every option string of the release's parser (aliases included), sorted."""
    return sorted(o for record in catalog.body["actions"] for o in record["option_strings"])


def diff_catalogs(a: Catalog, b: Catalog) -> list[FlagChange]:
    """What changed from release ``a`` to release ``b``: option strings added and removed,
    renames (a removed option whose setting ``b`` spells differently: same ServerArgs field,
    or a rename derived between adjacent releases), and for options in both a changed
    type, nargs, choices or parser default."""
    old, new = set(option_strings(a)), set(option_strings(b))
    changes: list[FlagChange] = []
    renamed_to: set[str] = set()
    for option in sorted(old - new):
        target = translate(option, b) if a.spec(option) is not None else None
        if target and target not in old:
            changes.append(FlagChange("renamed", option, new_option=target))
            renamed_to.add(target)
        else:
            changes.append(FlagChange("removed", option))
    changes.extend(FlagChange("added", o) for o in sorted(new - old - renamed_to))
    for option in sorted(old & new):
        x, y = a._by_option.get(option), b._by_option.get(option)
        if x is None or y is None or option != x.name:
            continue
        details = [f"{what} {before!r} -> {after!r}"
                   for what, before, after in (("type", x.type, y.type), ("nargs", x.nargs, y.nargs),
                                               ("choices", x.choices, y.choices),
                                               ("default", x.default, y.default))
                   if before != after]
        if details:
            changes.append(FlagChange("changed", option, detail="; ".join(details)))
    order = {"renamed": 0, "removed": 1, "added": 2, "changed": 3}
    return sorted(changes, key=lambda c: (order[c.kind], c.option))


# --------------------------------------------------------------------------------------
# Successors of removed flags
# --------------------------------------------------------------------------------------

# A deprecated flag's help text, as SGLang's parser printed it, naming the flag (and value)
# that replaces it: "Please use '--attention-backend flashinfer' instead", "Please set
# `--moe-runner-backend` to 'flashinfer_cutedsl' instead", "Deprecated alias for
# --cuda-graph-backend-prefill=disabled", "[Deprecated] Use --enable-prefill-cp instead",
# "Use --image-processor-backend=pil instead"
_SUCCESSOR = re.compile(
    r"\b(?:use|alias for|set)\s+[`'\"]?(?P<flag>--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)[`'\"]?"
    r"(?:(?:\s+to\s+|=|\s+)[`'\"]?(?P<value>[A-Za-z0-9_.+-]+)(?![{\w]))?", re.IGNORECASE)


# "Please set `--ep-size` to the same value as `--tp-size` instead" (0.5.3-0.5.4's note on
# --enable-ep-moe): the successor takes the value of another flag of the same launch
_SAME_AS = re.compile(r"\s*to the same value as\s+[`'\"]?(?P<flag>--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class SameAs:
    """A successor's value that is another flag's value in the same launch (``flag``)."""

    flag: str


@functools.lru_cache(maxsize=None)
def _successor_hints() -> dict[str, tuple[str, "str | SameAs | None"]]:
    """option -> (flag, value) the newest shipped release whose help text calls the option
    deprecated names as its replacement."""
    out: dict[str, tuple[str, str | None]] = {}
    for catalog in reversed(_shipped_catalogs()):
        for spec in catalog.specs:
            text = spec.help or ""
            if spec.name in out or not (spec.deprecated or "deprecat" in text.lower() or "removed" in text.lower()):
                continue
            m = _SUCCESSOR.search(text)
            if m is None or m.group("flag") == spec.name:
                continue
            value = m.group("value")
            value = value.rstrip(".,") if value is not None else None
            same = _SAME_AS.match(text, m.end("flag") + (1 if text[m.end("flag"):m.end("flag") + 1] in "`'\"" else 0))
            if same is not None:
                for option in (spec.name, *spec.aliases):
                    out.setdefault(option, (m.group("flag"), SameAs(same.group("flag"))))
                continue
            if value is not None and (value.lower() in ("instead", "and", "or", "with", "to", "") or value.startswith("-")):
                value = None
            for option in (spec.name, *spec.aliases):
                out.setdefault(option, (m.group("flag"), value))
    return out


def successor(flag: str, to: Catalog) -> tuple[str, Any] | None:
    """The flag and value that replace ``flag`` (an option of some shipped release that ``to``
    lacks), as the deprecated option's own help text in SGLang's parser names them, spelled
    for ``to`` and validated by it (a switch successor is ``True``; a value flag whose help
    names no value comes with ``None``); None when no release's help names one or ``to``
    would refuse it."""
    hint = _successor_hints().get(flag.split("=", 1)[0].strip())
    if hint is None:
        return None
    name, value = hint
    target = to.canonical(name) if to.has_option(name) else translate(name, to)
    if target is None:
        return None
    spec = to.spec(target)
    if spec is None or spec.deprecated:
        return None
    if isinstance(value, SameAs):  # the value of another flag of the launch, spelled for ``to``
        other = to.canonical(value.flag) if to.has_option(value.flag) else translate(value.flag, to)
        return (target, SameAs(other)) if other is not None and spec.takes_value else None
    chosen: Any = True if not spec.takes_value else value
    if chosen is None:
        return target, None  # a value flag whose help names no value: the caller's own value, checked there
    if to.validate(target, chosen) is not None:
        # a help text's misspelt value (0.4.0: "Please use '--sampling-backend pytroch'"): the
        # one choice it is a letter-swap away from, or nothing
        chosen = close_choice(spec, chosen)
        if chosen is None or to.validate(target, chosen) is not None:
            return None
    return target, chosen


def close_choice(spec: "FlagSpec", value: Any) -> str | None:
    """The one choice of ``spec`` that ``value`` (a word a help text names) misspells, or None."""
    import difflib

    choices = [c for c in (spec.choices or ()) if isinstance(c, str)]
    if not isinstance(value, str) or not choices:
        return None
    close = difflib.get_close_matches(value, choices, n=2, cutoff=0.8)
    return close[0] if len(close) == 1 else None
