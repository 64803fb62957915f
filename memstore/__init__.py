"""memstore: long-term memory for AI agents in one DuckDB file.

>>> from memstore import Memory, AsyncMemory, MemoryConfig
"""
from memstore.async_memory import AsyncMemory
from memstore.config import MemoryConfig
from memstore.errors import (ConfigError, FilterError, IdentityError, LLMError, LLMUnavailableError, MemstoreError,
                             NotFoundError, StoreWriteError)
from memstore.memory import Memory

__all__ = ["Memory", "AsyncMemory", "MemoryConfig", "MemstoreError", "ConfigError", "IdentityError", "FilterError",
           "NotFoundError", "LLMError", "LLMUnavailableError", "StoreWriteError"]
__version__ = "0.1.0"
