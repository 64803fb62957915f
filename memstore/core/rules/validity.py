"""Which memories a read sees: current (not superseded) and unexpired by default.

>>> visibility_sql()
'(m.invalidated_at IS NULL) AND (m.expiration_date IS NULL OR m.expiration_date > $now)'

`as_of` asks what was current at that time: valid then, not yet superseded then, and not yet
expired then (or now, for an as_of in the future). A fact superseded since then still counts.

>>> visibility_sql(as_of=True)
'(m.valid_from IS NULL OR m.valid_from <= $as_of) AND (m.invalidated_at IS NULL OR m.invalidated_at > $as_of) AND (m.expiration_date IS NULL OR m.expiration_date > least($as_of, $now))'
"""
from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memstore.core.model import AddState, Fact


def visibility_sql(*, include_superseded: bool = False, show_expired: bool = False, as_of: bool = False,
                   alias: str = "m") -> str:
    """SQL condition; uses the parameters $now (and $as_of when as_of=True)."""
    a = alias
    parts = []
    if as_of:
        # what was current at $as_of: valid then, and not yet invalidated then
        parts.append(f"({a}.valid_from IS NULL OR {a}.valid_from <= $as_of) AND "
                     f"({a}.invalidated_at IS NULL OR {a}.invalidated_at > $as_of)")
    elif not include_superseded:
        parts.append(f"({a}.invalidated_at IS NULL)")
    if not show_expired:
        when = "least($as_of, $now)" if as_of else "$now"
        parts.append(f"({a}.expiration_date IS NULL OR {a}.expiration_date > {when})")
    return " AND ".join(parts) if parts else "TRUE"


# -- the one definition of current / superseded / expired ------------------------------------------
STATUSES = ("current", "superseded", "expired")


def status_of(invalidated_at: object, expiration_date: object, now: object) -> str:
    """current | superseded | expired: a closed interval is superseded, whatever its expiry; an open
    one is expired once its expiration date has passed. The SQL twins (`visibility_sql` above,
    sql/views/timeline.sql, sql/queries/dedupe_hash.sql) are checked against this one by
    tests/test_rules_golden.py.

    >>> import datetime as dt
    >>> t = dt.datetime(2026, 1, 1)
    >>> status_of(None, None, t), status_of(t, None, t), status_of(None, t, t)
    ('current', 'superseded', 'expired')
    """
    if invalidated_at is not None:
        return "superseded"
    if expiration_date is not None and expiration_date <= now:  # type: ignore[operator]
        return "expired"
    return "current"


def is_current(invalidated_at: object, expiration_date: object, now: object) -> bool:
    """Shown by default reads and matched by de-duplication: not superseded and not expired."""
    return status_of(invalidated_at, expiration_date, now) == "current"


def status_expr(now: object) -> object:
    """`status_of` as a Polars expression over `invalidated_at` and `expiration_date` columns."""
    import polars as pl

    return (pl.when(pl.col("invalidated_at").is_not_null()).then(pl.lit("superseded"))
            .when(pl.col("expiration_date").is_not_null() & (pl.col("expiration_date") <= pl.lit(now)))
            .then(pl.lit("expired")).otherwise(pl.lit("current")))


# -- when a new fact's validity starts and ends ------------------------------------------------------
def fact_valid_from(fact: Fact, state: AddState) -> dt.datetime:
    """A fact is valid from the time it names, else the conversation's `timestamp`, else the moment
    it was added."""
    return fact.valid_from or state.timestamp or state.now


def fact_expires_at(fact: Fact, state: AddState) -> dt.datetime | None:
    """A fact expires at its own end ("this week"), else at the add's `expiration_date`."""
    return fact.expires_at or state.expiration_date
