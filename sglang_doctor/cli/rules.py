"""``sglang-doctor rules list|show|lint|test``: the rule pack as a linter shows its rules."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sglang_doctor.exit_codes import ExitCode
from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet, builtin_rules_dir


def _load(ctx: click.Context, directory: str | None, *, strict: bool = False) -> RuleSet:
    dirs = list(ctx.obj["dirs"]) + ([directory] if directory else [])
    for d in dirs:
        if not Path(d).exists():
            click.echo(f"sglang-doctor rules: {'--rules ' if d != directory else ''}{d}: no such directory", err=True)
            ctx.exit(ExitCode.INPUT_ERROR)
        if not Path(d).is_dir():
            click.echo(f"sglang-doctor rules: {'--rules ' if d != directory else ''}{d}: not a directory", err=True)
            ctx.exit(ExitCode.INPUT_ERROR)
    builtin = directory is None
    try:
        ruleset = RuleSet.load([Path(d) for d in dirs], builtin=builtin, user=builtin, strict=strict)
    except RuleLoadError as exc:
        for problem in exc.problems:
            click.echo(problem, err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    for warning in ruleset.load_warnings:  # outside `lint`, a bad user rule file is skipped
        click.echo(f"sglang-doctor: warning: {warning}", err=True)
    return ruleset


RULES_EPILOG = """\b
Examples:
  sglang-doctor rules list
  sglang-doctor rules show memory.kv_pool.not_enough_memory
  sglang-doctor rules --rules ~/my-rules test ~/my-rules

\b
The rule format is in docs/DESIGN.md. The pack's example logs are installed with the package,
so `rules test` and the examples of `rules show` work from a plain `pip install`.
Exit codes: 0 ok; 1 a self-test failed (rules test); 2 usage error or a bad rule file.
"""


LIST_EPILOG = """\b
Examples:
  sglang-doctor rules list
  sglang-doctor rules list | grep memory.
  sglang-doctor rules --rules ~/my-rules list --format json | jq -r .id

\b
Exit codes: 0 ok; 2 usage error or a rule directory that cannot be read.
"""

SHOW_EPILOG = """\b
Examples:
  sglang-doctor rules show memory.kv_pool.not_enough_memory
  sglang-doctor rules show args.invalid.ambiguous_option
  sglang-doctor rules --rules ~/my-rules show my.rule.id

\b
RULE_ID as `rules list` prints it (a close id is suggested for a typo).
Exit codes: 0 ok; 2 usage error or no such rule.
"""

LINT_EPILOG = """\b
Examples:
  sglang-doctor rules lint                 # the built-in pack
  sglang-doctor rules lint ~/my-rules      # your own rule files
  sglang-doctor rules lint rules/ && git commit

\b
Exit codes: 0 no problem; 2 at least one problem (each as file:line: message).
"""

TEST_EPILOG = """\b
Examples:
  sglang-doctor rules test                 # the built-in pack over its shipped examples
  sglang-doctor rules test ~/my-rules      # your rules over their examples
  sglang-doctor rules --rules ~/my-rules test

