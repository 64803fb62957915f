"""`MemoryClient`: the memstore API over HTTP, for processes that do not own the store file.

Every method of `memstore.api.protocol.METHODS` is one `POST /v1/<name>` call; answers come back
in the embedded Memory's shapes (frames as Arrow IPC → Polars, IngestReport objects, datetimes).
Errors the server raised come back as the same `memstore.core.errors` classes; a server that cannot be
reached is a `ServerUnavailableError` (retryable), and the next call reconnects — to a restarted
server on a new address too, when the client was opened from a store path.

An answer that says "unavailable, retry" (HTTP 502/503/504 whose JSON error is a
`ServerUnavailableError`, retryable: a cluster balancer's answer while a shard is down or
restarting, a worker lost mid-add; or a 409 `StoreBusyError`: nothing was changed) is retried: after `Retry-After` (or 0.25 s, doubling, at most 4 s
a wait) until `retry_for` seconds (default 15; 0 turns retries off) have passed since the first
answer; then the last error is raised, with `fields["attempts"]`. A server that cannot be reached
at all is not retried (nothing answered: it may not exist). Through a cluster's balancer
(`ClusterClient`), a request whose connection closed without any answer is retried the same way:
that is how HAProxy answers a request on a kept-alive connection whose shard died mid-request
(HTTP's "retry it" signal); such a write may have been applied once already.

>>> c = MemoryClient("http://127.0.0.1:9", token="t")      # nothing listens on port 9
>>> try:
...     c.get("abc")
... except Exception as exc:
...     type(exc).__name__
'ServerUnavailableError'
"""
from __future__ import annotations

import inspect
import os
import time
from collections import Counter
from typing import Any

from memstore.api.protocol import METHODS, MemoryAPI
from memstore.core import errors as _errors
from memstore.core.errors import AuthError, MemstoreError, ServerError, ServerUnavailableError, StoreBusyError
from memstore.wire.format import ARROW_STREAM, RESULT_KIND, dumps, ipc_to_frame, loads
from memstore.wire.transport import Transport, TransportError

RETRY_FOR_S = 15.0          # how long retryable answers are retried (MemoryClient(retry_for=...))
RETRY_FIRST_S = 0.25        # the first wait; doubles each time
RETRY_MAX_WAIT_S = 4.0      # the longest wait between two tries (Retry-After included)
RETRY_STATUSES = frozenset({409, 502, 503, 504})
RETRIED = (ServerUnavailableError, StoreBusyError)     # "nothing was changed, try again"
_BUILTIN_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "KeyError": KeyError,
                   "FileNotFoundError": FileNotFoundError, "PermissionError": PermissionError}
# Arguments that name files: made absolute here, since the server's working directory is not ours.
_PATH_ARGS = {"ingest": ("paths",), "export_parquet": ("directory",)}


