"""Offline heuristic extractor — a spaCy-based FALLBACK, not an LLM.

It turns what a person states ("I'm vegetarian and I live in Boston", "Bob is training for the
Berlin marathon", an agent's note "Prefers window seats") into short third-person facts ("Alice is
vegetarian", "Alice lives in Boston", "Alice prefers window seats") attributed to the speaker.
Messages go through a cheap test first (said.py: questions, requests, greetings, thanks and bare
reactions are skipped without spaCy); the rest are parsed (the pipeline's dependency parser, run
only on those sentences) and cut into the clauses that state something (clauses.py: coordination,
reported speech, relation mentions, hedges). Nothing substantive is lost: where the rules make no
clean fact of a sentence (or keep less than half of its content words), the sentence itself is
kept, lightly normalised (as said, without greetings and the person spoken to), as one `said`
memory per message that names the speaker ("Melanie: The kids loved the beach"); a reply that only
makes sense with the question before it ("Since I was 17 or so", "Yes! Two") is kept joined with
that question, citing both messages (replies.py; the question may be among `recent`); a shared
image's caption becomes "Melanie shared a photo of ...". Hedged, conditional and
code-talk clauses stay dropped. Each fact carries its `kind` (state, event, transient, said), the
day an event happened when a time phrase says so ("last week"), and a transient state's expiry
("this week"). Without a parser in the pipeline (a blank spaCy) it falls back to cutting sentences
at "and/but/so".

>>> from memstore.providers.nlp import SpacyNLP
>>> from memstore.core.model import Message
>>> ex = HeuristicExtractor(SpacyNLP())
>>> [f.text for f in ex.extract([Message("user", "Hi! I'm vegetarian and I live in Boston.")], [], speaker="Alice").facts]
['Alice is vegetarian', 'Alice lives in Boston']
>>> [(f.text, f.kind) for f in ex.extract([Message("user", "My boyfriend Tom loves spicy food.")], [],
...                                        speaker="Alice").facts]
[("Alice's boyfriend is Tom", 'state'), ('Tom loves spicy food', 'state')]
>>> [(f.text, f.kind) for f in ex.extract([Message("user", "Thanks! The kids loved the beach.")], [],
...                                        speaker="Melanie").facts]
[('Melanie: The kids loved the beach', 'said')]
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from collections.abc import Sequence
from typing import Any

from memstore.core.model import ContextMemory, Extraction, Fact, Message
from memstore.core.rules.slots import detect_slot
from memstore.core.timeutil import utcnow
from memstore.extraction.chat_text import normalise, split_sentences
from memstore.extraction.clauses import ERRORISH, SAME_PAST, Clause, Relation, Tok, find_clauses
from memstore.extraction.replies import (
    answer_word,
    asks_the_replier,
    is_yes_no,
    joined,
    needs_question,
    question_of,
    short_answer,
)
from memstore.extraction.said import CAPTION, coverage, statement_sentences
from memstore.extraction.sessions import (
    ANSWER_PIECES,
    answer_pieces,
    clean,
    has_content,
    in_session,
    instruction,
    is_ask,
    prose,
    request_gist,
)
from memstore.extraction.time_phrases import expires, when_stated

PROMPT_VERSION = "heuristic-5"      # 5: working sessions (requests, answers, instructions), code kept whole
# In a session with an assistant, a user message this long is kept whole even when it asks nothing.
WHOLE_CHARS = 500
# Below this share of a sentence's content words kept by its facts, the sentence is kept too.
KEEP_BELOW = 0.5
_CLAUSE = re.compile(r"(,?\s+(?:and|but|so|because)\s+(?=I\b|I'|[Mm]y\b|[Ww]e\b|[Oo]ur\b)|;\s*)")
_SUBJECT_I = re.compile(r"\b(I|[Ww]e)\b")
_SPEAKER_FIRST = re.compile(r"^(?:I|I'm|I've|We|We're|We've)\b[^,;]*$")
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

    def __init__(self, nlp: Any, *, sessions: bool = False) -> None:  # a SpacyNLP (or anything with `.nlp`)
        self.nlp = nlp.nlp
        self.sessions = sessions                # config llm.working_sessions (extraction/sessions.py)
        self._doc = _tagging(nlp)
        self._past_forms = _irregular_verb_forms(self.nlp)
        self._parser = _parser(self.nlp)

    def extract(self, messages: Sequence[Message], context: Sequence[ContextMemory], *,
                speaker: str, prompt: str | None = None, recent: Sequence[Message] = ()) -> Extraction:
        """`recent`: the messages before these (the first one may answer the last of them)."""
        start = time.perf_counter()
        # relative times ("last week", "this weekend") of a message with no time of its own are read
        # against now, the moment add() stores it (its facts' valid_from stays the add's default)
        now = utcnow()
        facts: list[Fact] = []
        seen: set[str] = set()
        messages = [_cleaned(m) for m in messages]
        recent = [_cleaned(m) for m in recent]

        def add(text: str | None, kind: str, when: Any, until: Any, msg: Message, who: str,
                also: Message | None = None, role: str = "user", verbatim: bool = False) -> None:
            # never a bare marker or an empty remainder
            if text and has_content(text.split(": ", 1)[-1]) and text.lower() not in seen:
                seen.add(text.lower())
                facts.append(Fact(text=text, attributed_to=who, role=role,
                                  source_message_ids=[m.id for m in (also, msg) if m is not None and m.id],
                                  valid_from=when, kind=kind, expires_at=until, verbatim=verbatim))

        todo = [(msg, s) for msg in messages if msg.role == "user" and msg.content
                for s in self._clauses(msg.content)]
        docs = [self._doc(s) for _, s in todo]
        unparsed = [i for i, d in enumerate(docs) if not d.has_annotation("DEP")]
        if self._parser is not None and unparsed:       # ingest's doc cache parsed them in bulk already
            for i, d in zip(unparsed, self._parser.pipe([docs[i] for i in unparsed], batch_size=64)):
                docs[i] = d
        kept: dict[int, list[str]] = {}             # message -> its sentences the rules dropped
        for (msg, sentence), doc in zip(todo, docs):
            who = msg.name or speaker
            found, rejected = self._facts(doc, who, msg, now)
            found = [f for f in found if not _vague(f[0], who)]
            for text, kind, when, until in found:
                add(text, kind, when, until, msg, who)
            if (not rejected or _opinion(doc)) and coverage(sentence, [t for t, *_ in found]) < KEEP_BELOW:
                said = self._said(doc, who)             # the rules dropped most of it: keep the sentence
                if said:
                    kept.setdefault(id(msg), []).append(said)
        for msg, prev in zip(messages, [recent[-1] if recent else None, *messages[:-1]]):
            # a reply joined with the question it answers
            text = self._reply(msg, prev, speaker, unkept=id(msg) in kept)
            if text:
                kept.pop(id(msg), None)                 # its sentences are in it
                add(text, "said", msg.created_at, None, msg, msg.name or speaker, also=prev)
        if self.sessions and in_session(messages, recent):     # requests, answers and instructions
            for text, kind, msg, who, role in self._session(messages, recent, speaker):
                if role == "user" and kind == "said":
                    kept.pop(id(msg), None)             # the whole message holds what the rules left
                add(text, kind, msg.created_at, None, msg, who, role=role, verbatim=kind == "said")
        for msg in messages:
            if id(msg) in kept:                         # one memory of what the rules left, in order
                text = ". ".join(kept[id(msg)])
                who = msg.name or speaker
                if not text.startswith(who):
                    text = f"{who}: {text}"             # whose words these are, as the facts name them
                ref = msg.created_at or now
                when = when_stated(text, ref)
                ok = when is not None and when <= ref
                add(text, "said", when if ok else msg.created_at, None, msg, who)
        for msg in messages:                            # a shared image's caption, said by the sharer
            if msg.role == "user" and msg.content and "[" in msg.content:
                for cap in CAPTION.findall(msg.content):
                    what = re.sub(r"^(?:a |an )?(?:photo|photograph|photography|picture|image|pic) of\s+", "",
                                  cap.strip(" ."), flags=re.IGNORECASE)
                    add(f"{msg.name or speaker} shared a photo of {what}", "said", msg.created_at, None, msg,
                        msg.name or speaker)
        return Extraction(status="ok" if facts else "empty", facts=facts, extractor="heuristic",
                          model="heuristic", prompt_version=PROMPT_VERSION,
                          latency_ms=(time.perf_counter() - start) * 1000)

    @staticmethod
    def _session(messages: Sequence[Message], recent: Sequence[Message], speaker: str
                 ) -> list[tuple[str, str, Message, str, str]]:
        """(text, kind, message, who, role) of what a working session with an assistant keeps
        beyond the facts (extraction/sessions.py): each request whole, each answer's lead piece
        naming the request, each standing instruction or preference with its topic first."""
        out = []
        asked: Message | None = next((m for m in reversed(recent) if m.role == "user" and m.content), None)
        for msg in messages:
            if not msg.content:
                continue
            if msg.role == "user":
                who = msg.name or speaker
                asked = msg
                for sent in _sentences(msg.content):
                    rule = instruction(sent, who)
                    if rule:
                        out.append((rule, "state", msg, who, "user"))
                if is_ask(msg.content) or len(msg.content) >= WHOLE_CHARS:
                    out.append((f"{who} asked: {msg.content}" if is_ask(msg.content) else f"{who}: {msg.content}",
                                "said", msg, who, "user"))
            elif msg.role == "assistant":
                gist = request_gist(asked.content) if asked is not None else ""
                whose = (asked.name or speaker) if asked is not None else speaker
                head = f"Assistant, on {whose}'s request '{gist}'" if gist else "Assistant"
                for piece in answer_pieces(msg.content)[:ANSWER_PIECES]:
                    out.append((f"{head}: {piece}", "said", msg, "Assistant", "assistant"))
        return out

    @staticmethod
    def _reply(msg: Message, prev: Message | None, speaker: str, unkept: bool) -> str | None:
        """A reply that only makes sense with the question before it, joined with that question
        ("Melanie asked Caroline: How long has Caroline been creating art? Caroline: Since I was
        17 or so"); None for anything else. `unkept`: the rules made no fact of some of the
        reply's sentences, so a question about the one who answers gives them their topic."""
        if msg.role != "user" or not msg.content or prev is None or not prev.content:
            return None
        who = msg.name or speaker
        asker = prev.name or (speaker if prev.role == "user" else "The assistant")
        if asker == who or prev.role not in ("user", "assistant"):
            return None
        question = question_of(CAPTION.sub("", prev.content))
        if question is None or not (needs_question(CAPTION.sub("", msg.content))
                                    or (unkept and asks_the_replier(question))):
            return None
        answer = list(statement_sentences(prose(msg.content))) or short_answer(CAPTION.sub("", msg.content))
        word = answer_word(CAPTION.sub("", msg.content)) if is_yes_no(question) else None
        if word:
            answer.insert(0, word)
        return joined(asker, who, question, answer) if answer else None

    def _said(self, doc: Any, who: str) -> str | None:
        """The sentence itself, lightly normalised: as said, without the person spoken to ("Maria,
        ...") and the closing punctuation ("I love that purple color"; the memory names the speaker
        in front); None for an order ("Take a look at this") or the speaker naming themself."""
        toks = [t for t in doc if not t.is_space]
        while toks and toks[-1].is_punct:
            toks.pop()
        if len(toks) > 2 and toks[0].tag_ == "NNP" and toks[1].text == ",":
            toks = toks[2:]
        if len(toks) > 2 and toks[-1].tag_ == "NNP" and toks[-2].text == ",":
            toks = toks[:-2]
        if not toks or (toks[0].tag_ == "VB" and toks[0].dep_ == "ROOT"
                        and not any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in toks[0].children)):
            return None
        third = self._rewrite(toks, who, about_other=True)
        if third is None or _is_self_naming(third, who):
            return None
        text = "".join(t.text_with_ws for t in toks).strip()
        return text[:1].upper() + text[1:]

    @staticmethod
    def _clauses(text: str) -> list[str]:
        """The sentences of a message that state something (what gets parsed; ingest primes its
        doc cache with them)."""
        return list(statement_sentences(prose(clean(text))))

    def _facts(self, doc: Any, who: str, msg: Message, now: dt.datetime
               ) -> tuple[list[tuple[str, str, Any, Any]], bool]:
        """(text, kind, valid_from, expires_at) of each fact the sentence states, and whether the
        rules dropped a clause on purpose (hedged, conditional, about code). Time phrases are read
        against the message's time, else `now`."""
        at = msg.created_at
        if self._parser is None:        # no parser: cut at "and/but/so" before a first-person clause
            out = []
            for piece in _split_clauses(doc.text):
                piece = piece.strip(" ,.!;:-")
                if len(piece.split()) >= 2:
                    text = self._rewrite(list(self._doc(piece)), who)
                    out.append((text, "state", at, None))
            return [o for o in out if o[0]], False
        clauses, relations, rejected = find_clauses(doc)
        out = [(_relation_fact(r, who), "state", at, None) for r in relations if r.partner]
        if not clauses and not rejected and _SPEAKER_FIRST.match(doc.text):
            # the parse found no subject (a mis-parse: "I don't eat gluten" with "gluten" as the verb),
            # yet the sentence opens with the speaker and nothing hedged it: take it whole
            text = self._rewrite(list(doc), who)
            return out + ([(text, "state", at, None)] if text else []), False
        for c in clauses:
            # the parse already checked whose clause it is
            text = self._rewrite(c.toks, who, about_other=True, past=c.kind == "event")
            if text is None or _is_self_naming(text, who):
                continue
            if c.kind == "transient" and _has_state_slot(text, who):
                c.kind = "state"             # "I'm unemployed right now" states where someone works
            out.append((text, c.kind, *_times(c, text, at, now)))
        # a kin mention is a fact of its own only where no clause kept it ("Alice's sister Carol lives ...")
        said = " ".join(t for t, *_ in out).lower()
        out += [(_relation_fact(r, who), "state", at, None) for r in relations
                if not r.partner and f"{who}'s {r.noun} {r.name}".lower() not in said]
        return out, rejected

    def _rewrite(self, toks: Sequence[Any], who: str, about_other: bool = False, past: bool = False) -> str | None:
        """The clause in the third person ("I also work" -> "Alice also works"); None when it is
        not about the speaker (nor, with `about_other`, about someone the speaker named)."""
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
                    base = nxt.tag_ == "VBP" and nxt.text.lower() not in self._past_forms and \
                        not (past and nxt.text.lower() in SAME_PAST)         # "I quit Nike" stays past
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
            elif low in ("myself", "ourselves") and getattr(tok, "emphatic", False):   # a Tok of a parsed clause
                # "I prefer jazz myself" -> "Alice prefers jazz", not "... jazz Alice"
                if parts:
                    parts[-1] = parts[-1].rstrip() + ws
            elif low in ("me", "myself"):
                parts.append(who + ws)
            else:
                parts.append(tok.text + ws)
            i += 1
        text = "".join(parts).strip(" .,!;")
        text = text.replace("does n't", "doesn't").replace(" n't", "n't")
        if not subject_seen and not text.startswith(f"{who}'s") and not about_other:
            return None
        if len(text.split()) < 2:
            return None
        return text[0].upper() + text[1:]


