"""Statements and `Database.reopen()`: many statements at once, or one reopen alone.

forget() and scrub() rewrite the store's file and reopen the connection (store/database.py,
governance/rewrite_database.py); the reopen closes every thread's cursor. Writers cannot meet it
(they hold the write lock, as reopen does), but reads do not take that lock, so a search that was
fetching its result lost it ("No open result set") and a statement that had just picked up its
cursor found it closed ("Connection already closed"), answered as 500 and 400 (issue 44).

The gate: a statement (with its fetch) runs inside `statement()`, any number at once; `reopening()`
makes new statements wait (at most `wait_s`, then StoreBusyError, retryable, with `retry_after`)
and waits for the running ones to finish (at most `drain_s`: a reopen comes after the rewrite's
commit point and must go ahead; a statement still running then fails and is reported as the same
retryable StoreBusyError, see `stale`). Re-entrant per thread: a statement inside a statement (a
registered relation, a snapshot) does not wait for itself.

>>> gate = ReopenGate()
>>> with gate.statement():
...     with gate.statement():
...         gate.active
1
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from memstore.core.errors import StoreBusyError

RETRY_AFTER_S = 1


class ReopenGate:
    """Many statements, or one reopen (see module doc)."""

    def __init__(self, *, wait_s: float = 30.0, drain_s: float = 30.0) -> None:
        self.wait_s, self.drain_s = wait_s, drain_s
        self._cond = threading.Condition()
        self._local = threading.local()
        self.active = 0                 # threads inside a statement
        self._reopening = False

    @contextlib.contextmanager
    def statement(self, step: str = "statement") -> Iterator[None]:
        """Run a statement (and its fetch) with no reopen under it; waits for one in progress."""
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                if self._reopening and not self._cond.wait_for(lambda: not self._reopening, timeout=self.wait_s):
                    raise busy(step)
                self.active += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self.active -= 1
                    self._cond.notify_all()

    @contextlib.contextmanager
    def reopening(self) -> Iterator[bool]:
        """Hold new statements back and wait for the running ones; yields whether they all finished
        in time (when not, the reopen goes ahead and they fail as retryable)."""
        own = 1 if getattr(self._local, "depth", 0) else 0
        with self._cond:
            self._reopening = True
            drained = self._cond.wait_for(lambda: self.active - own <= 0, timeout=self.drain_s)
        try:
            yield drained
        finally:
            with self._cond:
                self._reopening = False
                self._cond.notify_all()


def busy(step: str) -> StoreBusyError:
    """The retryable answer of a statement that met a reopen."""
    return StoreBusyError(f"{step}: the store's file is being rewritten (forget or scrub) and its connection "
                          "reopened; nothing was changed by this call", hint="retry in a moment",
                          step=step, retry_after=RETRY_AFTER_S)


_STALE = ("connection already closed", "no open result set", "connection has already been closed",
          "database has been closed")


def stale(exc: BaseException) -> bool:
    """Did a statement fail because a reopen closed its cursor under it?

    >>> stale(RuntimeError("Connection Error: Connection already closed!")), stale(RuntimeError("syntax"))
    (True, False)
    """
    text = str(exc).lower()
    return any(s in text for s in _STALE)
