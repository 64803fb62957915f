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

from memstore.core.errors import LLMError, LLMUnavailableError
from memstore.core.model import ContextMemory, Extraction, Fact, Message

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
        if m.context_only:          # a tool's answer: context for the facts, not a statement by anyone
            who = f"tool result{f' of {m.name}' if m.name else ''} (context only, not stated by a person)"
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


MAX_FACT_CHARS = 2000          # defaults of llm.max_fact_chars / llm.max_facts / llm.max_answer_bytes
MAX_FACTS = 200
MAX_ANSWER_BYTES = 1_000_000
RAW_KEEP = 64 * 1024           # what a malformed run keeps of the raw answer


def parse_facts(raw: str, context: Sequence[ContextMemory], speaker: str, *, max_facts: int = MAX_FACTS,
                max_fact_chars: int = MAX_FACT_CHARS) -> list[Fact]:
    """Parse the model's JSON answer; raises ValueError with the reason when it is malformed or
    over a cap (more than `max_facts` facts, a fact longer than `max_fact_chars`): then nothing of it
    is stored.

    >>> ctx = [ContextMemory("m1", "id-123", "Alice lives in Boston")]
    >>> f = parse_facts('{"facts": [{"text": "Alice moved to Seattle", "supersedes": ["m1"]}]}', ctx, "Alice")[0]
    >>> f.text, f.supersedes, f.attributed_to
    ('Alice moved to Seattle', ['id-123'], 'Alice')
    >>> parse_facts('{"facts": ["' + "x" * 30 + '"]}', [], "A", max_fact_chars=20)
    Traceback (most recent call last):
    ...
    ValueError: fact #0 is 30 characters, over llm.max_fact_chars (20)
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
    if len(items) > max_facts:
        raise ValueError(f"answer has {len(items)} facts, over llm.max_facts ({max_facts})")
    by_short = {c.short_id: c.id for c in context}
    facts = []
    for n, item in enumerate(items):
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError(f"fact #{n} has no text string")
        if not item["text"].strip():
            continue
        if len(item["text"]) > max_fact_chars:
            raise ValueError(f"fact #{n} is {len(item['text'])} characters, over llm.max_fact_chars ({max_fact_chars})")

        def ids(key: str, item: dict = item) -> list[str]:
            vals = item.get(key) or []
            if not isinstance(vals, list):
                vals = [vals]
            return [by_short[str(v)] for v in vals if str(v) in by_short]

        who = item.get("attributed_to")
        facts.append(Fact(text=item["text"].strip(), attributed_to=who if isinstance(who, str) and who else speaker,
                          linked_ids=ids("linked_memory_ids"), supersedes=ids("supersedes")))
    return facts


class _Capped(Exception):
    """The answer grew past llm.max_answer_bytes (carries its first RAW_KEEP bytes)."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.size = head, size


