"""The ingest conversation format: a conversation's adds, planned or prepared, as plain JSON.

What a Ray worker (memstore/ray/) sends back to the driver, and what the driver sends to the store's
owner (`Memory.ingest_prepared`, `POST /v1/ingest_prepared`): never a pickle. One object per
conversation, format `memstore.ingest-conversation/1`:

    {"format": "memstore.ingest-conversation/1",
     "source": {"format": "locomo", "conversation": "conv-26", "file": "locomo10.json"},
     "keys": ["D1:1", ...],                 # each new message's key in its source, in order
     "now": "2024-05-01T10:00:00",          # the ingest's clock (ISO 8601, UTC, no offset)
     "options": {"slot_supersession": null},
     "embedder": "hashing-384",             # prepared only: the model that made the vectors
     "adds": [{
        "timestamp": ISO|null, "metadata": {...},
        "messages": [{"role": "user", "content": "...", "name": null, "created_at": ISO|null, "key": "D1:1"}],
        "context":  [... the same shape: the messages of the conversation before this add ...],
        # prepared only:
        "extraction": {"status": "ok", "extractor": "heuristic", "model": null, "prompt_version": null,
                       "error": null, "raw": null, "latency_ms": 1.5},
        "facts": [{"text": "...", "attributed_to": "Ana", "role": "user", "sources": ["D1:1"],
                   "valid_from": ISO|null, "expires_at": ISO|null, "kind": "state"|"event"|"said"|…|null,
                   "entities": [["Lisbon", "lisbon", "GPE"]], "terms": {"lisbon": 1},
                   "embedding": "<base64 of little-endian float32 × dim>"}]}]}

The scope is not in the object: it is the call's (`user_id` / `agent_id` / `run_id`), confined by
the caller's token like any other call. Everything the owner can derive it derives itself, so a
client cannot name what is not its own: message ids (`plan.message_id` of scope, format,
conversation and key), extraction run ids, fact ids and content hashes, the slots a fact states
(read again at the write), and every decision of
the write (duplicates, supersessions). `decode_conversation` checks every field (type, size, that
each fact's sources are messages of its add, the vector's size and the embedder) and raises
`PreparedConversationError` (an InvalidInputError; HTTP 409) naming the field.

>>> import datetime as dt
>>> from memstore.core.identity import Scope
>>> from memstore.core.model import AddOptions, AddState, Message
>>> from memstore.ingest.plan import ConversationJob
>>> st = AddState(scope=Scope(user_id="ana"), messages=[Message("user", "I live in Oslo", source_message_id="k1")],
...               metadata={}, infer=True, options=AddOptions(gather_context=False, keep_all_messages=True))
>>> st.now = dt.datetime(2024, 5, 1); st.extraction_run_id = "r1"
>>> job = ConversationJob(format="jsonl", id="c1", file="x.jsonl", keys=["k1"], states=[st])
>>> back = decode_conversation(encode_conversation(job), Scope(user_id="ana"))
>>> back.states[0].messages[0].content, back.keys, back.states[0].messages[0].id == message_id(Scope(user_id="ana").key, "jsonl", "c1", "k1")
('I live in Oslo', ['k1'], True)
>>> decode_conversation({**encode_conversation(job), "keys": ["k2"]}, Scope(user_id="ana"))
Traceback (most recent call last):
...
memstore.core.errors.PreparedConversationError: ingest conversation: keys: must list each add's message keys once, in order — ...
"""
from __future__ import annotations

import base64
import datetime as dt
import math
from typing import Any

import numpy as np

from memstore.core.errors import MemstoreError, PreparedConversationError
from memstore.core.identity import Scope, check_metadata
from memstore.core.ids import content_hash, new_id
from memstore.core.model import AddOptions, AddState, Extraction, Fact, Message
from memstore.core.timeutil import utcnow
from memstore.ingest.plan import ConversationJob, message_id

FORMAT = "memstore.ingest-conversation/1"
MAX_TEXT = 1_000_000               # characters of one message or fact
MAX_ITEMS = 100_000                # messages, adds or facts of one conversation
_ROLES = frozenset({"user", "assistant", "system", "tool", "function"})
_STATUSES = frozenset({"ok", "empty", "malformed", "llm_error"})
_SLOT_MODES = frozenset({None, "always", "heuristic", "off"})
_HINT = "send conversations as memstore/on_ray (memstore.wire.prepared.encode_conversation) writes them"


