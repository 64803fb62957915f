"""Messages in every shape mem0 takes (OpenAI chat format), read into `Message`s.

- a string, one message dict, or a list of them;
- `content` a string, a list of parts (`{"type": "text", "text": ...}`, `{"type": "image_url",
  "image_url": {"url": ...}}`, `input_audio`, `file`, `refusal`) or one part as a dict (mem0's
  image shape): text parts are joined, an image is "[image]" until `describe_images` asks a
  vision LLM for a description (config `llm.vision`), audio and files are noted;
- an assistant turn that only calls tools (`"content": None, "tool_calls": [...]`) is skipped:
  tool calls are what the agent did, not memory text (a procedural add renders them as steps);
- a `"role": "tool"` answer is kept as context for the extractor (never the user's facts).

A message that is none of these (not a dict, no content and no tool call, a part without a type)
is an InputError that names it and its part.

>>> [(m.role, m.content) for m in read_messages([
...     {"role": "user", "content": [{"type": "text", "text": "I moved to Lisbon."},
...                                  {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...      "function": {"name": "weather", "arguments": '{"city": "Lisbon"}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "18 C, sunny"}])]
[('user', 'I moved to Lisbon.\\n[image]'), ('tool', '18 C, sunny')]
>>> read_messages([{"role": "user"}])
Traceback (most recent call last):
...
memstore.core.errors.InputError: message #0 has no 'content' (and no tool call) — each message is {"role": "user"|"assistant"|..., "content": "..." or a list of content parts}
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from memstore.core.checks import check_text
from memstore.core.errors import InputError
from memstore.core.model import Message
from memstore.core.timeutil import parse_time

if TYPE_CHECKING:
    from memstore.runtime import Runtime

HINT = 'each message is {"role": "user"|"assistant"|..., "content": "..." or a list of content parts}'
_NO_CONTENT_KEYS = ("tool_calls", "function_call", "refusal", "audio")   # an assistant turn without text
# mem0's wording (mem0/memory/utils.py get_image_description)
VISION_PROMPT = ("A user is providing an image. Provide a high level description of the image and do not "
                 "include any additional text.")


def read_messages(messages: Any, *, procedural: bool = False) -> list[Message]:
    """`add()`'s `messages` as Message objects (see the module doc). With `procedural=True` an
    assistant's tool calls become a text turn ("[called weather({...})]"), since they are the
    steps of the run that the summary records."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise InputError(f"messages must be a string, a dict or a list of dicts, got {type(messages).__name__}")
    tool_names: dict[str, str] = {}         # tool_call_id -> function name, to name the tool's answer
    out: list[Message] = []
    skipped: list[int] = []
    for n, m in enumerate(messages):
        if isinstance(m, Message):
            out.append(m)
            continue
        msg = _read_one(m, n, tool_names, procedural)
        if msg is None:
            skipped.append(n)
        else:
            out.append(msg)
    if not out and skipped:
        raise InputError(f"nothing to remember: message(s) {_list(skipped)} only call tools (no content)",
                         hint="tool calls are not memory text; add the turns that have content, or pass "
                              "memory_type='procedural_memory' with agent_id= to record the run", index=skipped[0])
    return out


def _list(ns: list[int]) -> str:
    return ", ".join(f"#{n}" for n in ns[:5]) + (f" and {len(ns) - 5} more" if len(ns) > 5 else "")


