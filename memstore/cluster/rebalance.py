"""`memstore cluster rebalance`: move the scopes whose shard changed when a cluster grew from N to M.

Before it runs, the operator has (1) started the new shards (`serve --shard i/M`), (2) reloaded the
balancer with the M-shard config and (3) restarted the old shards with `--shard i/M`: from then on
every new write lands on its new owner, and this command moves what the old owners still hold.

For each user whose owner changed (jump hash: about (M-N)/M of them), one move is:
1. the old shard exports the user's rows as Parquet into the staging folder (checksummed manifest);
2. the new shard merges them (rows it already has are skipped: a re-run stores nothing twice);
3. verify: every memory id the old shard holds for the user is on the new shard, else copy again;
4. the old shard forgets the user (`forget`, which also erases the staging export) and its
   erasure receipt goes to the journal.
Each step is recorded in `<staging>/rebalance-journal.jsonl` before the next starts, so a rebalance
killed at any point (kill -9) is simply run again: finished moves are not redone, a cut-off move is
redone from step 1, and a move cut off after its forget finds its receipt on the old shard. At the
end each old shard that gave users away rewrites its file once (`scrub`), so the erased bytes go.
The staging folder must be readable by every shard at the same path (one machine or a shared volume).

Scopes without a user (agent-only or run-only memories) are listed as `not_moved`: an agent's
scope cannot be cut out of its users' scopes by `forget`; move them by hand.

>>> plan_moves([{"key": "a", "kind": "user_id", "memories": 2, "owner": 1}], source=0, new_urls=["u0", "u1"],
...            source_url="u0")
([{'user_id': 'a', 'from': 'u0', 'to': 'u1', 'to_shard': 1, 'memories': 2}], [])
"""
from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstore.core.errors import ConfigError, ServerError
from memstore.wire.format import dumps, loads
from memstore.wire.transport import Transport

JOURNAL = "rebalance-journal.jsonl"
COPY_ATTEMPTS = 3


