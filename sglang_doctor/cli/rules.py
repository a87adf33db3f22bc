"""``sglang-doctor rules list|show|lint|test``: the rule pack as a linter shows its rules."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from sglang_doctor.exit_codes import ExitCode
from sglang_doctor.diagnose.rules_engine import RuleLoadError, RuleSet, builtin_rules_dir


def _load(ctx: click.Context, directory: str | None, *, strict: bool = False) -> RuleSet:
    dirs = list(ctx.obj["dirs"]) + ([directory] if directory else [])
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


@click.group()
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False),
              help="Extra rule directory (repeatable).")
@click.pass_context
def rules(ctx, rule_dirs):
    """The rule pack: list, show one, validate, self-test."""
    ctx.obj = {"dirs": rule_dirs}


@rules.command("list")
@click.pass_context
def list_rules(ctx):
    """A table of every rule: id, category, title, source file."""
    ruleset = _load(ctx, None)
    width = max((len(r.id) for r in ruleset.rules), default=10)
    for r in ruleset.rules:
        click.echo(f"{r.id:<{width}}  {r.category:<22}  {r.title}  ({Path(r.source).name}:{r.line})")


@rules.command()
@click.argument("rule_id")
@click.pass_context
def show(ctx, rule_id):
    """One rule's page: what it means, why, the fix, remedies, an example."""
    ruleset = _load(ctx, None)
    rule = ruleset.get(rule_id)
    if rule is None:
        click.echo(f"sglang-doctor: no rule {rule_id!r} (see `sglang-doctor rules list`)", err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    out = [f"{rule.id}  [{rule.category}, phase {rule.phase}, priority {rule.priority}, {rule.status}]",
           f"  {rule.title}", ""]
    for key, label in (("means", "What it means"), ("why", "Why SGLang hits it"), ("fix", "The fix and its trade-offs")):
        if rule.doc.get(key):
            out += [f"{label}:", f"  {rule.doc[key]}", ""]
    if rule.remedy:
        out.append("Remedies, in order:")
        out += [f"  - {name} {params}" for entry in rule.remedy for name, params in entry.items()]
        out.append("")
    root = builtin_rules_dir().parent
    for example in rule.examples[:1]:
        path = root / example
        if path.is_file():
            lines = path.read_bytes().decode("utf-8", "replace").split("\n")
            out.append(f"Example ({example}):")
            out += ["  | " + line[:200] for line in lines[-12:] if line]
            out.append("")
    if rule.references:
        out.append("References:")
        out += [f"  {ref}" for ref in rule.references]
    out.append(f"Source: {rule.source}:{rule.line}")
    click.echo("\n".join(out))


@rules.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.pass_context
def lint(ctx, directory):
    """Validate rule files; each problem as file:line: message (exit 2)."""
    ruleset = _load(ctx, directory, strict=True)
    click.echo(f"{len(ruleset.rules)} rules, no problems")


@rules.command("test")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.pass_context
def test_rules(ctx, directory):
    """Run every rule's examples and counter-examples, and the pack over every fixture."""
    from sglang_doctor.pipeline import diagnose_file

    ruleset = _load(ctx, directory)
    root = Path(directory).resolve().parent if directory else builtin_rules_dir().parent
    failures: list[str] = []
    cache: dict[str, list[str]] = {}

    def rules_of(rel: str) -> list[str]:
        if rel not in cache:
            cache[rel] = [d.rule for d in diagnose_file(root / rel, ruleset, remediate=False)]
        return cache[rel]

    checks = 0
    for rule in ruleset.rules:
        for example in rule.examples:
            checks += 1
            if rule.id not in rules_of(example):
                failures.append(f"{rule.id}: example {example} gave {rules_of(example) or 'no incident'}")
        for counter in rule.counter_examples:
            checks += 1
            if rule.id in rules_of(counter):
                failures.append(f"{rule.id}: counter-example {counter} matched")
    claimed = {ex: {r.id for r in ruleset.rules if ex in r.examples} for r in ruleset.rules for ex in r.examples}
    fixtures = root / "fixtures"
    for path in sorted(fixtures.rglob("*.log")) if fixtures.is_dir() else []:
        rel = str(path.relative_to(root))
        checks += 1
        for rule_id in rules_of(rel):
            if rule_id != "unknown" and rule_id not in claimed.get(rel, set()):
                failures.append(f"{rel}: claimed by {rule_id}, which does not list it as an example")
    for failure in failures:
        click.echo(f"FAIL {failure}")
    click.echo(f"{checks - len(failures)} passed, {len(failures)} failed")
    sys.exit(ExitCode.INCIDENTS if failures else ExitCode.OK)