class LLMExtractor:
    """Example: LLMExtractor(model="llama3.1", base_url="http://localhost:11434/v1")

    Bounds: `timeout` is per read; `deadline` is the total for one extract() (every retry and every
    byte of the answer included: a server that trickles its answer is cut off there); the answer
    is read at most `max_answer_bytes` long, then it is a `malformed` run with its head kept."""

    name = "llm"
    prompt_version = PROMPT_VERSION

    def __init__(self, *, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 2, temperature: float = 0.0,
                 json_mode: bool = True, deadline: float | None = None, max_facts: int = MAX_FACTS,
                 max_fact_chars: int = MAX_FACT_CHARS, max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        import openai

        self._openai = openai
        # retries are ours (below), so that they count against the deadline
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                    timeout=timeout, max_retries=0)
        self.model, self.temperature, self.json_mode = model, temperature, json_mode
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.deadline = float(deadline) if deadline else float(timeout) * (int(max_retries) + 1)
        self.max_facts, self.max_fact_chars, self.max_answer_bytes = max_facts, max_fact_chars, max_answer_bytes

    def _answer(self, chat: list[dict[str, str]], kwargs: dict, until: float) -> str:
        """One HTTP call, reading the body in chunks: cut off at the deadline or the size cap."""
        budget = max(0.05, min(self.timeout, until - time.monotonic()))
        with self.client.chat.completions.with_streaming_response.create(
                model=self.model, messages=chat, temperature=self.temperature, timeout=budget, **kwargs) as resp:
            buf = bytearray()
            for chunk in resp.iter_bytes():
                buf += chunk
                if len(buf) > self.max_answer_bytes:
                    raise _Capped(bytes(buf[:RAW_KEEP]), len(buf))
                if time.monotonic() > until:
                    raise self._openai.APITimeoutError(request=resp.http_request)
        data = json.loads(bytes(buf))
        choices = data.get("choices") or []
        return str((choices[0].get("message") or {}).get("content") or "") if choices else ""

    def _call(self, chat: list[dict[str, str]], kwargs: dict) -> str:
        o = self._openai
        until = time.monotonic() + self.deadline
        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if time.monotonic() >= until:
                break
            try:
                return self._answer(chat, kwargs, until)
            except (o.APIConnectionError, o.RateLimitError, o.InternalServerError) as exc:
                last = exc
            except ValueError as exc:          # the HTTP body is not the JSON of a chat completion
                raise LLMUnavailableError(f"LLM endpoint sent a body that is not a chat completion: {exc}") from exc
            wait = _retry_after(last) or min(8.0, 0.5 * 2 ** attempt)
            if attempt == self.max_retries or time.monotonic() + wait >= until:
                break
            time.sleep(wait)
        if time.monotonic() >= until:
            raise LLMUnavailableError(f"LLM call exceeded its deadline of {self.deadline:g} s (llm.deadline), "
                                      f"{type(last).__name__ if last else 'no answer'}", deadline_s=self.deadline)
        raise LLMUnavailableError(f"LLM endpoint failed: {type(last).__name__}: {last}") from last

    def complete(self, chat: list[dict], *, purpose: str = "LLM call") -> str:
        """The model's plain-text answer to `chat` (no JSON mode), within the same deadline,
        retries and size cap as extraction: image descriptions, procedural summaries."""
        try:
            return self._call(chat, {})
        except _Capped as exc:
            raise LLMError(f"{purpose}: the answer is over llm.max_answer_bytes ({self.max_answer_bytes:,} bytes)",
                           retryable=False, hint="raise llm.max_answer_bytes or shorten the input",
                           size=exc.size) from None
        except self._openai.APIStatusError as exc:
            raise LLMError(f"{purpose}: LLM endpoint refused the request: {exc}", retryable=False,
                           hint="check llm.model (a vision call needs a model that sees images), llm.api_key "
                                "and llm.base_url") from exc

    def extract(self, messages: Sequence[Message], context: Sequence[ContextMemory], *, speaker: str,
                recent: Sequence[Message] = (), prompt: str | None = None) -> Extraction:
        chat = build_prompt(messages, recent, context, speaker, prompt)
        kwargs = {"response_format": {"type": "json_object"}} if self.json_mode else {}
        start = time.perf_counter()
        o = self._openai
        base = dict(extractor="llm", model=self.model, prompt_version=PROMPT_VERSION)
        try:
            raw = self._call(chat, kwargs)
        except _Capped as exc:
            return Extraction(status="malformed", facts=[], raw=exc.head.decode("utf-8", "replace"),
                              error=f"answer over llm.max_answer_bytes ({self.max_answer_bytes:,} bytes): "
                                    f"read {exc.size:,} bytes, cut off", latency_ms=_ms(start), **base)
        except o.APIStatusError as exc:
            raise LLMError(f"LLM endpoint refused the request: {exc}", retryable=False,
                           hint="check llm.model, llm.api_key and llm.base_url") from exc
        base.update(raw=raw[:RAW_KEEP], latency_ms=_ms(start))
        try:
            facts = parse_facts(raw, context, speaker, max_facts=self.max_facts, max_fact_chars=self.max_fact_chars)
        except ValueError as exc:
            return Extraction(status="malformed", facts=[], error=str(exc), **base)
        for f in facts:
            f.role = "user"
            f.source_message_ids = [m.id for m in messages if m.id]
            f.valid_from = next((m.created_at for m in reversed(messages) if m.created_at), None)
        return Extraction(status="ok" if facts else "empty", facts=facts, **base)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def _retry_after(exc: Exception | None) -> float | None:
    """Seconds the server asked to wait (Retry-After / retry-after-ms), capped at 60."""
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            if headers.get(key) is not None:
                return min(60.0, float(headers[key]) * scale)
        except (TypeError, ValueError):
            continue
    return None
