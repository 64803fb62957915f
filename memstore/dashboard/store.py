"""Opening the store for the dashboard: which file, and through whom.

When a `memstore serve` owns the store (`memstore ui` starts one when none runs), the dashboard is
one of its clients: it never holds the file, so notebooks, ingest and agents keep working on the
same store. Run directly (`streamlit run app.py`) on a store no server owns, it opens the file
itself and says so. A store held by a process that is not a server is one clear sentence (who
holds it, what to do), never a traceback.

>>> choose_store_path("", env={}) == str(DEFAULT_DEMO_STORE)
True
>>> choose_store_path("", env={"MEMSTORE_PATH": "runs/a.duckdb"})
'runs/a.duckdb'
>>> choose_store_path(" other.duckdb ", env={"MEMSTORE_PATH": "runs/a.duckdb"})
'other.duckdb'
>>> choose_lake("", env={"MEMSTORE_LAKE": "postgres:dbname=lake"}), choose_lake("", env={})
('postgres:dbname=lake', None)
>>> store_named("", env={}), store_named("", env={"MEMSTORE_PATH": "a.duckdb"})
(False, True)
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from memstore.core.errors import StoreLockedError
from memstore.dashboard.demo_store import DEFAULT_DEMO_STORE

__all__ = ["OpenStore", "StoreLockedError", "choose_lake", "choose_store_path", "open_memory", "store_named"]


@dataclass
class OpenStore:
    """A Memory (or a client of the store's server) the dashboard works on, and where it came from."""

    memory: object            # memstore.Memory or memstore.client.MemoryClient (untyped: light imports)
    path: str                 # the store the person asked for
    server_url: str | None = None     # set when a memstore server serves it

    @property
    def read_only(self) -> bool:
        return False

    @property
    def where(self) -> str:
        """One line for the sidebar: which file, and who owns it."""
        from pathlib import Path

        served = Path(self.path).resolve()
        if self.server_url:
            return f"store: `{served}` — through the memstore server at {self.server_url}"
        return (f"store: `{served}` — opened by this dashboard (other processes cannot write it meanwhile; "
                f"`memstore ui` or `memstore serve` shares it)")


def choose_store_path(typed: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store to open: what the person typed, else $MEMSTORE_PATH, else the demo store."""
    env = os.environ if env is None else env
    typed = (typed or "").strip()
    return typed or env.get("MEMSTORE_PATH") or str(DEFAULT_DEMO_STORE)


def store_named(typed: str | None, env: Mapping[str, str] | None = None) -> bool:
    """Did the person name a store (typed, or $MEMSTORE_PATH)? With a lake and no store named, the
    dashboard shows only the lake (no demo store is built)."""
    env = os.environ if env is None else env
    return bool((typed or "").strip() or env.get("MEMSTORE_PATH"))


def choose_lake(typed: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The lake whose shards the Overview shows: what the person typed, else $MEMSTORE_LAKE, else none."""
    env = os.environ if env is None else env
    return (typed or "").strip() or (env.get("MEMSTORE_LAKE") or "").strip() or None


def open_memory(path: str) -> OpenStore:
    """A client of the server that owns `path`, else the file opened here. StoreLockedError (one
    sentence naming the holder) when a process that is not a server holds it."""
    from memstore.api.connect import client_for

    client = client_for(path)
    if client is not None:
        return OpenStore(client, path, server_url=client.url)
    from memstore.memory import Memory

    return OpenStore(Memory(path, embedded=True), path)
