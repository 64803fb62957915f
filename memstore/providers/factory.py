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


BUNDLED = {"all-MiniLM-L6-v2-int8": "local", "minilm-l6-v2-static": "static"}


def embedder_spec(spec: str) -> dict[str, Any]:
    """`PROVIDER[:MODEL]` (the CLI's `--embedder`) as an `embedder` config section.

    >>> embedder_spec("openai:text-embedding-3-small"), embedder_spec("local"), embedder_spec("hashing:64")
    ({'provider': 'openai', 'model': 'text-embedding-3-small'}, {'provider': 'local'}, {'provider': 'hashing', 'dims': 64})
    """
    from memstore.core.errors import ConfigError

    provider, _, model = str(spec).strip().partition(":")
    if provider not in ("local", "static", "openai", "hashing"):
        raise ConfigError(f"unknown embedder {spec!r}", key="embedder",
                          hint="PROVIDER[:MODEL] with PROVIDER one of local, static, openai, hashing "
                               "(e.g. local, openai:text-embedding-3-small, hashing:384)")
    if provider == "hashing":
        if model and not model.isdigit():
            raise ConfigError(f"hashing:{model}: the hashing embedder takes a size, e.g. hashing:384", key="embedder")
        return {"provider": "hashing", **({"dims": int(model)} if model else {})}
    if provider == "openai":
        return {"provider": "openai", **({"model": model} if model else {})}
    return {"provider": provider}


def spec_of_name(name: str | None) -> str | None:
    """The `--embedder` spec that builds the embedder a store records by `name` (None: unknown).

    >>> spec_of_name("hashing-384"), spec_of_name("all-MiniLM-L6-v2-int8"), spec_of_name("openai:m")
    ('hashing:384', 'local', 'openai:m')
    """
    if not name:
        return None
    if name in BUNDLED:
        return BUNDLED[name]
    if name.startswith("hashing-") and name[8:].isdigit():
        return f"hashing:{name[8:]}"
    if name.startswith("openai:"):
        return name
    return None
