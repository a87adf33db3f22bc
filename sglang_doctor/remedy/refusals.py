"""The change an argument check's refusal implies, from the shape of its message (issue 12).

SGLang's argument checks (0.5.9 ``server_args.py`` ``__post_init__`` / ``check_server_args`` /
``_handle_*``, 0.5.23 ``arg_groups/*_hook.py``) say what they refuse in a few shapes, and each
shape implies its fix:

- *A requires B* ("--sidecar-args requires --sidecar", "Please enable dp attention when setting
  enable_dp_lm_head", "enable_mixed_chunk is required for speculative decoding", "X is only
  supported with B", "requires radix cache to be disabled"): turn B on (or off, as it says),
  else turn A off;
- *A is not supported with B* ("... does not support dp attention", "is not compatible with
  overlap schedule", "incompatible with", "mutually exclusive", "Cannot set A and B together"):
  turn one of them off, the one the check is about kept first when it is a switch of its own;
- *a value it names* ("Please set it to 'dual_chunk_flash_attn'", "eplb_algorithm to be set to
  'auto' or 'elasticity_aware'", "only supported with ep_size == 1", "(pp_size=1)", "only supports
  bf16/bfloat16 or fp8_e4m3 kv_cache_dtype", "One of the attention backends in [...] is required"):
  that value, the first one the target release accepts and the launch does not already run;
- *a setting refused on its own* ("Cannot set --disaggregation-decode-tp for the decode engine",
  "base_gpu_id must be non-negative"): remove it, so the release's default applies.

A setting is named as a flag (``--foo-bar``), a ServerArgs field (``foo_bar``), the flag without
its dashes ("enable-hierarchical-cache") or in prose ("dp attention", "radix cache"; the
``PROSE`` table below).  The message only *picks* among flags of the target release's
catalogue and values its parser accepts (docs/CONTRACT.md "Trust"): every change is validated,
declared as log-named, and is advice (never applied by ``run --yes``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from sglang_doctor.model import Remediation
from sglang_doctor.remedy import flags, trust
from sglang_doctor.remedy.remedies import Context, _equal, remedy

# Prose names SGLang's messages give a setting -> (flag, what turns it on, what turns it off).
# ``True`` is the switch passed, ``None`` the flag removed (the release's default), a value
# the flag set to it.  Only the flags the target release has are used.
PROSE: tuple[tuple[re.Pattern, str, Any, Any], ...] = (
    (re.compile(r"\b(?:dp|data[- ]parallel(?:ism)?)[- ]attention\b|\battention[- ]dp\b", re.I), "--enable-dp-attention", True, None),
    (re.compile(r"\bdp[- _]lm[- _]head\b", re.I), "--enable-dp-lm-head", True, None),
    (re.compile(r"\bradix[- ]cach(?:e|ing)\b|\bprefix[- ]caching\b", re.I), "--disable-radix-cache", None, True),
    (re.compile(r"\boverlap[- ]schedul(?:e|er|ing)\b", re.I), "--disable-overlap-schedule", None, True),
    (re.compile(r"\bmixed[- ]chunk(?:ed[- ]prefill)?\b", re.I), "--enable-mixed-chunk", True, None),
    (re.compile(r"\bchunked[- ]prefill\b", re.I), "--chunked-prefill-size", None, -1),
    (re.compile(r"\bhierarchical[- ]cache\b|\bhicache\b", re.I), "--enable-hierarchical-cache", True, None),
    (re.compile(r"\btorch[. _-]?compile\b", re.I), "--enable-torch-compile", True, None),
    (re.compile(r"\btwo[- ]batch[- ]overlap\b|\bTBO\b"), "--enable-two-batch-overlap", True, None),
    (re.compile(r"\bpiecewise[- ]cuda[- ]graphs?\b", re.I), "--disable-piecewise-cuda-graph", None, True),
    (re.compile(r"\bprefill[- ]cuda[- ]graphs?\b", re.I), "--disable-prefill-cuda-graph", None, True),
    (re.compile(r"\bcuda[- ]graphs?\b", re.I), "--disable-cuda-graph", None, True),
    (re.compile(r"\bcustom[- ]all[- ]?reduce\b", re.I), "--disable-custom-all-reduce", None, True),
    (re.compile(r"\bspeculative[- ]decoding\b|\bspec(?:ulative)? v2\b", re.I), "--speculative-algorithm", None, None),
    (re.compile(r"\bpipeline[- ]parallel(?:ism)?\b|\bPP\b"), "--pp-size", None, 1),
    (re.compile(r"\bdeterministic[- ]inference\b", re.I), "--enable-deterministic-inference", True, None),
    # "DSA DCP does not support PD disaggregation" (0.5.23 model_overrides/deepseek_v2.py:24): off is
    # the release's default mode (null), on needs the role (prefill / decode) the message does not say
    (re.compile(r"\b(?:PD|prefill[- ]decode) disaggregation\b", re.I), "--disaggregation-mode", None, None),
    (re.compile(r"\bEPLB\b|\bexpert[- ]parallel(?:ism)? load balanc(?:er|ing)\b", re.I), "--enable-eplb", True, None),
    (re.compile(r"\bredundant experts?\b", re.I), "--ep-num-redundant-experts", None, None),
    (re.compile(r"\bPD[- ]Multiplexing\b|\bpdmux\b", re.I), "--enable-pdmux", True, None),
    (re.compile(r"\b(?:multi-)?lora\b(?![ -](?:overlap|adapters?|paths?|rank|target|weights|modules|backend|eviction|drain))",
                re.I), "--enable-lora", True, None),
    (re.compile(r"\bspeculative[- ]moe[- ]runner[- ]backends?\b", re.I), "--speculative-moe-runner-backend", None, None),
    (re.compile(r"\bmoe[- ]runner[- ]backends?\b", re.I), "--moe-runner-backend", None, None),
    (re.compile(r"\b(?:moe[- ])?a2a[- ]backends?\b", re.I), "--moe-a2a-backend", None, None),
    (re.compile(r"\bsampling[- ]backends?\b", re.I), "--sampling-backend", None, None),
    (re.compile(r"\bgrammar[- ]backends?\b", re.I), "--grammar-backend", None, None),
    (re.compile(r"\battention[- ]backends?\b", re.I), "--attention-backend", None, None),
    (re.compile(r"\bkv[- _]cache[- _]dtype\b", re.I), "--kv-cache-dtype", None, None),
    (re.compile(r"\btokenizer worker num\b", re.I), "--tokenizer-worker-num", None, None),
)

# settings that are the deployment's shape, not a feature of it: in a conflict, turned off last
_DEPLOYMENT = ("--disaggregation-mode",)

# a prose setting turned off by the release's own way (remedies.FEATURES, spelled per release)
OFF_FEATURES = {"--disable-cuda-graph": "cuda_graph", "--disable-radix-cache": "radix_cache",
                "--disable-overlap-schedule": "overlap_schedule", "--disable-custom-all-reduce": "custom_all_reduce",
                "--enable-torch-compile": "torch_compile", "--speculative-algorithm": "speculative"}

# a flag (--foo-bar), a ServerArgs field (foo_bar) or a flag without its dashes (enable-foo-bar)
_WORD = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)|(?<![\w.\-/])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])"
                   r"|(?<![\w.\-/])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w-])")


@dataclass
class Named:
    """A setting a message names: its flag in the target release, where the words are."""

    flag: str
    start: int
    end: int
    on: Any = True      # what turns it on (True: the switch; None: unset; a value)
    off: Any = None     # what turns it off
    prose: bool = False
    subject: bool = False  # a choice the check refuses ("extra_buffer is not supported"): only turned off


def named_settings(ctx: Context, text: str) -> list[Named]:
    """Every setting of the target release ``text`` names, in the text's order (a flag named
    twice is kept at its first place)."""
    found: list[Named] = []
    for m in _WORD.finditer(text):
        word = m.group(1) or ("--" + m.group(2).replace("_", "-") if m.group(2) else "--" + m.group(3))
        # a flag spelled out may be any spelling of any release; a field or a bare word only this
        # release's exact option (no prefix: "tp" is not --tp-size)
        flag = ctx.flag(word) if m.group(1) else ctx.catalog.canonical(word) if ctx.catalog.has_option(word) else None
        if flag is None and m.group(2):
            spec = ctx.catalog.by_dest(m.group(2))
            flag = spec.name if spec is not None else None
        if flag is None:
            continue
        spec = ctx.catalog.spec(flag)
        if spec is None:
            continue
        switch = not spec.takes_value
        found.append(Named(flag, m.start(), m.end(), True if switch else None, None))
    for pattern, flag, on, off in PROSE:
        spelled = ctx.flag(flag)
        spec = ctx.catalog.spec(spelled) if spelled is not None else None
        if spec is not None and spec.deprecated and not _widest_kept(ctx, spelled):
            # (0.5.23 deprecates --enable-dp-attention for --attn-dp-size, --disable-cuda-graph for
            # the backends' "disabled"): the successor its help names, else the feature's own way off
            after = flags.successor(spelled, ctx.catalog)
            if after is not None and after[1] is None and ctx.catalog.spec(after[0]).takes_value:
                spelled, on, off = after[0], None, None
            elif flag in OFF_FEATURES:
                on = None
            else:
                continue
        elif spec is None:
            continue
        for m in pattern.finditer(text):
            if any(n.start <= m.start() < n.end or m.start() <= n.start < m.end() for n in found):
                continue
            found.append(Named(spelled, m.start(), m.end(), on, off, prose=True))
    for flag, choice, m in _choices_named(ctx, text):
        if any(n.start <= m.start() < n.end or m.start() <= n.start < m.end() for n in found):
            continue
        spec = ctx.catalog.spec(flag)
        others = [c for c in map(str, spec.choices) if c not in (choice, "auto", "none", str(spec.default))]
        # turned off: another choice the message names and does not refuse ("extra_buffer is not
        # supported for X; use no_buffer"), else the one other choice when there is one, else the
        # release's default (the launch named the value, or its "auto" picked it)
        owner = _values_after_flags(text, found)
        told = [c for c in others if re.search(r"(?<![\w-])" + re.escape(c) + r"(?![\w-])", text) and not _refused(text, c)
                and owner.get(c, flag) == flag]
        # ... and a "disabled" choice before the default: a default the release resolves itself
        # (None, "auto") may resolve to the refused choice again (0.5.23 layernorm_sp_hook.py:73
        # keeps the CUDA default of --cuda-graph-backend-prefill, breakable)
        off = (told[0] if told else others[0] if len(others) == 1
               else "disabled" if "disabled" in others and spec.default in (None, "auto") else None)
        found.append(Named(flag, m.start(), m.end(), choice, off, prose=True, subject=True))
    found.sort(key=lambda n: n.start)
    out: list[Named] = []
    for n in found:
        if not any(o.flag == n.flag for o in out):
            out.append(n)
    return out


def _widest_kept(ctx: Context, flag: str) -> bool:
    """The release is a guess (the log names none) and more releases of its range take the
    deprecated ``flag`` than its successor (--enable-dp-attention: 0.4.0-0.5.23; --attn-dp-size:
    0.5.22 on): the deprecated spelling is kept, the one a pasted change is most likely to be
    taken in (``_spelling_note`` names the other)."""
    releases = ctx.guessed_range
    after = flags.successor(flag, ctx.catalog) if releases else None
    if after is None:
        return False
    old = sum(flags.shipped_catalog(v).has_option(flag) for v in releases)
    return old > sum(flags.shipped_catalog(v).has_option(after[0]) for v in releases)


def _spelling_note(ctx: Context, rem: Remediation) -> str:
    """For a change spelled as most releases of a guessed range take it (``_widest_kept``): the
    clause naming the releases and the newer spelling."""
    from sglang_doctor.remedy.remedies import _span, _why_guessed

    releases = ctx.guessed_range or ()
    for flag in list(rem.set) + list(rem.unset):
        spec = ctx.catalog.spec(flag)
        after = flags.successor(flag, ctx.catalog) if spec is not None and spec.deprecated and releases else None
        if after is None:
            continue
        having = [v for v in releases if flags.shipped_catalog(v).has_option(flag)]
        newer = [v for v in releases if flags.shipped_catalog(v).has_option(after[0])]
        return (f"; spelled {flag} as SGLang {_span(having)} take it ({_why_guessed(ctx)}); "
                f"SGLang {_span(newer)} deprecate it for {after[0]}")
    return ""


def _most_taken_spelling(ctx: Context, rem: Remediation, text: str) -> tuple[Remediation, str, str]:
    """When the release is a guess and a flag of ``rem`` was renamed inside its range with no
    alias kept (--mamba-scheduler-strategy 0.5.9-0.5.19, --mamba-radix-cache-strategy 0.5.20 on):
    the change spelled as most releases of the range take it, validated by the newest of them
    (``remedies._most_taken``); else ``rem`` as it is (and always for a name the message itself
    spells: its release has that name).  Returns the change, the release it is
    valid in, and the clause naming the other spelling ("" when unchanged)."""
    from sglang_doctor.remedy.remedies import _most_taken

    if not ctx.guessed_range:
        return rem, ctx.version, ""
    for flag in list(rem.set) + list(rem.unset):
        if re.search(r"(?<![\w-])(?:" + re.escape(flag) + "|" + re.escape(flag[2:].replace("-", "_")) + r")(?![\w-])", text):
            continue  # the message spells it so: its release has this name
        most = _most_taken(ctx, flag, flag)
        if most is None:
            continue
        other, why = most
        name = other.flag(flag)
        if name is None:
            continue
        if flag in rem.set:
            value = rem.set[flag]
            if not (isinstance(value, str) and value.startswith("<")) and other.catalog.validate(name, value) is not None:
                continue
            changed = dataclasses.replace(rem, set={**{k: v for k, v in rem.set.items() if k != flag}, name: value},
                                          note=rem.note.replace(flag, name))
        else:
            changed = dataclasses.replace(rem, unset=[name if f == flag else f for f in rem.unset],
                                          note=rem.note.replace(flag, name))
        return changed, other.version, "; " + why
    return rem, ctx.version, ""


def _choices_named(ctx: Context, text: str) -> list[tuple[str, str, re.Match]]:
    """The choices of the release's flags a message names as the subject of its refusal: a choice
    of two or more parts ("extra_buffer", "flashinfer_cutlass", "trtllm_mha"), written with
    underscores, hyphens or spaces ("FlashInfer Cutlass MOE"), followed by the refusal's words
    ("... is not supported for", "... supports only"; a value the message lists as accepted is
    not a setting of its own).  When several flags list the choice, the one whose name's words
    the sentence holds ("MOE" -> --moe-runner-backend, not --fp4-gemm-backend), then the shortest
    (--attention-backend before --decode-attention-backend); none of them named: not read."""
    owners: dict[str, list[str]] = {}
    for spec in sorted(ctx.catalog.specs, key=lambda sp: len(sp.name)):
        if not spec.takes_value or not spec.choices or spec.deprecated or spec.nargs not in (None, "?"):
            continue  # (a list's items, --lora-target-modules' "qkv_proj", are no choice of a mode)
        for choice in map(str, spec.choices):
            if len(choice) >= 6 and re.fullmatch(r"[a-z0-9]+(?:[_-][a-z0-9]+)+", choice):
                if spec.name not in owners.setdefault(choice, []):
                    owners[choice].append(spec.name)
    out: list[tuple[str, str, re.Match]] = []
    out += _single_word_choices(ctx, text)
    for choice, flags_of in owners.items():
        pattern = r"(?<![\w.-])" + r"[ _-]".join(map(re.escape, re.split(r"[_-]", choice))) + r"(?![\w-])"
        for m in re.finditer(pattern, text, re.I):
            verb = _SUBJECT_OF_REFUSAL.match(text, m.end())
            if verb is None:
                continue
            sentence = (_clause(text, m.start(), False) + _clause(text, m.start(), True)).lower()
            words = set(re.findall(r"[a-z0-9]+", sentence)) - set(re.split(r"[_-]", choice))
            # the phrase's head noun ("flashinfer_cutedsl FP4 MoE only ...": MoE) counts most
            head = [w for w in re.findall(r"[a-z0-9]+", text[m.end():verb.start("verb")].lower())
                    if w not in _GENERIC]

            def score(flag: str) -> int:
                parts = [w for w in flag.lstrip("-").split("-") if w not in _GENERIC]
                return sum(w in words for w in parts) + 2 * sum(w in head[-1:] for w in parts)
            best = max(flags_of, key=score)  # max keeps the first (shortest) of equal scores
            siblings = [c for c in map(str, ctx.catalog.spec(best).choices) if c != choice
                        and re.search(r"(?<![\w-])" + re.escape(c) + r"(?![\w-])", text)]
            # a flag's words in the sentence, or another of its choices ("... use no_buffer"):
            # a choice of two parts alone is too common a word ("qkv_proj weights are ...")
            if score(best) > 0 or siblings:
                out.append((best, choice, m))
            break
    return out


def _single_word_choices(ctx: Context, text: str) -> list[tuple[str, str, re.Match]]:
    """A one-word choice named with its flag's own noun right after it, as the subject of a
    refusal: "cutlass MoE is only supported with fp8/mxfp8 quantization" (0.5.9 server_args.py:2164,
    --moe-runner-backend cutlass), "triton attention backend does not support ...".  A bare
    word ("cutlass", "triton") is too common to read alone; the noun ("moe", "attention",
    "sampling", "grammar": a word of the flag's name) ties it to one flag."""
    owners: dict[str, list[str]] = {}
    for spec in sorted(ctx.catalog.specs, key=lambda sp: len(sp.name)):
        if not spec.takes_value or not spec.choices or spec.deprecated or spec.nargs not in (None, "?"):
            continue
        for choice in map(str, spec.choices):
            if len(choice) >= 4 and re.fullmatch(r"[a-z][a-z0-9]+", choice) and choice not in _NOT_A_CHOICE:
                owners.setdefault(choice, []).append(spec.name)
    out: list[tuple[str, str, re.Match]] = []
    pair = re.compile(r"([A-Za-z][A-Za-z0-9]{3,})\s+([A-Za-z]+)\b")
    # every word with the word after it (overlapping pairs: in "FP8/MXFP8 Cutlass MoE" the pair
    # "MXFP8 Cutlass" must not hide "Cutlass MoE")
    for word in re.finditer(r"(?<![\w.-])[A-Za-z][A-Za-z0-9]{3,}", text):
        m = pair.match(text, word.start())
        if m is None:
            continue
        flags_of = owners.get(m.group(1).lower())
        noun = m.group(2).lower()
        if not flags_of or noun in _GENERIC or _SUBJECT_OF_REFUSAL.match(text, m.end()) is None:
            continue
        # the shortest flag whose name holds the noun (--moe-runner-backend before
        # --speculative-moe-runner-backend)
        best = next((f for f in flags_of if noun in f.lstrip("-").split("-")), None)
        if best is not None:
            out.append((best, m.group(1).lower(), m))
    return out


# one-word choices that are ordinary words in a message ("auto MoE", "none attention")
_NOT_A_CHOICE = ("auto", "none", "true", "false", "default", "disabled", "enabled")

# the words after a check's subject: "extra_buffer is not supported for ...", "FlashInfer Cutlass
# MOE supports only: ...", "trtllm_mha backend requires ..."
_SUBJECT_OF_REFUSAL = re.compile(r"[`'\"]?(?:\s+[\w-]+){0,2}?\s+(?P<verb>is|are|does|do|only|supports?|requires?|needs?|cannot|"
                                 r"can't|currently|not|expects?)\b", re.I)
_GENERIC = ("backend", "backends", "size", "mode", "enable", "disable")


def _change(ctx: Context, named: Named, turn_on: bool) -> Remediation | None:
    """The change that turns ``named`` on or off, validated for the release; None when it is
    already so in the launch, or when turning it on needs a value the message does not give."""
    if turn_on and named.subject:
        return None  # the choice the check refuses is not the way out
    want = named.on if turn_on else named.off
    flag = named.flag
    if not turn_on and named.prose and flag in OFF_FEATURES and ctx.catalog.spec(flag) is not None \
            and ctx.catalog.spec(flag).deprecated:
        from sglang_doctor.remedy.remedies import disable_feature

        result = disable_feature(ctx, {"feature": OFF_FEATURES[flag]})
        return (result[0] if result else None) if isinstance(result, list) else result
    spec = ctx.catalog.spec(flag)
    if spec is None:
        return None
    stated = ctx.stated(flag)
    if want is None:
        if turn_on and spec.takes_value and named.on is None and named.off is None:
            return None  # a value setting "required": which value is the message's to say
        if stated is not None and (stated is False or _equal(stated, spec.default)):
            return None  # the launch does not set it
        rem = Remediation(unset=[flag], note=f"remove {flag} (the release's default applies)")
    else:
        if ctx.catalog.validate(flag, want) is not None or _equal(stated, want):
            return None
        rem = Remediation(set={flag: want}, note=f"set {flag}" + ("" if want is True else f" {want}"))
    return rem


_REQUIRES = re.compile(r"\b(?:requires?|needs?|(?:currently )?(?:supports? only|only supports?)|depends on|must be used with|(?:is |are )?not (?:yet )?supported unless|only (?:supported|works|compatible|available|"
                       r"implemented|valid|applies|meaningful|allowed) (?:with|when|if)|(?:applies|valid|allowed) only (?:with|when|if)|(?:is|are) only supported (?:with|when|if)|supported only (?:with|when))\b",
                       re.I)
# "B is required for A", "Please enable B when setting A", "please set B when using A"
# ("--cp-strategy must be set when --enable-prefill-cp is enabled": B before, A after)
_REQUIRED_FOR = re.compile(r"\b(?:(?:is|are) required|must be (?:set|specified|given|provided|enabled)) (?:for|when|with|by|if)\b",
                           re.I)
_ENABLE_WHEN = re.compile(r"\b(?:please )?(?:enable|set|use|specify|add|pass) (?P<b>[^.;,\n]{2,80}?) "
                          r"(?:when|if|while) (?:setting|using|enabling|passing|specifying)\b", re.I)
# "--enable-page-major-kv-layout without --enable-unified-memory is temporarily unsupported"
_WITHOUT = re.compile(r"(?P<w>\bwithout\b)[^.;:\n]{1,80}?\b(?:is|are) (?:\w+ )?(?:unsupported|not (?:yet )?supported)\b", re.I)
# "--ssl-ca-certs has no effect without --ssl-certfile and --ssl-keyfile" (0.5.23 serving_hook.py:60)
_NO_EFFECT_WITHOUT = re.compile(r"\b(?:has|have) no effect (?P<w>without|unless)\b|\b(?:is|are) ignored (?P<w2>without|unless)\b", re.I)
_CONFLICT = re.compile(r"\b(?:not (?:yet )?(?:supported|compatible|allowed) (?:with|together|when|in combination|for)|"
                       r"incompatible with|conflicts? with|(?:has|have) no effect with|do(?:es)? not (?:yet )?support|doesn'?t support|not yet support|"
                       r"cannot (?:be )?(?:used|combined|enabled|set) (?:with|together)|is not supported in|"
                       r"does not work with)\b", re.I)
_EXCLUSIVE = re.compile(r"\b(?:mutually exclusive|are incompatible|cannot be (?:used|enabled|set) (?:at the same time|together)|"
                        r"together)\b", re.I)
_BOTH = re.compile(r"\b(?:cannot|can't|can not) (?:set|enable|use|specify|pass)(?: both)?\b", re.I)
_OFF_WORDS = re.compile(r"\b(?:to be |be )?(?:disabled|turned off|off)\b", re.I)
# a value the message states for a setting: "set it to 'x'", "to be set to 'a' or 'b'",
# "ep_size == 1", "(pp_size=1)", "only support 1", "must be 'a' or 'b'"
_SET_TO = re.compile(r"\b(?:please |should |must )?set (?:it|this|them) to [`'\"]?(?P<v>[\w.+-]+)", re.I)
_EQUALS = re.compile(r"\s*(?:==|=)\s*[`'\"]?(?P<v>-?[\w.+-]+)")
_LIST_ITEM = re.compile(r"[`'\"]?([A-Za-z0-9][\w.+-]*)[`'\"]?")
_GOT = re.compile(r"\b(?:but )?(?:got|given|received|using|you(?:'re| are) using|is set to|specified)\s*:?\s*[`'\"]?([\w.+-]+)", re.I)


def _clause(text: str, at: int, forward: bool) -> str:
    """The words from ``at`` to the clause's end (forward) or start (backward)."""
    if forward:
        m = re.search(r"[.;:!?\n](?:\s|$)|,\s+(?:please|so|but|which|as)\b", text[at:])
        return text[at: at + m.start()] if m else text[at:]
    head = text[:at]
    starts = [m.end() for m in re.finditer(r"[.;:!?\n](?:\s|$)", head)]
    return head[starts[-1] if starts else 0:]


def _in_span(named: list[Named], lo: int, hi: int) -> list[Named]:
    return [n for n in named if lo <= n.start < hi]


def _present(text: str, named: list[Named]) -> list[Named]:
    """The settings the message says the launch has: not those it names as absent ("When no
    initial --lora-paths is provided", "without --x")."""
    return [n for n in named
            if not re.search(r"\b(?:no|without)\s+(?:[\w-]+\s+)?[`'\"]?$", text[max(0, n.start - 40):n.start], re.I)]


def _values_after_flags(text: str, named: list[Named]) -> dict[str, str]:
    """value -> the spelled-out flag the message writes it right after ("requires --moe-a2a-backend
    none or megamoe", 0.5.23 minimax_m3.py:105): that flag's values, never another setting's, even
    one whose choices hold the same word (--moe-runner-backend megamoe)."""
    owner: dict[str, str] = {}
    for n in named:
        if n.prose:
            continue
        listed = re.match(r"(?:=|\s)\s*((?:[`'\"]?[\w.+-]+[`'\"]?(?:\s*(?:,|/|\bor\b)\s*)?){1,8})", text[n.end:n.end + 120])
        for word in _LIST_ITEM.findall(listed.group(1)) if listed is not None else []:
            # (a number is no one setting's: "requires tp_size=1, pp_size=1, and dp_size=1")
            if word not in ("or", "and") and not re.fullmatch(r"-?\d+(?:\.\d+)?\.?", word):
                owner.setdefault(word.rstrip("."), n.flag)
    return owner


def _values(ctx: Context, text: str, named: list[Named]) -> tuple[list[Remediation], list[Remediation]]:
    """The values the message states for a setting it names, validated, in the text's order: the
    first for each setting, and apart the second where the message lists several ("requires one
    of ['triton', 'fa3']"), which goes after every other reading of the message (the list is
    the check's own; which of its values suits this GPU and workload the text does not say)."""
    out: list[Remediation] = []
    second: list[Remediation] = []
    in_use = {m.group(1).rstrip(".") for m in _GOT.finditer(text)}  # ("... but got fa3." ends a sentence)
    # "only supports --cp-strategy zigzag", "supports only --moe-runner-backend deep_gemm": the
    # value after a flag the check says it accepts (not the one the launch ran with)
    wanted: dict[str, str] = {}
    for n in named:  # "--dsv4-attn-backend trtllm requires ...": the value the launch ran with
        after = re.match(r"(?:=|\s)[`'\"]?([\w.+-]+)", text[n.end:n.end + 80])
        if after is not None and not n.prose:
            if _ACCEPTS_BEFORE.search(text[max(0, n.start - 40):n.start]):
                wanted.setdefault(n.flag, after.group(1).rstrip("."))
            else:
                in_use.add(after.group(1).rstrip("."))
    in_use -= set(wanted.values())
    # the values the message writes right after a flag it spells out are that flag's ("requires
    # --moe-a2a-backend none or megamoe", 0.5.23 minimax_m3.py:105): never another setting's value,
    # even one whose choices hold the same word (--moe-runner-backend megamoe)
    owner = _values_after_flags(text, named)
    for n in named:
        spec = ctx.catalog.spec(n.flag)
        if spec is None or not spec.takes_value:
            continue
        after = text[n.end:n.end + 160]
        candidates: list[str] = [wanted[n.flag]] if n.flag in wanted else []
        eq = _EQUALS.match(after)
        if eq is not None and re.search(r"\b(?:only|must|should|requires?|supported|please|set)\b", text, re.I):
            candidates.append(eq.group("v").rstrip("."))
        told = re.match(r"\s*(?:to be (?:set to )?|must be |should be |to )?((?:[`'\"]?[\w.+-]+[`'\"]?(?:\s*(?:,|/|\bor\b|\band\b)\s*)?){1,8})",
                        after)
        if told is None or not re.match(r"\s*(?:to be|must be|should be|to )", after):
            told = re.match(r"\s*only supports? ((?:[`'\"]?[\w.+-]+[`'\"]?(?:\s*(?:,|/|\bor\b|\band\b)\s*)?){1,8})", after)
        if told is not None and re.match(r"\s*(?:to be|must be|should be|to |only support)", after):
            candidates += [w for w in _LIST_ITEM.findall(told.group(1)) if w not in ("or", "and")]
        only = re.search(r"\bonly supports? ((?:[`'\"]?[\w.+-]+[`'\"]?(?:\s*(?:,|/|\bor\b|\band\b)\s*)?){1,8})\s*$",
                         text[max(0, n.start - 120):n.start])
        if only is not None:
            candidates += [w for w in _LIST_ITEM.findall(only.group(1)) if w not in ("or", "and")]
        numeric = spec.type in ("int", "float") or spec.type.endswith("_int")
        if (n.prose or spec.choices) and not numeric:  # a list in the sentence of a setting with choices
            sentence = _clause(text, n.start, False) + text[n.start:n.end] + _clause(text, n.end, True)
            listed = re.search(r"[\[\({]([^\]\)}\n<>=]{1,300})[\]\)}]", sentence)
            if listed is not None and "--" not in listed.group(1):
                candidates += _LIST_ITEM.findall(listed.group(1))
            if spec.choices:
                candidates += [w for w in re.findall(r"[\w.+-]+", sentence) if w in map(str, spec.choices)]
        set_to = _SET_TO.search(text[n.end:n.end + 200])
        if set_to is not None:
            candidates.insert(0, set_to.group("v"))
        stated = ctx.stated(n.flag)
        took: list[Remediation] = []
        for value in dict.fromkeys(candidates):
            if value in in_use or _equal(stated, value) or _refused(text, value) or owner.get(value, n.flag) != n.flag:
                continue
            if n.subject and str(value).lower() == str(n.on).lower() and not _WANTED_AFTER.match(text, n.end):
                continue  # the choice the check refuses ("cutlass MoE is only supported with ..."), not
                # one it requires ("modelopt_fp4 quantization is required for Flashinfer MOE")
            typed: Any = value
            if spec.type in ("int", "float") or spec.type.endswith("_int"):
                try:
                    typed = int(value) if spec.type != "float" else float(value)
                except ValueError:
                    continue
            elif flags.free_text(spec) and not flags.quoted_in(text, value):
                continue  # a free-text flag: only a quoted value is the message's
            if ctx.catalog.validate(n.flag, typed) is not None:
                continue
            took.append(Remediation(set={n.flag: typed}, note=f"set {n.flag} {typed}: the value the message states "
                                                              "for it (valid in this release)"))
            if len(took) == 2:
                break
        out += took[:1]
        second += took[1:]
    return out, second


# a subject the check asks for: "modelopt_fp4 quantization is required for ..." (0.5.4 server_args.py:1185)
_WANTED_AFTER = re.compile(r"[`'\"]?(?:\s+[\w-]+){0,2}?\s+(?:is|are) (?:required|needed|recommended)\b", re.I)

# the words before a flag whose following value is the one a check accepts
_ACCEPTS_BEFORE = re.compile(r"\b(?:only supports?|supports? only|(?:is )?only (?:supported|compatible|works) with|"
                             r"requires?|needs?|expects?)\s+[`'\"]?$", re.I)
_NEGATION = re.compile(r"\b(?:not|cannot|can't|no|unsupported|incompatible|without|instead of)\b", re.I)


def _refused(text: str, value: str) -> bool:
    """``value`` appears in the message only after a negation in its clause ("does not support
    triton attention backend"): the value refused, not one to set."""
    places = [m.start() for m in re.finditer(r"(?<![\w.+-])" + re.escape(value) + r"(?![\w+-])", text)]
    # "triton is not ...", and the value with its flag's noun between: "triton attention backend
    # does not support ..." (the refused choice, not one to set)
    after = re.compile(r"(?:\s+[A-Za-z][\w-]*){0,2}?\s+(?:(?:are|is|was)\s+not\b|isn't|aren't|(?:does|do) not\b|doesn't\b|"
                       r"cannot\b|can't\b)", re.I)
    return bool(places) and all(_NEGATION.search(_clause(text, at, False)) or after.match(text, at + len(value))
                                for at in places)


# "disable --enable-two-batch-overlap and --enable-single-batch-overlap": the message's own way
# out, every switch it lists off at once ("or": each one apart)
_DISABLE = re.compile(r"\b(?:please )?(?:disable|remove|unset|drop|turn off)\s+(?P<list>[`'\"]?--[a-z][a-z0-9-]*[`'\"]?"
                      r"(?:\s*(?:,|\band\b|\bor\b)\s*[`'\"]?--[a-z][a-z0-9-]*[`'\"]?)*)", re.I)


def _disable(ctx: Context, text: str, named: list[Named]) -> list[Remediation]:
    out: list[Remediation] = []
    for m in _DISABLE.finditer(text):
        if _NEGATION.search(text[max(0, m.start() - 20):m.start()]):
            continue  # "do not remove --x"
        listed = [n for n in _in_span(named, m.start("list"), m.end("list")) if not n.prose]
        off = [n.flag for n in listed if ctx.catalog.spec(n.flag) is not None and not _equal(ctx.stated(n.flag), False)]
        if not off:
            continue
        groups = [off] if not re.search(r"\bor\b", m.group("list")) else [[f] for f in off]
        for flags_off in groups:
            out.append(Remediation(unset=flags_off, note=f"remove {', '.join(flags_off)}, as the message says"))
    return out


def _combination(ctx: Context, text: str, named: list[Named]) -> list[Remediation]:
    """Turn the required setting on / a conflicting one off, as the message's shape says."""
    out: list[Remediation] = []
    m = _ENABLE_WHEN.search(text)
    if m is not None:
        b = _in_span(named, m.start("b"), m.end("b"))
        a = _in_span(named, m.end(), m.end() + len(_clause(text, m.end(), True)))
        out += [r for r in (_change(ctx, n, True) for n in b[:1]) if r]
        out += [r for r in (_change(ctx, n, False) for n in a[:1]) if r]
        return out
    m = _REQUIRED_FOR.search(text)
    if m is not None:
        b = _in_span(named, m.start() - len(_clause(text, m.start(), False)), m.start())
        a = _in_span(named, m.end(), m.end() + len(_clause(text, m.end(), True)))
        out += [r for r in (_change(ctx, n, True) for n in b[-1:]) if r]
        out += [r for r in (_change(ctx, n, False) for n in a[:1]) if r]
        return out
    m = _NO_EFFECT_WITHOUT.search(text)
    if m is not None:  # "A has no effect without B": B on (a switch), else A off
        w = "w" if m.group("w") else "w2"
        b = _in_span(named, m.end(w), m.end(w) + len(_clause(text, m.end(w), True)))
        a = _in_span(named, m.start() - len(_clause(text, m.start(), False)), m.start())
        out += [r for r in (_change(ctx, n, True) for n in b[:1]) if r]
        out += [r for r in (_change(ctx, n, False) for n in a[-1:]) if r]
        return out
    m = _WITHOUT.search(text)
    if m is not None:  # "A without B is unsupported": B on, else A off
        b = _in_span(named, m.end("w"), m.end("w") + len(_clause(text, m.end("w"), True)))
        a = _in_span(named, m.start("w") - len(_clause(text, m.start("w"), False)), m.start("w"))
        out += [r for r in (_change(ctx, n, True) for n in b[:1]) if r]
        out += [r for r in (_change(ctx, n, False) for n in a[-1:]) if r]
        return out
    m = _REQUIRES.search(text)
    if m is not None:
        tail = _clause(text, m.end(), True)
        b = _in_span(named, m.end(), m.end() + len(tail))
        a = _present(text, _in_span(named, m.start() - len(_clause(text, m.start(), False)), m.start()))
        off = bool(_OFF_WORDS.search(tail))
        for n in b[:1]:
            # "requires radix cache to be disabled": the prose setting off; a --disable-x switch named
            # as the requirement is itself turned on; one the requirement names as absent ("requires
            # trivial expert placement without EPLB", 0.5.23 lora_hook.py:234) is turned off
            absent = not _present(text, [n])
            r = _change(ctx, n, not (off and n.prose) and not absent)
            if r:
                out.append(r)
        out += [r for r in (_change(ctx, n, False) for n in a[:1]) if r]
        return out
    m = _BOTH.search(text)
    if m is not None or _EXCLUSIVE.search(text) and not _CONFLICT.search(text):
        both = _in_span(named, m.end() if m is not None else 0, len(text))
        out += [r for r in (_change(ctx, n, False) for n in both[:2]) if r]
        return out
    m = _CONFLICT.search(text)
    if m is not None:
        b = _in_span(named, m.end(), m.end() + len(_clause(text, m.end(), True)))
        a = _in_span(named, m.start() - len(_clause(text, m.start(), False)), m.start())
        # the setting it is not supported with off first, then the one the check is about; a
        # deployment's shape (PD disaggregation) last: the feature goes before the deployment does
        first, then = (a, b) if b[:1] and b[0].flag in _DEPLOYMENT and a[:1] else (b, a)
        out += [r for r in (_change(ctx, n, False) for n in first[:1]) if r]
        out += [r for r in (_change(ctx, n, False) for n in then[:1]) if r]
        return out
    return out


_ALONE = re.compile(r"\b(?:cannot set|please remove|remove|must not be set|should not be set|is not supported|cannot be|"
                    # "UNO ... does not accept --speculative-draft-model-path", "Select another
                    # --speculative-moe-a2a-backend" (0.5.23 speculative_hook.py:455, moe_hook.py:635)
                    r"(?:does not|doesn't|do not) accept|(?:select|choose|pick|use) (?:another|a different)|"
                    r"(?:must|should) be (?:an? )?(?:non-negative|positive)|"
                    # "--x is only supported on a PD decode server / for Kimi-K3": the setting outside
                    # the one place it works (the place is no setting: nothing else to turn on)
                    r"(?:is|are) only (?:supported|valid|available) (?:on|for|in)|"
                    r"(?:must|should) be (?:in (?:the )?range|between|within)|(?:is )?out of (?:the )?range|"
                    r"must be a power of (?:2|two))\b",
                    re.I)


def _alone(ctx: Context, text: str, named: list[Named]) -> list[Remediation]:
    """One setting refused on its own ("Cannot set --x for the decode engine", "base_gpu_id
    must be non-negative", "please remove --x"): remove it, the release's default applies --
    unless the value it refuses is that default (``_refused_default``)."""
    plain = [n for n in named if not n.prose]
    if not _ALONE.search(text) or not (len(plain) == 1 or (not plain and len(named) == 1)):
        return []
    n = plain[0] if plain else named[0]
    if _refused_default(ctx, text, n) is not None:
        return _other_choice(ctx, text, n)
    r = _change(ctx, n, False)
    return [r] if r else []


# "moe_a2a_backend cannot be 'none'" (0.5.9 server_args.py:5259), "X must not be 'auto'": the value
# a setting may not have, right after its name
_CANNOT_BE = re.compile(r"[`'\"]?\s+(?:cannot|can't|can not|must not|mustn't|should not|may not) be\s+"
                        r"[`'\"]?(?P<v>[\w.+-]+)[`'\"]?", re.I)


def _refused_default(ctx: Context, text: str, named: Named) -> str | None:
    """The value the check says ``named`` cannot have, when it is the release's default of that
    flag (a choice of it): removing the flag leaves that very value, so removal is no way out
    (0.5.9 ``if self.enable_two_batch_overlap: if self.moe_a2a_backend == "none": raise``: the
    user asked for two-batch overlap and left the a2a backend at its default)."""
    spec = ctx.catalog.spec(named.flag)
    m = _CANNOT_BE.match(text, named.end)
    if spec is None or m is None or not spec.takes_value or not spec.choices:
        return None
    value = m.group("v").rstrip(".")
    default = "none" if spec.default is None and "none" in map(str, spec.choices) else spec.default
    return value if _equal(default, value) else None


def _other_choice(ctx: Context, text: str, named: Named) -> list[Remediation]:
    """``named`` set to a choice the check does not refuse, in the catalogue's order (the first
    of them is the one the feature was built with: --moe-a2a-backend deepep), the others named in
    the note; nothing when the launch already runs another choice (the check read a derived value)."""
    spec = ctx.catalog.spec(named.flag)
    refused = _refused_default(ctx, text, named)
    stated = ctx.stated(named.flag)
    if stated is not None and not _equal(stated, refused):
        return []
    others = [c for c in map(str, spec.choices) if c not in (refused, "auto") and not _refused(text, c)]
    if not others or ctx.catalog.validate(named.flag, others[0]) is not None:
        return []
    rest = ", ".join(others[1:6]) + (", ..." if len(others) > 6 else "")
    return [Remediation(set={named.flag: others[0]},
                        note=f"set {named.flag} {others[0]}: the check refuses {refused!r}, the release's default "
                             f"for it, so removing the flag would not help" + (f" (or another of its choices: {rest}; "
                             f"the one your installation has)" if rest else ""))]


def _concrete(rem: Remediation) -> bool:
    """A change a relaunch can carry as it is: a removal, a variable, or a value (not a ``<...>``
    question for the user)."""
    return bool(rem.unset or rem.env) or any(not (isinstance(v, str) and v.startswith("<"))
                                             for v in rem.set.values())


def _advises_a_flag(ctx: Context, text: str) -> bool:
    """The message advises a flag of the release in so many words ("please use --x triton",
    "set --disable-radix-cache"; remedies._ADVISED, not negated)."""
    from sglang_doctor.remedy.remedies import _ADVISED, _NEGATED

    if re.search(r"\bremove\s+[`'\"]?--[a-z]", text, re.I):
        return True
    for m in _ADVISED.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 80):m.start()]):
            continue
        if ctx.flag(m.group(1)) is not None:
            return True
    return False


