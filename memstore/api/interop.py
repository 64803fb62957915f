"""Memory API: moving in from other memory layers (mixed into memstore.Memory)."""
from __future__ import annotations

import os
from typing import Any

from memstore.api.args import check_path


class InteropAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def import_mem0(self, qdrant_path: str | os.PathLike | None = None, *, collection: str | None = None,
                    history: str | os.PathLike | None = None, keep_vectors: bool = False,
                    batch_size: int = 500) -> dict[str, Any]:
        """Import a mem0 OSS store: its Qdrant local-mode folder (`collection`, mem0's default
        "mem0") and, if given, its SQLite `history` database (mem0's history_db_path). Without
        `qdrant_path`, the places named by the mem0 config this Memory was built from are read
        (its vector_store path and collection_name, its history_db_path; mem0's defaults
        /tmp/qdrant and ~/.mem0/history.db where it names none).

        Memories keep their ids, text, identity, metadata and created/updated times; their history
        rows come along; entities, keywords and fact slots are rebuilt offline (no LLM); the text is
        re-embedded with this store's embedder unless `keep_vectors=True` and the dimension matches.
        Idempotent: ids this store already knows are skipped. Returns counts read / imported /
        skipped (by reason), history rows imported, and seconds.

        >>> # Memory("data/x.duckdb").import_mem0("/tmp/qdrant", history="~/.mem0/history.db")
        """
        from memstore.ingest.mem0_import import import_mem0

        qdrant_path, collection, history = mem0_sources(getattr(self, "_mem0", None), qdrant_path, collection, history)
        qdrant_path = check_path(qdrant_path, "qdrant_path")
        if history is not None:
            history = check_path(history, "history")
        return import_mem0(self._rt, qdrant_path, collection=collection,  # type: ignore[attr-defined]
                           history=os.path.expanduser(os.fspath(history)) if history is not None else None,
                           keep_vectors=keep_vectors, batch_size=batch_size)


def mem0_sources(mapping: Any, qdrant_path: Any, collection: str | None,
                 history: Any) -> tuple[Any, str, Any]:
    """The (Qdrant folder, collection, history db) to import: what the caller named, else what the
    mem0 config names (a default history db that does not exist is left out: mem0 never wrote it)."""
    from memstore.core.errors import Mem0ImportError

    sources = getattr(mapping, "sources", None)
    if qdrant_path is None:
        if sources is None:
            raise Mem0ImportError("name mem0's Qdrant folder: import_mem0(\"/tmp/qdrant\"), or build this "
                                  "Memory from your mem0 config (Memory.from_config(mem0_config))",
                                  hint="the folder is mem0's vector_store.config.path (default /tmp/qdrant)")
        if sources.qdrant_path is None:
            raise Mem0ImportError(f"the mem0 config's vector store ({sources.vector_store}) is not a local Qdrant "
                                  "folder: import_mem0 reads Qdrant's local mode only",
                                  hint="copy the collection into a local Qdrant folder (qdrant-client snapshot) "
                                       "and pass its path")
        qdrant_path = sources.qdrant_path
        if history is None and sources.history_db_path:
            path = os.path.expanduser(sources.history_db_path)
            history = path if os.path.exists(path) or sources.configured_history else None
    if collection is None:
        collection = sources.collection if sources is not None else "mem0"
    return qdrant_path, collection, history
