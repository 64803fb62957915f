"""A LangGraph `BaseStore` on memstore: `graph.compile(store=MemstoreStore("data/x.duckdb"))`.

Every item is a memory; its value dict is kept whole in the memory's metadata (`metadata.value`),
its text (the `content` field, or the fields `index` names) is what search ranks with memstore's
hybrid search. `put` over an existing key updates that memory (so `history()` shows every change),
`value=None` deletes it, `ttl` (minutes) becomes the memory's expiration_date (refreshed on reads
once a tenth of it has passed), `index=False` keeps the item out of query search. Store items are
never hidden by slot supersession, and a put is never dropped: two items with the same text each
get their own memory.

Scoping rule (the default): every namespace LangGraph allows works. An item is stored under
`agent_id="langgraph"` (the `agent_id=` argument) and, when its namespace has an element at
`user_position` (default 1, as in LangMem's `("memories", "{user_id}")`), under that element as
`user_id` — so `Memory.forget(user_id="alice")` erases what a graph stored for alice. Shorter
namespaces (`("test",)`, `("memories",)`) live in the store-wide LangGraph scope. A search or
listing whose prefix fixes the user position reads that user's scope only; a shorter prefix is an
application-wide read over this store's LangGraph items, as LangGraph defines it. `identity=`
replaces the rule (then every read must name a namespace the function accepts).

Embeddings: `index={"dims": 1536, "embed": my_embeddings, "fields": ["text"]}` (LangGraph's index
config: an `Embeddings`, a function of texts, or "provider:model" via LangChain; `distance_type`
cosine (default), inner_product or l2) makes the store embed each indexed field's text with that
function and keep the vectors with the item; a query is embedded the same way and each item scores
its best field's similarity, as LangGraph's stores do (also against `memstore serve`: the vectors
travel with the item). An embedded store file also records the function as its embedder.

>>> import tempfile, os
>>> store = MemstoreStore(os.path.join(tempfile.mkdtemp(), "lg.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> store.put(("memories", "alice"), "diet", {"content": "Alice is vegetarian", "topic": "food"})
>>> store.get(("memories", "alice"), "diet").value
{'content': 'Alice is vegetarian', 'topic': 'food'}
>>> [i.key for i in store.search(("memories", "alice"), query="what does alice eat", filter={"topic": "food"})]
['diet']
>>> store.put(("notes",), "n1", {"content": "a note for everyone"})
>>> store.list_namespaces()
[('memories', 'alice'), ('notes',)]
>>> store.close()
"""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from memstore.core.errors import ConfigError, DuplicateMemoryError
from memstore.core.read_context import quiet, reading
from memstore.core.timeutil import utcnow
from memstore.integrations.langgraph_filters import LangGraphFilter

_ALL = 100_000          # "every item of a scope" (memstore's largest top_k)
_STORE_AGENT = "langgraph"



def _as_utc(value: Any) -> dt.datetime:
    when = dt.datetime.fromisoformat(value) if isinstance(value, str) else (value or utcnow())
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _path_values(value: Any, path: str) -> list[Any]:
    """Values at a LangGraph index path ("a.b", "a[0]", "a[-1]", "a[*].b"; "$" is the whole value).

    >>> _path_values({"a": [{"b": 1}, {"b": 2}], "c": "x"}, "a[*].b"), _path_values({"c": "x"}, "c")
    ([1, 2], ['x'])
    """
    if path == "$":
        return [value]
    current = [value]
    for part in path.replace("]", "").split("."):
        name, _, index = part.partition("[")
        nxt = []
        for v in current:
            if name:
                v = v.get(name) if isinstance(v, dict) else None
            if index and isinstance(v, list):
                nxt.extend(v if index == "*" else v[int(index):int(index) + 1 or None])
            elif v is not None and not index:
                nxt.append(v)
        current = nxt
    return current


