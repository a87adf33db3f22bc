"""Remedies: the named operations a rule's ``remedy`` list refers to.

Each operation turns a diagnosis into a ``model.Remediation`` (flags to set and unset,
environment variables, a note) or into nothing when it does not apply (the flag is already
at its bound, the planner has no model config, ...).  ``remediate`` runs a rule's remedies
in order: the first concrete one is the answer, the others are its ranked alternatives.

Every flag that leaves this module is spelled as the target version's catalogue spells it
and its value passed ``Catalog.validate``; values come from the rule's parameters, the
launch's own settings and arithmetic on them, never from free log text.
"""

from __future__ import annotations

import dataclasses
import math
import re
import socket
from dataclasses import dataclass
from typing import Any, Callable

from sglang_doctor.remedy import assumed, guarded, hardware as hardware_mod, launch_check, launch_command
from sglang_doctor.remedy import tradeoffs, trust
from sglang_doctor.model import Diagnosis, Remediation


@dataclass
class Context:
    """What a remedy may look at."""

    diagnosis: Diagnosis
    command: list[str] | None  # the known launch command (from run, or rebuilt from the dump)
    command_known: bool  # True when the command came from the user, not from the dump
    version: str
    catalog: Any
    hardware: Any
    model_config: dict | None
    warnings: list[str]
    version_source: str | None = None  # flags.resolve_version's source of ``version``
    # the releases a guessed version was chosen from (oldest first; ``version`` is the newest):
    # the traceback frames' range when version_source is "frame paths"
    version_range: tuple[str, ...] | None = None
    # changes proposed on a condition the log cannot show ("remove --x if your launch sets
    # it"): ranked after the changes that do not depend on it (``remediate``)
    conditional: list = dataclasses.field(default_factory=list)

    @property
    def guessed_range(self) -> tuple[str, ...] | None:
        """The releases the log may come from when its release is a guess (none named, no
        dump): every shipped release, or the range its traceback frames fit; None when the
        release is known (printed, given, or fitted to the dump)."""
        if self.version_source == "newest catalogue":
            from sglang_doctor.remedy import flags

            return flags.KNOWN_VERSIONS
        if self.version_source in ("frame paths", "message wording") and self.version_range:
            return tuple(self.version_range)
        return None

    @property
    def settings_unknown(self) -> bool:
        """Neither the user's command nor the log's dump shows the launch's settings."""
        return not self.command_known and not self.server_args

    @property
    def server_args(self) -> dict[str, Any]:
        launch = self.diagnosis.launch
        return dict(launch.server_args) if launch is not None else {}

    def flag(self, name: str) -> str | None:
        """The target version's spelling of a flag a rule names (renames followed)."""
        canonical = self.catalog.canonical(name)
        if canonical is not None:
            return canonical
        from sglang_doctor.remedy import flags

        return flags.translate(name, self.catalog)

    def current(self, flag: str) -> Any:
        """The flag's value in this launch: the command's, else the dump's, else the default."""
        value = launch_command.value_of(self.command, flag, self.catalog) if self.command_known else None
        if value is not None:
            return value
        spec = self.catalog.spec(flag)
        if spec is None:
            return None
        if spec.dest in self.server_args and self.server_args[spec.dest] is not None:
            return self.server_args[spec.dest]
        if self.command is not None:
            value = launch_command.value_of(self.command, flag, self.catalog)
            if value is not None:
                return value
        return spec.default

    def stated(self, flag: str) -> Any:
        """The flag's value as the user's command or the launch's dump states it, else None."""
        value = launch_command.value_of(self.command, flag, self.catalog) if self.command_known else None
        if value is not None:
            return value
        spec = self.catalog.spec(flag)
        if spec is not None and self.server_args.get(spec.dest) is not None:
            return self.server_args[spec.dest]
        return None

    def current_or_assumed(self, flag: str) -> tuple[Any, "assumed.Assumed | None"]:
        """The flag's value, and how it was assumed when neither the command nor the dump
        states it (the release's default: ``assumed.default_for``)."""
        value = self.stated(flag)
        if value is not None:
            return value, None
        spec = self.catalog.spec(flag)
        if spec is None:
            return None, None
        if self.command_known and spec.default is not None and spec.dest not in assumed.AUTO:
            return spec.default, None  # the user's command leaves it at the release's default
        gpu_gib = assumed.gpu_total_gib(line.text for line in self.diagnosis.incident.lines)
        guess = assumed.default_for(spec, self.version, self.hardware, self.server_args, self.model_config,
                                    version_source=self.version_source, gpu_gib=gpu_gib)
        return (guess.value, guess) if guess is not None else (None, None)

    def fill(self, value: Any) -> Any:
        """A parameter that may be a ``"{capture}"`` template."""
        if isinstance(value, str) and "{" in value:
            values = {**{k: v for k, v in self.server_args.items()}, **self.diagnosis.captures}
            try:
                return value.format_map(values)
            except (KeyError, ValueError, IndexError, AttributeError):
                return None
        return value


Op = Callable[[Context, dict], "Remediation | list[Remediation] | None"]
REGISTRY: dict[str, Op] = {}


def remedy(name: str) -> Callable[[Op], Op]:
    def register(fn: Op) -> Op:
        REGISTRY[name] = fn
        return fn

    return register


# -- numeric flags -----------------------------------------------------------------------


_number = launch_check.finite_number


def _as_type(spec: Any, number: float) -> Any:
    if spec.type == "float":
        return round(number, 3)
    return int(round(number))


