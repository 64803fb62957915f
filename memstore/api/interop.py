"""Memory API: moving in from other memory layers (mixed into memstore.Memory)."""
from __future__ import annotations

import os
from typing import Any

from memstore.api.args import check_path


class InteropAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def import_mem0(self, qdrant_path: str | os.PathLike, *, collection: str = "mem0",
                    history: str | os.PathLike | None = None, keep_vectors: bool = False,
                    batch_size: int = 500) -> dict[str, Any]:
        """Import a mem0 OSS store: its Qdrant local-mode folder (`collection`, mem0's default
        "mem0") and, if given, its SQLite `history` database (mem0's history_db_path).

        Memories keep their ids, text, identity, metadata and created/updated times; their history
        rows come along; entities, keywords and fact slots are rebuilt offline (no LLM); the text is
        re-embedded with this store's embedder unless `keep_vectors=True` and the dimension matches.
        Idempotent: ids this store already knows are skipped. Returns counts read / imported /
        skipped (by reason), history rows imported, and seconds.

        >>> # Memory("data/x.duckdb").import_mem0("/tmp/qdrant", history="~/.mem0/history.db")
        """
        from memstore.ingest.mem0_import import import_mem0

        qdrant_path = check_path(qdrant_path, "qdrant_path")
        if history is not None:
            history = check_path(history, "history")
        return import_mem0(self._rt, qdrant_path, collection=collection,  # type: ignore[attr-defined]
                           history=os.path.expanduser(os.fspath(history)) if history is not None else None,
                           keep_vectors=keep_vectors, batch_size=batch_size)
