"""Chat text as people type it, made readable for the offline extractor (regular expressions only):
sentences, discourse markers and interjections stripped, common lowercase spellings fixed, and the
cheap test that most messages fail (no first-person statement: nothing to parse).

>>> candidate_sentences("Big news: I moved to Seattle last week, and I now work at Globex. Thoughts?")
['I moved to Seattle last week, and I now work at Globex.']
>>> candidate_sentences("so yeah im vegan now lol 🌱")
["I'm vegan now"]
>>> candidate_sentences("Can you write me a regex?"), candidate_sentences("thanks!!")
([], [])
"""
from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["candidate_sentences", "normalise", "split_sentences", "strip_discourse", "states_something", "with_subject"]

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+|\s+[-–—]\s+")
# Emoji and pictographs, variation selectors, zero-width joiners.
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D\u20E3]+")
_SMILEY = re.compile(r"(?:^|\s)(?:[:;]-?[()DPp/|]|<3|\^\^|xD)(?=\s|$)")
_FIXES = {"i": "I", "im": "I'm", "ive": "I've", "Id": "I'd", "dont": "don't", "doesnt": "doesn't", "didnt": "didn't",
          "cant": "can't", "wont": "won't", "isnt": "isn't", "u": "you", "ur": "your", "’": "'"}
_FIX = re.compile(r"\b(?:i|im|ive|Id|dont|doesnt|didnt|cant|wont|isnt|u|ur)\b|’")
_IS = re.compile(r"\b(name|job|plan|birthday)'s\b", re.IGNORECASE)     # "my name's Jo" (not a possessive)
# A sentence that drops its "I" ("feeling sick today", "just moved to Denver!")
_PRO_DROP = re.compile(r"^(?:(?:just|finally|currently|still|recently|also)\s+)?(?:(feeling|moving|working|living|heading|"
                       r"staying|flying|starting|visiting|dating|training|planning|thinking of|trying)|(been)|"
                       r"(moved|started|got|quit|joined|adopted|broke up|graduated|married|switched|left|settled|"
                       r"sold|bought|traded|handed|gave|stopped|retired|finished|went|took|tried|met|made|found|lost|signed up|"
                       r"love|loved|miss|wish))\b(?!\s+(?:it|that|this|you|them)\b|[,.!]|$)", re.IGNORECASE)
_PRO_SUBJECT = ("I'm ", "I've ", "I ")
_NO_LONGER = re.compile(r"^no longer\s+(?:(an?\s|vegan|vegetarian|pescatarian|single|married|engaged|together|in\s|at\s|"
                        r"with\s|a\s|\w+ed\b|\w+ing\b)|\w)", re.IGNORECASE)
# Any first-person word, however typed: a message without one is skipped at once.
_ANY_FIRST = re.compile(r"\b(?:i|im|i'm|ive|i've|id|i'd|ill|i'll|my|me|mine|we|we're|we've|our|us)\b", re.IGNORECASE)
# Leading discourse markers and interjections ("Big news:", "Oh, by the way,", "honestly", "so yeah").
_LEADING = re.compile(
    r"^(?:(?:big |great |good |sad |quick |some )?(?:news|update)\s*[:!,-]+|guess what[,!:]*|fun fact[:,]*|"
    r"(?:oh|ah|um+|uh+|hmm+|well|so|ok(?:ay)?|yeah|yes|yep|no(?!\s+longer\b)|nope|haha+|lol|lmao|omg|wow|ugh|anyway(?:s)?|"
    r"btw|fyi|by the way|honestly|actually|basically|also|plus|and|but|hey|hi|hello|oh and|ps|p\.s\.|"
    r"long story short|to be honest|tbh|as i said|like i said|just so you know|for context|side note|"
    r"update)\b[\s,:!.-]*)+", re.IGNORECASE)
_TRAILING = re.compile(r"(?:[\s,]+(?:lol|lmao|haha+|hehe|xd|tbh|idk|imo|omg|ugh|yay|btw|fyi|:\)|:\(|!+))+\s*$",
                       re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Mm]y|[Mm]e|[Mm]ine|[Ww]e|[Ww]e're|[Ww]e've|[Oo]ur|[Uu]s)\b")
