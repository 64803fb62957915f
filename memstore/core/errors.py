"""Typed errors. Each says what was wrong and what to do, and carries structured fields."""
from __future__ import annotations

from typing import Any


class MemstoreError(Exception):
    """Base class of every error memstore raises on purpose."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "", **fields: object) -> None:
        self.hint = hint or self.hint
        self.fields = fields
        super().__init__(f"{message}" + (f" — {self.hint}" if self.hint else ""))


class ConfigError(MemstoreError, ValueError):
    """A configuration key or value is wrong (the message names the key)."""


class IdentityError(MemstoreError, ValueError):
    """Missing or injected identity (user_id / agent_id / run_id)."""


class FilterError(MemstoreError, ValueError):
    """A search/get_all filter is malformed (unknown operator, bad value)."""


class NotFoundError(MemstoreError, KeyError):
    """No memory with that id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0] if self.args else ""


class DuplicateMemoryError(MemstoreError, ValueError):
    """The change would give a scope two current memories with the same text."""


class LLMError(MemstoreError):
    """The LLM could not be reached or failed. `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool, hint: str = "", **fields: object) -> None:
        self.retryable = retryable
        super().__init__(message, hint=hint, **fields)


class LLMUnavailableError(LLMError):
    """Transport error, timeout, rate limit or 5xx after the client's retries: safe to retry."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message, retryable=True,
                         hint="nothing was stored; retry the call, or check the endpoint with `memstore doctor`",
                         **fields)


class StoreWriteError(MemstoreError):
    """A write transaction failed and was rolled back: nothing of it was stored."""

    def __init__(self, step: str, cause: BaseException, **fields: object) -> None:
        self.step = step
        self.cause = cause
        super().__init__(f"write failed at {step!r}: {type(cause).__name__}: {cause}",
                         hint="the transaction was rolled back; the store is unchanged", step=step, **fields)


class QueryError(MemstoreError):
    """A SQL statement failed; carries the statement name, SQL and parameters."""

    def __init__(self, name: str, sql: str, params: object, cause: BaseException) -> None:
        self.name, self.sql, self.params, self.cause = name, sql, params, cause
        super().__init__(f"query {name!r} failed: {cause}", sql=sql, params=params)


class StoreMismatchError(MemstoreError):
    """The store was created with another embedder (dimension or model)."""


class ReadOnlyError(MemstoreError):
    """A write statement was sent through a read-only interface."""


class ConflictError(MemstoreError):
    """The request conflicts with what exists (HTTP 409): a name taken, a directory not empty."""


class IdentityConflictError(ConflictError, IdentityError):
    """One call names two different values for the same identity key (HTTP 409)."""


class ExportError(MemstoreError, ValueError):
    """A Parquet export cannot be written or read back: target not empty, manifest missing, or a
    file missing / altered (checksum or row count differs from manifest.json)."""


class ExportExistsError(ConflictError, ExportError):
    """The export directory exists and holds files: an export never overwrites (HTTP 409)."""


# -- one store, many processes (memstore serve) -------------------------------------------------
class StoreLockedError(MemstoreError):
    """Another process holds the store file and it is not a memstore server we can talk to."""


class StoreBusyError(MemstoreError):
    """The store could not do this now (a CHECKPOINT waited in vain for another connection's write
    to finish). Retryable: nothing was changed."""

    retryable = True


class StoreNotFoundError(MemstoreError, FileNotFoundError):
    """A read was asked of a store file that does not exist (only writes create a store)."""


class ServerError(MemstoreError):
    """The memstore server answered with an error that has no more specific class here."""


class ServerUnavailableError(ServerError):
    """The memstore server could not be reached (not running, restarting, network). Retryable:
    nothing of the call is known to be stored unless the server said so."""

    retryable = True


class WorkerLostError(ServerUnavailableError):
    """A worker process preparing this add died (killed, out of memory); it has been replaced.
    Retryable: nothing of the add was written (a worker never writes)."""

    retryable = True


class AuthError(ServerError):
    """The server refused the bearer token (missing, wrong) or the call is not allowed for it."""


class TokenRightsError(AuthError):
    """A valid token without the right for this call: a read-only token writing, a scoped token
    calling an admin method. (Another scope is never "forbidden": it answers NotFoundError.)"""


# -- hardening: disk full, invalid input, bad ids (issue 20) ------------------------------------
class StoreInvalidatedError(MemstoreError):
    """DuckDB invalidated the open database after a fatal write error (disk full, I/O error).
    What was committed before is kept; memstore reopens the file on the next call."""


class StoreFullError(StoreInvalidatedError, OSError):
    """Not enough free disk space for a write or a rewrite. Fields: needed_bytes (when known),
    free_bytes, path. Free space, then call again: the store reopens, a pending erasure finishes."""


