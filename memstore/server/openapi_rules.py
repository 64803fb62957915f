"""What the server's OpenAPI document promises beyond a Python signature: the type and limits of
each argument (as pydantic types, so the server checks exactly what it documents), which calls
need an identity, and the JSON each answer holds.

memstore/server/openapi.py builds each `/v1/<method>`'s request model from `Memory`'s signature
and takes an argument's type from here when it has one (`argument_type`); `REQUEST_RULES` adds
what JSON Schema can say but a pydantic field cannot (e.g. "at least one of user_id / agent_id /
run_id"), which the library checks; `RESPONSES` documents each answer.

>>> from typing import get_args
>>> argument_type("frame", "name", "memories") is not None, argument_type("frame", "other", None)
(True, None)
>>> sorted(IDENTITY_OR_FILTERS)
['explain_search', 'get_all', 'search']
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema

from memstore.core.identity import IDENTITY_KEYS, RESERVED_METADATA_KEYS
from memstore.core.scope_rule import IDENTITY_PATTERN, MAX_ID_CHARS
from memstore.retrieval.filters import JSON_PATH

ID_PATTERN = r"^[0-9A-Za-z_:-][0-9A-Za-z_.:-]{0,199}$"   # the ids add() hands out (UUIDs), safe in a URL path
NAME_PATTERN = r"^[^\x00]*[^\s\x00\x1c-\x1f][^\x00]*$"   # not blank, no NUL (as identity._clean): "alice\n" is alice
TEXT_PATTERN = NAME_PATTERN   # a query or a new text: something, no NUL
# An ISO-8601 date or date-time parse_time reads (years 1970-2099, so an offset never leaves datetime's range)
TIME_PATTERN = (r"^(19[7-9][0-9]|20[0-9][0-9])-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
                r"([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])?)?$")
DURATION_PATTERN = r"^([1-9][0-9]{0,3}[smhdw]){1,3}$"    # "30d", "12h", "1d12h" (create_token's expires)
TOKEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$"   # api_tokens.NAME_RE
FRAME_NAMES = ("memories", "history", "entities", "postings", "keywords", "links", "messages", "extraction_runs",
               "contradictions", "entity_degrees", "extraction_outcomes", "memories_per_day", "scope_summary",
               "timeline", "reads")
CHANNELS = ("semantic", "keyword", "entity")
SIGNALS = ("semantic", "keyword", "entity", "recency", "slot", "person", "episode", "time")
FORMATS = ("auto", "chatgpt", "claude", "locomo", "jsonl", "csv", "parquet")
IDENTITY_REQUIRED = frozenset({"add", "delete_all", "timeline", "contradictions", "forget", "ingest", "create_token",
                               "ingest_known", "ingest_prepared"})
IDENTITY_OR_FILTERS = frozenset({"search", "explain_search", "get_all"})

def _whole(value: Any) -> Any:
    """85.0 is an integer in JSON Schema: take it as 85 (strict mode refuses floats for ints)."""
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value


def Int(ge: int, le: int) -> Any:
    """An integer from `ge` to `le` (85.0 counts as 85, as JSON Schema says)."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_whole)]


