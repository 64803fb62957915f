"""`Memory`: the public API. It opens the store, validates arguments and calls one pipeline;
the work lives in `pipeline/`, `retrieval/` and `governance/`.

>>> import tempfile, os
>>> m = Memory(os.path.join(tempfile.mkdtemp(), "doc.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> out = m.add("I'm vegetarian and I live in Boston", user_id="alice")
>>> sorted(r["memory"] for r in out["results"])
['Alice is vegetarian', 'Alice lives in Boston']
>>> m.search("Boston", filters={"user_id": "alice"})["results"][0]["memory"]
'Alice lives in Boston'
>>> m.close()
"""
from __future__ import annotations

import os
import time
from typing import Any

import polars as pl

from memstore.api.analysis import AnalysisAPI
from memstore.api.governance import GovernanceAPI
from memstore.api.ingest import IngestAPI
from memstore.api.interop import InteropAPI
from memstore.api.stages import AddStages
from memstore.api.tokens import TokenAPI
from memstore.api.truth import TruthAPI
from memstore.core.checks import check_limit
from memstore.core.config import MemoryConfig
from memstore.core.errors import ArgumentError, IdentityConflictError, MemstoreError, NotFoundError
from memstore.core.identity import Scope, check_metadata
from memstore.core.model import AddState, PreparedAdd
from memstore.core.records import history_record, memory_record, with_sources
from memstore.core.scope_rule import canonical_id
from memstore.core.timeutil import parse_time
from memstore.governance.forget_scope import finish_pending
from memstore.pipeline.add import commit_add, commit_adds, prepare, prepare_in_pool, prepare_models, prepare_text, run_add
from memstore.pipeline.validate_input import normalise_messages
from memstore.providers.factory import build_embedder
from memstore.retrieval.filters import check_filters, trim_identity
from memstore.runtime import Runtime, given_vector
from memstore.store.database import Database
from memstore.store.recluster import attach_maintenance
from memstore.store.scope_cache import ScopeCache

_ID_HINT = "ids are the strings add() returned: list them with get_all(user_id=...)"


