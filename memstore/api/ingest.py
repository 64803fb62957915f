"""Memory API: ingest features (mixed into memstore.Memory)."""
from __future__ import annotations

import os
from typing import Any

from memstore.api.args import check_path
from memstore.core.errors import InvalidInputError, MissingFileError
from memstore.core.identity import Scope
from memstore.ingest.options import IngestOptions
from memstore.ingest.report import IngestReport
from memstore.ingest.runner import run_ingest


class IngestAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def ingest(self, paths: str | os.PathLike | list[str | os.PathLike], *, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None, format: str = "auto",
               mapping: dict[str, str] | str | None = None, batch_size: int = 20, concurrency: int = 8,
               retries: int = 3, backoff_s: float = 1.0, max_message_chars: int | None = None,
               commit_messages: int = 2000, metadata: dict[str, Any] | None = None,
               progress: bool | None = None, workers: int | None = None) -> IngestReport:
        """Load chat exports into this scope: ChatGPT or Claude `conversations.json` (or their .zip),
        LoCoMo-style JSON, or JSONL / CSV / Parquet rows of messages (`mapping` names their columns,
        e.g. "role=author,content=text,ts=created").

        Idempotent and resumable: messages already ingested for the scope are skipped, so running
        the same files again adds nothing and a run that was killed completes the rest. Each
        conversation is stored whole in one transaction; every stored message keeps its source
        (file, conversation id, message id) and every memory lists the messages it came from.
        Ingested messages are all kept (config `messages_kept` prunes only add()'s messages).

        `workers=N` runs spaCy and the embedder in N worker processes (memstore/pipeline/workers.py;
        the ones `start_workers` or `memstore serve` already runs, else N started for this ingest);
        0 runs them here; None (default) uses running workers if any.

        Returns an IngestReport (`print(report)` for a summary, `.to_dict()` for the figures); it is
        also stored in the `ingest_runs` table.

        >>> import tempfile, os
        >>> from memstore import Memory
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "d.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> p = os.path.join(tempfile.mkdtemp(), "chat.jsonl")
        >>> _ = open(p, "w").write('{"role": "user", "content": "I live in Lisbon", "created_at": "2024-03-01T10:00"}\\n')
        >>> r = m.ingest(p, user_id="ana")
        >>> r.messages["stored"], r.memories["added"], m.ingest(p, user_id="ana").messages["already_ingested"]
        (1, 1, 1)
        >>> m.close()
        """
        scope = Scope.from_kwargs(user_id, agent_id, run_id)
        iterable = hasattr(paths, "__iter__") and not isinstance(paths, (bytes, dict))
        items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths) if iterable else []
        if not items:
            raise InvalidInputError(f"ingest() needs a path or a list of paths, got {items!r:.80}",
                                    hint='e.g. m.ingest("conversations.json", user_id="alice")')
        items = [check_path(p, "paths") for p in items]
        for p in items:
            if not os.path.exists(p):
                raise MissingFileError(f"no such file: {p}", hint="check the path (relative paths start at the "
                                       f"working directory, {os.getcwd()})", path=p)
        options = IngestOptions(format=format, mapping=mapping, batch_size=batch_size, concurrency=concurrency,
                                retries=retries, backoff_s=backoff_s,
                                max_message_chars=max_message_chars or self._rt.config.limits.max_message_chars,
                                commit_messages=commit_messages, metadata=metadata, progress=progress)
        from memstore.pipeline.workers import PreparePool, check_workers

        pool, own = getattr(self, "_pool", None), None
        if workers is not None and check_workers(workers) == 0:
            pool = None
        elif workers and pool is None:
            pool = own = PreparePool(self.config, workers)
        try:
            return run_ingest(self._rt, [os.fspath(p) for p in items], scope, options, pool=pool)
        finally:
            if own is not None:
                own.close()

    def ingest_known(self, conversations: list[dict[str, Any]], *, format: str, user_id: str | None = None,
                     agent_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
        """Which of these source messages this scope already holds (what an ingest prepared
        elsewhere skips: memstore/ray/). `conversations` is
        `[{"conversation": ID, "keys": [MESSAGE_KEY, ...]}, ...]` of source format `format`.
        Returns `{"known": [[ID, KEY], ...], "embedder": NAME, "dim": N}` (the store's embedder:
        what prepared facts must be embedded with).

        >>> import tempfile, os
        >>> from memstore import Memory
        >>> m = Memory(os.path.join(tempfile.mkdtemp(), "d.duckdb"), config={"embedder": {"provider": "hashing"}})
        >>> m.ingest_known([{"conversation": "c1", "keys": ["m1"]}], format="jsonl", user_id="ana")["known"]
        []
        >>> m.close()
        """
        from memstore.ingest.prepared_commit import known_messages

        scope = Scope.from_kwargs(user_id, agent_id, run_id)
        if not isinstance(format, str) or not 0 < len(format) <= 40:
            raise InvalidInputError(f"format must be a source format's name, got {format!r:.60}",
                                    hint="e.g. locomo, chatgpt, jsonl, dataset")
        pairs: list[tuple[str, str]] = []
        if not isinstance(conversations, list):
            raise InvalidInputError("conversations must be a list of {\"conversation\": ID, \"keys\": [...]}")
        for i, c in enumerate(conversations):
            if (not isinstance(c, dict) or not isinstance(c.get("conversation"), str)
                    or not isinstance(c.get("keys"), list) or not all(isinstance(k, str) for k in c["keys"])):
                raise InvalidInputError(f"conversations[{i}] is not {{\"conversation\": ID, \"keys\": [KEY, ...]}}",
                                        hint="ids and keys are text")
            pairs.extend((c["conversation"], k) for k in c["keys"])
        known = known_messages(self._rt, scope, format, pairs)
        return {"known": sorted([list(p) for p in known]), "embedder": self._rt.db.meta("embedder"),
                "dim": self._rt.db.dim}

    def ingest_prepared(self, conversations: list[dict[str, Any]], *, user_id: str | None = None,
                        agent_id: str | None = None, run_id: str | None = None,
                        ingest_id: str | None = None) -> dict[str, Any]:
        """Commit conversations prepared elsewhere (extracted, analysed and embedded on Ray
        workers: memstore/ray/), in order, into this scope. Each item is one conversation in the
        documented JSON format of memstore/wire/prepared.py (checked field by field: no pickle),
        embedded with this store's embedder. Idempotent: a conversation whose messages are
        already stored is answered `already_ingested` and stores nothing.

        Returns `{"conversations": [{"conversation", "status": stored | already_ingested | failed,
        "messages", "error", "memories", "extraction_runs"}, ...]}` in the order given."""
        from memstore.core.errors import PreparedConversationError
        from memstore.ingest.prepared_commit import commit_conversations
        from memstore.wire.prepared import decode_conversation

        scope = Scope.from_kwargs(user_id, agent_id, run_id)
        if not isinstance(conversations, list):
            raise PreparedConversationError("conversations must be a list of ingest conversations",
                                    hint="see memstore/wire/prepared.py for the format")
        if ingest_id is not None and (not isinstance(ingest_id, str) or not 0 < len(ingest_id) <= 200):
            raise InvalidInputError("ingest_id must be a short text (up to 200 characters)")
        embedder, dim = self._rt.db.meta("embedder"), self._rt.db.dim
        jobs = []
        for i, c in enumerate(conversations):
            try:
                jobs.append(decode_conversation(c, scope, dim=dim, embedder=embedder, prepared=True))
            except PreparedConversationError as exc:
                bare = exc.args[0].removesuffix(f" — {exc.hint}") if exc.hint else exc.args[0]
                raise PreparedConversationError(f"conversations[{i}]: {bare}", hint=exc.hint) from None
        return {"conversations": commit_conversations(self._rt, scope, jobs, ingest_id=ingest_id)}