def _cleaned(msg: Message) -> Message:
    """The message without a trailing turn marker (extraction/sessions.py: `clean`)."""
    text = clean(msg.content) if msg.content else msg.content
    return msg if text == msg.content else dataclasses.replace(msg, content=text)


def _sentences(text: str) -> list[str]:
    """The sentences of a message's prose (code cut out), as typed."""
    return split_sentences(normalise(prose(text)))


def _times(c: Clause, text: str, at: Any, now: dt.datetime) -> tuple[Any, Any]:
    """valid_from and expires_at of a clause's fact: time phrases read against the message's time
    `at`, or `now` when it has none (valid_from then stays None, the add's default, unless the
    phrase names an earlier moment).

    >>> import datetime as dt
    >>> c = Clause(toks=[], kind="event")
    >>> _times(c, "I moved to Porto last month", None, dt.datetime(2024, 6, 12))
    (datetime.datetime(2024, 5, 13, 0, 0), None)
    """
    ref = at or now
    if c.kind == "transient":
        until = expires(text, ref)
        if until is None and c.passing_days:
            until = ref.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=c.passing_days)
        return at, until
    if c.kind == "event" or re.search(r"\bsince\b", text):
        when = when_stated(text, ref)
        if when is not None and when <= ref:
            return when, None
    return at, None


