"""Load DuckDB extensions (VSS; the lake's DuckLake and postgres) offline from their PyPI packages
(INSTALL needs the network)."""
from __future__ import annotations

import functools
import importlib
from pathlib import Path

import duckdb


@functools.cache
def extension_file(name: str) -> Path | None:
    """Path of the signed extension file shipped by `duckdb-extension-<name>`, or None."""
    try:
        mod = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        return None
    if mod.__file__ is None:
        return None
    root = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    files = list(root.rglob(f"{name}.duckdb_extension"))
    return files[0] if files else None
