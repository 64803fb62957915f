"""The HTTP face of one store: the library behind FastAPI, not a second implementation.

Routes:
- mem0's REST paths with mem0's shapes (`POST /memories`, `GET /memories`, `GET/PUT/DELETE
  /memories/{id}`, `GET /memories/{id}/history`, `POST /search`, `DELETE /memories`, `POST /reset`),
  so code written against mem0's server switches by changing the URL;
- mem0's hosted-platform paths (`/v1/ping/`, `/v3/memories/add/`, `/v3/memories/search/`, ...), so the
  platform SDKs (`mem0ai` MemoryClient, Python and npm) work with `host=` this server
  (memstore/server/platform_routes.py);
- `POST /v1/<method>` for every method of the memstore API (`memstore.api.protocol.METHODS`), body
  `{"args": [...], "kwargs": {...}}`; frames answer as Arrow IPC streams;
- `POST /v1/ingest_upload?filename=…&user_id=…`: ingest a file sent as the request body;
- `GET /health` (no token: it says only that this is memstore, which store, which pid), `/docs`.

Every other request needs `Authorization: Bearer <token>`: the admin token, or a token that carries
a scope (memstore/server/auth.py decides who calls, scoped_memory.py what that token may see and
do). Adds go through the group committer.
"""
import os
import tempfile
from typing import Annotated, Any, Literal, Optional

from fastapi import Body, Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi import Query as QueryParam
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

import memstore
from memstore.api.protocol import METHODS, MethodSpec
from memstore.core.config import LimitsConfig
from memstore.core.errors import (
    AuthError,
    ErasureIncompleteError,
    IdentityError,
    InvalidInputError,
    MemstoreError,
    NotFoundError,
    ScopeViolation,
)
from memstore.core.rules.signals import search_defaults
from memstore.core.scope_rule import IDENTITY_PATTERN, MAX_ID_CHARS
from memstore.server.auth import Access
from memstore.server.cpu_meter import CpuMeter
from memstore.server.errors import install_error_envelope
from memstore.server.limits import BodyLimit
from memstore.server.openapi import as_call, call_arguments, document_api
from memstore.server.openapi_rules import (
    ID_PATTERN,
    NAME_PATTERN,
    STRICT,
    Count,
    Identity,
    MemoryUpdate,
    Query,
    check_json_upload,
    valid_unicode,
)
from memstore.server.platform_routes import document_platform_routes, mount_platform_routes
from memstore.wire.format import ARROW_STREAM, RESULT_KIND, dumps, frame_to_ipc, loads

# HTTP status for each error family (the JSON body names the exact class).
_STATUS = (("RequestTooLargeError", 413), ("TokenRightsError", 403), ("ScopeViolation", 403), ("AuthError", 401), ("NotFoundError", 404),
           ("StoreNotFoundError", 404),
           ("DuplicateMemoryError", 409), ("ReadOnlyError", 409), ("ConflictError", 409),
           ("MissingFileError", 404), ("StoreBusyError", 409), ("StoreLockedError", 423),
           ("LLMUnavailableError", 503), ("ServerUnavailableError", 503), ("WrongShardError", 421),
           ("ConfigError", 400), ("IdentityError", 400), ("FilterError", 400),
           ("ExportError", 400), ("TimeParseError", 400), ("StoreWriteError", 500), ("LLMError", 502),
           ("NotSupportedError", 501))
_BUILTIN_STATUS = {TypeError: 400, ValueError: 400, KeyError: 404, FileNotFoundError: 404, PermissionError: 403}


_IDENTITY_ANY_OF = {"anyOf": [{"required": [k], "properties": {k: {"$ref": "#/components/schemas/IdentityValue"}}}
                              for k in ("user_id", "agent_id", "run_id")]}
Ident = Optional[Identity]


class Message(BaseModel):
    model_config = STRICT
    role: Annotated[str, Field(min_length=1, max_length=100, description="Role of the message (user or assistant).")]
    content: str = Field(..., description="Message content.")


