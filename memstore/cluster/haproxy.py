"""`memstore cluster haproxy`: the HAProxy (2.6+) config that routes each request to the shard owning
its scope: one file, no Lua, no map file.

How a request finds its shard (first that applies):
1. `X-Memstore-Slot: <0..1023>` (the memstore client sends it on every scoped call) or
   `X-Memstore-Shard: <i>` (the client's fan-out to every shard);
2. MCP: the user of `/mcp/<client>/<user>`, else the `X-Memstore-User` header on `/mcp`;
3. `user_id` in the query string, in a JSON body (mem0's REST shapes), in its `kwargs` (`/v1/<method>`)
   or in its `filters` (mem0's platform SDK: the root, or the root AND's first two conditions);
4. for calls that create a scope's rows (`POST /memories`, `/v1/add`, `/v1/ingest`, `/v1/ingest_upload`,
   `/v1/ingest_prepared`, `/v1/ingest_known`, `/v3/memories/add/`) without a user: `agent_id`, else `run_id`, from the same places.
HAProxy trims the key's surrounding whitespace (the canonical form of core/scope_rule.py, as far as
HAProxy can go: it cannot normalise Unicode, so a shard that gets a key whose canonical form another
shard owns answers 421 WrongShardError naming that shard, and stores nothing), turns it into its slot
with `crc32,and(1023)` (the same CRC-32 as Python's zlib) and the config lists each shard's slots
(jump consistent hash, memstore/core/placement.py). `GET /cluster` answers the layout (the client reads it).

Every answer the balancer makes itself is JSON in memstore's error envelope: a request with no key
gets a 400 IdentityError; a shard whose health checks fail a 503 ServerUnavailableError naming it;
and HAProxy's own error pages (502, 503, 504, 408, ...: `http-error` rules, generated here with the
config) the same envelope, with `fields.retryable` and `fields.retry_after` and a `Retry-After`
header. A request cut off by a shard that dies is retried by HAProxy on a fresh connection
(`retry-on conn-failure empty-response`); when the shard stays down the client gets the JSON 503,
and memstore's HTTP client retries it (bounded, with backoff: api/http_client.py). One exception
HAProxy does not let a config change: a request cut off that was not the first on its kept-alive
client connection is answered by closing that connection without a word (HTTP's "retry it"
signal, RFC 9112 9.3.1); the memstore client retries that too.

>>> cfg = haproxy_config(["http://127.0.0.1:9000", "http://127.0.0.1:9001"])
>>> "server shard1 127.0.0.1:9001 check" in cfg, "crc32,and(1023)" in cfg
(True, True)
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

from memstore.core.errors import ConfigError
from memstore.core.placement import PLACEMENT, SLOTS, slot_table
from memstore.core.scope_rule import TRIMMABLE

SLOT_HEADER = "x-memstore-slot"
SHARD_HEADER = "x-memstore-shard"
INTS_PER_LINE = 48              # HAProxy allows 64 words on a config line
# Calls that create a scope's rows: routed by agent_id / run_id when they name no user.
CREATING_PATHS = ("/memories", "/v1/add", "/v1/ingest", "/v1/ingest_upload", "/v1/ingest_prepared", "/v1/ingest_known",
                  "/v3/memories/add/")
# mem0's platform SDK names the user in its filters: at the root, or in the root AND's first conditions
PLATFORM_KEYS = ("$.filters.{key}", "$.filters.AND[0].{key}", "$.filters.AND[1].{key}")


def shard_address(url: str) -> tuple[str, bool]:
    """`http://h:9000` -> ("h:9000", False); https -> TLS to the shard."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or not parts.port:
        raise ConfigError(f"shard URL {url!r} is not http(s)://HOST:PORT",
                          hint="list the shards' URLs as `memstore serve` prints them, e.g. http://10.0.0.5:9000",
                          key="shards")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return f"{host}:{parts.port}", parts.scheme == "https"


