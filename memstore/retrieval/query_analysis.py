"""What a query asks for: its keyword terms and the entities it names.

Keyword terms must match the index's lemmas (`SpacyNLP`'s rule: lower-cased lemma, no stop words).
A query is too short for the tagger to pay: running tok2vec + tagger for ten words costs ~4-6 ms.
Search runs the tokenizer and asks the rule lemmatizer for each word's lemma as a noun, a verb
and an adjective (plus the word itself): a *term group*. Which form stands for the word is decided
by the scope's own index: the form with the most postings there (`QueryAnalysis.resolve`), so
"hiking" is searched as whichever of hiking / hike the scope's memories use. A lower-case word also
brings the lemmas of its word family that a lemma index keeps apart (`derived_forms`: "promote" /
"promotion", "writing" / "write", "game" / "gaming", "symbol" / "symbolize"), and the postings of every form of a word
count for its one term (`resolve_forms`): "How did Gina promote her store?" finds "Gina got promotions".
A derived form is searched only when the lemmatizer's index knows it as a word. The index is
unchanged, so stores written before need no migration. Every word keeps one term, so
BM25's fixed denominator (the sum of the query terms' idf) is unchanged in meaning.
Entity candidates are every 1-4 word n-gram of the query (what NER would find in ten words, and
a lower-case "alice" still finds Alice) plus each word's chosen term at match 0.9. No NER, no
parser, whatever `nlp.disable` says; the shared pipeline is read, never changed. ~0.3-1 ms a
query; repeated queries come from a per-process cache.

>>> from memstore.providers.nlp import SpacyNLP
>>> q = analyze_query(SpacyNLP(), "Where does alice love hiking now?")
>>> q.term_groups[2][:2], "alice" in q.entity_norms
(('hiking', 'hike'), True)
>>> terms, _ids, forms = q.resolve_forms({"hike": 3, "hiking": 1, "hiker": 1}); terms
['alice', 'love', 'hike']
>>> forms
{'alice': 'alice', 'love': 'love', 'hike': 'hike', 'hiking': 'hike', 'hiker': 'hike'}
"""
from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from memstore.core.ids import entity_id
from memstore.providers.nlp import normalise_entity
from memstore.retrieval.query_time import is_time_word

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_NGRAM = 4
_CACHE_SIZE = 2048
_TIME_FILLER = frozenset("last next this past the a an my his her their our".split())


@dataclass(frozen=True)
class QueryAnalysis:
    term_groups: tuple[tuple[str, ...], ...] = ()                  # per word: candidate index terms
    entity_norms: dict[str, float] = field(default_factory=dict)   # n-gram norm -> match strength

    @cached_property
    def terms(self) -> list[str]:
        """Every candidate term (what the postings are read for)."""
        return list(dict.fromkeys(t for g in self.term_groups for t in g))

    @cached_property
    def entity_ids(self) -> dict[str, float]:
        """Entity id -> match strength of every candidate (n-grams, and each candidate term at 0.9)."""
        return {self._ids[n]: s for n, s in self.entities_for(self.terms).items()}

    @cached_property
    def _ids(self) -> dict[str, str]:
        """norm -> entity id of every candidate (hashed once per query, not per search)."""
        return {n: entity_id(n) for n in self.entities_for(self.terms)}

    def resolve(self, df: dict[str, int]) -> tuple[list[str], dict[str, float]]:
        """(one term per word: the form with the most postings in the scope, the first form on a
        tie; the entity candidates for those terms as norm -> strength)."""
        terms = self.resolve_forms(df)[0]
        return terms, self.entities_for(terms)

    def resolve_forms(self, df: dict[str, int]) -> tuple[list[str], dict[str, float], dict[str, str]]:
        """`resolve` with the entities as entity id -> strength, and every form with postings ->
        the term it counts for: each term itself, and
        the other forms of its word, so a word is matched by any of its forms ("promote" finds
        "promotions", "writings" finds "writing" and "write"); a term that is another word's form
        too stays its own word's."""
        best = []
        for g in self.term_groups:
            top, n = g[0], df.get(g[0], 0)
            for t in g[1:]:
                c = df.get(t, 0)
                if c > n:
                    top, n = t, c
            best.append(top)
        terms = list(dict.fromkeys(best))
        forms = {t: t for t in terms}
        for g, top in zip(self.term_groups, best):
            for t in g:
                if t not in forms and t in df and df[t]:
                    forms[t] = top
        ids = self._ids
        return terms, {ids[n]: v for n, v in self.entities_for(terms).items()}, forms

    def entities_for(self, terms: list[str]) -> dict[str, float]:
        ents = dict(self.entity_norms)
        for t in terms:  # lemma forms of single words ("hikes" -> "hike") as slightly weaker matches
            ents.setdefault(t, 0.9)
        return ents


_cache: OrderedDict[tuple[int, str], QueryAnalysis] = OrderedDict()
_cache_lock = threading.Lock()
_POS = ("NOUN", "VERB", "ADJ")
_word_memo: dict[int, dict[str, tuple[str, ...]]] = {}
_WORD_MEMO_SIZE = 100_000


_DOUBLE = re.compile(r"([b-df-hj-km-np-tv-xz])\1$")     # runn(ing) -> run; not ll/ss/zz (spell, kiss)


