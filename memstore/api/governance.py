"""Memory API: governance features (mixed into memstore.Memory)."""
from __future__ import annotations


class GovernanceAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""