class Memory(TruthAPI, GovernanceAPI, IngestAPI, AnalysisAPI, InteropAPI, TokenAPI):
    """Long-term memory in one DuckDB file.

    `Memory()` opens ./data/memstore.duckdb with offline models; `Memory("runs/a.duckdb")` another
    file; `Memory(config={...})` or `Memory.from_config({...})` selects LLM, embedder, thresholds.
    """

    def __new__(cls, path: str | os.PathLike | None = None, *, config: MemoryConfig | dict | None = None,
                **kwargs: Any) -> Any:
        # A URL, or a store that a running `memstore serve` owns, gives the HTTP client instead:
        # same methods, same return shapes (see memstore/client/).
        if cls is Memory and not kwargs.get("embedded", False):
            from memstore.api.connect import client_for

            client = client_for(path if path is not None else _configured_path(config))
            if client is not None:
                return client
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike | None = None, *, config: MemoryConfig | dict | None = None,
                 embedded: bool = False, embedder: Any = None) -> None:
        """`embedded=True` always opens the file in this process (what `memstore serve` does).
        `config` may be memstore's dict or mem0's (memstore/core/mem0_config.py maps it).
        `embedder=` is any object with `name`, `dim` and `embed(texts)` (providers/protocols.py),
        used instead of the configured one (e.g. a LangGraph store's own embedding function)."""
        from memstore.core.mem0_config import from_mem0_or_ours

        cfg, self._mem0 = from_mem0_or_ours(config)
        if path is not None:
            cfg.path = os.fspath(path)
        elif os.environ.get("MEMSTORE_PATH") and not (isinstance(config, dict) and "path" in config):
            cfg.path = os.environ["MEMSTORE_PATH"]
        self.config = cfg
        embedder = embedder if embedder is not None else build_embedder(cfg.embedder)
        cache = ScopeCache(cfg.scope_cache_rows, max_bytes=cfg.scope_cache_mb << 20)  # this Memory's only
        db = Database(cfg.path, dim=embedder.dim, embedder=embedder.name, read_only=cfg.read_only,
                      scope_cache=cache, threads=cfg.threads, memory_limit=cfg.memory_limit)
        if not cfg.read_only:       # the store keeps itself sorted by scope (its commits start it)
            attach_maintenance(db, min_rows=cfg.search.auto_cluster_min_rows, share=cfg.search.auto_cluster_share,
                               slice_rows=cfg.search.auto_cluster_slice_rows)
        self._rt = Runtime(config=cfg, db=db, embedder=embedder, cache=cache)
        self._pool: Any = None           # worker processes for prepare (start_workers)
        self._reads = _read_log(db, cfg)     # the audit of reads (config audit.reads), or None
        # An erasure a crash or a full disk interrupted is finished before the store serves
        # anything (see memstore/governance/erasure_journal.py); a failure stays journaled and
        # doctor() reports it.
        finish_pending(db, raise_errors=False)
        if self._mem0 is not None and self._mem0.reranker is not None:
            from memstore.retrieval.rerank_llm import LLMReranker

            self._rt.reranker = LLMReranker(self._mem0.reranker, self._mem0.scoring_prompt)

    @classmethod
    def from_config(cls, config: MemoryConfig | dict[str, Any]) -> Memory:
        """Build from a config dict: memstore's, or mem0's (`{"llm": {"provider": ..., "config": {...}},
        "embedder": ..., "vector_store": ..., "history_db_path": ...}`, see "Moving from mem0" in the
        README); unknown keys and providers memstore cannot call raise ConfigError naming them."""
        return cls(config=config)

    # -- plumbing ------------------------------------------------------------------------------
    @property
    def db(self) -> Database:
        return self._rt.db

    @property
    def path(self) -> str:
        return self.config.path

    @property
    def read_log(self) -> Any:
        """The audit of this store's reads (memstore/audit/read_log.py), or None when
        `audit.reads` is off: `stats`, `flush()`, `hand_over()` (a server's group committer)."""
        return self._reads

    def close(self) -> None:
        """Close the DuckDB file (other processes can open it afterwards) and stop the workers."""
        self.start_workers(0)
        if self._reads is not None:
            self._reads.close()
        self._rt.db.close()

    # -- worker processes ----------------------------------------------------------------------
    def start_workers(self, workers: int) -> list[int]:
        """Prepare adds in `workers` processes from now on (the extractor call, spaCy, the
        embedder); this process keeps the store: it reads the context and commits. 0 stops them
        (adds are prepared in this process again). Returns the workers' PIDs once their models are
        loaded. `memstore serve --workers N` and `ingest(workers=N)` call it.

        >>> import tempfile, os
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "w.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> len(m.start_workers(1))
        1
        >>> [r["memory"] for r in m.add("I live in Lisbon", user_id="ana")["results"]]
        ['Ana lives in Lisbon']
        >>> m.close()
        """
        from memstore.pipeline.workers import PreparePool, check_workers

        workers = check_workers(workers)
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.close()
        if workers == 0:
            return []
        pool = PreparePool(self.config, workers)
        pool.warm()
        self._pool = pool
        return pool.pids()

    @property
    def workers(self) -> int:
        """How many worker processes prepare adds (0: this process does)."""
        return self._pool.workers if self._pool is not None else 0

    def worker_pids(self) -> list[int]:
        """The PIDs of the worker processes now (they change when a dead one is replaced)."""
        return self._pool.pids() if self._pool is not None else []

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({self.config.path!r})"

    # -- write ---------------------------------------------------------------------------------
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
            prompt: str | None = None, timestamp: Any = None, expiration_date: Any = None,
            actor_id: str | None = None, memory_type: str | None = None, **_unsupported: Any) -> dict[str, Any]:
        """Extract facts from `messages` (ONE extractor call) and store them in ONE transaction.

        Returns {"results": [{"id", "memory", "event": "ADD"}...], "extraction": {...}}: exactly what
        was committed. `infer=False` stores each message as a memory. `timestamp` is when the
        conversation happened (sets valid_from). Messages take mem0's shapes (OpenAI chat format:
        content parts, tool calls, tool results). `memory_type="procedural_memory"` with `agent_id`
        stores ONE memory summarising the agent's run (metadata `memory_type`, as mem0).
        """
        if _unsupported:
            raise ArgumentError(f"add() got unexpected argument(s) {sorted(_unsupported)}",
                                hint="see help(Memory.add): messages, user_id, agent_id, run_id, metadata, infer, "
                                     "prompt, timestamp, expiration_date, actor_id, memory_type")
        state = self._add_state(messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
                                infer=infer, prompt=prompt, timestamp=timestamp, expiration_date=expiration_date,
                                actor_id=actor_id, memory_type=memory_type)
        if self._pool is not None:
            return add_result(commit_add(prepare_in_pool(state, self._rt, self._pool), self._rt))
        return add_result(run_add(state, self._rt))

    # -- add() in two halves (what the server's group commit and worker processes use) ----------
    def prepare_add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
                    run_id: str | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
                    prompt: str | None = None, timestamp: Any = None, expiration_date: Any = None,
                    actor_id: str | None = None, memory_type: str | None = None,
                    models: bool = True) -> PreparedAdd:
        """add()'s first half: check the arguments, extract (the ONE LLM call) and, unless
        `models=False`, analyse and embed. Nothing is stored and no lock is held; the result is
        plain data (it pickles). Pass it to `commit_prepared` — with `models=False`, through
        `prepare_models` first (spaCy and the embedder then run once for many adds).

        >>> import tempfile, os
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "p.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> ready = [m.prepare_add("I live in Lisbon", user_id="ana"), m.prepare_add("I'm a nurse", user_id="bo")]
        >>> [[r["memory"] for r in out["results"]] for out in m.commit_prepared(ready)]
        [['Ana lives in Lisbon'], ['Bo is a nurse']]
        >>> m.close()
        """
        state = self._add_state(messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
                                infer=infer, prompt=prompt, timestamp=timestamp, expiration_date=expiration_date,
                                actor_id=actor_id, memory_type=memory_type)
        if models and self._pool is not None:
            return prepare_in_pool(state, self._rt, self._pool)
        return prepare(state, self._rt) if models else prepare_text(state, self._rt)

    def prepare_models(self, prepared: list[PreparedAdd]) -> list[PreparedAdd | MemstoreError]:
        """Run spaCy and the embedder once for many adds that `prepare_add(models=False)` prepared;
        per add, the add ready to commit, or the error it alone raised."""
        _check_prepared(prepared)
        return prepare_models(list(prepared), self._rt)

    def commit_prepared(self, prepared: list[PreparedAdd]) -> list[dict[str, Any] | MemstoreError]:
        """add()'s second half for many prepared adds in ONE transaction; per add, exactly what
        add() would have returned, or the error that add alone raised (the others still commit)."""
        _check_prepared(prepared)
        outs = commit_adds(list(prepared), self._rt)
        return [out if isinstance(out, BaseException) else add_result(out) for out in outs]

    def _add_state(self, messages: Any, *, user_id: str | None, agent_id: str | None, run_id: str | None,
                   metadata: dict[str, Any] | None, infer: bool, prompt: str | None, timestamp: Any,
                   expiration_date: Any, actor_id: str | None, memory_type: str | None = None) -> AddState:
        """add()'s arguments checked and turned into the pipeline's state."""
        mem0 = getattr(self, "_mem0", None)
        return add_state(messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata, infer=infer,
                         prompt=prompt, timestamp=timestamp, expiration_date=expiration_date, actor_id=actor_id,
                         memory_type=memory_type, default_prompt=mem0.custom_instructions if mem0 else None)

    def update(self, memory_id: str, data: str | None = None, *, text: str | None = None,
               metadata: dict[str, Any] | None = None, expiration_date: Any = None,
               actor_id: str | None = None, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None) -> dict[str, Any]:
        """Change a memory's text and/or metadata in one transaction; identity is immutable.
        Changed text is re-embedded and its entities and keywords re-linked. With `user_id=` /
        `agent_id=` / `run_id=`, the memory must belong to that scope (else NotFoundError)."""
        from memstore.core.checks import check_text
        from memstore.governance.update_memory import update_memory

        self._scoped_memory(memory_id, user_id, agent_id, run_id)
        new_text = text if text is not None else data
        if new_text is not None:
            check_text(new_text, "text")
        if metadata is not None:
            check_metadata(metadata)
        exp_at = parse_time(expiration_date, "expiration_date") if expiration_date is not None else None
        return update_memory(self._rt, memory_id, new_text, metadata, exp_at, actor_id)

    def delete(self, memory_id: str, *, actor_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
        """Delete one memory and every row that names it (postings, keywords, links) in one transaction.
        With `user_id=` / `agent_id=` / `run_id=`, it must belong to that scope (else NotFoundError)."""
        from memstore.governance.delete_memories import delete_memories

        self._scoped_memory(memory_id, user_id, agent_id, run_id)
        n = delete_memories(self._rt, ids=[memory_id], actor_id=actor_id)
        if n == 0:
            raise NotFoundError(f"no memory with id {memory_id!r}", hint=_ID_HINT)
        return {"message": "Memory deleted successfully!", "deleted": n}

    def _scoped_memory(self, memory_id: Any, user_id: Any, agent_id: Any, run_id: Any) -> dict[str, Any] | None:
        """Check the id; with a scope given, the memory row, which must exist in that scope: else
        NotFoundError, the same as for an unknown id (ids cannot be probed across scopes)."""
        from memstore.core.checks import check_id, check_scope_args, scope_matches

        check_id(memory_id)
        scope = check_scope_args(user_id, agent_id, run_id)
        if not scope:
            return None
        rows = self.db.dicts("queries/get_memory", {"id": memory_id})
        if not rows or not scope_matches(rows[0], **scope):
            raise NotFoundError(f"no memory with id {memory_id!r} in this scope", hint=_ID_HINT)
        return rows[0]

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None, actor_id: str | None = None) -> dict[str, Any]:
        """Delete every memory of the scope (one transaction). Messages and extraction runs stay:
        use `forget` to erase a scope completely."""
        from memstore.governance.delete_memories import delete_memories

        scope = Scope.from_kwargs(user_id, agent_id, run_id)
        n = delete_memories(self._rt, scope=scope, actor_id=actor_id)
        return {"message": f"Deleted {n} memories", "deleted": n}

    def reset(self) -> dict[str, Any]:
        """Remove every memory, message, run, history and ingest record in one transaction
        (schema, erasure receipts, export registry and retention policies stay). Irreversible.
        A file ingested before a reset is ingested again afterwards."""
        from memstore.governance.reset_store import reset_store

        return reset_store(self.db)

    # -- read ----------------------------------------------------------------------------------
    def get(self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None) -> dict[str, Any] | None:
        """One memory by id (any status), or None. With `user_id=` / `agent_id=` / `run_id=` it
        must belong to that scope: else NotFoundError (also for an unknown id). A memory that was
        added again (the same text in its scope) lists every occurrence under `sources`."""
        t0 = time.perf_counter()
        row = self._scoped_memory(memory_id, user_id, agent_id, run_id)
        if row is None:
            rows = self.db.dicts("queries/get_memory", {"id": memory_id})
            row = rows[0] if rows else None
        rec = with_sources(memory_record(row), self.db.dicts("queries/memory_sources", {"id": row["id"]})) \
            if row is not None else None
        if self._reads is not None:
            self._reads.records("get", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id},
                                [rec] if rec is not None else [], t0)
        return rec

    def get_all(self, *, filters: dict[str, Any] | None = None, user_id: str | None = None,
                agent_id: str | None = None, run_id: str | None = None, top_k: int = 100,
                include_superseded: bool = False, show_expired: bool = False,
                as_of: Any = None) -> dict[str, Any]:
        """Memories of a scope, newest first. Current and unexpired only unless asked otherwise;
        `as_of="2023-05-01"` gives what was current then."""
        from memstore.retrieval.list_memories import list_memories

        t0 = time.perf_counter()
        filters = merge_identity(filters, user_id, agent_id, run_id)
        rows = list_memories(self.db, filters, limit=check_limit(top_k, "top_k"), include_superseded=include_superseded,
                             show_expired=show_expired, as_of=parse_time(as_of, "as_of") if as_of is not None else None)
        if self._reads is not None:
            self._reads.records("get_all", filters, rows, t0)
        return {"results": rows}

    def search(self, query: str, *, filters: dict[str, Any] | None = None, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None, top_k: int | None = None,
               threshold: float | None = None, explain: bool = False, include_superseded: bool = False,
               show_expired: bool = False, as_of: Any = None, rerank: bool = False,
               channels: tuple[str, ...] = ("semantic", "keyword", "entity"),
               weights: dict[str, float] | None = None) -> dict[str, Any]:
        """Ranked memories for `query` within the filtered scope (an identity key is required).

        Candidates come from three channels — semantic (exact cosine over the scope), keyword
        (BM25 over lemmas) and entity (memories linked to entities the query names) — and are
        fused in NumPy (memstore/retrieval/fusion.py; sql/queries/fuse_scores.sql is the
        golden-tested reference). Scores are in [0, 1]; `threshold` drops results below it. `explain=True` adds each result's per-signal scores and recalling channels.
        `rerank=True` applies `memory.reranker(query, results) -> scores` (fused order on failure).

        >>> # m.search("what does alice eat?", filters={"user_id": "alice"}, top_k=5)
        """
        from memstore.core.checks import check_text
        from memstore.retrieval.search import run_search

        t0 = time.perf_counter()
        check_text(query, "query", allow_empty=True)
        filters = merge_identity(filters, user_id, agent_id, run_id)
        channels = (channels,) if isinstance(channels, str) else tuple(channels)
        out = self._rt.one_model(lambda: run_search(
            self._rt, query, filters=filters, top_k=self.config.top_k if top_k is None else top_k,
            threshold=self.config.threshold if threshold is None else threshold,
            explain=explain, include_superseded=include_superseded, show_expired=show_expired,
            as_of=parse_time(as_of, "as_of") if as_of is not None else None, rerank=rerank,
            channels=channels, weights=weights))
        if self._reads is not None:
            self._reads.search(query, filters, channels, out, t0)
        return out

    def search_with_vector(self, vector: Any, query: str, **kwargs: Any) -> dict[str, Any]:
        """`search(query, **kwargs)` with the query's embedding given (`vector`, shape (1, dim)),
        not computed here: a server's front process embeds the query and the owner searches with
        its vector. Results equal `search(query, **kwargs)` when `vector` is the store embedder's.

        >>> import tempfile, os
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "v.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> _ = m.add("I play the cello", user_id="ana", infer=False)
        >>> v = m.stages.embed_query("cello")
        >>> m.search_with_vector(v, "cello", user_id="ana")["results"][0]["memory"]
        'I play the cello'
        >>> m.close()
        """
        with given_vector(query, vector):
            return self.search(query, **kwargs)

    @property
    def stages(self) -> AddStages:
        """The add's stages on this store, by name (memstore/api/stages.py): what a server's owner
        process runs for its front processes (context, commit, failed-run records)."""
        return AddStages(self._rt)

    def explain_search(self, query: str, *, filters: dict[str, Any] | None = None, user_id: str | None = None,
                       agent_id: str | None = None, run_id: str | None = None, limit: int = 1000,
                       include_superseded: bool = False, show_expired: bool = False, as_of: Any = None,
                       channels: tuple[str, ...] = ("semantic", "keyword", "entity"),
                       weights: dict[str, float] | None = None, **kwargs: Any) -> pl.DataFrame:
        """The whole candidate table of a search as a Polars frame: one row per candidate with
        semantic / keyword / bm25 / entity / recency / score, the channels that recalled it
        (by_semantic, by_keyword, by_entity), its text and status, ranked. `include_superseded`,
        `show_expired`, `as_of`, `channels` and `weights` as for search() (named, so a client of a
        server can pass them too)."""
        from memstore.retrieval.search import explain_frame

        t0 = time.perf_counter()
        filters = merge_identity(filters, user_id, agent_id, run_id)
        out = self._rt.one_model(lambda: explain_frame(
            self._rt, query, filters=filters, limit=limit, include_superseded=include_superseded,
            show_expired=show_expired, as_of=parse_time(as_of, "as_of") if as_of is not None else None,
            channels=tuple(channels), weights=weights, **kwargs))
        if self._reads is not None:
            self._reads.frame("explain_search", query, filters, out, t0)
        return out

    def search_all(self, query: str, *, top_k: int = 10, where: dict[str, Any] | None = None,
                   exact: bool = False, include_superseded: bool = False,
                   show_expired: bool = False) -> dict[str, Any]:
        """ANALYSTS ONLY: semantic search across every scope on the HNSW index (built on first use,
        persisted with the store). `where` takes the same filter syntax as search but needs no
        identity; `exact=True` scans instead (ground truth). Agents must use `search`."""
        from memstore.retrieval.search_all import run_search_all

        t0 = time.perf_counter()
        out = self._rt.one_model(lambda: run_search_all(self._rt, query, top_k=top_k, where=where, exact=exact,
                                                        include_superseded=include_superseded,
                                                        show_expired=show_expired))
        if self._reads is not None:
            self._reads.search(query, where, ("semantic",), out, t0, method="search_all")
        return out

    def reembed(self, embedder: str | dict[str, Any], *, batch: int = 512, embed: Any = None,
                progress: Any = None) -> dict[str, Any]:
        """Re-embed every memory with another embedding model: `embedder` is `PROVIDER[:MODEL]`
        ("local", "openai:text-embedding-3-small", "hashing:384") or an `embedder` config section.
        The new vectors are made batch by batch while searches keep using the old model and
        vectors, then swapped in with the new embedder in ONE transaction (the HNSW index and the
        search snapshots follow; a search that ran across the swap runs again: no search mixes the
        two models). Resumable: a job cut short is completed by the next call to the same model.
        `embed(texts) -> vectors` makes the vectors instead of the embedder here (on Ray actors:
        `memstore reembed --on-ray`, memstore/on_ray/reembed.py). `progress(done, total)` after each batch.
        Afterwards open the store with the new embedder. Returns the job's figures.

        >>> import tempfile, os
        >>> from memstore import Memory
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "r.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> _ = m.add("I live in Lisbon", user_id="ana", infer=False)
        >>> r = m.reembed("hashing:384"); r["status"], r["memories"]
        ('done', 1)
        >>> m.close()
        """
        from memstore.core.config import EmbedderConfig
        from memstore.governance.reembed import reembed_store
        from memstore.providers.factory import build_embedder, embedder_spec

        section = embedder_spec(embedder) if isinstance(embedder, str) else dict(embedder)
        cfg = EmbedderConfig(**section)
        new = build_embedder(cfg)
        out = reembed_store(self._rt, new, embed=embed, batch=batch, progress=progress)
        self.config.embedder = cfg
        if self._pool is not None:          # worker processes embed adds: they take the new model too
            self.start_workers(self._pool.workers)
        return out


    def optimize(self) -> dict[str, Any]:
        """Re-cluster memories and postings by scope (after bulk ingest) so per-user scans skip
        other users' row groups; every slice now (memstore/store/recluster.py). Returns rows per
        table and seconds."""
        from memstore.store.optimize import optimize_store

        return optimize_store(self.db)

    @property
    def reranker(self) -> Any:
        """Optional callable (query, results) -> list of scores, used by search(rerank=True)."""
        return self._rt.reranker

    @reranker.setter
    def reranker(self, fn: Any) -> None:
        self._rt.reranker = fn

    def history(self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                run_id: str | None = None) -> list[dict[str, Any]]:
        """Every event of a memory, oldest first (ADD, UPDATE, SUPERSEDE, DELETE, ...). With
        `user_id=` / `agent_id=` / `run_id=` the events must be of that scope: else NotFoundError."""
        from memstore.core.checks import check_id, check_scope_args, scope_matches

        check_id(memory_id)
        scope = check_scope_args(user_id, agent_id, run_id)
        rows = self.db.dicts("queries/history", {"memory_id": memory_id})
        if scope and (not rows or not all(scope_matches(r, **scope) for r in rows)):
            raise NotFoundError(f"no memory with id {memory_id!r} in this scope", hint=_ID_HINT)
        return [history_record(r) for r in rows]