# -- a relation between two numeric settings ------------------------------------------------------
#
# "tp_size must be divisible by dp_size", "--dcp-size 4 must divide --tp-size 6", "max_loaded_loras
# should be greater than or equal to max_loras_per_batch. max_loaded_loras=4, max_loras_per_batch=8",
# "ep_size must be 1 or the same as tp_size", "chunked_prefill_size must be divisible by page_size"
# (0.4.x-0.5.23 server_args.py / arg_groups/): the value that satisfies the relation follows from the
# two settings' values, the launch's own (command or dump) else the number the message prints beside
# the name.  A parallel size that counts GPUs (--tp-size, --nnodes) is kept and the other one moves.
_RELATIONS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\b(?:must|should|has to|needs? to) be (?:evenly |exactly )?(?:divisible by|a multiple of)|"
                r"\b(?:is|are) not (?:evenly )?divisible by|\bnot a multiple of", re.I), "divisible"),
    (re.compile(r"\b(?:must|should) (?:evenly )?divide|\b(?:must|should) be a (?:positive )?divisor of|"
                r"\bdoes not divide", re.I), "divides"),
    (re.compile(r"\b(?:must|should)(?: be)? (?:greater than or equal to|larger than or equal to|larger or equal to|"
                r">=|at least|no (?:less|smaller) than|not (?:be )?(?:less|smaller) than)|\bmust >=|\bshould >=", re.I), "ge"),
    (re.compile(r"\b(?:must|should)(?: be)? (?:less than or equal to|smaller than or equal to|<=|at most|"
                r"no (?:greater|larger|more) than)|\b(?:must|should|cannot|can't|can not) (?:not )?exceed|\bmust <=", re.I), "le"),
    (re.compile(r"\b(?:must|should)(?: be)? (?:1 or )?(?:equal to|equal|the same as|identical to)|\bmust match", re.I), "eq"),
)
# sizes that count GPUs or machines: the relation moves the other setting
_KEPT = ("--tp-size", "--nnodes", "--tensor-parallel-size")
# a number printed beside a setting's name: "--dcp-size 4", "tp_size=8", "tp_size (8)", "tp_size: 8"
_BESIDE = re.compile(r"\s*(?:[=:(]\s*)?(-?\d+)\)?(?!\w|\.\d)")
# prose names of the parallel sizes (the sizes a relation speaks of in words)
_SIZE_PROSE: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\btensor[- ]parallel(?:ism)? (?:size|degree)\b|\bTP size\b", re.I), "--tp-size"),
    (re.compile(r"\bexpert[- ]parallel(?:ism)? (?:size|degree)\b|\bEP size\b", re.I), "--ep-size"),
    (re.compile(r"\bdata[- ]parallel(?:ism)? (?:size|degree)\b|\bDP size\b", re.I), "--dp-size"),
    (re.compile(r"\bpipeline[- ]parallel(?:ism)? (?:size|degree)\b|\bPP size\b", re.I), "--pp-size"),
    (re.compile(r"\bpage size\b", re.I), "--page-size"),
    (re.compile(r"\bnumber of nodes\b", re.I), "--nnodes"),
)


