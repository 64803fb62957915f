"""Shared page helpers: the page context, tables with CSV/Parquet downloads, one-shot messages after
an action, and library errors turned into advice."""
from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import streamlit as st

from memstore.dashboard.data import Scope, csv_safe, scope_label
from memstore.core.errors import MemstoreError


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


def show_table(df: pl.DataFrame, name: str, *, key: str | None = None, styler: Callable[[Any], Any] | None = None,
               height: int | str = "auto", column_config: dict[str, Any] | None = None,
               caption: str | None = None) -> None:
    """A table and two download buttons (CSV, Parquet) for exactly the rows shown."""
    key = key or _slug(name)
    config: dict[str, Any] = {c: st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")
                              for c, t in df.schema.items() if isinstance(t, pl.Datetime)}
    config.update({c: st.column_config.NumberColumn(format="%.3f") for c, t in df.schema.items() if t.is_float()})
    config.update({c: st.column_config.NumberColumn(format="localized") for c, t in df.schema.items()
                   if t.is_integer() and c not in ("rank", "step", "fact_index")})
    config.update(column_config or {})
    data: Any = df
    if styler is not None and not df.is_empty():
        data = styler(df.to_pandas().style)
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
