"""Group commit: concurrent add() calls on a server share one transaction.

Each request thread prepares its add (`Memory.prepare_add(models=False)`: validate, context,
the extractor call, no writes) in parallel with the others; one committer thread then takes every
prepared add that is waiting, runs spaCy and the embedder once for all of them
(`Memory.prepare_models`: a short text costs far less inside a batch than alone) and commits them
together (`Memory.commit_prepared`): one BEGIN/COMMIT and
one INSERT per table for the whole group instead of per add. Each add stays atomic and its caller
gets exactly what was committed; if the group's transaction fails, every add is committed on its
own so one bad add cannot fail the others. A DuckDB conflict is retried, not returned.
With the audit of reads on (config `audit.reads`), this thread also writes the reads the server
answered: after a group once a write is due, and while no add comes
(memstore/audit/read_log.py), so the server's writes stay on one thread.

>>> import tempfile, os
>>> from memstore import Memory
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "g.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> gc = GroupCommitter(m)
>>> [r["memory"] for r in gc.add("I live in Lisbon", user_id="ana")["results"]]
['Ana lives in Lisbon']
>>> gc.close(); m.close()
"""
from __future__ import annotations

import concurrent.futures as cf
import itertools
import queue
import threading
import time
from collections import Counter
from typing import Any

from memstore.core.errors import StoreWriteError

_CONFLICT_RETRIES = 5
EXPECT_S = 2.0          # an add admitted by a front and not sent within this long is not waited for