def valid_unicode(value: Any) -> Any:
    """`value` with every lone surrogate ("\\udc80" in JSON: no character, not storable as UTF-8)
    replaced by U+FFFD, as a UTF-8 decoder does; strings, lists and dict keys and values.

    >>> valid_unicode({"a\\ud800": ["x\\udfff"]})
    {'a\ufffd': ['x\ufffd']}
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [valid_unicode(v) for v in value]
    if isinstance(value, dict):
        return {valid_unicode(k): valid_unicode(v) for k, v in value.items()}
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")
Text = str
DateTimeTag = Annotated[dt.datetime, WithJsonSchema({
    "type": "object", "required": ["$datetime"], "additionalProperties": False,
    "description": "A datetime as memstore's HTTP client sends it.",
    "properties": {"$datetime": {"type": "string", "pattern": TIME_PATTERN}}})]
MemoryId = Annotated[str, Field(pattern=ID_PATTERN, max_length=200, description="A memory id (add() hands them out).")]
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=200)]
# A user / agent / run id: what the one scope rule accepts (core/scope_rule.py), surrounding whitespace included
Identity = Annotated[str, Field(pattern=IDENTITY_PATTERN, max_length=MAX_ID_CHARS)]
Query = Annotated[str, Field(pattern=TEXT_PATTERN, max_length=10_000, description="Text to search for.")]
TimeText = Annotated[str, Field(pattern=TIME_PATTERN, description="ISO-8601, e.g. 2023-05-10T14:00 (UTC unless it "
                                                                  "names an offset).")]
Epoch = Annotated[float, Field(ge=0, le=4_102_444_800, description="Unix epoch seconds.")]
When = Optional[TimeText | Epoch | DateTimeTag]
Count = Int(1, 100_000)
Ids = Optional[MemoryId | Annotated[list[MemoryId], Field(min_length=1, max_length=1000)]]


STRICT = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")   # patterns as Python reads them


class _Strict(BaseModel):
    model_config = STRICT


class TextPart(_Strict):
    type: Literal["text"]
    text: Text


class ImageUrl(_Strict):
    url: Annotated[str, Field(min_length=1)]
    detail: Text | None = None


class ImagePart(_Strict):
    type: Literal["image_url"]
    image_url: ImageUrl


class RefusalPart(_Strict):
    type: Literal["refusal"]
    refusal: Text


class AudioPart(_Strict):
    type: Literal["input_audio"]
    input_audio: dict[str, Any]


class FilePart(_Strict):
    type: Literal["file"]
    file: dict[str, Any]


class ToolFunction(_Strict):
    name: Annotated[str, Field(min_length=1, max_length=200)]
    arguments: Text | dict[str, Any] | None = None


class ToolCall(_Strict):
    """An assistant's tool call (OpenAI shape): skipped as memory text, named in a procedural add."""

    id: Text | None = None
    type: Literal["function"] = "function"
    function: ToolFunction


class ChatMessage(_Strict):
    """One chat message (OpenAI / mem0 shape): text or parts, or (an assistant turn that only calls
    tools) `content` null with `tool_calls`; a `tool` answer names its `tool_call_id`. A message with
    neither content nor tool calls is refused by add() itself (InputError), as in the library."""

    model_config = ConfigDict(**STRICT, json_schema_extra={"anyOf": [
        {"required": ["content"], "properties": {"content": {"not": {"type": "null"}}}},
        {"required": ["tool_calls"], "properties": {"tool_calls": {"type": "array", "minItems": 1}}}]})
    role: Annotated[str, Field(min_length=1, max_length=100)] = "user"
    content: Text | Annotated[list[TextPart | ImagePart | RefusalPart | AudioPart | FilePart], Field(min_length=1)] | None = None
    name: Text | None = None
    created_at: When = None
    timestamp: When = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: Text | None = None


class MemoryUpdate(BaseModel):
    """PUT /memories/{id}: the new text (as `text`, or mem0's `data` / `memory`) and metadata."""

    model_config = ConfigDict(**STRICT, json_schema_extra={
        "anyOf": [{"required": [k], "properties": {k: {"type": "string"}}} for k in ("text", "data", "memory")]})
    text: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None
    data: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None
    memory: Annotated[str, Field(pattern=NAME_PATTERN)] | None = None
    metadata: dict[str, Any] | None = Field(None)


Messages = Union[Text, ChatMessage, Annotated[list[ChatMessage], Field(min_length=1)]]


class KnownConversation(_Strict):
    """ingest_known(): one conversation's source message keys."""

    conversation: str
    keys: list[str]


class IngestConversation(BaseModel):
    """ingest_prepared(): one conversation in the format memstore.ingest-conversation/1
    (memstore/wire/prepared.py). Its fields are checked by the library, which answers a
    conversation that does not fit the format or this store (its embedder, its vector size) with
    409 (PreparedConversationError)."""

    model_config = ConfigDict(extra="allow", strict=True)
    format: Literal["memstore.ingest-conversation/1"]
    source: dict[str, Any]
    keys: list[str]
    now: str | None
    adds: list[dict[str, Any]]