class MemoryClient:
    """`Memory("http://127.0.0.1:8765")`, `memstore.connect(url, token=…)`, or `Memory(path)` when a
    server owns `path`. Same methods and return shapes as the embedded `Memory`."""

    def __init__(self, url: str, *, token: str | None = None, store: str | None = None,
                 timeout: float = 600.0, retry_for: float = RETRY_FOR_S) -> None:
        self.url = url.rstrip("/")
        self.retry_for = float(retry_for)
        self.retry_broken = False          # ClusterClient: a balancer's close without an answer is retried
        self.store = store
        self._token = token if token is not None else os.environ.get("MEMSTORE_TOKEN")
        self._timeout = timeout
        self._http: Transport | None = None
        self.reranker: Any = None

    # -- plumbing ------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The store this client works on (its path when known, else the server's URL)."""
        return self.store or self.url

    def __repr__(self) -> str:
        return f"MemoryClient({self.url!r}" + (f", store={self.store!r})" if self.store else ")")

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connection (the server and its store stay up)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def _client(self) -> Transport:
        if self._http is None:
            headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
            self._http = Transport(self.url, headers=headers, timeout=self._timeout)
        return self._http

    def _rediscover(self) -> None:
        """After a failed connection: a client opened from a store path looks for its server again."""
        self.close()
        if self.store:
            from memstore.wire.discovery import live_server, read_token

            info = live_server(self.store, timeout=1.0)
            if info is not None:
                self.url = info["url"].rstrip("/")
                self._token = read_token(self.store) or self._token

    def server_info(self) -> dict[str, Any]:
        """The server's /health answer (service, version, store, pid)."""
        return self._request("GET", "/health")

    def _request(self, method: str, route: str, body: Any = None, *, raw: bytes | None = None,
                 params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
        deadline, delay, attempts = None, RETRY_FIRST_S, 0
        while True:
            attempts += 1
            try:
                resp = self._send(method, route, body, raw=raw, params=params, headers=headers)
            except ServerUnavailableError as err:
                if not (self.retry_broken and getattr(err, "broke", False)) or self.retry_for <= 0:
                    raise
                head, exc = {}, err
            else:
                status, head, content = resp
                if status not in RETRY_STATUSES or self.retry_for <= 0:
                    return decode_answer(resp, self.url)
                exc = _error(status, content, self.url)
                if not (isinstance(exc, RETRIED) and getattr(exc, "retryable", True)):
                    raise exc
            now = time.monotonic()
            deadline = deadline if deadline is not None else now + self.retry_for
            wait = min(max(delay, _retry_after(head)), RETRY_MAX_WAIT_S)
            if now + wait > deadline:
                if isinstance(getattr(exc, "fields", None), dict):
                    exc.fields["attempts"] = attempts
                raise exc
            time.sleep(wait)
            delay *= 2

    def _send(self, method: str, route: str, body: Any = None, *, raw: bytes | None = None,
              params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
              ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange: (status, headers, body), or ServerUnavailableError when nothing answered."""
        try:
            resp = self._client().request(method, route, raw if raw is not None else (
                dumps(body) if body is not None else None), params=params, headers={
                "Content-Type": "application/octet-stream" if raw is not None else "application/json",
                **(headers or {})})
        except TransportError as exc:
            self._rediscover()
            err = ServerUnavailableError(
                f"memstore server at {self.url} is not reachable ({type(exc).__name__}: {exc})",
                hint="start it with `memstore serve --store PATH` (or wait for it to restart) and retry; "
                     "a write that was in flight may or may not have been applied", url=self.url)
            err.broke = exc.broke           # type: ignore[attr-defined]
            raise err from None
        return resp

    def ingest_upload(self, path: str | os.PathLike, *, user_id: str | None = None, agent_id: str | None = None,
                      run_id: str | None = None, format: str = "auto") -> Any:
        """Send one chat export file to the server and ingest it there (for a server on another
        machine; `ingest(paths)` reads paths on the server's machine). Returns the IngestReport."""
        with open(path, "rb") as fh:
            data = fh.read()
        return self._request("POST", "/v1/ingest_upload", raw=data, params={
            "filename": os.path.basename(os.fspath(path)), "user_id": user_id, "agent_id": agent_id,
            "run_id": run_id, "format": format})

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._request("POST", f"/v1/{name}", {"args": list(args), "kwargs": kwargs})


def decode_answer(resp: tuple[int, dict[str, str], bytes], url: str) -> Any:
    """Decode a response, or raise the error it carries as its memstore class."""
    status, headers, content = resp
    kind = headers.get(RESULT_KIND, "json")
    if status < 400:
        if headers.get("content-type", "").startswith(ARROW_STREAM):
            return ipc_to_frame(content)
        value = loads(content) if content else None
        if status == 202 and isinstance(value, dict) and isinstance(value.get("error"), dict):
            exc = _error(status, content, url)      # accepted, not done (a forget whose rewrite failed)
            if "receipt" in value:
                exc.receipt = value["receipt"]      # type: ignore[attr-defined]
            raise exc
        if kind == "ingest_report":
            return ingest_report_from_dict(value)
        return value
    raise _error(status, content, url)


def _retry_after(headers: dict[str, str]) -> float:
    """The Retry-After header in seconds (0 when absent or not a number of seconds)."""
    try:
        return max(0.0, float(headers.get("retry-after", "") or 0))
    except ValueError:
        return 0.0


def _error(status: int, content: bytes, url: str) -> BaseException:
    try:
        body = loads(content)
    except ValueError:
        body = {}
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):       # not one of ours (a proxy, FastAPI's own 422 …)
        detail = body.get("detail") if isinstance(body, dict) else None
        if status in (502, 503, 504):
            return ServerUnavailableError(f"memstore server at {url} answered {status}", url=url)
        cls = AuthError if status in (401, 403) else ServerError
        return cls(f"server at {url} answered {status}: {detail or content[:500].decode('utf-8', 'replace')}")
    name, message = str(err.get("type", "")), str(err.get("message", ""))
    builtin = _BUILTIN_ERRORS.get(name)
    if builtin is not None:
        return builtin(message)
    cls = getattr(_errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, MemstoreError)):
        cls = ServerError
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)         # the server's text already carries the hint
    exc.hint = str(err.get("hint") or "")
    exc.fields = dict(err.get("fields") or {})
    for key, value in exc.fields.items():    # e.g. StoreWriteError.step, LLMError.retryable
        if not hasattr(type(exc), key) or key in ("step", "retryable", "name"):
            try:
                setattr(exc, key, value)
            except AttributeError:
                pass
    return exc


