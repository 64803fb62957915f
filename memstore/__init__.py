"""memstore: long-term memory for AI agents in one DuckDB file.

>>> from memstore import Memory, AsyncMemory, MemoryConfig
"""
from memstore.async_memory import AsyncMemory
from memstore.config import MemoryConfig
from memstore.errors import (  # noqa: F401  every class of memstore.errors
    AuthError,
    ConfigError,
    DuplicateMemoryError,
    ErasurePendingError,
    ExportError,
    FilterError,
    IdentityError,
    InvalidIdError,
    InvalidInputError,
    LLMError,
    LLMUnavailableError,
    MemstoreError,
    NotFoundError,
    QueryError,
    ReadOnlyError,
    ServerError,
    ServerUnavailableError,
    StoreFullError,
    StoreInvalidatedError,
    StoreLockedError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreWriteError)
from memstore.memory import Memory

__all__ = ["Memory", "AsyncMemory", "MemoryConfig", "AuthError", "ConfigError", "DuplicateMemoryError", "ErasurePendingError", "ExportError", "FilterError", "IdentityError", "InvalidIdError", "InvalidInputError", "LLMError", "LLMUnavailableError", "MemstoreError", "NotFoundError", "QueryError", "ReadOnlyError", "ServerError", "ServerUnavailableError", "StoreFullError", "StoreInvalidatedError", "StoreLockedError", "StoreMismatchError", "StoreNotFoundError", "StoreWriteError"]
__version__ = "0.1.0"
