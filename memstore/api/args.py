"""Checks of public arguments shared by the API mixins (each raises a typed error that says what
to pass instead).

>>> check_path("data/x", "directory")
'data/x'
>>> check_path(42, "directory")
Traceback (most recent call last):
...
memstore.core.errors.InvalidInputError: directory must be a path (str or os.PathLike), got int — e.g. "exports/2024-05"
"""
from __future__ import annotations

import os
from typing import Any

from memstore.core.errors import InvalidInputError


def check_path(value: Any, name: str) -> str:
    """A path argument as a string (`str` or `os.PathLike`, no NUL byte)."""
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}",
                                hint='e.g. "exports/2024-05"')
    text = os.fspath(value)
    if not isinstance(text, str) or not text or "\x00" in text:
        raise InvalidInputError(f"{name} is not a usable path: {text!r}",
                                hint="pass a non-empty path without NUL bytes")
    return text
