"""Offline heuristic extractor — a spaCy-based FALLBACK, not an LLM.

It turns first-person statements of the user ("I'm vegetarian and I live in Boston") into short
third-person facts ("Alice is vegetarian", "Alice lives in Boston") attributed to the speaker.
Questions, greetings and sentences without a first-person subject are skipped.

>>> from memstore.providers.nlp import SpacyNLP
>>> from memstore.pipeline.types import Message
>>> ex = HeuristicExtractor(SpacyNLP())
>>> [f.text for f in ex.extract([Message("user", "Hi! I'm vegetarian and I live in Boston.")], [], speaker="Alice").facts]
['Alice is vegetarian', 'Alice lives in Boston']
"""
from __future__ import annotations

import re
import time
from collections.abc import Sequence

from memstore.pipeline.types import ContextMemory, Extraction, Fact, Message

PROMPT_VERSION = "heuristic-1"
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE = re.compile(r"(,?\s+(?:and|but|so|because)\s+(?=I\b|I'|[Mm]y\b|[Ww]e\b|[Oo]ur\b)|;\s*)")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|[Mm]y|me|mine|[Ww]e|[Oo]ur|us)\b")
_SUBJECT_I = re.compile(r"\b(I|[Ww]e)\b")
_GREETING = re.compile(r"^(hi|hello|hey|thanks|thank you|ok|okay|sure|yes|no|bye|good (morning|night|evening))\b",
                       re.IGNORECASE)
_CONTRACTION = {"'re": "are", "'ve": "have", "'ll": "will", "'d": "would", "'m": "am"}
_IRREGULAR = {"be": "is", "am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "go": "goes",
              "'d": "would", "'ll": "will", "was": "was", "were": "was"}


_ADVERB_TAGS = ("RB", "RBR", "RBS")     # also, really, usually, never, still, just, ...


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