_BY_NAME: dict[str, Any] = {
    "memory_id": MemoryId, "keep": MemoryId, "supersede": Ids, "dismiss": Ids,
    "user_id": Optional[Identity], "agent_id": Optional[Identity], "run_id": Optional[Identity],
    "actor_id": Optional[Name],
    "query": Query, "top_k": Optional[Count], "limit": Optional[Count],
    "now": When, "as_of": When, "timestamp": When, "expiration_date": When,
    "messages": Messages,
    "memory_type": Optional[Literal["procedural_memory"]],
    "channels": Annotated[list[Literal[CHANNELS]], Field(min_length=1)],
    "weights": Optional[dict[Literal[SIGNALS], Annotated[float, Field(ge=0, le=1e6)]]],
    "target": Literal["messages", "history_text"],
    "retain_days": Optional[Int(0, 1_000_000)],
    "format": Literal[FORMATS],
    "partition_by": Optional[Literal[IDENTITY_KEYS + ("scope_key",)]],
    "scope": Optional[dict[Literal[IDENTITY_KEYS], Identity | None]],
    "directory": Annotated[str, Field(pattern=r"^[A-Za-z0-9_./-]{1,200}$",
                                      description="A new (or empty) directory on the server.")],
    "threshold": Optional[Annotated[float, Field(ge=-1e6, le=1e6)]],
}
_BY_METHOD: dict[tuple[str, str], Any] = {
    ("frame", "name"): Literal[FRAME_NAMES],
    ("create_token", "name"): Annotated[str, Field(pattern=TOKEN_NAME_PATTERN)],
    ("revoke_token", "name"): Annotated[str, Field(pattern=TOKEN_NAME_PATTERN)],
    ("create_token", "expires"): Optional[Annotated[str, Field(pattern=DURATION_PATTERN, description="How long from now: 30d, 12h.")] | TimeText | Epoch | DateTimeTag],      # a past time: 409
    ("sql", "query"): Annotated[str, Field(min_length=1, max_length=100_000, description="A DuckDB SELECT.")],
    ("search_all", "top_k"): Count,
    ("get_all", "top_k"): Count,
    ("explain_search", "limit"): Count,
    ("update", "data"): Optional[Annotated[str, Field(pattern=TEXT_PATTERN)]],
    ("update", "text"): Optional[Annotated[str, Field(pattern=TEXT_PATTERN)]],
    ("ingest", "batch_size"): Count, ("ingest", "concurrency"): Int(1, 64),
    ("ingest", "retries"): Int(0, 20),
    ("ingest", "backoff_s"): Annotated[float, Field(ge=0, le=60)],
    ("ingest", "max_message_chars"): Optional[Int(1, 10_000_000)],
    ("ingest", "commit_messages"): Int(1, 1_000_000),
    ("ingest", "workers"): Optional[Int(0, 64)],
    ("ingest_known", "format"): Annotated[str, Field(pattern=r"^[a-z0-9_-]{1,40}$")],
    ("ingest_known", "conversations"): Annotated[list[KnownConversation], Field(max_length=100_000)],
    ("ingest_prepared", "conversations"): Annotated[list[IngestConversation], Field(max_length=100_000,
        description="Conversations in the format memstore.ingest-conversation/1 (memstore/wire/prepared.py).")],
    ("ingest_prepared", "ingest_id"): Optional[Annotated[str, Field(pattern=ID_PATTERN)]],
    ("ingest", "paths"): Union[Annotated[str, Field(pattern=NAME_PATTERN)],
                               Annotated[list[Annotated[str, Field(pattern=NAME_PATTERN)]], Field(min_length=1)]],
}


def argument_type(method: str, name: str, default: Any) -> Any:
    """The documented (and checked) type of `method`'s argument `name`, or None for its Python hint."""
    return _BY_METHOD.get((method, name), _BY_NAME.get(name))


# add()'s messages hold some content unless the add records an agent's run (procedural): messages
# that only call tools are "nothing to remember" (message_shapes.py), a 400 the document must predict
_WITH_CONTENT = {"type": "object", "required": ["content"], "properties": {"content": {"not": {"type": "null"}}}}
SOMETHING_TO_REMEMBER: dict[str, Any] = {"anyOf": [{"type": "string"}, _WITH_CONTENT,
                                                    {"type": "array", "contains": _WITH_CONTENT}]}


def _identity_alternatives(method: str) -> list[dict[str, Any]]:
    name = {"$ref": "#/components/schemas/IdentityValue"}
    out = [{"required": [k], "properties": {k: name}} for k in IDENTITY_KEYS]
    if method in IDENTITY_OR_FILTERS:
        out += [{"required": ["filters"],
                 "properties": {"filters": {"type": "object", "required": [k], "properties": {k: name}}}}
                for k in IDENTITY_KEYS]
    return out


