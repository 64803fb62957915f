"""Memory API: truth features (mixed into memstore.Memory)."""
from __future__ import annotations


class TruthAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""