_SPECULATION = frozenset({"might", "may", "could", "would", "should", "'d", "maybe", "perhaps", "possibly",
                          "probably", "hopefully", "if", "unless", "whether", "wonder", "sure", "bet", "doubt",
                          "imagine", "suppose", "assume", "wish", "dream", "reckon"})


def _opinion(doc: Any) -> bool:
    """A sentence the rules set aside that still says something as it stands: an opinion or a need
    ("I think it's important to stand up for veterans", "We need to spread the word") rather than
    speculation about oneself ("I might move", "I think I'll quit", "if I move ...") or code talk."""
    if any(t.lower_ in _SPECULATION for t in doc) or ERRORISH.search(doc.text):
        return False
    # "I think I'm going to quit": the hedged complement is the speaker's own plan
    return not any(t.dep_ in ("nsubj", "nsubjpass") and t.lower_ in ("i", "we") and t.head.dep_ in ("ccomp", "xcomp")
                   for t in doc)


_VAGUE_END = frozenset({"it", "that", "this", "those", "these", "something", "anything", "them", "stuff", "things",
                        "one", "so"})


_NEEDS_OBJECT = frozenset({"find", "finds", "found", "love", "loves", "like", "likes", "know", "knows", "think",
                           "thinks", "feel", "feels", "appreciate", "appreciates", "want", "wants", "need", "needs",
                           "make", "makes", "made", "get", "gets", "got", "say", "says", "said", "saw", "see", "sees",
                           "hope", "hopes", "mean", "means", "wanted", "loved", "thought", "felt"})


