"""Shared page helpers: the page context, tables with CSV/Parquet downloads, one-shot messages after
an action, and library errors turned into advice."""
from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import streamlit as st

from memstore.core.errors import MemstoreError
from memstore.dashboard.data import Scope, csv_safe, scope_label


@dataclass
class PageContext:
    """What every page gets: the open Memory (None when the dashboard shows only a lake), the
    chosen scope, who is acting, and the lake named in the sidebar (a memstore.lake.fleet.Fleet)."""

    memory: Any
    scope: Scope | None
    scopes: list[Scope] = field(default_factory=list)
    actor_id: str = "dashboard"
    read_only: bool = False
    fleet: Any = None
    link: dict[str, str] = field(default_factory=dict)   # what this view adds to its link (query parameters)

    @property
    def label(self) -> str:
        return scope_label(self.scope) if self.scope else "(no scope)"


def need_scope(ctx: PageContext) -> bool:
    """Show advice and return False when the store has no scope to look at yet."""
    if ctx.scope:
        return True
    if ctx.scopes:
        st.info("Choose a scope in the sidebar.")
        return False
    st.info("This store has no memories or messages yet — ingest a chat export with "
            "`memstore ingest FILE --user alice`, then reload.")
    return False


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "table"


# Columns of long text: drawn wide (the rest of the table keeps its natural width).
WIDE_TEXT = ("memory", "content", "old_memory", "new_memory", "fact", "other_memory", "superseded_by_memory",
             "older_memory", "newer_memory", "reason", "error", "entities", "raw_answer")
TIME_TITLES = {"said_at": "said at (conversation)", "stored_at": "stored at", "valid_from": "valid from (conversation)",
               "valid_to": "valid to", "last_said": "last said (conversation)", "last_stored": "last stored"}
ROWS_SHOWN = 15


def show_table(df: pl.DataFrame, name: str, *, key: str | None = None, styler: Callable[[Any], Any] | None = None,
               height: int | str = "auto", column_config: dict[str, Any] | None = None,
               caption: str | None = None, select: bool = False) -> list[int] | None:
    """A table and two download buttons (CSV, Parquet) for exactly the rows shown. `select=True`:
    a click on a row selects it; returns the selected row positions (in `df`)."""
    key = key or _slug(name)
    config: dict[str, Any] = {c: st.column_config.DatetimeColumn(TIME_TITLES.get(c, c), format="YYYY-MM-DD HH:mm:ss",
                                                                 width="medium")
                              for c, t in df.schema.items() if isinstance(t, pl.Datetime)}
    config.update({c: st.column_config.TextColumn(c, width="large") for c, t in df.schema.items()
                   if c in WIDE_TEXT and t == pl.Utf8})
    config.update({c: st.column_config.DateColumn(TIME_TITLES.get(c, c), format="YYYY-MM-DD")
                   for c, t in df.schema.items() if t == pl.Date})
    config.update({c: st.column_config.NumberColumn(format="%.3f") for c, t in df.schema.items() if t.is_float()})
    config.update({c: st.column_config.NumberColumn(format="localized") for c, t in df.schema.items()
                   if t.is_integer() and c not in ("rank", "step", "fact_index")})
    config.update(column_config or {})
    data: Any = df
    if styler is not None and not df.is_empty():
        data = styler(df.to_pandas().style)
    if height == "auto" and df.height > 10:       # more than Streamlit's ~10 rows before scrolling
        height = 38 + 35 * min(df.height, ROWS_SHOWN)
    if select:
        event = st.dataframe(data, hide_index=True, height=height, column_config=config, key=f"df_{key}",
                             on_select="rerun", selection_mode="single-row")
    else:
        st.dataframe(data, hide_index=True, height=height, column_config=config, key=f"df_{key}")
    csv = csv_safe(df).write_csv().encode("utf-8")
    buf = io.BytesIO()
    df.write_parquet(buf)
    row = st.container(horizontal=True, vertical_alignment="center")
    row.download_button("CSV", csv, file_name=f"{_slug(name)}.csv", mime="text/csv", key=f"csv_{key}",
                        icon=":material/download:", on_click="ignore")
    row.download_button("Parquet", buf.getvalue(), file_name=f"{_slug(name)}.parquet",
                        mime="application/vnd.apache.parquet", key=f"parquet_{key}",
                        icon=":material/download:", on_click="ignore")
    row.caption(caption or f"{df.height:,} rows")
    if select:
        rows = list(getattr(getattr(event, "selection", None), "rows", None) or [])
        return [r for r in rows if 0 <= r < df.height]
    return None