def request_rules(method: str) -> dict[str, Any]:
    """JSON Schema to add to `method`'s arguments model (checked by the library, not by pydantic:
    a token that carries a scope calls without naming it)."""
    if method == "add":     # and a procedural memory is an agent's; any other add needs some content
        return {**request_rules("timeline"), "if": {"required": ["memory_type"],
                                                    "properties": {"memory_type": {"const": "procedural_memory"}}},
                "then": {"required": ["agent_id"],
                         "properties": {"agent_id": {"$ref": "#/components/schemas/IdentityValue"}}},
                "else": {"properties": {"messages": SOMETHING_TO_REMEMBER}}}
    if method in IDENTITY_REQUIRED or method in IDENTITY_OR_FILTERS:
        return {"anyOf": _identity_alternatives(method),
                "description": "Name the scope: at least one of user_id, agent_id, run_id"
                               + (" (here or in filters)" if method in IDENTITY_OR_FILTERS else "")
                               + " (a token that carries a scope may leave it out)."}
    if method == "resolve":
        return {"anyOf": [{"required": [k], "properties": {k: {"not": {"type": "null"}}}}
                          for k in ("supersede", "dismiss")]}
    return {}


_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_OPERATOR = {"type": "object", "minProperties": 1, "additionalProperties": False,
             "properties": {**{op: _SCALAR for op in ("eq", "ne", "gt", "gte", "lt", "lte", "contains", "icontains")},
                            **{op: {"type": "array", "items": {"type": ["string", "number", "null"]}}
                               for op in ("in", "nin")}}}

