"""Keyword terms and entities of a raw message without running spaCy's models (`add(infer=False)`).

A stored raw turn needs what search reads: keyword terms (lower-cased lemmas, no stop words: the
rule of `SpacyNLP.analyze`) and entities (names and nouns the entity channel matches against a
query's n-grams). Running tok2vec, the tagger and NER over a 1,000-character message costs ~25 ms
of CPU, most of what a raw add costs; this costs ~1 ms. It reads words with a regular expression
and asks the pipeline's rule lemmatizer for each distinct word's lemma once per process (memoised
per word, as search does for a query's words: retrieval/query_analysis.py), so the terms agree
with the lemmas search looks for. Without a tagger it guesses a word's part of speech from its form:
a capitalised word inside a sentence is a name (kept as said), a word whose verb lemma differs while
its noun lemma does not ("ran", "meeting") is a verb, else the noun lemma ("kids" -> "kid").
Entities: runs of capitalised words ("New York", "Slack API") and, as nouns, the content words the
lemmatizer's noun index knows. The same word always gets the same lemma, so search's term groups
(each word's noun, verb and adjective lemma and the word itself) find it whichever form it had.

>>> from memstore.providers.nlp import SpacyNLP
>>> a = light_analyze(SpacyNLP(), ["Alice was hiking near Mount Rainier; the kids ran ahead."])[0]
>>> sorted(a.terms)
['ahead', 'alice', 'hike', 'kid', 'mount', 'near', 'rainier', 'run']
>>> sorted(e.norm for e in a.entities if e.label == "PROPN")
['alice', 'mount rainier']
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memstore.providers.nlp import Analysis, Entity, normalise_entity

__all__ = ["light_analyze"]

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[.!?\n]|[^\w\s]", re.UNICODE)
_SUFFIX = re.compile(r"['’](?:s|re|ll|ve|d|m)$", re.IGNORECASE)
_MAX_CHARS = 20_000          # what SpacyNLP.analyze reads of a text
_MEMO_SIZE = 200_000
_memo: dict[int, dict[str, tuple[str, bool]]] = {}
_indexes: dict[tuple[int, str], frozenset[str]] = {}


def _index(lemmatizer: Any, pos: str) -> frozenset[str]:
    """The base forms the rule lemmatizer's index knows for a part of speech ("noun", "verb", "adj")."""
    key = (id(lemmatizer), pos)
    if key not in _indexes:
        try:
            _indexes[key] = frozenset(lemmatizer.lookups.get_table("lemma_index").get(pos, ()))
        except Exception:
            _indexes[key] = frozenset()
    return _indexes[key]


def _word(nlp: Any, word: str) -> tuple[str, bool]:
    """(lemma, is a noun) of a lower-case word, memoised per pipeline: its noun lemma where that
    is another known noun ("kids", "days"), else its verb lemma where that is another known verb
    ("ran", "needed", "tracking"), else the word itself. A noun: a known noun that is no adjective
    as well and was not read as an inflected verb ("device", "code"; not "final", "tracking")."""
    memo = _memo.setdefault(id(nlp), {})
    hit = memo.get(word)
    if hit is not None:
        return hit
    pipe = nlp.nlp
    lemmatizer = pipe.get_pipe("lemmatizer") if getattr(nlp, "has_lemmas", False) else None
    rule = getattr(lemmatizer, "rule_lemmatize", None) if getattr(lemmatizer, "mode", "") == "rule" else None
    lemma, noun = word, False
    if rule is not None:
        nouns, verbs, adjs = (_index(lemmatizer, p) for p in ("noun", "verb", "adj"))
        tok = pipe.make_doc(word)[0]
        tok.pos_ = "NOUN"
        as_noun = (rule(tok) or [word])[0].lower()
        tok.pos_ = "VERB"
        as_verb = (rule(tok) or [word])[0].lower()
        verb = False
        if as_noun != word and as_noun in nouns:
            lemma = as_noun                 # "kids", "days", "tasks"
        elif as_verb != word and as_verb in verbs:
            lemma, verb = as_verb, True     # "ran", "needed", "tracking"
        noun = not verb and lemma in nouns and lemma not in adjs
    out = (lemma, noun)
    if len(memo) < _MEMO_SIZE:
        memo[word] = out
    return out


def _unknown(nlp: Any, word: str) -> bool:
    """A word no index of the rule lemmatizer knows as a noun, verb or adjective (a name)."""
    lemmatizer = nlp.nlp.get_pipe("lemmatizer") if getattr(nlp, "has_lemmas", False) else None
    if lemmatizer is None or not word.isalpha():
        return False
    return not any(word in _index(lemmatizer, p) for p in ("noun", "verb", "adj"))


def light_analyze(nlp: Any, texts: Sequence[str]) -> list[Analysis]:
    """Terms and entities of each text (see the module's docstring); `nlp` is a SpacyNLP."""
    stop = nlp.nlp.Defaults.stop_words
    return [_one(nlp, t[:_MAX_CHARS], stop) for t in texts]


def _one(nlp: Any, text: str, stop: Any) -> Analysis:
    terms: Counter = Counter()
    ents: dict[str, Entity] = {}
    run: list[str] = []
    start = True                     # at the start of a sentence

    def close() -> None:
        # a name of two or three words is one entity ("New York"); a longer run is a title
        # ("Basic Object Detection Setup"): each word its own, as a tagger's proper nouns would be
        for part in ([run] if 1 < len(run) <= 3 else [[w] for w in run]):
            norm = normalise_entity(" ".join(part))
            if norm and len(norm) > 2 and (len(part) > 1 or norm not in stop):
                ents.setdefault(norm, Entity(" ".join(part), norm, "PROPN"))
        run.clear()

    for m in _TOKEN.finditer(text):
        tok = m.group()
        if not tok[0].isalnum():        # punctuation ends a name; . ! ? and a new line a sentence
            if run:
                close()
            start = start or tok in ".!?\n"
            continue
        if "n't" in tok.lower() or "n’t" in tok.lower():
            if run:
                close()
            start = False
            continue                 # do/does/can + not: stop words all
        base = _SUFFIX.sub("", tok)
        low = base.lower()
        # a capitalised word is a name inside a sentence, and at its start when it is no word the
        # lemmatizer knows ("Alice said", not "Deploy the app")
        name = base[:1].isupper() and low not in stop and (not start or _unknown(nlp, low))
        start = False
        if name:
            run.append(base)
            terms[low] += 1 if (len(low) > 1 or low.isdigit()) else 0
            continue
        if run:
            close()
        if low in stop or tok.lower() in stop:
            continue
        lemma, noun = _word(nlp, low) if low.isalpha() else (low, False)
        if len(lemma) > 1 or lemma.isdigit():
            terms[lemma] += 1
        if noun and len(base) > 2 and lemma not in ents:
            norm = normalise_entity(lemma)
            if norm:
                ents.setdefault(norm, Entity(base, norm, "NOUN"))
    close()
    return Analysis(list(ents.values()), +terms)
