"""The one interface of memstore: what the embedded `Memory` and the HTTP client both implement.

`MemoryAPI` is a Protocol (structural: `isinstance(x, MemoryAPI)` works for both); `METHODS` says,
for each public method, what it returns over the wire and whether it is an analyst-only method
(one that reads or changes more than the caller's scope; `memstore serve --no-analyst-api` turns
those off). The server exposes exactly `METHODS` under `/v1/<name>`, the client implements exactly
`METHODS`, and tests check that `Memory` has every one of them — so the three cannot drift.

>>> from memstore.api.protocol import METHODS
>>> METHODS["search"].returns, METHODS["sql"].analyst, METHODS["add"].analyst
('json', True, False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class MethodSpec:
    """How one public method crosses the wire."""

    name: str
    returns: str = "json"          # json | frame | ingest_report
    analyst: bool = False          # reads/changes beyond one scope: can be switched off on a server
    writes: bool = False           # changes the store
    admin: bool = False            # needs the server's admin token even where analyst methods are off


def _specs(*specs: MethodSpec) -> dict[str, MethodSpec]:
    return {s.name: s for s in specs}


METHODS: dict[str, MethodSpec] = _specs(
    MethodSpec("add", writes=True),
    MethodSpec("search"),
    MethodSpec("explain_search", returns="frame"),
    MethodSpec("get"),
    MethodSpec("get_all"),
    MethodSpec("history"),
    MethodSpec("update", writes=True),
    MethodSpec("delete", writes=True),
    MethodSpec("delete_all", writes=True),
    MethodSpec("timeline", returns="frame"),
    MethodSpec("contradictions", returns="frame"),
    MethodSpec("resolve", writes=True),
    MethodSpec("purge_expired", writes=True),
    MethodSpec("forget", writes=True),
    MethodSpec("erasure_receipts"),
    MethodSpec("ingest", returns="ingest_report", writes=True),
    MethodSpec("frame", returns="frame"),            # analyst-only when no identity is given
    MethodSpec("sql", returns="frame", analyst=True),
    MethodSpec("search_all", analyst=True),
    MethodSpec("export_parquet", analyst=True),
    MethodSpec("doctor", returns="frame", analyst=True),
    MethodSpec("optimize", analyst=True, writes=True),
    MethodSpec("scrub", analyst=True, writes=True),
    MethodSpec("reset", analyst=True, writes=True),
    MethodSpec("set_retention", analyst=True, writes=True),
    MethodSpec("clear_retention", analyst=True, writes=True),
    MethodSpec("retention_policies", returns="frame", analyst=True),
    MethodSpec("apply_retention", analyst=True, writes=True),
    MethodSpec("create_token", admin=True, writes=True),
    MethodSpec("list_tokens", admin=True),
    MethodSpec("revoke_token", admin=True, writes=True),
)


@runtime_checkable
class MemoryAPI(Protocol):
    """Long-term memory: the methods both `Memory` (embedded) and `MemoryClient` (HTTP) offer.

    Signatures and return shapes are those of `memstore.Memory`; see its docstrings."""

    path: str

    def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]: ...
    def search(self, query: str, **kwargs: Any) -> dict[str, Any]: ...
    def explain_search(self, query: str, **kwargs: Any) -> Any: ...
    def get(self, memory_id: str, **kwargs: Any) -> dict[str, Any] | None: ...
    def get_all(self, **kwargs: Any) -> dict[str, Any]: ...
    def history(self, memory_id: str, **kwargs: Any) -> list[dict[str, Any]]: ...
    def update(self, memory_id: str, data: str | None = None, **kwargs: Any) -> dict[str, Any]: ...
    def delete(self, memory_id: str, **kwargs: Any) -> dict[str, Any]: ...
    def delete_all(self, **kwargs: Any) -> dict[str, Any]: ...
    def timeline(self, **kwargs: Any) -> Any: ...
    def contradictions(self, **kwargs: Any) -> Any: ...
    def resolve(self, keep: str, supersede: Any = None, **kwargs: Any) -> dict[str, Any]: ...
    def purge_expired(self, **kwargs: Any) -> dict[str, Any]: ...
    def forget(self, **kwargs: Any) -> dict[str, Any]: ...
    def erasure_receipts(self, **kwargs: Any) -> list[dict[str, Any]]: ...
    def ingest(self, paths: Any, **kwargs: Any) -> Any: ...
    def frame(self, name: str, **kwargs: Any) -> Any: ...
    def sql(self, query: str, params: Any = None, **kwargs: Any) -> Any: ...
    def search_all(self, query: str, **kwargs: Any) -> dict[str, Any]: ...
    def export_parquet(self, directory: Any, **kwargs: Any) -> dict[str, Any]: ...
    def doctor(self, **kwargs: Any) -> Any: ...
    def optimize(self) -> dict[str, Any]: ...
    def scrub(self) -> dict[str, Any]: ...
    def reset(self) -> dict[str, Any]: ...
    def set_retention(self, target: str, retain_days: int | None, **kwargs: Any) -> dict[str, Any]: ...
    def clear_retention(self, target: str, **kwargs: Any) -> bool: ...
    def retention_policies(self) -> Any: ...
    def apply_retention(self, **kwargs: Any) -> dict[str, int]: ...
    def create_token(self, name: str, **kwargs: Any) -> dict[str, Any]: ...
    def list_tokens(self) -> list[dict[str, Any]]: ...
    def revoke_token(self, name: str) -> dict[str, Any]: ...
    def close(self) -> None: ...