def _int_setting(ctx: Context, flag: str) -> bool:
    spec = ctx.catalog.spec(flag)
    return spec is not None and spec.takes_value and (spec.type == "int" or spec.type.endswith("_int"))


def _numeric_named(ctx: Context, text: str, named: list[Named]) -> list[Named]:
    """The integer settings ``text`` names: the named flags and fields, and the parallel sizes in
    words ("the tensor parallel size"), in the text's order."""
    out = [n for n in named if _int_setting(ctx, n.flag)]
    for pattern, flag in _SIZE_PROSE:
        spelled = ctx.flag(flag)
        if spelled is None or not _int_setting(ctx, spelled):
            continue
        for m in pattern.finditer(text):
            if not any(o.start <= m.start() < o.end or m.start() <= o.start < m.end() for o in out):
                out.append(Named(spelled, m.start(), m.end(), None, None, prose=True))
    return sorted(out, key=lambda n: n.start)


def _value_of(ctx: Context, text: str, n: Named) -> tuple[int | None, str]:
    """The setting's value: the launch's own, else the number the message prints beside it (and
    where it came from: "launch" or "log")."""
    stated = ctx.stated(n.flag)
    if isinstance(stated, bool):
        stated = None
    try:
        if stated is not None:
            return int(stated), "launch"
    except (TypeError, ValueError):
        pass
    m = _BESIDE.match(text, n.end)
    if m is None:  # "... max_loaded_loras=4, max_loras_per_batch=8" after the sentence
        m = re.search(r"(?<![\w-])" + re.escape(text[n.start:n.end]) + r"\s*=\s*(-?\d+)\b", text[n.end:])
    return (int(m.group(1)), "log") if m is not None else (None, "")


