"""Worker processes for the model work of adds: the extractor call, spaCy and the embedder.

A `PreparePool` keeps `workers` processes (spawned: the owner has threads and an open DuckDB file,
which a fork would copy). Each builds its own models from the config once (the initializer) and
never opens the store: the process that owns the store file runs the reads of an add
(`READ_STEPS`: validate, the LLM's context), sends the state here, and commits what comes back.

    owner:   validate → context ──► worker: extract → analyze (spaCy) → embed ──► owner: commit

Adds waiting while every worker is busy go to the next free worker together, as one batch: one
spaCy pass and one embedding call for the batch (a short text costs far less inside a batch).

A worker that dies (SIGKILL, out of memory) breaks the pool: it is replaced at once, and every add
that was in it fails with `WorkerLostError` (retryable: a worker writes nothing, so nothing of
those adds is stored). Errors raised in a worker reach the caller as the same class.

>>> from memstore.core.config import MemoryConfig
>>> from memstore.core.identity import Scope
>>> from memstore.core.model import AddState, Message
>>> pool = PreparePool(MemoryConfig.from_dict({"embedder": {"provider": "hashing"}}), workers=1)
>>> st = AddState(scope=Scope(user_id="ana"), messages=[Message("user", "I live in Lisbon", id="m1")],
...               metadata={}, infer=True)
>>> [f.text for f in pool.submit(st).result().facts]
['Ana lives in Lisbon']
>>> pool.close()
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
from collections import deque
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from memstore.core.errors import ArgumentError, MemstoreError, WorkerLostError
from memstore.core.model import AddState

# BLAS / OpenMP threads of a worker: one. N workers already use N cores; a worker's spaCy products
# are small (memstore/providers/thinc_ops.py holds them to one BLAS thread anyway).
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_RT: Any = None       # the worker process's model runtime (no database)
_DOCS: Any = None     # its BatchDocs


def check_workers(workers: Any) -> int:
    """`workers` as a whole number >= 0, else ArgumentError.

    >>> check_workers(2)
    2
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ArgumentError(f"workers is {workers!r}",
                            hint="give a whole number of worker processes >= 0 (0: prepare adds in this process)")
    return workers


def model_runtime(config: Any) -> Any:
    """A runtime with the models and no store, loaded now, on one BLAS/OpenMP thread: what a
    worker process (and a server's front process) prepares adds with. Never opens the store."""
    os.environ.update(_ONE_THREAD)
    from memstore.providers.factory import build_embedder
    from memstore.runtime import Runtime

    embedder = build_embedder(config.embedder)
    if hasattr(embedder, "threads"):
        embedder.threads = 1                           # before its ONNX session is built (lazily)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - the env vars above then do what they can
        pass
    rt = Runtime(config=config, db=None, embedder=embedder)
    _ = rt.extractor                                   # loads spaCy too for the heuristic extractor
    _ = rt.nlp
    embedder.embed(["warm up"])
    return rt


