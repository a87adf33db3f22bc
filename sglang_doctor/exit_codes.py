"""Exit codes of every command (CONTRACT.md)."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # read everything, no incident (run: the server became ready)
    INCIDENTS = 1  # at least one incident (run: gave up, server not ready)
    INPUT_ERROR = 2  # usage or input error: one line on stderr, no traceback
    INTERRUPTED = 130  # Ctrl-C