class HeuristicExtractor:
    """Rule-based fact extraction from the user's first-person sentences."""

    name = "heuristic"

    def __init__(self, nlp) -> None:  # noqa: ANN001 - SpacyNLP
        self.nlp = nlp.nlp
        self._past_forms = _irregular_verb_forms(self.nlp)

    def extract(self, messages: Sequence[Message], context: Sequence[ContextMemory], *,
                speaker: str, prompt: str | None = None) -> Extraction:
        start = time.perf_counter()
        facts: list[Fact] = []
        seen: set[str] = set()
        for msg in messages:
            if msg.role != "user" or not msg.content:
                continue
            who = msg.name or speaker
            for clause in self._clauses(msg.content):
                text = self._rewrite(clause, who)
                if text and text.lower() not in seen:
                    seen.add(text.lower())
                    facts.append(Fact(text=text, attributed_to=who, role="user",
                                      source_message_ids=[msg.id] if msg.id else [],
                                      valid_from=msg.created_at))
        return Extraction(status="ok" if facts else "empty", facts=facts, extractor="heuristic",
                          model="heuristic", prompt_version=PROMPT_VERSION,
                          latency_ms=(time.perf_counter() - start) * 1000)

    @staticmethod
    def _clauses(text: str) -> list[str]:
        out = []
        for sent in _SENTENCE.split(text.strip()):
            sent = sent.strip()
            if not sent or sent.endswith("?") or _GREETING.match(sent) and len(sent.split()) <= 3:
                continue
            for clause in _split_clauses(sent):
                clause = clause.strip(" ,.!;:-")
                clause = _GREETING.sub("", clause).strip(" ,.!;:-") if _GREETING.match(clause) else clause
                if len(clause.split()) >= 2 and _FIRST_PERSON.search(clause):
                    out.append(clause)
        return out

    def _rewrite(self, clause: str, who: str) -> str | None:
        doc = self.nlp(clause)
        toks = list(doc)
        parts: list[str] = []
        subject_seen = we_subject = False
        i = 0
        while i < len(toks):
            tok = toks[i]
            low = tok.text.lower()
            ws = tok.whitespace_
            if low == "i" and i > 0 and toks[i - 1].text.lower() in ("and", "or"):
                parts.append(who + ws)          # "my wife and I are": the verb already agrees
                subject_seen = True
            elif low == "we":
                # "we" is the speaker and others: the verb stays plural, "our" after it is "their"
                parts.append(f"{who} and others" + ws)
                subject_seen = we_subject = True
                nxt = toks[i + 1] if i + 1 < len(toks) else None
                if nxt is not None and nxt.text.lower() in _CONTRACTION:
                    parts[-1] = f"{who} and others "
                    parts.append(_CONTRACTION[nxt.text.lower()] + nxt.whitespace_)
                    i += 2
                    continue
            elif low in ("our", "ours"):
                parts.append(("their" if we_subject else f"{who}'s") + ws)
            elif low == "us":
                parts.append(f"{who} and others" + ws)
            elif low == "ourselves":
                parts.append("themselves" + ws)
            elif low == "i":
                parts.append(who + ws)
                subject_seen = True
                # conjugate the verb (or auxiliary) that follows the subject, past any adverbs
                # in between ("I also work" -> "Alice also works")
                j = i + 1
                while j < len(toks) and toks[j].tag_ in _ADVERB_TAGS and toks[j].text.lower() != "n't":
                    j += 1
                if j < len(toks):
                    nxt = toks[j]
                    # an irregular past form mis-tagged as present ("I swam"/VBP) is left as said
                    base = nxt.tag_ == "VBP" and nxt.text.lower() not in self._past_forms
                    if base or nxt.tag_ == "MD" or nxt.text.lower() in _IRREGULAR:
                        word = nxt.text
                        conj = word if nxt.tag_ == "MD" and word.lower() not in _IRREGULAR else _third_person(word)
                        if word.startswith("'") and j == i + 1:
                            parts[-1] = who + " "
                        parts.extend(t.text + t.whitespace_ for t in toks[i + 1:j])   # the adverbs, unchanged
                        # "I don't" -> "Alice doesn't"
                        parts.append(conj + nxt.whitespace_)
                        i = j + 1
                        continue
            elif low in ("my", "mine"):
                parts.append(f"{who}'s" + ws)
            elif low == "me":
                parts.append(who + ws)
            elif low == "myself":
                parts.append(who + ws)
            elif low == "n't":
                parts.append("n't" + ws)
            else:
                parts.append(tok.text + ws)
            i += 1
        text = "".join(parts).strip(" .,!;")
        text = text.replace("doesn't", "doesn't").replace("does n't", "doesn't").replace(" n't", "n't")
        if not subject_seen and not text.startswith(f"{who}'s"):
            return None
        if len(text.split()) < 2:
            return None
        return text[0].upper() + text[1:]


def _irregular_verb_forms(nlp) -> frozenset[str]:  # noqa: ANN001 - spacy Language
    """Inflected irregular verb forms ("swam", "ran", "felt") from the lemmatizer's exception table
    (empty without a rule lemmatizer)."""
    try:
        exc = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_exc")["verb"]
    except Exception:  # noqa: BLE001 - blank pipeline, lookup-mode lemmatizer, missing table
        return frozenset()
    return frozenset(form for form, lemmas in exc.items() if form not in lemmas and form not in _IRREGULAR)


def _split_clauses(sentence: str) -> list[str]:
    """Split at "and/but/so/because" before a first-person clause, except where the left part is
    a short noun phrase joined to the subject ("My wife and I are vegan", "Tom and I went").

    >>> _split_clauses("I live in Boston and I work at Acme")
    ['I live in Boston', 'I work at Acme']
    >>> _split_clauses("My wife and I are vegan")
    ['My wife and I are vegan']
    """
    pieces = _CLAUSE.split(sentence)
    out = [pieces[0]]
    for sep, piece in zip(pieces[1::2], pieces[2::2]):
        left = out[-1].strip()
        joins_subject = (sep.strip(" ,").lower() == "and" and len(left.split()) <= 3
                         and not _SUBJECT_I.search(left) and re.match(r"I\b(?!')", piece) is not None)
        if joins_subject:
            out[-1] = out[-1] + sep + piece
        else:
            out.append(piece)
    return out