\b
Exit codes: 0 every example passed; 1 a self-test failed (each is named); 2 usage error or a
bad rule file.
"""


@click.group(epilog=RULES_EPILOG)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Extra rule directory, added to the built-in pack (repeatable; later overrides earlier by id).")
@click.pass_context
def rules(ctx, rule_dirs):
    """The rule pack: list, show one, validate, self-test."""
    ctx.obj = {"dirs": rule_dirs}


@rules.command("list", epilog=LIST_EPILOG)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="text: a table with a header; json: one JSON object per rule, one per line.")
@click.pass_context
def list_rules(ctx, fmt):
    """A table of every rule: id, category, title, source file."""
    import json

    ruleset = _load(ctx, None)
    if fmt == "json":
        for r in ruleset.rules:
            click.echo(json.dumps({"id": r.id, "category": r.category, "phase": r.phase, "title": r.title,
                                   "priority": r.priority, "status": r.status, "source": str(r.source),
                                   "line": r.line, "remedies": [describe_remedy(e) for e in r.remedy],
                                   "examples": list(r.examples)}, ensure_ascii=False))
        return
    width = max([len(r.id) for r in ruleset.rules] + [len("RULE")])
    cat = max([len(r.category) for r in ruleset.rules] + [len("CATEGORY")])
    click.echo(f"{'RULE':<{width}}  {'CATEGORY':<{cat}}  TITLE  (FILE:LINE)")
    for r in ruleset.rules:
        click.echo(f"{r.id:<{width}}  {r.category:<{cat}}  {r.title}  ({Path(r.source).name}:{r.line})")
    click.echo(f"{len(ruleset.rules)} rules")


_FEATURE_WORDS = {"cuda_graph": "CUDA graphs", "prefill_cuda_graph": "prefill (piecewise) CUDA graphs",
                  "torch_compile": "torch.compile", "custom_all_reduce": "the custom all-reduce",
                  "radix_cache": "the radix cache", "overlap_schedule": "the overlap scheduler",
                  "speculative": "speculative decoding",
                  "moe_lora_v2": "the SM90/SM100 MoE LoRA engine (--lora-backend triton_v2 + a lora_* MoE runner)"}


# remedies whose words do not depend on their parameters
_FIXED_WORDS = {
    "plan_memory": "ask the memory planner for launches that fit (needs the model's config.json)",
    "closest_flag": "replace each unknown flag with the closest real flag of the target SGLang release",
    "change_port": "move the server to a free port",
    "disable_in_frames": "turn off the optional feature (custom all-reduce, CUDA graphs, torch.compile, the fast "
                         "image processor, ...) whose module the traceback passes",
    "drop_in_frames": "launch without the optional feature (speculative decoding, LoRA, HiCache, EP all-to-all, "
                      "EPLB) whose package the traceback passes, if the launch set it",
    "env_named": "set the environment variable the message names as its work-around (advice: the log chose it)",
    "kv_cache_dtype_step": "step the KV cache dtype back (fp4 -> fp8_e4m3 -> auto, e4m3 -> fp8_e5m2) when the "
                           "failure is in the quantized KV cache's code",
    "expert_parallel": "shard the MoE experts over the ranks (--ep-size equal to --tp-size; 0.4.x --enable-ep-moe) "
                       "instead of splitting every expert (when_frames: only when the frames show the experts "
                       "being built)",
}


# a remedy step's conditions, as `rules show` words them: (key, wording, how a value is shown)
_CONDITIONS = (
    ("when_modules", "only when the traceback passes", str),
    ("when_words", "only when the failure's words hold", lambda w: repr(str(w))),
    ("unless_words", "not when the failure's words hold", lambda w: repr(str(w))),
    ("when_phase", "only in the phase", str),
)


def describe_remedy(entry: dict) -> str:
    """A rule's remedy entry in words (``plan_memory {goal: fit_pools}`` -> what it does)."""
    ((name, params),) = entry.items()
    p = dict(params or {})
    flag = p.get("flag", "")
    if name in _FIXED_WORDS:
        text = _FIXED_WORDS[name]
    elif name in ("raise_flag", "lower_flag"):
        verb = "raise" if name == "raise_flag" else "lower"
        how = []
        if "by" in p:
            how.append(f"by {p['by']}")
        if "factor" in p:
            how.append(f"x{p['factor']}")
        if "to" in p:
            how.append(f"past {p['to']}")
        if p.get("from_log"):  # remedy/memory_fit.py
            how = [" or ".join(how) + ", or further when the log's own memory figures call for it"] if how else \
                  ["as the log's own memory figures call for"]
        bound = p.get("max" if name == "raise_flag" else "min")
        text = f"{verb} {flag} {' or '.join(how)}".rstrip() + (
            f" ({'at most' if name == 'raise_flag' else 'at least'} {bound})" if bound is not None else "")
    elif name == "set_flag" and p.get("near_only"):
        text = f"set {flag} to the one listed value the launch plainly meant (else, when it starts several, ask which)"
    elif name == "set_flag" and p.get("ask"):
        text = f"give {flag} <{p['ask']}> (only you know the value)"
    elif name == "set_flag":
        value = p.get("value", True)
        text = f"pass {flag}" if value is True else f"set {flag} {value}"
    elif name == "unset_flag":
        text = f"remove {flag}"
    elif name == "set_env" and p.get("ask"):
        text = f"set {p.get('name') or ' / '.join(p.get('names') or [])}=<{p['ask']}> in the server's environment (only you know the value)"
    elif name == "set_env":
        text = f"set {p.get('name')}={p.get('value')} in the server's environment"
    elif name == "disable_feature":
        text = f"turn {_FEATURE_WORDS.get(p.get('feature'), str(p.get('feature')).replace('_', ' '))} off"
    elif name == "upgrade_sglang":
        text = f"upgrade SGLang" + (f" to {p['min_version']} or newer" if p.get("min_version") else "")
    elif name == "switch_backend":
        choices = " or ".join(str(c) for c in p.get("choices") or ("flashinfer", "triton"))
        text = f"set {p.get('flag') or '--attention-backend'} to {choices}, whichever the failed launch did not use"
    elif name == "drop_feature":
        text = f"launch without {p.get('feature') or 'the feature'}: remove {' '.join(p.get('flags') or [])} if set"
    elif name == "needs_human":
        text = f"a person must act: {p.get('reason') or 'no launch flag can fix this'}"
    else:
        shown = ", ".join(f"{k} {v}" for k, v in p.items() if k not in ("tradeoff", "note", *(c[0] for c in _CONDITIONS)))
        text = f"{name.replace('_', ' ')}" + (f" ({shown})" if shown else "")
    for key, say, show in _CONDITIONS:
        if p.get(key):
            values = p[key] if isinstance(p[key], list) else [p[key]]
            text += f" ({say} {' or '.join(show(v) for v in values)})"
    if p.get("tradeoff"):
        text += f"; trade-off: {p['tradeoff']}"
    return text


