"""Altair charts of the dashboard, built from the frames of `memstore.dashboard.data` (pure: frame in,
chart out, so they can be checked without a browser).

>>> import polars as pl, datetime as dt
>>> tl = pl.DataFrame({"memory": ["a", "b"], "status": ["superseded", "current"], "slot": ["x", "x"],
...                    "valid_from": [dt.datetime(2024, 1, 1), dt.datetime(2024, 3, 1)],
...                    "valid_to": [dt.datetime(2024, 3, 1), None], "id": ["1", "2"]})
>>> spec = validity_gantt(tl, now=dt.datetime(2024, 6, 1)).to_dict()
>>> spec["layer"][0]["mark"]["type"], spec["layer"][0]["encoding"]["x2"]["field"]
('bar', 'valid_to_shown')
"""
from __future__ import annotations

import datetime as dt

import altair as alt
import polars as pl

from memstore.dashboard.data import SIGNALS, utcnow

STATUS_COLORS = alt.Scale(domain=["current", "superseded", "expired"], range=["#2e7d32", "#9e9e9e", "#ef6c00"])
RUN_COLORS = alt.Scale(domain=["ok", "empty", "malformed", "llm_error"], range=["#2e7d32", "#fbc02d", "#c62828", "#6a1b9a"])
SIGNAL_COLORS = alt.Scale(domain=[*SIGNALS, "score"], range=["#1565c0", "#00838f", "#6a1b9a", "#8d6e63", "#ef6c00", "#ad1457", "#2e7d32", "#212121"])


def _pd(df: pl.DataFrame):
    return df.to_pandas()


def growth_chart(df: pl.DataFrame, by: str = "scope") -> alt.Chart:
    """Cumulative memories per day (frame from data.growth)."""
    return alt.Chart(_pd(df)).mark_line(interpolate="step-after", point=True).encode(
        x=alt.X("day:T", title="valid from"), y=alt.Y("memories:Q", title="memories (cumulative)"),
        color=alt.Color(f"{by}:N"), tooltip=["day:T", f"{by}:N", "memories:Q"]).properties(height=260)


def runs_by_status_chart(runs: pl.DataFrame) -> alt.Chart:
    """Extraction runs counted by status, split by extractor."""
    counts = runs.group_by("status", "extractor").agg(pl.len().alias("runs"))
    return alt.Chart(_pd(counts)).mark_bar().encode(
        x=alt.X("runs:Q"), y=alt.Y("status:N", sort=list(RUN_COLORS.domain), title=None),
        color=alt.Color("status:N", scale=RUN_COLORS, legend=None), column=alt.Column("extractor:N"),
        tooltip=["extractor:N", "status:N", "runs:Q"]).properties(height=120, width=220)


def signal_bars(results: pl.DataFrame, threshold: float) -> alt.LayerChart:
    """One row per result, a bar per signal and the fused score, and the threshold as a rule."""
    rows = results.with_columns(pl.format("{}. {}", pl.col("rank"), pl.col("memory").str.slice(0, 60)).alias("result"))
    long = rows.unpivot(index=["result", "rank", "channels"], on=[*SIGNALS, "score"],
                        variable_name="signal", value_name="value").with_columns(pl.col("value").cast(pl.Float64))
    order = rows.sort("rank")["result"].to_list()
    bars = alt.Chart(_pd(long)).mark_bar().encode(
        y=alt.Y("result:N", sort=order, title=None, axis=alt.Axis(labelLimit=360)),
        yOffset=alt.YOffset("signal:N", sort=[*SIGNALS, "score"]),
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1]), title="signal / fused score"),
        color=alt.Color("signal:N", scale=SIGNAL_COLORS),
        tooltip=["result:N", "signal:N", alt.Tooltip("value:Q", format=".3f"), "channels:N"])
    rule = alt.Chart(_pd(pl.DataFrame({"threshold": [threshold]}))).mark_rule(
        color="#c62828", strokeDash=[6, 3], size=2).encode(x="threshold:Q", tooltip=["threshold:Q"])
    return alt.layer(bars, rule).properties(height=40 + 11 * 5 * max(1, rows.height))


def validity_gantt(timeline: pl.DataFrame, now: dt.datetime | None = None) -> alt.LayerChart:
    """Gantt-style validity intervals: one bar per fact from valid_from to valid_to (open: to now)."""
    now = now or utcnow()
    df = timeline.with_columns(
        pl.col("valid_to").fill_null(pl.lit(now)).alias("valid_to_shown"),
        pl.col("slot").fill_null("—"),
        pl.format("{} ({})", pl.col("memory").str.slice(0, 70), pl.col("id").str.slice(0, 4)).alias("fact"),
    ).with_columns(  # an empty interval (a fact that was never true) still gets a visible sliver
        pl.when(pl.col("valid_to_shown") <= pl.col("valid_from"))
        .then(pl.col("valid_from") + pl.duration(days=1)).otherwise(pl.col("valid_to_shown")).alias("valid_to_shown"))
    order = df.sort("valid_from")["fact"].to_list()
    base = alt.Chart(_pd(df.select("fact", "memory", "status", "slot", "valid_from", "valid_to", "valid_to_shown")))
    bars = base.mark_bar(cornerRadius=2).encode(
        x=alt.X("valid_from:T", title="valid"), x2="valid_to_shown:T",
        y=alt.Y("fact:N", sort=order, title=None, axis=alt.Axis(labelLimit=420)),
        color=alt.Color("status:N", scale=STATUS_COLORS),
        tooltip=["memory:N", "status:N", "slot:N", "valid_from:T", "valid_to:T"])
    today = alt.Chart(_pd(pl.DataFrame({"now": [now]}))).mark_rule(strokeDash=[4, 4], color="#555").encode(x="now:T")
    return alt.layer(bars, today).properties(height=70 + 24 * df.height)


def degree_chart(degrees: pl.DataFrame, top: int = 25) -> alt.Chart:
    """The `top` entities by degree, hubs in red."""
    df = degrees.head(top)
    return alt.Chart(_pd(df)).mark_bar().encode(
        x=alt.X("degree:Q", title="memories linked"),
        y=alt.Y("entity:N", sort=df["entity"].to_list(), title=None),
        color=alt.Color("hub:N", scale=alt.Scale(domain=[True, False], range=["#c62828", "#1565c0"])),
        tooltip=["entity:N", "label:N", "degree:Q", "current_degree:Q", "hub:N"]).properties(height=max(120, 18 * df.height))
