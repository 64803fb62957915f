"""The store's write lock: re-entrant, and it knows whether a writer is waiting for it, so that
background maintenance (memstore/store/recluster.py) lets every waiting writer in before it takes
the lock again: an add waits for at most the one maintenance step under way, never for the pass.

>>> lock = WriteLock()
>>> with lock, lock:            # re-entrant, like threading.RLock
...     lock.waiting
0
"""
from __future__ import annotations

import threading
import time
from types import TracebackType


class WriteLock:
    """A threading.RLock that counts the threads blocked in acquire() (`waiting`) and offers
    `acquire_after_writers`, the acquire of a background step that lets those threads in first."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cv = threading.Condition(threading.Lock())
        self._waiting = 0
        self._held = threading.local()          # this thread's depth (RLock keeps its owner private)

    def _owned(self) -> bool:
        return getattr(self._held, "depth", 0) > 0

    def _took(self) -> bool:
        self._held.depth = getattr(self._held, "depth", 0) + 1
        return True

    @property
    def waiting(self) -> int:
        """Threads blocked in acquire() now (writers; a background step's acquire is not counted)."""
        return self._waiting

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As RLock.acquire; while blocked, the thread counts in `waiting`."""
        if self._lock.acquire(blocking=False):
            return self._took()
        if not blocking:
            return False
        with self._cv:
            self._waiting += 1
        try:
            got = self._lock.acquire(True, timeout)
            return self._took() if got else False
        finally:
            with self._cv:
                self._waiting -= 1
                self._cv.notify_all()

    def release(self) -> None:
        self._lock.release()
        self._held.depth = getattr(self._held, "depth", 1) - 1

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def yield_to_writers(self, max_wait_s: float = 30.0) -> float:
        """Wait (without the lock) until no writer waits for it, at most max_wait_s (a stream of
        writers does not starve maintenance for ever). Returns the seconds waited."""
        t0 = time.monotonic()
        with self._cv:
            while self._waiting > 0:
                left = max_wait_s - (time.monotonic() - t0)
                if left <= 0 or not self._cv.wait(left):
                    break
        return time.monotonic() - t0

    def acquire_after_writers(self, max_wait_s: float = 30.0) -> None:
        """Acquire for a background step, after every writer waiting now got the lock (see
        yield_to_writers); not counted in `waiting`. Release with release(). A thread that holds
        the lock already just takes it again."""
        if self._owned():
            self._lock.acquire()
            self._took()
            return
        deadline = time.monotonic() + max_wait_s
        while True:
            self.yield_to_writers(max(0.0, deadline - time.monotonic()))
            self._lock.acquire()
            if self._waiting == 0 or time.monotonic() >= deadline:
                self._took()
                return
            self._lock.release()        # a writer came while we took it: it goes first

    def after_writers(self, max_wait_s: float = 30.0) -> _Held:
        """`with lock.after_writers():` — acquire_after_writers, released at the end of the block."""
        return _Held(self, max_wait_s)


class _Held:
    def __init__(self, lock: WriteLock, max_wait_s: float) -> None:
        self.lock, self.max_wait_s = lock, max_wait_s

    def __enter__(self) -> WriteLock:
        self.lock.acquire_after_writers(self.max_wait_s)
        return self.lock

    def __exit__(self, *exc: object) -> None:
        self.lock.release()
