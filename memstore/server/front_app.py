"""A front process of `memstore serve --fronts N` (see memstore/server/fronts.py).

It accepts HTTP on the server's listening socket (shared with the other fronts) and answers the
hot routes itself with a plain ASGI app, no framework in between:

- `POST /v1/add`: parse and check the call as the owner's route does (memstore/server/openapi.py),
  ask the owner to admit it for the token (scope, actor), validate, read the LLM's context through
  the owner when the extractor needs it, extract, run spaCy and the embedder here (together with
  the front's other adds that are ready: memstore/server/front_models.py), then send the prepared
  add to the owner, which commits it with the others (group commit);
- `POST /v1/search`: embed the query here; search a hot scope here, on a copy of the owner's
  search snapshot that the owner confirms is current (memstore/server/front_search.py); else the
  owner searches with that vector.

Every other request goes to the owner's own app on its Unix socket, byte for byte, streamed both
ways, so its behaviour is the owner's. Errors carry the owner's envelope and status codes
(memstore/server/errors.py). The process never opens the store. Run by the owner as
`python -m memstore.server.front_app` with its settings pickled on stdin.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import gc
import json
import os
import pickle
import socket
import sys
import threading
import time
from typing import Any

from memstore.api.protocol import METHODS
from memstore.api.stages import AddStages, pack_error
from memstore.core.errors import LLMError, ServerUnavailableError
from memstore.server.front_models import FrontModels
from memstore.server.front_search import FrontSearch
from memstore.server.limits import BodyLimit
from memstore.server.owner_rpc import Admit, Commit, Context, FailedRun, Forget, OwnerClient
from memstore.wire.format import RESULT_KIND, dumps, loads

_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade",
                  b"proxy-connection"})
_JSON_HEADERS = [(b"content-type", b"application/json"), (RESULT_KIND.lower().encode(), b"json")]


class Front:
    """The work of one front process: `add(authorization, body)` and `search(authorization, body)`
    return (status, JSON bytes)."""

    def __init__(self, stages: AddStages, owner: OwnerClient, default_prompt: str | None = None) -> None:
        self.stages, self.owner, self.default_prompt = stages, owner, default_prompt
        self.searches = FrontSearch(stages, owner)    # hot scopes searched here, from snapshot copies
        self.models = FrontModels(stages)             # the adds ready here prepared together

    def _call(self, name: str, authorization: str, body: bytes) -> tuple[tuple, dict[str, Any]]:
        from memstore.server.openapi import as_call, call_arguments
        from memstore.server.openapi_rules import valid_unicode

        try:
            value = valid_unicode(loads(body)) if body else {}
            if not isinstance(value, dict):
                raise ValueError('the body must be {"args": [...], "kwargs": {...}}')
            spec = METHODS[name]
            kwargs = call_arguments(spec, value)
            if name == "search" and isinstance(kwargs.get("channels"), list):
                kwargs["channels"] = tuple(kwargs["channels"])
            args, kwargs = as_call(spec, kwargs)
        except Exception:
            self.owner.call(Admit(authorization, "get", (), {}))     # a wrong token answers 401 first
            raise
        return tuple(args), kwargs

    def add(self, authorization: str, body: bytes) -> Any:
        coming = self.models.coming()               # the front's next model batch waits a little for it
        try:
            args, kwargs = self._call("add", authorization, body)
            (args, kwargs), ticket = self.owner.call(Admit(authorization, "add", args, kwargs))
            try:
                return self._add(authorization, args, kwargs, ticket, coming)
            except BaseException:
                with contextlib.suppress(ServerUnavailableError):
                    self.owner.call(Forget(ticket))   # the owner's group commit stops waiting for it
                raise
        finally:
            coming.done()

    def _add(self, authorization: str, args: tuple, kwargs: dict[str, Any], ticket: int | None,
             coming: Any = None) -> Any:
        from memstore.memory import add_state

        t0 = time.perf_counter()
        state = self.stages.read(add_state(*args, **kwargs, default_prompt=self.default_prompt))
        needs_store = (self.stages.context_needs_store and state.infer and state.options.gather_context
                       and not state.memory_type)
        state = self.owner.call(Context(state)) if needs_store else self.stages.context(state)
        try:
            out = self.models.prepare(state, coming)      # extract, spaCy, embed: batched with this front's other adds
        except LLMError as exc:                   # recorded as a failed extraction run, as add() does
            self.owner.call(FailedRun(state, pack_error(exc)))     # its class does not unpickle
            raise
        result = self.owner.call(Commit(authorization, out, ticket))
        result["timings"]["total"] = time.perf_counter() - t0
        return result

    def search(self, authorization: str, body: bytes) -> Any:
        args, kwargs = self._call("search", authorization, body)
        query = args[0] if args else kwargs.get("query")
        vector = None
        t0 = time.perf_counter()
        if isinstance(query, str) and "semantic" in kwargs.get("channels", ("semantic",)):
            vector = self.stages.embed_query(query)
        return self.searches.search(authorization, tuple(args), kwargs, vector, time.perf_counter() - t0)


def error_response(exc: BaseException) -> tuple[int, bytes]:
    """(status, body) with the owner's error envelope."""
    from memstore.server.app import error_body
    from memstore.server.errors import envelope

    status, body = envelope(exc, error_body)
    return status, json.dumps(body, ensure_ascii=False).encode("utf-8")


