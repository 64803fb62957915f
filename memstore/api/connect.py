"""Deciding between "open the file" and "be a client": URLs, and stores a server owns.

>>> client_for(":memory:") is None
True
"""
from __future__ import annotations

import os
from typing import Any

from memstore.wire.discovery import live_server, read_token

# A server that owns the file but is still loading its models is waited for, not reported as a lock.
STARTING_WAIT_S = 120.0


def is_url(target: Any) -> bool:
    """True for http:// and https:// addresses."""
    return isinstance(target, str) and target.strip().lower().startswith(("http://", "https://"))


def connect(url: str, token: str | None = None, *, timeout: float = 600.0, retry_for: float | None = None) -> Any:
    """The HTTP client of the server at `url` (token: `token`, else $MEMSTORE_TOKEN); a
    `ClusterClient` when `url` is a cluster's balancer (it answers `GET /cluster`). `retry_for`:
    seconds a retryable "unavailable" answer (503 ServerUnavailableError) is retried (default 15, 0: never).

    >>> # m = connect("http://127.0.0.1:8765", token=open("data/team.duckdb.server-token").read().strip())
    """
    from memstore.api.cluster_client import ClusterClient, cluster_layout
    from memstore.api.http_client import RETRY_FOR_S, MemoryClient

    retry = RETRY_FOR_S if retry_for is None else retry_for
    layout = cluster_layout(url)
    if layout is not None:
        return ClusterClient(url, token=token, timeout=timeout, layout=layout, retry_for=retry)
    return MemoryClient(url, token=token, timeout=timeout, retry_for=retry)


def client_for(target: Any) -> Any:
    """A MemoryClient when `target` is a URL or a store a live server owns; else None (open the file)."""
    if target is None:
        return None
    if is_url(target):
        return connect(str(target).strip())
    path = os.fspath(target)
    if path == ":memory:" or not os.path.exists(path + ".server.json") and not os.path.exists(
            os.path.abspath(path) + ".server.json"):
        return None
    info = live_server(path, wait_starting=STARTING_WAIT_S)
    if info is None:
        return None
    from memstore.api.http_client import MemoryClient

    return MemoryClient(info["url"], token=read_token(path), store=os.path.abspath(path))
