"""`ClusterClient`: the memstore API against a cluster's balancer, same methods and shapes as `Memory`.

`memstore.connect(url)` returns one when `url` answers `GET /cluster` (the balancer does). A call
that names a user goes to the user's shard: the client sends the scope's slot in `X-Memstore-Slot`
(placement.py) and HAProxy picks the shard. A call that names no user either fans out to every shard
(`X-Memstore-Shard: i`, side by side) and merges, or, for analyst SQL and exports, raises `CrossShardError`
pointing at the lake. `FANOUT` says which, per method (README: "Many machines").

>>> route_key("search", {"user_id": "alice", "agent_id": "bot"}), route_key("add", {"agent_id": "bot"})
('alice', 'bot')
>>> route_key("search", {"agent_id": "bot"}) is None        # an agent-only read: every shard
True
>>> route_key("add", {"user_id": "\\tJose\\u0301 "}) == "Jos\\u00e9"     # placed by its canonical form
True
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from memstore.api.http_client import RETRY_FOR_S, MemoryClient
from memstore.core.errors import CrossShardError, NotFoundError, ServerUnavailableError
from memstore.core.placement import CREATING, SCOPE_KEYS, slot_of
from memstore.core.scope_rule import canonical_id, filter_identity, placement_key

SLOT_HEADER, SHARD_HEADER = "X-Memstore-Slot", "X-Memstore-Shard"


def route_key(method: str, kwargs: dict[str, Any]) -> str | None:
    """The placement key a call is routed by, in canonical form (core/scope_rule.py): its user (also
    inside `filters=`); for calls that create rows, else its agent, else its run. None: the call spans
    shards. An identity value with no canonical form raises IdentityError here, before any request."""
    user = kwargs.get("user_id")
    if user in (None, ""):
        user = filter_identity(kwargs.get("filters")).get("user_id")
    if user not in (None, ""):
        return canonical_id(user, "user_id")
    if method in CREATING:
        return placement_key({k: kwargs.get(k) for k in SCOPE_KEYS[1:]})
    return None


# -- how the answers of every shard become one --------------------------------------------------
def _first_found(results: list[Any], kwargs: dict[str, Any]) -> Any:
    return next((r for r in results if r), results[0] if results else None)


def _ranked(results: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    rows = [r for out in results for r in out.get("results", [])]
    rows.sort(key=lambda r: -(r.get("score") or 0.0))
    limit = kwargs.get("top_k") or max((len(out.get("results", [])) for out in results), default=0)
    return {**(results[0] if results else {}), "results": rows[:limit]}


def _newest(results: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    rows = [r for out in results for r in out.get("results", [])]
    rows.sort(key=lambda r: str(r.get("created_at") or ""), reverse=True)
    return {**(results[0] if results else {}), "results": rows[:int(kwargs.get("top_k") or 100)]}


def _summed(results: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(results[0]) if results else {}
    for key in out:
        values = [r.get(key) for r in results]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = sum(values)
    if "deleted" in out and str(out.get("message", "")).startswith("Deleted"):
        out["message"] = f"Deleted {out['deleted']} memories"
    return out


def _frames(results: list[Any], kwargs: dict[str, Any]) -> Any:
    import polars as pl

    frames = [f for f in results if f is not None and f.height]
    return pl.concat(frames, how="diagonal_relaxed") if frames else results[0]


def _frames_by_shard(results: list[Any], kwargs: dict[str, Any]) -> Any:
    import polars as pl

    return pl.concat([f.with_columns(pl.lit(i).alias("shard")) for i, f in enumerate(results)],
                     how="diagonal_relaxed")


def _receipt_lists(results: list[list[dict[str, Any]]], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [r for out in results for r in out]
    rows.sort(key=lambda r: str(r.get("created_at") or ""), reverse=True)
    return rows


def _receipts(results: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"receipts": results, "verified": all(r.get("verified") for r in results)}


def _same_everywhere(results: list[Any], kwargs: dict[str, Any]) -> Any:
    return any(results) if all(isinstance(r, bool) for r in results) else results[0]


LAKE_HINT = ("a cluster has one store per shard: analyse them together in the lake (one read-only view over "
             "every shard's export), or call the method on each shard's own URL")
# Calls without a user: (how, merge). how: "all" asks every shard and merges; "owner" asks shard after
# shard until one has the memory (ids are unique); "lake" refuses. Calls not listed need a scope.
FANOUT: dict[str, tuple[str, Callable[[list[Any], dict[str, Any]], Any] | None]] = {
    "search": ("all", _ranked), "search_all": ("all", _ranked), "explain_search": ("all", _frames),
    "get_all": ("all", _newest), "timeline": ("all", _frames), "contradictions": ("all", _frames),
    "frame": ("all", _frames), "doctor": ("all", _frames_by_shard), "erasure_receipts": ("all", _receipt_lists),
    "delete_all": ("all", _summed), "purge_expired": ("all", _summed), "apply_retention": ("all", _summed),
    "optimize": ("all", _summed), "scrub": ("all", _summed), "forget": ("all", _receipts),
    "reset": ("all", _same_everywhere), "set_retention": ("all", _same_everywhere),
    "clear_retention": ("all", _same_everywhere), "retention_policies": ("one", None),
    "get": ("owner", _first_found), "history": ("owner", _first_found),
    "update": ("owner", None), "delete": ("owner", None), "resolve": ("owner", None),
    "sql": ("lake", None), "export_parquet": ("lake", None), "ingest": ("scope", None), "add": ("scope", None),
    "ingest_known": ("scope", None), "ingest_prepared": ("scope", None),
}


class ClusterClient(MemoryClient):
    """`memstore.connect(balancer_url, token=...)` when the URL is a cluster's balancer."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 600.0,
                 layout: dict[str, Any] | None = None, retry_for: float = RETRY_FOR_S) -> None:
        super().__init__(url, token=token, timeout=timeout, retry_for=retry_for)
        self.retry_broken = True
        self._layout = layout
        self._pool: Any = None
        self._pool_size = 0

    def __repr__(self) -> str:
        return f"ClusterClient({self.url!r}, shards={self.shards})"

    @property
    def shards(self) -> int:
        """How many shards the balancer routes to (from its `GET /cluster`)."""
        if self._layout is None:
            self.refresh_layout()
        return int(self._layout["shards"])  # type: ignore[index]

    def refresh_layout(self) -> dict[str, Any]:
        """Ask the balancer for its layout again (after the cluster grew)."""
        layout = self._request("GET", "/cluster")
        if not isinstance(layout, dict) or layout.get("service") != "memstore-cluster":
            raise ServerUnavailableError(f"{self.url} is not a memstore cluster balancer", url=self.url)
        self._layout = layout
        return layout

    def server_info(self) -> dict[str, Any]:
        """The balancer's layout and every shard's /health answer (None for a shard that is down)."""
        layout = self.refresh_layout()
        shards: list[Any] = []
        for i in range(int(layout["shards"])):
            try:
                shards.append(self._request("GET", "/health", headers={SHARD_HEADER: str(i)}))
            except ServerUnavailableError:
                shards.append(None)
        return {**layout, "shard_health": shards}

    def ingest_upload(self, path: str | os.PathLike, **scope: Any) -> Any:
        """`MemoryClient.ingest_upload` on the shard of the scope (user_id / agent_id / run_id)."""
        key = route_key("ingest_upload", scope)
        if key is None:
            raise CrossShardError("ingest_upload through a cluster needs user_id, agent_id or run_id",
                                  hint="the scope decides which shard stores the file's memories")
        with open(path, "rb") as fh:
            data = fh.read()
        params = {"filename": os.path.basename(os.fspath(path)), "format": scope.pop("format", "auto"), **scope}
        return self._request("POST", "/v1/ingest_upload", raw=data, params=params,
                             headers={SLOT_HEADER: str(slot_of(key))})

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        body = {"args": list(args), "kwargs": kwargs}
        key = route_key(name, kwargs)
        if key is not None:
            return self._request("POST", f"/v1/{name}", body, headers={SLOT_HEADER: str(slot_of(key))})
        how, merge = FANOUT.get(name, ("scope", None))
        if how == "lake":
            raise CrossShardError(f"{name}() reads every scope of every shard: a cluster cannot answer it at once",
                                  hint=LAKE_HINT, method=name)
        if how == "scope":
            raise CrossShardError(f"{name}() through a cluster needs user_id, agent_id or run_id",
                                  hint="the scope decides which shard stores it", method=name)
        n = self.shards
        if how == "one":
            return self._on_shard(0, name, body)
        if how == "owner":
            return self._owner(name, body, n, merge)
        answers = self._every_shard(n, name, body)
        down = [i for i, a in enumerate(answers) if isinstance(a, ServerUnavailableError)]
        for a in answers:
            if isinstance(a, BaseException) and not isinstance(a, ServerUnavailableError):
                raise a
        results = [a for a in answers if not isinstance(a, BaseException)]
        if down:
            raise ServerUnavailableError(
                f"{name}() spans every shard and shard(s) {down} are down: answered by {n - len(down)} of {n}",
                hint="retry when they are back (a change already made on the others is not undone; "
                     "repeating it is harmless)", shards=str(down), url=self.url)
        return merge(results, kwargs) if merge else results[0]  # type: ignore[misc]

    def _every_shard(self, n: int, name: str, body: dict[str, Any]) -> list[Any]:
        """Each shard's answer (or the error it raised), asked side by side: one thread and one
        keep-alive connection per shard, kept for the client's life."""
        from concurrent.futures import ThreadPoolExecutor

        if self._pool is None or self._pool_size < n:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
            self._pool, self._pool_size = ThreadPoolExecutor(n, thread_name_prefix="memstore-fanout"), n
        self._client()                     # one Transport for every thread (its connections are per thread)

        def ask(i: int) -> Any:
            try:
                return self._on_shard(i, name, body)
            except Exception as exc:
                return exc

        return list(self._pool.map(ask, range(n)))

    def close(self) -> None:
        """Close the connections and the fan-out threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        super().close()

    def _rediscover(self) -> None:
        """After a broken connection: drop it (a balancer is not found through a store path, and the
        fan-out threads, one of which may be calling this, stay)."""
        MemoryClient.close(self)

    def _on_shard(self, i: int, name: str, body: dict[str, Any]) -> Any:
        return self._request("POST", f"/v1/{name}", body, headers={SHARD_HEADER: str(i)})

    def _owner(self, name: str, body: dict[str, Any], n: int, merge: Any) -> Any:
        """Shard after shard until one holds the memory (ids are unique across the cluster)."""
        down, missing = [], None
        for i in range(n):
            try:
                out = self._on_shard(i, name, body)
            except ServerUnavailableError:
                down.append(i)
                continue
            except NotFoundError as exc:
                missing = exc
                continue
            if merge is None or out:
                return out
        if down:
            raise ServerUnavailableError(f"{name}(): not on the shards that answered, and shard(s) {down} are down",
                                         hint="retry when they are back", shards=str(down), url=self.url)
        if missing is not None:
            raise missing
        return merge([None], body["kwargs"]) if merge else None


def cluster_layout(url: str, token: str | None = None, timeout: float = 2.0) -> dict[str, Any] | None:
    """The balancer's `GET /cluster` answer, or None when `url` is a single server (or not memstore)."""
    from memstore.wire.format import loads
    from memstore.wire.transport import Transport, TransportError

    try:
        status, _, content = Transport(url, timeout=timeout).request("GET", "/cluster")
        value = loads(content) if status == 200 and content else None
    except (TransportError, ValueError):
        return None
    return value if isinstance(value, dict) and value.get("service") == "memstore-cluster" else None
