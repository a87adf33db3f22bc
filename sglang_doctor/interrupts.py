"""Ctrl-C and SIGTERM as exceptions of our own.

Every signal handler of ours raises ``Interrupted`` (SIGINT) or ``Terminated`` (SIGTERM), both
subclasses of KeyboardInterrupt, never KeyboardInterrupt itself.  The reason is a process-wide
flag in CPython: when a KeyboardInterrupt leaves code run by ``exec`` of a string (dataclasses
and namedtuple build their methods that way, so a Ctrl-C that lands in a lazy import does it),
the interpreter remembers it, and at exit kills itself with SIGINT (status -2) even though the
exception was caught and the program asked for exit 130.  The flag is set for exactly
KeyboardInterrupt only; ``except KeyboardInterrupt`` catches the subclasses all the same.
"""

from __future__ import annotations

import signal


class Interrupted(KeyboardInterrupt):
    """SIGINT (Ctrl-C), raised by our handler."""


class Terminated(Interrupted):
    """SIGTERM, raised by our handler: ends like Ctrl-C but exits 143."""


def raise_for(signum, frame) -> None:
    """A signal handler: SIGTERM raises ``Terminated``, any other signal ``Interrupted``."""
    raise Terminated if signum == signal.SIGTERM else Interrupted


def install() -> None:
    """Ctrl-C and SIGTERM raise ``Interrupted`` / ``Terminated`` from now on.

    SIGINT is set even when inherited as ignored: a process started in the background of a
    non-interactive shell inherits it so, and Ctrl-C (or ``kill -INT``) must still stop it.
    """
    try:
        signal.signal(signal.SIGTERM, raise_for)
        signal.signal(signal.SIGINT, raise_for)
    except ValueError:  # not the main thread (e.g. CliRunner in a thread): keep Python's own
        pass


def replace_default_sigint() -> None:
    """Ctrl-C raises ``Interrupted`` instead of Python's KeyboardInterrupt, unless SIGINT is
    ignored or handled by someone else (then it is left alone)."""
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, raise_for)
    except ValueError:
        pass