def ingest_report_from_dict(d: dict[str, Any]) -> Any:
    """An IngestReport rebuilt from its `to_dict()` (what `Memory.ingest` returns embedded)."""
    from memstore.ingest.report import IngestReport
    from memstore.ingest.types import Problem

    r = IngestReport(ingest_id=d["ingest_id"], scope=dict(d.get("scope") or {}), status=d.get("status", "done"))
    r.files = list(d.get("files") or [])
    for key in ("conversations", "messages", "ignored_by_reason", "skipped_by_reason", "warnings_by_reason",
                "extraction_runs", "memories", "stages_s", "stages_cpu_s"):
        setattr(r, key, Counter(d.get(key) or {}))
    r.problems = [Problem(file=p.get("file") or "", reason=p.get("reason") or "", conversation=p.get("conversation"),
                          message=p.get("message"), severity=p.get("severity") or "skipped")
                  for p in d.get("problems") or []]
    r.problems_not_listed = int(d.get("problems_not_listed") or 0)
    return r


def _absolute(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_absolute(v) for v in value]
    if isinstance(value, (str, os.PathLike)):
        return os.path.abspath(os.fspath(value))
    return value


def _method(name: str) -> Any:
    path_args = _PATH_ARGS.get(name, ())

    def call(self: MemoryClient, *args: Any, **kwargs: Any) -> Any:
        if path_args:
            if args:
                args = (_absolute(args[0]), *args[1:])
            for key in path_args:
                if key in kwargs:
                    kwargs[key] = _absolute(kwargs[key])
        if name == "search" and kwargs.get("rerank") and self.reranker is not None:
            return _rerank_locally(self, args, kwargs)
        return self._call(name, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"`Memory.{name}` on the server (same arguments and return shape)."
    call.__signature__ = inspect.signature(getattr(MemoryAPI, name))  # type: ignore[attr-defined]
    return call


def _rerank_locally(self: MemoryClient, args: tuple, kwargs: dict[str, Any]) -> Any:
    """search(rerank=True) with a client-side reranker: the server fuses, this process reranks."""
    from types import SimpleNamespace

    from memstore.retrieval.search import _rerank

    kwargs = {**kwargs, "rerank": False}
    out = self._call("search", *args, **kwargs)
    query = args[0] if args else kwargs.get("query", "")
    out["results"] = _rerank(SimpleNamespace(reranker=self.reranker), query, out["results"])
    return out


for _name in METHODS:
    setattr(MemoryClient, _name, _method(_name))
