"""Memory API: analysis features (mixed into memstore.Memory) — Polars frames, read-only SQL,
Parquet export / import. The work lives in memstore/analysis/.

>>> import tempfile, os
>>> from memstore import Memory
>>> d = tempfile.mkdtemp()
>>> m = Memory(os.path.join(d, "a.duckdb"), config={"embedder": {"provider": "hashing"}})
>>> _ = m.add("I'm vegetarian and I live in Boston", user_id="alice")
>>> m.frame("memories", user_id="alice").select("memory").sort("memory").to_series().to_list()
['Alice is vegetarian', 'Alice lives in Boston']
>>> m.sql("SELECT count(*) AS n FROM memories")["n"][0]
2
>>> manifest = m.export_parquet(os.path.join(d, "export"))
>>> copy = Memory.import_parquet(os.path.join(d, "export"), os.path.join(d, "copy.duckdb"))
>>> copy.search("Boston", user_id="alice")["results"][0]["memory"]
'Alice lives in Boston'
>>> copy.close(); m.close()
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import polars as pl

from memstore.api.args import check_path


class AnalysisAPI:
    """Methods here use self._rt (Runtime: config, db, embedder, nlp, extractor)."""

    def frame(self, name: str, *, user_id: str | None = None, agent_id: str | None = None,
              run_id: str | None = None, embeddings: bool = False) -> pl.DataFrame:
        """One table of the store as a Polars DataFrame, optionally narrowed to a scope.

        `name`: memories | history | entities | postings | keywords | links | messages |
        extraction_runs, or a view of sql/views (entity_degrees, extraction_outcomes, ...).
        Every status is included (filter on `invalidated_at` / `expiration_date` yourself).
        Embeddings are dropped unless `embeddings=True` (then an Array(Float32, dim) column).
        """
        from memstore.analysis.frames import read_frame

        t0 = time.perf_counter()
        scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        reads = getattr(self, "read_log", None)
        if reads is not None and name == "reads":
            reads.flush()           # every read made before this one is in the frame
        out = read_frame(self._rt.db, name, scope, embeddings=embeddings)  # type: ignore[attr-defined]
        if reads is not None:
            reads.frame("frame", name, scope, out, t0)
        return out

    def sql(self, query: str, params: dict[str, Any] | list[Any] | None = None, *,
            allow_files: bool = False) -> pl.DataFrame:
        """Run ONE read-only query (SELECT / WITH / UNION; DESCRIBE, SUMMARIZE, SHOW) and return Polars.

        Write statements, several statements, and functions that read files (read_csv, read_parquet,
        glob, ...) raise ReadOnlyError; `allow_files=True` permits file reads. Views from sql/views
        (entity_degrees, extraction_outcomes, ...) are available. Bind values with `$name` + params.
        """
        from memstore.analysis.readonly_sql import run_readonly

        t0 = time.perf_counter()
        reads = getattr(self, "read_log", None)
        if reads is not None and isinstance(query, str) and "reads" in query.lower():
            reads.flush()           # every read made before this one is in the answer
        out = run_readonly(self._rt.db, query, params, allow_files=allow_files)  # type: ignore[attr-defined]
        if reads is not None:
            reads.frame("sql", query, None, out, t0)
        return out

    def export_parquet(self, directory: str | os.PathLike, scope: dict[str, str] | None = None,
                       partition_by: str | None = "user_id", include_reads: bool = False) -> dict[str, Any]:
        """Write every table as zstd Parquet under `directory` (new or empty) with manifest.json
        (schema version, row counts, sha256 per file) and register the export so erasure finds it.

        `scope={"user_id": "alice"}` exports only that scope's rows (and the entities they mention).
        `partition_by` (user_id | agent_id | run_id | scope_key | None) splits tables into one file per
        value. The audit of reads (the `reads` table) is written only with `include_reads=True`.
        Returns the manifest.
        """
        from memstore.analysis.parquet_export import export_parquet

        rt = self._rt  # type: ignore[attr-defined]
        reads = getattr(self, "read_log", None)
        if include_reads and reads is not None:
            reads.flush()
        return export_parquet(rt.db, check_path(directory, "directory"), scope=scope, partition_by=partition_by,
                              embedder=dataclasses.asdict(rt.config.embedder), include_reads=include_reads)

    @classmethod
    def import_parquet(cls, directory: str | os.PathLike, path: str | os.PathLike, *,
                       config: Any = None) -> Any:
        """Build a NEW store at `path` from an export (checksums verified first) and return it open.

        The embedder is the export's (from its manifest) unless `config` names one; a store built
        with another embedder is refused, since its vectors would not match.
        """
        from memstore.analysis.parquet_import import load_export, verify_export
        from memstore.core.config import MemoryConfig
        from memstore.core.errors import ExportError, StoreMismatchError

        manifest = verify_export(check_path(directory, "directory"))
        target = check_path(path, "path")
        if target != ":memory:" and Path(target).exists():
            raise ExportError(f"store {target} already exists; import builds a new store",
                              hint="choose a path that does not exist yet", path=target)
        if not isinstance(config, MemoryConfig):
            config = dict(config or {})
            if "embedder" not in config and manifest.get("embedder"):
                config["embedder"] = dict(manifest["embedder"])
        memory = cls(target, config=config)  # type: ignore[call-arg]
        try:
            want = manifest["store_meta"]
            have = {"dim": memory.db.meta("dim"), "embedder": memory.db.meta("embedder")}  # type: ignore[attr-defined]
            for key in ("dim", "embedder"):
                if key in want and str(want[key]) != str(have[key]):
                    raise StoreMismatchError(
                        f"export was built with embedder {want.get('embedder')!r} ({want.get('dim')}-d); "
                        f"the configured one is {have['embedder']!r} ({have['dim']}-d)",
                        hint="import without an embedder in config, or with the export's embedder")
            load_export(memory.db, directory, manifest)  # type: ignore[attr-defined]
        except BaseException:
            memory.close()  # type: ignore[attr-defined]
            if target != ":memory:":
                for p in (Path(target), Path(target + ".wal")):
                    p.unlink(missing_ok=True)
            raise
        return memory