# -- encode ---------------------------------------------------------------------------------------
def _time(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _message(m: Message) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, "name": m.name, "created_at": _time(m.created_at),
            "key": m.source_message_id or ""}


def _vector(v: Any) -> str:
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def _fact(f: Fact, keys: dict[str, str]) -> dict[str, Any]:
    return {"text": f.text, "attributed_to": f.attributed_to, "role": f.role,
            "sources": [keys[i] for i in f.source_message_ids if i in keys],
            "valid_from": _time(f.valid_from), "expires_at": _time(f.expires_at), "kind": f.kind,
            "entities": [[e.name, e.norm, e.label] for e in f.entities], "terms": dict(f.terms),
            "embedding": None if f.embedding is None else _vector(f.embedding)}


def encode_conversation(job: ConversationJob, *, embedder: str | None = None) -> dict[str, Any]:
    """`job` as the format's JSON object; its prepared part (extraction, facts, embedder) when the
    adds have been prepared."""
    first = job.states[0] if job.states else None
    out: dict[str, Any] = {
        "format": FORMAT, "source": {"format": job.format, "conversation": job.id, "file": job.file},
        "keys": list(job.keys), "now": _time(first.now) if first else None,
        "options": {"slot_supersession": first.options.slot_supersession if first else None}, "adds": []}
    if embedder is not None:
        out["embedder"] = embedder
    for st in job.states:
        keys = {m.id: m.source_message_id or "" for m in st.messages if m.id}
        add: dict[str, Any] = {"timestamp": _time(st.timestamp),
                               "metadata": dict(st.metadata or {}),
                               "messages": [_message(m) for m in st.messages],
                               "context": [_message(m) for m in st.context_messages]}
        if st.extraction is not None:
            ex = st.extraction
            add["extraction"] = {"status": ex.status, "extractor": ex.extractor, "model": ex.model,
                                 "prompt_version": ex.prompt_version, "error": ex.error, "raw": ex.raw,
                                 "latency_ms": float(ex.latency_ms)}
            add["facts"] = [_fact(f, keys) for f in st.facts]
        out["adds"].append(add)
    return out


# -- decode (checked) -----------------------------------------------------------------------------
def _bad(where: str, what: str) -> PreparedConversationError:
    return PreparedConversationError(f"ingest conversation: {where}: {what}", hint=_HINT)


