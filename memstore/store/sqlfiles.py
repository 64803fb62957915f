"""Load named SQL files from `sql/` (shipped inside the wheel as `memstore/sql`).

>>> "CREATE TABLE" in load_sql("schema/001_core")
True
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent.parent


def sql_root() -> Path:
    """Directory holding the SQL files: packaged copy first, source checkout second."""
    for candidate in (_HERE / "sql", _HERE.parent / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise FileNotFoundError(f"memstore SQL files not found next to {_HERE}; reinstall the package")


@cache
def load_sql(name: str) -> str:
    """Text of `sql/<name>.sql`, e.g. `load_sql("queries/search_semantic")`."""
    path = sql_root() / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"no SQL file {path}")
    return path.read_text(encoding="utf-8")


def migration_files() -> list[tuple[int, str, Path]]:
    """Numbered schema files `sql/schema/NNN_name.sql`, in order."""
    out = []
    for p in sorted((sql_root() / "schema").glob("[0-9][0-9][0-9]_*.sql")):
        out.append((int(p.name[:3]), p.stem, p))
    return out
