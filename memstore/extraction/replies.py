"""Replies that only make sense with the turn they answer, for the offline extractor (regular
expressions only).

"Since I was 17 or so", "They were awestruck and humbled", "Yeah, we go a few times a week" or a
bare "Yes!" say little on their own: what they answer is in the other person's question (and so
is the topic of "I wanted a way to destress" after "What got you into running?", where the rules
make no fact of it). Such a reply is kept as one memory that joins the question to the answer,
attributed to the one who answered ("Melanie asked Caroline: How long has Caroline been creating
art? Caroline: Since I was 17 or so"), citing both turns. A reply that stands on its own ("I
adopted a cat last week" after "What's new?") needs no question and gets none.

>>> question_of("Love that purple color! For walking or running?")
'For walking or running?'
>>> question_of("Sounds great. See you soon!") is None
True
>>> needs_question("They were awestruck and humbled.")
True
>>> needs_question("I adopted a cat last week.")
False
>>> joined("Melanie", "Caroline", "How long have you been creating art?", ["Since I was 17 or so"])
'Melanie asked Caroline: How long has Caroline been creating art? Caroline: Since I was 17 or so'
"""
from __future__ import annotations

import re

from memstore.extraction.chat_text import normalise, split_sentences, strip_discourse
from memstore.extraction.said import is_filler, is_request

__all__ = ["answer_word", "asks_the_replier", "is_yes_no", "joined", "needs_question", "question_of", "short_answer"]

# The reply opens with an answer word: "Yes!", "Nope, never been", "Yeah, we go a few times a week".
_ANSWER_WORD = re.compile(r"^(?:yes|yeah|yep|yup|yea|no|nope|nah|sure|definitely|absolutely|totally|"
                          r"of course|not really|not yet|kind of|kinda|sort of)\b", re.IGNORECASE)
# A sentence that points back at what was asked: "They were ...", "It was Matt Patterson", "Those ..."
_BACK = re.compile(r"^(?:it|it's|its|they|they're|they've|them|that|that's|those|these|this|this's|she|she's|he|"
                   r"he's|her|his|there|both|neither|either|one|ones|some|same|the one|mostly|mainly|usually|"
                   r"probably|maybe|just|only|not|never|always|all)\b", re.IGNORECASE)
# A fragment without its own subject: "Since I was 17", "Seven years now", "For running", "Researching ..."
_FRAGMENT = re.compile(r"^(?:since|for|about|at|in|on|with|from|to|by|around|like|because|cause|'cause|"
                       r"a|an|some|lots|plenty|few|several|every|each|once|twice|\d+\S*|one|two|three|four|five|"
                       r"six|seven|eight|nine|ten|a few|\w+ing)\b", re.IGNORECASE)
_YOU = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
# The verb before "you" agrees with the name that takes its place: "Do you" -> "Does Alice".
_VERB_YOU = re.compile(r"\b(do|are|have|were|'re|'ve)(\s+)(?=you\b)", re.IGNORECASE)
_AGREE = {"do": "does", "are": "is", "have": "has", "were": "was", "'re": " is", "'ve": " has"}
_YES_NO = re.compile(r"^(?:do|does|did|is|are|was|were|have|has|had|can|could|will|would|should|any|ever|"
                     r"got|been)\b", re.IGNORECASE)
# A question that only returns the conversation ("How about you?", "What about you?"): nothing to join.
_BOUNCE = re.compile(r"^(?:(?:and |so )?(?:how|what) about you|you|and you|how are you|how have you been|"
                     r"how's it going|what's up|wbu|hbu|right|huh|really|isn't it|don't you think|"
                     r"(?:how|what else) can I (?:help|do)|anything else|is there anything else|"
                     r"what can I (?:help|do))\b",
                     re.IGNORECASE)
MAX_WORDS = 60            # of the answer kept in a joined memory


def question_of(text: str) -> str | None:
    """The question a message ends with (its last question sentence that asks about something),
    cleaned; None when it asks nothing."""
    for sent in reversed(split_sentences(normalise(text))):
        if not sent.endswith("?"):
            continue
        s = strip_discourse(sent)
        if len(s.split()) >= 2 and not _BOUNCE.match(s):
            return s[:1].upper() + s[1:]
    return None


def asks_the_replier(question: str) -> bool:
    """The question asks about the one who answers ("What got you into running?"): the topic of
    what they say next may be in the question only.

    >>> asks_the_replier("What got you into running?"), asks_the_replier("How did the kids react?")
    (True, False)
    """
    return _YOU.search(question) is not None


def needs_question(reply: str) -> bool:
    """Whether the reply only makes sense with the question it answers: its first sentence is an
    answer word, a pointer back at what was asked, a fragment, or short."""
    sents = split_sentences(normalise(reply))
    if not sents:
        return False
    first = sents[0].strip()
    if _ANSWER_WORD.match(first):
        return True
    s = strip_discourse(first)
    if not s:
        return True
    return bool(_BACK.match(s) or _FRAGMENT.match(s)) or len(s.split()) <= 4


def is_yes_no(question: str) -> bool:
    """A question answered by yes or no ("Do you have kids?")."""
    return _YES_NO.match(question) is not None


def answer_word(reply: str) -> str | None:
    """The answer word a reply opens with, capitalised ("Yes", "Nope"), or None."""
    m = _ANSWER_WORD.match(normalise(reply))
    return m.group(0)[:1].upper() + m.group(0)[1:].lower() if m else None


def short_answer(reply: str) -> list[str]:
    """The words of a reply too short to be a statement of their own ("Two.", "Shadow!"), without
    questions, requests and small talk.

    >>> short_answer("Yes! Two."), short_answer("Thanks so much!"), short_answer("Explain it simply")
    (['Two'], [], [])
    """
    out = []
    for sent in split_sentences(normalise(reply)):
        s = strip_discourse(sent).strip(" .!")
        if s and not sent.endswith("?") and not is_filler(s) and not is_request(s):
            out.append(s)
    return out


def _agree(verb: str) -> str:
    out = _AGREE[verb.lower()]
    return out[:1].upper() + out[1:] if verb[:1].isupper() else out


def joined(asker: str, replier: str, question: str, answer: list[str]) -> str:
    """One memory of a question and its answer; "you" in the question is the one who answered."""
    q = _VERB_YOU.sub(lambda m: _agree(m.group(1)) + m.group(2), question)
    q = _YOU.sub(lambda m: replier if m.group(1).lower() in ("you", "yourself") else f"{replier}'s", q)
    words: list[str] = []
    for sent in answer:
        if len(words) >= MAX_WORDS:
            break
        words.extend(sent.rstrip(" .!;").split() + ["."])
    text = " ".join(words[:-1]) if words and words[-1] == "." else " ".join(words)
    text = text.replace(" .", ".")
    return f"{asker} asked {replier}: {q} {replier}: {text}"