class LangGraphEmbedder:
    """A LangGraph `index["embed"]` (LangChain `Embeddings`, a function of texts, or a
    "provider:model" string) as a memstore embedder (`name`, `dim`, `embed(texts)`)."""

    def __init__(self, embed: Any, dims: int) -> None:
        from langgraph.store.base.embed import ensure_embeddings

        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise ConfigError(f"index['dims'] must be a positive integer, got {dims!r}", key="index.dims",
                              hint='e.g. index={"dims": 1536, "embed": OpenAIEmbeddings()}')
        self.embeddings = ensure_embeddings(embed)
        self.dim = dims
        label = embed if isinstance(embed, str) else getattr(embed, "__name__", None) or type(embed).__name__
        self.name = f"langgraph:{label}:{dims}"

    def embed(self, texts: Any) -> np.ndarray:
        vecs = np.asarray(self.embeddings.embed_documents(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        if vecs.shape[1] != self.dim:
            raise ConfigError(f"the index's embed function returned {vecs.shape[1]}-dimensional vectors, "
                              f"index['dims'] says {self.dim}", key="index.dims")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vecs / norms


class MemstoreStore(BaseStore):
    """LangGraph store over a `Memory` (embedded) or anything `Memory(...)` opens (a path, or the
    URL of a `memstore serve`).

    `text_field` names the value field whose text is stored and searched (default "content");
    `index` is LangGraph's index config (`{"dims", "embed", "fields"}`) or a list of fields;
    `user_position` says which namespace element is the user (default 1; None: no user scoping);
    `agent_id` names this store's items (default "langgraph"); `identity(namespace)` replaces the
    whole rule, returning e.g. {"user_id": ..., "agent_id": ...}.
    """

    supports_ttl = True

    def __init__(self, memory: Any, *, text_field: str = "content", index: Any = None,
                 user_position: int | None = 1, agent_id: str = _STORE_AGENT,
                 identity: Callable[[tuple[str, ...]], dict[str, str]] | None = None,
                 ttl: TTLConfig | None = None, config: dict[str, Any] | None = None) -> None:
        cfg = dict(index) if isinstance(index, dict) else None
        fields = (cfg.get("fields") or cfg.get("text_fields")) if cfg is not None else index
        embedder = None
        if cfg is not None and cfg.get("embed") is not None:
            embedder = LangGraphEmbedder(cfg["embed"], cfg.get("dims"))
        if isinstance(memory, (str, os.PathLike)):
            from memstore import Memory

            memory = Memory(memory, config=config, embedder=embedder) if embedder is not None \
                else Memory(memory, config=config)
            self._owns = True
        else:
            self._owns = False
        self.memory = memory
        self.index_config = cfg
        self.embeddings = embedder.embeddings if embedder is not None else None
        self.vector_fields = list(fields or ["$"]) if cfg is not None else ["$"]    # LangGraph's default: the value
        self.distance = (cfg or {}).get("distance_type") or "cosine"
        if self.distance not in _SIMILARITY:
            raise ConfigError(f"index distance_type {self.distance!r} is not one of {', '.join(_SIMILARITY)}",
                              key="index.distance_type")
        self.text_field, self.fields = text_field, list(fields) if fields else [text_field]
        self.user_position, self.agent_id, self._identity = user_position, agent_id, identity
        self.ttl_config = ttl

    def close(self) -> None:
        """Close the Memory if this store opened it."""
        if self._owns:
            self.memory.close()

    # -- namespace <-> identity ---------------------------------------------------------------
    def _user(self, namespace: tuple[str, ...]) -> str | None:
        pos = self.user_position
        if pos is None or len(namespace) <= pos:
            return None
        label = namespace[pos]
        if not isinstance(label, str) or not label.strip() or "\x00" in label or label == "*":
            return None
        return label

    def identity(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The scope an item of this namespace is stored in, e.g. ("memories", "alice") ->
        {"agent_id": "langgraph", "user_id": "alice"}, ("test",) -> {"agent_id": "langgraph"}."""
        if self._identity is not None:
            return self._identity(tuple(namespace))
        user = self._user(tuple(namespace))
        return {"agent_id": self.agent_id, **({"user_id": user} if user is not None else {})}

    def _read_scope(self, prefix: tuple[str, ...]) -> dict[str, str]:
        """The scope a read under `prefix` covers: the user's when the prefix fixes it, else this
        store's LangGraph items (an application-wide read, as LangGraph defines a short prefix)."""
        if self._identity is not None:
            return self._identity(tuple(prefix))
        user = self._user(prefix)
        return {"agent_id": self.agent_id, **({"user_id": user} if user is not None else {})}

    @staticmethod
    def _namespace_filters(prefix: tuple[str, ...], exact: bool) -> dict[str, Any]:
        out: dict[str, Any] = {f"$.langgraph.namespace[{i}]": part for i, part in enumerate(prefix) if part != "*"}
        if exact:
            out["$.langgraph.depth"] = len(prefix)
        return out

    # -- item <-> memory -------------------------------------------------------------------------
    def _text(self, value: dict[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) and index else self.fields
        parts = []
        for path in fields:
            for v in _path_values(value, path):
                parts.append(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str))
        text = " ".join(p for p in parts if p.strip())
        return text or json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)

    @staticmethod
    def _item(rec: dict[str, Any], score: float | None = None, search: bool = False) -> Item:
        lg = rec["metadata"]["langgraph"]
        kwargs = dict(namespace=tuple(lg["namespace"]), key=lg["key"], value=rec["metadata"].get("value") or {},
                      created_at=_as_utc(rec.get("created_at")), updated_at=_as_utc(rec.get("updated_at")))
        return SearchItem(**kwargs, score=score) if search else Item(**kwargs)

    def _find(self, namespace: tuple[str, ...], key: str) -> dict[str, Any] | None:
        flt = {**self.identity(namespace), **self._namespace_filters(namespace, True), "$.langgraph.key": key}
        rows = self.memory.get_all(filters=flt, top_k=1, include_superseded=True)["results"]
        return rows[0] if rows else None

    def _refresh(self, recs: list[dict[str, Any]], refresh: bool) -> None:
        if not refresh:
            return
        now = utcnow()
        for rec in recs:
            ttl = rec["metadata"]["langgraph"].get("ttl")
            if not ttl:
                continue
            left = dt.datetime.fromisoformat(rec["expiration_date"]) - now if rec.get("expiration_date") else None
            # a refresh is a write (and a history row): skip it while 90% of the TTL is still left
            if left is None or left < dt.timedelta(minutes=0.9 * ttl):
                self.memory.update(rec["id"], expiration_date=now + dt.timedelta(minutes=ttl), actor_id="langgraph")

    # -- operations ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run Get/Search/Put/ListNamespaces ops in order; one result per op (None for puts)."""
        with reading(door="langgraph"):
            return self._batch(ops)

    def _batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                rec = self._find(op.namespace, op.key)
                if rec is not None:
                    self._refresh([rec], op.refresh_ttl)
                results.append(self._item(rec) if rec is not None else None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                with quiet():       # a put's own lookups are not reads (the audit of reads)
                    self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread (one synchronous implementation)."""
        return await asyncio.to_thread(self.batch, list(ops))

    @staticmethod
    def _candidates(text: str, ns: tuple[str, ...], key: str) -> tuple[str, str]:
        """The item's text, then the text marked with its namespace and key: memstore keeps one
        memory per text and scope, so an item whose text another item of the scope holds is told
        apart by where it lives (never dropped as a duplicate)."""
        return text, f"{text} [{'/'.join(ns)}:{key}]"

    def _put(self, op: PutOp) -> None:
        ns, key = tuple(op.namespace), str(op.key)
        scope = self.identity(ns)
        existing = self._find(ns, key)
        if op.value is None:
            if existing is not None:
                self.memory.delete(existing["id"], actor_id="langgraph")
            return
        value = dict(op.value)
        ttl = op.ttl if isinstance(op.ttl, (int, float)) and not isinstance(op.ttl, bool) else None
        meta = {"langgraph": {"namespace": list(ns), "depth": len(ns), "key": key, "ttl": ttl,
                              "indexed": op.index is not False}, "value": value}
        text = self._text(value, op.index)
        if self.embeddings is not None and op.index is not False:      # the application's vectors, kept with it
            meta["langgraph"]["vectors"] = self._field_vectors(value, op.index)
        expires = utcnow() + dt.timedelta(minutes=ttl) if ttl else None
        candidates = self._candidates(text, ns, key)
        if existing is not None and not (existing.get("expiration_date") and expires is None):
            for candidate in candidates:
                try:
                    self.memory.update(existing["id"], text=candidate, metadata=meta, expiration_date=expires,
                                       actor_id="langgraph")
                    return
                except DuplicateMemoryError:   # another item of the scope holds this text: mark it
                    continue
        if existing is not None:      # an expiry cannot be lifted by update(): replace the memory
            self.memory.delete(existing["id"], actor_id="langgraph")
        for candidate in candidates:
            out = self.memory.add(candidate, **scope, metadata=meta, infer=False, expiration_date=expires,
                                  actor_id="langgraph")
            if any(r.get("event") == "ADD" for r in out["results"]):
                return
        raise DuplicateMemoryError(f"put({ns!r}, {key!r}) was not stored: its text is held by other items of the "
                                   f"same scope even when marked with namespace and key",
                                   hint="give the item distinct content, or put it under another key")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        lgf = LangGraphFilter(op.filter)
        flt = {**self._read_scope(prefix), **self._namespace_filters(prefix, False), **lgf.pushdown}
        offset, limit = max(0, int(op.offset)), max(0, int(op.limit))
        if limit == 0:
            return []
        want = min(_ALL, offset + limit) if lgf.exact else _ALL
        if op.query and self.embeddings is not None:     # items put with index=False come last, scored None
            rows = self._rank_by_embeddings(op.query, self.memory.get_all(
                filters=flt, top_k=_ALL, include_superseded=True)["results"], lgf)
        elif op.query:
            flt["$.langgraph.indexed"] = {"ne": "false"}
            rows = self.memory.search(op.query, filters=flt, top_k=want, include_superseded=True)["results"]
        else:
            rows = self.memory.get_all(filters=flt, top_k=want, include_superseded=True)["results"]
        rows = [r for r in rows if isinstance((r.get("metadata") or {}).get("langgraph"), dict)
                and lgf.matches(r["metadata"].get("value") or {})][offset: offset + limit]
        self._refresh(rows, op.refresh_ttl)
        return [self._item(r, r.get("score"), search=True) for r in rows]

    def _field_vectors(self, value: dict[str, Any], index: Any) -> list[list[float]]:
        """One vector per indexed field value (LangGraph embeds each path's text on its own)."""
        from langgraph.store.base.embed import get_text_at_path

        fields = index if isinstance(index, list) and index else self.vector_fields
        texts = [t for path in fields for t in get_text_at_path(value, path)]
        return [[float(x) for x in vec] for vec in self.embeddings.embed_documents(texts)] if texts else []

    def _rank_by_embeddings(self, query: str, rows: list[dict[str, Any]], lgf: LangGraphFilter) -> list[dict[str, Any]]:
        """With the application's own embeddings, LangGraph's contract: every matching item ranked
        by its best field vector's similarity to the query (index distance_type: cosine,
        inner_product or l2 as minus the distance); an item put without vectors scores None, last."""
        rows = [r for r in rows if isinstance((r.get("metadata") or {}).get("langgraph"), dict)
                and lgf.matches(r["metadata"].get("value") or {})]
        if not rows:
            return []
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float64)
        similarity = _SIMILARITY[self.distance]
        for r in rows:
            kept = r["metadata"]["langgraph"].get("vectors")
            r["score"] = max((similarity(q, np.asarray(v, dtype=np.float64)) for v in kept), default=None) \
                if kept else None
        return sorted(rows, key=lambda r: (r["score"] is None, -(r["score"] or 0.0)))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conds = list(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conds if c.match_type == "prefix"), ())
        flt = {**self._read_scope(prefix), **self._namespace_filters(prefix, False)}
        rows = self.memory.get_all(filters=flt, top_k=_ALL, include_superseded=True)["results"]
        found = {tuple(r["metadata"]["langgraph"]["namespace"]) for r in rows
                 if isinstance((r.get("metadata") or {}).get("langgraph"), dict)}
        out = set()
        for ns in found:
            if all(_matches(ns, c.match_type, tuple(c.path)) for c in conds):
                out.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(out)[op.offset: op.offset + op.limit]


def _cosine(q: np.ndarray, v: np.ndarray) -> float:
    norms = float(np.linalg.norm(q) * np.linalg.norm(v))
    return float(q @ v) / norms if norms else 0.0


_SIMILARITY: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "cosine": _cosine, "inner_product": lambda q, v: float(q @ v), "l2": lambda q, v: -float(np.linalg.norm(q - v))}


def _matches(ns: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """Prefix / suffix match with '*' wildcards.

    >>> _matches(("a", "b", "c"), "prefix", ("a", "*")), _matches(("a", "b"), "suffix", ("c",))
    (True, False)
    """
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))
