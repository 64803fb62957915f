"""Memories: a filterable table of the scope's memories (text, status, entities, the days they were
said, as of a past date); a click on a row opens the memory: its supersession chain, history (said
and stored times), links, and the source messages inside their conversation."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.analysis.periods import as_of
from memstore.dashboard import data
from memstore.dashboard.widgets import (
    PageContext,
    as_of_picker,
    date_range,
    from_link,
    need_scope,
    picked,
    row_colors,
    show_table,
)

TITLE = "Memories"
STATUS_BG = {"superseded": "#eeeeee", "expired": "#fff3e0"}
OPEN_KEY = "mem_open"          # the memory shown below the table ("mem_": forgotten when the scope changes)


def render(ctx: PageContext) -> None:
    st.title("Memories")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    table = data.memories_table(m, scope)
    linked = from_link("mem")
    if linked:
        st.session_state[OPEN_KEY] = linked
    lo, hi = data.day_bounds(table["valid_from"])
    t1, t2 = st.columns(2)
    start, end = date_range(ctx, "mem_dates", lo, hi, container=t1,
                            help="Memories that became true (were said) in these days: conversation time, "
                                 "not when they were stored.")
    when = as_of_picker(ctx, "mem_as_of", lo, container=t2)
    if when is not None:
        table = as_of(table, when)
    all_entities = sorted({e for ents in table["entities"].to_list() for e in ents})
    c1, c2, c3 = st.columns([2, 2, 2])
    text = c1.text_input("Text contains", key="mem_text", value=from_link("q") or "")
    statuses = c2.multiselect("Status", ["current", "superseded", "expired"], default=["current", "superseded", "expired"],
                              key="mem_status")
    entities = c3.multiselect("Mentions entities", all_entities, key="mem_entities")
    if text.strip():
        ctx.link["q"] = text.strip()
    shown = data.in_days(data.filter_memories(table, text, statuses, entities), "valid_from", start, end)
    view = shown.select("memory", "status", "valid_from", "valid_to", "stored_at", "slot", "entities", "sources", "id")
    what = f" as of {when:%d %b %Y}" if when is not None else ""
    rows = show_table(view, f"memories {ctx.label}", key="memories", styler=row_colors("status", STATUS_BG),
                      caption=f"{shown.height} of {table.height} memories of {ctx.label}{what} · "
                              "click a row to open it", select=True)
    chosen = picked(view, rows, OPEN_KEY)
    if chosen is None:
        if not shown.is_empty():
            st.caption("Click a memory's row to see where it came from and what became of it.")
        return
    ctx.link["mem"] = chosen
    render_detail(ctx, table.filter(pl.col("id") == chosen).row(0, named=True))


def render_detail(ctx: PageContext, row: dict) -> None:
    m, scope, mid = ctx.memory, ctx.scope, row["id"]
    st.subheader(row["memory"])
    cols = st.columns(5)
    cols[0].metric("status", row["status"])
    cols[1].metric("said / valid from", str(row["valid_from"])[:10], help="conversation time")
    cols[2].metric("valid to", str(row["valid_to"])[:10] if row["valid_to"] else "open")
    cols[3].metric("stored", str(row["stored_at"])[:10], help="when it was written to the store")
    cols[4].metric("source messages", row["sources"])
    st.caption(f"id `{mid}` · entities: {', '.join(row['entities']) or '—'} · extraction run `{row['extraction_run_id']}`")
    sources, chain, history, links = st.tabs(["Source in its conversation", "Supersession chain", "History", "Links"])
    with sources:
        convo = data.conversation_around(m, row["source_message_ids"], scope)
        if convo.is_empty():
            st.caption("No source message is stored for this memory (added with infer=False, or pruned).")
        else:
            st.caption("The message(s) this memory came from (highlighted), with the turns around them.")
            show_table(convo, "source conversation", key="mem_sources", styler=row_colors("source", {"True": "#fff59d"}))
    with chain:
        show_table(data.supersession_chain(m, mid, scope), "supersession chain", key="mem_chain",
                   caption="Oldest first: each fact was replaced by the next.")
    with history:
        events = pl.DataFrame(m.history(mid), infer_schema_length=None)
        for col in ("created_at", "said_at"):
            if col in events.columns and events.schema[col] == pl.Utf8:   # ISO text: a time
                events = events.with_columns(pl.col(col).str.to_datetime(time_unit="us", strict=False))
        if events.is_empty():
            st.caption("No history events (history is off for this store).")
        else:
            events = events.rename({"created_at": "stored_at"})
            show_table(events.select([c for c in ("said_at", "stored_at", "event", "old_memory", "new_memory", "actor_id")
                                      if c in events.columns]), "history", key="mem_history")
    with links:
        show_table(data.memory_links(m, mid, scope), "links", key="mem_links")