COMPONENTS: dict[str, Any] = {
    "IdentityValue": {"type": "string", "pattern": IDENTITY_PATTERN, "maxLength": MAX_ID_CHARS,
                      "description": "A user / agent / run id. Stored, compared and placed in its canonical form "
                                     "(surrounding whitespace removed, Unicode NFC; case kept); blank, longer "
                                     "than 200 characters or holding a control or format character: 400 "
                                     "IdentityError (memstore/core/scope_rule.py)."},
    "Filters": {
        "type": "object", "description": "mem0-style filters: {key: value} or {key: {operator: value}} on metadata "
                                         "and identity keys; AND / OR (lists) and NOT combine them.",
        "propertyNames": {"anyOf": [{"pattern": "^[^$]"}, {"pattern": "^" + JSON_PATH.pattern + "$"}]},
        "properties": {"AND": {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/Filters"}},
                       "OR": {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/Filters"}},
                       "NOT": {"$ref": "#/components/schemas/Filters"}},
        "additionalProperties": {"anyOf": [_SCALAR, _OPERATOR]}},
    "Metadata": {"type": "object", "propertyNames": {"not": {"enum": sorted(RESERVED_METADATA_KEYS)}},
                 "description": "Your own keys (not the reserved " + ", ".join(sorted(RESERVED_METADATA_KEYS)) + ")."},
    "MemoryRecord": {"type": "object", "required": ["id", "memory"],
                     "properties": {"id": {"type": "string"}, "memory": {"type": "string"},
                                    "metadata": {"type": ["object", "null"]},
                                    "user_id": {"type": ["string", "null"]}, "agent_id": {"type": ["string", "null"]},
                                    "run_id": {"type": ["string", "null"]}, "score": {"type": ["number", "null"]},
                                    "created_at": {"type": ["string", "null"]},
                                    "updated_at": {"type": ["string", "null"]}}},
    "Results": {"type": "object", "required": ["results"],
                "properties": {"results": {"type": "array", "items": {"$ref": "#/components/schemas/MemoryRecord"}}}},
    "AddResult": {"type": "object", "required": ["results"],
                  "properties": {"results": {"type": "array", "items": {
                      "type": "object", "required": ["id", "event"],
                      "properties": {"id": {"type": "string"}, "memory": {"type": ["string", "null"]},
                                     "event": {"type": "string"}}}}}},
    "HistoryEntry": {"type": "object", "required": ["id", "memory_id", "event"],
                     "properties": {"id": {"type": "string"}, "memory_id": {"type": "string"},
                                    "event": {"type": "string"}}},
    "Confirmation": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
    "IngestReport": {"type": "object", "required": ["messages", "memories"],
                     "properties": {"messages": {"type": "object"}, "memories": {"type": "object"}}},
}
FILTER_ARGUMENTS = {"filters": "Filters", "where": "Filters", "metadata": "Metadata"}

_ref = {name: {"$ref": f"#/components/schemas/{name}"} for name in COMPONENTS}
_OBJECT = {"type": "object"}
_LIST_OF_OBJECTS = {"type": "array", "items": _OBJECT}
RESPONSES: dict[str, dict[str, Any]] = {   # method or "METHOD /path" -> the JSON schema of its 200 answer
    "add": _ref["AddResult"], "search": _ref["Results"], "get_all": _ref["Results"], "search_all": _ref["Results"],
    "get": {"anyOf": [_ref["MemoryRecord"], {"type": "null"}]},
    "history": {"type": "array", "items": _ref["HistoryEntry"]},
    "clear_retention": {"type": "boolean"},
    "apply_retention": {"type": "object", "additionalProperties": {"type": "integer"}},
    "erasure_receipts": _LIST_OF_OBJECTS, "list_tokens": _LIST_OF_OBJECTS, "ingest": _ref["IngestReport"],
    "create_token": {"type": "object", "required": ["name", "token"],
                     "properties": {"name": {"type": "string"}, "token": {"type": "string"}}},
    "POST /memories": _ref["AddResult"], "GET /memories": _ref["Results"], "POST /search": _ref["Results"],
    "GET /memories/{memory_id}": _ref["MemoryRecord"],
    "GET /memories/{memory_id}/history": {"type": "array", "items": _ref["HistoryEntry"]},
    "PUT /memories/{memory_id}": _ref["Confirmation"], "DELETE /memories/{memory_id}": _ref["Confirmation"],
    "DELETE /memories": _ref["Confirmation"], "POST /reset": _ref["Confirmation"],
    "POST /v1/ingest_upload": _ref["IngestReport"],
    "GET /health": {"type": "object", "required": ["service", "version"],
                    "properties": {"service": {"const": "memstore"}, "version": {"type": "string"}}},
}


def response_schema(method: str, path: str, name: str | None) -> dict[str, Any]:
    """The documented JSON of a 200 answer: by route, else by `/v1` method, else any object."""
    return RESPONSES.get(f"{method.upper()} {path}") or (RESPONSES.get(name, _OBJECT) if name else _OBJECT)

UPLOAD_BODY = {   # POST /v1/ingest_upload: the file itself (format= says which; auto tells JSON, JSONL, CSV, Parquet)
    "required": True, "description": "The chat export: ChatGPT / Claude conversations.json, LoCoMo JSON, or rows of "
                                     "messages as JSON, JSONL, CSV or Parquet (format= says which; auto tells).",
    "content": {"application/json": {"schema": {   # documented: Claude's conversations.json (check_json_upload)
        "type": "array", "items": {
            "type": "object", "required": ["chat_messages"],
            "properties": {"chat_messages": {"type": "array", "items": {
                "type": "object", "required": ["sender", "text"],
                "properties": {"sender": {"type": "string"}, "text": {"type": "string"}}}}}}}}}}


class _ClaudeMessage(BaseModel):
    model_config = ConfigDict(strict=True)
    sender: str
    text: str


class _ClaudeConversation(BaseModel):
    model_config = ConfigDict(strict=True)
    chat_messages: list[_ClaudeMessage]


UPLOAD_CHECK_BYTES = 16 << 20


def check_json_upload(path: str) -> None:
    """An upload sent as JSON (Content-Type: application/json) must be a JSON array of
    conversations (objects of a ChatGPT, Claude or LoCoMo export), Claude's (chat_messages) with a
    string sender and text per message. Files over 16 MiB are left to the ingest readers."""
    import json
    import os

    from memstore.core.errors import InvalidInputError

    if os.path.getsize(path) > UPLOAD_CHECK_BYTES:
        return
    try:
        with open(path, "rb") as fh:
            data = json.load(fh)
    except ValueError as exc:
        raise InvalidInputError(f"the upload is sent as JSON but is not JSON: {exc}",
                                hint="send JSONL, CSV or Parquet with another Content-Type") from None
    if not isinstance(data, list):      # every export format is a JSON array (JSONL is not JSON)
        raise InvalidInputError(f"the upload is sent as JSON but is a {type(data).__name__}, not an array of "
                                f"conversations", hint="send JSONL with Content-Type application/x-ndjson")
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not any(k in item for k in _CONVERSATION_KEYS) and \
                not any(str(k).startswith("session_") for k in item):
            raise InvalidInputError(f"conversation #{n} of the upload is not a conversation of a ChatGPT, Claude or "
                                    f"LoCoMo export", hint="upload the export as it was downloaded")
        if "chat_messages" in item:
            try:
                _ClaudeConversation.model_validate(item)
            except ValidationError as exc:
                where = ".".join(str(p) for p in exc.errors()[0].get("loc", ()))
                raise InvalidInputError(f"conversation #{n} is not a Claude conversation: {where}: "
                                        f"{exc.errors()[0].get('msg')}",
                                        hint="upload conversations.json as Claude exported it") from None


_CONVERSATION_KEYS = ("chat_messages", "mapping", "conversation")
