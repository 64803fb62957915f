"""The public API: the `MemoryAPI` protocol (`protocol.py`), its argument checks (`args.py`) and its
two implementations — the embedded `Memory` (memstore/memory.py, built from the mixins below) and
the HTTP `MemoryClient` (`http_client.py`; `connect.py` decides between them for `Memory(target)`).

Feature groups of the embedded `Memory`, one mixin per area, so each area lives in its own file.

- truth.py       supersession, as_of, contradictions, resolve, expiration, timeline
- governance.py  forget (erasure + receipt), retention, doctor
- ingest.py      batch ingest of chat exports
- analysis.py    Polars frames, read-only SQL, Parquet export/import
"""
