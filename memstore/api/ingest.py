"""Memory API: ingest features (mixed into memstore.Memory)."""
from __future__ import annotations


class IngestAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""
