"""A LangGraph `BaseStore` on memstore: `graph.compile(store=MemstoreStore("data/x.duckdb"))`.

Every item is a memory of the scope its namespace names (by default the user is the namespace's
second element, as in LangMem's `("memories", "{langgraph_user_id}")`); the item's value dict is
kept whole in the memory's metadata (`metadata.value`), its text (the `content` field, or the fields
`index=[...]` names) is what search ranks with memstore's hybrid search. `put` over an existing key
updates that memory (so `history()` shows every change), `value=None` deletes it, `ttl` (minutes)
becomes the memory's expiration_date (refreshed on reads once a tenth of it has passed), `index=False` keeps the item out of
query search. Store items are never hidden by slot supersession: a store holds what it was given.

>>> import tempfile, os
>>> store = MemstoreStore(os.path.join(tempfile.mkdtemp(), "lg.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> store.put(("memories", "alice"), "diet", {"content": "Alice is vegetarian", "topic": "food"})
>>> store.get(("memories", "alice"), "diet").value
{'content': 'Alice is vegetarian', 'topic': 'food'}
>>> [i.key for i in store.search(("memories", "alice"), query="what does alice eat", filter={"topic": "food"})]
['diet']
>>> store.list_namespaces(prefix=("memories",))
[('memories', 'alice')]
>>> store.close()
"""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from memstore.core.errors import DuplicateMemoryError

_OPS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte",
        "$in": "in", "$nin": "nin"}
_ALL = 100_000          # "every item of a scope" for listing namespaces


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def _as_utc(value: Any) -> dt.datetime:
    when = dt.datetime.fromisoformat(value) if isinstance(value, str) else (value or _utcnow())
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _path_values(value: Any, path: str) -> list[Any]:
    """Values at a LangGraph index path ("a.b", "a[0]", "a[-1]", "a[*].b").

    >>> _path_values({"a": [{"b": 1}, {"b": 2}], "c": "x"}, "a[*].b"), _path_values({"c": "x"}, "c")
    ([1, 2], ['x'])
    """
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


