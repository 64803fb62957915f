"""Fast offline embedder: static token vectors distilled (model2vec) from all-MiniLM-L6-v2.

Runtime dependencies: ``numpy`` and ``tokenizers`` only. Model files live in
``memstore/models/minilm-l6-v2-static/`` and are produced by
``scripts/build_fast_embedder.py``.

An embedding is the mean of the (SIF-weighted) vectors of a text's WordPiece
tokens, L2-normalised. Roughly 10-100x faster than the transformer model but
much less accurate on paraphrases and word order; use it when throughput
matters more than quality. Not interchangeable with ``LocalEmbedder`` vectors
(different space, same dimension).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memstore.core.errors import ConfigError, MissingFileError

DEFAULT_MODEL_DIR = (
    Path(__file__).resolve().parent.parent / "models" / "minilm-l6-v2-static"
)

_BUILD_HINT = (
    "The static embedding model is missing. Build it with "
    "`python scripts/build_fast_embedder.py` (needs a build venv with torch and "
    "model2vec[distill]; see the script's docstring), or pass model_dir= pointing at "
    "a directory containing embeddings.npy and tokenizer.json."
)


class StaticEmbedder:
    """Fast static embedder (model2vec distillation of MiniLM-L6-v2), numpy + tokenizers.

    Example: ``StaticEmbedder().embed(["Alice is vegetarian"]).shape == (1, 384)``

    Texts with no known tokens (e.g. ``" "``) embed to the zero vector.
    ``batch_size`` only bounds how many texts are tokenised at once.
    """

    name: str = "minilm-l6-v2-static"
    dim: int = 384
    max_tokens: int = 512

    def __init__(
        self,
        model_dir: str | Path | None = None,
        batch_size: int = 1024,
        threads: int | None = None,
    ) -> None:
        # ``threads`` is accepted for interface parity; tokenizers manages its own threads.
        self.model_dir = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        self.batch_size = max(1, int(batch_size))
        self.threads = threads
        self.embeddings_path = self.model_dir / "embeddings.npy"
        self.tokenizer_path = self.model_dir / "tokenizer.json"
        for p in (self.embeddings_path, self.tokenizer_path):
            if not p.is_file():
                raise MissingFileError(f"{p} not found", hint=_BUILD_HINT, path=str(p))
        self._lock = threading.Lock()
        self._vectors: np.ndarray | None = None
        self._tokenizer = None
        self._unk_id: int | None = None

    def _load(self) -> None:
        if self._vectors is not None:
            return
        with self._lock:
            if self._vectors is not None:
                return
            from tokenizers import Tokenizer

            vectors = np.load(self.embeddings_path, allow_pickle=False).astype(
                np.float32
            )
            if vectors.ndim != 2 or vectors.shape[1] != self.dim:
                raise ConfigError(
                    f"{self.embeddings_path}: expected (vocab, {self.dim}), got {vectors.shape}",
                    hint="the model folder holds another model: rebuild it or point model_dir elsewhere",
                )
            tok = Tokenizer.from_file(str(self.tokenizer_path))
            tok.no_padding()
            tok.enable_truncation(max_length=self.max_tokens)
            self._unk_id = tok.token_to_id("[UNK]")
            self._tokenizer = tok
            self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``(len(texts), 384)`` float32 array of L2-normalised rows."""
        if isinstance(texts, str):
            raise TypeError(
                "embed() takes a sequence of strings, not a single str; wrap it in a list"
            )
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"embed() expects strings, got {type(t).__name__}")
        self._load()
        vec = self._vectors
        for start in range(0, len(texts), self.batch_size):
            encs = self._tokenizer.encode_batch(
                texts[start : start + self.batch_size], add_special_tokens=False
            )
            ids_list = [e.ids for e in encs]
            lengths = np.fromiter(
                (len(x) for x in ids_list), dtype=np.int64, count=len(ids_list)
            )
            if lengths.sum() == 0:
                continue
            flat = np.fromiter(
                (i for x in ids_list for i in x),
                dtype=np.int64,
                count=int(lengths.sum()),
            )
            rows = np.repeat(np.arange(len(ids_list)), lengths)
            keep = flat != self._unk_id if self._unk_id is not None else slice(None)
            flat, rows = flat[keep], rows[keep]
            counts = np.bincount(rows, minlength=len(ids_list))
            nonempty = np.flatnonzero(counts)
            if len(nonempty):
                starts = np.concatenate(([0], np.cumsum(counts[nonempty])[:-1]))
                out[start + nonempty] = np.add.reduceat(vec[flat], starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self.name!r}, dim={self.dim}, model_dir={str(self.model_dir)!r})"
