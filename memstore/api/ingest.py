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
                                max_message_chars=max_message_chars or self._rt.config.max_message_chars,
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