def _read_one(m: Any, n: int, tool_names: dict[str, str], procedural: bool) -> Message | None:
    if not isinstance(m, dict):
        raise InputError(f"message #{n} is {type(m).__name__}, expected a dict", hint=HINT, index=n)
    role = m.get("role", "user")
    if not isinstance(role, str) or not role:
        raise InputError(f"message #{n} has an invalid role {role!r}", hint=HINT, index=n)
    calls = _tool_calls(m, n)
    for call_id, name, _ in calls:
        if call_id:
            tool_names[call_id] = name
    content = m.get("content")
    parts: tuple[tuple[str, ...], ...] | None = None
    if content is None:
        if not any(m.get(k) for k in _NO_CONTENT_KEYS):
            raise InputError(f"message #{n} has no 'content' (and no tool call)", hint=HINT, index=n)
        if not (procedural and calls):
            return None                     # a tool-call turn: what the agent did, not memory text
        text = "\n".join(f"[called {name}({args})]" for _, name, args in calls)
    elif isinstance(content, str):
        text = content
    elif isinstance(content, (list, dict)):
        parts = _read_parts(content if isinstance(content, list) else [content], n)
        text = "\n".join(p[1] if p[0] == "text" else "[image]" for p in parts)
        if not any(p[0] == "image" for p in parts):
            parts = None
    else:
        raise InputError(f"message #{n} content is {type(content).__name__}", hint=HINT, index=n)
    if procedural and calls and content is not None:
        text += "".join(f"\n[called {name}({args})]" for _, name, args in calls)
    check_text(text, f"messages[{n}].content", allow_empty=True)
    name = m.get("name")
    if name is None and role == "tool":
        name = tool_names.get(str(m.get("tool_call_id") or ""))
    if name is not None and not isinstance(name, str):
        raise InputError(f"message #{n} has a name that is not a string: {name!r}", hint=HINT, index=n)
    created = m.get("created_at") or m.get("timestamp")
    return Message(role=role, content=text, name=name,
                   created_at=parse_time(created, f"message #{n} created_at") if created else None,
                   source_message_id=m.get("id"), parts=parts)


def _tool_calls(m: dict, n: int) -> list[tuple[str, str, str]]:
    """(id, function name, arguments) of each tool call of a message (and the legacy function_call)."""
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise InputError(f"message #{n} tool_calls is {type(calls).__name__}, expected a list", hint=HINT, index=n)
    if isinstance(m.get("function_call"), dict):
        calls = [*calls, {"function": m["function_call"]}]
    out = []
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise InputError(f"message #{n} tool call #{k} has no function name",
                             hint='a tool call is {"id": ..., "type": "function", "function": {"name": ..., '
                                  '"arguments": "..."}}', index=n)
        args = fn.get("arguments")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
        out.append((str(call.get("id") or ""), fn["name"], args or ""))
    return out


def _read_parts(parts: list, n: int) -> tuple[tuple[str, ...], ...]:
    """Content parts as ("text", str) / ("image", url, detail); audio, files and unknown part types
    become a short text note, a refusal is dropped."""
    out: list[tuple[str, ...]] = []
    for k, part in enumerate(parts):
        where = f"message #{n} content part #{k}"
        if isinstance(part, str):
            out.append(("text", part))
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str):
            raise InputError(f"{where} has no 'type'", index=n, part=k,
                             hint='a part is {"type": "text", "text": "..."} or {"type": "image_url", '
                                  '"image_url": {"url": "..."}}')
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise InputError(f"{where} is a text part without a 'text' string", hint=HINT, index=n, part=k)
            out.append(("text", part["text"]))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if not isinstance(url, str) or not url:
                raise InputError(f"{where} is an image_url part without a url",
                                 hint='{"type": "image_url", "image_url": {"url": "https://... or data:image/...'
                                      ';base64,..."}}', index=n, part=k)
            detail = image.get("detail") if isinstance(image, dict) else None
            out.append(("image", url, detail if isinstance(detail, str) else ""))
        elif kind == "refusal":
            continue
        elif kind == "input_audio":
            out.append(("text", "[audio]"))
        elif kind == "file":
            f = part.get("file") if isinstance(part.get("file"), dict) else {}
            out.append(("text", f"[file: {f['filename']}]" if isinstance(f.get("filename"), str) else "[file]"))
        else:
            out.append(("text", f"[{kind}]"))
    return tuple(out)


def describe_images(messages: list[Message], rt: Runtime) -> None:
    """Replace each "[image]" of a message with "[image: <description>]" from the LLM (one
    OpenAI-compatible vision call per image), when config `llm.vision` is on; else leave "[image]".
    A failed call raises the LLM's error (nothing is stored; the add can be retried)."""
    cfg = rt.config.llm
    if not cfg.vision or cfg.provider != "openai":
        return
    for m in messages:
        if not m.parts:
            continue
        texts = []
        for part in m.parts:
            if part[0] != "image":
                texts.append(part[1])
                continue
            image = {"url": part[1], "detail": part[2] or cfg.vision_detail}
            chat = [{"role": "user", "content": [{"type": "text", "text": VISION_PROMPT},
                                                 {"type": "image_url", "image_url": image}]}]
            described = _one_line(rt.extractor.complete(chat, purpose="image description"))
            texts.append(f"[image: {described}]" if described else "[image]")
        m.content, m.parts = "\n".join(texts), None


def _one_line(text: str) -> str:
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    return " ".join(text.split())