def add_state(messages: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
              metadata: dict[str, Any] | None = None, infer: bool = True, prompt: str | None = None,
              timestamp: Any = None, expiration_date: Any = None, actor_id: str | None = None,
              memory_type: str | None = None, default_prompt: str | None = None) -> AddState:
    """add()'s arguments checked and turned into the pipeline's state, without a store (what a
    server's front process builds before it prepares the add). `default_prompt`: a mem0 config's
    custom_instructions, used when neither `prompt` nor `memory_type` is given.

    >>> add_state("I like tea", user_id="ana").scope.key
    'u=ana|a=|r='
    """
    from memstore.pipeline.summarise_procedure import check_memory_type

    scope = Scope.from_kwargs(user_id, agent_id, run_id)
    memory_type = check_memory_type(memory_type, agent_id)
    if prompt is None and memory_type is None:
        prompt = default_prompt
    return AddState(scope=scope, messages=normalise_messages(messages, procedural=memory_type is not None),
                    metadata=metadata or {}, memory_type=memory_type,
                    infer=infer if memory_type is None else True, actor_id=actor_id, prompt=prompt,
                    timestamp=parse_time(timestamp, "timestamp") if timestamp is not None else None,
                    expiration_date=parse_time(expiration_date, "expiration_date")
                    if expiration_date is not None else None)


