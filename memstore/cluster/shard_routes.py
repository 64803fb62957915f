"""The routes a shard adds for `memstore cluster rebalance` (bearer token required, never routed by
the balancer: the rebalancer calls each shard's own URL).

- `GET  /cluster/shard`: {"shard": i, "shards": N, "placement": ...};
- `POST /cluster/scopes` {"shards": M}: the placement keys this store holds, with counts and their
  owner in a cluster of M shards;
- `POST /cluster/export_scope` {"user_id", "directory"}: a Parquet export of one user's rows;
- `POST /cluster/import_scope` {"user_id", "directory"}: merge such an export (only a user this
  shard owns; rows it already has are skipped, so a re-run stores nothing twice);
- `POST /cluster/memory_ids` {"user_id"}: every memory id of the user (the move's verification);
- `POST /cluster/forget_scope` {"user_id"}: `forget(user_id=..., scrub=False)` here, whoever owns it now;
- `POST /cluster/receipts` {"user_id"}: the user's erasure receipts on this shard;
- `POST /cluster/scrub_store`: rewrite the file so erased bytes go (once, after the moves).

These bypass the shard guard on purpose (a shard must hand over a user it no longer owns).
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from fastapi import Request  # at module level: the routes' annotations are resolved here

from memstore.core.errors import AuthError, IdentityError, WrongShardError
from memstore.core.placement import PLACEMENT, shard_of_key
from memstore.core.scope_rule import canonical_id

ACTOR = "memstore cluster rebalance"


def mount_shard_routes(app: Any, memory: Any, *, shard: int, shards: int, token: str | None) -> None:
    """Add the /cluster/* routes of shard `shard` of `shards` to the FastAPI `app` serving `memory`."""
    from fastapi.responses import Response
    from starlette.concurrency import run_in_threadpool

    from memstore.wire.format import dumps, loads

    def check_token(request: Request) -> None:
        if token is None:
            return
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), token.encode()):
            raise AuthError("missing or wrong bearer token", hint="send the shard's token: `Authorization: Bearer ...`")

    def route(path: str, fn: Callable[[dict[str, Any]], Any], method: str = "POST") -> None:
        async def endpoint(request: Request) -> Response:
            check_token(request)
            raw = await request.body()
            body = loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            value = await run_in_threadpool(fn, body)
            return Response(dumps(value), media_type="application/json")

        app.add_api_route(path, endpoint, methods=[method], include_in_schema=False)

    def user(body: dict[str, Any]) -> str:
        u = body.get("user_id")
        if not isinstance(u, str) or not u:
            raise IdentityError("this /cluster route needs a user_id (a non-empty string)")
        return u                # a stored key, as /cluster/scopes listed it

    def scopes(body: dict[str, Any]) -> list[dict[str, Any]]:
        target = int(body.get("shards") or shards)
        rows = memory.db.dicts("queries/cluster_scope_keys")
        return [{**r, "owner": shard_of_key(_placed(r["key"]), target)} for r in rows]

    def export_scope(body: dict[str, Any]) -> dict[str, Any]:
        manifest = memory.export_parquet(body["directory"], scope={"user_id": user(body)}, partition_by=None)
        return {"id": manifest["id"], "tables": manifest["tables"]}

    def import_scope(body: dict[str, Any]) -> dict[str, Any]:
        from memstore.analysis.scope_merge import merge_scope_export

        key = user(body)
        owner = shard_of_key(_placed(key), shards)
        if owner != shard:
            raise WrongShardError(f"shard {shard}/{shards} does not own user {key!r} (shard {owner} does): "
                                  f"not importing it", key=key, shard=owner, shards=shards, this_shard=shard)
        return merge_scope_export(memory.db, body["directory"])

    def memory_ids(body: dict[str, Any]) -> list[str]:
        return [r["id"] for r in memory.db.dicts("queries/cluster_user_memory_ids", {"user_id": user(body)})]

    def forget_scope(body: dict[str, Any]) -> dict[str, Any]:
        # The file is rewritten once at the end of a rebalance (scrub_store), not once per user.
        return memory.forget(user_id=user(body), actor_id=ACTOR, scrub=False)

    def scrub_store(body: dict[str, Any]) -> dict[str, Any]:
        return memory.scrub()

    def receipts(body: dict[str, Any]) -> list[dict[str, Any]]:
        return memory.erasure_receipts(user_id=user(body))

    route("/cluster/shard", lambda body: {"shard": shard, "shards": shards, "placement": PLACEMENT}, "GET")
    for path, fn in (("scopes", scopes), ("export_scope", export_scope), ("import_scope", import_scope),
                     ("memory_ids", memory_ids), ("forget_scope", forget_scope), ("receipts", receipts), ("scrub_store", scrub_store)):
        route(f"/cluster/{path}", fn)


def _placed(key: str) -> str:
    """The placement key of a stored scope key: its canonical form (a key stored before the one scope
    rule, e.g. NFD, moves to where the library now looks for it); a key with no canonical form stays."""
    try:
        return canonical_id(key) or key
    except IdentityError:
        return key
