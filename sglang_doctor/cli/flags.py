"""``sglang-doctor flags``: a release's launch flags, or what changed between two releases.

    sglang-doctor flags                          # the installed SGLang's, else the newest catalogue
    sglang-doctor flags --sglang-version 0.4.6   # one option string per line, aliases included
    sglang-doctor flags --diff 0.5.9 0.5.23      # renamed / removed / added / changed
    sglang-doctor flags --sglang-version 0.5.9 --diff 0.5.23

The flags come from the shipped catalogues (dumps of each release's real parser); a release
with no catalogue of its own is shown from the nearest older one, and standard error says so.
"""

from __future__ import annotations

import json

import click

from sglang_doctor.exit_codes import ExitCode


def _catalog(ctx: click.Context, version: str):
    from sglang_doctor.remedy import flags

    try:
        resolved = version.strip().lstrip("vV")
        flags.version_key(resolved)
    except ValueError as exc:
        click.echo(f"sglang-doctor: {exc}", err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    if resolved in flags.KNOWN_VERSIONS:
        return flags.shipped_catalog(resolved)
    catalog = flags.load_catalog(resolved, prefer_shipped=True)
    click.echo(f"sglang-doctor: no catalogue for SGLang {resolved}; {catalog.source}", err=True)
    return catalog


FLAGS_EPILOG = """\b
Examples:
  sglang-doctor flags --sglang-version 0.5.9 | grep mem-fraction
  sglang-doctor flags --diff 0.5.9 0.5.23
  sglang-doctor flags --sglang-version 0.5.23 --format json | jq '.options | length'

\b
Exit codes: 0 ok; 2 usage error (one line on stderr: not a version, --diff without two releases).
"""


@click.command("flags", epilog=FLAGS_EPILOG)
@click.argument("versions", nargs=-1)
@click.option("--sglang-version", default=None,
              help="The release (default: the installed SGLang, else the newest catalogue).")
@click.option("--diff", "diff", is_flag=True,
              help="What changed between two releases: --diff V1 V2, or --sglang-version V1 --diff V2.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: one option string per line; json: one JSON document.")
@click.pass_context
def flags_command(ctx, versions, sglang_version, diff, fmt):
    """A release's flags, one option string per line; with --diff, what changed."""
    from sglang_doctor.remedy import flags

    if diff:
        pair = ([sglang_version] if sglang_version else []) + list(versions)
        if len(pair) != 2:
            click.echo("sglang-doctor: --diff takes two releases: --diff V1 V2 "
                       "(or --sglang-version V1 --diff V2)", err=True)
            ctx.exit(ExitCode.INPUT_ERROR)
        a, b = (_catalog(ctx, v) for v in pair)
        changes = flags.diff_catalogs(a, b)
        if fmt == "json":
            click.echo(json.dumps({"from": a.version, "to": b.version, "changes": [
                {"kind": c.kind, "option": c.option,
                 **({"new_option": c.new_option} if c.new_option else {}),
                 **({"detail": c.detail} if c.detail else {})} for c in changes]}))
            return
        for change in changes:
            if change.kind == "renamed":
                click.echo(f"renamed  {change.option} -> {change.new_option}")
            elif change.kind == "changed":
                click.echo(f"changed  {change.option}: {change.detail}")
            else:
                click.echo(f"{change.kind:<8} {change.option}")
        return

    if len(versions) > 1 or (versions and sglang_version):
        click.echo("sglang-doctor: name one release (or use --diff V1 V2)", err=True)
        ctx.exit(ExitCode.INPUT_ERROR)
    wanted = sglang_version or (versions[0] if versions else None)
    if wanted is None:
        wanted, _ = flags.resolve_version(None, None)
    catalog = _catalog(ctx, wanted)
    options = flags.option_strings(catalog)
    if fmt == "json":
        click.echo(json.dumps({"sglang_version": catalog.version, "source": catalog.source,
                               "options": options}))
        return
    for option in options:
        click.echo(option)
