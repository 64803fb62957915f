"""What a message says, sentence by sentence, for the offline extractor (regular expressions only).

The rules (clauses.py) make clean facts of first-person and named-person clauses; everything else
a person states must not be lost. This module decides which sentences state something at all
(not a question, request, greeting, thanks or bare reaction), turns an agent's note about the user
into the user's own statement ("Prefers window seats", "User's daughter starts school in May"),
lifts a shared image's caption out as a sentence of its own, and says how much of a sentence a
set of facts kept, so the extractor can keep the sentence itself where the rules dropped most of it.

>>> statement_sentences("Hey Mel! Good to see you! The kids loved the beach. How have you been?")
('The kids loved the beach.',)
>>> statement_sentences("Prefers window seats. User's daughter starts school in May.")
('I prefers window seats.', 'My daughter starts school in May.')
>>> statement_sentences("Thanks, Caroline! That's awesome!"), statement_sentences("Summarize this article")
((), ())
"""
from __future__ import annotations

import re
from functools import lru_cache

from memstore.extraction.chat_text import normalise, split_sentences, strip_discourse, with_subject

__all__ = ["CAPTION", "coverage", "is_filler", "is_request", "statement_sentences"]

# A shared image's caption, as the LoCoMo reader writes it ("[shares an image: a photo of ...]").
CAPTION = re.compile(r"\s*\[shares? (?:an image|a photo): ([^\]]+)\]")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
# An agent's note names the user in the third person: "User's daughter", "The user prefers".
_USER_POSS = re.compile(r"\b(?:[Tt]he )?[Uu]ser['’]s\b")
_USER_SUBJ = re.compile(r"^(?:[Tt]he )?[Uu]ser\b(?=\s+[a-z])")
# A note that drops its subject: it opens with a verb in the third person ("Prefers ...", "Has two kids").
_NOTE_VERB = re.compile(
    r"^(?:(?:also|usually|often|always|never|still|now|currently|really|mostly)\s+)?"
    r"(?:(?:is|was|has)\s+(?!it\b|this\b|that\b|there\b|he\b|she\b|they\b|you\b|anyone\b|anybody\b)|"
    r"(?:prefers|likes|loves|enjoys|dislikes|hates|wants|needs|lives|works|owns|drives|uses|plays|speaks|"
    r"studies|eats|drinks|avoids|follows|reads|watches|runs|keeps|collects|teaches|volunteers|attends|goes|"
    r"travels|visits|misses|plans|intends|hopes|cares|values|tends|struggles|suffers|takes|trains|writes|"
    r"cooks|bakes|grows|rides|swims|paints|practices|practises|supports|believes|feels|knows|wears|"
    r"identifies|mentioned|said|says|used to)\b)")
# Greetings, thanks, wishes and bare reactions: they state nothing about anyone.
_SOCIAL = re.compile(
    r"^(?:hi|hey|hello|hiya|yo|howdy|good (?:morning|afternoon|evening|night|to see you|to hear(?: that)?|"
    r"luck|job|point|idea|call|one)|nice (?:to (?:see|meet|hear)|one|work|job)|great (?:to (?:see|hear)|job|"
    r"idea|point|question)|long time no (?:see|talk)|see (?:you|ya)|talk (?:to you )?(?:soon|later)|take care|"
    r"sorry|bye|goodbye|cheers|congrats|congratulations|welcome|you're welcome|no (?:problem|worries)|thanks?|"
    r"thank you|thx|ty|appreciate (?:it|that|you)|happy (?:birthday|holidays|new year)|enjoy|have (?:a|fun)|"
    r"well done|way to go|keep (?:it up|going|up the)|wish (?:you|me) luck|fingers crossed|sure|of course|"
    r"absolutely|definitely|totally|exactly|same|me too|wow|cool|awesome|amazing|nice|great|sweet|lovely|"
    r"oh|ah|aw+|yay|woo+|omg|lol|haha+|true|right|ok(?:ay)?|alright|yes|yeah|yep|yup|no|nope|sounds|looks|"
    r"seems|bet|agreed|for sure|i know|i see|i agree|me neither|you too|you bet|makes sense|got it|fair enough|"
    r"no idea|noted|understood|perfect|that helps|that works|will do|gotcha)\b", re.IGNORECASE)
_WISH = re.compile(r"^(?:good luck|best of luck|congrat(?:s|ulations)|happy \w+day|have (?:fun|a (?:good|great|nice))|"
                   r"enjoy|take care|welcome|see you|talk soon|bye|safe travels|get well)\b", re.IGNORECASE)
_THANKS = re.compile(r"\bthank(?:s| you)\b", re.IGNORECASE)
# Words that carry no content of their own (function words, pronouns, chat adverbs, bare praise).
_LIGHT = frozenset("""
a an the and or but so if then than that this these those it its it's that's this's there there's here here's
is are was were be been being am do does did done have has had having will would can could should shall may
might must i me my mine we us our ours you your yours he him his she her hers they them their theirs one
to of in on at for with about from by as into over up down out off just really so very too also even still
such quite pretty totally super much many more most lot lots all any some what how why when where who which
not no n't never ever always yes yeah yep oh wow ah hey hi hello thanks thank please well now then again
great good nice cool awesome amazing wonderful fantastic lovely beautiful incredible awful terrible bad sad
happy glad fun funny cute sweet hard tough best better sure true right okay ok thing things stuff way kind
sounds sound looks look seems seem feel feels felt got get gets go going gone make makes made let lets like
love loved know knew think thought mean means guess hope wish can't don't won't i'm you're it'd i've i'd
you'll you've we're they're he's she's what's let's gonna wanna
""".split())


