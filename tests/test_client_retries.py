"""The memstore HTTP client retries what a server or balancer says is retryable (502/503/504 with a
ServerUnavailableError body, or a non-memstore body), bounded by `retry_for`, after Retry-After or
with backoff; it never retries what blames the request. And the balancer's own error pages are JSON
in memstore's envelope (the config `memstore cluster haproxy` generates)."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memstore import DuplicateMemoryError, IdentityError, ServerUnavailableError
from memstore.api.http_client import MemoryClient
from memstore.cluster.haproxy import BALANCER_ERRORS, haproxy_config


class _Script(BaseHTTPRequestHandler):
    """Answers POST /v1/<m> with the next (status, body, headers) of the server's script."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        srv = self.server
        srv.calls.append(time.monotonic())                    # type: ignore[attr-defined]
        status, body, headers = srv.script[min(len(srv.calls), len(srv.script)) - 1]  # type: ignore[attr-defined]
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    srv.calls, srv.script = [], []                            # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _unavailable(after: str | None = None) -> tuple[int, dict, dict]:
    body = {"error": {"type": "ServerUnavailableError", "message": "shard 1 is down", "hint": "retry",
                      "fields": {"retryable": True, "retry_after": 1}}, "detail": "shard 1 is down"}
    return 503, body, ({"retry-after": after} if after else {})


def _client(srv, **kw) -> MemoryClient:
    return MemoryClient(f"http://127.0.0.1:{srv.server_address[1]}", token="t", **kw)


def test_retries_a_503_until_it_succeeds_honouring_retry_after(scripted):
    scripted.script[:] = [_unavailable("1"), _unavailable(), (200, {"results": []}, {})]
    t0 = time.monotonic()
    assert _client(scripted).get_all(user_id="ana") == {"results": []}
    calls = scripted.calls
    assert len(calls) == 3
    assert calls[1] - calls[0] >= 0.9                   # Retry-After: 1
    assert 0.2 <= calls[2] - calls[1] < 1.5             # backoff (0.5 s the second time)
    assert time.monotonic() - t0 < 5


def test_retries_are_bounded_and_say_how_many(scripted):
    scripted.script[:] = [_unavailable()]
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailableError) as err:
        _client(scripted, retry_for=1.0).get_all(user_id="ana")
    assert time.monotonic() - t0 < 3
    assert err.value.fields["attempts"] == len(scripted.calls) >= 2


def test_retry_for_0_and_errors_that_blame_the_request_are_not_retried(scripted):
    scripted.script[:] = [_unavailable()]
    with pytest.raises(ServerUnavailableError):
        _client(scripted, retry_for=0).get_all(user_id="ana")
    assert len(scripted.calls) == 1
    scripted.calls.clear()
    scripted.script[:] = [(400, {"error": {"type": "IdentityError", "message": "user_id is empty", "hint": "",
                                           "fields": {}}, "detail": "x"}, {})]
    with pytest.raises(IdentityError):
        _client(scripted).get_all(user_id="ana")
    assert len(scripted.calls) == 1


def test_a_busy_store_is_retried_but_a_duplicate_is_not(scripted):
    busy = {"error": {"type": "StoreBusyError", "message": "busy", "hint": "", "fields": {"retryable": True}},
            "detail": "busy"}
    scripted.script[:] = [(409, busy, {"retry-after": "0"}), (200, {"results": []}, {})]
    assert _client(scripted).get_all(user_id="ana") == {"results": []}
    assert len(scripted.calls) == 2
    scripted.calls.clear()
    dup = {"error": {"type": "DuplicateMemoryError", "message": "taken", "hint": "", "fields": {}}, "detail": "x"}
    scripted.script[:] = [(409, dup, {})]
    with pytest.raises(DuplicateMemoryError):
        _client(scripted).get_all(user_id="ana")
    assert len(scripted.calls) == 1


def test_a_proxy_page_that_is_not_memstore_json_is_retried_too(scripted):
    scripted.script[:] = [(502, b"<html><body>502 Bad Gateway</body></html>", {"content-type": "text/html"}),
                          (200, {"results": []}, {})]
    assert _client(scripted).get_all(user_id="ana") == {"results": []}
    assert len(scripted.calls) == 2


def test_the_balancers_own_error_pages_are_memstore_json():
    cfg = haproxy_config(["http://127.0.0.1:9000", "http://127.0.0.1:9001"], check_interval_ms=1000)
    pages = {int(m.group(1)): (m.group(2), json.loads(m.group(3)))
             for m in re.finditer(r"http-error status (\d+) content-type application/json(.*?) string '(.*)'$", cfg,
                                  re.M)}
    assert set(pages) == set(BALANCER_ERRORS) >= {400, 408, 500, 502, 503, 504}
    for status, (hdr, body) in pages.items():
        assert set(body) == {"error", "detail"} and set(body["error"]) == {"type", "message", "hint", "fields"}
        assert body["error"]["fields"]["status"] == status
        if status in (502, 503, 504):
            assert body["error"]["type"] == "ServerUnavailableError"
            assert body["error"]["fields"]["retryable"] is True and body["error"]["fields"]["retry_after"] == 2
            assert "retry-after 2" in hdr
    down = [json.loads(m.group(1)) for m in re.finditer(r"http-request return status 503 .*? string '(.*)' if", cfg)]
    assert [d["error"]["fields"]["shard"] for d in down] == [0, 1]
    assert all(d["error"]["fields"]["retryable"] for d in down)
    assert "retry-on conn-failure empty-response" in cfg and 'ltrim(" \\t\\n\\r' in cfg
