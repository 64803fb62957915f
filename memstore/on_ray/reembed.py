"""`memstore reembed --on-ray ADDRESS`: the new model's vectors made on a pool of Ray actors.

The store's owner runs the job (memstore/governance/reembed.py: which memories, in what order, the
resumable bookkeeping and the one-transaction swap); for each batch it calls the `embed` this module
returns, which spreads the texts over `actors` Ray actors (the embedder loaded once per actor) and
puts the vectors back in order. A vector comes back as little-endian float32 bytes and is checked
(count, size, finite) before the owner stores it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from memstore.core.errors import ConfigError


class EmbedActor:
    """One Ray actor: the embedder built once from its config section."""

    def __init__(self, section_json: str) -> None:
        from memstore.core.config import EmbedderConfig
        from memstore.providers.factory import build_embedder

        self.embedder = build_embedder(EmbedderConfig(**json.loads(section_json)))
        if hasattr(self.embedder, "threads"):
            self.embedder.threads = 1

    def embed(self, texts: list[str]) -> bytes:
        return np.asarray(self.embedder.embed(texts), dtype="<f4").tobytes()


def ray_embed(section: dict[str, Any], *, address: str | None = "auto", actors: int | None = None,
              chunk: int = 64, dim: int) -> Callable[[list[str]], np.ndarray]:
    """`embed(texts) -> (n, dim) float32` on `actors` Ray actors (default: one per CPU)."""
    from memstore.on_ray.ingest import init_ray

    ray = init_ray(address)
    n = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    remote = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)(EmbedActor)
    pool = ray.util.ActorPool([remote.remote(json.dumps(section)) for _ in range(n)])

    def embed(texts: list[str]) -> np.ndarray:
        parts = [texts[i:i + chunk] for i in range(0, len(texts), chunk)]
        out = []
        for part, raw in zip(parts, pool.map(lambda a, p: a.embed.remote(p), parts)):
            vec = np.frombuffer(raw, dtype="<f4")
            if vec.size != len(part) * dim or not np.isfinite(vec).all():
                raise ConfigError(f"a Ray actor returned {vec.size} floats for {len(part)} texts of {dim}-d "
                                  "vectors (or a NaN)", key="embedder")
            out.append(vec.reshape(len(part), dim))
        return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)

    return embed