def picked(df: pl.DataFrame, rows: list[int] | None, key: str, column: str = "id") -> str | None:
    """The `column` value of the row clicked in a table shown with `select=True`; else the one
    opened before (kept under `key` in the session, e.g. from a link) while it is still shown."""
    if rows:
        st.session_state[key] = df[column][rows[0]]
    elif st.session_state.get(f"{key}_had_click"):      # the person un-clicked the row: close it
        st.session_state.pop(key, None)
    st.session_state[f"{key}_had_click"] = bool(rows)
    value = st.session_state.get(key)
    return value if value is not None and value in set(df[column].to_list()) else None


# -- links: a view's state in its address (query parameters) ----------------------------------------
def from_link(name: str) -> str | None:
    """A value the address this session was opened with carried (e.g. `mem`, `from`), once: the
    first widget that reads it takes it."""
    return st.session_state.pop(f"_link_{name}", None)


def _day(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:
        return None


def date_range(ctx: PageContext, key: str, lo: dt.date, hi: dt.date, *, container: Any = None,
               label: str = "Said between (conversation time)", help: str | None = None
               ) -> tuple[dt.date | None, dt.date | None]:
    """A date range over [lo, hi] (from the link when it carries one); returns (start, end), None
    where the range is open. A narrowed range goes into the view's link (`from`, `to`)."""
    where = container or st
    start = _day(from_link("from")) or lo
    end = _day(from_link("to")) or hi
    start, end = min(max(start, lo), hi), max(min(end, hi), lo)
    chosen = where.date_input(label, value=(start, min(max(end, start), hi)), min_value=lo, max_value=hi,
                              key=key, format="YYYY-MM-DD", help=help)
    picked_days = list(chosen) if isinstance(chosen, (list, tuple)) else [chosen]
    a = picked_days[0] if picked_days else lo
    b = picked_days[1] if len(picked_days) > 1 else hi
    if (a, b) != (lo, hi):
        ctx.link.update({"from": a.isoformat(), "to": b.isoformat()})
    return (a if a != lo else None), (b if b != hi else None)


def as_of_picker(ctx: PageContext, key: str, lo: dt.date, *, container: Any = None) -> dt.date | None:
    """An "as of" date (empty: now): the view shows things as they stood at the end of that day."""
    where = container or st
    hi = max(lo, dt.date.today())
    linked = _day(from_link("as_of"))
    linked = min(max(linked, lo), hi) if linked else None
    chosen = where.date_input("As of (conversation time; empty: now)", value=linked, min_value=lo, max_value=hi,
                              key=key, format="YYYY-MM-DD", help="What was true at the end of that day: facts "
                                                                 "said by then, with the status they had then.")
    if isinstance(chosen, dt.date):
        ctx.link["as_of"] = chosen.isoformat()
        return chosen
    return None


def metric(col: Any, label: str, value: int | float | str) -> None:
    """`st.metric` with thousands separators ("110,500", not "110500")."""
    col.metric(label, f"{value:,}" if isinstance(value, int) else value)


# Multiselect chips take the theme's primary colour (red by default), which reads like an error:
# draw them as neutral blue-grey tags.
CHIP_STYLE = """<style>
[data-testid="stMultiSelectTagsContainer"] [data-tag], span[data-baseweb="tag"] {
  background-color: #e3eaf2 !important; color: #1f2d3d !important; }
[data-testid="stMultiSelectTagsContainer"] [data-tag] *, span[data-baseweb="tag"] * {
  color: #1f2d3d !important; fill: #1f2d3d !important; }
</style>"""


def style_page() -> None:
    st.html(CHIP_STYLE)


def flash(message: str, kind: str = "success") -> None:
    """Keep a message for the next run (shown once by `show_flash`), e.g. after an action + rerun."""
    st.session_state.setdefault("_flash", []).append((kind, message))


def show_flash() -> None:
    for kind, message in st.session_state.pop("_flash", []):
        getattr(st, kind)(message)


@contextmanager
def advice_on_error(action: str) -> Iterator[None]:
    """Show a library error as a message (what failed and what to do) instead of a traceback."""
    try:
        yield
    except MemstoreError as exc:
        st.error(f"{action} failed: {exc}")
    except FileNotFoundError as exc:
        st.error(f"{action} failed: {exc}")


def read_only_note(ctx: PageContext) -> bool:
    """True (and a note) when the store is a read-only snapshot: actions are off."""
    if ctx.read_only:
        st.caption("Read-only snapshot: actions are disabled. Open the store itself to change it.")
    return ctx.read_only


def row_colors(column: str, colors: dict[str, str]) -> Callable[[Any], Any]:
    """A pandas Styler function colouring whole rows by the value of `column`."""
    def style(styler: Any) -> Any:
        def paint(row: Any) -> list[str]:
            color = colors.get(str(row[column]))
            return [f"background-color: {color}" if color else ""] * len(row)
        return styler.apply(paint, axis=1)
    return style
