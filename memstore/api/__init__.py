"""Feature groups of the public `Memory` API, one mixin per area, so each area lives in its own file.

- truth.py       supersession, as_of, contradictions, resolve, expiration, timeline
- governance.py  forget (erasure + receipt), retention, doctor
- ingest.py      batch ingest of chat exports
- analysis.py    Polars frames, read-only SQL, Parquet export/import
"""
