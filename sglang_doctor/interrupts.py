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
from contextlib import contextmanager

# While a long-running loop defers signals (``deferred``), the first Ctrl-C / SIGTERM is only
# noted here and raised at the loop's next safe point (``check``); a second one raises at once.
_deferring = False
_pending: type[Interrupted] | None = None


class Interrupted(KeyboardInterrupt):
    """SIGINT (Ctrl-C), raised by our handler."""


class Terminated(Interrupted):
    """SIGTERM, raised by our handler: ends like Ctrl-C but exits 143."""


def raise_for(signum, frame) -> None:
    """A signal handler: SIGTERM raises ``Terminated``, any other signal ``Interrupted``;
    inside ``deferred()`` the first one is noted for ``check`` instead."""
    global _pending
    exc = Terminated if signum == signal.SIGTERM else Interrupted
    if _deferring and _pending is None:
        _pending = exc
        return
    raise exc


@contextmanager
def deferred():
    """Signals wait for ``check``: an exception raised between two bytecodes of whatever runs
    (half-way through ``threading.Event.clear`` it leaves the event's lock held, and the
    follower's ``close`` then waits on it for ever; half-way through the pipeline it leaves
    its state half-written for the ``finish`` that reports what the log holds) is never raised.
    Blocking waits inside must be short (a signal that does not raise does not end them)."""
    global _deferring, _pending
    _deferring, _pending = True, None
    try:
        yield
    finally:
        _deferring = False


def check() -> None:
    """A safe point: raise the signal that came since the last one, if any."""
    exc = take()
    if exc is not None:
        raise exc


def take() -> type[Interrupted] | None:
    """The signal that came since the last ``check`` (and is now forgotten), or None."""
    global _pending
    exc, _pending = _pending, None
    return exc


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
