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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import os

    import polars as pl

    from memstore.ingest.report import IngestReport


@dataclass(frozen=True)
class MethodSpec:
    """How one public method crosses the wire."""

    name: str
    returns: str = "json"  # json | frame | ingest_report
    analyst: bool = False  # reads/changes beyond one scope: can be switched off on a server
    writes: bool = False  # changes the store
    admin: bool = False  # needs the server's admin token even where analyst methods are off


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
    MethodSpec("ingest_known"),
    MethodSpec("ingest_prepared", writes=True),
    MethodSpec("frame", returns="frame"),  # analyst-only when no identity is given
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

    Signatures and return shapes are those of `memstore.Memory` (see its docstrings);
    tests/test_api_contract.py checks that `Memory`'s signatures equal these, and the HTTP client
    carries them as its methods' `__signature__`."""

    path: str

    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        prompt: str | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        actor_id: str | None = None,
        memory_type: str | None = None,
        **_unsupported: Any,
    ) -> dict[str, Any]: ...
    def search(
        self,
        query: str,
        *,
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int | None = None,
        threshold: float | None = None,
        explain: bool = False,
        include_superseded: bool = False,
        show_expired: bool = False,
        as_of: Any = None,
        rerank: bool = False,
        channels: tuple[str, ...] = ("semantic", "keyword", "entity"),
        weights: dict[str, float] | None = None,
    ) -> dict[str, Any]: ...
    def explain_search(
        self,
        query: str,
        *,
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 1000,
        include_superseded: bool = False,
        show_expired: bool = False,
        as_of: Any = None,
        channels: tuple[str, ...] = ("semantic", "keyword", "entity"),
        weights: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> pl.DataFrame: ...
    def get(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, Any] | None: ...
    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int = 100,
        include_superseded: bool = False,
        show_expired: bool = False,
        as_of: Any = None,
    ) -> dict[str, Any]: ...
    def history(
        self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]: ...
    def update(
        self,
        memory_id: str,
        data: str | None = None,
        *,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = None,
        actor_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]: ...
    def delete(
        self,
        memory_id: str,
        *,
        actor_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]: ...
    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        actor_id: str | None = None,
    ) -> dict[str, Any]: ...
    def timeline(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> pl.DataFrame: ...
    def contradictions(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> pl.DataFrame: ...
    def resolve(
        self, keep: str, supersede: Any = None, *, dismiss: Any = None, actor_id: str | None = None
    ) -> dict[str, Any]: ...
    def purge_expired(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        now: Any = None,
        actor_id: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]: ...
    def forget(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        actor_id: str | None = None,
        scrub: bool = True,
    ) -> dict[str, Any]: ...
    def erasure_receipts(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]: ...
    def ingest(
        self,
        paths: str | os.PathLike | list[str | os.PathLike],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        format: str = "auto",
        mapping: dict[str, str] | str | None = None,
        batch_size: int = 20,
        concurrency: int = 8,
        retries: int = 3,
        backoff_s: float = 1.0,
        max_message_chars: int | None = None,
        commit_messages: int = 2000,
        metadata: dict[str, Any] | None = None,
        progress: bool | None = None,
        workers: int | None = None,
    ) -> IngestReport: ...
    def ingest_known(
        self,
        conversations: list[dict[str, Any]],
        *,
        format: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]: ...
    def ingest_prepared(
        self,
        conversations: list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ingest_id: str | None = None,
    ) -> dict[str, Any]: ...
    def frame(
        self,
        name: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        embeddings: bool = False,
    ) -> pl.DataFrame: ...
    def sql(
        self, query: str, params: dict[str, Any] | list[Any] | None = None, *, allow_files: bool = False
    ) -> pl.DataFrame: ...
    def search_all(
        self,
        query: str,
        *,
        top_k: int = 10,
        where: dict[str, Any] | None = None,
        exact: bool = False,
        include_superseded: bool = False,
        show_expired: bool = False,
    ) -> dict[str, Any]: ...
    def export_parquet(
        self, directory: str | os.PathLike, scope: dict[str, str] | None = None, partition_by: str | None = "user_id",
        include_reads: bool = False,
    ) -> dict[str, Any]: ...
    def doctor(self, *, repair: bool = False) -> pl.DataFrame: ...
    def optimize(self) -> dict[str, Any]: ...
    def scrub(self) -> dict[str, Any]: ...
    def reset(self) -> dict[str, Any]: ...
    def set_retention(
        self,
        target: str,
        retain_days: int | None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]: ...
    def clear_retention(
        self, target: str, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> bool: ...
    def retention_policies(self) -> pl.DataFrame: ...
    def apply_retention(self, *, now: Any = None, dry_run: bool = False) -> dict[str, int]: ...
    def create_token(
        self,
        name: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        read_only: bool = False,
        expires: Any = None,
    ) -> dict[str, Any]: ...
    def list_tokens(self) -> list[dict[str, Any]]: ...
    def revoke_token(self, name: str) -> dict[str, Any]: ...
    def close(self) -> None: ...
