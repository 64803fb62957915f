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
4. **write** — whole conversations, up to `commit_messages` messages at a time, in ONE transaction:
   messages, memories, postings, links, history, extraction runs and the `ingest_log` rows
   together. A killed process leaves each conversation either fully stored or not at all;
   re-running skips what is stored and does the rest. Inside the transaction the add() write steps
   run once per round of batches (see `split_rounds`), not once per batch: a statement costs
   milliseconds, so this is what makes the write fast. If a group fails to write, its
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
import copy
import dataclasses
import datetime as dt
import json
import os
import pickle
import random
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pyarrow as pa

from memstore.errors import LLMError, MemstoreError, MissingFileError
from memstore.identity import Scope
from memstore.ids import new_id
from memstore.ingest.deferred import DeferredInserts
from memstore.ingest.detect import detect_format
from memstore.ingest.progress import Progress, wanted
from memstore.ingest.options import IngestOptions
from memstore.ingest.readers import read_source
from memstore.ingest.report import IngestReport
from memstore.ingest.types import (
    Problem,
    SourceConversation,
    SourceFormatError,
)
from memstore.pipeline.add import PREPARE_STEPS, WRITE_STEPS
from memstore.pipeline.analyze_facts import analyze_facts
from memstore.pipeline.commit_rows import commit_rows
from memstore.pipeline.embed_facts import embed_facts
from memstore.pipeline.extract_facts import extract_facts
from memstore.pipeline.gather_context import gather_context
from memstore.pipeline.types import AddState, ContextMemory, Extraction
from memstore.providers.extract_heuristic import HeuristicExtractor
from memstore.store.database import registered, vectors_table
from memstore.ingest.batching import DocCache, context_probe, split_batches, split_rounds

_NAMESPACE = uuid.UUID("5b0f3c4e-6a53-4b47-9d0e-3f1c9a7e2d10")
_MERGED_STEPS = (analyze_facts, embed_facts)       # run once over many batches' facts
_LOOKUP_CONVERSATIONS = 256                        # conversations per ingest_log lookup
_PROBE_CHARS = 600                                 # text per batch that finds its related memories


@dataclass
class _Staged:
    """Where a conversation waits in the spill file, and its sort key."""

    when: dt.datetime
    seq: int
    offset: int
    size: int
    n_new: int


@dataclass
class _Job:
    """One conversation on its way through extraction to the write."""

    conv: SourceConversation
    keys: list[str]                      # message_key of each NEW message, aligned with states' messages
    states: list[AddState]
    futures: list[cf.Future] = field(default_factory=list)

    @property
    def n_new(self) -> int:
        return len(self.keys)


def run_ingest(rt: Any, paths: list[str], scope: Scope, options: IngestOptions) -> IngestReport:
    """Ingest `paths` into `scope`; returns the report (also stored in `ingest_runs`)."""
    options.check()
    return _Ingest(rt, scope, options).run(paths)


