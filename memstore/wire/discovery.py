"""Finding the one server that owns a store file: `<store>.server.json` and `<store>.server-token`.

A running `memstore serve` writes `<store>.server.json` (URL, pid, started, token file; mode 0600)
and removes it on exit. Everyone else reads it: a file whose pid is alive and whose URL answers
means "be a client"; a stale one (pid gone, nothing answering) is ignored and replaced. This module
imports nothing heavy, so the CLI can decide in milliseconds whether to talk to a server.

>>> import tempfile, os
>>> store = os.path.join(tempfile.mkdtemp(), "x.duckdb")
>>> server_file(store).endswith("x.duckdb.server.json"), read_info(store) is None
(True, True)
>>> tok = load_or_create_token(store); tok == load_or_create_token(store), len(tok) >= 32
(True, True)
>>> oct(os.stat(token_file(store)).st_mode & 0o777)
'0o600'
"""
from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import socket
from typing import Any

from memstore.store.lockfile import lock_holder, pid_alive, read_info, server_file, starting_server  # noqa: F401  (part of discovery's API)

TOKEN_ENV = "MEMSTORE_TOKEN"



def token_file(store: str | os.PathLike) -> str:
    """Where the server's bearer token is kept (mode 0600)."""
    return os.path.abspath(os.fspath(store)) + ".server-token"


def _write_private(path: str, text: str) -> None:
    """Write `text` to `path` readable by the owner only (0600), atomically."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def load_or_create_token(store: str | os.PathLike) -> str:
    """$MEMSTORE_TOKEN, else the token in `<store>.server-token`, created at first start."""
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return env
    path = token_file(store)
    try:
        with open(path, encoding="utf-8") as fh:
            tok = fh.read().strip()
        if tok:
            return tok
    except FileNotFoundError:
        pass
    tok = secrets.token_urlsafe(32)
    _write_private(path, tok + "\n")
    return tok


def read_token(store: str | os.PathLike) -> str | None:
    """The token a client of `store` should send: $MEMSTORE_TOKEN or the token file, if readable."""
    env = os.environ.get(TOKEN_ENV, "").strip()
    if env:
        return env
    try:
        with open(token_file(store), encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def write_info(store: str | os.PathLike, url: str, pid: int | None = None, state: str = "ready") -> dict[str, Any]:
    """Announce a server for `store`: `state="starting"` as soon as it owns the file (clients then
    wait for it instead of failing on the file lock), `"ready"` once it listens."""
    info = {"url": url, "pid": pid or os.getpid(), "store": os.path.abspath(os.fspath(store)), "state": state,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "token_file": token_file(store), "host": socket.gethostname()}
    _write_private(server_file(store), json.dumps(info, indent=2) + "\n")
    return info


def remove_info(store: str | os.PathLike, pid: int | None = None) -> None:
    """Remove the announcement if it is ours (`pid`), e.g. at server exit."""
    path = server_file(store)
    info = read_info(store)
    if info is not None and pid is not None and info.get("pid") != pid:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass




def ping(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """GET <url>/health; the answer as a dict, or None when nothing answers like a memstore server."""
    from memstore.wire.transport import Transport, TransportError

    try:
        status, _, data = Transport(url, timeout=timeout).request("GET", "/health")
        body = json.loads(data.decode("utf-8")) if status == 200 else None
    except (TransportError, ValueError):
        return None
    return body if isinstance(body, dict) and body.get("service") == "memstore" else None


def live_server(store: str | os.PathLike, timeout: float = 2.0, wait_starting: float = 0.0) -> dict[str, Any] | None:
    """The announcement of a server that owns `store` and answers, else None (stale files are
    ignored: pid gone, or nothing answering at the URL). A server still starting (loading its
    models) is waited for up to `wait_starting` seconds."""
    import time

    info = read_info(store)
    if info is None:
        return None
    local = info.get("host") in (None, socket.gethostname())
    if local and not pid_alive(info.get("pid")):
        return None
    deadline = time.monotonic() + wait_starting
    while info.get("state") == "starting":
        if time.monotonic() >= deadline or (local and not pid_alive(info.get("pid"))):
            return None
        time.sleep(0.1)
        info = read_info(store) or {}
        if "url" not in info:
            return None
    health = ping(info["url"], timeout=timeout)
    if health is None:
        return None
    want = os.path.realpath(os.fspath(store))
    if health.get("store") and os.path.realpath(health["store"]) != want:
        return None     # something else listens on that port now
    return info