def _span(releases: tuple[str, ...] | list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"


def _why_guessed(ctx: Context) -> str:
    if ctx.version_source == "frame paths":
        return f"the log does not name the release; its traceback frames fit SGLang {_span(ctx.guessed_range or ())}"
    if ctx.version_source == "message wording":
        return f"the log does not name the release; its message is worded as SGLang {_span(ctx.guessed_range or ())} print it"
    return "the log does not name the release"


def _for_unnamed_release(ctx: Context, written: str) -> tuple[Context, str | None]:
    """The context to spell a rule's flag in, and why it differs from ``ctx``'s.

    When the release is a guess (``ctx.guessed_range``: none named, or only the range the
    traceback frames fit; the target is its newest release) and that release has no flag
    spelled as the rule wrote it, nor any other spelling of it, the change is spelled as the
    releases of the range that have it (checked against the newest of them)."""
    releases = ctx.guessed_range
    if not releases or not written or ctx.catalog.canonical(written) is not None:
        return ctx, None
    from sglang_doctor.remedy import flags

    having = [v for v in releases if flags.shipped_catalog(v).canonical(written) == written]
    if not having:
        return ctx, None
    newest = having[-1]
    why = (f"as SGLang {_span(having)} spell it: {_why_guessed(ctx)}, and {ctx.version} "
           f"has no {written}")
    return dataclasses.replace(ctx, catalog=flags.shipped_catalog(newest), version=newest,
                               version_source="rule spelling"), why


def _spelled(rem: Remediation | None, spelled: str | None) -> Remediation | None:
    if rem is not None and spelled:
        rem.note += f" ({spelled})"
        rem.tradeoff = f"{rem.tradeoff}; {spelled}" if rem.tradeoff else spelled
        rem.safe = False
    return rem


def _other_spelling(ctx: Context, written: str, used: str) -> str | None:
    """When the release is a guess and releases of its range spell the setting ``used`` names
    otherwise (the rule's ``written`` name, or an older or newer name of the same setting):
    the clause naming them (one change, two names: the other name goes in the note, never in
    a second change)."""
    releases = ctx.guessed_range
    if not releases or not used:
        return None
    from sglang_doctor.remedy import flags

    spellings: dict[str, list[str]] = {}
    for version in releases:
        catalog = flags.shipped_catalog(version)
        name = written if written and catalog.canonical(written) == written else flags.translate(used, catalog)
        if name and name != used:
            spellings.setdefault(name, []).append(version)
    if not spellings:
        return None
    named = "; ".join(f"SGLang {_span(having)} spell it {name}" for name, having in spellings.items())
    return f"{named}: {_why_guessed(ctx)}"


def _takes(version: str, option: str) -> bool:
    """Release ``version``'s parser takes ``option`` as written (a deprecated alias counts)."""
    from sglang_doctor.remedy import flags

    return flags.shipped_catalog(version).has_option(option)


def _spelling_in(version: str, written: str) -> str | None:
    """Release ``version``'s own name for the setting a rule spells ``written``."""
    from sglang_doctor.remedy import flags

    catalog = flags.shipped_catalog(version)
    return written if catalog.canonical(written) == written else flags.translate(written, catalog)


def _most_taken(ctx: Context, written: str, own: str) -> tuple[Context, str] | None:
    """When the release is a guess and the setting was renamed inside its range: the context of
    the newest release that names it as most releases of the range take it, and the clause
    saying so, when that name is not the target release's ``own`` (0.4.0-0.5.19 take
    --cuda-graph-max-bs, 0.5.20 on only --cuda-graph-max-bs-decode: a change pasted into an
    unknown release is taken by more of them spelled the first way)."""
    releases = ctx.guessed_range
    if not releases or not written or not own:
        return None
    names = {v: _spelling_in(v, written) for v in releases}
    taken = {name: sum(_takes(v, name) for v in releases) for name in set(names.values()) if name}
    best = max(taken, key=lambda name: (taken[name], name == own))
    if best == own or taken[best] <= taken.get(own, 0):
        return None
    from sglang_doctor.remedy import flags

    newest = [v for v in releases if names[v] == best][-1]
    having = [v for v in releases if _takes(v, best)]
    newer = [v for v in releases if _takes(v, own)]
    why = (f"as SGLang {_span(having)} take it: {_why_guessed(ctx)}; SGLang {_span(newer)} spell it {own}")
    return dataclasses.replace(ctx, catalog=flags.shipped_catalog(newest), version=newest,
                               version_source="rule spelling"), why


def _both_spellings(ctx: Context, params: dict, make: Callable[[Context, dict], "Remediation | None"]):
    """``make``'s change, once, in one spelling: the target release's, naming the rule's
    spelling when releases of a guessed range use it; or, when the target release has no
    spelling of the flag at all, the spelling of the newest release of the range that has it;
    or, when the release is a guess and the setting was renamed inside its range, the name
    most releases of the range take (``_most_taken``), naming the other."""
    written = params.get("flag", "")
    older, spelled = _for_unnamed_release(ctx, written)
    own = ctx.flag(written) if written else None
    if spelled is not None and own is None:
        return _spelled(make(older, params), spelled)
    most = _most_taken(ctx, written, own)
    if most is not None:
        return _spelled(make(most[0], params), most[1])
    rem = make(ctx, params)
    other = _other_spelling(ctx, written, own) if rem is not None and own else None
    if other:
        rem.note += f" ({other})"
    return rem


def _move(ctx: Context, params: dict, up: bool) -> "Remediation | list[Remediation] | None":
    return _both_spellings(ctx, params, lambda c, p: _step(c, p, up))


def _step(ctx: Context, params: dict, up: bool) -> Remediation | None:
    flag = ctx.flag(params.get("flag", ""))
    if flag is None:
        ctx.warnings.append(f"flag {params.get('flag')} does not exist in SGLang {ctx.version}")
        return None
    rem = _step_from(ctx, flag, params, up)
    if rem is None and ctx.stated(flag) is None and not ctx.command_known:
        # the launch's value is in neither the log nor a command, and the release's default
        # gives no step (none to assume, or the failure shows the launch cannot have had it,
        # e.g. a tp split failing at the default tp 1): the flag is still the change, its value
        # the user's (unknown is not "already at its bound")
        return _unknown_step(ctx, flag, params, up)
    return rem


def _unknown_step(ctx: Context, flag: str, params: dict, up: bool) -> Remediation:
    way = "higher" if up else "lower"
    rem = Remediation(set={flag: f"<{way} than your launch's value>"}, needs_human=True, safe=False,
                      note=f"{'raise' if up else 'lower'} {flag}: your launch's value is not in the log "
                           "(the server_args line SGLang prints at start-up has it)",
                      tradeoff=params.get("tradeoff"))
    return trust.declare(rem, "rule")


def _step_from(ctx: Context, flag: str, params: dict, up: bool) -> Remediation | None:
    spec = ctx.catalog.spec(flag)
    value, guess = ctx.current_or_assumed(flag)
    current = _number(value)
    bound = _number(ctx.fill(params.get("max" if up else "min")))
    target = _number(ctx.fill(params.get("to")))
    by = _number(params.get("by"))
    factor = _number(params.get("factor"))
    candidates = []
    computed = _from_log(ctx, flag, params, up) if current is not None else None
    if computed is not None:
        # the move the log's own memory figures call for (remedy/memory_fit.py), when it goes
        # the entry's way; it is the first candidate, the entry's fixed step the next
        # a floor on the move, never less than the entry's own step: what the figures show
        # the fixed step cannot be enough for
        value, why = computed
        new = value if up else current - value
        if (up and new > current) or (not up and new < current):
            candidates.append(new)
        else:
            computed = None
    if current is not None:
        if by is not None:
            candidates.append(current + by if up else current - by)
        if factor is not None:
            candidates.append(current * factor)
    if target is not None:
        # "to" is a threshold (e.g. SGLang's printed minimum): step past it by "by".
        candidates.append(target + (by or 0.0) * (0.5 if current is not None else 1.0) if up
                          else target - (by or 0.0) * 0.5)
    if not candidates:
        return None
    new = max(candidates) if up else min(candidates)
    if computed is not None and new != candidates[0]:
        computed = None  # the entry's own step moves further: the figures add nothing
    if computed is not None and up and bound is not None and new > bound:
        # the fraction the weights call for is past the entry's safe maximum: raising it would
        # leave too little for activations and graphs, or still no pool.  No raise is proposed;
        # the step becomes the advice that is left (never applied unattended)
        return Remediation(needs_human=True, safe=False,
                           note=f"do not raise {flag} further: the log's own figures call for {new:.2f}, past the "
                                f"safe maximum {bound:g} ({computed[1]}); the weights leave too little for the pools: "
                                "more GPUs (--tp-size), a quantized checkpoint, or a smaller --context-length or "
                                "--max-running-requests")
    if bound is not None:
        new = min(new, bound) if up else max(new, bound)
    new = _as_type(spec, new)
    if current is not None and ((up and new <= current) or (not up and new >= current)):
        return None  # already at its bound
    if spec.type != "float" and not up and new < 1:
        return None
    reason = ctx.catalog.validate(flag, new)
    if reason is not None:
        ctx.warnings.append(f"{flag} {new}: {reason}")
        return None
    was = "unset" if current is None else launch_command.render_scalar(_as_type(spec, current))
    verb = "raise" if up else "lower"
    note = f"{verb} {flag} from {was} to {launch_command.render_scalar(new)}"
    if computed is not None:
        note += f" (from the log's own figures: {computed[1]})"
    if guess is None:
        return Remediation(set={flag: new}, note=note, tradeoff=params.get("tradeoff"))
    # The step starts from the release's default, not from the launch's own value: say so,
    # and let a human confirm it (a launch that set the flag lower would be moved the wrong way).
    tradeoff = f"ASSUMED: {guess.why}; check your command's value first"
    if params.get("tradeoff"):
        tradeoff = f"{params['tradeoff']}; {tradeoff}"
    # provenance as for any step (remediate's _declare_sources): "planner", or "log" when a
    # parameter is a template filled from the log
    return Remediation(set={flag: new}, note=f"{note} ({guess.why})", tradeoff=tradeoff, safe=False)


def _from_log(ctx: Context, flag: str, params: dict, up: bool) -> tuple[float, str] | None:
    """An entry's ``from_log: true`` on --mem-fraction-static: the target (up) or the step
    (down) the log's memory figures give (remedy/memory_fit.py); None without them."""
    if not params.get("from_log"):
        return None
    from sglang_doctor.remedy import memory_fit

    if flag != ctx.flag(memory_fit.FLAG):
        return None
    return memory_fit.raise_target(ctx.diagnosis) if up else memory_fit.lower_step(ctx.diagnosis)


@remedy("raise_flag")
def raise_flag(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    return _move(ctx, params, up=True)


@remedy("lower_flag")
def lower_flag(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    return _move(ctx, params, up=False)


@remedy("set_flag")
def set_flag(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    if params.get("near_only"):
        # the listed value plainly meant; several listed values extending the typed one ('fp8'
        # with fp8_e5m2 and fp8_e4m3): the question among them; else nothing
        near = _near_choice(ctx, params) if params.get("near") else None
        if near is None and params.get("ask") and _several_extend(ctx, params):
            return _ask_flag(ctx, params)
        return near
    if params.get("ask"):
        if params.get("near"):
            near = _near_choice(ctx, params)
            if near is not None:
                return near
        return _ask_flag(ctx, params)
    return _both_spellings(ctx, params, _set)


# argparse's "invalid choice: 'X' (choose from 'a', 'b', ...)": when exactly one listed value is
# what the user plainly meant -- the same word in another case or with '-' for '_', the
# only value that extends it ('triton' -> 'triton_attn'; 'fp8' with fp8_e5m2 and fp8_e4m3 listed
# stays a question), or the only value one typing slip away ('gpt-os' -> 'gpt-oss') -- that
# value is proposed.  It must be in the log's list (the failing
# release accepts it) and pass the target release's catalogue; the typed value is only
# compared, never emitted.  Advice (safe: false): the user confirms it is the one meant.
_QUOTED = re.compile(r"'([^'\n]{1,64})'")


def _choice_key(text: str) -> str:
    return text.strip().lower().replace("-", "_")


def nearest_choice(typed: str, listed: list[str]) -> str | None:
    """The one listed value ``typed`` plainly meant, or None (see above)."""
    key = _choice_key(typed)
    if len(key) < 2:
        return None
    same = [c for c in listed if _choice_key(c) == key]
    if len(same) == 1:
        return same[0]
    if same or len(key) < 3:
        return None
    longer = [c for c in listed if _choice_key(c).startswith(key + "_")]
    if longer:
        return longer[0] if len(longer) == 1 else None
    # a typing slip: one letter dropped or doubled, or two adjacent letters swapped ('gpt-os'
    # for 'gpt-oss', 'flashnifer'); only in words long enough to tell apart
    slips = [c for c in listed if len(key) >= 4 and _one_letter_slip(key, _choice_key(c))]
    return slips[0] if len(slips) == 1 else None


def _one_letter_slip(typed: str, choice: str) -> bool:
    """``choice`` is ``typed`` with one letter added or dropped, or two adjacent letters swapped.

    A changed digit or a letter replaced by another is no slip: 'int4'/'int8', 'bf16'/'fp16'
    and 'fa3'/'fa4' name different things."""
    if len(typed) == len(choice):
        diff = [i for i, (a, b) in enumerate(zip(typed, choice)) if a != b]
        return (len(diff) == 2 and diff[1] == diff[0] + 1 and typed[diff[0]] == choice[diff[1]]
                and typed[diff[1]] == choice[diff[0]] and typed[diff[0]].isalpha() and typed[diff[1]].isalpha())
    short, long_ = sorted((typed, choice), key=len)
    if len(long_) - len(short) != 1:
        return False
    return any(long_[i].isalpha() and long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _near_choice(ctx: Context, params: dict) -> Remediation | None:
    near = params.get("near") or {}
    typed = ctx.fill(near.get("value"))
    listed = _QUOTED.findall(str(ctx.fill(near.get("choices")) or ""))
    named = re.search(r"--[A-Za-z0-9][\w-]*", str(ctx.fill(params.get("flag")) or ""))
    if not isinstance(typed, str) or not listed or named is None:
        return None
    flag = ctx.flag(named.group(0))
    choice = nearest_choice(typed, listed)
    if flag is None or choice is None or choice == typed:
        return None
    if ctx.catalog.validate(flag, choice) is not None:
        return None  # not a value of the target release: ask instead
    rem = Remediation(set={flag: choice}, safe=False,
                      note=f"set {flag} {choice}: the only accepted value that matches what the launch gave",
                      tradeoff=params.get("tradeoff"))
    return trust.declare_log_named(rem, value_from="log")


def _several_extend(ctx: Context, params: dict) -> bool:
    """The typed value is the start of more than one listed value (what it meant is a choice)."""
    near = params.get("near") or {}
    typed = ctx.fill(near.get("value"))
    listed = _QUOTED.findall(str(ctx.fill(near.get("choices")) or ""))
    if not isinstance(typed, str) or len(_choice_key(typed)) < 2:
        return False
    key = _choice_key(typed)
    return sum(_choice_key(c).startswith(key + "_") for c in listed) > 1


# A value only the user knows (a token, an interface, a worker's URL): the change names the
# flag or variable with a placeholder ``<what to give>`` and is advice (``needs_human``,
# ``safe: false``), never applied by ``run --yes``.  docs/DESIGN.md "Remedy names".
def _placeholder(what: Any) -> str | None:
    text = " ".join(str(what or "").split())
    if not text or len(text) > 120 or any(c in text for c in "<>\n\r\x1b"):
        return None
    return f"<{text}>"


def _ask_flag(ctx: Context, params: dict) -> Remediation | None:
    """``set_flag {flag, ask: WHAT}``: the flag to give, with the value the user must supply.

    The flag is checked against the target release's flags; with ``program: NAME`` it is a flag
    of another program of SGLang's (the router: ``sglang_router.launch_router``), which the
    server's catalogue does not hold, and is named as written."""
    placeholder = _placeholder(ctx.fill(params.get("ask")))
    # a template flag ("{flag}") is the one the log's parser line names: it must be this
    # release's flag (checked below), and the change stays advice with a placeholder value
    templated = isinstance(params.get("flag"), str) and "{" in params["flag"]
    filled = str(ctx.fill(params.get("flag")) or "")
    named = re.search(r"--[A-Za-z0-9][\w-]*", filled) if templated else None  # "--model-path/--model"
    written = named.group(0) if named else filled.strip()
    if placeholder is None or not written.startswith("--"):
        return None
    program = params.get("program")
    flag = written if program and not templated else ctx.flag(written)
    if flag is None:
        ctx.warnings.append(f"flag {written} does not exist in SGLang {ctx.version}")
        return None
    where = f" of {program}" if program else ""
    note = ctx.fill(params.get("note")) if params.get("note") else None
    rem = Remediation(set={flag: placeholder}, needs_human=True, safe=False,
                      note=note or f"give {flag}{where} {placeholder}: only you know the value",
                      tradeoff=params.get("tradeoff"))
    if templated:  # the parser's line picked the flag; the catalogue only confirms its spelling
        return trust.declare_log_named(rem, value_from="placeholder")
    return trust.declare(rem, "rule")


def _set(ctx: Context, params: dict) -> Remediation | None:
    flag = ctx.flag(params.get("flag", ""))
    if flag is None:
        ctx.warnings.append(f"flag {params.get('flag')} does not exist in SGLang {ctx.version}")
        return None
    value = ctx.fill(params.get("value", True))
    if value is None:
        return None
    spec = ctx.catalog.spec(flag)
    if not spec.takes_value:
        value = True
    # ``unknown_not_default``: with the launch's settings not in the log, its value of the flag
    # is unknown, not the release's default (a value the failure shows was not in effect)
    current = ctx.stated(flag) if params.get("unknown_not_default") and ctx.settings_unknown else ctx.current(flag)
    if _equal(current, value):
        return None  # already so: not a change
    if any(_equal(current, v) for v in params.get("unless_current") or ()):
        return None  # the launch already runs a value that gives what this one would
    reason = ctx.catalog.validate(flag, value)
    if reason is not None:
        ctx.warnings.append(f"{flag} {value!r}: {reason}")
        return None
    shown = "" if value is True else f" {launch_command.render_scalar(value)}"
    return Remediation(set={flag: value}, note=params.get("note") or f"set {flag}{shown}",
                       tradeoff=params.get("tradeoff"))


def _equal(a: Any, b: Any) -> bool:
    if a is None:
        return False
    if isinstance(b, bool) or isinstance(a, bool):
        return bool(a) == bool(b) and isinstance(a, bool) == isinstance(b, bool)
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return abs(na - nb) < 1e-9
    return str(a) == str(b)


@remedy("unset_flag")
def unset_flag(ctx: Context, params: dict) -> Remediation | None:
    """Remove a flag the launch set.

    ``implied``: the rule's reason why the failing code runs only when the flag was set (the
    message itself is then the evidence).  When neither the command nor the dump shows the
    launch's settings, the removal is still proposed, with that reason in its note; when they
    do, they decide, as for any other rule.

    A template flag (``"{flag}"``) is the one the log's parser line names (argparse's "invalid
    choice" for the flag the launch gave): it must be a flag of the target release, and the
    removal is declared as a log-named flag (advice a human confirms, never ``run --yes``)."""
    templated = isinstance(params.get("flag"), str) and "{" in params["flag"]
    if templated:
        named = re.search(r"--[A-Za-z0-9][\w-]*", str(ctx.fill(params.get("flag")) or ""))
        if named is None:
            return None
        flag = ctx.flag(named.group(0))
        if flag is None:
            return None
        filled = {k: ctx.fill(params[k]) for k in ("implied", "note", "tradeoff") if params.get(k)}
        rem = unset_flag(ctx, {**params, **filled, "flag": flag})
        return trust.declare_log_named(rem) if rem is not None else None
    flag = ctx.flag(params.get("flag", ""))
    if flag is None:
        return None
    spec = ctx.catalog.spec(flag)
    implied = params.get("implied")
    if implied and ctx.settings_unknown:
        note = params.get("note") or f"remove {flag}"
        return Remediation(unset=[flag], note=f"{note} (the launch's settings are not in the log; {implied})",
                           tradeoff=params.get("tradeoff"), safe=False)
    if ctx.settings_unknown:
        # unknown is not "not set": the removal is proposed on its condition, after the rule's
        # changes that do not need it
        note = params.get("note") or f"remove {flag}"
        rem = Remediation(unset=[flag], note=f"{note} if your launch sets it (the launch's settings are not "
                                             "in the log)", tradeoff=params.get("tradeoff"), safe=False)
        ctx.conditional.append(rem)
        return rem
    current = ctx.current(flag)
    if current is None or _equal(current, spec.default) or current is False:
        return None  # not set: nothing to remove
    return Remediation(unset=[flag], note=params.get("note") or f"remove {flag}", tradeoff=params.get("tradeoff"))


@remedy("set_env")
def set_env(ctx: Context, params: dict) -> Remediation | None:
    """Environment variables for the server's process: ``name`` (one) or ``names`` (several
    spellings of one setting that programs read in their own order, e.g. ``no_proxy`` and
    ``NO_PROXY``), all set to ``value``.  ``pcie_only``: not when the GPUs (the ``--gpus``
    profile) are joined by NVLink."""
    if params.get("pcie_only") and getattr(ctx.hardware, "nvlink", False):
        return None  # a PCIe work-around (NCCL_P2P_DISABLE): not for GPUs joined by NVLink
    names = params.get("names") or [params.get("name", "")]
    names = [str(n) for n in (names if isinstance(names, list) else [names])]
    if params.get("ask"):  # a value only the user knows: named with a placeholder, advice
        placeholder = _placeholder(params.get("ask"))
        if placeholder is None or not all(_safe_env(n, "") for n in names) or not all(names):
            return None
        shown = " ".join(f"{n}={placeholder}" for n in names)
        rem = Remediation(env={n: placeholder for n in names}, needs_human=True, safe=False,
                          note=params.get("note") or f"set {shown} in the server's environment (only you know the value)",
                          tradeoff=params.get("tradeoff"))
        return trust.declare(rem, "rule")
    value = ctx.fill(params.get("value", ""))
    if not all(names) or value is None or not all(_safe_env(n, str(value)) for n in names):
        return None
    shown = " ".join(f"{n}={value}" for n in names)
    return Remediation(env={n: str(value) for n in names},
                       note=params.get("note") or f"set {shown} in the environment", tradeoff=params.get("tradeoff"))


def _safe_env(name: str, value: str) -> bool:
    import regex

    # lower-case names too: no_proxy / http_proxy are read in lower case first (requests
    # utils.should_bypass_proxies, urllib.request.getproxies_environment)
    return bool(regex.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)) and bool(regex.fullmatch(r"[A-Za-z0-9_.,:|/=+-]*", value))


# torch's CUDA OOM message (c10/cuda/CUDACachingAllocator.cpp): what was asked for, and how
# much of the cache torch holds without using it
_TRIED = re.compile(r"Tried to allocate (\d+(?:\.\d+)?) (GiB|MiB|KiB)")
_UNALLOCATED = re.compile(r"(\d+(?:\.\d+)?) (GiB|MiB|KiB) is reserved by PyTorch but unallocated")
_UNIT_MIB = {"GiB": 1024.0, "MiB": 1.0, "KiB": 1 / 1024}


@remedy("allocator_fragmentation")
def allocator_fragmentation(ctx: Context, params: dict) -> Remediation | None:
    """PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when torch's own figures show a
    fragmented cache: more memory reserved-but-unallocated than the allocation that failed
    (torch's message then advises exactly this).  The log's figures only decide whether it
    applies; the value is the rule's."""
    text = "\n".join(line.text for line in ctx.diagnosis.incident.lines)[-20000:]
    tried, spare = _TRIED.search(text), _UNALLOCATED.search(text)
    if tried is None or spare is None:
        return None
    need = float(tried.group(1)) * _UNIT_MIB[tried.group(2)]
    idle = float(spare.group(1)) * _UNIT_MIB[spare.group(2)]
    if idle < need:
        return None  # the cache is not the problem: memory really ran out
    value = str(params.get("value") or "expandable_segments:True")
    if not _safe_env("PYTORCH_CUDA_ALLOC_CONF", value):
        return None
    rem = Remediation(env={"PYTORCH_CUDA_ALLOC_CONF": value},
                      note=f"torch holds {idle / 1024:.2f} GiB reserved but unused, more than the "
                           f"{need / 1024:.2f} GiB it could not allocate: the cache is fragmented; "
                           f"set PYTORCH_CUDA_ALLOC_CONF={value}",
                      tradeoff=params.get("tradeoff"))
    return trust.declare(rem, "rule")


# Each feature: the ways to turn it off, newest spelling first; the first whose flags all
# exist in the target version is used.  (0.5.23 deprecates --disable-cuda-graph in favour of
# the per-phase backends, srt/server_args.py; 0.5.9 has only the boolean.)
FEATURES: dict[str, dict[str, Any]] = {
    "cuda_graph": {
        "ways": [{"set": {"--cuda-graph-backend-decode": "disabled", "--cuda-graph-backend-prefill": "disabled"}},
                 {"set": {"--disable-cuda-graph": True}}],
        "tradeoff": "disables CUDA graphs: decode is typically 20-40% slower, frees the graph memory",
    },
    "prefill_cuda_graph": {
        # 0.5.14+: the prefill backend; 0.5.10-0.5.13 (piecewise on by default, no prefill
        # backend flag): --disable-piecewise-cuda-graph; 0.5.3-0.5.9 (opt-in): drop the switch
        "ways": [{"set": {"--cuda-graph-backend-prefill": "disabled"}},
                 {"set": {"--disable-piecewise-cuda-graph": True}},
                 {"unset": ["--enable-piecewise-cuda-graph"]}],
        "tradeoff": "disables prefill (piecewise) CUDA graphs: slower short prefills, frees their memory",
    },
    "torch_compile": {
        "ways": [{"unset": ["--enable-torch-compile"]}],
        "tradeoff": "turns torch.compile off: small-batch decode a little slower, no compile step",
    },
    "custom_all_reduce": {
        "ways": [{"set": {"--disable-custom-all-reduce": True}}],
        "tradeoff": "uses NCCL all-reduce instead of SGLang's custom kernel: slightly slower TP decode",
    },
    "radix_cache": {
        "ways": [{"set": {"--disable-radix-cache": True}}],
        "tradeoff": "no prefix caching: repeated prompts are recomputed",
    },
    "overlap_schedule": {
        "ways": [{"set": {"--disable-overlap-schedule": True}}],
        "tradeoff": "no CPU/GPU overlap in the scheduler: a few % lower throughput",
    },
    "speculative": {
        "ways": [{"unset": ["--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
                            "--speculative-eagle-topk", "--speculative-num-draft-tokens"]}],
        "tradeoff": "no speculative decoding: lower single-stream decode speed, frees draft weights and pools",
    },
    # constrained decoding's optional pieces of the 0.1.x-0.4.x releases: the outlines FSM cache
    # kept on disk (diskcache's sqlite file, shared by every process: 0.1.x-0.4.1.post1
    # --disable-disk-cache) and jump-forward decoding (0.1.12-0.3.5 --disable-regex-jump-forward,
    # 0.3.5.post1-0.4.3.post2 --disable-jump-forward; later releases dropped the feature)
    "disk_cache": {
        "ways": [{"set": {"--disable-disk-cache": True}}],
        "tradeoff": "regex/JSON constraints are compiled again after every restart (no on-disk FSM cache)",
    },
    "jump_forward": {
        "ways": [{"set": {"--disable-jump-forward": True}}, {"set": {"--disable-regex-jump-forward": True}}],
        "tradeoff": "no jump-forward decoding for constrained (regex/JSON) output: slower constrained "
                    "generation; plain generation unchanged",
    },
    # transformers' fast (torch/torchvision) image processor, which SGLang loads by default for a
    # multimodal model: the base (PIL/numpy) one instead.  0.4.5.post1-0.5.17
    # --disable-fast-image-processor ("Adopt base image processor instead of fast image
    # processor"); 0.5.18+ --image-processor-backend pil (the old switch kept, "Deprecated");
    # older releases have neither, so nothing is proposed for them
    "fast_image_processor": {
        "ways": [{"set": {"--image-processor-backend": "pil"}},
                 {"set": {"--disable-fast-image-processor": True}}],
        "tradeoff": "the base (PIL/numpy) image processor: slower image preprocessing on the CPU, "
                    "no torchvision/device kernels in the preprocessing path",
    },
    # SGLang's second LoRA engine (0.5.23): --lora-backend triton_v2 with --moe-runner-backend
    # lora_triton|lora_cutedsl|lora_marlin, which must be set together (arg_groups/lora_hook.py:
    # 204, lora/layers.py:1088) and back out together: the legacy engine (csgmv, auto MoE runner)
    "moe_lora_v2": {
        "ways": [{"unset": ["--lora-backend", "--moe-runner-backend"]}],
        "tradeoff": "the legacy LoRA engine (csgmv LoRA kernels, Triton MoE runner): slower MoE LoRA than the "
                    "SM90/SM100 engine, the same adapters",
    },
    # A library's build covers a list of GPU architectures, and every SGLang backend that runs its
    # kernels fails on a GPU outside that list: FlashInfer's attention *and* its sampling kernels
    # (both chosen by default on CUDA; 0.1.x-0.3.x wheels started at SM80, so a T4 / RTX 20xx
    # (SM75) hit "no kernel image" in both).  Switching one backend moves the failure to the other
    # one at the first request, so the change sets every backend of the library to one that does
    # not use it: --attention-backend triton (Triton compiles its kernels for this GPU at run
    # time) and --sampling-backend pytorch; 0.2.x spelled the same two settings
    # --disable-flashinfer --disable-flashinfer-sampling, the flags sgl-project/sglang#931
    # reports a T4 needs.  Rules name it ``disable_feature: {feature: flashinfer}``.
    "flashinfer": {
        "ways": [{"set": {"--attention-backend": "triton", "--sampling-backend": "pytorch"}},
                 {"set": {"--disable-flashinfer": True, "--disable-flashinfer-sampling": True}}],
        "tradeoff": ("Triton attention and PyTorch sampling instead of FlashInfer's kernels (no FlashInfer build "
                     "needed for this GPU): a little slower decode and sampling at large batch sizes; same results"),
    },
}


def _portable_way(ctx: Context, ways: list[dict]) -> dict | None:
    """When the release is a guess: the way to turn a feature off that every release of the
    guessed range accepts (the newest may deprecate it but still takes it), if it is not
    already the first."""
    releases = ctx.guessed_range
    if not releases or len(ways) < 2:
        return None
    from sglang_doctor.remedy import flags

    # the range's oldest and newest release (a flag both have is, in practice, in between too;
    # rebuilding every catalogue of the range would cost half a second)
    catalogs = [flags.shipped_catalog(releases[0])] if releases[0] != ctx.version else []
    for way in ways[1:]:
        names = list(way.get("set", {})) + list(way.get("unset", []))
        if all(ctx.catalog.canonical(f) == f and all(c.canonical(f) == f for c in catalogs) for f in names):
            first = next((w for w in ways if all(ctx.catalog.canonical(f) == f for f in
                                                 list(w.get("set", {})) + list(w.get("unset", [])))), None)
            return None if first is way else way
    return None


@remedy("disable_feature")
def disable_feature(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    feature = params.get("feature")
    spec = FEATURES.get(feature)
    if spec is None:
        ctx.warnings.append(f"unknown feature {feature!r}")
        return None
    portable = _portable_way(ctx, spec["ways"])
    if portable is not None:
        # a log of a guessed release: the spelling every release of the range accepts, once
        # (the target release's own spelling is the same change under other names: named in
        # the note, never offered as a second change)
        rem = _disable(ctx, params, feature, spec, [portable])
        if rem is not None:
            newest = next((w for w in spec["ways"] if w is not portable), {})
            names = " ".join(f"{f} {v}" if v is not True else f for f, v in newest.get("set", {}).items())
            rem.note += (f" (accepted by every release {_span(ctx.guessed_range or ())}: {_why_guessed(ctx)}"
                         + (f"; newer releases also spell it {names}" if names else "") + ")")
        return rem
    rem = _disable(ctx, params, feature, spec, spec["ways"])
    if rem is None and not any(_way_exists(ctx, way) for way in spec["ways"]):
        # the target (a guess) has no switch for the feature at all: a feature SGLang dropped
        # (its frames put the log before then); spelled as the newest guessed release that has
        # one, which the note names
        for way in spec["ways"]:
            older, spelled = _for_unnamed_release(ctx, (list(way.get("set", {})) + list(way.get("unset", [])))[0])
            if spelled is not None and _way_exists(older, way):
                return _spelled(_disable(older, params, feature, spec, [way]), spelled + _pre_040_spelling(way))
    return rem


def _pre_040_spelling(way: dict) -> str:
    """The clause naming how the releases before 0.4.0 (no shipped catalogue) spelled a way's
    flag, when they spelled it otherwise (one change, the other name in the note)."""
    from sglang_doctor.remedy import flags

    names = list(way.get("set", {})) + list(way.get("unset", []))
    options = flags.pre_040_options()
    olds = [(r.old, options.get(r.old)) for r in flags.pre_040_renames() if r.new in names]
    return "".join(f"; SGLang {span[0]} to {span[1]} spell it {old}" if span else f"; older releases spell it {old}"
                   for old, span in olds)


def _way_exists(ctx: Context, way: dict) -> bool:
    return all(ctx.catalog.canonical(f) == f for f in list(way.get("set", {})) + list(way.get("unset", [])))


def _disable(ctx: Context, params: dict, feature: str, spec: dict, ways: list[dict]) -> Remediation | None:
    for way in ways:
        flags = list(way.get("set", {})) + list(way.get("unset", []))
        if not all(ctx.catalog.canonical(f) == f for f in flags):
            continue
        sets = {f: v for f, v in way.get("set", {}).items() if not _equal(ctx.current(f), v)}
        unsets = [f for f in way.get("unset", []) if ctx.current(f) not in (None, False)]
        if not sets and way.get("unset") and ctx.settings_unknown:
            # a feature turned off by removing its flags, and the log does not show whether the
            # launch had them: proposed on that condition (unknown is not "off").  ``implied``:
            # the rule's reason why the failing code runs only with the feature on (the message
            # itself is then the evidence, as for unset_flag): the removal keeps its rank
            unsets = list(way["unset"])
            implied = params.get("implied")
            why = f"; {implied}" if implied else ""
            rem = Remediation(unset=unsets, note=f"turn {feature.replace('_', ' ')} off: remove "
                                                 f"{' '.join(unsets)} if your launch sets it (the launch's "
                                                 f"settings are not in the log{why})",
                              tradeoff=params.get("tradeoff") or spec["tradeoff"], safe=False)
            if not implied:
                ctx.conditional.append(rem)
            return rem
        if not sets and not unsets:
            return None  # already off
        for f, v in sets.items():
            if ctx.catalog.validate(f, v) is not None:
                break
        else:
            return Remediation(set=sets, unset=unsets, note=f"turn {feature.replace('_', ' ')} off",
                               tradeoff=params.get("tradeoff") or spec["tradeoff"])
    return None


# Off-by-default switches that change the model's forward pass (how batches are mixed, how
# attention is laid out over ranks, compilation, micro-batch overlap).  A crash inside the
# forward while serving is most often on a path one of them turned on, and turning off what
# the launch enabled, then adding it back one at a time, is the first isolation step
# maintainers ask for (e.g. sgl-project/sglang#3423: "Turning off DPA is all fine";
# #10179: --enable-mixed-chunk).  Only the switches the target release's catalogue has are
# used.
FORWARD_SWITCHES = ("--enable-mixed-chunk", "--enable-dp-attention", "--enable-torch-compile",
                    "--enable-two-batch-overlap", "--enable-single-batch-overlap",
                    "--enable-piecewise-cuda-graph", "--enable-dp-lm-head")


@remedy("isolate_features")
def isolate_features(ctx: Context, params: dict) -> Remediation | None:
    """Turn off the optional forward-path switches the launch turned on (``FORWARD_SWITCHES``).

    With the launch's settings known (command or dump): only the switches that are on, or
    nothing when none is.  Unknown settings are not "off": the removal names every switch of
    the release, on the condition that the launch sets it.  It is ranked where the rule puts
    it (not after unconditional changes): what a launch turned on beyond the defaults is the
    likelier cause of a forward crash than the default path.  Never applied unattended."""
    wanted = params.get("flags") or FORWARD_SWITCHES
    switches = [f for f in wanted if ctx.catalog.canonical(f) == f]
    tradeoff = params.get("tradeoff") or ("each switch is a throughput or latency feature: turn them back on one "
                                          "at a time; the one that brings the crash back is the cause to report")
    if not switches:
        return None
    if ctx.settings_unknown:
        return Remediation(unset=switches, safe=False, tradeoff=tradeoff,
                           note="turn off the optional forward-path features your launch sets ("
                                + ", ".join(switches) + "; the launch's settings are not in the log), relaunch, "
                                "then add them back one at a time")
    on = [f for f in switches if ctx.current(f) not in (None, False)]
    if not on:
        return None
    return Remediation(unset=on, safe=False, tradeoff=tradeoff,
                       note=f"turn off {', '.join(on)} (on in this launch), relaunch, then add back one at a time")


# -- arguments -----------------------------------------------------------------------------


@remedy("closest_flag")
def closest_flag(ctx: Context, params: dict) -> Remediation | None:
    """Replace each unknown flag the parser named with the closest real one of this version.

    The parser's line is log text (docs/DESIGN.md "Trust").  When the launch command is
    known (``run``), only flags the command really holds are acted on and their values are
    taken from the command itself, never from the line; a name the command does not hold
    means the line was not SGLang's complaint about this launch, and it changes nothing.
    """
    captures = ctx.diagnosis.captures
    text = captures.get(params.get("capture") or ("arguments" if "arguments" in captures else "option"), "")
    line = _line_holding(ctx.diagnosis, text)
    own = _own_flags(ctx) if ctx.command_known else None
    words = text.split()
    sets: dict[str, Any] = {}
    unsets: list[str] = []
    notes: list[str] = []
    asked: list[str] = []  # successors whose value the user gives (a placeholder)
    provenance: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            i += 1
            continue
        name, _, inline = word.partition("=")
        value: Any = inline or None
        if value is None and i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            i += 1
        i += 1
        value_from = "log"
        if own is not None:
            if name not in own:
                notes.append(f"{name} is not in the launch command; the line naming it is ignored")
                continue
            value, value_from = own[name], "command"
        target = ctx.flag(name)  # the same setting under this version's spelling first
        if target == name:
            # the target release has the very flag the running parser rejected: the log's
            # release is another (older) one, and there the flag is to be removed
            notes.append(f"{name} exists in SGLang {ctx.version} but the running release rejected it: remove it "
                         "(or upgrade SGLang to use it)")
            unsets.append(name)
            continue
        elsewhere = _versions_knowing(name, ctx.version)
        if target is None and elsewhere:
            from sglang_doctor.remedy import flags as _flags

            after = _flags.successor(name, ctx.catalog)  # its deprecation help names a replacement
            same = after[1].flag if after is not None and isinstance(after[1], _flags.SameAs) else None
            if same is not None:
                known = _same_as(ctx, after)
                if known is None:  # the other flag's value is not in the log: the user gives it
                    sets[after[0]] = f"<the same value as {same}>"
                    unsets.append(name)
                    provenance[after[0]] = {"source": "catalogue"}
                    asked.append(after[0])
                    notes.append(f"{name} was removed after SGLang {elsewhere[-1]}; its deprecation note says to set "
                                 f"{after[0]} to the same value as {same} instead")
                    continue
                after = known
            if after is not None and (after[1] is not None or (value is not None
                                                                and ctx.catalog.validate(after[0], value) is None)):
                sets[after[0]] = after[1] if after[1] is not None else value
                unsets.append(name)
                provenance[after[0]] = {"source": "catalogue"} if after[1] is not None else _log_source(line, value_from)
                named = f"{after[0]} set to the value of {same} ({after[1]} in this launch)" if same else \
                    f"{after[0]}" + ("" if after[1] is True or after[1] is None else f" {after[1]}")
                notes.append(f"{name} was removed after SGLang {elsewhere[-1]}; its deprecation note names {named} instead")
                continue
            # a flag of another version with no counterpart here: the nearest spelling would
            # be some unrelated flag (--enable-piecewise-cuda-graph -> --enable-profile-...)
            notes.append(f"{name} exists in SGLang {', '.join(elsewhere)} but not in {ctx.version}; remove it")
            unsets.append(name)
            continue
        ported = _other_engine(ctx, name, value) if target is None else None
        if ported is not None:
            to_set, note = ported
            unsets.append(name)
            sets.update(to_set)
            for flag, v in to_set.items():
                provenance[flag] = _log_source(line, value_from)
                if isinstance(v, str) and v.startswith("<"):  # _placeholder: the user's to give
                    asked.append(flag)
            notes.append(note)
            continue
        if target is None:
            close = ctx.catalog.closest(name, 1)
            target = close[0] if close and _similar(name, close[0]) else None
        if target is None:
            notes.append(f"{name}: no similar flag in SGLang {ctx.version}; remove it")
            unsets.append(name)
            continue
        spec = ctx.catalog.spec(target)
        new_value: Any = True if not spec.takes_value else value
        if new_value is None or ctx.catalog.validate(target, new_value) is not None:
            notes.append(f"{name}: did you mean {target}? (its value must be checked by hand)")
            unsets.append(name)
            continue
        unsets.append(name)
        sets[target] = new_value
        provenance[target] = _log_source(line, value_from)
        notes.append(f"{name} -> {target}")
    if not sets and not unsets:
        return None
    for name in unsets:
        provenance[name] = _log_source(line, None)
    # Removing a flag this SGLang rejects is safe (the launch cannot start with it); a
    # replacement guessed from the spelling is asked about first.
    guessed = [n for n in notes if "did you mean" in n]
    cost = ("the flags as this release spells them; a flag it does not know is dropped, and with it "
            "whatever that flag meant to set") if unsets else "the same settings, spelled as this release knows them"
    if guessed:
        cost += "; a replacement guessed from the spelling may not be the setting you meant"
    return Remediation(set=sets, unset=unsets, note="; ".join(notes), safe=not guessed and not asked,
                       needs_human=bool(asked), provenance=provenance, tradeoff=cost)


# vLLM's engine arguments (vllm/engine/arg_utils.py) a command ported to SGLang keeps, and the
# setting SGLang gives the same job: (SGLang flag or None, "value" (the same value carries over) /
# True (a switch) / None (removed: SGLang does it by default), why).  Only names no SGLang release
# has (an SGLang flag of another release is closest_flag's other branch).
_OTHER_ENGINE: dict[str, tuple[str | None, Any, str]] = {
    "--max-model-len": ("--context-length", "value", "vLLM's --max-model-len is SGLang's --context-length"),
    "--gpu-memory-utilization": ("--mem-fraction-static", "value",
                                 "vLLM's --gpu-memory-utilization is closest to SGLang's --mem-fraction-static "
                                 "(SGLang's counts weights and the KV pool only: lower it if the start-up runs out "
                                 "of memory)"),
    "--max-num-seqs": ("--max-running-requests", "value", "vLLM's --max-num-seqs is SGLang's --max-running-requests"),
    "--seed": ("--random-seed", "value", "vLLM's --seed is SGLang's --random-seed"),
    "--block-size": ("--page-size", "value", "vLLM's --block-size is SGLang's --page-size"),
    "--enforce-eager": ("--disable-cuda-graph", True, "vLLM's --enforce-eager is SGLang's --disable-cuda-graph"),
    "--enable-prefix-caching": (None, None, "vLLM's --enable-prefix-caching: SGLang's radix cache is on by default"),
    "--enable-chunked-prefill": (None, None, "vLLM's --enable-chunked-prefill: SGLang chunks prefills by default "
                                             "(--chunked-prefill-size)"),
    "--enable-auto-tool-choice": (None, None, "vLLM's --enable-auto-tool-choice: SGLang parses tool calls with "
                                              "--tool-call-parser alone"),
    "--disable-log-requests": (None, None, "vLLM's --disable-log-requests: SGLang does not log requests unless "
                                           "--log-requests is given"),
    "--swap-space": (None, None, "vLLM's --swap-space has no SGLang counterpart"),
    "--distributed-executor-backend": (None, None, "vLLM's --distributed-executor-backend has no SGLang counterpart"),
}


def _other_engine(ctx: Context, name: str, value: Any) -> tuple[dict[str, Any], str] | None:
    """A vLLM engine argument a ported command kept (``_OTHER_ENGINE``): the SGLang setting that
    does its job, spelled for the target release, its value carried over only when this
    release's parser accepts it (the log's value is untrusted: a value it refuses is asked for);
    ({}, note) when SGLang needs nothing in its place; None for any other name."""
    entry = _OTHER_ENGINE.get(name)
    if entry is None:
        return None
    flag, how, why = entry
    if flag is None:
        return {}, f"{name}: {why}; remove it"
    target = ctx.flag(flag)
    if target is None:
        return {}, f"{name}: {why}, which SGLang {ctx.version} does not have; remove it"
    if how is True:
        want: Any = True
    elif value is not None and ctx.catalog.validate(target, value) is None:
        want = value
    else:
        want = _placeholder(f"the value you gave {name}")
    if want is True and ctx.catalog.validate(target, True) is not None:
        return {}, f"{name}: {why}; remove it"
    return {target: want}, f"{name} -> {target}: {why}"


def _same_as(ctx: Context, after: tuple[str, Any]) -> tuple[str, Any] | None:
    """A successor whose value is another flag's in the same launch (--enable-ep-moe ->
    "set --ep-size to the same value as --tp-size"): that flag's value as the command or the
    launch's dump states it, when the target release's catalogue accepts it for the successor;
    else None (the successor's value is not known)."""
    flag, same = after
    value = ctx.stated(same.flag)
    if value is None or ctx.catalog.validate(flag, value) is not None:
        return None
    return flag, value


def _log_source(line: int | None, value_from: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"source": "log"}
    if line is not None:
        entry["line"] = line
    if value_from is not None:
        entry["value_from"] = value_from
    return entry


def _line_holding(diagnosis: Diagnosis, text: str) -> int | None:
    """The number of the incident line a capture was taken from."""
    if not text:
        return None
    for line in diagnosis.incident.lines:
        if text in line.text:
            return line.number
    return None


def _own_flags(ctx: Context) -> dict[str, Any]:
    """The flags of the user's command as written (unknown ones included) -> their value."""
    out: dict[str, Any] = {}
    for tok in launch_command.tokens(ctx.command or [], ctx.catalog):
        value: Any = None if not tok.values else tok.values[0] if len(tok.values) == 1 else list(tok.values)
        out.setdefault(tok.written, value)
    return out


# "--foo-bar" or a "foo_bar" server_args field named in an argument check's message; a value
# when the message says which ("use --attention-backend triton", "specify --disable-x")
# (a one-word option, --dtype, --quantization, --sidecar, is a flag too: the two dashes say so,
# and the catalogue has the last word; a bare word needs an underscore to be taken for a field)
_NAMED_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)\b|(?<![\w.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])")
# the verb may be in -ing form ("consider using --x"), the flag and its value in quotes or
# backticks ("please use `--moe-runner-backend cutlass`")
# ("... by explicitly setting the `dtype` flag in CLI, for example: --dtype=half": an example the
# message gives of its own advice is advice too)
# (a verb after "when" / "if" / "while" / "unless" states the launch's condition, not advice:
# "Remove --x when using --moe-a2a-backend deepep_v2", 0.5.23 moe_hook.py:427)
_ADVISED = re.compile(r"(?<!\bwhen )(?<!\bif )(?<!\bwhile )(?<!\bunless )"
                      r"\b(?:use|using|set|setting|specify|pass|passing|add|adding|enable|try|with|requires?|needs?|"
                      r"for\s+example:?)\s+"
                      r"[`'\"]?(--[a-z][a-z0-9-]+)(?:[ =][`'\"]?(?!--)([\w.+-]+))?",
                      re.IGNORECASE)
# words before an advised-looking flag that make it the conflict, not the advice
# ("is not supported with --enable-dp-attention", "cannot be used with --x")
# (a clause ends at a comma or "please": "FA3 is not supported on this GPU, please use --x" advises --x)
_NEGATED = re.compile(r"\b(?:not|cannot|can't|incompatible|unsupported|don't|do not|no longer|without|no effect|conflicts?|conflicting)\b"
                      r"(?:(?!\bplease\b)[^.;:,\n])*$",
                      re.IGNORECASE)
# a message's words that make a named switch the thing to turn on, not off: a switch named
# after "requires" / "needs" / "please enable" is asked for; one named before "must be set" is
# too ("--x must be enabled"); one named before "requires" is the subject that failed
# ("--enable-x requires SM100 GPUs": a switch this GPU refuses is removed, not turned on again)
_TURN_ON = re.compile(r"\b(?:requires?|required|needs?|please (?:set|enable|add))\b", re.IGNORECASE)
_MUST_BE_ON = re.compile(r"\bmust be (?:set|enabled|on|true)\b", re.IGNORECASE)


def _asked_on(text: str, at: int) -> bool:
    """The switch named at ``at`` is one the message asks to turn on."""
    return (any(m.start() < at for m in _TURN_ON.finditer(text))
            or any(m.start() > at for m in _MUST_BE_ON.finditer(text)))


@remedy("flag_named")
def flag_named(ctx: Context, params: dict) -> "Remediation | list[Remediation] | None":
    """The flag an argument check's message names, checked against this version's flags.

    With the value when the message says which and the value passes the flag's type and
    choices, or when the message's own numbers give it (``_bound_values``: a stated bound or
    divisibility); else the named flag itself is the change, with its value left to the user
    (``<a value the message accepts>``), or, for a switch the message does not ask for, its
    removal (a check on a switch fails because the launch turned it on).  Always advice
    (asked about, never applied by ``run --yes``): which of the named flags to move is the
    user's choice, so each named flag is one alternative, in the message's order."""
    from sglang_doctor.remedy import flags

    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    text = _parallel_named(text[:4000])
    advised: list[str] = []  # advised flags whose value the message does not give (or not validly)
    for m in _ADVISED.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 80):m.start()]):
            continue  # "not supported with --x": --x is the conflict, not the advice
        flag = ctx.flag(m.group(1))
        if flag is None:
            continue
        spec = ctx.catalog.spec(flag)
        # a value that ends the message's sentence ("requires --dtype bfloat16.") without its full stop
        given = m.group(2).rstrip(".") if m.group(2) else None
        value: Any = True if spec is not None and not spec.takes_value else given or None
        if value is not None and value is not True and ctx.catalog.validate(flag, value) is not None:
            value = None
        if isinstance(value, str) and spec is not None and flags.free_text(spec) and not flags.quoted_in(text, value):
            value = None  # a path or name flag: only a quoted word is the message's value, not prose
        if value is not None:
            rem = Remediation(set={flag: value}, safe=False,
                              note=f"the message names {flag} and its value (valid in SGLang {ctx.version})",
                              tradeoff=tradeoffs.default_for(Remediation(set={flag: value}))
                              or "the setting the message asks for; check what it does for your workload")
            _with_named_env(rem, text)
            return trust.declare_log_named(rem, value_from="log" if value is not True else None)
        if flag not in advised:
            advised.append(flag)
    listed_choice = _listed_choice(ctx, text)
    if listed_choice is not None:
        return listed_choice
    required = _required_values(ctx, text)
    bounded = {f: v for f, v in _bound_values(ctx, text).items() if f not in required}
    named: list[str] = []
    at: dict[str, int] = {}  # flag -> where the message first names it
    direction: dict[str, bool] = {}  # flag -> up, for "increase --x" / "reduce --x"
    for m in _NAMED_FLAG.finditer(text):
        word = m.group(1) or "--" + m.group(2).replace("_", "-")
        flag = ctx.flag(word)
        if flag is not None and flag not in named:
            named.append(flag)
            at[flag] = m.start()
            way = _DIRECTION.search(text[max(0, m.start() - 40):m.start()])
            if way is not None:
                direction[flag] = way.group(1).lower().startswith(_UP_WORDS)
    if not named:
        return None
    # the flag the message advises ("X requires --sidecar", "use --quantization {method}") before
    # the ones it only names (the setting that failed the check): the advice is the way out
    named.sort(key=lambda f: f not in advised)  # stable: the message's order within each
    listed = ", ".join(named[:3])
    out: list[Remediation] = []
    for flag in named[:3]:
        spec = ctx.catalog.spec(flag)
        stepped = (_named_step(ctx, flag, direction[flag])
                   if flag in direction and flag not in required and flag not in bounded else None)
        value_from: str | None = "log"  # the message's own value or numbers picked it
        if flag in required:  # "--x must be 1": the value the check states, checked for the flag
            value = required[flag]
            rem = Remediation(set={flag: value}, note=f"set {flag} {launch_command.render_scalar(value)}: the one "
                                                      "value the message says it accepts")
        elif flag in bounded:  # "--x must be >= 8": the value its numbers give
            value, why = bounded[flag]
            rem = Remediation(set={flag: value}, note=f"set {flag} {launch_command.render_scalar(value)}: {why}",
                              tradeoff=tradeoffs.default_for(Remediation(set={flag: value})))
        elif stepped is not None:  # "increase --x": a step the way the message says
            rem, value_from = stepped, None
        elif spec is not None and not spec.takes_value:
            value_from = None
            if _asked_on(text, at[flag]):
                rem = Remediation(set={flag: True}, note=f"turn {flag} on (the message asks for it)")
            else:
                rem = Remediation(unset=[flag], note=f"remove {flag} if your launch turns it on (the message "
                                                     "names it in a failed check)")
        else:
            value_from = "placeholder"
            rem = Remediation(set={flag: "<a value the message accepts>"},
                              note=f"change {flag}: the message says which values it accepts")
        rem.needs_human, rem.safe = True, False
        rem.note += f" (named by the message with {listed}; valid in SGLang {ctx.version})" if len(named) > 1 \
            else f" (named by the message; valid in SGLang {ctx.version})"
        rem.tradeoff = "; ".join(t for t in (rem.tradeoff, "the setting the message rejects changes; check what it "
                                                            "does for your workload") if t)
        # the message picked the flag (the catalogue only confirms it exists): advice
        out.append(trust.declare_log_named(rem, value_from=value_from))
    return out


def _with_named_env(rem: Remediation, text: str) -> None:
    """The advice's environment half: a message that names a flag *and* a variable to set
    ("please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1")
    asks for both; the variable joins the same change when its name has a known prefix and
    its value is a short plain token (``_safe_env``), never when the words before it negate."""
    from sglang_doctor.remedy.class_remedies import env_advised

    found = env_advised(text)
    if found is None:
        return
    name, value = found
    rem.env[name] = value
    rem.note += f"; with {name}={value}, which the message names with it"


# "attention_backend to be one of ['triton', 'torch_native'], but got flashinfer",
# "--x must be one of (a, b)", "--x should be in {a, b}": a check that lists the values it
# accepts.  The first listed value the target release accepts (and not the one the message
# says it got) is the change; the next one is the alternative.  The log only picks among the
# catalogue's own choices, so the value is validated, never copied unchecked.
_ONE_OF = re.compile(
    r"(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+|(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+)[`'\"]?"
    r"[^.\n\[\](){}]{0,40}?\b(?:one of|be in|among|must be|should be|choose from)\s*:?\s*"
    r"[\[\({]([^\]\)}\n]{1,400})[\]\)}]"
    r"(?:[^.\n]{0,30}?\b(?:got|given|received|is|was)\s*:?\s*[`'\"]?([\w.+-]+))?",
    re.IGNORECASE)
_ITEM = re.compile(r"[`'\"]?([\w.+-]+)[`'\"]?")


_INTERVAL = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*")


def _inside(kind: str, opening: str, body: str, closing: str) -> str | None:
    """A value inside an interval a message writes, ``(0, 1]`` or ``[1, 8)``: a closed end (the
    upper first), else the midpoint of a float range, else the integer after the lower end."""
    lo, hi = (float(x) for x in _INTERVAL.fullmatch(body).groups())
    if lo >= hi:
        return None
    if closing == "]":
        value = hi
    elif opening == "[":
        value = lo
    elif kind == "float":
        value = (lo + hi) / 2
    elif lo + 1 < hi:
        value = lo + 1
    else:
        return None
    return str(int(value)) if kind == "int" or value.is_integer() else str(value)


def _listed_choice(ctx: Context, text: str) -> "list[Remediation] | None":
    for m in _ONE_OF.finditer(text):
        word = m.group(1) if m.group(1).startswith("--") else "--" + m.group(1).replace("_", "-")
        flag = ctx.flag(word)
        spec = ctx.catalog.spec(flag) if flag is not None else None
        if spec is None or not spec.takes_value:
            continue
        got = (m.group(3) or "").strip("`'\".")
        items = [i for i in _ITEM.findall(m.group(2)) if i]
        if spec.type in ("int", "float") and _INTERVAL.fullmatch(m.group(2)):
            # "must be in (0, 1]": an interval of a number, not a list of two values
            inside = _inside(spec.type, text[m.start(2) - 1], m.group(2), text[m.end(2)])
            items = [inside] if inside is not None else []
        valid = [i for i in dict.fromkeys(items)
                 if i != got and not _equal(ctx.stated(flag), i) and ctx.catalog.validate(flag, i) is None]
        if not valid:
            continue
        out: list[Remediation] = []
        for choice in valid[:2]:
            rem = Remediation(set={flag: choice}, safe=False,
                              note=f"set {flag} {choice}: the first value the message lists that SGLang "
                                   f"{ctx.version} accepts" if not out else
                                   f"or {flag} {choice}, the next value the message lists",
                              tradeoff=tradeoffs.default_for(Remediation(set={flag: choice}))
                              or "a value the failed check accepts; check what it does for your workload")
            out.append(trust.declare_log_named(rem, value_from="log"))
        return out
    return None


# "--pp-size must be 1", "(attn_cp_size must be 1)", "page_size should be set to 64": a check
# that states the one value it accepts.  Only a number for a numeric flag or one of the flag's
# own choices is taken (never free text: "must be a ...", "must be positive" name no value);
# "X is not supported (--pp-size must be 1)" still states the value, so no negation window.
_MUST_BE = re.compile(
    r"(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+|(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+)[`'\"]?\s+"
    r"(?:must|should|has to|needs to)\s+be\s+(?:set\s+to\s+|equal\s+to\s+)?[`'\"]?([\w.+-]+)(?![\w.+-])[`'\"]?"
    r"(?!\s*(?:or|times|x)\b)",
    re.IGNORECASE)


def _required_values(ctx: Context, text: str) -> dict[str, Any]:
    """flag -> the one value the message says the flag must have (see ``_MUST_BE``)."""
    out: dict[str, Any] = {}
    for m in _MUST_BE.finditer(text):  # "must not be" does not match: no negation to check
        word = m.group(1) if m.group(1).startswith("--") else "--" + m.group(1).replace("_", "-")
        flag = ctx.flag(word)
        spec = ctx.catalog.spec(flag) if flag is not None else None
        if spec is None or not spec.takes_value or flag in out:
            continue
        value: Any = m.group(2).rstrip(".,")
        if spec.choices:
            if value not in [str(c) for c in spec.choices]:
                continue
        elif spec.type in ("int", "float"):
            number = _number(value)
            if number is None:
                continue
            value = int(number) if spec.type == "int" and float(number).is_integer() else number
        else:
            continue
        if _equal(ctx.stated(flag), value) or ctx.catalog.validate(flag, value) is not None:
            continue
        out[flag] = value
    return out


# A check that states a numeric bound on the flag it names ("--speculative-draft-window-size
# must be >= 8", "tp_size 4 should be smaller than or equal to number of numa node on the machine
# 2", "max_total_tokens=500000 is larger than the profiled value 412203") or a divisibility
# ("num_heads (12) must be divisible by dcp_size (8)", "chunked_prefill_size (8000) must be
# divisible by page_size (64)"): the value that passes it is computed from the message's own
# numbers, for a numeric flag of the release, and validated by its catalogue.  The log's
# numbers only pick the value; it is advice (value_from "log"), never applied unattended.
_FLAG_WORD = r"(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+|(?<![\w.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
_NUM = r"-?\d+(?:\.\d+)?"
_GIVEN = r"(?:[`'\"]?\s*(?:=\s*|\(\s*|\s+)[`'\"]?(?P<{name}>" + _NUM + r")[`'\"]?\)?)?"
_CMP = (r"(?P<cmp>>=|<=|>|<|[≥≤]|(?:greater|larger|bigger|less|smaller|fewer|lower|higher|more)(?:\s+than)?"
        r"(?:\s+or\s+equal\s+to)?|at\s+least|at\s+most|no\s+(?:less|smaller|fewer|more|greater|larger)\s+than|"
        r"not\s+(?:less|smaller|more|greater|larger)\s+than|above|below)")
_BOUND = re.compile(
    _FLAG_WORD + _GIVEN.format(name="given") +
    r"\s+(?P<verb>(?:must|should|has\s+to|needs\s+to)\s+(?:not\s+)?be|is|was|are)\s+" + _CMP +
    r"\s+(?:(?![\d.;:\n])[^\n]){0,60}?(?<![\w.])(?P<bound>" + _NUM + r")(?![\w.]*\d)",
    re.IGNORECASE)
_EXCEEDS = re.compile(_FLAG_WORD + _GIVEN.format(name="given") +
                      r"\s+(?P<verb>(?:must|should|cannot|can\s*not|may)\s+not\s+exceed|exceeds|exceeded)\s+"
                      r"(?:(?![\d.;:\n])[^\n]){0,60}?(?<![\w.])(?P<bound>" + _NUM + r")(?![\w.]*\d)",
                      re.IGNORECASE)
_DIVISIBLE = re.compile(
    _FLAG_WORD + _GIVEN.format(name="given") +
    r"\s+(?:(?:must|should|has\s+to|needs\s+to)\s+be|is\s+not|isn't|not)\s+(?:evenly\s+)?divisible\s+by\s+[`'\"]?" +
    _FLAG_WORD + _GIVEN.format(name="given2"),
    re.IGNORECASE)

# "Total number of attention heads (28) must be divisible by tp_size (8)", "Attention heads 28 are
# not divisible by tp_size=8": a model dimension in prose (its number just before the verb) and a
# flag as the divisor; only the divisor can be computed (its value that divides both numbers)
_DIVISIBLE_BY_FLAG = re.compile(
    r"(?<![\w.-])(?P<given>\d+)\)?[`'\"]?\s+(?:(?:must|should|has\s+to|needs\s+to)\s+be|is\s+not|are\s+not|"
    r"isn't|aren't|not)\s+(?:evenly\s+)?divisible\s+by\s+(?:the\s+)?(?:shard\s+)?[`'\"]?" +
    _FLAG_WORD + _GIVEN.format(name="given2"),
    re.IGNORECASE)
# The other names model code gives the parallel sizes in its checks: "tp world size {tp_size}"
# (0.5.9 multimodal_gen zimage.py), "tensor_model_parallel_size ({n})" (0.5.9 parallel_state.py),
# "tensor parallel size" (0.5.23 awq/gptq schemes; the head-count checks of model configs),
# "TP={tp_size}" (0.5.23 models/xllm.py: "Attention heads 28 are not divisible by TP=8"):
# spelled as the field they name, so the flag-name readers above take them (a rank prefix
# "[TP0]" has no "=" and stays as it is)
_PARALLEL_WORDS = (
    (re.compile(r"\btensor[- _](?:model[- _])?parallel(?:[- _]world)?[- _]size\b", re.IGNORECASE), "tp_size"),
    (re.compile(r"\btp[- ]world[- ]size\b", re.IGNORECASE), "tp_size"),
    (re.compile(r"\bpipeline[- _](?:model[- _])?parallel(?:[- _]world)?[- _]size\b", re.IGNORECASE), "pp_size"),
    (re.compile(r"\bexpert[- ]parallel(?:[- ]world)?[- ]size\b", re.IGNORECASE), "ep_size"),
    (re.compile(r"\bdata[- ]parallel(?:[- ]world)?[- ]size\b", re.IGNORECASE), "dp_size"),
    (re.compile(r"\bTP\s*=\s*(?=\d)"), "tp_size="),
)


def _parallel_named(text: str) -> str:
    """``text`` with the parallel sizes' prose names spelled as their fields (``_PARALLEL_WORDS``)."""
    for pattern, field in _PARALLEL_WORDS:
        text = pattern.sub(field, text)
    return text


def _kind(cmp: str) -> str:
    """">=" / "at least" ... -> "ge"; "<=" / "at most" -> "le"; ">" -> "gt"; "<" -> "lt"."""
    words = " ".join(cmp.lower().split())
    if words in (">=", "≥", "at least") or words.endswith("or equal to") and words.startswith(("greater", "larger", "bigger", "higher", "more")) \
            or words.startswith(("no less", "no smaller", "no fewer", "not less", "not smaller")):
        return "ge"
    if words in ("<=", "≤", "at most") or words.endswith("or equal to") or words.startswith(("no more", "no greater", "no larger", "not more", "not greater", "not larger")):
        return "le"
    if words in (">", "above") or words.startswith(("greater", "larger", "bigger", "higher", "more")):
        return "gt"
    return "lt"


_FLIP = {"ge": "lt", "lt": "ge", "le": "gt", "gt": "le"}


def _passes(kind: str, value: float, bound: float) -> bool:
    return {"ge": value >= bound, "gt": value > bound, "le": value <= bound, "lt": value < bound}[kind]


def _numeric_flag(ctx: Context, word: str) -> tuple[str, Any] | None:
    flag = ctx.flag(word if word.startswith("--") else "--" + word.replace("_", "-"))
    spec = ctx.catalog.spec(flag) if flag is not None else None
    if spec is None or not spec.takes_value or spec.choices or not _is_int(spec) and spec.type != "float":
        return None
    return flag, spec


def _is_int(spec: Any) -> bool:
    """An integer flag (argparse ``int``, or SGLang's ``human_readable_int``: "128k")."""
    return spec.type == "int" or spec.type.endswith("_int")


def _bound_values(ctx: Context, text: str) -> dict[str, tuple[Any, str]]:
    """flag -> (the value that passes the bound or divisibility the message states, why)."""
    out: dict[str, tuple[Any, str]] = {}

    def keep(flag: str, spec: Any, value: float, why: str) -> None:
        if flag in out or value < 0:
            return
        if _is_int(spec):
            if not float(value).is_integer():
                return
            value = int(value)
        if _equal(ctx.stated(flag), value) or ctx.catalog.validate(flag, value) is not None:
            return
        out[flag] = (value, why)

    for m in (*_BOUND.finditer(text), *_EXCEEDS.finditer(text)):
        found = _numeric_flag(ctx, m.group(1))
        if found is None:
            continue
        flag, spec = found
        verb = " ".join(m.group("verb").lower().split())
        if "exceed" in verb:
            kind = "le"  # "must not exceed N" and "exceeds N" both ask for at most N
        else:
            kind = _kind(m.group("cmp"))
            if verb in ("is", "was", "are"):
                # the check's complaint ("is larger than the profiled value N"): the value must
                # be on the other side; only a strict complaint names a value that passes
                if kind not in ("gt", "lt"):
                    continue
                kind = "le" if kind == "gt" else "ge"
            elif " not " in f" {verb} ":
                kind = _FLIP[kind]
        bound = _number(m.group("bound"))
        if bound is None:
            continue
        if kind in ("gt", "lt"):
            if not _is_int(spec) or not float(bound).is_integer():
                continue  # no single value passes a strict bound on a float
            value = bound + 1 if kind == "gt" else bound - 1
        else:
            value = bound
        given = _number(m.group("given")) if m.group("given") else _number(ctx.stated(flag))
        if given is not None and _passes(kind, given, bound):
            continue  # the launch's value already passes it: the number is about something else
        if kind in ("le", "lt") and value < 1:
            continue  # a bound at or below zero (a negative profiled size) is no value to set
        keep(flag, spec, value, f"the bound the message states (\"{m.group(0).strip()[:80]}\")")
    for m in _DIVISIBLE.finditer(text):
        a, b = _number(m.group("given")), _number(m.group("given2"))
        if a is None or b is None or a <= 0 or b <= 0 or not float(a).is_integer() or not float(b).is_integer():
            continue
        a, b = int(a), int(b)
        if a % b == 0:
            continue
        stated = f"\"{m.group(0).strip()[:80]}\""
        dividend = _numeric_flag(ctx, m.group(1))
        divisor = _numeric_flag(ctx, m.group(3))
        if divisor is not None and dividend is None:
            # the divisor flag: the largest value dividing both numbers (it still divides a
            # size the old value divided, e.g. the tp size a dcp size splits)
            common = math.gcd(a, b)
            if common < b:
                keep(*divisor, common, f"a divisor of both numbers the message states ({stated})")
        if dividend is not None and a > b:
            keep(*dividend, a - a % b, f"the nearest multiple below the message's value ({stated})")
    for m in _DIVISIBLE_BY_FLAG.finditer(text):
        # a model dimension in prose: only the divisor flag, by the same largest common divisor
        a, b = _number(m.group("given")), _number(m.group("given2"))
        divisor = _numeric_flag(ctx, m.group(2))  # group 1 is the dividend's number
        if divisor is None or a is None or b is None or a <= 0 or b <= 0:
            continue
        if not float(a).is_integer() or not float(b).is_integer() or int(a) % int(b) == 0:
            continue
        common = math.gcd(int(a), int(b))
        if common < b:
            keep(*divisor, common, f"a divisor of both numbers the message states (\"{m.group(0).strip()[:80]}\")")
    return out


# "Please try to increase --mem-fraction-static", "reduce --max-running-requests", "use a
# smaller --page-size": the words just before a numeric flag say which way it must move.
_DIRECTION = re.compile(r"\b(increas\w*|rais\w*|larger|higher|bigger|more|reduc\w*|decreas\w*|lower\w*|smaller|"
                        r"less)\b(?:\s+(?:the|your|a|value\s+of|the\s+value\s+of))*\s*[`'\"]?$", re.IGNORECASE)
_UP_WORDS = ("increas", "rais", "larger", "higher", "bigger", "more")


def _named_step(ctx: Context, flag: str, up: bool) -> Remediation | None:
    """A step of a numeric flag the message asks to move (its value unknown to the message):
    a fraction (float at most 1) by 0.05 within [0.3, 0.95], any other number by a factor of
    two (at least 1).  The step is this module's own, from the launch's or the release's value."""
    spec = ctx.catalog.spec(flag)
    if spec is None or spec.type not in ("int", "float") or not spec.takes_value:
        return None
    value, _ = ctx.current_or_assumed(flag)
    number = _number(value)
    params: dict[str, Any]
    if spec.type == "float" and (number is None or number <= 1):
        params = {"flag": flag, "by": 0.05, "max": 0.95} if up else {"flag": flag, "by": 0.05, "min": 0.3}
    else:
        params = {"flag": flag, "factor": 2} if up else {"flag": flag, "factor": 0.5, "min": 1}
    result = _move(ctx, params, up)
    rem = result[0] if isinstance(result, list) and result else result
    if not isinstance(rem, Remediation) or rem.is_empty():
        return None
    rem.note = f"{rem.note} (the message asks to {'raise' if up else 'lower'} it)"
    return rem


def _versions_knowing(flag: str, version: str) -> list[str]:
    from sglang_doctor.remedy import flags

    return [v for v in flags.KNOWN_VERSIONS if v != version and flags.shipped_catalog(v).canonical(flag)]


def _similar(typed: str, real: str) -> bool:
    """A typo of ``real`` (one or two characters off), not merely a flag that looks alike."""
    import difflib

    return difflib.SequenceMatcher(None, typed.lstrip("-"), real.lstrip("-")).ratio() >= 0.85


@remedy("divisor_size")
def divisor_size(ctx: Context, params: dict) -> Remediation | None:
    """A parallel size that splits a model dimension evenly, from the two numbers the message
    prints: ``{flag: --tp-size, dimension: "{numerator}", refused: "{denominator}"}`` for
    SGLang's ``ensure_divisibility`` ("28 is not divisible by 8", srt/distributed/utils.py,
    raised by ``divide(size, tp_size)`` when a layer shards heads or a hidden size over the
    tensor-parallel ranks).  The value is the greatest common divisor of the two: it divides the
    dimension (so the split is even) and divides the refused size (so the same GPUs still hold
    whole replicas), e.g. 28 heads at tp 8 -> tp 4.  Nothing when it is 1 or more than the
    refused size, or when the launch's own value of the flag is known and is not the refused
    number (then the divisor was another setting).  The log's numbers pick the value: advice,
    never applied unattended.  Trade-off: fewer GPUs per replica, each holding a larger share."""
    flag = ctx.flag(params.get("flag", ""))
    if flag is not None and params.get("power_of_two"):
        return _power_of_two_below(ctx, flag, params)
    dimension, refused = _number(ctx.fill(params.get("dimension"))), _number(ctx.fill(params.get("refused")))
    if flag is None or dimension is None or refused is None:
        return None
    if not (float(dimension).is_integer() and float(refused).is_integer()) or dimension < 1 or refused < 2:
        return None
    dimension, refused = int(dimension), int(refused)
    stated = _number(ctx.stated(flag))
    if stated is not None and int(stated) != refused:
        return None  # the launch's own size is another number: the message's divisor is not this flag
    value = math.gcd(dimension, refused)
    if value < 1 or value >= refused or ctx.catalog.validate(flag, value) is not None:
        return None
    rem = Remediation(set={flag: value}, safe=False, needs_human=True,
                      note=f"set {flag} {value}: the largest size that divides both numbers the message prints "
                           f"({dimension} does not split over {refused}; {value} divides both)",
                      tradeoff=params.get("tradeoff") or tradeoffs.default_for(Remediation(set={flag: value})))
    trust.declare(rem, "log", value_from="log")
    return rem


def _power_of_two_below(ctx: Context, flag: str, params: dict) -> Remediation | None:
    """``divisor_size {power_of_two: true}``: a bare ``assert self.total_num_heads % tp_size == 0``
    prints neither number, so the dimension is unknown; the launch's size (its command or dump)
    is.  Model head counts are multiples of a power of two (28 = 4 x 7, 40 = 8 x 5, 14 = 2 x 7),
    so the largest power of two below the refused size is the likeliest even split (tp 8 on 28
    heads -> 4, tp 6 -> 4, tp 3 -> 2).  A likelihood, not a computation: the note says so; advice."""
    refused = _number(ctx.stated(flag))
    if refused is None or not float(refused).is_integer() or refused < 2:
        return None
    value = 1
    while value * 2 < refused:
        value *= 2
    if ctx.catalog.validate(flag, value) is not None:
        return None
    rem = Remediation(set={flag: value}, safe=False, needs_human=True,
                      note=f"set {flag} {value}: the largest power of two below your {int(refused)} (the check "
                           "prints no numbers; model head counts are multiples of a power of two, so this is the "
                           "likeliest size that splits them: check the model's config.json)",
                      tradeoff=params.get("tradeoff") or tradeoffs.default_for(Remediation(set={flag: value})))
    trust.declare(rem, "log", value_from="log")
    return rem


@remedy("change_port")
def change_port(ctx: Context, params: dict) -> Remediation | None:
    """The next free port, tested by binding on this machine.

    The address tried is the user's own ``--host`` when it is an IP literal, else 127.0.0.1:
    never a name, and never anything the log says (no name resolution of log text).
    """
    flag = ctx.flag("--port")
    own = launch_command.value_of(ctx.command, flag, ctx.catalog) if ctx.command_known else None
    current = _number(own) or _number(ctx.diagnosis.captures.get("port")) or _number(ctx.current(flag)) or 30000
    host = launch_command.value_of(ctx.command, "--host", ctx.catalog) if ctx.command_known else None
    family = _ip_family(host)
    if family is None:
        host, family = "127.0.0.1", socket.AF_INET
    # SGLang also binds internal ports above --port (nccl port, zmq): step by a few.
    for candidate in range(int(current) + 10, min(int(current) + 2000, 65536), 10):
        if _port_free(host, candidate, family):
            note = (f"port {int(current)} is taken (an earlier server may still be running: "
                    f"`ss -ltnp 'sport = :{int(current)}'`); use {candidate}")
            if params.get("unsure"):  # a class rule: which of the launch's ports is taken is not known
                note = (f"if the port taken is the server's own ({flag} {int(current)}; an earlier server may "
                        f"still hold it: `ss -ltnp`): use {candidate}; SGLang's other ports (--nccl-port, "
                        "--dist-init-addr) are set apart")
            rem = Remediation(set={flag: candidate}, note=note, tradeoff="clients must use the new port",
                              safe=not params.get("unsure"))
            return trust.declare(rem, "planner")
    return None


def _ip_family(host: Any) -> int | None:
    """AF_INET / AF_INET6 for an IP literal, None for anything else (names are not resolved)."""
    if not isinstance(host, str) or not host:
        return None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return family
        except (OSError, ValueError):
            continue
    return None


def _port_free(host: str, port: int, family: int = socket.AF_INET) -> bool:
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((host, port))
        return True
    except OSError:
        return False


# -- what a flag cannot fix -----------------------------------------------------------------


@remedy("upgrade_sglang")
def upgrade_sglang(ctx: Context, params: dict) -> Remediation | None:
    minimum = ctx.fill(params.get("min_version")) or "the newest release"
    if not minimum[0].isdigit():
        return Remediation(needs_human=True, safe=False, note=f"SGLang {ctx.version} cannot do this; upgrade SGLang")
    if _at_least(ctx.version, minimum):
        # the release the log shows is already the rule's minimum or later: "upgrade to >= the
        # minimum" would ask for what it has; only a newer release than this one can help
        return Remediation(needs_human=True, safe=False,
                           note=f"SGLang {ctx.version} (already {minimum} or later) cannot do this; a newer release "
                                f"may: pip install -U 'sglang>{ctx.version}'")
    return Remediation(needs_human=True, safe=False,
                       note=f"SGLang {ctx.version} cannot do this; upgrade: pip install -U 'sglang>={minimum}'")


def _at_least(version: str | None, minimum: str) -> bool:
    """Whether a known release ``version`` is ``minimum`` or later (unknown: not)."""
    if not version:
        return False
    from sglang_doctor.remedy import flags
    try:
        return flags.version_key(version) >= flags.version_key(minimum)
    except ValueError:
        return False


@remedy("needs_human")
def needs_human(ctx: Context, params: dict) -> Remediation | None:
    """Advice only.  ``arch: "{arch}"`` (a compiler refused a GPU architecture): when
    remedy/toolchain.py knows which CUDA release's compiler knows it, that sentence leads the
    ``reason`` (``tool``: nvcc or ptxas); the log's architecture is only looked up, and shown
    only when the table knows it."""
    reason = ctx.fill(params.get("reason")) or "this needs a change no launch flag can make"
    if params.get("arch"):
        from sglang_doctor.remedy.toolchain import toolkit_advice

        advice = toolkit_advice(str(ctx.fill(params["arch"]) or ""), str(params.get("tool") or "nvcc"))
        if advice:
            reason = f"{advice}: {reason}"
    return Remediation(needs_human=True, safe=False, note=str(reason))


@remedy("plan_memory")
def plan_memory(ctx: Context, params: dict) -> list[Remediation] | None:
    """Ask the memory planner for launches that fit; each becomes a remediation."""
    if ctx.diagnosis.launch is None or not ctx.diagnosis.launch.server_args:
        return None  # no dump of the launch's settings: nothing to plan from
    if not ctx.model_config:
        ctx.warnings.append("no model config.json: the memory planner was skipped (use --model-config)")
        return None
    try:
        from sglang_doctor.remedy import planner
    except ImportError:
        return None
    server_args = _planner_args(ctx)
    observed = planner.observed_from_launch(ctx.diagnosis.launch) if ctx.diagnosis.launch else {}
    current = planner.plan(ctx.model_config, ctx.hardware, server_args, ctx.version, observed)
    out = []
    for cand in planner.search(ctx.model_config, ctx.hardware, server_args, ctx.version, observed):
        sets: dict[str, Any] | None = {}
        unsets: list[str] = []
        for dest, value in cand.changes.items():
            spec = ctx.catalog.by_dest(dest)
            if spec is None:
                sets = None
                break
            if value is None or value is False:
                # the planner turns a setting off (e.g. speculative decoding): drop the flag
                if server_args.get(dest) not in (None, False):
                    unsets.append(spec.name)
                continue
            if ctx.catalog.validate(spec.name, True if not spec.takes_value else value) is not None:
                sets = None
                break
            if _equal(server_args.get(dest), value):
                continue
            sets[spec.name] = True if not spec.takes_value else value
        if sets is None or (not sets and not unsets):
            continue
        gave = f" (had to give: {'; '.join(cand.gave_up)})" if cand.gave_up else ""
        note = (f"{_pool_words(current.failing)} did not fit; this launch is planned to fit with "
                f"{cand.plan.headroom_gb:.1f} GiB of headroom per GPU{gave}")
        budget = cand.plan.to_json()
        budget["current"] = current.to_json()  # the launch that failed, for the explanation
        out.append(Remediation(set=sets, unset=unsets, note=note, tradeoff=cand.tradeoff, plan=budget,
                               safe=not unsets))  # turning a feature off changes behaviour: ask
    return out or None


_POOL_WORDS = {
    "mamba_pool": "the recurrent-state (mamba) pools",
    "kv_pool": "the KV cache pool",
    "weights": "the weights",
    "headroom": "the runtime buffers outside the pools",
}


def _pool_words(failing: str | None) -> str:
    return _POOL_WORDS.get(failing or "", "the pools")


def _planner_args(ctx: Context) -> dict[str, Any]:
    """The launch as the planner sees it: the catalogue's defaults, the dump, the command."""
    server_args = dict(ctx.catalog.defaults())
    server_args.update({k: v for k, v in ctx.server_args.items() if v is not None})
    if ctx.command_known and ctx.command:
        for flag, value in launch_command.parse(ctx.command, ctx.catalog).items():
            spec = ctx.catalog.spec(flag)
            if spec is not None:
                server_args[spec.dest] = _typed(spec, value)
    return server_args


def _typed(spec: Any, value: Any) -> Any:
    if value is True or spec.type not in ("int", "float"):
        return value
    number = _number(value)
    if number is None:
        return value
    return int(number) if spec.type == "int" else number


# -- running a rule's list --------------------------------------------------------------------


def remediate(diagnosis: Diagnosis, *, command: list[str] | None, version: str, catalog: Any, hardware: Any,
              model_config: dict | None, warnings: list[str] | None = None,
              evidence: list["EarlierLaunch"] | None = None,
              version_source: str | None = None,
              version_range: tuple[str, ...] | None = None) -> Remediation | None:
    """The remediation of a diagnosis: its rule's remedies, first concrete one first.

    ``evidence`` is the log's other failed launches: a change one of them already ran and
    died of the same way is not proposed again (``weigh``).  A failure no rule knew gets the
    guarded next step of the fallback's best guess, if that category has one (remedy/guarded.py):
    advice worded as a condition on the guess, never applied unattended."""
    entries = diagnosis.remedies
    guessed, confidence = (None, 0.0)
    if not entries and diagnosis.rule == "unknown":
        guessed, confidence = guarded.guess_of(diagnosis.fallback)
        entries = guarded.entries(guessed, diagnosis.phase, diagnosis.launch, version)
    if not entries:
        return None
    command_known = command is not None
    if command is None and diagnosis.launch is not None and diagnosis.launch.server_args:
        command = launch_command.from_server_args(diagnosis.launch.server_args, catalog)
    hardware = hardware_mod.for_diagnosis(diagnosis, hardware, warnings)  # the GPU the log names, if it does
    ctx = Context(diagnosis, command, command_known, version, catalog, hardware, model_config,
                  warnings if warnings is not None else [], version_source, tuple(version_range or ()) or None)
    found: list[Remediation] = []
    for entry in entries:
        ((name, params),) = entry.items()
        op = REGISTRY.get(name)
        if op is None:
            ctx.warnings.append(f"unknown remedy {name}")
            continue
        params = dict(params or {})
        if not _passes_modules(diagnosis, params.pop("when_modules", None)):
            continue
        if not _passes_words(diagnosis, params.pop("when_words", None), params.pop("unless_words", None)):
            continue
        if not _passes_phase(diagnosis, params.pop("when_phase", None)):
            continue
        advice = bool(params.pop("advice", False))
        result = op(ctx, params)
        for rem in result if isinstance(result, list) else [result] if result else []:
            if hardware_mod.refuses_change(ctx.hardware, rem.set):  # a backend the log's own GPU cannot run
                continue
            rem.remedy = rem.remedy or name
            if advice:  # ``advice: true``: a change only the user can confirm (their GPU count): never unattended
                rem.needs_human, rem.safe = True, False
            _state_cost(rem, name, params)
            _declare_sources(rem, name, params)
            if not any(_same_change(rem, other) or _renamed_twin(ctx, rem, other) for other in found):
                found.append(rem)
    found = weigh(ctx, found, evidence or [])
    if not found:
        return None
    # what holds only if the launch had a setting the log does not show goes after the rest
    found.sort(key=lambda r: any(r is c for c in ctx.conditional))  # stable: order kept within each
    if guessed is None:
        found = _message_way_out(ctx, found)
        found = _compile_way_out(ctx, found)
    found = _lead_with_a_change(found)
    found = _second_a_change(found)
    found = _second_a_mechanism(found)
    # a log of a release before 0.4.0 (no catalogue: named, or an unnamed one its traceback
    # dates there): its changes spelled as that release spelled them (--disable-regex-jump-forward)
    from sglang_doctor.remedy import frame_releases

    named = frame_releases.pre_040_named(version) if version_source in ("log", "option") else None
    span = named or (frame_releases.pre_040_span(line.text for line in diagnosis.incident.lines)
                     if ctx.guessed_range else None)
    for rem in found if span is not None else ():
        frame_releases.respell_pre_040(rem, span, named=named is not None)
    for rem in found:
        rem.command = _fixed_command(command, rem, catalog, ctx.warnings)
        rem.untrusted = trust.check(rem, diagnosis, catalog)
        if rem.untrusted:
            rem.safe = False  # advice: shown, never applied by ``run --yes``
        if guessed is not None:
            guarded.guard(rem, guessed, confidence, diagnosis.phase, diagnosis.launch)
    best, *rest = found
    best.alternatives = rest
    return best


def _passes_modules(diagnosis: Diagnosis, modules: Any) -> bool:
    """An entry's ``when_modules: [path parts]``: it applies only when the traceback passes one
    of these modules (a class rule's fix for one kind of site: ``cuda_graph_runner`` for a
    capture-time OOM, ``flashinfer/sampling`` for FlashInfer's sampling kernels).  A native crash
    has no traceback: the Python stack faulthandler printed for its thread stands for it.  No
    list: always."""
    if not modules:
        return True
    wanted = [str(m) for m in (modules if isinstance(modules, (list, tuple)) else [modules])]
    frames = diagnosis.incident.frames
    if not frames:
        from sglang_doctor.diagnose.evidence import native_stack

        frames = native_stack(diagnosis.incident)
    return any(m in f.file.replace("\\", "/") for f in frames for m in wanted)


def _passes_words(diagnosis: Diagnosis, words: Any, unless: Any = None) -> bool:
    """An entry's ``when_words: [lower-case substrings]``: it applies only when the failure's
    own words (its exceptions' ``Type: message`` and its failure lines, as a class rule's
    ``message_any`` reads them) hold one of them: the transport or the subsystem a message
    names picks its switch (``NET/IB`` -> NCCL_IB_DISABLE=1, ``mooncake`` -> the other KV
    transfer backend).  ``unless_words``: not when they hold one of these (a default for one
    machine's GPUs is not offered when the words name NCCL's inter-node network, ``NET/...``).
    The words only choose among the rule's own changes, never become a value.  No lists: always."""
    if not words and not unless:
        return True
    from sglang_doctor.diagnose.evidence import failure_words

    def listed(value: Any) -> list[str]:
        return [str(w).lower() for w in (value if isinstance(value, (list, tuple)) else [value])] if value else []

    text = failure_words(diagnosis.incident)[:20000].lower()
    if any(w in text for w in listed(unless)):
        return False
    wanted = listed(words)
    return not wanted or any(w in text for w in wanted)


def _passes_phase(diagnosis: Diagnosis, phases: Any) -> bool:
    """An entry's ``when_phase: [phases]``: it applies only to a failure in one of these phases
    (``serving``, ``startup.cuda_graph``, ...; a name also covers its sub-phases), for a rule
    whose category follows the phase (``category_by_phase``) and whose fix does too.  An
    unknown phase passes no list.  No list: always."""
    if not phases:
        return True
    wanted = [str(p) for p in (phases if isinstance(phases, (list, tuple)) else [phases])]
    phase = str(diagnosis.phase or "")
    return bool(phase) and any(phase == p or phase.startswith(p + ".") for p in wanted)


def _message_way_out(ctx: Context, found: list[Remediation]) -> list[Remediation]:
    """The variable the failure's own message names as its way out ("set
    SGLANG_DISABLE_CUDNN_CHECK=1 to skip this check", "set SGLANG_USE_ATTN_TP_NGRAM=1 to shard
    the table"; ``class_remedies.env_advised``: a known prefix, upper case, a short plain value,
    not negated) is among the two changes read first: the first alternative when the rule's own
    first change is another (a rule written for the failure keeps its lead), the lead when the
    rule's answer starts with advice only.  The log chose the name and value, so the change is
    advice (``declare_log_named``), never applied unattended.  SGLang prints such a variable only
    as a maintainer-provided escape from that very check, which is why it is worth a slot."""
    from sglang_doctor.remedy.class_remedies import env_advised

    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    named = env_advised(text)
    if named is None:
        return found
    name, value = named
    # only an instruction to set it ("set X=1", "export X=1"): "with X=2 requires ..." names the
    # value the launch ran with, the conflict, not the way out
    told = re.search(r"\b(?:set|export|setting)\s+[`'\"]?" + re.escape(name) + r"\s*=", text, re.IGNORECASE)
    if told is None:
        return found
    # advice on a condition ("If reserved but unallocated memory is large try setting
    # PYTORCH_CUDA_ALLOC_CONF=...", torch's OOM text) is the rule's to weigh (allocator_fragmentation
    # reads torch's figures for it), not an unconditional way out
    sentence = re.split(r"[.;\n]\s", text[:told.start()])[-1]
    if re.search(r"\bif\b", sentence, re.IGNORECASE):
        return found
    if any(name in rem.env for rem in found[:2]):
        return found
    rem = Remediation(env={name: value}, safe=False, needs_human=True,
                      note=f"set {name}={value} in the server's environment: the failure's message names it "
                           "as the way out",
                      tradeoff="the message's own work-around: it usually skips a check or switches a path off; "
                               "read what the message says it costs")
    trust.declare_log_named(rem, value_from="log")
    rest = [r for r in found if not (r.env.get(name) is not None and not r.set and not r.unset and len(r.env) == 1)]
    at = 1 if rest else 0
    return rest[:at] + [rem] + rest[at:]


# torch.compile's own machinery: a failure raised in it (its frames, or its exception types
# when the frames were cut) happened while compiling
_COMPILE_MODULES = ("torch/_dynamo/", "torch/_inductor/")
_COMPILE_EXCEPTIONS = ("torch._dynamo.exc.", "torch._inductor.exc.", "BackendCompilerFailed", "InductorError")
# SGLang's piecewise CUDA graphs compile too (0.5.x model_executor/piecewise_cuda_graph_runner.py,
# srt/compilation/): a failure there is theirs (rules/cuda_graph.yaml: --disable-piecewise-cuda-graph)
_PIECEWISE_MODULES = ("piecewise_cuda_graph_runner", "srt/compilation/")


def _compile_way_out(ctx: Context, found: list[Remediation]) -> list[Remediation]:
    """A failure inside torch.compile (``torch/_dynamo``, ``torch/_inductor`` frames or their
    exception types: a missing C compiler, an inductor lowering error, a graph break raised as an
    error) with SGLang's own opt-in ``--enable-torch-compile`` (server_args: off by default;
    ``model_runner`` compiles the decode CUDA graphs only with it): the compile switch off is among
    the first two changes, after the rule's own first change (the lead when the rule starts
    with advice only).  Not when the traceback is the piecewise CUDA graphs' (their rules
    answer), not when the launch is known to run without it (``disable_feature`` gives nothing);
    with the settings unknown it is the conditional "remove it if your launch sets it".
    Trade-off: small-batch decode a little slower (what torch.compile bought), no compile step."""
    inc = ctx.diagnosis.incident
    paths = [f.file.replace("\\", "/") for f in inc.frames]
    if any(m in p for p in paths for m in _PIECEWISE_MODULES):
        return found
    types = [e.type for e in ([inc.exception] if inc.exception is not None else []) + list(inc.chain or [])
             if e is not None and e.type]
    in_compile = (any(m in p for p in paths for m in _COMPILE_MODULES)
                  or any(t.startswith(_COMPILE_EXCEPTIONS) or t.endswith(_COMPILE_EXCEPTIONS) for t in types))
    if not in_compile:
        return found
    if any("--enable-torch-compile" in rem.unset for rem in found[:2]):
        return found
    rem = disable_feature(ctx, {"feature": "torch_compile"})
    if not isinstance(rem, Remediation) or rem.is_empty():
        return found
    rem.remedy = "disable_feature"
    rem.note += " (the failure was raised inside torch.compile's own code)"
    trust.declare(rem, "rule")
    rest = [r for r in found if not _same_change(r, rem)]
    at = 1 if rest else 0
    return rest[:at] + [rem] + rest[at:]


def _lead_with_a_change(found: list[Remediation]) -> list[Remediation]:
    """A rule's leading advice (a ``needs_human`` entry, no change) followed by changes: the
    first change leads, with the advice's words first in its note, and is itself advice
    (``needs_human``, not ``safe``), so ``run`` still stops for a person as it did on the
    advice alone.  What a reader takes first is then a change to try, and the advice is not
    lost.  The weighing's evidence note (remedy ``evidence``: the log's own launches proved
    the changes wrong), a rule whose only answer is advice, and changes the weighing marked
    unproven (never the first choice) are left as they are."""
    if len(found) < 2:
        return found
    head = found[0]
    if not (head.needs_human and head.is_empty() and head.remedy == "needs_human"):
        return found
    # a change the log's own launches make doubtful (weigh's UNPROVEN mark) is never the first
    at = next((i for i, rem in enumerate(found)
               if i and not rem.is_empty() and "UNPROVEN:" not in (rem.tradeoff or "")), None)
    if at is None:
        return found
    change = found[at]
    change.needs_human, change.safe = True, False
    advice = (head.note or "").rstrip(". ")
    if advice:
        change.note = f"{advice}; the change to try: {change.note}" if change.note else advice
    return [change, *(rem for i, rem in enumerate(found) if i not in (0, at))]


def _second_a_change(found: list[Remediation]) -> list[Remediation]:
    """After a leading change, the rule's advice (a ``needs_human`` entry with no change) in the
    first alternative's place while a change follows it: the first such change moves before the
    advice.  The two places read first (and the two a relaunch loop tries) then hold two
    changes, as ``_lead_with_a_change`` does for the lead; the advice keeps its words, one place
    down.  Not the weighing's evidence note, not a change the weighing marked unproven."""
    if len(found) < 3 or found[0].is_empty():
        return found
    second = found[1]
    if not (second.needs_human and second.is_empty() and second.remedy == "needs_human"):
        return found
    return _promote_to_second(found, lambda rem: True)


def _promote_to_second(found: list[Remediation], fits) -> list[Remediation]:
    """The first change after the first alternative that ``fits`` (not empty, not marked
    unproven by the weighing) moved up to the first alternative's place; the rest keep their
    order.  Unchanged when there is none."""
    at = next((i for i, rem in enumerate(found)
               if i > 1 and not rem.is_empty() and "UNPROVEN:" not in (rem.tradeoff or "") and fits(rem)), None)
    if at is None:
        return found
    return [found[0], found[at], *(rem for i, rem in enumerate(found) if i not in (0, at))]


def _further_step(a: Remediation, b: Remediation) -> bool:
    """Whether ``b`` moves the same flags as ``a`` the same way, only by another amount: two
    entries of one rule stepping one flag (``--cuda-graph-max-bs`` halved, then down to 16 when
    the launch's value is not in the log) are one mechanism tried at two sizes."""
    return (a.remedy == b.remedy and a.remedy in ("lower_flag", "raise_flag") and bool(a.set)
            and set(a.set) == set(b.set) and sorted(a.unset) == sorted(b.unset) and a.env == b.env)


def _second_a_mechanism(found: list[Remediation]) -> list[Remediation]:
    """The first alternative a further step of the lead's own flag while a change by another
    mechanism follows: that change moves up to the first alternative's place and the further
    step one place down.  The two places read first (and the two a relaunch loop tries) then hold
    two ways out, as ``_renamed_twin`` keeps for two spellings of one change.  Not the weighing's
    evidence note, not a change the weighing marked unproven."""
    if len(found) < 3 or found[0].is_empty() or not _further_step(found[0], found[1]):
        return found
    return _promote_to_second(found, lambda rem: not _further_step(found[0], rem))


_OWN_COST = ("set_flag", "unset_flag", "set_env", "raise_flag", "lower_flag", "lower_prefill_budget")


def _state_cost(rem: Remediation, name: str, params: Any) -> None:
    """A change whose rule entry states no trade-off gets its flag's or variable's own cost
    (remedy/tradeoffs.py), before what the remedy added (an assumed value, a spelling)."""
    if name not in _OWN_COST or rem.is_empty() or dict(params or {}).get("tradeoff"):
        return
    cost = tradeoffs.default_for(rem)
    if cost and cost not in (rem.tradeoff or ""):
        rem.tradeoff = f"{cost}; {rem.tradeoff}" if rem.tradeoff else cost


# Where the values of each remedy come from when its parameters are plain (not templates).
# A remedy missing here declares its own sources or is never applied unattended.
_SOURCES = {"raise_flag": "planner", "lower_flag": "planner", "lower_prefill_budget": "planner",
            "plan_memory": "planner", "set_flag": "rule",
            "isolate_features": "rule",
            "unset_flag": "rule", "set_env": "rule", "disable_feature": "rule", "allocator_fragmentation": "rule"}


_VALUE_PARAMS = ("flag", "value", "to", "by", "factor", "max", "min", "name", "feature", "goal")


def _declare_sources(rem: Remediation, name: str, params: Any) -> None:
    """Provenance of a remedy's changes: a template parameter (``"{minimum}"``) is filled
    from the log's captures or dump, so its values are log text (docs/DESIGN.md "Trust")."""
    templated = any(isinstance(v, str) and "{" in v for k, v in dict(params or {}).items() if k in _VALUE_PARAMS)
    if templated:
        trust.declare(rem, "log", value_from="log")
    elif name in _SOURCES:
        trust.declare(rem, _SOURCES[name])


def _same_change(a: Remediation, b: Remediation) -> bool:
    """Two entries that change the same flags and variables the same way are one change, whatever
    their notes (two of a rule's steps reaching one removal must not fill the fix and its first
    alternative); advice without a change is told apart by its words."""
    def words(rem: Remediation) -> str:
        return rem.note if rem.needs_human and not (rem.set or rem.unset or rem.env) else ""

    return (a.set, sorted(a.unset), a.env, a.needs_human, words(a)) == \
           (b.set, sorted(b.unset), b.env, b.needs_human, words(b))


def _renamed_twin(ctx: Context, a: Remediation, b: Remediation) -> bool:
    """Whether ``a`` is ``b``'s change under other flag names: a rule lists a flag's spellings
    across releases (``--cuda-graph-max-bs-decode`` and ``--cuda-graph-max-bs``) so that any
    release finds one, and two spellings of one change must not take the fix and its first
    alternative (a different mechanism belongs there).  The names are followed to the target
    release's spelling (``flags.translate``); a step's size may differ (each spelling's
    release has its own default), a set value may not."""
    if not (a.set or a.unset) or not (b.set or b.unset) or a.remedy != b.remedy or a.env != b.env:
        return False
    if set(a.set) == set(b.set) and sorted(a.unset) == sorted(b.unset):
        return False  # the same names: _same_change decides
    from sglang_doctor.remedy import flags

    def own(name: str) -> str | None:
        return ctx.catalog.canonical(name) or flags.translate(name, ctx.catalog)

    def names(rem: Remediation) -> tuple | None:
        sets = {own(f): v for f, v in rem.set.items()}
        unsets = sorted(own(f) or "" for f in rem.unset)
        if None in sets or "" in unsets:
            return None
        if rem.remedy in ("lower_flag", "raise_flag"):
            return tuple(sorted(sets)), tuple(unsets)
        return tuple(sorted((f, repr(v)) for f, v in sets.items())), tuple(unsets)

    key_a, key_b = names(a), names(b)
    return key_a is not None and key_a == key_b


def _fixed_command(command: list[str] | None, rem: Remediation, catalog: Any, warnings: list[str]) -> list[str] | None:
    if command is None or rem.needs_human or (not rem.set and not rem.unset):
        return list(command) if command is not None and rem.env else None
    try:
        return launch_command.apply(command, rem, catalog)
    except launch_command.CommandError as exc:
        warnings.append(f"remedy {rem.remedy} dropped: {exc}")
        return None


# -- the whole log as evidence ----------------------------------------------------------------


@dataclass(frozen=True)
class EarlierLaunch:
    """Another launch of the same log that failed: its settings and the rules its incidents got."""

    number: int  # 1-based, as the report numbers launches
    server_args: dict[str, Any]
    rules: tuple[str, ...]


# fields that differ between launches without bearing on a failure (not worth naming as evidence)
_NOISE = {"random_seed", "port", "host", "nccl_port", "dist_init_addr", "log_level", "served_model_name",
          "metrics_port", "file_storage_path", "api_key", "download_dir"}
_KNOB_WORDS = {"mem_fraction_static": "the fraction"}


def weigh(ctx: Context, found: list[Remediation], evidence: list[EarlierLaunch]) -> list[Remediation]:
    """Drop what the log's other launches already ran and died of the same way, mark what
    they make doubtful or the planner predicts not to fit, and say what the launches prove.

    * a change whose every flag value a same-way launch already had: dropped (it was tried);
    * one numeric flag moved to a value inside the range the same-way launches (this one
      included) already spanned: dropped (proven not to help);
    * one numeric flag moved past that range: kept, marked unproven, never the first choice;
    * with a model config, a memory change the planner predicts still does not fit: marked.
    When nothing unmarked is left, the answer is a note for a human with the evidence, and
    the marked changes as alternatives.
    """
    same = [e for e in evidence if ctx.diagnosis.rule in e.rules]
    proofs: list[str] = []
    kept: list[Remediation] = []
    marked: list[Remediation] = []
    for rem in found:
        if rem.needs_human or not (rem.set or rem.unset):
            kept.append(rem)
            continue
        verdict = _against_launches(ctx, rem, same)
        if verdict is not None:
            kind, text = verdict
            if text not in proofs:
                proofs.append(text)
            if kind == "drop":
                continue
            doubt = _planner_doubt(ctx, rem)
            _mark(rem, text + (f"; and {doubt}" if doubt else ""))
            marked.append(rem)
            continue
        doubt = _planner_doubt(ctx, rem)
        if doubt:
            _mark(rem, doubt)
            marked.append(rem)
            continue
        kept.append(rem)
    if not proofs:
        return kept + marked
    evidence_text = "\n".join(proofs)
    if kept and not kept[0].needs_human:
        kept[0].note = (kept[0].note + "\n" if kept[0].note else "") + evidence_text
        return kept + marked
    missing = "" if ctx.model_config else (
        "; pass --model-config PATH/config.json so the memory planner can say which pool does not fit")
    human = Remediation(needs_human=True, safe=False, remedy="evidence",
                        note=evidence_text + missing)
    return [human, *[r for r in kept if r.needs_human], *marked]


def _mark(rem: Remediation, why: str) -> None:
    rem.tradeoff = f"{rem.tradeoff}; " if rem.tradeoff else ""
    rem.tradeoff += f"UNPROVEN: {why}"
    rem.safe = False  # run --yes does not try a doubtful change unattended


def _dest_value(ctx: Context, flag: str, value: Any) -> tuple[str, Any] | None:
    spec = ctx.catalog.spec(flag)
    if spec is None:
        return None
    return spec.dest, _typed(spec, value)


def _against_launches(ctx: Context, rem: Remediation, same: list[EarlierLaunch]) -> tuple[str, str] | None:
    """("drop" | "mark", what the launches prove) when the same-way launches speak to ``rem``."""
    changes = [_dest_value(ctx, f, v) for f, v in rem.set.items()]
    if not same or any(c is None for c in changes):
        return None
    removed = [ctx.catalog.spec(f) for f in rem.unset]
    shown = _changes_text(rem)
    for e in same:
        had = all(_equal(e.server_args.get(dest), value) for dest, value in changes)  # type: ignore[misc]
        # a removal counts as tried only when that launch's dump shows the setting off
        had = had and all(s is not None and s.dest in e.server_args
                          and e.server_args[s.dest] in (None, False, s.default) for s in removed)
        if had:
            others = _differences(ctx, e, {d for d, _ in changes})  # type: ignore[misc]
            with_text = f" with {others}" if others else ""
            knob = _knob_words(ctx, rem)
            tail = f": {knob} is not the constraint" if knob else ""
            return "drop", f"launch {e.number} already tried {shown}{with_text} and failed the same way{tail}"
    if len(changes) != 1 or rem.unset:
        return None
    ((dest, value),) = changes  # type: ignore[misc]
    number = _number(value)
    here = _number(ctx.server_args.get(dest))
    if number is None or here is None:
        return None
    tried = [(e.number, _number(e.server_args.get(dest))) for e in same]
    tried = [(n, v) for n, v in tried if v is not None and abs(v - here) > 1e-9]
    if not tried:
        return None
    lo, hi = min([here, *[v for _, v in tried]]), max([here, *[v for _, v in tried]])
    flag = next(iter(rem.set))
    ran = ", ".join(f"launch {n} ran {flag} {launch_command.render_scalar(_as_shown(v))}" for n, v in tried)
    said = (f"{ran} and this launch {launch_command.render_scalar(_as_shown(here))}: "
            f"{'both' if len(tried) == 1 else 'all'} failed the same way")
    if lo - 1e-9 <= number <= hi + 1e-9:
        return "drop", said + f", so {flag} {launch_command.render_scalar(value)} would too"
    knob = _knob_words(ctx, rem) or flag
    return "mark", said + f", so {knob} may not be the constraint"


def _as_shown(v: float) -> Any:
    return int(v) if float(v).is_integer() and abs(v) >= 1 else round(v, 4)


def _knob_words(ctx: Context, rem: Remediation) -> str | None:
    if len(rem.set) != 1 or rem.unset:
        return None
    spec = ctx.catalog.spec(next(iter(rem.set)))
    return _KNOB_WORDS.get(spec.dest, spec.name) if spec is not None else None


def _changes_text(rem: Remediation) -> str:
    parts = [f if v is True else f"{f} {launch_command.render_scalar(v)}" for f, v in rem.set.items()]
    parts += [f"without {f}" for f in rem.unset]
    return " ".join(parts)


def _differences(ctx: Context, e: EarlierLaunch, skip: set[str]) -> str:
    """The settings that launch had and this one does not, as flags (at most three)."""
    here = ctx.server_args
    out = []
    for dest, value in e.server_args.items():
        if dest in skip or dest in _NOISE or _equal(here.get(dest), value) or (here.get(dest) is None and value is None):
            continue
        spec = ctx.catalog.by_dest(dest)
        if spec is None or value in (None, False):
            continue
        out.append(spec.name if value is True else f"{spec.name} {launch_command.render_scalar(value)}")
    return " ".join(out[:3]) + (" ..." if len(out) > 3 else "")


_PLANNED_DESTS = {"mem_fraction_static", "max_running_requests", "mamba_ssm_dtype", "chunked_prefill_size",
                  "cuda_graph_max_bs", "context_length", "max_total_tokens", "max_mamba_cache_size",
                  "mamba_full_memory_ratio", "kv_cache_dtype", "disable_cuda_graph", "speculative_algorithm"}


def _planner_doubt(ctx: Context, rem: Remediation) -> str | None:
    """With a model config, a memory change the planner predicts still does not fit: why."""
    if rem.remedy == "plan_memory" or not ctx.model_config or not ctx.diagnosis.category.startswith("memory."):
        return None
    if ctx.diagnosis.launch is None or not ctx.diagnosis.launch.server_args:
        return None
    changes = [_dest_value(ctx, f, v) for f, v in rem.set.items()]
    if any(c is None for c in changes) or not any(d in _PLANNED_DESTS for d, _ in changes):  # type: ignore[misc]
        return None
    try:
        from sglang_doctor.remedy import planner

        args = _planner_args(ctx)
        args.update(dict(changes))  # type: ignore[arg-type]
        for f in rem.unset:
            spec = ctx.catalog.spec(f)
            if spec is not None:
                args[spec.dest] = spec.default
        observed = planner.observed_from_launch(ctx.diagnosis.launch)
        p = planner.plan(ctx.model_config, ctx.hardware, args, ctx.version, observed)
    except Exception:  # noqa: BLE001 - no verdict is better than a wrong one
        return None
    if p.fits:
        return None
    return f"the memory planner predicts it still does not fit ({(p.failing or 'headroom').replace('_', ' ')})"


# the class-level operations (switch_backend, drop_feature) register themselves on import
from sglang_doctor.remedy import class_remedies as _class_remedies  # noqa: E402,F401
# the prefill-budget operation (the chunk, or the batch budget when chunking was off) likewise
from sglang_doctor.remedy import prefill_budget as _prefill_budget  # noqa: E402,F401
