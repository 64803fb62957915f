"""Fleet (shown when a lake is named in the sidebar): the shards publishing into it — when each last
published, what the lake holds of it and what the shard held then — and the memories per shard."""
from __future__ import annotations

import altair as alt
import polars as pl
import streamlit as st

from memstore.core.timeutil import utcnow
from memstore.dashboard.widgets import PageContext, advice_on_error, metric, show_table

TITLE = "Fleet"


def render(ctx: PageContext) -> None:
    st.title("Fleet")
    fleet = ctx.fleet
    if fleet is None:
        st.info("Name a lake in the sidebar (or start the dashboard with `memstore ui --lake L`) to see the "
                "shards that publish into it.")
        return
    st.caption(f"The shards publishing into {fleet.where}.")
    with advice_on_error("Reading the lake"):
        shards = fleet.shards()
        if shards.is_empty():
            st.info("No shard has published into this lake yet — `memstore publish --store S --lake L`.")
            return
        shards = shards.with_columns(
            ((pl.lit(utcnow()) - pl.col("last_publish")).dt.total_seconds() / 60).round(1).alias("minutes_ago"))
        cols = st.columns(4)
        metric(cols[0], "shards", shards.height)
        metric(cols[1], "memories in the lake", int(shards["memories"].sum()))
        metric(cols[2], "current", int(shards["current"].sum()))
        metric(cols[3], "publishes", int(shards["publishes"].sum()))
        show_table(shards.select("shard", "last_publish", "minutes_ago", "publishes", "scopes", "memories",
                                 "current", "store_memories"), "shards", key="fleet_shards",
                   column_config={"store_memories": st.column_config.NumberColumn(
                       "memories at last publish", format="localized"),
                       "minutes_ago": st.column_config.NumberColumn("minutes ago", format="%.1f")})
        st.subheader("Memories per shard")
        long = shards.select("shard", "current", (pl.col("memories") - pl.col("current")).alias("not current")).unpivot(
            index="shard", variable_name="status", value_name="memories")
        st.altair_chart(alt.Chart(long.to_pandas()).mark_bar().encode(
            x=alt.X("memories:Q", stack=True, axis=alt.Axis(format=",d", tickMinStep=1)), y=alt.Y("shard:N", title=None),
            color=alt.Color("status:N", sort=["current", "not current"]),
            tooltip=["shard:N", "status:N", alt.Tooltip("memories:Q", format=",d")]), width="stretch")