def make_app(front: Front, owner_http: str, *, threads: int = 32) -> Any:
    """The ASGI app of a front: the hot routes here, the rest to the owner's app at `owner_http`
    (a Unix socket path)."""
    import httpx

    pool = cf.ThreadPoolExecutor(threads, thread_name_prefix="memstore-front")
    hot = {"/v1/add": front.add, "/v1/search": front.search}
    client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=owner_http), timeout=None)

    def answer(fn: Any, authorization: str, body: bytes) -> tuple[int, bytes]:
        try:
            return 200, dumps(fn(authorization, body)).encode("utf-8")
        except Exception as exc:
            return error_response(exc)

    async def read_body(receive: Any) -> bytes:
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                return b"".join(chunks)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        fn = hot.get(scope["path"]) if scope["method"] == "POST" else None
        if fn is None:
            await forward(scope, receive, send)
            return
        body = await read_body(receive)
        authorization = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"authorization"), "")
        status, payload = await asyncio.get_running_loop().run_in_executor(pool, answer, fn, authorization, body)
        await send({"type": "http.response.start", "status": status,
                    "headers": _JSON_HEADERS if status < 400 else _JSON_HEADERS[:1]})
        await send({"type": "http.response.body", "body": payload})

    async def forward(scope: dict, receive: Any, send: Any) -> None:
        async def body() -> Any:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return
                yield msg.get("body", b"")
                if not msg.get("more_body"):
                    return

        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        try:
            req = client.build_request(scope["method"], "http://owner" + target.decode("latin-1"), headers=headers,
                                       content=body())
            resp = await client.send(req, stream=True)
        except httpx.TransportError as exc:
            status, payload = error_response(ServerUnavailableError(
                f"the server's owner process did not answer ({type(exc).__name__})",
                hint="the server is stopping or restarting; retry"))
            await send({"type": "http.response.start", "status": status, "headers": _JSON_HEADERS[:1]})
            await send({"type": "http.response.body", "body": payload})
            return
        try:
            await send({"type": "http.response.start", "status": resp.status_code,
                        "headers": [(k, v) for k, v in resp.headers.raw if k.lower() not in _HOP]})
            async for chunk in resp.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await resp.aclose()

    return BodyLimit(app, front.stages.config.limits)     # the owner's body limits, before a byte is read


def _watch_owner(owner_pid: int) -> None:
    """Leave when the owner is gone (killed without stopping us): nobody else would."""
    while True:
        time.sleep(1.0)
        if os.getppid() != owner_pid:
            os._exit(0)


def main() -> int:
    """Entry point of a front process: settings on stdin, "ready" on stdout once it accepts."""
    import uvicorn

    settings = pickle.loads(sys.stdin.buffer.read())
    ready_out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())       # nothing else goes to the owner's pipe
    threading.Thread(target=_watch_owner, args=(settings["owner_pid"],), daemon=True).start()
    front = Front(AddStages.for_models(settings["config"]), OwnerClient(settings["rpc"]), settings.get("default_prompt"))
    gc.collect()
    gc.freeze()         # spaCy and the embedder stay out of the collector's full passes (see serve._freeze_heap)
    sock = socket.socket(fileno=settings["fd"])
    server = uvicorn.Server(uvicorn.Config(make_app(front, settings["owner_http"]), log_level=settings["log_level"],
                                           access_log=False, lifespan="off",
                                           ssl_certfile=settings.get("ssl_certfile"),
                                           ssl_keyfile=settings.get("ssl_keyfile"), timeout_graceful_shutdown=10))

    async def run() -> None:
        config = server.config
        if not config.loaded:
            config.load()
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        ready_out.write("ready\n")
        ready_out.close()
        if server.should_exit:
            return
        await server.main_loop()
        await server.shutdown(sockets=[sock])

    with server.capture_signals():
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
