"""memstore as an MCP server (the official `mcp` SDK, v2 `MCPServer`): stdio for one user, and a
streamable-HTTP endpoint that `memstore serve` mounts at `/mcp/{client}/{user_id}` (and `/mcp`
with the user in a header or query parameter).

Tool names and arguments follow mem0's hosted MCP server (`add_memory`, `search_memories`,
`get_memories`, `get_memory`, `update_memory`, `delete_memory`, `delete_all_memories`,
`list_entities`), plus OpenMemory's old names as aliases (`add_memories`, `search_memory`,
`list_memories`, `delete_memories`) and memstore's own (`memory_history`, `what_changed`,
`forget_me`). The scope is fixed by the server (stdio `--user`) or by the request path / header
(HTTP), never by a tool argument: see `scoped_tools.ScopedTools`.

    memstore mcp --store data/alice.duckdb --user alice          # stdio, e.g. for Claude Desktop

>>> # server = build_server(Memory("data/x.duckdb"), {"user_id": "alice"}); server.run("stdio")
"""
# No `from __future__ import annotations`: MCPServer reads the tool signatures (Annotated fields,
# the Context parameter) at registration, and the closures' types exist only inside build_server.
import contextlib
import functools
import json
import secrets
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any

from memstore.core.errors import IdentityError
from memstore.core.scope_rule import canonical_id
from memstore.integrations.scoped_tools import ScopedTools, ScopeViolation

USER_HEADER = "x-memstore-user"
MAX_BOUND_SESSIONS = 100_000            # session -> user bindings kept (far more than live sessions)
SCOPE_KEY = "memstore.mcp_scope"        # where the HTTP endpoint leaves the request's scope

INSTRUCTIONS = (
    "Long-term memory about the user you are talking with. Search it (search_memories) before answering "
    "questions that depend on the user's preferences, facts or history; store durable facts the user tells "
    "you (add_memory); correct facts that changed (update_memory). Memories belong to one user, fixed by "
    "this server: never pass another user's id.")

# (name, description) of every tool; aliases point at the same implementation.
DESCRIPTIONS = {
    "add_memory": "Store durable information about the user: a preference, fact, plan or conversation snippet. "
                  "Call it when the user tells you something worth remembering next time. `text` is a plain "
                  "sentence; `messages` (role/content turns) may be given instead. Facts are extracted and "
                  "de-duplicated; a fact that replaces an older one (a move, a new job) supersedes it. "
                  "Returns the stored memories with their ids.",
    "search_memories": "Find the user's memories relevant to a question, best first, each with a score in [0, 1]. "
                       "Call it before answering anything that depends on what you know about the user. "
                       "`filters` narrow by metadata, e.g. {\"topic\": \"food\"} or {\"created_at\": {\"gte\": "
                       "\"2024-01-01\"}}; the user is filled in for you.",
    "get_memories": "List the user's current memories, newest first, page by page (no query). Use it to browse "
                    "or to find an id; prefer search_memories to answer a question.",
    "get_memory": "Fetch one memory by its id (from a search or list result).",
    "update_memory": "Replace the text of one memory (by id) when a fact changed or was wrong. The change is "
                     "recorded in the memory's history.",
    "delete_memory": "Delete one memory by id, when the user asks you to forget that specific thing.",
    "delete_all_memories": "Delete every memory of this user (or of one agent/run inside it). Only when the user "
                           "explicitly asks to clear their memories. History and messages stay; use forget_me "
                           "for a complete erasure.",
    "list_entities": "Which users, agents and runs hold memories in this server's scope, with counts.",
    "memory_history": "Every change of one memory, oldest first (ADD, UPDATE, SUPERSEDE, DELETE...). Use it to "
                      "answer 'when did I tell you that' or 'what did it say before'.",
    "what_changed": "Facts about the user that were replaced by newer ones (old value, new value, when), newest "
                    "first; optionally only those about a subject (e.g. 'alice' or 'job'). Use it for 'what "
                    "changed since...' or to explain why an old fact is no longer used.",
    "forget_me": "Erase EVERYTHING stored about this user (memories, messages, history) irreversibly and return "
                 "the erasure receipt. Only when the user explicitly asks to be forgotten; needs confirm=true.",
    # OpenMemory's names
    "add_memories": "Store a new memory about the user (OpenMemory name of add_memory). `text` is a plain sentence.",
    "search_memory": "Search the user's memories for a query (OpenMemory name of search_memories).",
    "list_memories": "List the user's memories, newest first (OpenMemory name of get_memories).",
    "delete_memories": "Delete several memories by id (OpenMemory name); all ids must belong to this user.",
}