def _largest_divisor(of: int, at_most: int) -> int | None:
    return next((d for d in range(min(of, at_most), 0, -1) if of % d == 0), None)


def _relation(ctx: Context, text: str, named: list[Named]) -> list[Remediation]:
    """The value that satisfies a relation the message states between two integer settings (or
    a setting and a number): divisible by / divides / at least / at most / equal to."""
    sizes = _numeric_named(ctx, text, named)
    # a bound written as a comparison after the setting: "Please set a dp-size > 1", "tp_size >= 2"
    if re.search(r"\b(?:must|should|please|set|requires?|needs?|expected)\b", text, re.I):
        for n in sizes:
            op = re.match(r"\s*(>=|<=|>|<|==)\s*(-?\d+)\b(?!\.\d)", text[n.end:])
            if op is None:
                continue
            clause = _clause(text, n.start, False) + _clause(text, n.start, True)
            if _NEGATION.search(clause) or re.search(r"\b(?:when|if|while|with|for|unless|where)\s+(?:the\s+)?$",
                                                      text[max(0, n.start - 30):n.start], re.I):
                continue  # the comparison is the refusal's condition ("not supported when tp_size > 1")
            bound = int(op.group(2)) + {">": 1, "<": -1}.get(op.group(1), 0)
            kind = {">=": "ge", ">": "ge", "<=": "le", "<": "le", "==": "eq_number"}[op.group(1)]
            value, _ = _value_of(ctx, text, Named(n.flag, n.start, n.start, None, None))
            if value is None:
                value = bound - 1 if kind == "ge" else bound + 1
            return _satisfy(ctx, "eq" if kind == "eq_number" else kind, n, value, None, bound, True)
    for pattern, kind in _RELATIONS:
        m = pattern.search(text)
        if m is None:
            continue
        before = _clause(text, m.start(), False)
        left = [n for n in sizes if m.start() - len(before) <= n.start < m.start()]
        if not left or re.search(r"\*|\bx\b|\btimes\b|\bplus\b|\+", text[left[-1].end:m.start()]):
            continue  # a product or sum of settings: which one to move is not the message's to say
        a = left[-1]
        tail = _clause(text, m.end(), True)
        right = [n for n in sizes if m.end() <= n.start < m.end() + len(tail) and n.flag != a.flag]
        a_value, a_from = _value_of(ctx, text, a)
        if right:
            b = right[0]
            b_value, b_from = _value_of(ctx, text, b)
        else:
            number = re.match(r"\s*(?:1 or )?\(?\s*(-?\d+)\b(?!\s*(?:GB|GiB|MB|%|\.\d))", text[m.end():])
            b, b_value, b_from = None, int(number.group(1)) if number else None, "log"
        if b is None and b_value is not None and a_value is None and kind in ("ge", "le", "eq"):
            a_value, a_from = (b_value - 1 if kind == "ge" else b_value + 1), "log"  # the bound itself satisfies it
        # "ep_size must be 1 or the same as tp_size": 1, the check's other way out, after the relation
        one = _one_instead(ctx, a, a_value) if kind == "eq" and re.search(r"\b1 or\b", m.group(0)) else []
        if a_value is None or b_value is None:
            return _relation_question(ctx, kind, a, b, b_value) + one
        return _satisfy(ctx, kind, a, a_value, b, b_value, "log" in (a_from, b_from)) + one
    return []


