"""Expirations: expired and soon-expiring memories; purge the expired ones (with confirmation)."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import data
from memstore.dashboard.widgets import (
    PageContext,
    advice_on_error,
    flash,
    need_scope,
    read_only_note,
    row_colors,
    show_table,
)

TITLE = "Expirations"


def render(ctx: PageContext) -> None:
    st.title("Expirations")
    if not need_scope(ctx):
        return
    m = ctx.memory
    c1, c2 = st.columns(2)
    where = c1.radio("Scope", ["this scope", "all scopes"], horizontal=True, key="exp_where",
                     format_func=lambda w: f"{ctx.label}" if w == "this scope" else w)
    days = c2.slider("Soon = within days", 1, 90, 7, key="exp_days")
    scope = ctx.scope if where == "this scope" else None
    table = data.expirations(m, scope, days)
    expired = table.filter(pl.col("when") == "expired")
    cols = st.columns(2)
    cols[0].metric("expired (hidden from search, still stored)", expired.height)
    cols[1].metric(f"expiring within {days} days", table.height - expired.height)
    if table.is_empty():
        st.success("Nothing has expired or expires soon.")
    else:
        show_table(table, "expirations", key="expirations", styler=row_colors("when", {"expired": "#ffe0b2"}))
    st.subheader("Purge expired memories")
    if expired.is_empty():
        st.caption("Nothing to purge.")
        return
    target = ctx.label if scope else "all scopes"
    st.markdown(f"Purging deletes the **{expired.height}** expired memories of **{target}** with their postings and "
                "links, for good; history keeps an EXPIRE event.")
    disabled = read_only_note(ctx)
    sure = st.checkbox(f"I understand: delete {expired.height} expired memories permanently", key="exp_confirm",
                       disabled=disabled)
    if st.button(f"Purge {expired.height} expired", key="exp_purge", type="primary", disabled=disabled or not sure):
        with advice_on_error("Purge"), st.spinner("Purging…"):
            out = m.purge_expired(**(scope or {}), actor_id=ctx.actor_id)
            flash(out["message"])
            st.session_state.pop("exp_confirm", None)
            st.rerun()
