"""Working sessions with an assistant, for the offline extractor (regular expressions only).

In a chat with an assistant (coding projects, tutoring, planning) much of what a user later asks
about is in the requests and in the answers: "what did you recommend for the rate limiter?", "which
versions did I say I was using?". The clause rules keep first-person statements only, so here:

- a user's request (a message that asks or orders something, or pastes code) is kept whole, cleaned,
  as one memory: "Sam asked: I'm trying to set up Flask-Limiter ... ```python ...```";
- an assistant's answer is kept by its lead piece (cut at a heading or paragraph within ~1,200
  characters, a code block never cut), attributed to the assistant and naming the request it answers: "Assistant, on Sam's request
  'How do I set the limit per minute?': Use `@limiter.limit(\"100/minute\")` ...";
- a standing instruction ("Always include logging details when I ask about matcher failures") is
  also kept with its topic first, the words a later request about it would use: "When Sam asks about
  matcher failures: always include logging details".

Code stays code: fenced blocks (```...```) are cut out before sentences are split (`prose`), and
kept verbatim in the whole-message memory. A trailing turn marker some exports append to each user
turn ("->-> 3,13") is no content: `clean` removes it, and nothing made only of markers, numbers and
punctuation is ever stored (`has_content`).

>>> clean("Can you help me set up the notifier? ->-> 3,13")
'Can you help me set up the notifier?'
>>> has_content("->-> 3,13"), has_content("Use Redis.")
(False, True)
>>> prose("Here is my code:\\n```js\\nconst x = require('axios');\\n```\\nIt fails.")
'Here is my code:\\n\\nIt fails.'
>>> instruction("Always include detailed logging information when I ask about matcher failures.", "Sam")
'When Sam asks about matcher failures: always include detailed logging information'
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from memstore.core.model import Message
from memstore.extraction.chat_text import normalise, split_sentences, strip_discourse
from memstore.extraction.said import is_filler, is_request

__all__ = ["ANSWER_CHARS", "ANSWER_PIECES", "answer_pieces", "clean", "has_content", "in_session", "instruction", "is_ask", "prose",
           "request_gist"]

_MARKER = re.compile(r"\s*(?:->\s*)+->?\s*\d+(?:\s*,\s*\d+)*\s*$")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_LETTERS = re.compile(r"[A-Za-z]{2,}")
_HEADING = re.compile(r"\n(?=#{1,6}\s)|\n\s*\n")
# "Always ... when I ask about X", "Never ... whenever I ask for X", "From now on, ..."
_STANDING = re.compile(r"^(?:please\s+)?(?:always|never|from now on|make sure to|be sure to|remember to|"
                       r"don't ever|do not ever)\b", re.IGNORECASE)
_WHEN_ASK = re.compile(r",?\s*(?:when(?:ever)?|if)\s+I\s+(?:ask|inquire|request|talk|want to know)"
                       r"(?:\s+(?:you\s+)?(?:about|for|regarding|on))?\s+(?P<topic>[^.!?]+)", re.IGNORECASE)
# "I prefer rule-based suggestions over ML models, especially when it comes to resume feedback"
_PREFER = re.compile(r"^I\s+(?:really\s+|generally\s+|usually\s+|strongly\s+|would\s+|'d\s+)?prefer(?:red)?\s+"
                     r"(?P<rest>.+)$", re.IGNORECASE)
_TOPIC = (re.compile(r",?\s+(?:especially\s+|particularly\s+|mainly\s+)?when it comes to\s+(?P<topic>[^,.;!?]{4,})",
                     re.IGNORECASE),
          re.compile(r",?\s+(?:especially\s+|particularly\s+)?(?:for|in|when(?:ever)? I(?:'m| am)?)\s+"
                     r"(?P<topic>[^,.;!?]{4,})", re.IGNORECASE))
ANSWER_CHARS = 1200          # the longest piece of an answer kept as one memory
# Pieces kept per answer: its lead (the first piece: what it recommends or explains). Every piece
# made ~3x the memories of the raw turns and crowded the results: BEAM 500K conversations 1-2 (the
# tuning half), any-hit@10 / @20 .571 / .686 with every piece, .686 / .800 with the lead only.
ANSWER_PIECES = 1
_GIST_CHARS = 120            # of the request named in each piece of its answer


def clean(text: str) -> str:
    """The message without a trailing turn marker ("... ->-> 3,13")."""
    return _MARKER.sub("", text).strip()


def has_content(text: str) -> bool:
    """Whether a text has words at all (not a bare marker, number or punctuation)."""
    return len(_LETTERS.findall(text)) >= 2


def prose(text: str) -> str:
    """The text with its fenced code blocks cut out (sentences are split in prose only)."""
    return _FENCE.sub("", text).strip() if "```" in text else text


def in_session(messages: Sequence[Message], recent: Sequence[Message]) -> bool:
    """A conversation with an assistant: one of these messages or the ones before is the assistant's."""
    return any(m.role == "assistant" and m.content for m in (*recent, *messages))