def _vague(text: str, who: str) -> bool:
    """A clause cut down to a name, a verb and a pronoun ("Melanie made something", "Caroline is
    obsessed with those"): no clean fact, so the sentence is kept instead (slot facts always stay)."""
    words = text.rstrip(" .!").split()
    last = words[-1].lower() if words else ""
    if last not in _VAGUE_END and not (len(words) <= 2 and last in _NEEDS_OBJECT):
        return False        # "Alice ran" is a fact; "Caroline finds" lost its object
    return detect_slot(text, speaker=who) is None


def _has_state_slot(text: str, who: str) -> bool:
    m = detect_slot(text, speaker=who)
    return m is not None and not m.slot.startswith("plan:")


def _relation_fact(r: Relation, who: str) -> str:
    """ "my boyfriend Tom" -> "Alice's boyfriend is Tom"; "my sister Carol" -> "Alice has a sister named Carol"."""
    if r.partner:
        return f"{who}'s {r.noun} is {r.name}"
    return f"{who} has a {r.noun} named {r.name}"


def _is_self_naming(text: str, who: str) -> bool:
    """ "I'm Alice" said by Alice states nothing new."""
    return text.lower().rstrip(".! ") in (f"{who} is {who}".lower(), f"{who}'s name is {who}".lower())


