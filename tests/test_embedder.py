"""Tests for the offline embedders.

LocalEmbedder (memstore.providers.embed_local) is checked against
tests/fixtures/embedder_reference.json: embeddings of fixed sentences computed
with the ORIGINAL torch all-MiniLM-L6-v2 model (sentence-transformers), written
by scripts/build_embedder.py. Measured with the committed int8 model (per-token
activation quantisation, FFN output kept float): per-sentence cosine vs
original min 0.981 ("thanks!!!"), mean 0.995; batched and one-by-one
embeddings are bit-identical.

StaticEmbedder (memstore.providers.embed_static, model2vec distillation) only
gets interface/sanity checks; it is skipped when its model files are absent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from memstore.providers.embed_local import DEFAULT_MODEL_DIR, LocalEmbedder

FIXTURE = Path(__file__).parent / "fixtures" / "embedder_reference.json"


@pytest.fixture(scope="module")
def reference():
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    texts = [it["text"] for it in data["items"]]
    emb = np.asarray([it["embedding"] for it in data["items"]], dtype=np.float32)
    assert emb.shape == (len(texts), 384)
    return texts, emb


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbedder()


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_attributes(embedder):
    assert embedder.name == "all-MiniLM-L6-v2-int8"
    assert embedder.dim == 384


def test_matches_original_model(embedder, reference):
    texts, ref = reference
    got = embedder.embed(texts)
    assert got.shape == (len(texts), 384)
    assert got.dtype == np.float32
    cos = _cos(got, ref)
    worst = int(cos.argmin())
    assert cos.min() >= 0.97, f"worst cosine {cos.min():.4f} for {texts[worst]!r}"
    assert cos.mean() >= 0.99, f"mean cosine {cos.mean():.4f}"


def test_fixture_exercises_truncation_and_edge_cases(reference):
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert max(it["n_tokens_untruncated"] for it in data["items"]) > 256
    texts, _ = reference
    assert " " in texts
    assert any(not t.isascii() for t in texts)


def test_rows_are_unit_norm(embedder, reference):
    texts, _ = reference
    norms = np.linalg.norm(embedder.embed(texts), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_batch_and_order_independence(embedder, reference):
    texts, _ = reference
    batched = embedder.embed(texts)
    single = np.concatenate([embedder.embed([t]) for t in texts])
    reversed_ = embedder.embed(texts[::-1])[::-1]
    small_batches = LocalEmbedder(batch_size=3).embed(texts)
    for other in (single, reversed_, small_batches):
        # per-token activation quantisation: identical in practice (0.0 measured)
        assert np.abs(batched - other).max() <= 1e-5
        assert _cos(batched, other).min() >= 0.99999


def test_duplicates_in_one_call(embedder):
    out = embedder.embed(["Alice is vegetarian", "x" * 50, "Alice is vegetarian"])
    np.testing.assert_allclose(out[0], out[2], atol=1e-6)


def test_empty_input(embedder):
    out = embedder.embed([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32


def test_single_string_is_rejected(embedder):
    with pytest.raises(TypeError):
        embedder.embed("Alice is vegetarian")


def test_semantic_sanity(embedder):
    q, meat, boston = embedder.embed(
        ["I am vegetarian", "Alice doesn't eat meat", "Alice lives in Boston"]
    )
    assert float(q @ meat) > float(q @ boston) + 0.1


def test_missing_model_gives_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_embedder.py"):
        LocalEmbedder(model_dir=tmp_path)


def test_meta_matches_model_file():
    meta = json.loads((DEFAULT_MODEL_DIR / "meta.json").read_text(encoding="utf-8"))
    assert meta["dim"] == 384
    assert meta["max_seq_len"] == 256
    assert meta["pooling"] == "mean" and meta["normalize"] is True
    assert meta["license"] == "Apache-2.0"
    digest = hashlib.sha256((DEFAULT_MODEL_DIR / "model.onnx").read_bytes()).hexdigest()
    assert digest == meta["sha256"]


# ---------------------------------------------------------------- static (fast) profile


@pytest.fixture(scope="module")
def static_embedder():
    from memstore.providers.embed_static import DEFAULT_MODEL_DIR as STATIC_DIR
    from memstore.providers.embed_static import StaticEmbedder

    if not (STATIC_DIR / "embeddings.npy").is_file():
        pytest.skip("static model not built (scripts/build_fast_embedder.py)")
    return StaticEmbedder()


def test_static_interface(static_embedder, reference):
    texts, _ = reference
    assert static_embedder.name == "minilm-l6-v2-static" and static_embedder.dim == 384
    out = static_embedder.embed(texts)
    assert out.shape == (len(texts), 384) and out.dtype == np.float32
    norms = np.linalg.norm(out, axis=1)
    blank = np.array([not t.strip() for t in texts])
    np.testing.assert_allclose(norms[~blank], 1.0, atol=1e-5)
    assert np.all(norms[blank] == 0.0)  # no tokens -> zero vector
    assert static_embedder.embed([]).shape == (0, 384)
    np.testing.assert_array_equal(static_embedder.embed(texts[::-1])[::-1], out)
    np.testing.assert_allclose(
        np.concatenate([static_embedder.embed([t]) for t in texts]), out, atol=1e-6
    )


def test_static_semantic_sanity(static_embedder):
    q, meat, boston = static_embedder.embed(
        ["I am vegetarian", "Alice doesn't eat meat", "Alice lives in Boston"]
    )
    assert float(q @ meat) > float(q @ boston) + 0.1


def test_static_missing_model_gives_clear_error(tmp_path):
    from memstore.providers.embed_static import StaticEmbedder

    with pytest.raises(FileNotFoundError, match="build_fast_embedder.py"):
        StaticEmbedder(model_dir=tmp_path)
