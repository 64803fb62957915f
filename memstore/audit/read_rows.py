"""One read as one row of the `reads` table (sql/schema/046_reads.sql), built from the read's
arguments and its result: cheap (no SQL, no copy of the memories), since it runs on the read's path.

>>> r = search_row("where does ana live?", {"user_id": "ana"}, ("semantic",),
...                {"results": [{"id": "m1", "score": 0.9}]}, ms=2.5, reader=("t1", "server"), hashed=False)
>>> r[1:9], r[9:]
(('t1', 'server', 'search', 'ana', None, None, 'where does ana live?', False), (['m1'], [0.9], ['semantic'], 1, 2.5))
>>> search_row("x", {"user_id": "ana"}, (), {"results": []}, ms=1.0, reader=(None, "library"), hashed=True)[7][:12]
'2d711642b726'
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from memstore.core.identity import IDENTITY_KEYS
from memstore.core.timeutil import utcnow

COLUMNS = ("ts", "token_name", "door", "method", "user_id", "agent_id", "run_id", "query", "query_hashed",
           "result_ids", "scores", "channels", "n_results", "ms")
MAX_IDS = 1000          # an analyst frame of a million memories records its first ids and its size

Row = tuple  # the values of COLUMNS, in that order



def _plain(value: Any) -> str | None:
    if isinstance(value, dict) and set(value) == {"eq"}:
        value = value["eq"]
    return value.strip() if isinstance(value, str) and value.strip() else None


def scope_of(filters: Any) -> tuple[str | None, str | None, str | None]:
    """(user_id, agent_id, run_id) a read's filters fix at their top level (None where not one value)."""
    f = filters if isinstance(filters, dict) else {}
    return tuple(_plain(f.get(k)) for k in IDENTITY_KEYS)  # type: ignore[return-value]


def query_text(query: Any, hashed: bool) -> str | None:
    """The query as stored: its text, or its sha256 (hex) when the store hashes queries."""
    if query is None:
        return None
    text = query if isinstance(query, str) else str(query)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() if hashed else text


def make_row(method: str, scope: Iterable[str | None], query: Any, ids: list[str], scores: list[float] | None,
             channels: Iterable[str] | None, n: int, ms: float, reader: tuple[str | None, str],
             hashed: bool) -> Row:
    """The row of one read (see COLUMNS)."""
    u, a, r = scope
    return (utcnow(), reader[0], reader[1], method, u, a, r, query_text(query, hashed), hashed and query is not None,
            ids, scores, list(channels) if channels is not None else None, n, round(ms, 3))


def search_row(query: str, filters: Any, channels: Iterable[str], result: Any, *, ms: float,
               reader: tuple[str | None, str], hashed: bool, method: str = "search") -> Row:
    """A search's row: the ids and fused scores it returned, best first."""
    found = result.get("results", []) if isinstance(result, dict) else []
    ids = [str(r.get("id")) for r in found]
    scores = [float(r["score"]) if r.get("score") is not None else float("nan") for r in found]
    return make_row(method, scope_of(filters), query, ids, scores, channels, len(ids), ms, reader, hashed)


def records_row(method: str, filters: Any, records: list[dict[str, Any]], *, ms: float,
                reader: tuple[str | None, str], hashed: bool) -> Row:
    """get_all's row (and get's: one record, or none): the ids, no scores."""
    ids = [str(r.get("id")) for r in records]
    scope = scope_of(filters)
    if len(records) == 1 and not any(scope):       # get(id) with no scope: the memory's own scope
        scope = tuple(records[0].get(k) for k in IDENTITY_KEYS)  # type: ignore[assignment]
    return make_row(method, scope, None, ids, None, None, len(ids), ms, reader, hashed)


def frame_row(method: str, query: Any, scope: dict[str, Any] | None, frame: Any, *, ms: float,
              reader: tuple[str | None, str], hashed: bool) -> Row:
    """An analyst read's row (explain_search, frame, sql): its size, and the memory ids it shows
    when it has an `id` and a `memory` column (the first MAX_IDS)."""
    cols = list(getattr(frame, "columns", []))
    ids: list[str] = []
    if "id" in cols and "memory" in cols:
        ids = [str(v) for v in frame.get_column("id").head(MAX_IDS).to_list()]
    scores = None
    if method == "explain_search" and "score" in cols:
        scores = [float(v) if v is not None else float("nan") for v in frame.get_column("score").head(MAX_IDS).to_list()]
    return make_row(method, scope_of(scope or {}), query, ids, scores, None, int(getattr(frame, "height", 0)), ms,
                    reader, hashed)