def is_ask(text: str) -> bool:
    """A message that asks or orders something, or pastes code: kept whole in a session."""
    if "```" in text:
        return True
    for sent in split_sentences(normalise(prose(text))):
        s = strip_discourse(sent)
        if sent.endswith("?") and len(s.split()) >= 3:
            return True
        if is_request(s) and len(s.split()) >= 3:
            return True
    return False


def request_gist(text: str) -> str:
    """What a request is about, short: its first sentence that says something (where a user
    names the topic: "I'm trying to add rate limiting to my Flask API"; the question after it is
    often only "Can you help me?"), for naming the request in each piece of the answer."""
    sents = [strip_discourse(s) for s in split_sentences(normalise(prose(clean(text))))]
    sents = [s for s in sents if s and not is_filler(s) and len(s.split()) >= 3]
    ask = sents[0] if sents else ""
    return ask if len(ask) <= _GIST_CHARS else ask[:_GIST_CHARS].rsplit(" ", 1)[0] + " ..."


def answer_pieces(text: str, limit: int = ANSWER_CHARS) -> list[str]:
    """An answer cut at its headings and blank lines into pieces of at most `limit` characters
    (a code block is never cut inside; a longer block stays one piece), small talk and short
    pieces that only ask something left out."""
    blocks: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):            # code blocks whole, prose between them cut at paragraphs
        blocks += [b for b in _HEADING.split(text[pos:m.start()])]
        blocks.append(m.group())
        pos = m.end()
    blocks += _HEADING.split(text[pos:])
    pieces: list[str] = []
    cur = ""
    for b in (b.strip() for b in blocks):
        if not b:
            continue
        if cur and len(cur) + len(b) + 2 > limit:
            pieces.append(cur)
            cur = ""
        cur = f"{cur}\n\n{b}" if cur else b
    if cur:
        pieces.append(cur)
    return [p for p in pieces if has_content(p) and not (len(p) < 200 and (is_filler(p) or _asks_only(p)))]


def _asks_only(text: str) -> bool:
    """Only questions and small talk ("Do you have any pets?", "Anything else?"): nothing said."""
    sents = [s for s in split_sentences(normalise(text)) if not is_filler(strip_discourse(s))]
    return all(s.endswith("?") for s in sents)


def instruction(sentence: str, who: str) -> str | None:
    """A standing instruction or a preference with its topic first ("When Sam asks about X:
    always ...", "For X: Sam prefers Y"); None for any other sentence.

    >>> instruction("I prefer rule-based suggestions over ML models, especially when it comes to resume feedback.", "Sam")
    'For resume feedback: Sam prefers rule-based suggestions over ML models'
    """
    s = strip_discourse(sentence.strip()).rstrip(" .!")
    pref = _PREFER.match(s)
    if pref:
        rest = pref.group("rest")
        at = next((m for m in (p.search(rest) for p in _TOPIC) if m), None)
        if at is None:
            return None
        topic = re.sub(r"\b(?:my|me)\b", lambda w: f"{who}'s" if w.group() == "my" else who, at.group("topic"))
        return f"For {topic.strip()}: {who} prefers {rest[:at.start()].strip(' ,')}"
    if not _STANDING.match(s):
        return None
    m = _WHEN_ASK.search(s)
    if m is None:
        return f"{who}'s standing instruction: {s[:1].lower() + s[1:]}"
    topic = m.group("topic").strip(" ,")
    rule = (s[:m.start()] + s[m.end():]).strip(" ,")
    topic = re.sub(r"\b(?:my|me)\b", lambda w: f"{who}'s" if w.group() == "my" else who, topic)
    return f"When {who} asks about {topic}: {rule[:1].lower() + rule[1:]}"
