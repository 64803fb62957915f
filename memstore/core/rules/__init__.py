"""The rules as pure functions, one rule per file (see memstore/core/__init__.py)."""
