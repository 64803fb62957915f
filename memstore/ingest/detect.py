"""`--format auto`: tell a file's format from its name and its first record.

.jsonl/.ndjson → jsonl, .csv/.tsv → csv, .parquet → parquet; JSON (or a .zip export) is read up to
the first conversation's keys: `mapping` → chatgpt, `chat_messages` → claude, `conversation` with
`session_N` lists → locomo; an array of message objects (`content` or `text`, and maybe `role`,
`created_at`, ...) and a file of one JSON object per line → jsonl (message rows).

>>> import json, os, tempfile
>>> p = os.path.join(tempfile.mkdtemp(), "conversations.json")
>>> _ = open(p, "w").write(json.dumps([{"title": "t", "mapping": {}, "current_node": None}]))
>>> detect_format(p)
'chatgpt'
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

import ijson

from memstore.ingest.formats import FORMATS
from memstore.ingest.sources import READ_CHUNK, open_bytes
from memstore.ingest.types import SourceFormatError, UnknownFormatError

_BY_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet",
              ".pq": "parquet"}
_SNIFF_EVENTS = 20_000
_MESSAGE_TEXT = frozenset(("content", "text", "message", "body"))     # tabular.FIELDS["content"]


def check_format(fmt: str) -> str:
    """The format name, or UnknownFormatError listing the choices."""
    if fmt not in FORMATS + ("auto",):
        raise UnknownFormatError(f"unknown format {fmt!r}")
    return fmt


def detect_format(path: str | os.PathLike) -> str:
    """The format of `path` (raises FileNotFoundError or UnknownFormatError saying why)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    if p.is_dir():
        raise UnknownFormatError(f"{p} is a directory",
                                 hint="pass the files inside it, e.g. its conversations.json")
    suffix = p.suffix.lower()
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as zf:
            if not any(n.rsplit("/", 1)[-1] == "conversations.json" for n in zf.namelist()):
                raise UnknownFormatError(f"{p}: zip archive without a conversations.json",
                                         hint="ChatGPT and Claude exports hold conversations.json; "
                                              "unzip other archives and pass the data file")
    with open(p, "rb") as f:
        head = f.read(4096)
    if not zipfile.is_zipfile(p) and head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1] not in (b"[", b"{"):
        raise UnknownFormatError(f"cannot tell the format of {p}: it is not JSON, JSONL, CSV or Parquet "
                                 f"(starts with {head[:24]!r})")
    return _sniff_json(p)


def _sniff_array(p: Path) -> str | None:
    """The format of a top-level JSON array from its first records (read with the bounded splitter:
    a record nested too deep or too large is passed over); None when the file is not an array."""
    from memstore.ingest.jsonstream import iter_items

    with open_bytes(p) as stream:
        if stream.peek(64).lstrip()[:1] != b"[":
            return None
        skipped: list = []
        seen = 0
        try:
            for item in iter_items(stream, str(p), what="record", problems=skipped):
                seen += 1
                if isinstance(item, dict):
                    fmt = _decide(list(item), "start_array", final=True)
                    if fmt:
                        return fmt
                    raise UnknownFormatError(f"cannot tell the format of {p}: first record has keys "
                                             f"{sorted(item)[:12]}")
                if seen + len(skipped) >= 5:
                    break
        except UnknownFormatError:
            raise                   # valid JSON of no known shape: said above, not "not valid JSON"
        except SourceFormatError as exc:
            raise UnknownFormatError(f"cannot tell the format of {p}: not valid JSON ({exc})") from None
        if not seen and not skipped:
            return "chatgpt"   # an empty export: any conversation reader reads nothing
        if skipped:
            raise UnknownFormatError(f"cannot tell the format of {p}: {skipped[0].reason}",
                                     hint="pass format=... explicitly (chatgpt, claude, locomo, jsonl)")
        return None


def _sniff_json(p: Path) -> str:
    fmt = _sniff_array(p)
    if fmt:
        return fmt
    keys: list[str] = []
    top: str | None = None
    try:
        with open_bytes(p) as stream:
            # large reads: ijson joins a long string chunk by chunk (a 200 MB title took minutes at 64 KB)
            events = ijson.parse(stream, multiple_values=True, buf_size=READ_CHUNK)
            for n, (prefix, event, value) in enumerate(events):
                if n == 0:
                    top = event
                if n > _SNIFF_EVENTS:
                    break
                if top == "start_array" and prefix == "item" and event == "map_key" or top == "start_map" and prefix == "" and event == "map_key":
                    keys.append(value)
                elif top == "start_map" and prefix == "" and event == "end_map":
                    if _jsonl_like(p):
                        return "jsonl"
                    break
                elif prefix == "item" and event == "end_map" or (prefix == "" and event == "end_array"):
                    break
                fmt = _decide(keys, top)
                if fmt:
                    return fmt
    except ijson.JSONError as exc:
        if top == "start_map" and _jsonl_like(p):
            return "jsonl"
        raise UnknownFormatError(f"cannot tell the format of {p}: not valid JSON "
                                 f"({str(exc).strip().splitlines()[0]})") from None
    if top == "start_array" and not keys:
        return "chatgpt"   # an empty export: any conversation reader reads nothing
    fmt = _decide(keys, top, final=True)
    if fmt:
        return fmt
    raise UnknownFormatError(f"cannot tell the format of {p}: first record has keys {sorted(keys)[:12]}")


def _decide(keys: list[str], top: str | None, final: bool = False) -> str | None:
    ks = set(keys)
    if "mapping" in ks:
        return "chatgpt"
    if "chat_messages" in ks:
        return "claude"
    if any(k.startswith("session_") for k in ks) or ("conversation" in ks and "sample_id" in ks):
        return "locomo"
    if final and top == "start_array" and ks & _MESSAGE_TEXT:
        return "jsonl"      # an array of messages ({"role", "content"}, as chat APIs take them): rows
    if final and "conversation" in ks and top in ("start_array", "start_map"):
        return "locomo"
    return None


def _jsonl_like(p: Path) -> bool:
    """Two or more lines that each start with '{'."""
    with open(p, "rb") as f:
        lines = [line.strip() for _, line in zip(range(3), f) if line.strip()]
    return len(lines) >= 2 and all(line.startswith(b"{") for line in lines)