def _one_instead(ctx: Context, a: Named, a_value: int | None) -> list[Remediation]:
    if a.flag in _KEPT or a_value == 1 or ctx.catalog.validate(a.flag, 1) is not None:
        return []
    return [Remediation(set={a.flag: 1}, note=f"set {a.flag} 1: the other value the check accepts")]


def _relation_question(ctx: Context, kind: str, a: Named, b: Named | None, b_value: int | None) -> list[Remediation]:
    """The relation without the settings' values (a pasted log without the launch's command or
    dump, a bare assert): the setting to change and what its value must be, for the user to fill."""
    other = f"your {b.flag}" if b is not None else str(b_value) if b_value is not None else None
    if other is None:
        return []
    flag, what = a.flag, {"divisible": f"a multiple of {other}", "divides": f"a divisor of {other}",
                          "ge": f"at least {other}", "le": f"at most {other}", "eq": f"the same as {other}"}[kind]
    if kind == "divisible" and b is not None and a.flag in _KEPT:
        flag, what = b.flag, f"a divisor of your {a.flag}"
    return [Remediation(set={flag: f"<{what}>"}, needs_human=True,
                        note=f"give {flag} {what}: the check's relation (the launch's values are not in the log)")]


def _satisfy(ctx: Context, kind: str, a: Named, a_value: int, b: Named | None, b_value: int,
             from_log: bool) -> list[Remediation]:
    changes: list[tuple[str, int, str]] = []  # (flag, value, why)
    b_words = b.flag if b is not None else str(b_value)
    if kind == "divisible" and b_value > 0 and a_value % b_value != 0:
        if b is not None and a.flag in _KEPT:
            d = _largest_divisor(a_value, b_value)
            if d is not None:
                changes.append((b.flag, d, f"the largest value up to {b_value} that divides {a.flag} {a_value}"))
        else:
            multiple = max(b_value, a_value - a_value % b_value)
            changes.append((a.flag, multiple, f"the nearest multiple of {b_words} ({b_value}) at or below {a_value}"))
            if b is not None and b.flag not in _KEPT:
                d = _largest_divisor(a_value, b_value)
                if d is not None and d > 1:
                    changes.append((b.flag, d, f"the largest value up to {b_value} that divides {a.flag} {a_value}"))
    elif kind == "divides" and a_value > 0 and b_value % a_value != 0:
        d = _largest_divisor(b_value, a_value)
        if d is not None:
            changes.append((a.flag, d, f"the largest value up to {a_value} that divides {b_words} ({b_value})"))
    elif kind == "ge" and a_value < b_value:
        changes.append((a.flag, b_value, f"{b_words}'s value ({b_value})"))
        if b is not None and b.flag not in _KEPT:
            changes.append((b.flag, a_value, f"{a.flag}'s value ({a_value})"))
    elif kind == "le" and a_value > b_value:
        changes.append((a.flag, b_value, f"{b_words}'s value ({b_value})"))
        if b is not None and b.flag not in _KEPT:
            changes.append((b.flag, a_value, f"{a.flag}'s value ({a_value})"))
    elif kind == "eq" and a_value != b_value and b is None:
        changes.append((a.flag, b_value, f"the value the check states ({b_value})"))
    elif kind == "eq" and a_value != b_value and b is not None:
        if a.flag in _KEPT and b.flag not in _KEPT:
            changes.append((b.flag, a_value, f"{a.flag}'s value ({a_value})"))
        else:
            changes.append((a.flag, b_value, f"{b.flag}'s value ({b_value})"))
    out: list[Remediation] = []
    for flag, value, why in changes:
        if ctx.catalog.validate(flag, value) is not None or _equal(ctx.stated(flag), value):
            continue
        rem = Remediation(set={flag: value}, note=f"set {flag} {value}: {why}, which the check's relation asks for")
        out.append(rem)
    return out