@rules.command(epilog=SHOW_EPILOG)
@click.argument("rule_id")
@click.pass_context
def show(ctx, rule_id):
    """One rule's page: what it means, why, the fix, remedies, an example."""
    ruleset = _load(ctx, None)
    rule = ruleset.get(rule_id)
    if rule is None:
        import difflib

        close = difflib.get_close_matches(rule_id, [r.id for r in ruleset.rules], n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        click.echo(f"sglang-doctor: no rule {rule_id!r} ({hint}see `sglang-doctor rules list`)", err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    out = [f"{rule.id}  [{rule.category}, phase {rule.phase}, priority {rule.priority}, {rule.status}]",
           f"  {rule.title}", ""]
    for key, label in (("means", "What it means"), ("why", "Why SGLang hits it"), ("fix", "The fix and its trade-offs")):
        if rule.doc.get(key):
            out += [f"{label}:", f"  {rule.doc[key]}", ""]
    if rule.remedy:
        out.append("Remedies, in order (the first that applies is the fix, the others its alternatives):")
        out += [f"  - {describe_remedy(entry)}" for entry in rule.remedy]
        out.append("")
    root = _examples_root(Path(rule.source))
    for example in rule.examples[:1]:
        path = root / example
        if path.is_file():
            lines = path.read_bytes().decode("utf-8", "replace").split("\n")
            out.append(f"Example ({example}, its last lines):")
            out += ["  | " + line for line in lines[-12:] if line]
            out.append("")
        else:
            out += [f"Example: {example} (not found under {root})", ""]
    if rule.references:
        out.append("References:")
        out += [f"  {ref}" for ref in rule.references]
    out.append(f"Source: {rule.source}:{rule.line}")
    click.echo("\n".join(out))


@rules.command(epilog=LINT_EPILOG)
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.pass_context
def lint(ctx, directory):
    """Validate rule files; each problem as file:line: message (exit 2)."""
    ruleset = _load(ctx, directory, strict=True)
    click.echo(f"{len(ruleset.rules)} rules, no problems")


def _examples_root(source: Path) -> Path:
    """Where a rule's example paths start: the parent of its rule directory (the repository in a
    checkout; the installed package, which ships the pack's example logs, otherwise)."""
    return source.resolve().parent.parent


@rules.command("test", epilog=TEST_EPILOG)
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.pass_context
def test_rules(ctx, directory):
    """Run every rule's examples and counter-examples, and the pack over every fixture."""
    from sglang_doctor.pipeline import diagnose_file

    ruleset = _load(ctx, directory)
    root = Path(directory).resolve().parent if directory else builtin_rules_dir().parent
    missing = sorted({ex for r in ruleset.rules for ex in (*r.examples, *r.counter_examples)
                      if not (root / ex).is_file()})
    if missing:
        click.echo(f"sglang-doctor rules test: {len(missing)} example file(s) named by the rules are not under "
                   f"{root} (first: {missing[0]}); examples are paths relative to the rule directory's parent",
                   err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    failures: list[str] = []
    # A class rule is the net under the specific rules: its examples show what it catches
    # when no specific rule knows the failure, so they are run against the class layer
    # alone (a specific rule that later learns the same failure does not take them away).
    layers = {"all": ruleset, "class": RuleSet([r for r in ruleset.rules if r.layer == "class"])}
    cache: dict[tuple[str, str], list[str]] = {}

    def rules_of(rel: str, layer: str = "all") -> list[str]:
        if (layer, rel) not in cache:
            cache[layer, rel] = [d.rule for d in diagnose_file(root / rel, layers[layer], remediate=False)]
        return cache[layer, rel]

    checks = 0
    for rule in ruleset.rules:
        layer = "class" if rule.layer == "class" else "all"
        for example in rule.examples:
            checks += 1
            if rule.id not in rules_of(example, layer):
                failures.append(f"{rule.id}: example {example} gave {rules_of(example, layer) or 'no incident'}")
        for counter in rule.counter_examples:
            checks += 1
            if rule.id in rules_of(counter, layer):
                failures.append(f"{rule.id}: counter-example {counter} matched")
    claimed = {ex: {r.id for r in ruleset.rules if ex in r.examples} for r in ruleset.rules for ex in r.examples}
    category = {r.id: r.category for r in ruleset.rules}
    class_examples = {ex: {category[r.id] for r in ruleset.rules if r.layer == "class" and ex in r.examples}
                      for r in ruleset.rules for ex in r.examples}
    fixtures = root / "fixtures"
    for path in sorted(fixtures.rglob("*.log")) if fixtures.is_dir() else []:
        rel = str(path.relative_to(root))
        checks += 1
        for rule_id in rules_of(rel):
            if rule_id == "unknown" or rule_id in claimed.get(rel, set()):
                continue
            if category.get(rule_id) in class_examples.get(rel, set()):
                continue  # a class rule's example that a specific rule of the same category now knows
            failures.append(f"{rel}: claimed by {rule_id}, which does not list it as an example")
    for failure in failures:
        click.echo(f"FAIL {failure}")
    click.echo(f"{checks - len(failures)} passed, {len(failures)} failed")
    sys.exit(ExitCode.INCIDENTS if failures else ExitCode.OK)