def _init_worker(config: Any) -> None:
    """Build the models once in the worker process: embedder, spaCy, extractor. Never the store."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the owner's to handle
    global _RT, _DOCS
    _RT = model_runtime(config)
    _DOCS = BatchDocs(_RT)


def pack_error(exc: BaseException) -> tuple:
    """An exception as plain parts: MemstoreError's keyword-only constructors do not unpickle, nor
    does one held in a field (StoreWriteError's `cause`: a QueryError), so those are packed too.

    >>> import pickle
    >>> from memstore.core.errors import QueryError, StoreWriteError
    >>> err = StoreWriteError("write:memories", QueryError("write:memories", "INSERT ...", None, ValueError("no")))
    >>> back = unpack_error(pickle.loads(pickle.dumps(pack_error(err))))
    >>> type(back).__name__, type(back.cause).__name__, back.cause.sql
    ('StoreWriteError', 'QueryError', 'INSERT ...')
    """
    attrs = {k: pack_error(v) if isinstance(v, BaseException) else v
             for k, v in getattr(exc, "__dict__", {}).items()}
    return ("__exc__", type(exc), exc.args, attrs)


def unpack_error(item: Any) -> Any:
    """`pack_error`'s parts as the exception again (anything else is returned as it is)."""
    if isinstance(item, tuple) and len(item) == 4 and item[0] == "__exc__":
        _, cls, args, attrs = item
        exc = cls.__new__(cls)
        exc.args = args
        exc.__dict__.update({k: unpack_error(v) for k, v in attrs.items()})
        return exc
    return item


def _prepare_batch(states: list[AddState], extract: bool) -> list[Any]:
    """In the worker: `prepare_batch`; per add, the prepared state or its packed exception."""
    out = prepare_batch(states, _RT, extract=extract, docs=_DOCS)
    return [pack_error(o) if isinstance(o, BaseException) else o for o in out]


class BatchDocs:
    """The offline extractor fed the sentences of a whole batch of adds parsed in ONE spaCy pass
    (as ingest does: a short sentence costs spaCy far less inside a batch); `extractor` is None
    when the runtime's extractor is not the offline one (an LLM reads no spaCy docs)."""

    def __init__(self, rt: Any) -> None:
        from memstore.extraction.doc_cache import bulk_extractor
        from memstore.extraction.extract_heuristic import HeuristicExtractor

        self.cache = self.extractor = None
        if isinstance(rt.extractor, HeuristicExtractor):
            self.cache, self.extractor = bulk_extractor(rt.nlp, sessions=rt.extractor.sessions)

    def prime(self, states: list[AddState]) -> None:
        """Parse the statement sentences of the adds' user messages together."""
        from memstore.extraction.extract_heuristic import HeuristicExtractor

        if self.cache is not None:
            self.cache.prime(clause for st in states if st.infer and not st.memory_type for m in st.messages
                             if m.role == "user" and m.content for clause in HeuristicExtractor._clauses(m.content))

    def clear(self) -> None:
        if self.cache is not None:
            self.cache.clear()


def prepare_batch(states: list[AddState], rt: Any, *, extract: bool = True, docs: BatchDocs | None = None
                  ) -> list[Any]:
    """Extract each add (unless `extract` is False: done already), then spaCy and the embedder
    once for the batch (`prepare_models`). With `docs`, the offline extractor's sentences of the
    whole batch are parsed in one spaCy pass first. Per add, the prepared state or the exception
    it alone raised (a failed LLM call is the caller's to record: it has the store)."""
    from memstore.pipeline.add import EXTRACT_STEPS, prepare_models, prepare_text

    bulk = docs.extractor if docs is not None and extract else None
    if bulk is not None:
        try:
            docs.prime(states)
        except Exception:
            docs.clear()
    out: list[Any] = []
    try:
        for st in states:
            try:
                out.append(prepare_text(st, rt, extractor=bulk, record_failure=False, steps=EXTRACT_STEPS)
                           if extract else st)
            except MemstoreError as exc:
                out.append(exc)
    finally:
        if bulk is not None:
            docs.clear()
    ready = iter(prepare_models([st for st in out if not isinstance(st, BaseException)], rt))
    return [st if isinstance(st, BaseException) else next(ready) for st in out]


def _ping() -> int:
    return os.getpid()


@contextlib.contextmanager
def _main_not_imported() -> Any:
    """Spawn workers without importing the caller's `__main__` in them: a worker needs only
    memstore, and a script without an `if __name__ == "__main__":` guard would otherwise run again
    in every worker (multiprocessing's spawn re-imports the main module by its file or name)."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    try:
        for k in saved:
            if k == "__file__":
                del main.__dict__[k]
            else:
                main.__dict__[k] = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)


class PreparePool:
    """`workers` processes preparing adds; `submit(state)` -> Future of the prepared add."""

    def __init__(self, config: Any, workers: int, *, max_batch: int = 16) -> None:
        self.config = config
        self.workers = check_workers(workers) or 1
        self.max_batch = max_batch
        self.replaced = 0                              # pools replaced after a worker died
        self._ctx = mp.get_context("spawn")
        self._cv = threading.Condition()
        self._pending: deque[tuple[AddState, bool, cf.Future]] = deque()
        self._inflight = 0
        self._closed = False
        self._executor = self._new_executor()
        self._thread = threading.Thread(target=self._dispatch, name="memstore-prepare-pool", daemon=True)
        self._thread.start()

    def _new_executor(self) -> cf.ProcessPoolExecutor:
        """A pool whose `workers` processes are all started now (submit spawns them, one per
        task while none is idle), so none is spawned later from another thread."""
        ex = cf.ProcessPoolExecutor(self.workers, mp_context=self._ctx, initializer=_init_worker,
                                    initargs=(self.config,))
        with _main_not_imported():
            self._pings = [ex.submit(_ping) for _ in range(self.workers)]
        return ex

    def warm(self) -> list[int]:
        """Wait until every worker has loaded its models; returns their PIDs."""
        for f in self._pings:
            f.result()
        return self.pids()

    def pids(self) -> list[int]:
        """The worker processes' PIDs now (for measuring their CPU)."""
        return sorted(p.pid for p in list(getattr(self._executor, "_processes", {}).values()) if p.is_alive())

    def submit(self, state: AddState, *, extract: bool = True) -> cf.Future:
        """Queue one add for a worker: extract (unless `extract` is False) → analyze → embed."""
        fut: cf.Future = cf.Future()
        with self._cv:
            if self._closed:
                raise WorkerLostError("the worker pool is closed", hint="the server is stopping; retry on the "
                                                                       "next one")
            self._pending.append((state, extract, fut))
            self._cv.notify()
        return fut

    def prepare(self, states: list[AddState], *, extract: bool = True) -> list[Any]:
        """Prepare many adds across the workers; per add, the prepared state or its exception."""
        futs = [self.submit(st, extract=extract) for st in states]
        out: list[Any] = []
        for f in futs:
            try:
                out.append(f.result())
            except MemstoreError as exc:
                out.append(exc)
        return out

    def close(self) -> None:
        """Fail what is queued (retryable), stop the workers."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._thread.join(timeout=10)
        self._executor.shutdown(wait=True, cancel_futures=True)

    # -- the dispatcher: a batch per free worker ------------------------------------------------
    def _dispatch(self) -> None:
        while True:
            with self._cv:
                while not self._closed and (not self._pending or self._inflight >= self.workers):
                    self._cv.wait()
                if self._closed:
                    lost = list(self._pending)
                    self._pending.clear()
                    break
                extract = self._pending[0][1]
                batch = []
                while self._pending and len(batch) < self.max_batch and self._pending[0][1] is extract:
                    batch.append(self._pending.popleft())
                self._inflight += 1
                executor = self._executor
            try:
                task = executor.submit(_prepare_batch, [st for st, _, _ in batch], extract)
            except (BrokenProcessPool, RuntimeError) as exc:
                task = cf.Future()
                task.set_exception(BrokenProcessPool(str(exc)))
            task.add_done_callback(lambda t, b=batch, ex=executor: self._done(t, b, ex))
        for _, _, fut in lost:
            fut.set_exception(WorkerLostError("the worker pool was closed before this add was prepared",
                                              hint="nothing was stored; retry"))

    def _done(self, task: cf.Future, batch: list, executor: cf.ProcessPoolExecutor) -> None:
        exc = task.exception()
        if exc is None:
            for (_, _, fut), item in zip(batch, task.result()):
                item = unpack_error(item)
                fut.set_exception(item) if isinstance(item, BaseException) else fut.set_result(item)
        else:
            if isinstance(exc, BrokenProcessPool):
                self._replace(executor)
                exc = WorkerLostError("a worker process preparing this add died; it has been replaced",
                                      hint="nothing of this add was stored: send it again")
            for _, _, fut in batch:
                fut.set_exception(exc)
        with self._cv:
            self._inflight -= 1
            self._cv.notify()

    def _replace(self, broken: cf.ProcessPoolExecutor) -> None:
        with self._cv:
            if self._executor is not broken or self._closed:
                return
            self._executor = self._new_executor()
            self.replaced += 1
        broken.shutdown(wait=False, cancel_futures=True)
