"""Load DuckDB's VSS and FTS extensions offline from their PyPI packages (INSTALL needs the network)."""
from __future__ import annotations

import importlib
from pathlib import Path

import duckdb


def extension_file(name: str) -> Path | None:
    """Path of the signed extension file shipped by `duckdb-extension-<name>`, or None."""
    try:
        mod = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        return None
    root = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}"
    files = list(root.rglob(f"{name}.duckdb_extension"))
    return files[0] if files else None


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """LOAD the extension by file path; True when loaded."""
    path = extension_file(name)
    if path is None:
        return False
    con.execute(f"LOAD '{str(path).replace(chr(39), chr(39) * 2)}'")
    return True
