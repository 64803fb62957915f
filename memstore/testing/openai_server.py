"""OpenAI-compatible HTTP server with scripted answers (standard library only).

Used by tests and benchmarks so that the real ``openai`` client code path
(HTTP, retries, timeouts, response parsing) is exercised without mocks.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import math
import re
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error"}


def hash_embedding(text: str, dim: int) -> list[float]:
    """Deterministic hash-based bag-of-words vector (L2-normalised; zero vector for empty text)."""
    vec = [0.0] * dim
    for tok in _TOKEN_RE.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest(), "little")
        vec[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm > 0 else vec


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    owner: ScriptedOpenAIServer

    def handle_error(self, request, client_address) -> None:  # quiet: clients may hang up (timeouts)
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def _send_json(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # client went away (e.g. it timed out)
            self.close_connection = True

    def _error(self, status: int, message: str, code: str | None = None, headers: dict | None = None) -> None:
        err = {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None, "code": code}
        self._send_json(status, {"error": err}, headers)

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        owner._record(path, None, self.headers)
        if path.endswith("/models"):
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "memstore-testing"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"unknown path {path}", "not_found")

    def do_POST(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        owner._record(path, body, self.headers)
        if not isinstance(body, dict):
            return self._error(400, "request body is not a JSON object", "invalid_json")
        if path.endswith("/chat/completions"):
            return self._chat(owner, body)
        if path.endswith("/embeddings"):
            return self._embeddings(owner, body)
        return self._error(404, f"unknown path {path}", "not_found")

    def _chat(self, owner: ScriptedOpenAIServer, body: dict) -> None:
        if body.get("stream"):
            owner._count("chat")
            return self._error(400, "stream=true is not supported by ScriptedOpenAIServer", "unsupported")
        delay, item = owner._next_chat_item()
        if owner._stop_evt.wait(delay + owner.latency_s):
            return  # shutting down
        if item is None:
            if owner.chat_responder is None:
                return self._error(500, "no scripted answer queued", "no_scripted_answer")
            try:
                item = ("chat", owner.chat_responder(body))
            except Exception as exc:  # responder failure -> HTTP 500
                return self._error(500, f"chat_responder raised {type(exc).__name__}: {exc}", "responder_error")
        kind = item[0]
        if kind == "disconnect":
            self.close_connection = True
            return _shutdown(self.connection)
        if kind == "error":
            _, status, message, retry_after = item
            headers = {}
            if retry_after is not None:
                headers = {"retry-after": f"{retry_after:g}", "retry-after-ms": str(int(retry_after * 1000))}
            return self._error(status, message, "scripted_error", headers)
        if kind == "trickle":
            return self._trickle(owner, body, *item[1:])
        content = str(item[1])
        prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or []
                            if isinstance(m, dict))
        completion_tokens = len(content.split())
        self._send_json(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or owner.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def _trickle(self, owner: ScriptedOpenAIServer, body: dict, content: str, chunk: int, interval: float) -> None:
        """A valid chat completion, sent `chunk` bytes at a time every `interval` seconds."""
        data = json.dumps({"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
                           "created": int(time.time()), "model": body.get("model") or owner.model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                        "logprobs": None, "finish_reason": "stop"}]}).encode("utf-8")
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(0, len(data), chunk):
                if owner._stop_evt.wait(interval):
                    break
                self.wfile.write(data[i:i + chunk])
                self.wfile.flush()
        except OSError:  # the client gave up (its deadline)
            self.close_connection = True

    def _embeddings(self, owner: ScriptedOpenAIServer, body: dict) -> None:
        owner._count("embed")
        inp = body.get("input")
        items = inp if isinstance(inp, list) and not (inp and isinstance(inp[0], int)) else [inp]
        texts = [" ".join(map(str, x)) if isinstance(x, list) else str(x) for x in items]
        dim = int(body.get("dimensions") or owner.embed_dim)
        try:
            if owner.embed_responder is not None:
                vectors = owner.embed_responder(texts)
            else:
                vectors = [hash_embedding(t, dim) for t in texts]
        except Exception as exc:
            return self._error(500, f"embed_responder raised {type(exc).__name__}: {exc}", "responder_error")
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            return self._error(400, f"unsupported encoding_format {fmt!r}", "invalid_encoding_format")
        data = []
        for i, vec in enumerate(vectors):
            emb: Any = [float(v) for v in vec]
            if fmt == "base64":
                emb = base64.b64encode(struct.pack(f"<{len(emb)}f", *emb)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(t.split()) for t in texts)
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model") or owner.model,
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


class ScriptedOpenAIServer:
    """OpenAI-compatible HTTP server on 127.0.0.1 with scripted answers, for tests and benchmarks.

    Example:
        with ScriptedOpenAIServer() as srv:
            srv.push_chat('{"facts": []}')
            client = openai.OpenAI(base_url=srv.base_url, api_key="test")
    """

    def __init__(self, *, chat_responder: Callable[[dict], str] | None = None,
                 embed_responder: Callable[[list[str]], list[list[float]]] | None = None,
                 latency_s: float = 0.0, embed_dim: int = 384, model: str = "scripted-model") -> None:
        self.chat_responder = chat_responder
        self.embed_responder = embed_responder
        self.latency_s = float(latency_s)
        self.embed_dim = int(embed_dim)
        self.model = model
        self.requests: list[dict] = []
        self.base_url = ""
        self._lock = threading.Lock()
        self._queue: collections.deque[tuple] = collections.deque()
        self._counts = {"chat": 0, "embed": 0}
        self._conns: set[socket.socket] = set()
        self._stop_evt = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ScriptedOpenAIServer:
        if self._httpd is not None:
            return self
        self._stop_evt.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="ScriptedOpenAIServer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop_evt.set()  # wakes handlers sleeping on latency/delay
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # drop idle keep-alive connections
            _shutdown(conn)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _push(self, *item: Any) -> None:
        with self._lock:
            self._queue.append(item)

    def push_chat(self, content: str) -> None:
        """Queue one assistant message content (FIFO)."""
        self._push("chat", content)

    def push_error(self, status: int, message: str = "scripted error", *, retry_after: float | None = None) -> None:
        """Queue an HTTP error (OpenAI error JSON) for the next chat call; optional Retry-After header."""
        self._push("error", int(status), message, retry_after)

    def push_trickle(self, content: str, *, chunk: int = 1, interval: float = 0.05) -> None:
        """Next chat call: answer `content`, but send the HTTP body `chunk` bytes every `interval` s
        (a server that never lets a per-read timeout fire)."""
        self._push("trickle", content, int(chunk), float(interval))

    def push_disconnect(self) -> None:
        """Next chat call: close the socket without answering (transport error)."""
        self._push("disconnect")

    def push_delay(self, seconds: float) -> None:
        """Next chat call answers after this extra delay; the answer is the next queued item (or responder)."""
        self._push("delay", float(seconds))

    @property
    def chat_calls(self) -> int:
        return self._counts["chat"]

    @property
    def embed_calls(self) -> int:
        return self._counts["embed"]

    def _next_chat_item(self) -> tuple[float, tuple | None]:
        """Atomically count the call and pop (accumulated delays, next answer item or None)."""
        delay = 0.0
        with self._lock:
            self._counts["chat"] += 1
            while self._queue and self._queue[0][0] == "delay":
                delay += self._queue.popleft()[1]
            return delay, (self._queue.popleft() if self._queue else None)

    def _count(self, kind: str) -> None:
        with self._lock:
            self._counts[kind] += 1

    def _record(self, path: str, body: Any, headers: Any) -> None:
        entry = {"path": path, "json": body, "headers": {k.lower(): v for k, v in headers.items()}}
        with self._lock:
            self.requests.append(entry)

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)