def _tagging(nlp: Any) -> Any:
    """text -> Doc: the pipeline without its entity recognizer, which is about half of a clause's
    spaCy time here (the rules read tags, lemmas, stop words and the parse, never entities), and
    with a SpacyNLP's compiled attribute rules (`SpacyNLP.components`: same annotations). Anything
    else (ingest's doc cache, a bare pipeline) is called as it is.

    >>> from memstore.providers.nlp import SpacyNLP
    >>> doc = _tagging(SpacyNLP())("I moved to Lisbon last May")
    >>> ([t.lemma_ for t in doc][:3], doc.has_annotation("ENT_IOB"))
    (['I', 'move', 'to'], False)
    """
    components = getattr(nlp, "components", None)
    if not callable(components):
        return nlp.nlp
    make_doc = nlp.nlp.make_doc
    procs = [proc for name, proc in components() if name != "ner"]

    def tag(text: str) -> Any:
        doc = make_doc(text)
        for proc in procs:
            doc = proc(doc)
        return doc

    return tag


def _parser(nlp: Any) -> Any:
    """The pipeline's dependency parser, loaded even when the shared pipeline leaves it disabled
    (`nlp.disable`), so only the sentences that may state a fact pay for it; None without one."""
    try:
        parser = nlp.get_pipe("parser")
    except (KeyError, AttributeError):
        return None
    return parser if "tagger" in getattr(nlp, "pipe_names", ()) else None


def _irregular_verb_forms(nlp: Any) -> frozenset[str]:
    """Inflected irregular verb forms ("swam", "ran", "felt") from the lemmatizer's exception table
    (empty without a rule lemmatizer)."""
    try:
        exc = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_exc")["verb"]
    except Exception:
        return frozenset()
    return frozenset(form for form, lemmas in exc.items() if form not in lemmas and form not in _IRREGULAR)


def _split_clauses(sentence: str) -> list[str]:
    """Split at "and/but/so/because" before a first-person clause, except where the left part is
    a short noun phrase joined to the subject ("My wife and I are vegan", "Tom and I went"). The
    fallback without a parser.

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


__all__ = ["HeuristicExtractor", "PROMPT_VERSION", "Tok"]
