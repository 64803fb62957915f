"""Entities: entities by degree (hubs flagged — search damps them), the memories linked to one."""
from __future__ import annotations

import streamlit as st

from memstore.dashboard import charts, data
from memstore.dashboard.widgets import PageContext, need_scope, row_colors, show_table

TITLE = "Entities"


def render(ctx: PageContext) -> None:
    st.title("Entities")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    n_memories = m.frame("memories", **scope).height
    hub_degree = st.number_input("Flag as hub when linked to at least this many memories", min_value=1,
                                 value=data.default_hub_degree(n_memories), key="ent_hub")
    degrees = data.entity_degrees(m, scope, int(hub_degree))
    if degrees.is_empty():
        st.info(f"No entities linked to the memories of {ctx.label}.")
        return
    hubs = degrees.filter("hub")["entity"].to_list()
    if hubs:
        st.warning(f"Hub entities (linked to ≥ {hub_degree} of {n_memories} memories): {', '.join(hubs)}. "
                   "They say little about which memory a query means; search damps their weight.")
    st.altair_chart(charts.degree_chart(degrees), width="stretch")
    show_table(degrees, f"entities {ctx.label}", key="entities",
               styler=row_colors("hub", {"True": "#ffcdd2"}))
    names = dict(zip(degrees["entity_id"].to_list(),
                     [f"{e} ({d})" for e, d in zip(degrees["entity"].to_list(), degrees["degree"].to_list())]))
    chosen = st.selectbox("Memories linked to", list(names), format_func=names.get, key="ent_pick")
    if chosen:
        show_table(data.entity_memories(m, chosen, scope), "entity memories", key="entity_memories")