_REQUEST = re.compile(r"^(?:can|could|would|will|should|do|does|did|is|are|am|how|what|why|when|where|who|which|"
                      r"tell me|show me|give me|write|explain|let me know|any idea)\b",
                      re.IGNORECASE)
_SMALL_TALK = re.compile(r"^(?:thanks?|thank you|thx|ty|ok(?:ay)?|sure|yes|no|yep|nope|cool|nice|great|good "
                         r"(?:morning|night|evening)|bye|lol|haha+|same|exactly)\b[\s\w]{0,12}[.!]*$", re.IGNORECASE)


def normalise(text: str) -> str:
    """Typed-chat spellings fixed where that is safe: lowercase "i"/"im"/"dont", curly quotes,
    emoji and smileys dropped, whitespace collapsed.

    >>> normalise("ok so basically i live in austin now and im a barista lol 😂")
    "ok so basically I live in austin now and I'm a barista lol"
    """
    if not text.isascii():
        text = _EMOJI.sub(" ", text)
    text = _FIX.sub(lambda m: _FIXES[m.group()], _SMILEY.sub(" ", text))
    text = _IS.sub(r"\1 is", text)
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of a message.

    >>> split_sentences("I'm Bob. I live in Austin!\\nWhat about you?")
    ["I'm Bob.", 'I live in Austin!', 'What about you?']
    """
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s and s.strip()]


def strip_discourse(sentence: str) -> str:
    """Drop leading discourse markers / interjections and trailing "lol", "idk", "!!".

    >>> strip_discourse("Oh, by the way, I'm vegetarian.")
    "I'm vegetarian."
    >>> strip_discourse("Honestly the movie was boring lol")
    'the movie was boring'
    """
    s = _LEADING.sub("", sentence).strip()
    s = _TRAILING.sub("", s).strip()
    return s[:1].upper() + s[1:] if s[:1] == "i" and s[1:2] in (" ", "'") else s


def states_something(sentence: str) -> bool:
    """The cheap test: could this sentence state a fact about the speaker or someone they know?
    Questions, requests, small talk and sentences without a first-person word cannot.

    >>> states_something("I live in Boston"), states_something("Should I move to Austin?")
    (True, False)
    >>> states_something("Please summarize this article"), states_something("thanks so much")
    (False, False)
    """
    s = sentence.strip()
    if not s or s.endswith("?") or len(s.split()) < 2:
        return False
    if _REQUEST.match(s) or _SMALL_TALK.match(s):
        return False
    return _FIRST_PERSON.search(s) is not None


def with_subject(sentence: str) -> str:
    """A sentence that drops its "I" gets it back.

    >>> with_subject("feeling sick today"), with_subject("Sold the Civic"), with_subject("Been to Rome once")
    ("I'm feeling sick today", 'I sold the Civic', "I've been to Rome once")
    """
    m = _NO_LONGER.match(sentence)
    if m:                                   # "no longer vegan" / "no longer eat meat"
        return ("I'm " if m.group(1) else "I ") + sentence[0].lower() + sentence[1:]
    m = _PRO_DROP.match(sentence)
    if not m:
        return sentence
    return _PRO_SUBJECT[m.lastindex - 1] + sentence[0].lower() + sentence[1:]


def candidate_sentences(text: str) -> list[str]:
    """The sentences of a message worth parsing, cleaned (the rest is skipped without spaCy)."""
    if not _ANY_FIRST.search(text) and not _PRO_DROP.match(text.strip()):
        return []
    return list(_candidates(text))


@lru_cache(maxsize=4096)      # ingest asks twice per message: to prime the doc cache, then to extract
def _candidates(text: str) -> tuple[str, ...]:
    out = []
    for sent in split_sentences(normalise(text)):
        if sent.endswith("?"):
            continue
        s = strip_discourse(sent)
        s = with_subject(s)
        if states_something(s):
            out.append(s)
    return tuple(out)
