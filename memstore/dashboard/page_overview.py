"""Overview: the store's scopes with memories by status, growth over time, extraction runs by status.
With a lake named in the sidebar, the same over every shard that publishes into it (a `shard`
column in the scopes table; memstore/lake/fleet.py reads the lake)."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.widgets import PageContext, advice_on_error, date_range, metric, show_table

TITLE = "Overview"


def render(ctx: PageContext) -> None:
    if ctx.fleet is not None:
        st.title("Overview — the whole fleet")
        st.caption(f"Every shard publishing into {ctx.fleet.where}, as of its last publish."
                   + (" The other pages show the store named in the sidebar." if ctx.memory is not None else ""))
        with advice_on_error("Reading the lake"):
            summary = data.scope_summary(ctx.fleet)
            per_day = ctx.fleet.frame("memories_per_day")
            runs = ctx.fleet.frame("runs_by_status")
            show(ctx, summary, per_day, runs, empty="The lake holds no memories yet — publish a shard into it with "
                                               "`memstore publish --store S --lake L --data-path DIR`.",
                 note=None if ctx.fleet.messages else "messages are not published to this lake "
                                                      "(`memstore publish --tables ... messages`)")
        return
    m = ctx.memory
    st.title("Overview")
    summary = data.scope_summary(m)
    show(ctx, summary, None, None, memory=m,
         empty="This store is empty — ingest a chat export with `memstore ingest FILE --user alice`.")


def show(ctx: PageContext, summary: pl.DataFrame, per_day: pl.DataFrame | None, runs: pl.DataFrame | None, *,
         empty: str, memory: object = None, note: str | None = None) -> None:
    """The page body, from a store (`memory`: its frames are read only when needed) or a lake."""
    if summary.is_empty():
        st.info(empty)
        return
    if per_day is None:
        per_day = memory.frame("memories_per_day")  # type: ignore[attr-defined]
    lo, hi = data.day_bounds(per_day["day"]) if not per_day.is_empty() else data.day_bounds(pl.Series([], dtype=pl.Date))
    start, end = date_range(ctx, "ov_dates", lo, hi,
                            help="Conversation time: the days the memories became true (were said). The scopes "
                                 "table then lists the scopes with memories said in those days.")
    keys = ["scope", *(["shard"] if "shard" in summary.columns else [])]
    said = data.said_by_scope(per_day, start, end)
    summary = summary.join(said, on=keys, how="left").with_columns(
        pl.col("said_in_period").fill_null(0)).rename({"last_activity": "last_stored"})
    summary = summary.select("scope", *keys[1:], "said_in_period", "last_said", "memories", "current", "superseded",
                             "expired", "messages", "extraction_runs", "failed_runs", "last_stored",
                             *[c for c in summary.columns if c in ("user_id", "agent_id", "run_id")])
    if start is not None or end is not None:
        summary = summary.filter(pl.col("said_in_period") > 0)
        if summary.is_empty():
            st.info("No memories were said in these days.")
            return
    totals = summary.select(pl.col("current", "superseded", "expired", "messages", "extraction_runs").sum()).row(0, named=True)
    labels = [("shards", summary["shard"].n_unique())] if "shard" in summary.columns else []
    labels += [("scopes", summary["scope"].n_unique()), ("current memories", totals["current"]),
               ("superseded", totals["superseded"]), ("expired", totals["expired"]),
               ("messages", totals["messages"]), ("extraction runs", totals["extraction_runs"])]
    for col, (label, value) in zip(st.columns(len(labels)), labels):
        metric(col, label, int(value))
    if note:
        st.caption(note)

    st.subheader("Scopes")
    period = "in the days chosen" if start is not None or end is not None else "in all"
    show_table(summary, "scopes", key="overview_scopes",
               column_config={"said_in_period": st.column_config.NumberColumn(
                   f"memories said {period}", format="localized",
                   help="memories that became true in the chosen days (conversation time)")},
               caption=f"{summary.height:,} scopes · last said: conversation time · last stored: when written")

    st.subheader("Growth over time")
    whole = "fleet (every shard)" if "shard" in summary.columns else "store"
    st.caption(f"Memories of the whole {whole}, its five biggest scopes and the others together, counted "
               "cumulatively by the day they became true in the conversation (not the day they were stored).")
    growth = data.in_days(data.growth(per_day), "day", start, end)
    st.altair_chart(charts.growth_chart(growth), width="stretch")

    st.subheader("Extraction runs by status")
    if runs is None:
        runs = memory.frame("extraction_runs").select("status", "extractor")  # type: ignore[attr-defined]
    if runs.is_empty():
        st.caption("No extraction runs yet.")
    else:
        st.altair_chart(charts.runs_by_status_chart(runs))
        problems = summary.filter(pl.col("failed_runs") > 0)
        if not problems.is_empty():
            names = problems["scope"].unique(maintain_order=True).to_list()
            st.warning("Malformed or failed extraction runs in: " + ", ".join(names[:10])
                       + (f" and {len(names) - 10:,} more scopes" if len(names) > 10 else "")
                       + (" — see the Extractions page of the shard's store." if "shard" in summary.columns
                          else " — see the Extractions page."))
