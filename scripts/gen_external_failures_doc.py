"""Write docs/EXTERNAL-FAILURES.md from fixtures/external/table.yaml.

The table lists the messages of other libraries (torch, the CUDA driver, NCCL, triton,
flashinfer, sgl-kernel, transformers, huggingface_hub, safetensors, the OS) that SGLang launches
and servers die with, counted from issue threads.  Each row's example runs through the rule pack
here and the document names the rule that covers it, so the document says what the shipped pack
does; tests/diagnose/test_external_failures.py checks every row's category (and rule) and that
the document is in step with the table and the pack.

Usage: python scripts/gen_external_failures_doc.py [--check]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TABLE = ROOT / "fixtures" / "external" / "table.yaml"
TARGET = ROOT / "docs" / "EXTERNAL-FAILURES.md"

HEADER = """\
# Failures from other libraries

SGLang launches die as often in the libraries under SGLang as in SGLang's own code. This table
lists the messages of those libraries that SGLang launch and serving logs most often show,
counted from issue threads (sgl-project/sglang and projects that run SGLang, such as verl,
ktransformers, MinerU, gpustack; a thread of another project is listed when it carries the
confirmed fix). The source of the table is `fixtures/external/table.yaml`: each row there has a
short realistic example (the message line verbatim from a thread), and
`tests/diagnose/test_external_failures.py` runs every example through the tool and checks the
category below (and the rule, where one is named). This file is generated:
`python scripts/gen_external_failures_doc.py` (`--check` tells whether it is in step).

Columns: the message; the library that prints it; the category (docs/CONTRACT.md) the tool
gives; the rule of the pack that names it (a `class.*` rule names the family, not the failure);
what it means for an SGLang launch; the known fix (from the threads; "no fix confirmed" when
the threads end without one); "SGLang threads" is how many of the listed threads are SGLang or
an SGLang deployment. Threads were found by searching issue threads for the message text; a
message is in the table when SGLang logs show it (an SGLang thread, or the library under an
SGLang launch), and its row lists the threads it was counted from.

"""


def _primary(diagnoses):
    """The answer a user reads first: the most confident incident of a rule (a rule or class
    layer), as bench/accuracy.py scores it; None when the text formed no such incident."""
    named = [d for d in diagnoses if d.rule != "unknown"]
    return max(named, key=lambda d: d.confidence) if named else None


def rows() -> list[dict]:
    return yaml.safe_load(TABLE.read_text())["rows"]


def diagnose_rows(table: list[dict] | None = None, remediate: bool = False) -> dict[str, tuple]:
    """Row id -> (category, rule) of the primary incident of the row's example ('none', '-'
    when the example forms no incident); with ``remediate``, a third item: the words of its
    remediation (the flags and variables it sets or unsets, its note, its alternatives')."""
    from sglang_doctor.diagnose.rules_engine import RuleSet
    from sglang_doctor.pipeline import diagnose_file

    ruleset = RuleSet.load(builtin=True, user=False)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for row in table or rows():
            path = Path(tmp) / f"{row['id']}.log"
            path.write_text(row["example"])
            prim = _primary(diagnose_file(path, ruleset, remediate=remediate))
            got = (prim.category, prim.rule) if prim else ("none", "-")
            if remediate:
                got += (_remedy_words(prim.remediation) if prim and prim.remediation else "",)
            out[row["id"]] = got
    return out


def _remedy_words(rem) -> str:
    parts = [" ".join(rem.set), " ".join(rem.unset), " ".join(f"{k}={v}" for k, v in rem.env.items()), rem.note or ""]
    parts += [_remedy_words(alt) for alt in rem.alternatives or ()]
    return " ".join(parts)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render(table: list[dict], got: dict[str, tuple[str, str]]) -> str:
    lines = [HEADER]
    lines.append("| message | library | category | rule | what it means for SGLang | known fix | SGLang threads | threads |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in table:
        category, rule = got[row["id"]][:2]
        threads = ", ".join(f"[{u.split('github.com/')[-1].replace('/issues/', '#').replace('/pull/', '#')}]({u})"
                            for u in row["threads"])
        lines.append("| " + " | ".join([
            f"`{_cell(row['pattern'])}`", _cell(row["library"]), f"`{category}`", f"`{rule}`",
            _cell(row["means"]), _cell(row["fix"]), str(row["sglang_threads"]), threads]) + " |")
    n = len(table)
    right = sum(1 for row in table if got[row["id"]][0] == row["category"])
    lines.append("")
    lines.append(f"{n} rows; the pack gives the table's category on {right} of them.")
    per: dict[str, int] = {}
    for row in table:
        per[row["category"]] = per.get(row["category"], 0) + 1
    lines.append("Rows per category: " + ", ".join(f"`{c}` {k}" for c, k in sorted(per.items())) + ".")
    lines.append(f"Threads listed: {sum(len(r['threads']) for r in table)}, of them SGLang or an SGLang deployment: "
                 f"{sum(r['sglang_threads'] for r in table)}.")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    table = rows()
    text = render(table, diagnose_rows(table))
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is out of step: run {Path(__file__).name}")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
