"""Embeddings from any OpenAI-compatible `/embeddings` endpoint, batched."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memstore.core.errors import ConfigError, LLMUnavailableError


class OpenAIEmbedder:
    """Example: OpenAIEmbedder(model="text-embedding-3-small", base_url=..., dims=1536).embed(["hi"])"""

    def __init__(self, *, model: str, dims: int | None, base_url: str | None = None, api_key: str | None = None,
                 batch_size: int = 64, timeout: float = 60.0, max_retries: int = 2) -> None:
        import openai

        if dims is None:
            raise ConfigError("embedder.dims is required for the openai embedder", key="embedder.dims",
                              hint="set it to the model's output size, e.g. 1536 for text-embedding-3-small")
        self._openai = openai
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                    timeout=timeout, max_retries=max_retries)
        self.model, self.dim, self.batch_size = model, int(dims), batch_size
        self.name = f"openai:{model}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            chunk = [t if t.strip() else " " for t in texts[start:start + self.batch_size]]
            try:
                resp = self.client.embeddings.create(model=self.model, input=chunk)
            except (self._openai.APIConnectionError, self._openai.RateLimitError,
                    self._openai.InternalServerError) as exc:
                raise LLMUnavailableError(f"embedding endpoint failed: {exc}") from exc
            for item in resp.data:
                vec = np.asarray(item.embedding, dtype=np.float32)
                if vec.shape[0] != self.dim:
                    raise ConfigError(f"embedding endpoint returned {vec.shape[0]}-d vectors, config says {self.dim}",
                                      key="embedder.dims")
                out[start + item.index] = vec / (np.linalg.norm(vec) or 1.0)
        return out
