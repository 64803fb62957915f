"""Generic message tables: JSONL, CSV/TSV and Parquet, one message per row, with a column mapping.

Fields and the columns tried when the mapping does not name one:

    content       content, text, message, body
    role          role, author, sender, speaker   (human/ai/bot/... are mapped; any other value is a
                                                   person's name: a user message from that speaker)
    ts            created_at, timestamp, ts, time, date, created
    conversation  conversation_id, conversation, thread_id, thread, session_id, session, chat_id
    id            message_id, msg_id, id, uuid
    name          name, speaker_name

`--map role=author,content=text,ts=created` (or mapping={"role": "author", ...}) names columns.
Rows are streamed; consecutive rows of one conversation form one conversation (a file without a
conversation column is one conversation named after the file, read in parts of 2,000 rows). A row
without an id is keyed by a hash of its role, time and text (or its position when it has no time),
so re-running the same file recognises it.

>>> parse_mapping("role=author, content=text,ts=created")
{'role': 'author', 'content': 'text', 'ts': 'created'}
>>> parse_mapping("colour=x")
Traceback (most recent call last):
...
memstore.core.errors.ConfigError: unknown field 'colour' in the column mapping — fields: content, conversation, id, name, role, ts; e.g. --map role=author,content=text,ts=created
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from memstore.core.errors import ConfigError
from memstore.core.timeutil import TimeParseError, parse_time
from memstore.ingest.sources import Utf8Repair
from memstore.ingest.types import (
    DEFAULT_MAX_MESSAGE_CHARS,
    Problem,
    SourceConversation,
    SourceFormatError,
    clean_message,
)

FIELDS = {
    "content": ("content", "text", "message", "body"),
    "role": ("role", "author", "sender", "speaker"),
    "ts": ("created_at", "timestamp", "ts", "time", "date", "created"),
    "conversation": ("conversation_id", "conversation", "thread_id", "thread", "session_id", "session", "chat_id"),
    "id": ("message_id", "msg_id", "id", "uuid"),
    "name": ("name", "speaker_name"),
}
PART_ROWS = 2000
_MAP_HINT = "fields: " + ", ".join(sorted(FIELDS)) + "; e.g. --map role=author,content=text,ts=created"


def parse_mapping(spec: str | dict[str, str] | None) -> dict[str, str]:
    """`role=author,content=text` → {"role": "author", "content": "text"} (field names checked)."""
    if spec is None or spec == "":
        return {}
    if isinstance(spec, dict):
        pairs = list(spec.items())
    else:
        pairs = []
        for item in spec.split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise ConfigError(f"column mapping item {item.strip()!r} is not FIELD=COLUMN", hint=_MAP_HINT)
            k, v = item.split("=", 1)
            pairs.append((k.strip(), v.strip()))
    out = {}
    for k, v in pairs:
        if k not in FIELDS:
            raise ConfigError(f"unknown field {k!r} in the column mapping", hint=_MAP_HINT, key=k)
        if not isinstance(v, str) or not v:
            raise ConfigError(f"column mapping for {k!r} names no column", hint=_MAP_HINT, key=k)
        out[k] = v
    return out


def resolve_columns(columns: Iterable[str], mapping: dict[str, str], file: str) -> dict[str, str]:
    """field → column actually present; raises SourceFormatError when the content column is missing
    or a mapped column does not exist."""
    cols = list(columns)
    present = set(cols)
    out = {}
    for fld, col in mapping.items():
        if col not in present:
            raise SourceFormatError(f"{file}: --map {fld}={col}: there is no column {col!r}",
                                    hint=f"columns are: {', '.join(cols[:30])}", file=file)
        out[fld] = col
    for fld, candidates in FIELDS.items():
        if fld not in out:
            col = next((c for c in candidates if c in present), None)
            if col is not None:
                out[fld] = col
    if "content" not in out:
        raise SourceFormatError(f"{file}: no message text column (looked for {', '.join(FIELDS['content'])})",
                                hint=f"name it with --map content=COLUMN; columns are: {', '.join(cols[:30])}",
                                file=file)
    return out


def read_tabular(path: str | os.PathLike, problems: list[Problem], *, format: str,
                 mapping: dict[str, str] | str | None = None,
                 max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS, **_: Any) -> Iterator[SourceConversation]:
    """Yield conversations from a jsonl / csv / parquet file of messages."""
    file = os.fspath(path)
    rows = {"jsonl": _jsonl_rows, "csv": _csv_rows, "parquet": _parquet_rows}[format](file, problems)
    yield from _group(rows, file, format, parse_mapping(mapping), problems, max_message_chars)


def group_rows(rows: Iterable[tuple[str, dict[str, Any]]], file: str, fmt: str, mapping: dict[str, str] | str | None,
               problems: list[Problem], max_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> Iterator[SourceConversation]:
    """Conversations from message rows given as (where, row): what the file readers do after
    reading (a Ray Dataset's rows: memstore/on_ray/ingest.py)."""
    yield from _group(iter(rows), file, fmt, parse_mapping(mapping), problems, max_chars)


def _group(rows: Iterator[tuple[str, dict[str, Any]]], file: str, fmt: str, mapping: dict[str, str],
           problems: list[Problem], max_chars: int) -> Iterator[SourceConversation]:
    cols: dict[str, str] | None = None
    default_conv = os.path.basename(file)
    conv: SourceConversation | None = None
    position: dict[str, int] = {}           # rows seen per conversation id, across its parts
    for where, row in rows:
        if cols is None:
            cols = resolve_columns(row.keys(), mapping, file)
        cid_raw = row.get(cols["conversation"]) if "conversation" in cols else None
        cid = str(cid_raw) if cid_raw not in (None, "") else default_conv
        if conv is None or conv.id != cid or len(conv.messages) >= PART_ROWS:
            if conv is not None:
                yield conv
            conv = SourceConversation(file=file, format=fmt, id=cid, title=None, messages=[])
        conv.n_read += 1
        position[cid] = position.get(cid, 0) + 1
        ts_raw = row.get(cols["ts"]) if "ts" in cols else None
        when = None
        if ts_raw not in (None, ""):
            try:
                when = parse_time(ts_raw, "timestamp")
            except (TimeParseError, ValueError, OverflowError, OSError):
                problems.append(Problem(file, f"{where}: cannot read time {str(ts_raw)[:40]!r}; kept without it",
                                        conversation=cid, message=where, severity="warning"))
        role = row.get(cols["role"]) if "role" in cols else "user"
        content = row.get(cols["content"])
        mid_raw = row.get(cols["id"]) if "id" in cols else None
        mid = str(mid_raw) if mid_raw not in (None, "") else _row_key(role, when, content, position[cid])
        name = row.get(cols["name"]) if "name" in cols else None
        m, problem = clean_message(str(role) if role not in (None, "") else "user", content, file=file,
                                   conversation=cid, message=mid, created_at=when,
                                   name=str(name) if name not in (None, "") else None, max_chars=max_chars)
        if problem:
            problem.reason = f"{where}: {problem.reason}"
            if mid_raw in (None, ""):
                problem.message = where     # a row without an id is found by its place in the file
            problems.append(problem)
        if m is not None:
            conv.messages.append(m)
    if conv is not None:
        yield conv


def _row_key(role: Any, when: Any, content: Any, position: int) -> str:
    """Stable key of a row without an id: role, time and text; the position when there is no time."""
    if when is None:
        return f"row:{position}"
    digest = hashlib.sha1(f"{role}\x1f{when.isoformat()}\x1f{content}".encode("utf-8", "replace")).hexdigest()
    return f"sha1:{digest[:20]}"


def _jsonl_rows(file: str, problems: list[Problem]) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(file, "rb") as f:
        head = f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
    if head[:1] == b"[":        # one JSON array of message objects ([{"role": ..., "content": ...}, ...])
        yield from _array_rows(file, problems)
        return
    with open(file, "rb") as f:
        for n, raw in enumerate(_lines(f, MAX_LINE_BYTES), 1):
            if raw is None:
                problems.append(Problem(file, f"line {n} is longer than {MAX_LINE_BYTES:,} bytes: skipped",
                                        message=f"line {n}", unread=True))
                continue
            if n == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = raw.decode("utf-8", "replace")
                problems.append(Problem(file, f"line {n}: invalid UTF-8 at column {exc.start + 1} replaced with "
                                              "U+FFFD", message=f"line {n}", severity="warning"))
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(Problem(file, f"line {n} is not valid JSON ({exc.msg} at column {exc.colno})",
                                        message=f"line {n}", unread=True))
                continue
            except RecursionError:
                problems.append(Problem(file, f"line {n} is nested too deeply to read", message=f"line {n}",
                                        unread=True))
                continue
            if not isinstance(row, dict):
                problems.append(Problem(file, f"line {n} is a JSON {type(row).__name__}, not an object",
                                        message=f"line {n}", unread=True))
                continue
            yield f"line {n}", row


MAX_LINE_BYTES = 64 << 20      # a JSONL line / CSV field beyond this is skipped (memory stays bounded)


def _lines(f: Any, limit: int) -> Iterator[bytes | None]:
    """The lines of a binary file; None for a line over `limit` bytes (read through, not kept)."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = f.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _csv_rows(file: str, problems: list[Problem]) -> Iterator[tuple[str, dict[str, Any]]]:
    csv.field_size_limit(MAX_LINE_BYTES)   # a longer field stops the file with a clear error, not 1.5 GB RSS
    with open(file, "rb") as raw:
        stream = Utf8Repair(raw)
        text = io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8", newline="")
        delimiter = "\t" if file.lower().endswith(".tsv") else ","
        reader = csv.DictReader(text, delimiter=delimiter)
        held: tuple[str, dict[str, Any], int] | None = None     # one row of lookahead (see below)
        try:
            for row in reader:
                start = held[2] if held else 1
                if None in row:   # more cells than header columns
                    problems.append(Problem(file, f"row {reader.line_num} has more cells than the header; "
                                                  "extra cells ignored", message=f"row {reader.line_num}",
                                            severity="warning"))
                    row.pop(None)
                if held:
                    yield held[0], held[1]
                held = (f"row {reader.line_num}", row, reader.line_num, start)  # type: ignore[assignment]
            # A quote opened and never closed swallows the rest of the file into the last row: the
            # csv module says nothing, so it is recognised here (several lines, no closing quote).
            if held and held[2] - held[3] > 1 and not _ends_with_quote(file):  # type: ignore[misc]
                problems.append(Problem(file, f"{held[0]} opens a quoted field that is never closed: the last "
                                              f"{held[2] - held[3]} line(s) were merged into it; skipped",  # type: ignore[misc]
                                        message=held[0], unread=True))
            elif held:
                yield held[0], held[1]
        except csv.Error as exc:
            raise SourceFormatError(f"{file}: CSV is damaged at line {reader.line_num}: {exc}",
                                    hint="the rows before it were read; repair the file and run again",
                                    file=file) from None
        if stream.bad:
            problems.append(Problem(file, f"{stream.bad} invalid UTF-8 byte sequence(s) replaced with U+FFFD "
                                          f"(first near byte {stream.first_bad_at})", severity="warning"))


def _ends_with_quote(file: str) -> bool:
    with open(file, "rb") as f:
        f.seek(max(0, os.path.getsize(file) - 64))
        return f.read().rstrip().endswith(b'"')


def _parquet_rows(file: str, problems: list[Problem]) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(file)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceFormatError(f"{file}: not a readable Parquet file: {exc}", file=file) from None
    n = 0
    try:
        for batch in pf.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield f"row {n}", row
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceFormatError(f"{file}: Parquet data is damaged after row {n}: {exc}",
                                hint="the rows before it were read", file=file) from None


def _array_rows(file: str, problems: list[Problem]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The records of a JSON array of message objects, as rows (read with the bounded splitter:
    a record nested too deep or too large is skipped and reported)."""
    from memstore.ingest.jsonstream import iter_items
    from memstore.ingest.sources import open_bytes

    with open_bytes(file) as stream:
        for n, item in enumerate(iter_items(stream, file, what="record", problems=problems), 1):
            if not isinstance(item, dict):
                problems.append(Problem(file, f"record {n} is a JSON {type(item).__name__}, not an object",
                                        message=f"record {n}", unread=True))
                continue
            yield f"record {n}", item
