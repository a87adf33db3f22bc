"""The command line: one module per subcommand (app: explain, watch, pipe; run; plan; rules).
Takes argv, wires the stages through ``sglang_doctor.pipeline`` and gives an exit code."""

from sglang_doctor.cli.app import main

__all__ = ["main"]
