"""Build the embedder a config section asks for (the extractor: memstore/extraction/factory.py)."""
from __future__ import annotations

from typing import Any

from memstore.core.config import EmbedderConfig


def build_embedder(cfg: EmbedderConfig) -> Any:
    """Embedder for the config: `local` (bundled ONNX MiniLM), `openai`, or `hashing` (tests)."""
    if cfg.provider == "local":
        return _shared_local(cfg.batch_size)
    if cfg.provider == "static":
        from memstore.providers.embed_static import StaticEmbedder

        return StaticEmbedder()
    if cfg.provider == "openai":
        from memstore.providers.embed_openai import OpenAIEmbedder

        return OpenAIEmbedder(model=cfg.model, dims=cfg.dims, base_url=cfg.base_url, api_key=cfg.api_key,
                              batch_size=cfg.batch_size, timeout=cfg.timeout, max_retries=cfg.max_retries)
    from memstore.providers.embed_hashing import HashingEmbedder

    return HashingEmbedder(dim=cfg.dims or 384)


_LOCAL: dict[int, Any] = {}


def _shared_local(batch_size: int) -> Any:
    """One ONNX session per process (thread-safe, and loading it costs a second)."""
    from memstore.providers.embed_local import LocalEmbedder

    if batch_size not in _LOCAL:
        _LOCAL[batch_size] = LocalEmbedder(batch_size=batch_size)
    return _LOCAL[batch_size]