def is_filler(sentence: str) -> bool:
    """A greeting, thanks, wish or bare reaction: nothing worth remembering.

    >>> [is_filler(s) for s in ("Good to see you!", "That sounds great, Mel", "It was so fun!",
    ...                         "The kids loved the beach", "I'm vegan")]
    [True, True, True, False, False]
    """
    words = [w.lower().replace("’", "'") for w in _WORD.findall(sentence)]
    content = [w for w in words if w not in _LIGHT and (len(w) > 2 or w.isdigit())]
    if not content:
        return True
    if (_SOCIAL.match(sentence.strip()) or _THANKS.search(sentence)) and len(content) <= 1:
        return True
    if _WISH.match(sentence.strip()) and len(content) <= 2:       # "Good luck with the move!"
        return True
    # a reaction to what the other said, named at the end: "That's a great goal, Jon!"
    return len(content) == 1 and len(words) <= 5 and words[0] in ("that", "that's", "this", "it", "it's",
                                                                  "what", "how", "such", "you", "you're")


def _as_statement(sentence: str) -> str:
    """An agent's note about the user as the user's own words: "User's X" -> "My X", "The user
    prefers" / "Prefers" -> "I prefers" (the extractor puts the user's name in place of "I" and
    keeps the verb as written)."""
    s = _USER_POSS.sub(lambda m: "My" if m.start() == 0 else "my", sentence)
    s = _USER_SUBJ.sub("I", s)
    if _NOTE_VERB.match(s[:1].lower() + s[1:]):
        s = "I " + s[0].lower() + s[1:]
    return s


_TAG_QUESTION = re.compile(r",\s*right\s*\?+!?$", re.IGNORECASE)      # not "isn't it?": small talk
# The person spoken to, named at the start or the end: "Maria, I started yoga", "... too, Jon!"
_VOCATIVE_START = re.compile(r"^[A-Z][a-z]+,\s+(?=(?:I|I'm|I've|you|we|it|it's|that|this|my|your|the|so|just)\b)")
_VOCATIVE_END = re.compile(r",\s+[A-Z][a-z]+(?=[.!]*$)")
_REQUEST = re.compile(
    r"^(?:can|could|would|will|should|shall|do|does|did|is|are|am|was|were|how|what|why|when|where|"
    r"who|whom|whose|which|tell me|show me|give me|help me|let me know|any idea|summari[sz]e|write|explain|"
    r"translate|list|describe|compare|generate|create|draft|fix|rewrite|convert|calculate|find|suggest|"
    r"recommend|name|define|check out|look at|imagine|remind me|make me|send me)\b(?!['’])", re.IGNORECASE)


def is_request(sentence: str) -> bool:
    """A request or an order, not a statement ("Explain compound interest simply").

    >>> is_request("Explain compound interest simply"), is_request("Running, mostly")
    (True, False)
    """
    return _REQUEST.match(sentence.strip()) is not None


def statement_sentences(text: str) -> tuple[str, ...]:
    """The sentences of a message that state something, cleaned (captions are not included:
    see CAPTION)."""
    return _statements(CAPTION.sub("", text))


@lru_cache(maxsize=8192)      # ingest asks twice per message: to prime the doc cache, then to extract
def _statements(text: str) -> tuple[str, ...]:
    out = []
    for sent in split_sentences(normalise(text)):
        sent = _TAG_QUESTION.sub(".", sent)     # "Sunflowers mean warmth, right?" states something
        if sent.endswith("?") or sent.endswith("?!"):
            continue
        s = _VOCATIVE_END.sub("", _VOCATIVE_START.sub("", strip_discourse(sent)))
        if len(s.split()) < 2 or is_filler(s):
            continue
        s = with_subject(_as_statement(s))
        if not _REQUEST.match(s):
            out.append(s)
    return tuple(out)


def content_words(text: str) -> set[str]:
    """The words of a text that carry content, lower-cased, crudely stemmed (for `coverage`)."""
    return {_stem(w) for w in (w.lower().replace("’", "'") for w in _WORD.findall(text))
            if w not in _LIGHT and (len(w) > 2 or w.isdigit())}


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def coverage(sentence: str, facts: list[str]) -> float:
    """The share of the sentence's content words that the facts kept (1.0 for a sentence without any).

    >>> round(coverage("I went to the LGBTQ support group yesterday and it was so powerful",
    ...                ["Caroline went to a LGBTQ support group yesterday"]), 2)
    0.83
    """
    words = content_words(sentence)
    if not words:
        return 1.0
    kept = set().union(*(content_words(f) for f in facts)) if facts else set()
    return len(words & kept) / len(words)