def derived_forms(lemma: str) -> list[str]:
    """Lemmas of the same word family that a lemma index keeps apart: the verb and the nouns made of
    it ("promotion" -> "promote", "writing" -> "write", "gaming" -> "game"; "paint" -> "painting",
    "painter"), and the verb made of a noun with -ize ("symbol" -> "symbolize", "memory" ->
    "memorize", "emphasis" -> "emphasize"). Forms no memory uses cost nothing: they have no
    postings. Only suffixes that make a noun of a verb are stripped; "-ment", "-er", "-ize" and
    plural "-s" never ("moment", "mother", "realize" is no "real", "news").

    >>> derived_forms("promotion"), derived_forms("writing"), derived_forms("swim")[2:]
    (['promot', 'promote'], ['writ', 'write'], ['swimming', 'swimer', 'swimize'])
    """
    if not lemma.isalpha() or len(lemma) < 4:
        return []
    for suffix, ends in (("ation", ("e", "ate")), ("ion", ("", "e")), ("ing", ("", "e"))):
        if lemma.endswith(suffix):
            stem = lemma[:-len(suffix)]
            if len(stem) < 3:                           # "station", "nation", "ring": no family
                return []
            if suffix == "ing" and _DOUBLE.search(stem):
                stem = stem[:-1]                        # swimming -> swim
            return [stem + e for e in ends]
    base = lemma[:-1] if lemma.endswith("e") else lemma
    cvc = lemma[-1] not in "aeiouwxy" and lemma[-2] in "aeiou" and lemma[-3] not in "aeiou"
    # -ize makes a verb of a noun: "symbols" finds "symbolizing", "memories" "memorize"
    ize = lemma[:-1] + "ize" if lemma.endswith("y") else lemma[:-2] + "ize" if lemma.endswith("is") else lemma + "ize"
    return [base + "ion", base + "ation", base + (base[-1] if cvc else "") + "ing", base + "er", ize]


_known: dict[int, frozenset[str]] = {}


def _known_lemmas(lemmatizer: Any) -> frozenset[str]:
    """Every lemma of the rule lemmatizer's index (~83k English words): a derived form is searched
    only when it is a word ("promotion", "writer"; not "lovation")."""
    key = id(lemmatizer)
    if key not in _known:
        try:
            table = lemmatizer.lookups.get_table("lemma_index")
            _known[key] = frozenset(w for words in table.values() for w in words)
        except Exception:
            _known[key] = frozenset()
    return _known[key]


def _how_long(doc: Any, tok: Any) -> bool:
    """'long' in 'how long': a duration asked for, not the word long."""
    return tok.lower_ == "long" and tok.i > 0 and doc[tok.i - 1].lower_ == "how"


def _term_groups(nlp: Any, query: str) -> list[tuple[str, ...]]:
    """Per word of the query the index terms it may stand for (SpacyNLP's term rule applied to each
    candidate lemma). Without a lemmatizer the index holds lower-cased words: one form each."""
    pipe = nlp.nlp
    doc = pipe.make_doc(query[:2000])
    lemmatizer = pipe.get_pipe("lemmatizer") if getattr(nlp, "has_lemmas", False) else None
    rule = getattr(lemmatizer, "rule_lemmatize", None) if getattr(lemmatizer, "mode", "") == "rule" else None
    groups = []
    memo = _word_memo.setdefault(id(nlp), {})
    lexicon = _known_lemmas(lemmatizer) if rule is not None else frozenset()
    for tok in doc:
        if tok.is_punct or tok.is_space or _how_long(doc, tok):
            continue
        known = memo.get(tok.text)
        if known is not None:
            if known:
                groups.append(known)
            continue
        cands: list[str] = []
        if is_time_word(tok.text):     # says when, not what (memoised as no term)
            if len(memo) < _WORD_MEMO_SIZE:
                memo[tok.text] = ()
            continue
        if lemmatizer is not None:
            if rule is not None:
                for pos in _POS:
                    tok.pos_ = pos
                    cands += rule(tok)
            else:                      # a lookup lemmatizer needs no part of speech
                cands.append(lemmatizer(pipe.make_doc(tok.text))[0].lemma_ or tok.text)
        cands.append(tok.text)
        forms = [w for c in dict.fromkeys(x.lower() for x in cands) for w in _WORD.findall(c)
                 if not tok.is_stop and len(w) > 1 or w.isdigit()]
        if tok.text.islower() and forms and lexicon:   # not a name ("Nate" is no "nation")
            forms += [d for f in list(dict.fromkeys(forms)) if not f.endswith("s")
                      for d in derived_forms(f) if d in lexicon]
        group = tuple(dict.fromkeys(forms))
        if len(memo) < _WORD_MEMO_SIZE:      # a word's group depends on the word alone
            memo[tok.text] = group
        if group:
            groups.append(group)
    return groups


def analyze_query(nlp: Any, query: str) -> QueryAnalysis:
    """Term groups for BM25 and entity candidates from every 1-4 word n-gram of the query. N-grams
    that name no stored entity cost nothing: they match no posting. Cached per process by
    (pipeline, query)."""
    key = (id(nlp), query)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        groups = _term_groups(nlp, query)
    ents: dict[str, float] = {}
    words = _WORD.findall(query.lower())
    when = [is_time_word(w) or w in _TIME_FILLER for w in words]     # n-grams of these only name a time
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            if all(when[i:i + n]):
                continue
            norm = normalise_entity(" ".join(words[i:i + n]))
            if norm and len(norm) > 2:
                ents.setdefault(norm, 1.0)
    out = QueryAnalysis(term_groups=tuple(groups), entity_norms=ents)
    with _cache_lock:
        _cache[key] = out
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return out