def _obj(value: Any, where: str, keys: set[str], required: set[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(where, f"must be an object, got {type(value).__name__}")
    unknown = set(value) - keys
    if unknown:
        raise _bad(where, f"unknown field(s) {sorted(unknown)}")
    missing = set(required) - set(value)
    if missing:
        raise _bad(where, f"missing field(s) {sorted(missing)}")
    return value


def _str(value: Any, where: str, *, optional: bool = False, max_len: int = 10_000) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _bad(where, f"must be text, got {type(value).__name__}")
    if len(value) > max_len or "\x00" in value:
        raise _bad(where, f"over {max_len:,} characters or holds a NUL character")
    return value


def _list(value: Any, where: str, max_len: int = MAX_ITEMS) -> list[Any]:
    if not isinstance(value, list):
        raise _bad(where, f"must be a list, got {type(value).__name__}")
    if len(value) > max_len:
        raise _bad(where, f"holds {len(value):,} items, over {max_len:,}")
    return value


def _when(value: Any, where: str) -> dt.datetime | None:
    if value is None:
        return None
    text = _str(value, where, max_len=40)
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        raise _bad(where, f"{text!r} is not an ISO 8601 time") from None
    return t.astimezone(dt.timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def _messages(value: Any, where: str, scope: Scope, fmt: str, conv: str, file: str) -> list[Message]:
    out = []
    for i, item in enumerate(_list(value, where)):
        w = f"{where}[{i}]"
        d = _obj(item, w, {"role", "content", "name", "created_at", "key"}, {"role", "content", "key"})
        role = _str(d["role"], f"{w}.role", max_len=20)
        if role not in _ROLES:
            raise _bad(f"{w}.role", f"{role!r} is not one of {sorted(_ROLES)}")
        content = _str(d["content"], f"{w}.content", max_len=MAX_TEXT)
        if not content.strip():
            raise _bad(f"{w}.content", "is empty")
        key = _str(d["key"], f"{w}.key", max_len=1000)
        out.append(Message(role=role, content=content, name=_str(d.get("name"), f"{w}.name", optional=True),
                           created_at=_when(d.get("created_at"), f"{w}.created_at"),
                           id=message_id(scope.key, fmt, conv, key), source_file=file,
                           source_conversation=conv, source_message_id=key))
    return out


def _embedding(value: Any, where: str, dim: int | None) -> np.ndarray:
    text = _str(value, where, max_len=1_000_000)
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise _bad(where, "is not base64") from None
    if len(raw) % 4 or (dim is not None and len(raw) != 4 * dim):
        raise _bad(where, f"holds {len(raw) / 4:g} floats, the store's vectors have {dim}")
    vec = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vec).all():
        raise _bad(where, "holds a NaN or infinite value")
    return vec


def _facts(value: Any, where: str, by_key: dict[str, str], dim: int | None) -> list[Fact]:
    from memstore.providers.nlp import Entity

    out = []
    for i, item in enumerate(_list(value, where)):
        w = f"{where}[{i}]"
        d = _obj(item, w, {"text", "attributed_to", "role", "sources", "valid_from", "expires_at", "kind",
                           "entities", "terms", "embedding"}, {"text", "embedding"})
        text = _str(d["text"], f"{w}.text", max_len=MAX_TEXT)
        if not text.strip():
            raise _bad(f"{w}.text", "is empty")
        sources = []
        for j, key in enumerate(_list(d.get("sources", []), f"{w}.sources")):
            key = _str(key, f"{w}.sources[{j}]", max_len=1000)
            if key not in by_key:
                raise _bad(f"{w}.sources[{j}]", f"{key!r} is not a message of this add")
            sources.append(by_key[key])
        kind = _str(d.get("kind"), f"{w}.kind", optional=True, max_len=40)
        role = _str(d.get("role"), f"{w}.role", optional=True, max_len=20)
        entities = []
        for j, e in enumerate(_list(d.get("entities", []), f"{w}.entities", 10_000)):
            if not (isinstance(e, list) and len(e) == 3):
                raise _bad(f"{w}.entities[{j}]", "must be [name, norm, label]")
            entities.append(Entity(*(_str(x, f"{w}.entities[{j}]", max_len=1000) for x in e)))
        terms = d.get("terms", {})
        if not isinstance(terms, dict) or not all(
                isinstance(t, str) and len(t) <= 1000 and isinstance(n, int) and not isinstance(n, bool) and 0 < n < 1e9
                for t, n in terms.items()):
            raise _bad(f"{w}.terms", "must map words to positive counts")
        if d["embedding"] is None:
            raise _bad(f"{w}.embedding", "is missing: a prepared fact carries its vector")
        out.append(Fact(text=text, id=new_id(), hash=content_hash(text), attributed_to=_str(d.get("attributed_to"), f"{w}.attributed_to", optional=True,
                                                      max_len=1000),
                        role=role, source_message_ids=sources, kind=kind, entities=entities, terms=dict(terms),
                        valid_from=_when(d.get("valid_from"), f"{w}.valid_from"),
                        expires_at=_when(d.get("expires_at"), f"{w}.expires_at"),
                        embedding=_embedding(d["embedding"], f"{w}.embedding", dim)))
    return out


def _extraction(value: Any, where: str) -> Extraction:
    d = _obj(value, where, {"status", "extractor", "model", "prompt_version", "error", "raw", "latency_ms"},
             {"status", "extractor"})
    if d["status"] not in _STATUSES:
        raise _bad(f"{where}.status", f"{d['status']!r} is not one of {sorted(_STATUSES)}")
    latency = d.get("latency_ms", 0.0)
    if not isinstance(latency, (int, float)) or isinstance(latency, bool) or not math.isfinite(latency):
        raise _bad(f"{where}.latency_ms", "must be a number")
    return Extraction(status=d["status"], facts=[], extractor=_str(d["extractor"], f"{where}.extractor", max_len=40),
                      model=_str(d.get("model"), f"{where}.model", optional=True, max_len=200),
                      prompt_version=_str(d.get("prompt_version"), f"{where}.prompt_version", optional=True,
                                          max_len=200),
                      error=_str(d.get("error"), f"{where}.error", optional=True, max_len=MAX_TEXT),
                      raw=_str(d.get("raw"), f"{where}.raw", optional=True, max_len=MAX_TEXT),
                      latency_ms=float(latency))


def decode_conversation(data: Any, scope: Scope, *, dim: int | None = None, embedder: str | None = None,
                        prepared: bool = False) -> ConversationJob:
    """A checked `ConversationJob` of `scope` from the format's JSON object. With `prepared`, every
    add must carry its extraction and facts, made by `embedder` (vectors of `dim` floats)."""
    d = _obj(data, "conversation", {"format", "source", "keys", "now", "options", "embedder", "adds"},
             {"format", "source", "keys", "now", "adds"})
    if d["format"] != FORMAT:
        raise _bad("format", f"{d['format']!r} is not {FORMAT!r}")
    src = _obj(d["source"], "source", {"format", "conversation", "file"}, {"format", "conversation"})
    fmt = _str(src["format"], "source.format", max_len=40)
    conv = _str(src["conversation"], "source.conversation", max_len=1000)
    file = _str(src.get("file") or "", "source.file", max_len=4096)
    if prepared and embedder is not None and d.get("embedder") != embedder:
        raise PreparedConversationError(f"these conversations were embedded with {d.get('embedder')!r}; the store's "
                                f"embedder is {embedder!r}", hint="prepare them with the store's embedder "
                                "(memstore ingest --on-ray … --embedder PROVIDER[:MODEL])")
    now = _when(d["now"], "now") or utcnow()
    opts = _obj(d.get("options") or {}, "options", {"slot_supersession"})
    if opts.get("slot_supersession") not in _SLOT_MODES:
        raise _bad("options.slot_supersession", f"{opts.get('slot_supersession')!r} is not a slot_supersession mode")
    options = AddOptions(gather_context=False, keep_all_messages=True, slot_supersession=opts.get("slot_supersession"))
    keys = [_str(k, f"keys[{i}]", max_len=1000) for i, k in enumerate(_list(d["keys"], "keys"))]
    states = []
    for i, item in enumerate(_list(d["adds"], "adds")):
        w = f"adds[{i}]"
        a = _obj(item, w, {"timestamp", "metadata", "messages", "context", "extraction", "facts"},
                 {"messages"} | ({"extraction", "facts"} if prepared else set()))
        try:
            meta = check_metadata(a.get("metadata") or None) or {}
        except MemstoreError as exc:
            raise _bad(f"{w}.metadata", str(exc)) from None
        msgs = _messages(a["messages"], f"{w}.messages", scope, fmt, conv, file)
        if not msgs:
            raise _bad(f"{w}.messages", "is empty")
        st = AddState(scope=scope, messages=msgs, metadata=meta, infer=True, options=options,
                      timestamp=_when(a.get("timestamp"), f"{w}.timestamp"))
        st.now = now
        st.extraction_run_id = new_id()            # the owner names its rows itself
        st.context_messages = _messages(a.get("context") or [], f"{w}.context", scope, fmt, conv, file)
        if "extraction" in a:
            st.extraction = _extraction(a["extraction"], f"{w}.extraction")
            st.facts = _facts(a.get("facts") or [], f"{w}.facts", {m.source_message_id: m.id for m in msgs}, dim)
            st.extraction.facts = list(st.facts)
            st.embedded_with = d.get("embedder") if isinstance(d.get("embedder"), str) else None
        states.append(st)
    given = [m.source_message_id for st in states for m in st.messages]
    if given != keys or len(set(keys)) != len(keys):
        raise _bad("keys", "must list each add's message keys once, in order")
    return ConversationJob(format=fmt, id=conv, file=file, keys=keys, states=states)
