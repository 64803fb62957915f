"""Overview: the store's scopes with memories by status, growth over time, extraction runs by status."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.widgets import PageContext, metric, show_table

TITLE = "Overview"


def render(ctx: PageContext) -> None:
    m = ctx.memory
    st.title("Overview")
    summary = data.scope_summary(m)
    if summary.is_empty():
        st.info("This store is empty — ingest a chat export with `memstore ingest FILE --user alice`.")
        return
    totals = summary.select(pl.col("current", "superseded", "expired", "messages", "extraction_runs").sum()).row(0, named=True)
    cols = st.columns(6)
    for col, (label, value) in zip(cols, [("scopes", summary.height), ("current memories", totals["current"]),
                                          ("superseded", totals["superseded"]), ("expired", totals["expired"]),
                                          ("messages", totals["messages"]),
                                          ("extraction runs", totals["extraction_runs"])]):
        metric(col, label, int(value))

    st.subheader("Scopes")
    show_table(summary, "scopes", key="overview_scopes")

    st.subheader("Growth over time")
    st.caption("Memories by the day they became valid (cumulative): the whole store, its five biggest "
               "scopes and the others together.")
    growth = data.growth(m.frame("memories_per_day"))
    st.altair_chart(charts.growth_chart(growth), width="stretch")

    st.subheader("Extraction runs by status")
    runs = m.frame("extraction_runs").select("status", "extractor")
    if runs.is_empty():
        st.caption("No extraction runs yet.")
    else:
        st.altair_chart(charts.runs_by_status_chart(runs))
        problems = summary.filter(pl.col("failed_runs") > 0)
        if not problems.is_empty():
            names = problems["scope"].to_list()
            st.warning("Malformed or failed extraction runs in: " + ", ".join(names[:10])
                       + (f" and {len(names) - 10:,} more scopes" if len(names) > 10 else "")
                       + " — see the Extractions page.")
