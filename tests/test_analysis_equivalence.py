"""SpacyNLP.analyze runs the attribute_ruler compiled to look-ups (memstore/providers/attribute_rules.py)
and the models' matrix products on NumPy's BLAS, one thread (memstore/providers/thinc_ops.py):
every token annotation and every Analysis must equal what the stock spaCy pipeline (a separate
`spacy.load`, blis ops, the stock attribute_ruler) gives.

Corpus: the extractor's golden messages and facts (in the repo), sentences that hit each of the
ruler's special patterns, and the LoCoMo observation facts when /work/shared/bench-data (or
$LOCOMO_JSON) is there. Both with the default pipeline (parser off) and with the parser on (the
DEP patterns then match)."""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import spacy
from thinc.api import NumpyOps, get_current_ops
from threadpoolctl import threadpool_info, threadpool_limits

from memstore.providers.attribute_rules import compile_rules
from memstore.providers.nlp import SpacyNLP
from memstore.providers.thinc_ops import NumpyBlasOps, one_blas_thread

GOLDEN = Path(__file__).parent / "golden" / "extractor"
LOCOMO = Path(os.environ.get("LOCOMO_JSON", "/work/shared/bench-data/locomo/locomo_dev5.json"))

# each line exercises a pattern of the ruler that is more than a TAG look-up
SPECIAL = [
    "I ain't gonna lie, y'all were right and ya'll know it.", "We gotta go, let's leave, c'mon now!",
    "That's 'nuff for today; nothin' else, nuthin' more.", "He was doin' fine and goin' home with his ol' dog.",
    "Tell 'em I'll call, and I'd have gone if I could.", "I can't, won't, shan't and shouldn't do it.",
    "There is a cat. There are two dogs. There were birds.", "Those are mine, these are hers, that one's ours.",
    "Somebody gave everyone something; nobody said anything.", "Did you have it? I had it, he has it, she does.",
    "It is here and then it was there, once.", "I'm being honest: I've been there, she's been too.",
    "  Double  spaces\n\nand new lines\t tabs ", "", "!!!", "ok", "I", "Me and him went with them to theirs.",
    "Because I said so, although it rained, unless you mind.", "He gets it now; she got it then.",
    "Alice moved to Seattle in May and loves hiking.", "Bob works at Globex since 2019 and earns $5,000.",
]


def _golden_texts() -> list[str]:
    out = []
    for name in ("dev.txt", "heldout.txt", "pairs_dev.txt", "pairs_heldout.txt"):
        for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines():
            if line.startswith("> "):
                out.append(line[2:])
            elif line.startswith("= ") and "|" in line:
                out.append(line.split("|", 1)[1].strip())
    return out


def _locomo_facts() -> list[str]:
    if not LOCOMO.exists():
        return []
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    return [f[0] for s in data for per in s["observation"].values() for facts in per.values() for f in facts]


def _tokens(doc) -> list[tuple]:
    return [(t.text, t.tag_, t.pos_, str(t.morph), t.lemma_, t.dep_, t.ent_iob_, t.ent_type_, t.is_sent_start)
            for t in doc]


def _stock(nlp: SpacyNLP, disable: list[str]):
    """The same pipeline loaded anew: thinc's default ops on every layer, the stock components."""
    pipe = spacy.load(nlp.name, disable=disable)
    layers = [layer for _, proc in pipe.components if getattr(proc, "model", None) is not None
              for layer in proc.model.walk()]
    assert layers and all(type(layer.ops) is NumpyOps and layer.ops.use_blis for layer in layers)
    return pipe


def _check(nlp: SpacyNLP, stock_pipe, texts: list[str]) -> None:
    assert nlp._rules is not None, "the pipeline's attribute_ruler did not compile"
    assert stock_pipe.pipe_names == nlp.nlp.pipe_names
    for start in range(0, len(texts), 10):           # add()-sized batches
        batch = texts[start:start + 10]
        stock = list(stock_pipe.pipe(batch, batch_size=64))
        fast = list(nlp.pipe(batch))
        for text, a, b in zip(batch, stock, fast):
            assert _tokens(a) == _tokens(b), text
            assert nlp._analyze_doc(a) == nlp._analyze_doc(b), text
        assert nlp.analyze(batch) == [nlp._analyze_doc(d) for d in stock]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts = SPECIAL + _golden_texts() + _locomo_facts()
    assert len(texts) > 500
    return texts


def test_analysis_equals_stock_pipeline(corpus):
    nlp = SpacyNLP()
    _check(nlp, _stock(nlp, ["parser"]), corpus)


def test_analysis_equals_stock_pipeline_with_parser(corpus):
    nlp = SpacyNLP(disable=())
    assert "parser" in nlp.nlp.pipe_names
    _check(nlp, _stock(nlp, []), corpus[:400] + SPECIAL)


def test_every_layer_multiplies_on_numpy_blas():
    """Every layer of every component, the disabled parser included, has NumpyBlasOps; thinc's
    current ops (what models built later get) are left alone."""
    pipe = SpacyNLP().nlp
    assert "parser" in pipe.disabled
    models = [(name, proc.model) for name, proc in pipe.components if getattr(proc, "model", None) is not None]
    assert {"tok2vec", "tagger", "parser", "ner"} <= {name for name, _ in models}
    for name, model in models:
        assert {type(layer.ops) for layer in model.walk()} == {NumpyBlasOps}, name
    assert type(get_current_ops()) is NumpyOps


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_blas_threads_are_limited_only_inside_a_product():
    """NumPy's BLAS thread count is the caller's before, between and after analyses (four threads
    analysing at once while a fifth multiplies matrices included); one inside the scope, nested
    or not, and back after an exception."""
    nlp = SpacyNLP()
    texts = SPECIAL[:10]
    with threadpool_limits(limits=3, user_api="blas"):
        before = _blas_threads()
        assert before and set(before) == {3}
        one = one_blas_thread()
        with one:
            assert set(_blas_threads()) == {1}
            with one:
                assert set(_blas_threads()) == {1}
            assert set(_blas_threads()) == {1}
        assert _blas_threads() == before
        with pytest.raises(ValueError), one:
            raise ValueError
        assert _blas_threads() == before
        expected = nlp.analyze(texts)
        assert _blas_threads() == before
        a = np.random.default_rng(0).standard_normal((400, 400))
        product = a @ a

        def products() -> bool:      # NumPy products elsewhere stay right while the count flips
            return all(np.allclose(a @ a, product, rtol=1e-10, atol=1e-10) for _ in range(30))

        with ThreadPoolExecutor(5) as pool:
            others = pool.submit(products)
            assert all(r == expected for r in pool.map(lambda _: nlp.analyze(texts), range(40)))
            assert others.result()
        assert _blas_threads() == before


def test_unsupported_ruler_keeps_stock_component():
    import spacy

    blank = spacy.blank("en")
    ruler = blank.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": "a", "OP": "+"}]], {"LEMMA": "x"})      # operators are not compiled
    assert compile_rules(ruler) is None
    ruler2 = spacy.blank("en").add_pipe("attribute_ruler")
    ruler2.add([[{"LOWER": {"IN": ["a", "b"]}}, {"IS_SPACE": False}]], {"LEMMA": "x"}, index=-1)
    assert compile_rules(ruler2) is not None