class MemstoreStore(BaseStore):
    """LangGraph store over a `Memory` (embedded) or anything `Memory(...)` opens (a path, or a
    server URL once the HTTP client is available).

    `text_field` names the value field whose text is stored and searched (default "content");
    `index` (a list of paths) overrides it for every item, as LangGraph's index config does;
    `user_position` says which namespace element is the user (default 1); `identity(namespace)`
    replaces that rule, returning e.g. {"user_id": ..., "agent_id": ...}.
    """

    supports_ttl = True

    def __init__(self, memory: Any, *, text_field: str = "content", index: list[str] | None = None,
                 user_position: int = 1, identity: Callable[[tuple[str, ...]], dict[str, str]] | None = None,
                 ttl: TTLConfig | None = None, config: dict[str, Any] | None = None) -> None:
        if isinstance(memory, (str, os.PathLike)):
            from memstore import Memory

            memory, self._owns = Memory(memory, config=config), True
        else:
            self._owns = False
        self.memory = memory
        self.text_field, self.fields = text_field, list(index) if index else [text_field]
        self.user_position, self._identity = user_position, identity
        self.ttl_config = ttl

    def close(self) -> None:
        """Close the Memory if this store opened it."""
        if self._owns:
            self.memory.close()

    # -- namespace <-> identity ---------------------------------------------------------------
    def identity(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The scope a namespace belongs to, e.g. ("memories", "alice") -> {"user_id": "alice"}."""
        if self._identity is not None:
            return self._identity(tuple(namespace))
        if len(namespace) <= self.user_position or namespace[self.user_position] in ("", "*"):
            raise InvalidNamespaceError(
                f"namespace {tuple(namespace)!r} names no user at position {self.user_position}: memstore keeps "
                f"every item in a user's scope — use e.g. ('memories', user_id), or MemstoreStore(user_position=..., "
                f"identity=...)")
        return {"user_id": str(namespace[self.user_position])}

    @staticmethod
    def _namespace_filters(prefix: tuple[str, ...], exact: bool) -> dict[str, Any]:
        out: dict[str, Any] = {f"$.langgraph.namespace[{i}]": part for i, part in enumerate(prefix) if part != "*"}
        if exact:
            out["$.langgraph.depth"] = len(prefix)
        return out

    def _value_filters(self, flt: dict[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field, spec in (flt or {}).items():
            if not isinstance(field, str) or '"' in field:
                raise ValueError(f"filter field {field!r} must be a string without double quotes")
            path = f'$.value."{field}"'
            if isinstance(spec, dict) and spec and all(k in _OPS for k in spec):
                out[path] = {_OPS[k]: v for k, v in spec.items()}
            elif isinstance(spec, dict):
                bad = sorted(k for k in spec if k not in _OPS)
                raise ValueError(f"unknown filter operator(s) {bad} on {field!r}: use {sorted(_OPS)}")
            else:
                out[path] = spec
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
        now = _utcnow()
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
        expires = _utcnow() + dt.timedelta(minutes=ttl) if ttl else None
        if existing is not None and not (existing.get("expiration_date") and expires is None):
            for candidate in (text, f"{text} [{key}]"):
                try:
                    self.memory.update(existing["id"], text=candidate, metadata=meta, expiration_date=expires,
                                       actor_id="langgraph")
                    return
                except DuplicateMemoryError:   # another key of the scope holds this text: see below
                    continue
        if existing is not None:      # an expiry cannot be lifted by update(): replace the memory
            self.memory.delete(existing["id"], actor_id="langgraph")
        out = self.memory.add(text, **scope, metadata=meta, infer=False, expiration_date=expires, actor_id="langgraph")
        if not any(r.get("event") == "ADD" for r in out["results"]):
            # the same text is stored under another key of this scope (memstore keeps one memory per
            # text and scope): this key gets its own memory, told apart by the key
            self.memory.add(f"{text} [{key}]", **scope, metadata=meta, infer=False, expiration_date=expires,
                            actor_id="langgraph")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        flt = {**self.identity(prefix), **self._namespace_filters(prefix, False), **self._value_filters(op.filter)}
        want = max(0, int(op.offset)) + max(0, int(op.limit))
        if op.query:
            flt["$.langgraph.indexed"] = {"ne": "false"}
            rows = self.memory.search(op.query, filters=flt, top_k=want, include_superseded=True)["results"]
        else:
            rows = self.memory.get_all(filters=flt, top_k=want, include_superseded=True)["results"]
        rows = [r for r in rows if isinstance((r.get("metadata") or {}).get("langgraph"), dict)][op.offset:]
        self._refresh(rows, op.refresh_ttl)
        return [self._item(r, r.get("score"), search=True) for r in rows]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conds = list(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conds if c.match_type == "prefix"), ())
        try:
            scope = self.identity(prefix)
        except InvalidNamespaceError:
            scope = None
        if scope is not None:
            flt = {**scope, **self._namespace_filters(prefix, False)}
            rows = self.memory.get_all(filters=flt, top_k=_ALL, include_superseded=True)["results"]
            found = {tuple(r["metadata"]["langgraph"]["namespace"]) for r in rows}
        else:   # no user in the prefix: the application lists across users (read-only SQL, no content)
            frame = self.memory.sql(
                "SELECT DISTINCT CAST(json_extract(metadata, '$.langgraph.namespace') AS VARCHAR) AS ns "
                "FROM memories WHERE json_extract(metadata, '$.langgraph.key') IS NOT NULL "
                "AND (expiration_date IS NULL OR expiration_date > $now)", {"now": _utcnow()})
            found = {tuple(json.loads(v)) for v in frame["ns"].to_list() if v}
        out = set()
        for ns in found:
            if all(_matches(ns, c.match_type, tuple(c.path)) for c in conds):
                out.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(out)[op.offset: op.offset + op.limit]


def _matches(ns: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    """Prefix / suffix match with '*' wildcards.

    >>> _matches(("a", "b", "c"), "prefix", ("a", "*")), _matches(("a", "b"), "suffix", ("c",))
    (True, False)
    """
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if kind == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))
