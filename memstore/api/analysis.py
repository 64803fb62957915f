"""Memory API: analysis features (mixed into memstore.Memory)."""
from __future__ import annotations


class AnalysisAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""