def _assert_words(ctx: Context) -> str:
    """A bare ``assert`` of an argument check has no message; its statement says the relation
    (``assert self.tp_size % self.dp_size == 0`` -> "tp_size must be divisible by dp_size").
    The deepest frame's source line, read only for the settings' names."""
    frames = ctx.diagnosis.incident.frames
    source = (frames[-1].source or "").strip() if frames else ""
    name = r"(?:self\.|server_args\.|args\.)?([a-z][a-z0-9_]*)"
    m = re.fullmatch(r"assert\s+" + name + r"\s*%\s*" + name + r"\s*==\s*0", source)
    if m is not None:
        return f"{m.group(1)} must be divisible by {m.group(2)}"
    m = re.fullmatch(r"assert\s+" + name + r"\s*(>=|<=|==|>|<)\s*" + name, source)
    if m is not None:
        words = {">=": "must be greater than or equal to", ">": "must be greater than or equal to",
                 "<=": "must be less than or equal to", "<": "must be less than or equal to", "==": "must be equal to"}
        return f"{m.group(1)} {words[m.group(2)]} {m.group(3)}"
    return ""


def _same_change(a: Remediation, b: Remediation) -> bool:
    return a.set == b.set and sorted(a.unset) == sorted(b.unset) and a.env == b.env


