"""A small keep-alive HTTP/1.1 transport on the standard library (`http.client`).

The CLI talks to a running server in well under a second: this imports in milliseconds where a
full HTTP client library costs half a second here. One connection per thread (http.client is not
thread-safe); a connection the server closed while idle is reopened once, transparently. A
request that is not safe to send twice (POST, PUT, DELETE...) is sent again only when its
connection had been idle long enough for the server to have closed it (`RESEND_IDLE_S`): on a busy
connection a broken answer means the server (or a front process) died with the request in hand, and
it may have been applied, so the caller gets the error instead of a second copy of a write.

>>> t = Transport("http://127.0.0.1:9", timeout=1)
>>> try:
...     t.request("GET", "/health")
... except TransportError as exc:
...     "127.0.0.1:9" in str(exc)
True
"""
from __future__ import annotations

import http.client
import threading
import time
from urllib.parse import urlencode, urlsplit

# uvicorn closes a keep-alive connection after 5 s idle; a connection idle for less was not closed
# for idleness, so a write on it that broke is not sent again
RESEND_IDLE_S = 2.0
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


class TransportError(ConnectionError):
    """The server could not be reached, or the connection broke before an answer (`broke`: the
    request was sent and the connection closed without any answer)."""

    broke = False


class Transport:
    """`request(method, path, body, headers, params) -> (status, headers, body bytes)`."""

    def __init__(self, url: str, *, timeout: float = 600.0, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url.rstrip("/")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        con = getattr(self._local, "con", None)
        if con is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            con = self._local.con = cls(self.host, self.port, timeout=self.timeout)
            self._local.used = False
        return con

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    def request(self, method: str, path: str, body: bytes | str | None = None,
                headers: dict[str, str] | None = None,
                params: dict[str, object] | None = None) -> tuple[int, dict[str, str], bytes]:
        target = self.prefix + path
        if params:
            target += "?" + urlencode({k: v for k, v in params.items() if v is not None})
        data = body.encode("utf-8") if isinstance(body, str) else body
        head = {**self.headers, **(headers or {})}
        for attempt in (0, 1):
            con = self._connection()
            reused = getattr(self._local, "used", False)
            idle = time.monotonic() - getattr(self._local, "last", 0.0)
            try:
                con.request(method, target, body=data, headers=head)
                resp = con.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if reused and attempt == 0 and (method in _SAFE or idle >= RESEND_IDLE_S):
                    continue                    # the server closed an idle keep-alive connection
                err = TransportError(f"connection to {self.host}:{self.port} broke: {exc}")
                err.broke = True
                raise err from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise TransportError(f"cannot reach {self.host}:{self.port}: {exc}") from None
            self._local.used = True
            self._local.last = time.monotonic()
            if resp.getheader("connection", "").lower() == "close":
                self.close()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload
        raise AssertionError("unreachable")
