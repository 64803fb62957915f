"""Prove an erasure: look for the erased scope's id and distinctive strings ("needles") in the raw
bytes of every file memstore wrote, and count rows of the scope left anywhere.

A needle that still occurs in live data of another scope (a shared word, an entity another user
also names) cannot tell a leak from legitimate content, so it is set aside and counted as shared
rather than scanned. The byte scan finds verbatim copies: uncompressed DuckDB segments, dictionary
pages, WAL records, uncompressed Parquet. Strings inside FSST- or zstd-compressed pages are not
visible to it, which is why erasure does not rely on the scan: the rewrite is what removes the
bytes, the scan is the evidence, and Parquet exports are also checked row by row after decoding.

>>> pick_needles(["My cat Zyxwvutronix likes tuna", "I live in Vexhollow"], ["user-42"])
['user-42', 'Zyxwvutronix', 'zyxwvutronix', 'Vexhollow', 'vexhollow']
>>> pick_needles(["Bob likes tea"], ["bob"])         # too short to mean anything in raw bytes
[]
>>> re2_literal("a.b")
'\\\\x{61}\\\\x{2e}\\\\x{62}'
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memstore.core.errors import MemstoreError
from memstore.governance.catalog import (
    BOOKKEEPING_TABLES,
    is_attributable,
    quote_ident,
    relation,
    scope_row_counts,
    table_columns,
    table_label,
    text_columns,
)
from memstore.governance.rewrite_database import COPY_ALIAS

if TYPE_CHECKING:
    from memstore.store.database import Database

_TOKEN = re.compile(r"[^\W_][\w-]{5,}", re.UNICODE)
MAX_TEXT_NEEDLES = 12
MIN_NEEDLE = 6      # shorter strings ("bob", "v") occur by chance in any file: a hit would mean nothing


def pick_needles(texts: Iterable[str | None], ids: Sequence[str], limit: int = MAX_TEXT_NEEDLES) -> list[str]:
    """The scope's identity values, then up to `limit` distinctive tokens (longest first; those
    with capitals or digits before plain words), each also in lower case (keyword terms are).
    Nothing shorter than MIN_NEEDLE characters is used."""
    seen: dict[str, int] = {}
    for n, text in enumerate(t for t in texts if t):
        for tok in _TOKEN.findall(text):
            seen.setdefault(tok, n)
    ranked = sorted(seen, key=lambda t: (not any(c.isupper() or c.isdigit() for c in t), -len(t), seen[t]))
    out: list[str] = []
    for value in [i for i in ids if len(i) >= MIN_NEEDLE] + ranked[:limit]:
        for v in (value, value.lower()):
            if v not in out:
                out.append(v)
    return out


def re2_literal(text: str) -> str:
    """A RE2 pattern matching `text` literally, whatever characters it holds."""
    return "".join(f"\\x{{{ord(c):x}}}" for c in text)


def row_text_sql(columns: Sequence[str]) -> str:
    """SQL expression joining a row's text columns with U+001F (cast first: JSON and lists)."""
    return "concat_ws(chr(31), " + ", ".join(f"CAST({quote_ident(c)} AS VARCHAR)" for c in columns) + ")"


def needle_rows(db: Database, relations: dict[str, list[str]], needles: Sequence[str]) -> dict[str, dict[str, int]]:
    """For each relation (SQL name → text columns), how many of its rows hold each needle. `db` is
    the store's Database or a Scratch (anything with `rows(name, params, sql=)`)."""
    out: dict[str, dict[str, int]] = {}
    if not needles:
        return out
    pattern = "|".join(re2_literal(n) for n in needles)
    for rel, columns in relations.items():
        if not columns:
            continue
        text = row_text_sql(columns)
        sql = f"SELECT {text} FROM {rel} WHERE regexp_matches({text}, $pattern)"
        for (s,) in db.rows("verify:needles", {"pattern": pattern}, sql=sql):
            for n in needles:
                if s and n in s:
                    out.setdefault(rel, {}).setdefault(n, 0)
                    out[rel][n] += 1
    return out