def _undoes(rem: Remediation, others: list[Remediation]) -> bool:
    """``rem`` turns on a switch one of ``others`` removes, or removes one they turn on."""
    return any(f in o.unset for o in others for f, v in rem.set.items() if v is True) or \
        any(o.set.get(f) is True for o in others for f in rem.unset)


def _shape_changes(ctx: Context, text: str, params: dict) -> list[Remediation]:
    """The concrete changes the message's shape implies (module docstring), validated, each
    declared log-named advice; at most three, the first reading of a setting standing."""
    named = named_settings(ctx, text)
    found: list[Remediation] = []
    if named or any(p.search(text) for p, _ in _SIZE_PROSE):
        first, second = _values(ctx, text, named)
        found = (_disable(ctx, text, named) + _relation(ctx, text, named) + first + _combination(ctx, text, named)
                 + _alone(ctx, text, named) + second)
    out: list[Remediation] = []
    for rem in found:
        if any(_same_change(rem, o) for o in out):
            continue
        if _undoes(rem, out):
            continue  # the opposite of a change an earlier shape gave: the earlier reading stands
        rem, version, respelled = _most_taken_spelling(ctx, rem, text)
        rem.safe, rem.needs_human = False, True
        rem.note += (" (from the shape of the check's message; valid in SGLang " + version
                     + (respelled or _spelling_note(ctx, rem)) + ")")
        rem.tradeoff = params.get("tradeoff") or ("the setting the check refuses changes; check what it does for "
                                                  "your workload")
        value_from = ("placeholder" if any(isinstance(v, str) and v.startswith("<") for v in rem.set.values())
                      else "log" if any(v is not True for v in rem.set.values()) else None)
        out.append(trust.declare_log_named(rem, value_from=value_from))
    return out[:3]