# What HAProxy answers itself, per status: (memstore error type, message, hint, retryable).
BALANCER_ERRORS = {
    400: ("InvalidInputError", "the balancer could not read this HTTP request", "send a well-formed HTTP/1.1 "
          "request", False),
    401: ("AuthError", "the balancer refused the request", "send `Authorization: Bearer <token>`", False),
    403: ("AuthError", "the balancer refused the request", "check the balancer rules", False),
    404: ("NotFoundError", "no route on the balancer", "see /docs on a shard for the API", False),
    405: ("MethodNotAllowed", "method not allowed by the balancer", "see /docs for the API", False),
    407: ("AuthError", "proxy authentication required", "check the proxy between you and the balancer", False),
    408: ("ServerUnavailableError", "the request was not received in time by the balancer",
          "send the whole request promptly, then retry", True),
    410: ("NotFoundError", "gone", "see /docs for the API", False),
    413: ("InvalidInputError", "the request is too large for the balancer", "send a smaller body", False),
    425: ("ServerUnavailableError", "too early", "retry", True),
    429: ("ServerUnavailableError", "too many requests", "retry after the delay", True),
    500: ("ServerError", "the balancer failed on this request", "retry; if it persists see the balancer log", True),
    501: ("InvalidInputError", "not implemented by the balancer", "send a plain HTTP/1.1 request", False),
    502: ("ServerUnavailableError", "the shard answering this request failed (connection lost or a bad answer)",
          "retry: a write that was in flight may or may not have been applied; the memstore client retries", True),
    503: ("ServerUnavailableError", "no shard is available for this request (down or restarting)",
          "retry later; other users are not affected; the memstore client retries", True),
    504: ("ServerUnavailableError", "the shard did not answer in time", "retry later: a write that was in flight "
          "may or may not have been applied", True),
}


def _json_body(kind: str, message: str, hint: str, **fields: object) -> str:
    body = json.dumps({"error": {"type": kind, "message": f"{message} — {hint}", "hint": hint, "fields": fields},
                       "detail": f"{message} — {hint}"}, ensure_ascii=True)
    if "'" in body:
        raise AssertionError("HAProxy single-quoted strings cannot hold a quote")
    return body


def _error(kind: str, message: str, hint: str, code: int, cond: str, retry_after: int | None = None,
           **fields: object) -> str:
    status = code
    if retry_after is not None:
        fields.update(retryable=True, retry_after=retry_after)
    body = _json_body(kind, message, hint, **fields)
    hdr = f" hdr retry-after {retry_after}" if retry_after is not None else ""
    return (f"    http-request return status {status} content-type application/json{hdr} string '{body}' "
            f"if {cond}")


def error_pages(retry_after: int) -> list[str]:
    """`http-error` lines: HAProxy's own error answers as JSON in memstore's envelope (for `defaults`).

    >>> any("http-error status 503 content-type application/json hdr retry-after 2" in l for l in error_pages(2))
    True
    """
    lines = []
    for status, (kind, message, hint, retryable) in sorted(BALANCER_ERRORS.items()):
        fields: dict[str, object] = {"status": status, "retryable": retryable, "source": "balancer"}
        hdr = ""
        if retryable:
            fields["retry_after"] = retry_after
            hdr = f" hdr retry-after {retry_after}"
        lines.append(f"    http-error status {status} content-type application/json{hdr} "
                     f"string '{_json_body(kind, message, hint, **fields)}'")
    return lines


