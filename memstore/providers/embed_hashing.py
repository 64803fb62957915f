"""A tiny deterministic bag-of-words embedder (signed feature hashing). Not semantic: for tests of
plumbing and synthetic benchmarks only.

>>> e = HashingEmbedder(dim=16)
>>> v = e.embed(["alice likes tea", "alice likes tea"])
>>> v.shape, bool((v[0] == v[1]).all())
((2, 16), True)
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    # pure Python under the GIL: add() gains nothing by running it beside spaCy (pipeline/add.py)
    releases_gil = False

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in _TOKEN.findall(text.lower()):
                h = hashlib.blake2b(tok.encode(), digest_size=8).digest()
                idx = int.from_bytes(h[:4], "little") % self.dim
                out[i, idx] += 1.0 if h[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
