"""Which memories a read sees: current (not superseded) and unexpired by default.

>>> visibility_sql()
'(m.invalidated_at IS NULL) AND (m.expiration_date IS NULL OR m.expiration_date > $now)'

`as_of` asks what was current at that time: valid then, not yet superseded then, and not yet
expired then (or now, for an as_of in the future). A fact superseded since then still counts.

>>> visibility_sql(as_of=True)
'(m.valid_from IS NULL OR m.valid_from <= $as_of) AND (m.invalidated_at IS NULL OR m.invalidated_at > $as_of) AND (m.expiration_date IS NULL OR m.expiration_date > least($as_of, $now))'
"""
from __future__ import annotations


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