class _Mem0Body(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        return valid_unicode(data)


class MemoryCreate(_Mem0Body):
    model_config = ConfigDict(**STRICT, json_schema_extra=_IDENTITY_ANY_OF)
    messages: Annotated[list[Message], Field(min_length=1, description="Messages to extract memories from.")]
    user_id: Ident = None
    agent_id: Ident = None
    run_id: Ident = None
    metadata: dict[str, Any] | None = Field(None)
    infer: bool | None = Field(None, description="False stores the messages as they are (no extraction).")


class SearchRequest(_Mem0Body):
    model_config = ConfigDict(**STRICT, json_schema_extra=_IDENTITY_ANY_OF)
    query: Query
    user_id: Ident = None
    run_id: Ident = None
    agent_id: Ident = None
    filters: dict[str, Any] | None = Field(None)
    top_k: Count | None = Field(None, description="Number of results (memstore's default: 20).")
    limit: Count | None = Field(None, description="mem0's older name for top_k.")
    threshold: Annotated[float, Field(ge=-1000000.0, le=1000000.0)] | None = None


UploadFormat = Literal["auto", "chatgpt", "claude", "locomo", "jsonl", "csv", "parquet"]
MemoryIdPath = Annotated[str, PathParam(pattern=ID_PATTERN, max_length=200)]
_IdentityQuery = Annotated[str | None, QueryParam(pattern=IDENTITY_PATTERN, max_length=MAX_ID_CHARS)]


def error_body(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) for an exception raised by the library."""
    name = type(exc).__name__
    status = 500
    if isinstance(exc, MemstoreError):
        for cls in type(exc).__mro__:
            hit = next((code for n, code in _STATUS if n == cls.__name__), None)
            if hit is not None:
                status = hit
                break
        else:
            status = 400
        fields = {k: v for k, v in (exc.fields or {}).items() if isinstance(v, (str, int, float, bool, type(None)))}
        for attr in ("step", "retryable"):
            if hasattr(exc, attr):
                fields[attr] = getattr(exc, attr)
        message = str(exc.args[0]) if exc.args else str(exc)
        if exc.hint and exc.hint not in message:
            message = f"{message} — {exc.hint}"
        return status, {"error": {"type": name, "message": message, "hint": exc.hint, "fields": fields},
                        "detail": message}
    for cls, code in _BUILTIN_STATUS.items():
        if isinstance(exc, cls):
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            return code, {"error": {"type": cls.__name__, "message": str(msg)}, "detail": str(msg)}
    return 500, {"error": {"type": "ServerError", "message": f"{name}: {exc}"}, "detail": f"{name}: {exc}"}


def _json(value: Any, kind: str = "json", status: int = 200) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json", headers={RESULT_KIND: kind})


async def _forget_answer(call: Any) -> Response:
    """forget()'s answer: 200 with the receipt when the erasure is finished and verified; 202
    ("accepted, not done") when it is not — the receipt's `pending` says what and why (a copy not
    reached, a check that found something); and 202 with the error envelope plus `receipt` when
    the file rewrite failed (ErasureIncompleteError: the rows are deleted, the erasure stays
    journaled and finishes at the next scrub, forget or open)."""
    try:
        receipt = await call
    except ErasureIncompleteError as exc:
        _, body = error_body(exc)
        return _json({**body, "receipt": exc.receipt}, status=202)
    verified = isinstance(receipt, dict) and bool(receipt.get("verified"))
    return _json(receipt, status=200 if verified else 202)


def create_app(memory: Any, *, token: str | None, analyst_api: bool = True, committer: Any = None,
               mcp: bool = True, shard: str | None = None) -> FastAPI:
    """The FastAPI app serving `memory` (an embedded Memory). `token=None` turns auth off (tests of
    the app itself only; `memstore serve` always sets one). `committer` (a GroupCommitter) takes adds.
    `shard` ("i/N", `memstore serve --shard`) is reported by /health."""
    app = FastAPI(title="memstore", version=memstore.__version__,
                  description="Long-term memory for AI agents: memstore's API and mem0's REST paths over one "
                              "DuckDB store. Send `Authorization: Bearer <token>` (the token is in "
                              "`<store>.server-token`).")
    app.state.memory = memory
    app.state.committer = committer
    access = app.state.access = Access(memory, token)
    inner = memory

    def commit_add(messages: Any, **kwargs: Any) -> dict[str, Any]:
        if committer is not None:
            return committer.add(messages, **kwargs)
        return inner.add(messages, **kwargs)

    memory = access.guard(_AddsThrough(inner, commit_add))     # every route sees what its token may see
    add = memory.add

    async def require_token(request: Request) -> None:      # async: no thread hop per request
        access.authenticate(request.headers.get("authorization", ""))

    auth = [Depends(require_token)]

    install_error_envelope(app, error_body)
    limits = getattr(getattr(inner, "config", None), "limits", None) or LimitsConfig()
    app.add_middleware(BodyLimit, limits=limits)        # 413 before a byte of an oversized body is parsed
    app.state.limits = limits

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(url="/docs")

    cpu_meter = CpuMeter()

    @app.get("/health", summary="Is this a memstore server, and for which store")
    def health() -> dict[str, Any]:
        return {"service": "memstore", "version": memstore.__version__, "store": os.path.abspath(memory.path),
                "pid": os.getpid(), "analyst_api": analyst_api, "workers": getattr(memory, "workers", 0),
                "search_defaults": search_defaults(getattr(inner, "config", None)),
                "worker_pids": memory.worker_pids() if hasattr(memory, "worker_pids") else [],
                **({"front_pids": app.state.front_pids()} if getattr(app.state, "front_pids", None) else {}),
                **({"front_searches": dict(app.state.front_searches)}
                   if getattr(app.state, "front_searches", None) is not None else {}),
                **({"owner_ops": {k: round(v, 3) for k, v in app.state.owner_ops.items()}}
                   if getattr(app.state, "owner_ops", None) is not None else {}),
                **({"group_commit": {k: round(v, 3) for k, v in committer.stats.items()}}
                   if isinstance(getattr(committer, "stats", None), dict) else {}),
                **({"read_audit": dict(inner.read_log.stats)}        # counts only (recorded, written, lost...)
                   if getattr(inner, "read_log", None) is not None else {}),
                **({"shard": shard} if shard else {}),
                **dict(getattr(app.state, "layout", None) or {}),
                "owner_cpu": cpu_meter.share()}

    # -- mem0's REST paths -------------------------------------------------------------------------
    @app.post("/memories", summary="Create memories (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_add(body: MemoryCreate) -> Response:
        if not any([body.user_id, body.agent_id, body.run_id, access.scoped()]):
            raise IdentityError("at least one identifier (user_id, agent_id, run_id) is required")
        params = {k: v for k, v in body.model_dump().items() if v is not None and k != "messages"}
        return _json(add([m.model_dump() for m in body.messages], **params))

    @app.get("/memories", summary="Get memories of a scope (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_get_all(user_id: _IdentityQuery = None, run_id: _IdentityQuery = None,
                     agent_id: _IdentityQuery = None,
                     limit: Annotated[int, QueryParam(ge=1, le=100_000)] = 100) -> Response:
        _require_scope("GET /memories", user_id, agent_id, run_id, access)
        return _json(memory.get_all(user_id=user_id, agent_id=agent_id, run_id=run_id, top_k=limit))

    @app.get("/memories/{memory_id}", summary="Get a memory (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_get(memory_id: MemoryIdPath) -> Response:
        rec = memory.get(memory_id)
        if rec is None:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        return _json(rec)

    @app.post("/search", summary="Search memories (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_search(body: SearchRequest) -> Response:
        params: dict[str, Any] = {k: v for k, v in body.model_dump().items()
                                  if v is not None and k not in ("query", "limit")}
        if body.limit is not None and body.top_k is None:
            params["top_k"] = body.limit
        return _json(memory.search(body.query, **params))

    @app.put("/memories/{memory_id}", summary="Update a memory (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_update(memory_id: MemoryIdPath, updated_memory: Any = Body(...)) -> Response:
        text, meta = _update_body(valid_unicode(updated_memory))
        out = memory.update(memory_id, text=text, metadata=meta)
        return _json({"message": "Memory updated successfully!", **out} if isinstance(out, dict) else out)

    @app.get("/memories/{memory_id}/history", summary="History of a memory (mem0)", dependencies=auth,
             tags=["mem0"])
    def mem0_history(memory_id: MemoryIdPath) -> Response:
        return _json(memory.history(memory_id))

    @app.delete("/memories/{memory_id}", summary="Delete a memory (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_delete(memory_id: MemoryIdPath) -> Response:
        memory.delete(memory_id)
        return _json({"message": "Memory deleted successfully"})

    @app.delete("/memories", summary="Delete all memories of a scope (mem0)", dependencies=auth, tags=["mem0"])
    def mem0_delete_all(user_id: _IdentityQuery = None, run_id: _IdentityQuery = None,
                        agent_id: _IdentityQuery = None) -> Response:
        _require_scope("DELETE /memories", user_id, agent_id, run_id, access)
        out = memory.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return _json({"message": "All relevant memories deleted", "deleted": out.get("deleted")})

    @app.post("/reset", summary="Reset all memories (mem0; analyst API)", dependencies=auth, tags=["mem0"])
    def mem0_reset() -> Response:
        _check_analyst(METHODS["reset"], {}, analyst_api)
        memory.reset()
        return _json({"message": "All memories reset"})

    # -- mem0's platform paths (the mem0ai SDKs' MemoryClient with host= this server) -----------------
    mount_platform_routes(app, memory, add, access, auth)

    # -- memstore's own API: one route per method ----------------------------------------------------
    for spec in METHODS.values():
        _add_method_route(app, memory, spec, auth, analyst_api, add)

    @app.post("/v1/ingest_upload", summary="Ingest a chat export sent as the request body", dependencies=auth,
              tags=["memstore"])
    async def ingest_upload(request: Request,
                            filename: Annotated[str, QueryParam(pattern=NAME_PATTERN, max_length=255)],
                            user_id: _IdentityQuery = None, agent_id: _IdentityQuery = None,
                            run_id: _IdentityQuery = None, format: UploadFormat = "auto") -> Response:
        _require_scope("POST /v1/ingest_upload", user_id, agent_id, run_id, request.app.state.access)
        from starlette.concurrency import run_in_threadpool

        suffix = os.path.splitext(os.path.basename(filename))[1][:16]
        folder = tempfile.mkdtemp(prefix="memstore-upload-")
        path = os.path.join(folder, "upload" + suffix)
        with open(path, "wb") as fh:
            async for chunk in request.stream():
                fh.write(chunk)
        try:
            if request.headers.get("content-type", "").split(";")[0].strip() == "application/json":
                check_json_upload(path)
            report = await run_in_threadpool(memory.ingest_upload, path, user_id=user_id, agent_id=agent_id,
                                             run_id=run_id, format=format)
        finally:
            os.unlink(path)
            os.rmdir(folder)
        return _json(report.to_dict(), "ingest_report")

    if mcp:
        try:
            from memstore.integrations.mcp_server import mount_mcp
        except ImportError:
            pass
        else:
            mount_mcp(app, inner, token=token, authorize=access.mcp_authorize(_AddsThrough(inner, commit_add)))
    document_api(app)
    document_platform_routes(app)
    return app


def _require_scope(route: str, user_id: Any, agent_id: Any, run_id: Any, access: Access) -> None:
    """403 for a call that names no scope: with the admin token it would read or change every
    scope's memories, which mem0's paths never do (a scoped token's own scope counts)."""
    if not any([user_id, agent_id, run_id, access.scoped()]):
        raise ScopeViolation(f"{route} needs user_id, agent_id or run_id: without one it would reach every scope",
                             hint="name the scope, e.g. ?user_id=alice (or use a token that carries one)")


def _update_body(body: Any) -> tuple[str, dict[str, Any] | None]:
    """(text, metadata) of a PUT /memories/{id} body: the new text, or {"text": ..., "metadata": ...}."""
    if isinstance(body, str):
        if not body.strip() or "\x00" in body:
            raise InvalidInputError("the new text is empty", hint='send the text, or {"text": ..., "metadata": {...}}')
        return body, None
    try:
        model = MemoryUpdate.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ())) or 'body'}: {e.get('msg')}"
                             for e in exc.errors()[:5])
        raise InvalidInputError(f"the body must be the new text, or {{\"text\": ..., \"metadata\": {{...}}}}: {problems}",
                                hint="see PUT /memories/{memory_id} in /docs") from None
    text = model.text or model.data or model.memory
    if text is None:
        raise InvalidInputError("the body names no new text", hint='send {"text": ..., "metadata": {...}}')
    return text, model.metadata


