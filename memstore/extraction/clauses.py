"""The clauses of a parsed sentence that state a fact, found on spaCy's dependency parse.

A sentence is cut at coordination ("I moved to X and now work at Y": two clauses, the second
inheriting the subject), reported speech is followed into what was said with its pronoun resolved
("my sister says she's moving" -> "my sister is moving"), relation mentions become facts of their
own where the clause does not keep them ("my boyfriend Tom loves spicy food" -> "boyfriend: Tom"
and "Tom loves spicy food": a partner may not stay one; "my sister Carol lives in Chicago" keeps it), and
hedged, conditional or asked clauses ("I might move", "if I move ...", "I think I'll quit") are
dropped. Each clause is classified as a state, an event (a past action: "moved", "broke up") or a
transient state ("in Lisbon this week", "sick today").

>>> from memstore.providers.nlp import SpacyNLP
>>> nlp = SpacyNLP().nlp
>>> doc = nlp.get_pipe("parser")(nlp("I moved to Seattle last week, and I now work at Globex."))
>>> [(text(c.toks), c.kind) for c in find_clauses(doc)[0]]
[('I moved to Seattle last week', 'event'), ('I now work at Globex', 'state')]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from memstore.extraction.time_phrases import SHORT_SCOPE

__all__ = ["ERRORISH", "SAME_PAST", "Clause", "Relation", "Tok", "find_clauses", "text"]

PARTNERS = {"boyfriend", "girlfriend", "partner", "wife", "husband", "fiance", "fiancé", "fiancee", "fiancée",
            "spouse"}
KIN = PARTNERS | {"sister", "brother", "mother", "mom", "mum", "father", "dad", "son", "daughter", "boss", "friend",
                  "roommate", "cousin", "aunt", "uncle", "grandmother", "grandfather", "grandma", "grandpa", "niece",
                  "nephew", "colleague", "coworker", "co-worker", "neighbor", "neighbour", "manager", "kid", "child",
                  "stepmom", "stepdad", "bestie", "mentor", "landlord", "therapist", "doctor", "sibling", "twin"}
_FIRST = {"i", "me", "my", "mine", "we", "us", "our", "ours", "myself", "ourselves"}
_THIRD = {"he", "she", "they", "him", "her", "them", "who", "that"}
_SUBJ = ("nsubj", "nsubjpass", "csubj", "expl")
_REPORT = {"say", "tell", "mention", "text", "claim", "announce", "write", "inform", "admit", "confess"}
_HEDGE_VERBS = {"think", "guess", "believe", "wonder", "wish", "suppose", "bet", "doubt", "imagine", "hope",
                "assume", "need", "dream", "reckon"}
_HEDGE_AUX = {"might", "may", "could", "would", "should", "'d"}
_HEDGE_ADV = {"maybe", "perhaps", "possibly", "probably", "hopefully", "supposedly"}
_CONDITION = {"if", "unless", "whether", "once"}
_DROP_ADVCL = {"because", "since", "so", "when", "after", "although", "though", "while", "as", "before",
               "cause", "cuz", "coz", "until", "till"}
_DISCOURSE = {"honestly", "actually", "anyway", "anyways", "basically", "btw", "well", "like", "so", "literally",
              "seriously", "lol", "haha", "ok", "okay", "yeah", "oh", "um", "uh", "frankly"}
# Past states rather than events ("I lived in Boston", "I was tired").
_STATIVE = {"be", "have", "live", "love", "like", "hate", "want", "need", "know", "think", "feel", "use", "work",
            "enjoy", "prefer", "own", "seem", "look", "sound"}
# Predicates that make a present state short-lived even without a time phrase.
_PASSING = {"sick": 7, "ill": 7, "cold": 7, "flu": 7, "fever": 3, "headache": 1, "migraine": 1, "tired": 1,
            "exhausted": 1, "hungover": 1, "sore": 3, "stressed": 1, "busy": 1, "meeting": 1, "plane": 1,
            "covid": 10, "jetlagged": 2, "jet-lagged": 2}
# Verbs whose past is their present form; "quit" in chat is nearly always past.
SAME_PAST = {"quit", "put", "set", "cut", "hit", "let", "read", "shut", "hurt", "split", "spread", "cast"}
_PAST_WHEN = re.compile(r"\b(?:yesterday|last \w+|ago|in (?:19|20)\d\d|earlier|already)\b", re.IGNORECASE)
ERRORISH = _ERRORISH = re.compile(r"\b(?:error|exception|segfault|traceback|stack ?trace|bug|crash(?:es|ed)?|warning|"
                       r"compile[sd]?|script|regex|query|function|snippet|code)\b", re.IGNORECASE)


@dataclass
class Tok:
    """A token as the rewriter needs it (a spaCy token's text, trailing space and tag)."""

    text: str
    whitespace_: str = " "
    tag_: str = ""
    lemma_: str = ""
    emphatic: bool = False      # an emphatic "myself" ("I did it myself"): the rewrite drops it


@dataclass
class Clause:
    toks: list[Tok]
    kind: str = "state"                 # state | event | transient
    about_other: bool = False           # the subject is someone the speaker named, not the speaker
    passing_days: int | None = None     # a transient state without a time phrase lasts this long
    at: int = 0                         # where the clause's verb is in the sentence (facts come in order)


@dataclass
class Relation:
    """"my boyfriend Tom": `noun` boyfriend, `name` Tom."""

    noun: str
    name: str
    partner: bool = field(default=False)


def text(toks: list[Tok]) -> str:
    """The clause's text as written.

    >>> text([Tok("I", "", "PRP"), Tok("'m", " ", "VBP"), Tok("vegan", "", "JJ")])
    "I'm vegan"
    """
    return "".join(t.text + t.whitespace_ for t in toks).strip(" ,;:-")


def _tok(t: Any, text_: str | None = None, ws: str | None = None) -> Tok:
    return Tok(t.text if text_ is None else text_, t.whitespace_ if ws is None else ws, t.tag_, t.lemma_.lower(),
               t.lower_ in ("myself", "ourselves") and _emphatic(t))


def _emphatic(tok: Any) -> bool:
    """Is this "myself" emphatic ("I did it myself", "I myself prefer tea"), not an object ("I hurt
    myself", "I taught myself Spanish")? The parse says so (npadvmod, appos), or it is a second
    direct object of its verb after a noun ("I built the shed myself").

    >>> from types import SimpleNamespace as T
    >>> verb = T(children=[])
    >>> shed, me = T(dep_="dobj", i=3), T(dep_="dobj", i=4, head=verb)
    >>> verb.children = [shed, me]
    >>> _emphatic(T(dep_="npadvmod")), _emphatic(T(dep_="dative")), _emphatic(me)
    (True, False, True)
    """
    dep = getattr(tok, "dep_", "")
    if dep in ("npadvmod", "appos", "advmod"):
        return True
    if dep == "dobj":
        return any(c.dep_ == "dobj" and c.i < tok.i for c in tok.head.children)
    return False


def _is_predicate(t: Any) -> bool:
    return t.pos_ in ("VERB", "AUX") or t.tag_.startswith("VB") or any(c.dep_ in _SUBJ for c in t.children)


def _relations(doc: Any) -> tuple[list[Relation], dict[int, list[Any]], set[int]]:
    """Relation mentions: the relations, {token index of the mention's head: name tokens} and the
    indices of the words the mention drops ("my", "boyfriend", the commas around an apposition)."""
    rels: list[Relation] = []
    names: dict[int, list[Any]] = {}
    drop: set[int] = set()
    for t in doc:
        if t.pos_ != "PROPN" or t.dep_ == "compound":
            continue
        noun = None
        if t.dep_ == "appos" and t.head.lemma_.lower() in KIN:
            noun = t.head
        else:
            noun = next((c for c in t.children if c.dep_ in ("compound", "amod", "nmod") and c.lemma_.lower() in KIN),
                        None)
        if noun is None:
            continue
        owner = [c for c in list(noun.children) + list(t.children) if c.dep_ == "poss"]
        if not owner or owner[0].lower_ not in ("my", "our"):
            continue
        name = [c for c in t.lefts if c.dep_ == "compound" and c.pos_ == "PROPN"] + [t] + \
               [c for c in t.rights if c.dep_ == "compound" and c.pos_ == "PROPN"]
        mods = [c for c in noun.children if c.dep_ in ("amod", "compound") and c.i < noun.i]
        rels.append(Relation(" ".join(m.lower_ for m in mods + [noun]), " ".join(n.text for n in name),
                             noun.lemma_.lower() in PARTNERS))
        head = noun if t.dep_ == "appos" else t
        names[head.i] = name
        if noun.lemma_.lower() not in PARTNERS:
            continue                        # "Alice's sister Carol lives ...": kin stay kin, the words stay
        # a partner may not stay one: "my boyfriend Tom loves spicy food" -> "Tom loves spicy food"
        drop.update(o.i for o in owner)
        drop.update(m.i for m in mods)
        drop.add(noun.i)
        if t.dep_ == "appos":               # "My husband, Dave, who is a chef, cooks" -> "Dave cooks"
            drop.update(c.i for c in t.children if c.dep_ == "punct")
            drop.update(c.i for c in noun.children if c.dep_ == "punct")
    return rels, names, drop


def find_clauses(doc: Any) -> tuple[list[Clause], list[Relation]]:
    """The fact-stating clauses of a parsed sentence and the relations it mentions."""
    rels, names, drop = _relations(doc)
    finder = _Finder(doc, names, drop)
    for t in doc:
        if t.dep_ == "ROOT":
            finder.walk(t, None, {})
    # relative clauses about a named person: "Carol, who is a nurse" -> "Carol is a nurse"
    for t in doc:
        if t.dep_ == "relcl":
            who = names.get(t.head.i) or (names.get(t.head.head.i) if t.head.dep_ == "appos" else None) or \
                  ([t.head] if t.head.pos_ == "PROPN" else None)
            if who:
                finder.walk(t, None, {"who": who, "that": who}, relative=True)
    return sorted(finder.out, key=lambda c: c.at), rels, finder.rejected


class _Finder:
    def __init__(self, doc: Any, names: dict[int, list[Any]], drop: set[int]) -> None:
        self.doc, self.names, self.drop = doc, names, drop
        self.out: list[Clause] = []
        self.rejected = False           # a clause was dropped as hedged, conditional or reported

    def walk(self, head: Any, inherited: list[Tok] | None, pron: dict[str, list[Any]], *, relative: bool = False,
             about_other: bool = False) -> None:
        if head.dep_ == "relcl" and not relative:
            return
        kids = list(head.children)
        subj = [c for c in kids if c.dep_ in _SUBJ]
        conj = [c for c in kids if c.dep_ in ("conj", "parataxis") and _is_predicate(c)]
        lemma = head.lemma_.lower()
        # the speaker is (part of) the subject: "I", "we", "Maria and I"; not "my sister"
        subj_words = {w.lower_ for s in subj for w in s.subtree if w.dep_ != "poss" and w.head.dep_ != "poss"}
        first = bool(subj_words & _FIRST) or (not subj and inherited is not None)
        # what the subject refers to, when it is not the speaker
        other = about_other
        subj_toks: list[Tok] | None = None
        if subj and not first:
            s = subj[0]
            if s.lower_ in pron:
                subj_toks, other = [_tok(w) for w in pron[s.lower_]], True
            elif s.i in self.names or any(w.i in self.names for w in s.subtree):
                other = True
            elif s.pos_ == "PROPN":
                other = True
            else:
                poss = {w.lower_ for w in s.subtree if w.dep_ == "poss"}
                other = True if poss & _FIRST else None    # "my sister" / "it", "the movie", an unknown "she"
        hedged = self._hedged(head, kids, lemma)
        # reported speech: follow what was said, its pronoun being the reporter
        ccomp = [c for c in kids if c.dep_ == "ccomp" and _is_predicate(c)]
        if lemma in _REPORT and ccomp and subj:
            reporter = [w for w in subj[0].subtree if w.i not in self.drop] if not first else None
            if not first and subj[0].i in self.names and subj[0].i in self.drop:
                reporter = self.names[subj[0].i]
            sub = dict(pron)
            if reporter:
                sub.update({p: reporter for p in ("he", "she", "they")})
            for c in ccomp:
                self.walk(c, None, sub, about_other=bool(reporter))
            hedged = True                # "my sister says" states nothing itself
        elif lemma in _HEDGE_VERBS and first and not any(c.dep_ == "prep" and c.lower_ in ("about", "of") for c in kids):
            self.rejected = True
            return                       # "I think I'll quit", "I wonder if ..." (and what they govern)
        # a comma splice parses as a complement: "I'm not vegetarian anymore, I eat fish again"
        splice = [c for c in ccomp if lemma not in _REPORT and any(x.dep_ in _SUBJ for x in c.children)]
        excluded: set[int] = set(self.drop)
        for c in conj + splice:
            excluded.update(w.i for w in c.subtree)
        for c in kids:                   # a long leading phrase: "after the whole mess with ..., I moved"
            if c.dep_ in ("prep", "advcl", "npadvmod") and subj and c.i < subj[0].i and len(list(c.subtree)) > 3:
                excluded.update(w.i for w in c.subtree)
        for c in kids:
            if c.dep_ == "cc" and conj:
                excluded.add(c.i)
            if c.dep_ in ("intj", "discourse") or (c.dep_ == "advmod" and c.lower_ in _DISCOURSE and c.i < head.i):
                excluded.update(w.i for w in c.subtree)
            if c.dep_ in ("ccomp",) and lemma in _REPORT:
                excluded.update(w.i for w in c.subtree)
            if c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ in _DROP_ADVCL for m in c.children):
                excluded.update(w.i for w in c.subtree)
            if c.dep_ == "relcl":
                excluded.update(w.i for w in c.subtree)
            if c.dep_ == "punct" and conj and c.i > head.i and c.i < max(x.i for x in conj):
                excluded.add(c.i)
        for w in head.subtree:          # relative clauses are clauses of their own (find_clauses)
            if w.dep_ == "relcl" and w.i != head.i:
                excluded.update(x.i for x in w.subtree)
                excluded.update(x.i for x in w.head.children if x.dep_ == "punct" and x.i > w.head.i)
        self.rejected |= hedged
        if not hedged and other is not None and (first or other or subj_toks is not None):
            toks = self._tokens(head, excluded, pron)
            if not subj and inherited is not None:
                toks = [Tok(t.text, t.whitespace_ or " ", t.tag_, t.lemma_) for t in inherited] + toks
            clause_text = text(toks)
            elliptic = lemma == "be" and not any(c.dep_ in ("acomp", "attr", "prep", "dobj", "advmod", "oprd")
                                                 for c in kids)          # "but my wife isn't"
            if _ERRORISH.search(clause_text) or elliptic:
                self.rejected = True
            elif toks and len(clause_text.split()) >= 2:
                kind, days = self._kind(head, kids, lemma, clause_text)
                self.out.append(Clause(toks, kind, bool(other) and not first, days, head.i))
        share = [_tok(w) for w in subj[0].subtree if w.i not in self.drop] if subj and (first or other) else inherited
        if subj and subj[0].i in self.names and subj[0].i in self.drop:
            share = [_tok(w) for w in self.names[subj[0].i]]
        if subj_toks is not None:
            share = subj_toks
        for c in conj:
            own = any(x.dep_ in _SUBJ for x in c.children)
            if not own and c.tag_ == "VB" and not any(x.dep_ in ("aux", "auxpass") for x in c.children):
                continue                 # an imperative: "I'm allergic to walnuts, so keep them out of my cake"
            self.walk(c, None if own else share, pron, about_other=bool(other) and not first)
        for c in splice:
            self.walk(c, None, pron, about_other=about_other)

    @staticmethod
    def _hedged(head: Any, kids: list[Any], lemma: str) -> bool:
        if any(c.dep_ == "aux" and c.lower_ in _HEDGE_AUX for c in kids):
            return True
        if any(c.dep_ == "advmod" and c.lower_ in _HEDGE_ADV for c in kids):
            return True
        if any(c.dep_ == "mark" and c.lower_ in _CONDITION for c in kids):
            return True
        if any(c.dep_ == "advcl" and any(m.dep_ == "mark" and m.lower_ in _CONDITION for m in c.children)
               for c in kids):
            return True                  # "If I move to Denver, I'll need a car"
        if lemma == "be" and any(c.lower_ == "sure" and any(n.dep_ == "neg" for n in head.children) for c in kids):
            return True                  # "I'm not sure if ..."
        return False

    def _tokens(self, head: Any, excluded: set[int], pron: dict[str, list[Any]]) -> list[Tok]:
        toks: list[Tok] = []
        done: set[int] = set()
        for w in head.subtree:
            if w.i in self.names and w.i in self.drop:       # "my boyfriend, Tom," -> "Tom"
                toks.extend(_tok(n) for n in self.names[w.i] if n.i not in done)
                done.update(n.i for n in self.names[w.i])
                continue
            if w.i in excluded or w.i in done:
                if toks and not toks[-1].whitespace_:
                    toks[-1].whitespace_ = " "      # "Carol, who ..., lives" -> "Carol lives"
                continue
            if w.lower_ in pron and w.dep_ in _SUBJ + ("poss", "dobj", "pobj"):
                ref = [_tok(r) for r in pron[w.lower_]]
                if ref:
                    ref[-1].whitespace_ = w.whitespace_
                    if w.dep_ == "poss":
                        ref[-1].text += "'s"
                toks.extend(ref)
                continue
            if w.lower_ in ("'s", "'re") and w.lemma_ == "be" and toks:
                toks[-1].whitespace_ = " "
                toks.append(_tok(w, "is" if w.lower_ == "'s" else "are"))
                continue
            toks.append(_tok(w))
        while toks and toks[-1].tag_ in (".", ",", ":", "HYPH", "NFP", "''", "``", "-RRB-", "-LRB-"):
            toks.pop()
        while toks and toks[0].tag_ in (".", ",", ":", "HYPH", "NFP", "CC"):
            toks.pop(0)
        if toks:
            toks[-1] = replace(toks[-1], whitespace_="")
        return toks

    @staticmethod
    def _kind(head: Any, kids: list[Any], lemma: str, clause_text: str) -> tuple[str, int | None]:
        future = any(c.lower_ in ("will", "'ll", "gonna") for c in kids) or \
            (head.tag_ == "VBG" and lemma in ("move", "go", "fly", "travel", "head", "leave", "relocate",
                                             "start", "plan"))
        words = {w.lower_ for w in head.subtree}
        if not future and head.tag_ != "VBD" and SHORT_SCOPE.search(clause_text):
            return "transient", None
        passing = [d for w, d in _PASSING.items() if w in words]
        if passing and not future and lemma in {"be", "have", "feel", "get", "catch", "come"} | set(_PASSING):
            return "transient", max(passing)
        aux = [c for c in kids if c.dep_ in ("aux", "auxpass")]
        if lemma in SAME_PAST and head.tag_ in ("VBP", "VBD") and (lemma == "quit" or _PAST_WHEN.search(clause_text)):
            return "event", None        # "I quit Nike", "I read it last week": past, though tagged present
        if head.tag_ == "VBD" and lemma not in _STATIVE:
            return "event", None
        if head.tag_ == "VBD" and lemma == "get":
            return "event", None
        if head.tag_ == "VBN" and any(a.dep_ == "auxpass" and a.tag_ != "VBG" and (a.lemma_ == "get" or a.tag_ == "VBD")
                                      for a in aux):
            return "event", None        # "got engaged", "was laid off"
        if head.tag_ == "VBN" and any(a.lemma_ == "have" for a in aux) and lemma not in _STATIVE:
            return "event", None        # "I've moved to ..."
        return "state", None
