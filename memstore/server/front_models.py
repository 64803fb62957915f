"""A front process's model work, batched (memstore/server/front_app.py).

A front's request threads share one process and one GIL, so preparing their adds side by side
gains nothing; preparing them together does: one thread takes every add that is ready and runs
`workers.prepare_batch` on them, the offline extractor's sentences in one spaCy pass, the facts'
analysis in another, one embedding call (a short text costs spaCy far less inside a batch: ~0.7
against ~1.7 ms a sentence with 4 together). A batch is what queued while the previous one ran,
plus the adds on their way here (`coming`) for at most 5 ms, as in the owner's group commit.
Results are the ones each add gets alone (the same docs, tags and parses; `prepare_models` is what
the group commit runs).

An LLM extractor's call waits on the network, so with one the request thread extracts and only the
spaCy and embedding steps are batched.

>>> from memstore.api.stages import AddStages
>>> from memstore.core.identity import Scope
>>> from memstore.core.model import AddState, Message
>>> models = FrontModels(AddStages.for_models({"embedder": {"provider": "hashing"}}))
>>> st = AddState(scope=Scope(user_id="ana"), messages=[Message("user", "I live in Lisbon", id="m1")],
...               metadata={}, infer=True)
>>> [f.text for f in models.prepare(st).facts]
['Ana lives in Lisbon']
"""
from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from collections import deque

from memstore.api.stages import AddStages
from memstore.core.model import AddState, PreparedAdd


class FrontModels:
    """`prepare(state)` -> the prepared add (or raises what it alone raised), in batches. A batch
    waits up to `linger_s` for the adds on their way here (`coming()`: admitted by the owner, being
    validated), the same wait the owner's group commit makes for adds being prepared."""

    def __init__(self, stages: AddStages, *, max_batch: int = 16, linger_s: float = 0.005) -> None:
        self.stages, self.max_batch, self.linger_s = stages, max_batch, linger_s
        self._batch_extracts = stages.batch_extracts
        self.batches = self.adds = 0               # counts, for a look at the batch sizes
        self._cv = threading.Condition()
        self._pending: deque[tuple[AddState, cf.Future]] = deque()
        self._coming = 0
        threading.Thread(target=self._run, name="memstore-front-models", daemon=True).start()

    def coming(self) -> Coming:
        """An add on its way to `prepare`: pass it there, and call `done()` when it will not come."""
        with self._cv:
            self._coming += 1
        return Coming(self)

    def prepare(self, state: AddState, coming: Coming | None = None) -> PreparedAdd:
        """Extract (here with an LLM extractor, else in the batch), analyze, embed."""
        if not self._batch_extracts:
            if coming is not None:
                coming.done()                      # a batch does not wait for an LLM's answer
            state = self.stages.extract(state)
        fut: cf.Future = cf.Future()
        with self._cv:
            self._pending.append((state, fut))
            if coming is not None:
                coming.arrived()
            self._cv.notify()
        return fut.result()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._pending:
                    self._cv.wait()
                deadline = time.monotonic() + self.linger_s
                while self._coming > 0 and len(self._pending) < self.max_batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cv.wait(left)
                batch = [self._pending.popleft() for _ in range(min(len(self._pending), self.max_batch))]
            self.batches, self.adds = self.batches + 1, self.adds + len(batch)
            try:
                out = self.stages.models([st for st, _ in batch], extract=self._batch_extracts)
            except BaseException as exc:
                out = [exc] * len(batch)
            for (_, fut), item in zip(batch, out):
                fut.set_exception(item) if isinstance(item, BaseException) else fut.set_result(item)


class Coming:
    """One add counted as on its way to a FrontModels (see `FrontModels.coming`)."""

    def __init__(self, models: FrontModels) -> None:
        self._models, self._here = models, False

    def arrived(self) -> None:
        """Called with the models' lock held: it is queued, or will not come."""
        if not self._here:
            self._here = True
            self._models._coming -= 1
            self._models._cv.notify()

    def done(self) -> None:
        """It will not come (it failed before), or it came: either way no batch waits for it."""
        with self._models._cv:
            self.arrived()