class _AddsThrough:
    """The memory as the MCP tools see it: every call goes to it, adds through the group committer."""

    def __init__(self, memory: Any, add: Any) -> None:
        self._memory, self.add = memory, add

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)


def _check_analyst(spec: MethodSpec, kwargs: dict[str, Any], analyst_api: bool) -> None:
    scoped = any(kwargs.get(k) for k in ("user_id", "agent_id", "run_id"))
    if analyst_api:
        return
    if spec.analyst or (spec.name == "frame" and not scoped):
        raise AuthError(f"{spec.name}() reads or changes more than one scope and this server runs with "
                        f"--no-analyst-api", hint="ask the operator, or call it with a scope where it takes one")


def _add_method_route(app: FastAPI, memory: Any, spec: MethodSpec, auth: list, analyst_api: bool,
                      add: Any) -> None:
    target = add if spec.name == "add" else getattr(memory, spec.name)

    async def endpoint(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        raw = await request.body()
        body = valid_unicode(loads(raw)) if raw else {}
        if not isinstance(body, dict):
            raise ValueError('the body must be {"args": [...], "kwargs": {...}}')
        kwargs = call_arguments(spec, body)
        if not request.app.state.access.scoped():     # a scoped token's calls are scoped (or refused) anyway
            _check_analyst(spec, kwargs, analyst_api)
        if spec.name == "search" and "channels" in kwargs and isinstance(kwargs["channels"], list):
            kwargs["channels"] = tuple(kwargs["channels"])
        args, kwargs = as_call(spec, kwargs)
        if spec.name == "forget":
            return await _forget_answer(run_in_threadpool(target, *args, **kwargs))
        value = await run_in_threadpool(target, *args, **kwargs)
        if spec.returns == "frame":
            return Response(frame_to_ipc(value), media_type=ARROW_STREAM, headers={RESULT_KIND: "frame"})
        if spec.returns == "ingest_report":
            return _json(value.to_dict(), "ingest_report")
        return _json(value)

    doc = (getattr(type(memory), spec.name, None) or target).__doc__ or ""
    app.add_api_route(f"/v1/{spec.name}", endpoint, methods=["POST"], dependencies=auth, tags=["memstore"],
                      summary=f"{spec.name}()" + (" — analyst API" if spec.analyst else ""),
                      description=f"Body: {{\"args\": [...], \"kwargs\": {{...}}}} with the arguments of "
                                  f"`Memory.{spec.name}`.\n\n{doc}")
