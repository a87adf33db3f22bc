"""Coverage-guided fuzzing (atheris/libFuzzer) of the server_args parser and the traceback
assembler.  Not a pytest module: run it through ``run_fuzz.sh``, which makes a scratch venv
with atheris (never the project's .venv) and seeds the corpus from the fixtures.

    python tests/fuzz/fuzz_atheris.py server_args CORPUS_DIR -runs=200000
    python tests/fuzz/fuzz_atheris.py assembler CORPUS_DIR -max_total_time=300

An input that breaks a promise of ``fuzz_targets`` raises AssertionError; libFuzzer then
stops and writes the input as ``crash-<sha1>`` for a regression test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["sglang_doctor"]):  # sglang_doctor from PYTHONPATH
    import fuzz_targets


def one_server_args(data: bytes) -> None:
    if len(data) < 2:
        return
    cut = int.from_bytes(data[:2], "little")
    fuzz_targets.check_server_args(data[2:], cut)


def one_assembler(data: bytes) -> None:
    fuzz_targets.check_assembler(data)
    fuzz_targets.check_builder(data)


TARGETS = {"server_args": one_server_args, "assembler": one_assembler}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(TARGETS)} [libFuzzer options]")
    target = TARGETS[sys.argv.pop(1)]
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