class InvalidIdError(MemstoreError, ValueError):
    """A memory id that cannot be one (not a string, empty, too long, control characters)."""


class InvalidInputError(MemstoreError, ValueError):
    """A text argument memstore cannot store or search (empty, lone surrogates, not text);
    the message names the argument."""


class RequestTooLargeError(InvalidInputError):
    """A request over one of the server's (or the library's) limits: the body, the number of
    messages, a message's length, the metadata (HTTP 413). Fields: limit (the config key),
    allowed, got. Nothing was stored."""


class ErasurePendingError(MemstoreError):
    """An erasure is journaled but not finished (the file could not be rewritten yet); it finishes
    at the next open, `doctor(repair=True)` or `scrub()`."""


class RetentionError(MemstoreError, ValueError):
    """A retention policy is malformed."""


class ErasureIncompleteError(ErasurePendingError):
    """The scope's rows are deleted but the file could not be rewritten, so old bytes may remain.
    The erasure stays journaled (it finishes at the next open, doctor(repair=True) or scrub());
    `.receipt` is what the receipt would say now (verified=False; not stored yet)."""

    def __init__(self, message: str, *, receipt: dict[str, Any], hint: str = "") -> None:
        self.receipt = receipt
        super().__init__(message, hint=hint, receipt_id=receipt["id"])


class RewriteError(MemstoreError):
    """The database file could not be rewritten; the original file is untouched."""


class TokenExistsError(ConflictError, InvalidInputError):
    """A token of that name exists already (HTTP 409)."""


class TokenExpiryError(ConflictError, InvalidInputError):
    """A token's expiry is already past: it would be born expired (HTTP 409, as the clock stands)."""


class PreparedConversationError(ConflictError, InvalidInputError):
    """A conversation prepared elsewhere (memstore/wire/prepared.py) does not fit the format or
    this store: a field of the wrong kind, a fact citing a message not its own, vectors of another
    model or size (HTTP 409)."""


class InputError(InvalidInputError):
    """The messages given to add() are malformed."""


class PipelineStepError(MemstoreError):
    """A pipeline step failed before the commit; nothing was written."""


class ResolveError(MemstoreError, ValueError):
    """resolve() was asked for something that cannot be decided (nothing to do, memories of
    different scopes, a memory that is no longer current)."""


class Mem0ImportError(MemstoreError):
    """The mem0 store cannot be read (missing folder or collection, locked by a running mem0)."""


class ScopeViolation(MemstoreError, PermissionError):
    """A tool call named another scope than the one the server is bound to, or a memory outside it."""


class SourceFormatError(MemstoreError, ValueError):
    """A source file is not in the expected format, or is damaged (the message says where)."""


class UnknownFormatError(SourceFormatError):
    """`--format auto` could not tell what a file is."""

    hint = "pass --format chatgpt|claude|locomo|jsonl|csv|parquet (format= in Python)"


class TimeParseError(MemstoreError, ValueError):
    """A timestamp could not be read."""


class UnknownFrameError(MemstoreError, ValueError):
    """`frame()` was asked for a name that is neither a projection nor a view."""


class ArgumentError(MemstoreError, TypeError):
    """A public method was called with an argument it does not take (still a TypeError)."""


class MissingFileError(MemstoreError, FileNotFoundError):
    """A file memstore was given or needs does not exist (the message names it; still a
    FileNotFoundError)."""


class NotSupportedError(MemstoreError):
    """A mem0 platform feature memstore does not have (webhooks, organisations and projects,
    exports, summaries, feedback, profiles, custom categories...): the server answers 501 and the
    message names the feature. Fields: feature."""


# -- many shards behind one balancer (issue 28) -------------------------------------------------
class WrongShardError(ServerError):
    """A shard (`memstore serve --shard i/N`) was asked about a scope another shard owns; nothing
    was stored. Fields: key (the placement key), shard (the right one), shards (N), this_shard.
    Retryable: during a rebalance the balancer and the shards change layout one after the other."""

    retryable = True


class CrossShardError(MemstoreError):
    """The call reads or changes every scope at once and a cluster cannot answer it from one shard
    (analyst SQL, exports): the message points at the lake, or at the shards one by one."""


class LakeError(MemstoreError):
    """The lake (DuckLake on PostgreSQL) could not be reached, read or written: nothing of the
    failed publish was committed (a publish is one lake transaction)."""


class LakeUnreachableError(LakeError, ConnectionError):
    """The lake's PostgreSQL catalog did not answer. An erasure stays journaled in the store and is
    finished by the next publish (`memstore doctor` lists it)."""