def _field(description: str, default: Any = ...) -> Any:
    from pydantic import Field

    return Field(default=default, description=description)


def build_server(memory: Any, scope: dict[str, str] | None = None, *,
                 scope_of: Callable[[Any], dict[str, str]] | None = None, actor_id: str | None = "mcp",
                 name: str = "memstore") -> Any:
    """An MCPServer whose tools act on `memory` (a Memory or its HTTP client) inside one scope.

    `scope` fixes it (stdio); `scope_of(ctx)` derives it per request (HTTP: from the path or
    header, see `mount_mcp`). Tools run the synchronous Memory calls in worker threads.
    """
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    if (scope is None) == (scope_of is None):
        raise ValueError("give exactly one of scope= (fixed) or scope_of= (per request)")
    fixed = ScopedTools(memory, scope, actor_id=actor_id) if scope is not None else None
    server = MCPServer(name, instructions=INSTRUCTIONS)

    def tools_for(ctx: Context) -> ScopedTools:
        if fixed is not None:
            return fixed
        found = scope_of(ctx)  # type: ignore[misc]
        # (scope, actor) or (scope, actor, memory): a memory bound to the request's credentials
        return ScopedTools(found[2] if len(found) > 2 else memory, found[0], actor_id=found[1])

    async def call(ctx: Context, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from memstore.core.errors import MemstoreError

        try:
            tools = tools_for(ctx)
            return await anyio.to_thread.run_sync(functools.partial(_via_mcp, getattr(tools, method), *args, **kwargs))
        except (MemstoreError, KeyError, ValueError, TypeError) as exc:
            raise ToolError(_message(exc)) from exc

    Text = Annotated[str, _field("A plain sentence to remember, e.g. 'Prefers window seats'.")]
    Query = Annotated[str, _field("What to look for, in natural language.")]
    MemId = Annotated[str, _field("The memory's id, as returned by search or list results.")]
    Filters = Annotated[dict[str, Any] | None, _field(
        "Optional metadata filters, mem0 style: {\"key\": value}, {\"key\": {\"in\": [...]}}, AND/OR/NOT lists. "
        "The user is added for you.", None)]
    Limit = Annotated[int | None, _field("Maximum number of results (default 10).", None)]
    Ident = Annotated[str | None, _field("Leave empty: the server's user is used. Another user is refused.", None)]
    Sub = Annotated[str | None, _field("Optional agent or run inside the user's scope.", None)]
    App = Annotated[str | None, _field("Optional application name, kept in the memory's metadata.", None)]
    Meta = Annotated[dict[str, Any] | None, _field("Optional metadata to attach, e.g. {\"topic\": \"travel\"}.", None)]
    Messages = Annotated[list[dict[str, str]] | None, _field(
        "Optional conversation turns [{\"role\": \"user\", \"content\": \"...\"}] to extract facts from.", None)]

    def tool(fn: Callable[..., Any], name: str) -> None:
        server.add_tool(fn, name=name, description=DESCRIPTIONS[name])

    async def add_memory(text: Text, ctx: Context, messages: Messages = None, user_id: Ident = None,
                         agent_id: Sub = None, app_id: App = None, run_id: Sub = None,
                         metadata: Meta = None) -> dict[str, Any]:
        return await call(ctx, "add_memory", text, messages, user_id=user_id, agent_id=agent_id, run_id=run_id,
                          app_id=app_id, metadata=metadata)

    async def add_memories(text: Text, ctx: Context) -> dict[str, Any]:
        return await call(ctx, "add_memory", text)

    async def search_memories(query: Query, ctx: Context, filters: Filters = None, limit: Limit = None) -> dict[str, Any]:
        return await call(ctx, "search_memories", query, filters, limit)

    async def search_memory(query: Query, ctx: Context) -> dict[str, Any]:
        return await call(ctx, "search_memories", query)

    async def get_memories(ctx: Context, filters: Filters = None,
                           page: Annotated[int | None, _field("1-based page number (default 1).", None)] = None,
                           page_size: Annotated[int | None, _field("Memories per page (default 50).", None)] = None,
                           ) -> dict[str, Any]:
        return await call(ctx, "get_memories", filters, page, page_size)

    async def list_memories(ctx: Context) -> dict[str, Any]:
        return await call(ctx, "get_memories")

    async def get_memory(memory_id: MemId, ctx: Context) -> dict[str, Any]:
        return await call(ctx, "get_memory", memory_id)

    async def update_memory(memory_id: MemId, text: Annotated[str, _field("The replacement text.")],
                            ctx: Context) -> dict[str, Any]:
        return await call(ctx, "update_memory", memory_id, text)

    async def delete_memory(memory_id: MemId, ctx: Context) -> dict[str, Any]:
        return await call(ctx, "delete_memory", memory_id)

    async def delete_memories(memory_ids: Annotated[list[str], _field("Ids of the memories to delete.")],
                              ctx: Context) -> dict[str, Any]:
        return await call(ctx, "delete_memories", memory_ids)

    async def delete_all_memories(ctx: Context, user_id: Ident = None, agent_id: Sub = None,
                                  app_id: App = None, run_id: Sub = None) -> dict[str, Any]:
        return await call(ctx, "delete_all_memories", user_id, agent_id, run_id)

    async def list_entities(ctx: Context) -> dict[str, Any]:
        return await call(ctx, "list_entities")

    async def memory_history(memory_id: MemId, ctx: Context) -> dict[str, Any]:
        return await call(ctx, "memory_history", memory_id)

    async def what_changed(ctx: Context, subject: Annotated[str | None, _field(
            "Optional subject or word to narrow to, e.g. 'job' or 'sister'.", None)] = None,
            limit: Annotated[int, _field("Maximum number of changes (default 20).", 20)] = 20) -> dict[str, Any]:
        return await call(ctx, "what_changed", subject, limit)

    async def forget_me(ctx: Context, confirm: Annotated[bool, _field(
            "Must be true: the user explicitly asked to erase everything.", False)] = False) -> dict[str, Any]:
        return await call(ctx, "forget_me", confirm)

    for fn in (add_memory, search_memories, get_memories, get_memory, update_memory, delete_memory,
               delete_all_memories, list_entities, memory_history, what_changed, forget_me,
               add_memories, search_memory, list_memories, delete_memories):
        tool(fn, fn.__name__)
    _refuse_unknown_arguments(server, ToolError)
    return server


def _via_mcp(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a tool; the reads it makes came through MCP (the audit of reads)."""
    from memstore.core.read_context import reading

    with reading(door="mcp"):
        return fn(*args, **kwargs)


def _refuse_unknown_arguments(server: Any, tool_error: type[Exception]) -> None:
    """A call naming an argument the tool does not take is refused (ToolError: isError=true, naming
    the argument and the tool's arguments) instead of the argument being dropped silently."""
    call_tool = server.call_tool

    async def checked(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = server._tool_manager.get_tool(name)
        if tool is not None:
            known = set((tool.parameters or {}).get("properties", {}))
            unknown = sorted(set(arguments or {}) - known)
            if unknown:
                raise tool_error(f"ArgumentError: {name} does not take {', '.join(unknown)} — its arguments are "
                                 f"{', '.join(sorted(known)) or 'none'}")
        return await call_tool(name, arguments, context)

    server.call_tool = checked


def _message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]
    return f"{type(exc).__name__}: {text}"


def run_stdio(memory: Any, scope: dict[str, str], *, actor_id: str | None = "mcp:stdio") -> None:
    """Serve `memory` for one scope on stdin/stdout until the client closes the pipe."""
    build_server(memory, scope, actor_id=actor_id).run("stdio")


# -- streamable HTTP --------------------------------------------------------------------------------
def mount_mcp(app: Any, memory: Any, *, path: str = "/mcp", token: str | None = None,
              resolve_user: Callable[[Any, str | None], str | None] | None = None,
              authorize: Callable[[Any, str | None, str], tuple[dict[str, str], str, Any]] | None = None,
              json_response: bool = False, host: str = "127.0.0.1",
              transport_security: Any = None) -> Any:
    """Add a streamable-HTTP MCP endpoint to a FastAPI/Starlette `app` (before it starts):

    - `{path}/{client}/{user_id}`: OpenMemory's layout (`client` is recorded as the writer, `mcp:cursor`);
    - `{path}`: the user from the `X-Memstore-User` header or the `user_id` query parameter.

    `token`: every request must send `Authorization: Bearer <token>` (as the REST API does).
    `resolve_user(request, user_from_path_or_header)` may replace that choice (e.g. the user of a
    bearer token) or raise to refuse the request. `authorize(request, user, client)` replaces both
    the token check and `resolve_user`: it returns (scope, actor_id, memory the tools use) or raises
    (the answer's status is the exception's `status_code`, else 403); memstore serve's token scopes
    come in here (memstore/server/auth.py). A session stays bound to the scope it was opened for: a
    request that reuses its session id for another one gets 403. Returns the MCPServer.
    """
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def scope_of(ctx: Any) -> tuple[dict[str, str], str]:
        request = ctx.request_context.request
        found = getattr(request, "scope", {}).get(SCOPE_KEY) if request is not None else None
        if not found:
            raise ScopeViolation("this MCP request carries no user", hint=f"connect to {path}/CLIENT/USER_ID")
        return found

    server = build_server(memory, scope_of=scope_of)
    server.streamable_http_app(streamable_http_path=path, json_response=json_response, host=host,
                               transport_security=transport_security)
    manager = server.session_manager
    sessions: OrderedDict[str, str] = OrderedDict()      # session id -> user it was opened for

    async def handle(scope: dict, receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        if token is not None and authorize is None:
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(given.strip().encode(), token.encode()):
                body = {"error": "AuthError", "message": "missing or wrong bearer token — send `Authorization: "
                        "Bearer <token>` (the token is in <store>.server-token)"}
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        params = scope.get("path_params") or {}
        client = params.get("client") or request.headers.get("x-memstore-client") or "http"
        user = params.get("user_id") or request.headers.get(USER_HEADER) or request.query_params.get("user_id")
        bound: tuple = ()
        try:
            if authorize is not None:
                bound = tuple(authorize(request, user, client))
            elif resolve_user is not None:
                user = resolve_user(request, user)
        except Exception as exc:        # the hook refused: say so, as the REST API would
            status = getattr(exc, "status_code", 403)
            await JSONResponse({"error": type(exc).__name__, "message": str(exc)}, status_code=status)(scope, receive, send)
            return
        if not bound:
            user = (user or "").strip()
            try:
                user = canonical_id(user, "user_id") if user else ""   # the one scope rule (core/scope_rule.py)
            except IdentityError as exc:
                await JSONResponse({"error": "IdentityError", "message": str(exc)}, status_code=400)(
                    scope, receive, send)
                return
            if not user:
                body = {"error": "missing_user", "message": f"no user for this MCP endpoint — connect to "
                        f"{path}/CLIENT/USER_ID, or send the {USER_HEADER} header or ?user_id="}
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
            bound = ({"user_id": user}, f"mcp:{client}")
        user = "&".join(f"{k}={v}" for k, v in sorted(bound[0].items()))     # what the session is bound to
        sid = request.headers.get("mcp-session-id")
        if sid and sessions.get(sid, user) != user:
            body = {"error": "scope_mismatch", "message": "this MCP session belongs to another user"}
            await JSONResponse(body, status_code=403)(scope, receive, send)
            return
        scope[SCOPE_KEY] = bound

        async def bind_session(message: dict) -> None:
            if message.get("type") == "http.response.start":
                for k, v in message.get("headers") or []:
                    if k.decode("latin-1").lower() == "mcp-session-id":
                        sessions.setdefault(v.decode("latin-1"), user)
                while len(sessions) > MAX_BOUND_SESSIONS:   # the SDK ends idle sessions; forget the oldest
                    sessions.popitem(last=False)
            await send(message)

        await manager.handle_request(scope, receive, bind_session)
        if sid and request.method == "DELETE":          # the client ended its session
            sessions.pop(sid, None)

    endpoint = _ASGIEndpoint(handle)     # an ASGI app, not a request handler: the SDK answers itself
    methods = ["GET", "POST", "DELETE"]
    app.router.routes.append(Route(f"{path}/{{client}}/{{user_id}}", endpoint=endpoint, methods=methods))
    app.router.routes.append(Route(path, endpoint=endpoint, methods=methods))
    previous = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> Any:
        async with manager.run():
            async with previous(a) as state:
                yield state

    app.router.lifespan_context = lifespan
    return server


class _ASGIEndpoint:
    """Starlette treats a plain function endpoint as request -> response; an object is an ASGI app."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        await self.fn(scope, receive, send)


def result_json(result: Any) -> Any:
    """A CallToolResult's structured content, else its text parsed as JSON (for clients and tests)."""
    if getattr(result, "structured_content", None) is not None:
        return result.structured_content
    text = "".join(getattr(c, "text", "") for c in result.content)
    try:
        return json.loads(text)
    except ValueError:
        return text