class _Ingest:
    def __init__(self, rt: Any, scope: Scope, options: IngestOptions) -> None:
        self.opt = options
        self.scope = scope
        self.db = rt.db
        # Ingest keeps every message (memories cite them) and gives each batch its own conversation's
        # preceding messages as context, not the scope's most recent ones.
        extractor = rt.extractor
        self._docs: DocCache | None = None
        if isinstance(extractor, HeuristicExtractor):
            # The same extractor, fed clauses that spaCy parsed in bulk (nlp.pipe: ~5x faster here
            # than one call per clause); a clause not in the cache is parsed as usual.
            self._docs = DocCache(rt.nlp.nlp)
            extractor = HeuristicExtractor(SimpleNamespace(nlp=self._docs))
        cfg = dataclasses.replace(rt.config, messages_kept=None, context_messages=0)
        if extractor.name == "llm" and cfg.slot_supersession == "heuristic":
            # Batches extracted at the same time cannot see each other's facts, so the LLM cannot
            # name what they replace: slot supersession (applied in time order at write) does.
            cfg.slot_supersession = "always"
        self.rt = dataclasses.replace(rt, config=cfg, _extractor=extractor)
        self.n_context = rt.config.context_messages
        self.offline = extractor.name != "llm"
        self.id = new_id()
        self.report = IngestReport(ingest_id=self.id, scope=scope.as_dict())
        self.seen: set[int] = set()
        self.now = _utcnow()

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
        with self.db.transaction("ingest_start"):
            self.db.run("queries/insert_ingest_run", {
                "id": self.id, "scope_key": sc.key, "user_id": sc.user_id, "agent_id": sc.agent_id,
                "run_id": sc.run_id, "files": [p for p, _ in files], "started_at": self.now})

    def _finish(self) -> None:
        try:
            with self.db.transaction("ingest_finish"):
                self.db.run("queries/finish_ingest_run", {"id": self.id, "status": self.report.status,
                                                          "report": self.report.to_json(), "finished_at": _utcnow()})
        except MemstoreError:
            pass  # the report is returned anyway; a failed bookkeeping row must not hide it

    # -- stage 1: read, drop what is stored, spill ---------------------------------------------------
    def _read_all(self, files: list[tuple[str, str]], spill: Any) -> list[_Staged]:
        index: list[_Staged] = []
        last_when = dt.datetime.min
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
                        last_when = self._stage(buffer, spill, index, last_when)
            except (SourceFormatError, OSError) as exc:
                entry["error"] = str(exc)
                problems.append(Problem(path, str(exc), severity="error"))
            finally:
                last_when = self._stage(buffer, spill, index, last_when)
                self._flush_problems(problems)
        return index

    def _flush_problems(self, problems: list[Problem]) -> None:
        for p in problems:
            self.report.note(p)
        problems.clear()

    def _stage(self, buffer: list[SourceConversation], spill: Any, index: list[_Staged],
               last_when: dt.datetime) -> dt.datetime:
        r = self.report
        known = self._known(buffer)
        for conv in buffer:
            r.conversations["read"] += 1
            r.messages["read"] += conv.n_read
            if not conv.messages:
                r.conversations["empty"] += 1
                r.note(Problem(conv.file, "empty conversation (no chat text)", conversation=conv.id, severity="warning"))
                continue
            fresh: list[bool] = []
            keys: list[str] = []
            for m in conv.messages:
                key = m.source_message_id or ""
                token = hash((conv.format, conv.id, key))
                if (conv.id, key) in known:
                    r.messages["already_ingested"] += 1
                    fresh.append(False)
                elif token in self.seen:
                    r.note(Problem(conv.file, "repeated message (same conversation and message id)",
                                   conversation=conv.id, message=key))
                    fresh.append(False)
                else:
                    self.seen.add(token)
                    fresh.append(True)
                    keys.append(key)
                m.id = str(uuid.uuid5(_NAMESPACE, f"{self.scope.key}\x1f{conv.format}\x1f{conv.id}\x1f{key}"))
            if not keys:   # all stored before, or all repeats of messages read earlier in this run
                r.conversations["already_ingested" if any(not f for f in fresh) and known else "skipped"] += 1
                continue
            when = next((m.created_at for m, f in zip(conv.messages, fresh) if f and m.created_at), None)
            last_when = when or last_when
            data = pickle.dumps((conv, fresh, keys), protocol=pickle.HIGHEST_PROTOCOL)
            offset = spill.tell()
            spill.write(data)
            index.append(_Staged(when=last_when, seq=len(index), offset=offset, size=len(data), n_new=len(keys)))
        buffer.clear()
        return last_when

    def _known(self, buffer: list[SourceConversation]) -> set[tuple[str, str]]:
        """(conversation_id, message_key) pairs of `buffer` already in ingest_log for this scope."""
        by_format: dict[str, list[tuple[str, str]]] = {}
        for conv in buffer:
            by_format.setdefault(conv.format, []).extend((conv.id, m.source_message_id or "") for m in conv.messages)
        out: set[tuple[str, str]] = set()
        for fmt, pairs in by_format.items():
            if not pairs:
                continue
            table = pa.table({"conversation_id": [p[0] for p in pairs], "message_key": [p[1] for p in pairs]})
            with registered(self.db, "candidates", table):
                out.update(self.db.rows("queries/ingest_known_messages",
                                        {"scope_key": self.scope.key, "source_format": fmt}))
        return out

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
        for many batches at once: ONE embedding call over their probes (see context_probe) and ONE
        query. One at a time, the query embedding and the scan cost ~15 ms of CPU per batch here,
        which on a small machine is what bounds an LLM ingest."""
        n = self.rt.config.context_memories
        if not states or n <= 0:
            return
        texts = ["\n".join(m.content for m in context_probe(st.messages))[:_PROBE_CHARS] for st in states]
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
        meta = dict(self.opt.metadata or {})
        states: list[AddState] = []
        positions = [i for i, f in enumerate(fresh) if f]
        for part in split_batches(len(positions), self.opt.batch_size):
            chunk = positions[part.start:part.stop]
            msgs = [conv.messages[i] for i in chunk]
            first = chunk[0]
            st = AddState(scope=self.scope, messages=msgs, metadata=meta, infer=True,
                          timestamp=next((m.created_at for m in reversed(msgs) if m.created_at), None))
            st.now = self.now
            st.context_messages = conv.messages[max(0, first - self.n_context):first] if self.n_context else []
            states.append(st)
        return _Job(conv=conv, keys=keys, states=states)

    def _submit(self, pool: cf.ThreadPoolExecutor | None, state: AddState) -> cf.Future:
        if pool is not None:
            return pool.submit(self._prepare, state)
        fut: cf.Future = cf.Future()
        with self._timed("extract"):
            try:
                fut.set_result(self._prepare(state))
            except Exception as exc:  # noqa: BLE001 - recorded as this conversation's failure
                fut.set_exception(exc)
        return fut

    def _prepare(self, state: AddState) -> AddState:
        """The per-batch steps up to and including extraction; retryable LLM errors are retried
        with exponential backoff (on top of the client's own retries)."""
        context = list(state.context_messages)
        for step in PREPARE_STEPS[:PREPARE_STEPS.index(extract_facts)]:
            if step is not gather_context:     # context is attached in bulk (_attach_context)
                state = step(state, self.rt)
        state.context_messages = context
        for attempt in range(self.opt.retries + 1):
            try:
                return extract_facts(state, self.rt)
            except LLMError as exc:
                if not exc.retryable or attempt == self.opt.retries:
                    raise
                time.sleep(self.opt.backoff_s * (2 ** attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def _write_group(self, group: list[_Job]) -> None:
        ok: list[_Job] = []
        for job in group:
            errors = [f.exception() for f in job.futures if f.exception() is not None]
            if errors:
                self._fail(job, errors[0], extraction=True)
            else:
                job.states = [f.result() for f in job.futures]
                ok.append(job)
        if not ok:
            return
        self._analyze_embed(ok)
        with self._timed("write"):
            outcomes = self._write_or_isolate(ok)
        for outcome in outcomes:
            self._account(outcome)

    def _write_or_isolate(self, ok: list[_Job]) -> list[dict[str, Any]]:
        """One transaction for the group; if it fails, one per conversation, recording the ones
        that still fail (their facts are restored from a snapshot before each retry)."""
        snapshot = [[copy.deepcopy(st.facts) for st in job.states] for job in ok] if len(ok) > 1 else []
        try:
            with self.db.transaction("ingest"):
                return [self._write_jobs(ok)]
        except MemstoreError as exc:   # StoreWriteError: the transaction was rolled back
            if len(ok) == 1:
                self._fail(ok[0], exc, extraction=False)
                return []
        outcomes = []
        for job, facts in zip(ok, snapshot):
            for st, fs in zip(job.states, facts):
                st.facts, st.results, st.tables, st.extraction_run_id = fs, [], {}, None
            try:
                with self.db.transaction("ingest"):
                    outcomes.append(self._write_jobs([job]))
            except MemstoreError as exc:
                self._fail(job, exc, extraction=False)
        return outcomes

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

    def _analyze_embed(self, jobs: list[_Job]) -> None:
        merged = AddState(scope=self.scope, messages=[], metadata={}, infer=True)
        merged.facts = [f for job in jobs for st in job.states for f in st.facts]
        for step in PREPARE_STEPS[PREPARE_STEPS.index(extract_facts) + 1:]:
            name = {"analyze_facts": "analyze", "embed_facts": "embed"}.get(step.__name__, step.__name__)
            with self._timed(name):
                if step in _MERGED_STEPS:
                    step(merged, self.rt)
                else:           # a step added later that works per batch
                    for job in jobs:
                        job.states = [step(st, self.rt) for st in job.states]

    def _write_jobs(self, jobs: list[_Job]) -> dict[str, Any]:
        """Write whole conversations (inside the caller's transaction) through the add() write steps,
        run once per round of batches (see split_rounds) rather than once per batch: a write costs
        a few statements, not a few per batch. Each batch keeps its own extraction_runs row, and its
        memories point at it."""
        states = [st for job in jobs for st in job.states]
        added = deduplicated = superseded = 0
        writer = DeferredInserts(self.db)
        rt = dataclasses.replace(self.rt, db=writer)
        for batch in split_rounds(states, self.rt.config.dedupe_similarity):
            merged = self._write_round(batch, rt)
            added += sum(f.outcome == "added" for f in merged.facts)
            deduplicated += sum(f.outcome.startswith("duplicate") for f in merged.facts)
            superseded += sum(r.get("event") == "SUPERSEDE" for r in merged.results)
        self._log(jobs, writer)
        writer.flush()
        return {"conversations": len(jobs), "messages": sum(job.n_new for job in jobs),
                "runs": [st.extraction.status for st in states], "added": added,
                "deduplicated": deduplicated, "superseded": superseded}

    def _write_round(self, states: list[AddState], rt: Any) -> AddState:
        merged = AddState(scope=self.scope, messages=[m for st in states for m in st.messages],
                          metadata=dict(self.opt.metadata or {}), infer=True)
        merged.now = self.now
        merged.facts = [f for st in states for f in st.facts]
        first = states[0].extraction
        merged.extraction = Extraction(status="ok" if merged.facts else "empty", facts=merged.facts,
                                       extractor=first.extractor, model=first.model,
                                       prompt_version=first.prompt_version)
        for step in WRITE_STEPS:
            if step is commit_rows:
                self._split_runs(merged, states)
            merged = step(merged, rt)
        return merged

    def _split_runs(self, merged: AddState, states: list[AddState]) -> None:
        """Replace the merged state's one extraction_runs row by one row per batch (the same columns
        build_rows writes) and point each memory at its batch's run."""
        sc = self.scope
        rows = []
        run_of: dict[str, str] = {}
        for st in states:
            st.extraction_run_id = run_id = new_id()
            ex = st.extraction
            added = [f for f in st.facts if f.outcome == "added"]
            n_linked = sum(len([d for d in dict.fromkeys(f.linked_ids) if d not in f.supersedes])
                           + len(dict.fromkeys(f.supersedes)) for f in added)
            rows.append({
                "id": run_id, "scope_key": sc.key, "user_id": sc.user_id, "agent_id": sc.agent_id,
                "run_id": sc.run_id, "extractor": ex.extractor, "model": ex.model,
                "prompt_version": ex.prompt_version, "input_message_ids": [m.id for m in st.messages],
                "status": ex.status, "n_facts": len(st.facts), "n_added": len(added),
                "n_deduplicated": sum(f.outcome.startswith("duplicate") for f in st.facts), "n_linked": n_linked,
                "facts": json.dumps([{"text": f.text, "hash": f.hash, "outcome": f.outcome,
                                      "n_linked": len(f.linked_ids), "n_supersedes": len(f.supersedes),
                                      "attributed_to": f.attributed_to} for f in st.facts], ensure_ascii=False),
                "error": ex.error, "latency_ms": float(ex.latency_ms), "created_at": self.now,
                "raw_answer": ex.raw if ex.status == "malformed" else None})
            run_of.update((f.id, run_id) for f in added)
        like = merged.tables["extraction_runs"]
        merged.tables["extraction_runs"] = pa.Table.from_pylist(rows).select(like.column_names).cast(like.schema)
        mem = merged.tables["memories"]
        col = mem.column_names.index("extraction_run_id")
        merged.tables["memories"] = mem.set_column(col, "extraction_run_id", pa.array(
            [run_of[i] for i in mem.column("id").to_pylist()], pa.string()))

    def _log(self, jobs: list[_Job], writer: DeferredInserts) -> None:
        """ingest_log rows: each stored source message, its messages.id and its extraction run."""
        sc = self.scope
        cols: dict[str, list] = {k: [] for k in ("source_format", "conversation_id", "message_key", "message_id",
                                                 "extraction_run_id", "source_file")}
        for job in jobs:
            keys = iter(job.keys)
            for st in job.states:
                for m in st.messages:
                    cols["source_format"].append(job.conv.format)
                    cols["conversation_id"].append(job.conv.id)
                    cols["message_key"].append(next(keys))
                    cols["message_id"].append(m.id)
                    cols["extraction_run_id"].append(st.extraction_run_id)
                    cols["source_file"].append(job.conv.file)
        n = len(cols["message_id"])
        writer.insert_arrow("ingest_log", pa.table({
            "scope_key": [sc.key] * n, "user_id": pa.array([sc.user_id] * n, pa.string()),
            "agent_id": pa.array([sc.agent_id] * n, pa.string()), "run_id": pa.array([sc.run_id] * n, pa.string()),
            **cols, "ingest_id": [self.id] * n, "ingested_at": pa.array([self.now] * n, pa.timestamp("us"))}))

    def _account(self, outcome: dict[str, Any]) -> None:
        r = self.report
        r.conversations["ingested"] += outcome["conversations"]
        r.messages["stored"] += outcome["messages"]
        for status in outcome["runs"]:
            r.extraction_runs[status] += 1
        for k in ("added", "deduplicated", "superseded"):
            r.memories[k] += outcome[k]

    def _fail(self, job: _Job, exc: BaseException, *, extraction: bool) -> None:
        """Record a conversation that could not be stored; a re-run tries it again."""
        r = self.report
        r.conversations["failed"] += 1
        r.messages["failed"] += job.n_new
        stage = "extraction" if extraction else "write"
        r.note(Problem(job.conv.file, f"{stage} failed: {type(exc).__name__}: {exc}"[:1000],
                       conversation=job.conv.id, severity="failed"))
        if extraction and isinstance(exc, LLMError):
            r.extraction_runs["llm_error"] += 1
            sc, cfg = self.scope, self.rt.config.llm
            try:
                with self.db.transaction("record_failed_run"):
                    self.db.run("queries/insert_failed_run", {
                        "id": new_id(), "scope_key": sc.key, "user_id": sc.user_id, "agent_id": sc.agent_id,
                        "run_id": sc.run_id, "extractor": "llm", "model": cfg.model,
                        "prompt_version": getattr(self.rt.extractor, "prompt_version", None),
                        "input_message_ids": [m.id for st in job.states for m in st.messages],
                        "error": str(exc)[:2000], "latency_ms": None, "created_at": self.now})
            except MemstoreError:
                pass


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)