def live_needles(db: Database, relations: dict[str, list[str]], needles: Sequence[str]) -> set[str]:
    """Needles that occur in some row of the given relations."""
    return {n for per in needle_rows(db, relations, needles).values() for n in per}


# Tables memstore writes without anybody's content (store settings, the erasure journal and its
# receipts: ids, keyed hashes, counts, masked file names). A needle in their text is memstore's own
# word ("embedder", "hashing", "server"), found in the file's bytes for that reason: no evidence.
# (`exports` is not one of them: an export's path may name a user; erasure renames those.)
VOCABULARY_TABLES = frozenset({("main", "store_meta"), ("main", "schema_migrations"), ("main", "erasure_receipts"),
                               ("main", "pending_erasures"), ("main", "downstream_erasures")})


def vocabulary_needles(db: Database, needles: Sequence[str],
                       tables: dict[tuple[str, str], dict[str, str]]) -> set[str]:
    """Needles that are memstore's own words in the file: its catalog (`catalog_needles`), the name
    the file rewrite attaches the copy under (DuckDB keeps it in the copied catalog), and the text of
    the bookkeeping tables (VOCABULARY_TABLES). A user whose id is such a word ("memstore", "duckdb")
    cannot be told apart from memstore's own bytes: the receipt counts the needle as shared
    (`needles_vocabulary`) instead of failing every erasure of that user."""
    own = catalog_needles(db, needles) | {n for n in needles if n in COPY_ALIAS}
    rels = {relation(s, t): text_columns(cols) for (s, t), cols in tables.items() if (s, t) in VOCABULARY_TABLES}
    return own | live_needles(db, rels, [n for n in needles if n not in own])


def catalog_needles(db: Database, needles: Sequence[str]) -> set[str]:
    """Needles that occur in the store's own catalog text (view and table definitions, which DuckDB
    keeps in the file with their comments): memstore's words, not a user's, so no evidence."""
    try:
        texts = [t for (t,) in db.rows("queries/catalog_text") if t]
    except MemstoreError:          # a scratch copy without the catalog functions: nothing to set aside
        return set()
    return {n for n in needles if any(n in t for t in texts)}


SCAN_CHUNK = 8 << 20


def scan_files(paths: Iterable[str], needles: Sequence[str], *, fds: dict[str, int] | None = None) -> dict[str, int]:
    """Occurrences of any needle in each file's raw bytes (files that do not exist are skipped).

    Files are read in chunks with plain reads, never mapped: a sparse or truncated file (a copy cut
    short by a full disk) reads as zeros or ends early, where a mapping would kill the process with
    SIGBUS. `fds` gives descriptors to read some paths through (the store file: opening it again and
    closing would drop the process's lock on it, see Database.file_fd)."""
    encoded = [n.encode("utf-8") for n in needles if n]
    longest = max((len(n) for n in encoded), default=1)
    hits: dict[str, int] = {}
    for path in paths:
        if not os.path.isfile(path):
            continue
        fd = (fds or {}).get(path)
        own = fd is None
        if own:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
        try:
            hits[path] = _count_in_fd(fd, encoded, longest) if encoded else 0
        finally:
            if own:
                os.close(fd)
    return hits


def _count_in_fd(fd: int, needles: list[bytes], longest: int) -> int:
    """Count needle occurrences reading `fd` from offset 0 in chunks (overlap = longest - 1).

    >>> import tempfile
    >>> f = tempfile.TemporaryFile(); _ = f.write(b"ab" * 5); _ = f.flush()
    >>> _count_in_fd(f.fileno(), [b"ba"], 2)
    4
    """
    count, offset, tail = 0, 0, b""
    while True:
        chunk = os.pread(fd, SCAN_CHUNK, offset)
        offset += len(chunk)
        last = len(chunk) < SCAN_CHUNK
        buf = tail + chunk
        # a match is counted when it starts before the part kept for the next round
        limit = len(buf) if last else max(0, len(buf) - (longest - 1))
        for n in needles:
            pos = buf.find(n)
            while pos != -1 and pos < limit:
                count += 1
                pos = buf.find(n, pos + 1)
        if last:
            return count
        tail = buf[limit:]


