"""The Ray workers' side of an ingest: an actor that loads the models once and prepares conversations.

`Preparer` is the callable class `Dataset.map_batches` runs in a pool of actors (Ray Data builds
one per actor, so spaCy, the embedder and the extractor load once per actor: `model_runtime`, the
same runtime a `memstore serve` worker process builds). Each batch is rows of
`{"i", "scope", "job"}` (JSON text in the format of memstore/wire/prepared.py); it returns rows
of `{"i", "prepared", "error", "cpu_s", "messages"}`: the prepared conversation as JSON text
again (never a pickle), or the error that stopped it. This module does not import Ray.

Offline extractor: the batch's sentences are parsed in ONE spaCy pass (`prepare_batch` with
`BatchDocs`), then spaCy and the embedder run once over the batch's facts. LLM extractor: the
batch's adds call the LLM from a pool of `concurrency` threads per actor (bounded concurrency),
with the runner's retries and backoff, then the model steps run once over the batch.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import time
from typing import Any

from memstore.core.errors import MemstoreError
from memstore.core.identity import Scope


class Preparer:
    """Ray Data actor: models loaded once (`__init__`), a batch of conversations per call."""

    def __init__(self, config_json: str, *, concurrency: int = 8, retries: int = 3, backoff_s: float = 1.0,
                 kill_marker: str | None = None) -> None:
        from memstore.core.config import MemoryConfig
        from memstore.pipeline.workers import BatchDocs, model_runtime

        self.rt = model_runtime(MemoryConfig.from_dict(json.loads(config_json)))
        self.docs = BatchDocs(self.rt)
        self.embedder = self.rt.embedder.name
        self.llm = self.rt.extractor.name == "llm"
        self.threads = cf.ThreadPoolExecutor(concurrency, "memstore-ray-llm") if self.llm else None
        self.retries, self.backoff_s = retries, backoff_s
        self.kill_marker = kill_marker          # tests: the first actor to reach its 2nd batch dies (SIGKILL)
        self.calls = 0

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        from memstore.wire.prepared import decode_conversation, encode_conversation

        self.calls += 1
        self._maybe_die()
        c0 = time.process_time()
        rows = list(zip(batch["i"], batch["scope"], batch["job"]))
        jobs: list[Any] = []
        errors: list[str | None] = []
        for _, scope, text in rows:
            try:
                jobs.append(decode_conversation(json.loads(text), Scope(**json.loads(scope))))
                errors.append(None)
            except (MemstoreError, ValueError) as exc:
                jobs.append(None)
                errors.append(f"{type(exc).__name__}: {exc}")
        states = [st for job in jobs if job is not None for st in job.states]
        outcome = dict(zip(map(id, states), self._prepare(states)))
        prepared: list[str | None] = []
        for k, job in enumerate(jobs):
            if job is None:
                prepared.append(None)
                continue
            failed = [outcome[id(st)] for st in job.states if isinstance(outcome[id(st)], BaseException)]
            if failed:
                errors[k] = f"{type(failed[0]).__name__}: {failed[0]}"
                prepared.append(None)
                continue
            job.states = [outcome[id(st)] for st in job.states]
            prepared.append(json.dumps(encode_conversation(job, embedder=self.embedder), ensure_ascii=False))
        cpu = time.process_time() - c0
        n = [0 if job is None else job.n_new for job in jobs]
        total = max(sum(n), 1)
        return {"i": [int(i) for i, _, _ in rows], "prepared": prepared, "error": errors,
                "cpu_s": [cpu * k / total for k in n], "messages": n, "pid": [os.getpid()] * len(rows)}

    def _prepare(self, states: list[Any]) -> list[Any]:
        from memstore.pipeline.add import EXTRACT_STEPS, prepare_text
        from memstore.pipeline.workers import prepare_batch

        if not self.llm:
            return prepare_batch(states, self.rt, extract=True, docs=self.docs)

        def extract(st: Any) -> Any:
            try:
                return prepare_text(st, self.rt, retries=self.retries, backoff_s=self.backoff_s,
                                    record_failure=False, steps=EXTRACT_STEPS)
            except MemstoreError as exc:
                return exc

        extracted = list(self.threads.map(extract, states))
        ok = [st for st in extracted if not isinstance(st, BaseException)]
        done = iter(prepare_batch(ok, self.rt, extract=False))
        return [st if isinstance(st, BaseException) else next(done) for st in extracted]

    def _maybe_die(self) -> None:
        if self.kill_marker and self.calls == 2:
            try:
                fd = os.open(self.kill_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