def haproxy_config(shards: list[str], *, bind: str = "127.0.0.1:8765", tls_cert: str | None = None,
                   check_interval_ms: int = 1000, maxconn: int = 2000) -> str:
    """The whole HAProxy config for `shards` (URLs in shard order: shard i is shards[i])."""
    if not shards:
        raise ConfigError("no shards given", hint="--shards http://h0:9000,http://h1:9001", key="shards")
    if len(shards) > SLOTS:
        raise ConfigError(f"{len(shards)} shards: at most {SLOTS}", key="shards")
    host = bind.rpartition(":")[0].strip("[]")
    if host not in ("127.0.0.1", "::1", "localhost") and not tls_cert:
        raise ConfigError(f"refusing to bind {bind} over plain HTTP: tokens and memories would cross the network "
                          f"in clear", hint="bind 127.0.0.1 or pass --tls-cert PEM", key="bind")
    n = len(shards)
    addresses = [shard_address(u) for u in shards]
    table = slot_table(n)
    layout = json.dumps({"service": "memstore-cluster", "placement": PLACEMENT, "slots": SLOTS, "shards": n,
                         "slot_header": SLOT_HEADER, "shard_header": SHARD_HEADER})
    no_key = "!has_slot !has_shard !any_shard_path !unplaced"
    retry_after = max(1, round(2 * check_interval_ms / 1000))      # two health checks: `rise 2`
    trim = f',ltrim("{_escaped(TRIMMABLE)}"),rtrim("{_escaped(TRIMMABLE)}")'   # core/scope_rule.py, what HAProxy can
    lines = [
        f"# memstore cluster: {n} shard(s), placement {PLACEMENT} (memstore/cluster/placement.py).",
        "# Generated by `memstore cluster haproxy`; regenerate rather than edit (the slot lists are computed).",
        "global",
        f"    maxconn {maxconn}",
        "    tune.bufsize 65536          # a request body up to 64 KiB can be read for its user_id",
        "defaults",
        "    mode http",
        "    timeout connect 2s",
        "    timeout client 600s",
        "    timeout server 600s          # an ingest can take minutes",
        "    timeout http-request 30s",
        "    timeout check 5s             # a busy shard answers /health late; a dead one refuses at once",
        "    option http-keep-alive",
        "    retries 3                    # a shard that died mid-request: a fresh connection, then the JSON 503",
        "    retry-on conn-failure empty-response",
        "    # the balancer's own error answers: JSON in memstore's error envelope (ServerUnavailableError is retryable)",
        *error_pages(retry_after),
        "frontend memstore",
        f"    bind {bind}" + (f" ssl crt {tls_cert}" if tls_cert else ""),
        "    option http-buffer-request",
        f"    http-request return status 200 content-type application/json string '{layout}' if {{ path /cluster }}",
        "    # 1. the memstore client names the slot (scoped calls) or the shard (fan-out)",
        f"    acl has_shard req.hdr({SHARD_HEADER}) -m reg ^[0-9]+$",
        f"    http-request set-var(txn.slot) req.hdr({SLOT_HEADER}) if {{ req.hdr({SLOT_HEADER}) -m reg ^[0-9]{{1,4}}$ }}",
        "    acl has_slot var(txn.slot) -m found",
        "    acl has_key var(txn.key) -m found",
        "    # 2. MCP over HTTP: /mcp/<client>/<user>, or /mcp with X-Memstore-User",
        f"    http-request set-var(txn.key) path,field(4,/),url_dec{trim} if !has_slot {{ path_reg ^/mcp/[^/]+/[^/]+/?$ }}",
        f"    http-request set-var(txn.key) req.hdr(x-memstore-user){trim} if !has_slot !has_key {{ path /mcp }}",
        "    # 3. user_id in the query string, a JSON body (mem0 REST) or its kwargs (/v1/<method>)",
        f"    http-request set-var(txn.key) url_param(user_id),url_dec(1){trim} if !has_slot !has_key",
        f"    http-request set-var(txn.key) req.body,json_query('$.user_id'){trim} if !has_slot !has_key",
        f"    http-request set-var(txn.key) req.body,json_query('$.kwargs.user_id'){trim} if !has_slot !has_key",
        *(f"    http-request set-var(txn.key) req.body,json_query('{p.format(key='user_id')}'){trim} if !has_slot !has_key"
          for p in PLATFORM_KEYS),
        "    # 4. calls that create a scope's rows, without a user: agent_id, else run_id",
        "    acl creates method POST",
        f"    acl creates_path path {' '.join(CREATING_PATHS)}",
    ]
    for key in ("agent_id", "run_id"):
        for fetch in (f"url_param({key}),url_dec(1)", f"req.body,json_query('$.{key}')",
                      f"req.body,json_query('$.kwargs.{key}')",
                      *(f"req.body,json_query('{p.format(key=key)}')" for p in PLATFORM_KEYS)):
            lines.append(f"    http-request set-var(txn.key) {fetch}{trim} if !has_slot !has_key creates creates_path")
    lines += [
        "    # an id HAProxy cannot read (json_query does not decode \\u escapes above U+00FF): any shard, which",
        "    # places the id's canonical form itself and answers 421 naming the owner when it is not",
        "    acl body_user req.body -m sub '\"user_id\"'",
        "    acl body_scope req.body -m reg '\"(agent_id|run_id)\"'",
        "    http-request set-var(txn.unplaced) bool(true) if !has_slot !has_shard !has_key body_user",
        "    http-request set-var(txn.unplaced) bool(true) if !has_slot !has_shard !has_key creates creates_path body_scope",
        "    acl unplaced var(txn.unplaced) -m bool",
        "    http-request set-var(txn.slot) var(txn.key),crc32,and(1023) if !has_slot has_key",
        "    # each shard's slots (jump consistent hash of the slot over the shard count)",
    ]
    for i, slots in enumerate(table):
        lines.append(f"    acl to_shard{i} req.hdr({SHARD_HEADER}) -m str {i}")
        for start in range(0, len(slots), INTS_PER_LINE):
            chunk = " ".join(str(s) for s in slots[start:start + INTS_PER_LINE])
            lines.append(f"    acl to_shard{i} var(txn.slot) -m int {chunk}")
    lines.append("    acl any_shard_path path /docs /openapi.json /health /v1/ping/")
    lines.append(_error(
        "IdentityError", "the cluster balancer cannot tell which shard this request is for: it names no user",
        "send user_id (query string, JSON body or MCP path /mcp/CLIENT/USER); reads without a user span every "
        "shard: use memstore.connect(url), which fans out and merges, or the lake for analysis", 400, no_key))
    lines.append(_error("IdentityError", "bad X-Memstore-Slot or X-Memstore-Shard header",
                        f"slots are 0..{SLOTS - 1} and shards 0..{n - 1}: GET /cluster gives the layout", 400,
                        " ".join(f"!to_shard{i}" for i in range(n)) + " !any_shard_path !unplaced"))
    for i, (_, url) in enumerate(zip(addresses, shards)):
        lines.append(_error("ServerUnavailableError", f"shard {i} ({url}) is down: its health checks fail",
                            "retry later; other users are not affected; the memstore client retries", 503,
                            f"to_shard{i} {{ nbsrv(shard{i}) lt 1 }}", retry_after=retry_after, shard=i,
                            status=503, source="balancer"))
    for i in range(n):
        lines.append(f"    use_backend shard{i} if to_shard{i}")
    lines.append("    default_backend any_shard")
    check = f"check inter {check_interval_ms} fall 2 rise 2"
    for i, (addr, tls) in enumerate(addresses):
        lines += [f"backend shard{i}", "    option httpchk GET /health", "    http-check expect status 200",
                  f"    server shard{i} {addr} {check}" + (" ssl verify required ca-file @system-ca" if tls else "")]
    lines += ["backend any_shard", "    balance roundrobin", "    option httpchk GET /health",
              "    http-check expect status 200"]
    for i, (addr, tls) in enumerate(addresses):
        lines.append(f"    server shard{i} {addr} {check}" + (" ssl verify required ca-file @system-ca" if tls else ""))
    return "\n".join(lines) + "\n"


def _escaped(chars: str) -> str:
    """`chars` inside an HAProxy double-quoted string (\\t, \\n, \\r escapes; \\x0b as hex)."""
    return "".join({"\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"', "\\": "\\\\"}.get(c) or
                   (c if c.isprintable() else f"\\x{ord(c):02x}") for c in chars)
