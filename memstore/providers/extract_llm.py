"""LLM fact extraction through any OpenAI-compatible chat endpoint (ONE call per `add`).

ADD-only: the model returns new facts; it never rewrites stored ones. It sees related stored
memories under short ids (m1, m2, ...) and may return `linked_memory_ids` and `supersedes` with
those short ids; they are mapped back to real ids here.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence

from memstore.errors import LLMError, LLMUnavailableError
from memstore.pipeline.types import ContextMemory, Extraction, Fact, Message

PROMPT_VERSION = "llm-1"

SYSTEM_PROMPT = """You extract durable facts about the people in a conversation, for a long-term memory.
Rules:
- Return only NEW facts stated in the new messages: preferences, identity, places, relations, jobs, plans, events with dates.
- Each fact is one short third-person sentence that names its subject (e.g. "Alice is vegetarian").
- Never restate a fact already in the stored memories. Never edit stored memories.
- If a fact is related to stored memories, list their short ids in "linked_memory_ids".
- If a fact makes a stored memory no longer true (moved, changed job, ended relationship), list its short id in "supersedes".
- "attributed_to" is the name of the person who stated the fact.
Answer with JSON only: {"facts": [{"text": "...", "attributed_to": "...", "linked_memory_ids": [], "supersedes": []}]}
If there is nothing worth remembering, answer {"facts": []}."""


def build_prompt(messages: Sequence[Message], recent: Sequence[Message], context: Sequence[ContextMemory],
                 speaker: str, extra: str | None = None) -> list[dict[str, str]]:
    """The chat messages sent to the model (versioned by PROMPT_VERSION)."""
    def fmt(m: Message) -> str:
        who = m.name or (speaker if m.role == "user" else m.role)
        when = f" [{m.created_at:%Y-%m-%d %H:%M}]" if m.created_at else ""
        return f"{who}{when}: {m.content}"

    parts = []
    if context:
        parts.append("Stored memories:\n" + "\n".join(f"{c.short_id}: {c.memory}" for c in context))
    if recent:
        parts.append("Earlier messages (context only):\n" + "\n".join(fmt(m) for m in recent))
    parts.append("New messages:\n" + "\n".join(fmt(m) for m in messages))
    system = SYSTEM_PROMPT + (f"\n{extra}" if extra else "")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def parse_facts(raw: str, context: Sequence[ContextMemory], speaker: str) -> list[Fact]:
    """Parse the model's JSON answer; raises ValueError with the reason when it is malformed.

    >>> ctx = [ContextMemory("m1", "id-123", "Alice lives in Boston")]
    >>> f = parse_facts('{"facts": [{"text": "Alice moved to Seattle", "supersedes": ["m1"]}]}', ctx, "Alice")[0]
    >>> f.text, f.supersedes, f.attributed_to
    ('Alice moved to Seattle', ['id-123'], 'Alice')
    """
    text = raw.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"answer is not JSON ({exc.msg} at char {exc.pos})") from None
    if isinstance(data, list):
        data = {"facts": data}
    if not isinstance(data, dict) or "facts" not in data:
        raise ValueError("answer has no 'facts' key")
    items = data["facts"]
    if not isinstance(items, list):
        raise ValueError(f"'facts' is {type(items).__name__}, expected a list")
    by_short = {c.short_id: c.id for c in context}
    facts = []
    for n, item in enumerate(items):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError(f"fact #{n} has no text string")
        if not item["text"].strip():
            continue

        def ids(key: str) -> list[str]:
            vals = item.get(key) or []
            if not isinstance(vals, list):
                vals = [vals]
            return [by_short[str(v)] for v in vals if str(v) in by_short]

        who = item.get("attributed_to")
        facts.append(Fact(text=item["text"].strip(), attributed_to=who if isinstance(who, str) and who else speaker,
                          linked_ids=ids("linked_memory_ids"), supersedes=ids("supersedes")))
    return facts


class LLMExtractor:
    """Example: LLMExtractor(model="llama3.1", base_url="http://localhost:11434/v1")"""

    name = "llm"

    def __init__(self, *, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float = 0.0,
                 json_mode: bool = True) -> None:
        import openai

        self._openai = openai
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                    timeout=timeout, max_retries=max_retries)
        self.model, self.temperature, self.json_mode = model, temperature, json_mode

    def extract(self, messages: Sequence[Message], context: Sequence[ContextMemory], *, speaker: str,
                recent: Sequence[Message] = (), prompt: str | None = None) -> Extraction:
        chat = build_prompt(messages, recent, context, speaker, prompt)
        kwargs = {"response_format": {"type": "json_object"}} if self.json_mode else {}
        start = time.perf_counter()
        o = self._openai
        try:
            resp = self.client.chat.completions.create(model=self.model, messages=chat,
                                                       temperature=self.temperature, **kwargs)
        except (o.APIConnectionError, o.RateLimitError, o.InternalServerError) as exc:
            raise LLMUnavailableError(f"LLM endpoint failed: {type(exc).__name__}: {exc}") from exc
        except o.APIStatusError as exc:
            raise LLMError(f"LLM endpoint refused the request: {exc}", retryable=False,
                           hint="check llm.model, llm.api_key and llm.base_url") from exc
        latency = (time.perf_counter() - start) * 1000
        raw = (resp.choices[0].message.content or "") if resp.choices else ""
        base = dict(extractor="llm", model=self.model, prompt_version=PROMPT_VERSION, raw=raw, latency_ms=latency)
        try:
            facts = parse_facts(raw, context, speaker)
        except ValueError as exc:
            return Extraction(status="malformed", facts=[], error=str(exc), **base)
        for f in facts:
            f.role = "user"
            f.source_message_ids = [m.id for m in messages if m.id]
            f.valid_from = next((m.created_at for m in reversed(messages) if m.created_at), None)
        return Extraction(status="ok" if facts else "empty", facts=facts, **base)
