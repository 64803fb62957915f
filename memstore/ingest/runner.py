"""Batch ingest: read every file, then extract and commit conversation by conversation, oldest first.

Stages (each timed in the report):

1. **read** — stream each file through its reader; drop messages already ingested for this scope
   (`ingest_log`) or repeated within the run; spill the remaining conversations to a temporary file
   (memory stays bounded by one conversation) with an index of their start times.
2. **extract** — conversations in chronological order (exports list newest first; truth
   maintenance needs oldest first), cut into batches of about `batch_size` messages (evenly, see
   `split_batches`: no short tail costs a call of its own), each with the
   preceding messages of its conversation as context. LLM calls run in a bounded thread pool with
   retries and backoff; the related stored memories each LLM batch is shown are looked up for
   many batches at once before they are submitted (`_attach_context`). The offline extractor runs
   in the calling thread, its clauses parsed by spaCy in bulk (spaCy is CPU-bound).
3. **analyze / embed** — spaCy analysis and ONE embedding call over the facts of many conversations.
4. **write** — whole conversations, up to `commit_messages` messages at a time, in ONE write unit of
   the batched writer (memstore/store/writer.py): each batch goes through the same commit steps as
   an add() (`memstore.pipeline.add.commit`), and every table's rows of the unit are written as
   one Arrow batch: messages, memories, postings, links, history, extraction runs and the
   `ingest_log` rows together. A killed process leaves each conversation either fully stored or
   not at all; re-running skips what is stored and does the rest. If a unit fails to write, its
   conversations are retried one by one so one bad conversation cannot hold back the others.

Every ingested message is kept (memories cite them: `memories.source_message_ids`); config
`messages_kept` prunes only messages that came through add().

Concurrency trade-off: a batch sees the memories committed before its extraction started, not those
of batches extracted at the same moment, so the LLM's own `supersedes` cannot name them. Ingest
therefore turns on slot supersession for LLM facts too (config `slot_supersession` "heuristic" acts
as "always" here; "off" stays off): it runs at write time, oldest first, under the write lock.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import datetime as dt
import os
import pickle
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memstore.core.errors import LLMError, MemstoreError, MissingFileError
from memstore.core.identity import Scope
from memstore.core.ids import new_id
from memstore.core.model import AddOptions, AddState, ContextMemory
from memstore.core.rules.context_probe import probe_text
from memstore.core.timeutil import utcnow
from memstore.extraction.doc_cache import DocCache, bulk_extractor
from memstore.extraction.extract_heuristic import HeuristicExtractor
from memstore.ingest.detect import detect_format
from memstore.ingest.options import IngestOptions
from memstore.ingest.plan import ConversationJob, Stager, account, conversation_states, fail, log_rows
from memstore.ingest.prepared_commit import known_messages
from memstore.ingest.progress import Progress, wanted
from memstore.ingest.readers import read_source
from memstore.ingest.report import IngestReport
from memstore.ingest.types import (
    Problem,
    SourceConversation,
    SourceFormatError,
)
from memstore.pipeline.add import commit, prepare_models, prepare_text
from memstore.store.database import registered
from memstore.store.rows import failed_run_params
from memstore.store.unit import write_unit
from memstore.store.write_values import vectors_table
from memstore.store.writer import BatchedWriter

if TYPE_CHECKING:
    from memstore.runtime import Runtime

_LOOKUP_CONVERSATIONS = 256                        # conversations per ingest_log lookup


@dataclass
class _Staged:
    """Where a conversation waits in the spill file, and its sort key."""

    when: dt.datetime
    seq: int
    offset: int
    size: int
    n_new: int


@dataclass
class _Job(ConversationJob):
    """One conversation on its way through extraction to the write."""

    futures: list[cf.Future] = field(default_factory=list)


def run_ingest(rt: Runtime, paths: list[str], scope: Scope, options: IngestOptions, *,
               pool: Any = None) -> IngestReport:
    """Ingest `paths` into `scope`; returns the report (also stored in `ingest_runs`). With `pool`
    (a PreparePool), spaCy and the embedder run in its worker processes."""
    options.check()
    ingest = _Ingest(rt, scope, options)
    ingest.pool = pool
    return ingest.run(paths)


class _Ingest:
    def __init__(self, rt: Runtime, scope: Scope, options: IngestOptions) -> None:
        self.opt = options
        self.scope = scope
        self.db = rt.db
        # Ingest keeps every message (memories cite them) and gives each batch its own conversation's
        # preceding messages as context, not the scope's most recent ones: each add carries that
        # in its options (AddOptions); the runtime is the Memory's own, not a copy.
        extractor = rt.extractor
        self._docs: DocCache | None = None
        if isinstance(extractor, HeuristicExtractor):
            # The same extractor, fed clauses that spaCy parsed in bulk (nlp.pipe: ~5x faster here
            # than one call per clause); a clause not in the cache is parsed as usual.
            self._docs, extractor = bulk_extractor(rt.nlp, sessions=extractor.sessions)
        self.extractor = extractor
        # Batches extracted at the same time cannot see each other's facts, so the LLM cannot name
        # what they replace: slot supersession (applied in time order at write) does.
        llm_slots = extractor.name == "llm" and rt.config.slot_supersession == "heuristic"
        self.add_options = AddOptions(gather_context=False, keep_all_messages=True, request_limits=False,
                                      slot_supersession="always" if llm_slots else None,
                                      max_message_chars=options.max_message_chars)
        self.rt = rt
        self.pool: Any = None                # a PreparePool: spaCy and the embedder in worker processes
        self.n_context = rt.config.context_messages
        self.offline = extractor.name != "llm"
        self.id = new_id()
        self.report = IngestReport(ingest_id=self.id, scope=scope.as_dict())
        self.stager = Stager(scope, self.report)
        self.now = utcnow()

    # -- orchestration -------------------------------------------------------------------------
    def run(self, paths: list[str]) -> IngestReport:
        t0, c0 = time.perf_counter(), time.process_time()
        files = [(os.fspath(p), self.opt.format if self.opt.format != "auto" else detect_format(p)) for p in paths]
        for path, _ in files:
            if not os.path.isfile(path):
                raise MissingFileError(f"not a file: {path}" if os.path.exists(path) else f"no such file: {path}", path=path)
        self._start(files)
        try:
            with tempfile.TemporaryFile(prefix="memstore-ingest-") as spill:
                with self._timed("read"):
                    index = self._read_all(files, spill)
                index.sort(key=lambda s: (s.when, s.seq))
                self._process(index, spill)
        except BaseException:
            self.report.status = "failed"
            self.report.stages_s["total"] = time.perf_counter() - t0
            self.report.stages_cpu_s["total"] = time.process_time() - c0
            self._finish()
            raise
        r = self.report
        r.status = "done" if not (r.messages["failed"] or any(f.get("error") for f in r.files)) else "done_with_problems"
        r.stages_s["total"] = time.perf_counter() - t0
        r.stages_cpu_s["total"] = time.process_time() - c0
        self._finish()
        return r

    def _start(self, files: list[tuple[str, str]]) -> None:
        sc = self.scope
        with write_unit(self.db, "ingest_start"):
            self.db.run("queries/insert_ingest_run", {
                "id": self.id, "scope_key": sc.key, "user_id": sc.user_id, "agent_id": sc.agent_id,
                "run_id": sc.run_id, "files": [p for p, _ in files], "started_at": self.now})

    def _finish(self) -> None:
        try:
            with write_unit(self.db, "ingest_finish"):
                self.db.run("queries/finish_ingest_run", {"id": self.id, "status": self.report.status,
                                                          "report": self.report.to_json(), "finished_at": utcnow()})
        except MemstoreError:
            pass  # the report is returned anyway; a failed bookkeeping row must not hide it

    # -- stage 1: read, drop what is stored, spill ---------------------------------------------------
    def _read_all(self, files: list[tuple[str, str]], spill: Any) -> list[_Staged]:
        index: list[_Staged] = []
        for path, fmt in files:
            entry: dict[str, Any] = {"path": path, "format": fmt, "conversations": 0, "messages_read": 0,
                                     "error": None}
            self.report.files.append(entry)
            problems: list[Problem] = []
            buffer: list[SourceConversation] = []
            try:
                for conv in read_source(path, fmt, problems, mapping=self.opt.mapping,
                                        max_message_chars=self.opt.max_message_chars):
                    entry["conversations"] += 1
                    entry["messages_read"] += conv.n_read
                    self._flush_problems(problems)
                    buffer.append(conv)
                    if len(buffer) >= _LOOKUP_CONVERSATIONS:
                        self._stage(buffer, spill, index)
            except (SourceFormatError, OSError) as exc:
                entry["error"] = str(exc)
                problems.append(Problem(path, str(exc), severity="error"))
            finally:
                self._stage(buffer, spill, index)
                self._flush_problems(problems)
        return index

    def _flush_problems(self, problems: list[Problem]) -> None:
        for p in problems:
            self.report.note(p)
        problems.clear()

    def _stage(self, buffer: list[SourceConversation], spill: Any, index: list[_Staged]) -> None:
        known = self._known(buffer)
        for conv in buffer:
            staged = self.stager.stage(conv, known)
            if staged is None:
                continue
            data = pickle.dumps((conv, staged.fresh, staged.keys), protocol=pickle.HIGHEST_PROTOCOL)
            offset = spill.tell()
            spill.write(data)
            index.append(_Staged(when=staged.when, seq=len(index), offset=offset, size=len(data),
                                 n_new=staged.n_new))
        buffer.clear()

    def _known(self, buffer: list[SourceConversation]) -> set[tuple[str, str]]:
        """(conversation_id, message_key) pairs of `buffer` already in ingest_log for this scope."""
        by_format: dict[str, list[tuple[str, str]]] = {}
        for conv in buffer:
            by_format.setdefault(conv.format, []).extend((conv.id, m.source_message_id or "") for m in conv.messages)
        return {p for fmt, pairs in by_format.items() for p in known_messages(self.rt, self.scope, fmt, pairs)}

    # -- stages 2-4: extract, analyze/embed, write ------------------------------------------------
    def _process(self, index: list[_Staged], spill: Any) -> None:
        total = sum(s.n_new for s in index)
        queue = deque(index)
        with Progress(total, enabled=wanted(self.opt.progress)) as bar:
            self._progress = bar        # _timed() names each stage on it as the stage starts
            if self.offline:
                self._process_offline(queue, spill, bar)
            else:
                self._process_llm(queue, spill, bar)

    def _process_offline(self, queue: deque[_Staged], spill: Any, bar: Progress) -> None:
        """Offline extractor: one write group at a time, its clauses parsed by spaCy in bulk first."""
        while queue:
            jobs: list[_Job] = []
            n = 0
            while queue and (n < self.opt.commit_messages or not jobs):
                jobs.append(self._load(queue.popleft(), spill))
                n += jobs[-1].n_new
            with self._timed("extract"):
                self._prime(jobs)
            for job in jobs:
                job.futures = [self._submit(None, st) for st in job.states]
            self._write_group(jobs)
            if self._docs is not None:
                self._docs.clear()
            bar.advance(n)

    def _process_llm(self, queue: deque[_Staged], spill: Any, bar: Progress) -> None:
        """LLM extractor: keep `concurrency` calls in flight; write conversations in order as their
        batches complete (a write group is whatever is done at the head of the line)."""
        pending: deque[_Job] = deque()
        # Batches submitted ahead of the write: enough that the pool keeps calling while the main
        # thread analyzes, embeds and writes the previous group.
        max_in_flight = max(4, self.opt.concurrency * 8)
        in_flight = 0
        with cf.ThreadPoolExecutor(self.opt.concurrency, "memstore-ingest") as pool:
            try:
                while queue or pending:
                    fresh: list[_Job] = []
                    while queue and (in_flight < max_in_flight or not (pending or fresh)):
                        fresh.append(self._load(queue.popleft(), spill))
                        in_flight += len(fresh[-1].states)
                    with self._timed("context"):
                        self._attach_context([st for job in fresh for st in job.states])
                    for job in fresh:
                        job.futures = [self._submit(pool, st) for st in job.states]
                        pending.append(job)
                    with self._timed("extract_wait"):
                        cf.wait(pending[0].futures)
                    group: list[_Job] = []
                    n = 0
                    while pending and all(f.done() for f in pending[0].futures) and (
                            n < self.opt.commit_messages or not group):
                        job = pending.popleft()
                        group.append(job)
                        n += job.n_new
                        in_flight -= len(job.futures)
                    self._write_group(group)
                    bar.advance(n)
            finally:
                for job in pending:
                    for f in job.futures:
                        f.cancel()

    def _attach_context(self, states: list[AddState]) -> None:
        """Related stored memories for each LLM batch (what gather_context finds for one add()),
        for many batches at once: ONE embedding call over their probes (core/rules/context_probe.py) and ONE
        query. One at a time, the query embedding and the scan cost ~15 ms of CPU per batch here,
        which on a small machine is what bounds an LLM ingest."""
        n = self.rt.config.context_memories
        if not states or n <= 0:
            return
        texts = [probe_text(st.messages) for st in states]
        vecs = self.rt.embedder.embed(texts)
        found: dict[int, list[tuple[str, str]]] = {}
        with registered(self.db, "qvecs", vectors_table(vecs, self.db.dim, idx=list(range(len(states))))):
            for idx, mid, text in self.db.rows("queries/ingest_related_memories",
                                               {"scope_key": self.scope.key, "n": n}):
                found.setdefault(idx, []).append((mid, text))
        for idx, st in enumerate(states):
            st.context_memories = [ContextMemory(f"m{k + 1}", mid, text)
                                   for k, (mid, text) in enumerate(found.get(idx, []))]

    def _prime(self, jobs: list[_Job]) -> None:
        """Parse every first-person clause of the group's user messages in one spaCy pipe."""
        if self._docs is None:
            return
        self._docs.prime(clause for job in jobs for st in job.states for m in st.messages
                         if m.role == "user" for clause in HeuristicExtractor._clauses(m.content))

    def _load(self, staged: _Staged, spill: Any) -> _Job:
        spill.seek(staged.offset)
        conv, fresh, keys = pickle.loads(spill.read(staged.size))
        states = conversation_states(conv, fresh, self.scope, batch_size=self.opt.batch_size,
                                     metadata=self.opt.metadata, options=self.add_options,
                                     n_context=self.n_context, now=self.now)
        return _Job(format=conv.format, id=conv.id, file=conv.file, keys=keys, states=states)

    def _submit(self, pool: cf.ThreadPoolExecutor | None, state: AddState) -> cf.Future:
        if pool is not None:
            return pool.submit(self._prepare, state)
        fut: cf.Future = cf.Future()
        with self._timed("extract"):
            try:
                fut.set_result(self._prepare(state))
            except Exception as exc:
                fut.set_exception(exc)
        return fut

    def _prepare(self, state: AddState) -> AddState:
        """The add() steps up to and including extraction (context is attached in bulk:
        _attach_context); retryable LLM errors are retried with exponential backoff (on top of the
        client's own retries). A failed call is recorded per conversation (_fail)."""
        return prepare_text(state, self.rt, extractor=self.extractor, retries=self.opt.retries,
                            backoff_s=self.opt.backoff_s, record_failure=False)

    def _write_group(self, group: list[_Job]) -> None:
        ok: list[_Job] = []
        for job in group:
            errors = [f.exception() for f in job.futures if f.exception() is not None]
            if errors:
                self._fail(job, errors[0], extraction=True)
            else:
                job.states = [f.result() for f in job.futures]
                ok.append(job)
        ok = self._analyze_embed(ok)
        if not ok:
            return
        for job in ok:
            job.states[-1].extra_rows = {"ingest_log": log_rows(self.scope, job, ingest_id=self.id, now=self.now)}
        with self._timed("write"):
            outcomes = commit([job.states for job in ok], self.rt, BatchedWriter(self.db), step="ingest")
        for job, out in zip(ok, outcomes):
            if isinstance(out, BaseException):
                self._fail(job, out, extraction=False)
            else:
                account(self.report, job)

    @contextlib.contextmanager
    def _timed(self, stage: str) -> Iterator[None]:
        """Add the wall time and the process CPU time of the block to the report's stage figures."""
        t, c = time.perf_counter(), time.process_time()
        if getattr(self, "_progress", None) is not None:
            self._progress.stage(stage)
        try:
            yield
        finally:
            self.report.stages_s[stage] += time.perf_counter() - t
            self.report.stages_cpu_s[stage] += time.process_time() - c

    def _analyze_embed(self, jobs: list[_Job]) -> list[_Job]:
        """spaCy and the embedder once over the facts of many conversations; a conversation whose
        facts fail alone is recorded as failed. Returns the conversations ready to write."""
        states = [st for job in jobs for st in job.states]
        if self.pool is not None:          # the workers send back prepared copies: the jobs take them
            with self._timed("analyze+embed (workers)"):
                prepared = self.pool.prepare(states, extract=False)
            done = iter(prepared)
            for job in jobs:
                job.states = [st if isinstance(out, BaseException) else out
                              for st, out in ((st, next(done)) for st in job.states)]
            outcome = iter(prepared)
        else:
            outcome = iter(prepare_models(states, self.rt, timed=self._timed))
        ready = []
        for job in jobs:
            errors = [out for out in (next(outcome) for _ in job.states) if isinstance(out, BaseException)]
            if errors:
                self._fail(job, errors[0], extraction=False)
            else:
                ready.append(job)
        return ready

    def _fail(self, job: _Job, exc: BaseException, *, extraction: bool) -> None:
        """Record a conversation that could not be stored; a re-run tries it again."""
        fail(self.report, job, exc, stage="extraction" if extraction else "write")
        if extraction and isinstance(exc, LLMError):
            self.report.extraction_runs["llm_error"] += 1
            try:
                with write_unit(self.db, "record_failed_run"):
                    self.db.run("queries/insert_failed_run", failed_run_params(
                        self.scope, model=self.rt.config.llm.model,
                        prompt_version=getattr(self.extractor, "prompt_version", None),
                        message_ids=[m.id for st in job.states for m in st.messages], error=exc, now=self.now),
                        writes=True)
            except MemstoreError:
                pass


