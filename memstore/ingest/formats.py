"""The chat export formats memstore reads (kept apart so the CLI can list them without loading readers)."""

FORMATS = ("chatgpt", "claude", "locomo", "jsonl", "csv", "parquet")