def _in_release(ctx: Context, version: str, why: str) -> Context:
    """``ctx`` read in the shipped catalogue of ``version`` (a release of its guessed range)."""
    from sglang_doctor.remedy.remedies import _why_guessed

    ctx.warnings.append(f"the change is spelled for SGLang {version}: {_why_guessed(ctx)}, and {why}")
    return dataclasses.replace(ctx, catalog=flags.shipped_catalog(version), version=version,
                               version_source="rule spelling", version_range=None)


def _release_of_the_words(ctx: Context, text: str, params: dict) -> Context:
    """When the release is a guess (``ctx.guessed_range``) and its newest release cannot read
    the message's way out, a release of the range that can:

    - a flag the message spells out (``please remove --enable-nsa-prefill-context-parallel``)
      that the target lacks under any spelling: the newest release of the range that has it;
    - else, when the target gives no concrete change, the newest release of the range (every
      eighth of them, the oldest last) whose catalogue gives one: a value of its own choices
      ("Please set it to 'dual_chunk_flash_attn'", a choice 0.5.20 dropped).

    The message only picks the release; every change is still validated by that release's
    catalogue (the note says which release)."""
    releases = ctx.guessed_range
    if not releases:
        return ctx
    for word in re.findall(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+", text):
        if ctx.flag(word) is not None:
            continue
        having = [v for v in releases if flags.shipped_catalog(v).canonical(word) == word]
        if having:
            return _in_release(ctx, having[-1], f"{ctx.version} has no {word}")
    if any(_concrete(r) for r in _shape_changes(ctx, text, params)):
        return ctx
    if not named_settings(ctx, text) and not re.search(r"(?<![\w.\-/])[a-z][a-z0-9]*_[a-z0-9_]+", text):
        return ctx  # no setting in words and no field name: no release reads more in it ("Config file not found")

    def reads(version: str) -> bool:
        other = dataclasses.replace(ctx, catalog=flags.shipped_catalog(version), version=version,
                                    version_source="rule spelling", version_range=None, warnings=[])
        return any(_concrete(r) for r in _shape_changes(other, text, params))

    # every eighth release below the target (``releases[-1]``), the oldest last
    sampled = list(range(len(releases) - 2, -1, -8))
    sampled += [0] if sampled and sampled[-1] != 0 else []
    for at in sampled:
        if reads(releases[at]):
            # the newest release between this one and the last sampled one that reads it too
            newest = next((v for v in reversed(releases[at + 1:at + 8]) if v != ctx.version and reads(v)), releases[at])
            return _in_release(ctx, newest, f"{ctx.version}'s catalogue does not take the message's way out")
    return ctx


def _not_against_the_guard(ctx: Context, rems: list[Remediation]) -> list[Remediation]:
    """(args35) Without the changes that turn on a switch the check's own guard needs on (the
    check only runs with it on: diagnose/argument_sites.py's ``site_switches``, from the source),
    whatever the words seem to ask: 0.5.9's ``assert not self.enable_mixed_chunk, "enable_mixed_chunk
    is required for speculative decoding"`` refuses the switch its message names as required."""
    guard = set(_guard_switches(ctx))
    return [r for r in rems if not any(v is True and f in guard for f, v in r.set.items())]


def _guard_switches(ctx: Context) -> list[str]:
    """(args35) The switches the refusing check's guard needs on, spelled for the target release:
    the class rule's capture (a bare line, class.args.argument_site), else the check found by the
    exception's own message (argument_sites.site_of, a traceback whose frames name the place)."""
    words = ctx.diagnosis.captures.get("site_switches")
    if words is None:
        exc = ctx.diagnosis.incident.exception
        if exc is None or ctx.diagnosis.category != "args.invalid":
            return []
        from sglang_doctor.diagnose.argument_sites import site_of

        site = site_of(exc.type, exc.message, ctx.version)
        words = " ".join(site.switches) if site is not None else ""
    out: list[str] = []
    for word in words.split():
        flag = ctx.flag(word)
        if flag is not None and flag not in out:
            out.append(flag)
    return out


@remedy("refusal_fix")
def refusal_fix(ctx: Context, params: dict) -> "list[Remediation] | None":
    """The changes an argument check's message implies by its shape (module docstring): a
    value it states, the requirement turned on, the conflict turned off, a refused setting
    removed.  Nothing when the message names no setting of the target release.  Each change
    is validated against the release's catalogue and is advice (``safe`` False)."""
    inc = ctx.diagnosis.incident
    text = inc.exception.message if inc.exception is not None else "\n".join(line.text for line in inc.signals)
    text = (text or "")[:2000]
    if not text.strip() and inc.exception is not None and inc.exception.type == "AssertionError":
        text = _assert_words(ctx)  # a bare assert: its statement is the check's only words
    from sglang_doctor.remedy.remedies import flag_named

    ctx = _release_of_the_words(ctx, text, params)
    named_result = flag_named(ctx, {})
    after = _not_against_the_guard(ctx, named_result if isinstance(named_result, list) else [named_result] if named_result else [])
    advised = _advises_a_flag(ctx, text)
    out = _not_against_the_guard(ctx, _shape_changes(ctx, text, params))
    if advised and any(_concrete(rem) for rem in after[:1]):
        # "use --x y", "A requires --b": the message's own advice leads; the shape's other way out
        # ("else turn A off") is the first alternative when the advice has no concrete one of its own
        lead = after[0]
        other = [r for r in out if _concrete(r) and not _same_change(r, lead) and not _undoes(r, [lead])]
        at = 1 if len(after) == 1 or not _concrete(after[1]) else len(after)
        return after[:at] + other[:1] + after[at:]
    # the advice names a flag but not its value ("--a requires --b to be set", "set --x to 'v'",
    # "pass --b or --c"): the shape's concrete changes (the value it states, the refused setting
    # removed) come first and the advised flag's question after them
    removed = {f for o in out for f in o.unset}
    turned_on = {f for o in out for f, v in o.set.items() if v is True}
    kept: list[Remediation] = []
    for rem in after:  # flag_named's reading, after these (the same change once)
        if any(rem.set == o.set and sorted(rem.unset) == sorted(o.unset) and rem.env == o.env for o in out):
            continue
        if any(f in removed and v is True for f, v in rem.set.items()):
            continue  # "turn --x on" where the shape says the check refused --x being on
        if any(f in turned_on for f in rem.unset):
            continue  # "remove --x" where the shape says the check requires --x
        if any(isinstance(v, str) and v.startswith("<") and (f in removed or any(f in o.set for o in out + kept))
               for f, v in rem.set.items()):
            continue  # a question about a setting the shape already changes
        kept.append(rem)
    # the flag the message advises ("use --hicache-ratio instead", "requires --b to be set") is
    # asked about right after the shape's first concrete change, not after all of them
    at = 1 if advised and out else len(out)
    return out[:at] + kept + out[at:] or None



@remedy("site_switch_off")
def site_switch_off(ctx: Context, params: dict) -> "list[Remediation] | None":
    """(args35) The switches the argument check reads, turned off: the check that refused the
    launch only runs when they are on (its ``if self.enable_x and ...:`` guard, or its assert's
    ``not self.enable_x or ...``; diagnose/argument_sites.py found the check by its message, and
    scripts/gen_argument_sites.py read its guard from the release's source).  Each is a
    store_true flag of the release's catalogue; the launch does without that feature (the
    trade-off).  A switch the launch is known not to pass is no way out; none: no change."""
    out: list[Remediation] = []
    for flag in _guard_switches(ctx):
        spec = ctx.catalog.spec(flag)
        if spec is None or spec.takes_value:
            continue
        stated = ctx.stated(flag)
        if stated is not None and stated is not True:
            continue  # the launch is seen without it: removing it changes nothing
        rem = Remediation(unset=[flag], note=f"remove {flag}: the check that refused the launch only runs with it on "
                                             f"(SGLang {ctx.diagnosis.captures.get('site_where', 'source of the check')})")
        rem.safe, rem.needs_human = False, True
        rem.tradeoff = params.get("tradeoff") or f"the feature {flag} turns on is off for this launch"
        out.append(trust.declare_log_named(rem, value_from=None))
    return out[:2] or None