def add_result(state: AddState) -> dict[str, Any]:
    """What add() returns for a committed state: exactly what was stored."""
    ex = state.extraction
    return {"results": state.results,
            "extraction": {"id": state.extraction_run_id, "status": ex.status if ex else None,
                           "facts": len(state.facts),
                           "deduplicated": sum(f.outcome.startswith("duplicate") for f in state.facts),
                           "error": ex.error if ex else None},
            "timings": dict(state.timings)}


def _check_prepared(prepared: Any) -> None:
    if not isinstance(prepared, (list, tuple)) or not all(isinstance(p, AddState) for p in prepared):
        raise ArgumentError("expected a list of prepared adds",
                            hint="build each with Memory.prepare_add(messages, user_id=...)")


def _read_log(db: Database, cfg: MemoryConfig) -> Any:
    """The store's read log when `audit.reads` is on (a read-only open records nothing)."""
    if cfg.audit.reads != "on" or cfg.read_only:
        return None
    from memstore.audit.read_log import ReadLog

    return ReadLog(db, cfg.audit)


def _configured_path(config: MemoryConfig | dict | None) -> str:
    """The store a Memory built with no path would open (config path, $MEMSTORE_PATH, default)."""
    if isinstance(config, MemoryConfig):
        return config.path
    if isinstance(config, dict) and "path" in config:
        return str(config["path"])
    return os.environ.get("MEMSTORE_PATH") or MemoryConfig().path


def merge_identity(filters: dict[str, Any] | None, user_id: str | None, agent_id: str | None,
                    run_id: str | None) -> dict[str, Any]:
    filters = trim_identity(dict(check_filters(filters)))
    for key, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is None:
            continue
        value = canonical_id(value, key)        # the one scope rule (core/scope_rule.py)
        if key in filters and filters[key] != value:
            raise IdentityConflictError(f"{key} given twice with different values (as an argument and in filters)",
                                        hint=f"give {key} once", key=key)
        filters[key] = value
    return filters
