"""The mem0 platform's REST surface on `memstore serve`: mem0's `MemoryClient` / `AsyncMemoryClient`
(Python `mem0ai`) and `MemoryClient` (npm `mem0ai`), and what is built on them, work against
memstore by changing only their `host`.

Routes (the SDKs' paths, trailing slash included), each a call of the same guarded memory as
every other route, so a scoped token (`memstore token create`) sent as the SDK's
`Authorization: Token <key>` sees and changes only its scope:

    GET    /v1/ping/                          the key works: {"status": "ok", org_id, project_id}
    POST   /v3/memories/add/                  add (answered when committed; async_mode is accepted)
    POST   /v3/memories/                      get all: platform filters, ?page= &page_size=
    POST   /v3/memories/search/               search: platform filters, top_k, threshold
    GET/PUT/DELETE /v1/memories/{id}/         one memory (update: text, metadata, expiration_date)
    GET    /v1/memories/{id}/history/         its history
    DELETE /v1/memories/?user_id=…            delete all of a scope
    GET    /v1/entities/                      users, agents and runs that have memories
    DELETE /v2/entities/{type}/{name}/        delete an entity's memories (also /v1/entities/…)
    PUT/DELETE /v1/batch/                     batch update / delete (up to 1000 ids; all checked first)
    POST /v1/memories/, GET /v1/memories/, POST /v2/memories/, POST /v1|v2/memories/search/
                                              the same for SDKs before v3 (mem0ai 2.x, Mastra's mem0):
                                              identity at the top level, v1.0 answers (bare lists)
                                              unless output_format=v1.1

The platform's filters become memstore filters (memstore/server/platform_shapes.py). The org and
project ids the SDK reads from the ping are fixed ("memstore", "default"); ids sent back are
accepted and ignored: a memstore server is one project. Platform features memstore does not have
(organisations and projects, webhooks, exports, summaries, feedback, profiles, events, custom
categories and instructions, graph memory) answer 501 with the error type `NotSupportedError`, which
the SDKs raise as their `MemoryError` with memstore's message.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Body, FastAPI
from fastapi import Query as QueryParam
from fastapi.responses import Response

from memstore.core.errors import IdentityError, InvalidInputError, NotFoundError, ScopeViolation
from memstore.core.identity import IDENTITY_KEYS
from memstore.server.platform_models import (
    EntityName,
    EntityType,
    IdentityQuery,
    MemoryIdPath,
    PageQuery,
    PageSizeQuery,
    PlatformAdd,
    PlatformBatch,
    PlatformList,
    PlatformSearch,
    PlatformUpdate,
    ScopedRead,
)
from memstore.server.platform_openapi import document_platform
from memstore.server.platform_refusals import UNSUPPORTED, mount_unsupported, not_supported
from memstore.server.platform_shapes import (
    ENTITY_TYPES,
    platform_added,
    platform_entities,
    platform_history,
    platform_memory,
    translate_filters,
)
from memstore.wire.format import RESULT_KIND, dumps

TAG = "mem0 platform"
ORG_ID, PROJECT_ID = "memstore", "default"
LIST_CAP = 100_000                  # get all reads at most this many memories of a scope to page them
PAGE_SIZE = 100

# add() options of the platform that shape extraction in ways memstore does not offer
REFUSED_ADD_OPTIONS = ("custom_categories", "custom_instructions", "agent_custom_instructions",
                       "structured_data_schema", "includes", "excludes")


def _json(value: Any) -> Response:
    return Response(dumps(value), media_type="application/json", headers={RESULT_KIND: "json"})


def _v10(output_format: Any, legacy: bool) -> bool:
    """Answer a bare list (output format v1.0): asked for, or the default of the paths before v3."""
    return output_format == "v1.0" or (legacy and output_format != "v1.1")


def _filters(body: ScopedRead) -> dict[str, Any]:
    """The memstore filter of a read: the platform filters ANDed with any top-level identity."""
    conds: list[dict[str, Any]] = [{k: getattr(body, k)} for k in ("user_id", "agent_id", "run_id", "app_id")
                                   if getattr(body, k)]
    if body.filters:
        conds.append(body.filters)
    return translate_filters({"AND": conds} if conds else None)


def mount_platform_routes(app: FastAPI, memory: Any, add: Callable[..., Any], access: Any, auth: list) -> None:
    """Add the platform routes to `app`; `memory` is the guarded memory every route calls, `add` its
    add through the group committer, `access` the server's Access (auth the dependencies)."""
    kw = {"dependencies": auth, "tags": [TAG]}

    def scope_of(filters: dict[str, Any], route: str) -> None:
        if not any(filters.get(k) for k in IDENTITY_KEYS) and not access.scoped():
            raise ScopeViolation(f"{route} needs user_id, agent_id or run_id in its filters (an equality at the "
                                 f"root): without one it would reach every scope",
                                 hint='e.g. filters={"user_id": "alice"} (or use a token that carries a scope)')

    @app.get("/v1/ping/", summary="Check the key (mem0 platform)", **kw)
    def ping() -> Response:
        return _json({"status": "ok", "message": "memstore: the key is valid", "org_id": ORG_ID,
                      "project_id": PROJECT_ID, "user_email": None})

    def do_add(body: PlatformAdd, legacy: bool) -> Response:
        extra = body.model_extra or {}
        for name in REFUSED_ADD_OPTIONS:
            if extra.get(name):
                raise not_supported(f"add option {name}")
        for name in ("enable_graph", "immutable"):
            if extra.get(name) is True:
                raise not_supported(f"add option {name}")
        ids = {k: getattr(body, k) for k in IDENTITY_KEYS if getattr(body, k)}
        given = translate_filters(body.filters)
        for k in IDENTITY_KEYS:
            if isinstance(given.get(k), str) and k not in ids:
                ids[k] = given[k]
        if not ids and not access.scoped():
            raise IdentityError("at least one identifier (user_id, agent_id, run_id) is required",
                                hint="pass user_id=... (or filters={\"user_id\": ...})")
        metadata = dict(body.metadata or {})
        if body.app_id:
            metadata["app_id"] = body.app_id
        params: dict[str, Any] = {**ids, "metadata": metadata or None, "timestamp": body.timestamp,
                                  "expiration_date": body.expiration_date}
        if body.infer is not None:
            params["infer"] = body.infer
        messages = ([{"role": "user", "content": body.messages}] if isinstance(body.messages, str)
                    else [m.model_dump(exclude_none=True) for m in body.messages])
        out = add(messages, **{k: v for k, v in params.items() if v is not None})
        results = [platform_added(r) for r in out.get("results", [])]
        answer: dict[str, Any] = {"results": results}
        run = out.get("extraction") or {}
        if run.get("id"):
            answer.update(event_id=run["id"], status="SUCCEEDED")
        return _json(results if _v10(extra.get("output_format"), legacy) else answer)

    @app.post("/v3/memories/add/", summary="Add memories (mem0 platform)", **kw)
    def platform_add(body: PlatformAdd) -> Response:
        return do_add(body, legacy=False)

    @app.post("/v1/memories/", summary="Add memories (mem0 platform, SDKs before v3: v1.0 answers unless "
                                       "output_format=v1.1)", **kw)
    def platform_add_v1(body: PlatformAdd) -> Response:
        return do_add(body, legacy=True)

    def listed(filters: dict[str, Any], route: str, show_expired: bool, page: int | None,
               page_size: int | None, path: str, legacy: bool, output_format: str | None) -> Response:
        scope_of(filters, route)
        rows = memory.get_all(filters=filters, top_k=LIST_CAP, show_expired=show_expired).get("results", [])
        if legacy and page is None and page_size is None:
            results = [platform_memory(r) for r in rows]
            return _json(results if _v10(output_format, legacy) else {"results": results})
        page, page_size = page or 1, page_size or PAGE_SIZE
        start = (page - 1) * page_size
        return _json({"count": len(rows), "results": [platform_memory(r) for r in rows[start:start + page_size]],
                      "next": f"{path}?page={page + 1}&page_size={page_size}" if start + page_size < len(rows)
                      else None,
                      "previous": f"{path}?page={page - 1}&page_size={page_size}" if page > 1 else None})

    @app.post("/v3/memories/", summary="Get all memories of a filter, paged (mem0 platform)", **kw)
    def platform_get_all(body: PlatformList | None = Body(None), page: PageQuery = None,
                         page_size: PageSizeQuery = None) -> Response:
        body = body or PlatformList()
        return listed(_filters(body), "POST /v3/memories/", bool(body.show_expired), page, page_size,
                      "/v3/memories/", False, body.output_format)

    @app.post("/v2/memories/", summary="Get all memories of a filter (mem0 platform, SDKs before v3)", **kw)
    def platform_get_all_v2(body: PlatformList | None = Body(None), page: PageQuery = None,
                            page_size: PageSizeQuery = None) -> Response:
        body = body or PlatformList()
        return listed(_filters(body), "POST /v2/memories/", bool(body.show_expired), page, page_size,
                      "/v2/memories/", True, body.output_format)

    @app.get("/v1/memories/", summary="Get all memories of a scope (mem0 platform, SDKs before v3)", **kw)
    def platform_get_all_v1(user_id: IdentityQuery = None, agent_id: IdentityQuery = None,
                            run_id: IdentityQuery = None, app_id: IdentityQuery = None, page: PageQuery = None,
                            page_size: PageSizeQuery = None,
                            output_format: Annotated[str | None, QueryParam(pattern=r"^v1\.[01]$")] = None
                            ) -> Response:
        body = PlatformList(user_id=user_id, agent_id=agent_id, run_id=run_id, app_id=app_id)
        return listed(_filters(body), "GET /v1/memories/", False, page, page_size, "/v1/memories/", True,
                      output_format)

    def do_search(body: PlatformSearch, route: str, legacy: bool) -> Response:
        filters = _filters(body)
        extra_conds = []
        if body.metadata:
            extra_conds.append(translate_filters({"metadata": body.metadata}))
        for cat in body.categories or []:
            extra_conds.append({"categories": {"contains": cat}})
        if extra_conds:
            filters["AND"] = list(filters.get("AND", [])) + extra_conds
        scope_of(filters, route)
        params: dict[str, Any] = {"filters": filters, "show_expired": bool(body.show_expired)}
        if body.top_k is not None:
            params["top_k"] = body.top_k
        if body.threshold is not None:
            params["threshold"] = body.threshold
        results = [platform_memory(r) for r in memory.search(body.query, **params).get("results", [])]
        return _json(results if _v10(body.output_format, legacy) else {"results": results})

    @app.post("/v3/memories/search/", summary="Search memories (mem0 platform)", **kw)
    def platform_search(body: PlatformSearch) -> Response:
        return do_search(body, "POST /v3/memories/search/", legacy=False)

    @app.post("/v2/memories/search/", summary="Search memories (mem0 platform, SDKs before v3)", **kw)
    def platform_search_v2(body: PlatformSearch) -> Response:
        return do_search(body, "POST /v2/memories/search/", legacy=True)

    @app.post("/v1/memories/search/", summary="Search memories (mem0 platform, SDKs before v3)", **kw)
    def platform_search_v1(body: PlatformSearch) -> Response:
        return do_search(body, "POST /v1/memories/search/", legacy=True)

    @app.get("/v1/memories/{memory_id}/", summary="Get a memory (mem0 platform)", **kw)
    def platform_get(memory_id: MemoryIdPath) -> Response:
        rec = memory.get(memory_id)
        if rec is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return _json(platform_memory(rec))

    @app.put("/v1/memories/{memory_id}/", summary="Update a memory (mem0 platform)", **kw)
    def platform_update(memory_id: MemoryIdPath, body: PlatformUpdate) -> Response:
        if body.timestamp is not None:
            raise not_supported("update option timestamp")
        if "expiration_date" in body.model_fields_set and body.expiration_date is None:
            raise not_supported("clearing an expiration date")
        if body.text is None and body.metadata is None and body.expiration_date is None:
            raise InvalidInputError("nothing to update", hint="send text, metadata or expiration_date")
        memory.update(memory_id, text=body.text, metadata=body.metadata, expiration_date=body.expiration_date)
        return _json(platform_memory(memory.get(memory_id)))

    @app.delete("/v1/memories/{memory_id}/", summary="Delete a memory (mem0 platform)", **kw)
    def platform_delete(memory_id: MemoryIdPath,
                        delete_linked: Annotated[bool | None, QueryParam()] = None) -> Response:
        if delete_linked:
            raise not_supported("delete option delete_linked")
        memory.delete(memory_id)
        return _json({"message": "Memory deleted successfully!"})

    @app.get("/v1/memories/{memory_id}/history/", summary="History of a memory (mem0 platform)", **kw)
    def platform_history_route(memory_id: MemoryIdPath) -> Response:
        return _json([platform_history(r) for r in memory.history(memory_id)])

    @app.delete("/v1/memories/", summary="Delete all memories of a scope (mem0 platform)", **kw)
    def platform_delete_all(user_id: IdentityQuery = None, agent_id: IdentityQuery = None,
                            run_id: IdentityQuery = None, app_id: IdentityQuery = None) -> Response:
        if app_id:
            raise not_supported("delete_all by app_id")
        scope_of({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, "DELETE /v1/memories/")
        out = memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return _json({"message": "Memories deleted successfully!", "deleted": out.get("deleted")})

    @app.get("/v1/entities/", summary="Users, agents and runs with memories (mem0 platform)", **kw)
    def platform_entities_route() -> Response:
        rows = memory.frame("scope_summary").to_dicts()
        found = platform_entities(rows)
        return _json({"count": len(found), "next": None, "previous": None, "results": found})

    def delete_entity(entity_type: str, name: str) -> Response:
        key = ENTITY_TYPES.get(entity_type)
        if key is None:
            if entity_type == "app":
                raise not_supported("app entities")
            raise InvalidInputError(f"unknown entity type {entity_type!r}", hint="use user, agent or run")
        out = memory.delete_all(**{key: name})
        return _json({"message": "Entity deleted successfully!", "deleted": out.get("deleted")})

    @app.delete("/v2/entities/{entity_type}/{entity_name}/", summary="Delete an entity's memories (mem0 platform)",
                **kw)
    def platform_delete_entity(entity_type: EntityType, entity_name: EntityName) -> Response:
        return delete_entity(entity_type, entity_name)

    @app.delete("/v1/entities/{entity_type}/{entity_name}/", summary="Delete an entity's memories (mem0 platform, "
                                                                     "older path)", **kw)
    def platform_delete_entity_v1(entity_type: EntityType, entity_name: EntityName) -> Response:
        return delete_entity(entity_type, entity_name)

    def check_batch(body: PlatformBatch) -> list[str]:
        ids = [m.memory_id for m in body.memories]
        for mid in ids:                  # every id first: one unknown (or another scope's) changes nothing
            if memory.get(mid) is None:
                raise NotFoundError(f"no memory with id {mid!r}", hint="nothing of the batch was changed",
                                    memory_id=mid)
        return ids

    @app.put("/v1/batch/", summary="Update memories in a batch (mem0 platform)", **kw)
    def platform_batch_update(body: PlatformBatch) -> Response:
        for m in body.memories:
            if m.text is None and m.metadata is None:
                raise InvalidInputError(f"batch item {m.memory_id!r} has neither text nor metadata",
                                        hint="nothing of the batch was changed")
        check_batch(body)
        for m in body.memories:
            memory.update(m.memory_id, text=m.text, metadata=m.metadata)
        return _json({"message": f"Successfully updated {len(body.memories)} memories"})

    @app.delete("/v1/batch/", summary="Delete memories in a batch (mem0 platform)", **kw)
    def platform_batch_delete(body: PlatformBatch) -> Response:
        for mid in check_batch(body):
            memory.delete(mid)
        return _json({"message": f"Successfully deleted {len(body.memories)} memories"})

    mount_unsupported(app, auth)


def document_platform_routes(app: FastAPI) -> None:
    """Put the platform routes' rules and answers in the OpenAPI document (after `document_api`)."""
    document_platform(app, UNSUPPORTED)