class GroupCommitter:
    """`add(...)` with the arguments of `Memory.add`; commits through one thread in groups of at
    most `max_group` adds."""

    def __init__(self, memory: Any, *, max_group: int = 64, linger_s: float = 0.05) -> None:
        self.memory = memory
        self.max_group = max_group
        self.linger_s = linger_s
        self._expected: dict[int, float] = {}         # adds being prepared in front processes
        self._tickets = itertools.count()
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Any, cf.Future, bool] | None] = queue.Queue()
        self.stats: Counter = Counter()
        self._reads = getattr(memory, "read_log", None)      # the audit of reads, written from this thread
        if self._reads is not None:
            self._reads.hand_over()
        self._thread = threading.Thread(target=self._loop, name="memstore-group-commit", daemon=True)
        self._thread.start()

    def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        """Prepare here, commit in the committer thread, return what was committed."""
        unsupported = set(kwargs) - _ADD_KWARGS
        if unsupported:
            raise TypeError(f"add() got unexpected argument(s) {sorted(unsupported)}")
        args = {k: kwargs.get(k) for k in _ADD_KWARGS}
        args["infer"] = kwargs.get("infer", True)
        t0 = time.perf_counter()
        # with worker processes (memstore serve --workers N) they extract, run spaCy and embed;
        # without, extraction runs here, in parallel with the other requests, and spaCy and the
        # embedder once for the whole group in the committer thread (Memory.prepare_models)
        in_workers = self.memory.workers > 0
        state = self.memory.prepare_add(messages, **args, models=in_workers)
        fut: cf.Future = cf.Future()
        self._queue.put((state, fut, in_workers))
        out = fut.result()
        out["timings"]["total"] = time.perf_counter() - t0
        return out

    def commit(self, state: Any, ticket: int | None = None) -> dict[str, Any]:
        """Commit an add prepared elsewhere (a front process: `prepare_add`'s result) with the
        others waiting; returns what add() returns. `ticket`: what `expect()` gave for it."""
        self.forget(ticket)
        fut: cf.Future = cf.Future()
        self._queue.put((state, fut, True))
        return fut.result()

    # -- adds on their way: a group waits a little for them --------------------------------------
    def expect(self) -> int:
        """An add is being prepared elsewhere (a front admitted it) and will come to `commit`:
        while such adds are on their way, a group waits up to `linger_s` for them, so the
        adds of many fronts share a transaction (a commit's CPU is mostly per group: ~13 ms for
        one add alone, ~4 ms an add in a group of 8, ~2 ms in 32; 2 cores). bench/server.py
        --fronts 2, 8 clients, load ~4.5: no wait 2.1 adds a group, owner 12.6 ms an add, 60/s;
        20 ms 3.6, 9.0 ms, 69/s; 50 ms 5.2, 6.5 ms, 70/s, with the same p50. Returns a ticket."""
        with self._lock:
            ticket = next(self._tickets)
            self._expected[ticket] = time.monotonic()
            return ticket

    def forget(self, ticket: int | None) -> None:
        """The add of `ticket` arrived, or will not come (it failed before its commit)."""
        if ticket is not None:
            with self._lock:
                self._expected.pop(ticket, None)

    def _awaited(self) -> int:
        now = time.monotonic()
        with self._lock:
            for t in [t for t, at in self._expected.items() if now - at > EXPECT_S]:
                del self._expected[t]
            return len(self._expected)

    def close(self) -> None:
        """Commit what is queued, then stop the committer thread."""
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            item = self._next()
            if item is None:
                self._flush_reads(now=True)
                return
            group = [item]
            stop = False
            while len(group) < self.max_group:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                group.append(nxt)
            if not stop:
                stop = self._linger(group)
            self._commit(group)
            self._flush_reads(now=stop)
            if stop:
                return

    def _next(self) -> Any:
        """The next queued add (None: close); while none comes, the reads are written each flush_s."""
        if self._reads is None:
            return self._queue.get()
        while True:
            try:
                return self._queue.get(timeout=min(self._reads.config.flush_s, 0.5))
            except queue.Empty:
                self._flush_reads()

    def _flush_reads(self, *, now: bool = False) -> None:
        if self._reads is not None and (self._reads.due() or (now and self._reads.pending)):
            self._reads.flush()          # never raises: a failed write is retried, then counted

    def _linger(self, group: list) -> bool:
        """Wait (at most `linger_s`) for the adds fronts are still preparing; True on close."""
        deadline = time.monotonic() + self.linger_s
        while len(group) < self.max_group and self._awaited() > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                nxt = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if nxt is None:
                return True
            group.append(nxt)
            self.stats["lingered"] += 1
        return False

    def _commit(self, items: list[tuple[Any, cf.Future, bool]]) -> None:
        self.stats["groups"] += 1
        self.stats["adds"] += len(items)
        cpu = time.thread_time()
        try:
            self._commit_group(items)
        finally:
            self.stats["cpu_ms"] += round((time.thread_time() - cpu) * 1e3, 3)

    def _commit_group(self, items: list[tuple[Any, cf.Future, bool]]) -> None:
        group = [(st, fut) for st, fut, prepared in items if prepared]
        try:
            raw = [(st, fut) for st, fut, prepared in items if not prepared]
            for (st, fut), out in zip(raw, self.memory.prepare_models([st for st, _ in raw]) if raw else []):
                if isinstance(out, BaseException):
                    fut.set_exception(out)
                else:
                    group.append((st, fut))
            states = [st for st, _ in group]
            outcomes = self.memory.commit_prepared(states) if states else []
            for (st, fut), out in zip(group, outcomes):
                if isinstance(out, StoreWriteError) and _is_conflict(out):
                    out = self._retry_conflict(st)
                if isinstance(out, BaseException):
                    fut.set_exception(out)
                else:
                    fut.set_result(out)
        except BaseException as exc:
            for _, fut, _ in items:
                if not fut.done():
                    fut.set_exception(exc)

    def _retry_conflict(self, state: Any) -> Any:
        out: Any = None
        for attempt in range(_CONFLICT_RETRIES):
            time.sleep(0.01 * (2 ** attempt))
            self.stats["conflict_retries"] += 1
            out = self.memory.commit_prepared([state])[0]      # a failed attempt put the state back
            if not (isinstance(out, StoreWriteError) and _is_conflict(out)):
                return out
        return out


_ADD_KWARGS = frozenset({"user_id", "agent_id", "run_id", "metadata", "infer", "prompt", "timestamp",
                         "expiration_date", "actor_id", "memory_type"})


def _is_conflict(exc: StoreWriteError) -> bool:
    text = f"{exc} {getattr(exc, 'cause', '')}"
    return "Conflict" in text or "conflict" in text