# `<db>.*` files that never hold anybody's content: the receipt key (random bytes), the server's
# discovery file (its URL, pid, store path, version: memstore/wire/discovery.py) and its bearer
# token (random). Scanning them only finds memstore's words ("127.0.0.1", the store's file name).
NO_CONTENT_SUFFIXES = (".receipt-key", ".server.json", ".server-token")


def store_files(db_path: str) -> list[str]:
    """The database file, its WAL and any sidecar `<db>.*` file that DuckDB or memstore made
    (except NO_CONTENT_SUFFIXES)."""
    if db_path == ":memory:":
        return []
    folder = os.path.dirname(os.path.abspath(db_path)) or "."
    base = os.path.basename(db_path)
    out = [db_path]
    for name in sorted(os.listdir(folder)):
        full = os.path.join(folder, name)
        if name.startswith(base + ".") and not name.endswith(NO_CONTENT_SUFFIXES) and os.path.isfile(full):
            out.append(full)
    tmpdir = db_path + ".tmp"
    if os.path.isdir(tmpdir):
        for root, _dirs, files in os.walk(tmpdir):
            out.extend(os.path.join(root, f) for f in files)
    return out


def verify_erasure(db: Database, scope: dict[str, str], needles: Sequence[str], *, export_files: Sequence[str] = (),
                   export_live: set[str] = frozenset(), export_rows_left: dict[str, int] | None = None
                   ) -> dict[str, Any]:
    """Evidence that the scope is gone, as a content-free summary (counts, file names, `ok`):

    - rows still matching the scope's identity, in the store and in the exports (must be 0);
    - rows of tables that cannot be tied to a scope (no identity, scope_key or memory reference)
      that hold a needle (must be 0: nothing says whose they are);
    - raw-byte hits of the non-shared needles in the database file, WAL, sidecars and exports.
    """
    tables = table_columns(db)
    attributable: dict[str, list[str]] = {}
    other: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    for (schema, table), cols in tables.items():
        if (schema, table) == ("main", "entities"):
            # an entity is someone's only while a posting names it
            used = "EXISTS (SELECT 1 FROM entity_postings p WHERE p.entity_id = e.id)"
            attributable[f"(SELECT * FROM entities e WHERE {used})"] = text_columns(cols)
            orphans = f"(SELECT * FROM entities e WHERE NOT {used})"
            other[orphans] = text_columns(cols)
            labels[orphans] = "entities (no postings)"
            continue
        target = attributable if is_attributable(table, cols) and (schema, table) not in BOOKKEEPING_TABLES else other
        target[relation(schema, table)] = text_columns(cols)
        labels[relation(schema, table)] = table_label(schema, table)
    vocabulary = vocabulary_needles(db, needles, tables)
    shared = live_needles(db, attributable, needles) | set(export_live) | vocabulary
    checked = [n for n in needles if n not in shared]
    unattributed = {labels[rel]: sum(per.values()) for rel, per in needle_rows(db, other, checked).items()}
    files = store_files(db.path) + [f for f in export_files if os.path.isfile(f)]
    fd = db.file_fd() if hasattr(db, "file_fd") else None
    hits = scan_files(files, checked, fds={db.path: fd} if fd is not None else None)
    left = {k: v for k, v in scope_row_counts(db, scope).items() if v}
    left.update({f: n for f, n in (export_rows_left or {}).items() if n})
    return {"ok": not any(hits.values()) and not left and not unattributed,
            "needles_checked": len(checked), "needles_shared": len(shared & set(needles)),
            "needles_vocabulary": len(vocabulary),
            "files_scanned": len(hits), "bytes_scanned": sum(os.path.getsize(f) for f in hits),
            "hits": {f: n for f, n in hits.items() if n}, "scope_rows_left": left,
            "unattributed_rows_with_needles": unattributed}