class ShardAdmin:
    """The /cluster/* routes of one shard (memstore/cluster/shard_routes.py)."""

    def __init__(self, url: str, token: str | None, timeout: float = 600.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self._t = Transport(self.url, headers=headers, timeout=timeout)

    def call(self, op: str, body: dict[str, Any] | None = None, method: str = "POST") -> Any:
        from memstore.api.http_client import decode_answer

        status, headers, content = self._t.request(method, f"/cluster/{op}", dumps(body or {}) if method == "POST"
                                                   else None, headers={"Content-Type": "application/json"})
        return decode_answer((status, headers, content), self.url)

    def close(self) -> None:
        self._t.close()


def plan_moves(scopes: list[dict[str, Any]], *, source: int, source_url: str,
               new_urls: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(moves, not_moved) for the scopes one old shard holds, given their owners among `new_urls`."""
    moves, stuck = [], []
    for s in scopes:
        target = new_urls[s["owner"]].rstrip("/")
        if target == source_url.rstrip("/"):
            continue
        if s["kind"] != "user_id":
            stuck.append({**s, "from": source_url, "reason": "no user_id: an agent or run scope is not moved"})
            continue
        moves.append({"user_id": s["key"], "from": source_url, "to": target, "to_shard": s["owner"],
                      "memories": s["memories"]})
    return moves, stuck


class Journal:
    """Append-only JSON lines: one line per finished step of a move."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        self.started: dict[tuple[str, str], dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = loads(line)
                except ValueError:
                    continue        # a line cut off by a kill
                key = (rec["user_id"], rec["from"])
                if rec["step"] == "forgotten":
                    self.done[key] = rec
                else:
                    self.started[key] = rec

    def write(self, rec: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(dumps(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        key = (rec["user_id"], rec["from"])
        (self.done if rec["step"] == "forgotten" else self.started)[key] = rec


def rebalance(old_urls: list[str], new_urls: list[str], *, token: str | None, staging: str | os.PathLike,
              log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Move every user whose owner differs between `old_urls` (N shards) and `new_urls` (M shards).
    Returns {"moved": [...], "not_moved": [...], "stayed": n, "scrubbed": [...]}; safe to re-run."""
    staging = Path(staging).resolve()
    staging.mkdir(parents=True, exist_ok=True)
    for leftover in staging.glob("move-*"):       # a killed run's copy: redone below from the source
        shutil.rmtree(leftover, ignore_errors=True)
    journal = Journal(staging / JOURNAL)
    admins = {u.rstrip("/"): ShardAdmin(u, token) for u in dict.fromkeys([*old_urls, *new_urls])}
    try:
        for i, url in enumerate(new_urls):
            layout = admins[url.rstrip("/")].call("shard", method="GET")
            if (layout["shard"], layout["shards"]) != (i, len(new_urls)):
                raise ConfigError(f"{url} serves shard {layout['shard']}/{layout['shards']}, not {i}/{len(new_urls)}",
                                  hint="start every shard of the new layout with `memstore serve --shard I/M` "
                                       "(restart the old ones too) and reload the balancer before rebalancing",
                                  key="shards")
        moved, stuck, stayed, sources = [], [], 0, set()
        for rec in journal.started.values():        # cut off after its forget: the receipt is on the source
            key = (rec["user_id"], rec["from"])
            if key not in journal.done and rec["step"] == "verified":
                receipts = admins[rec["from"]].call("receipts", {"user_id": rec["user_id"]})
                if receipts:
                    journal.write({**rec, "step": "forgotten", "receipt": receipts[0]})
        for j, url in enumerate(old_urls):
            src = admins[url.rstrip("/")]
            scopes = src.call("scopes", {"shards": len(new_urls)})
            moves, not_moved = plan_moves(scopes, source=j, source_url=src.url, new_urls=new_urls)
            stuck += not_moved
            stayed += len(scopes) - len(moves) - len(not_moved)
            for move in moves:
                log(f"moving {move['user_id']!r}: {move['from']} -> {move['to']} ({move['memories']} memories)")
                journal.write({**move, "step": "started", "at": time.time()})
                _move(src, admins[move["to"]], move, staging, journal)
                sources.add(src.url)
        # Every shard that gave users away, in this run or a killed one, rewrites its file once.
        sources |= {rec["from"] for rec in journal.done.values() if rec["from"] in admins}
        scrubbed = [{"shard": url, **admins[url].call("scrub_store")} for url in sorted(sources)]
        for rec in journal.done.values():
            moved.append(rec)
        return {"moved": moved, "not_moved": stuck, "stayed": stayed, "scrubbed": scrubbed,
                "journal": str(journal.path)}
    finally:
        for a in admins.values():
            a.close()


def _move(src: ShardAdmin, dst: ShardAdmin, move: dict[str, Any], staging: Path, journal: Journal) -> None:
    user = move["user_id"]
    for attempt in range(1, COPY_ATTEMPTS + 1):
        folder = staging / f"move-{uuid.uuid4().hex}"
        src.call("export_scope", {"user_id": user, "directory": str(folder)})
        counts = dst.call("import_scope", {"user_id": user, "directory": str(folder)})
        have = set(dst.call("memory_ids", {"user_id": user}))
        want = set(src.call("memory_ids", {"user_id": user}))
        shutil.rmtree(folder, ignore_errors=True)
        if want <= have:
            journal.write({**move, "step": "verified", "copied": counts, "memory_ids": len(want)})
            break
        if attempt == COPY_ATTEMPTS:         # the source kept getting writes: the balancer is not reloaded?
            raise ServerError(f"user {user!r}: {len(want - have)} memories of {src.url} still missing on {dst.url} "
                              f"after {attempt} copies; nothing was forgotten",
                              hint="reload the balancer with the new layout and restart the old shards with "
                                   "--shard I/M, then run rebalance again")
    receipt = src.call("forget_scope", {"user_id": user})
    journal.write({**move, "step": "forgotten", "receipt": receipt, "memory_ids": len(want)})
