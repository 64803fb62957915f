"""Altair charts of the dashboard, built from the frames of `memstore.dashboard.data` (pure: frame in,
chart out, so they can be checked without a browser).

>>> import polars as pl, datetime as dt
>>> tl = pl.DataFrame({"memory": ["a", "b"], "status": ["superseded", "current"], "slot": ["x", "x"],
...                    "valid_from": [dt.datetime(2024, 1, 1), dt.datetime(2024, 3, 1)],
...                    "valid_to": [dt.datetime(2024, 3, 1), None], "id": ["1", "2"]})
>>> spec = validity_gantt(tl, now=dt.datetime(2024, 6, 1)).to_dict()
>>> spec["layer"][0]["mark"]["type"], spec["layer"][0]["encoding"]["x2"]["field"]
('bar', 'valid_to_shown')
>>> [layer["mark"]["type"] for layer in spec["layer"]]     # bars and a dot per fact
['bar', 'point']

`now` is three months after the data: no "now" rule, and the axis ends with the data (+3 %):

>>> {k: v for k, v in spec["layer"][0]["encoding"]["x"]["scale"]["domain"][1].items() if k in ("year", "month", "date")}
{'year': 2024, 'month': 3, 'date': 2}
"""
from __future__ import annotations

import datetime as dt

import altair as alt
import polars as pl

from memstore.dashboard.data import SIGNALS, utcnow

STATUS_COLORS = alt.Scale(domain=["current", "superseded", "expired"], range=["#2e7d32", "#9e9e9e", "#ef6c00"])
RUN_COLORS = alt.Scale(domain=["ok", "empty", "malformed", "llm_error"], range=["#2e7d32", "#fbc02d", "#c62828", "#6a1b9a"])
SIGNAL_COLORS = alt.Scale(domain=list(SIGNALS), range=["#1565c0", "#00838f", "#6a1b9a", "#8d6e63", "#ef6c00", "#ad1457", "#2e7d32", "#f9a825"])


def _pd(df: pl.DataFrame):
    return df.to_pandas()


def growth_chart(df: pl.DataFrame) -> alt.Chart:
    """Cumulative memories by the day they were said (frame from data.growth: "all scopes", the
    biggest scopes, "others"); the total is drawn thick, the time axis spans exactly the data and
    names months and years, the y title ("memories") is short enough never to be cut. A store whose memories all
    became valid on one day gets a point per line (a line of one point draws nothing)."""
    by, total = "scope", "all scopes"
    order = [total, *sorted({v for v in df[by].to_list() if v not in (total, "others")}), "others"]
    one_day = df.height > 0 and df["day"].n_unique() == 1
    x_scale = alt.Scale(domain=[str(df["day"].min()), str(df["day"].max())]) if df.height and not one_day else alt.Undefined
    return alt.Chart(_pd(df)).mark_line(interpolate="step-after", point=one_day).encode(
        x=alt.X("day:T", title="said (conversation time)", scale=x_scale,
                axis=alt.Axis(format="%b %Y", labelAngle=0, tickCount="month")),
        y=alt.Y("memories:Q", title="memories", axis=alt.Axis(format=",d", titlePadding=8)),
        color=alt.Color(f"{by}:N", sort=order, title=None, legend=alt.Legend(orient="bottom", columns=4, labelLimit=260)),
        strokeWidth=alt.condition(alt.datum[by] == total, alt.value(3), alt.value(1.5)),
        tooltip=[alt.Tooltip("day:T", format="%d %b %Y"), f"{by}:N", alt.Tooltip("memories:Q", format=",d")],
    ).properties(height=280, padding={"left": 10, "top": 5, "right": 5, "bottom": 5})


def runs_by_status_chart(runs: pl.DataFrame) -> alt.Chart:
    """Extraction runs counted by status, split by extractor (`runs`: one row per run, or counts
    in a `runs` column, as a lake's Fleet gives them)."""
    counted = pl.col("runs").sum() if "runs" in runs.columns else pl.len().alias("runs")
    counts = runs.group_by("status", "extractor").agg(counted)
    return alt.Chart(_pd(counts)).mark_bar().encode(
        x=alt.X("runs:Q", axis=alt.Axis(format=",d")), y=alt.Y("status:N", sort=list(RUN_COLORS.domain), title=None),
        color=alt.Color("status:N", scale=RUN_COLORS, legend=None), column=alt.Column("extractor:N"),
        tooltip=["extractor:N", "status:N", "runs:Q"]).properties(height=120, width=220)


def _threshold_rule(threshold: float) -> alt.Chart:
    return alt.Chart(_pd(pl.DataFrame({"threshold": [threshold]}))).mark_rule(
        color="#c62828", strokeDash=[6, 3], size=2).encode(x="threshold:Q", tooltip=["threshold:Q"])


def contribution_bars(parts: pl.DataFrame, threshold: float | None = None) -> alt.LayerChart:
    """One stacked bar per result: what each signal adds to the score (weight × signal, scaled
    like the score), so a bar's length IS the score; the threshold as a rule (frame from
    data.contributions).

    >>> import polars as pl
    >>> parts = pl.DataFrame({"result": ["1. a"] * 2, "rank": [1, 1], "signal": ["semantic", "person"],
    ...                       "value": [0.9, 1.0], "weight": [0.5, 0.04], "part": [0.45, 0.04], "score": [0.49] * 2})
    >>> spec = contribution_bars(parts, 0.3).to_dict()
    >>> spec["layer"][0]["mark"]["type"], spec["layer"][0]["encoding"]["x"]["field"]
    ('bar', 'part')
    """
    shown = parts.filter(pl.col("part") > 0)
    order = parts.sort("rank")["result"].unique(maintain_order=True).to_list()
    bars = alt.Chart(_pd(shown)).mark_bar().encode(
        y=alt.Y("result:N", sort=order, title=None, axis=alt.Axis(labelLimit=360, labelOverlap=False)),
        x=alt.X("part:Q", stack="zero", title="score (each signal's weighted part)",
                scale=alt.Scale(domain=[0, max(0.05, float(parts["score"].max() or 0))]), axis=alt.Axis(format=".2f")),
        color=alt.Color("signal:N", scale=SIGNAL_COLORS, sort=list(SIGNALS), legend=alt.Legend(orient="bottom")),
        order=alt.Order("signal_order:Q"),
        tooltip=["result:N", "signal:N", alt.Tooltip("part:Q", format=".3f", title="adds to score"),
                 alt.Tooltip("value:Q", format=".3f", title="raw signal"), alt.Tooltip("weight:Q", format=".2f"),
                 alt.Tooltip("score:Q", format=".3f")],
    ).transform_calculate(signal_order=f"indexof({list(SIGNALS)!r}, datum.signal)")
    layers = [bars] + ([_threshold_rule(threshold)] if threshold else [])
    return alt.layer(*layers).properties(height=40 + 26 * max(1, len(order)))


def raw_signal_bars(parts: pl.DataFrame) -> alt.Chart:
    """The raw signal values (each in [0, 1], before weighting), a bar per signal and result: what
    each signal measured, not what it counts for."""
    order = parts.sort("rank")["result"].unique(maintain_order=True).to_list()
    return alt.Chart(_pd(parts)).mark_bar().encode(
        y=alt.Y("result:N", sort=order, title=None, axis=alt.Axis(labelLimit=360, labelOverlap=False)),
        yOffset=alt.YOffset("signal:N", sort=list(SIGNALS)),
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1]), title="raw signal value (unweighted)"),
        color=alt.Color("signal:N", scale=SIGNAL_COLORS, sort=list(SIGNALS), legend=alt.Legend(orient="bottom")),
        tooltip=["result:N", "signal:N", alt.Tooltip("value:Q", format=".3f"), alt.Tooltip("weight:Q", format=".2f")],
    ).properties(height=40 + 9 * len(SIGNALS) * max(1, len(order)))


def validity_gantt(timeline: pl.DataFrame, now: dt.datetime | None = None) -> alt.LayerChart:
    """Gantt-style validity intervals: one bar per fact from valid_from to valid_to, and a dot at
    valid_from so a fact replaced within minutes stays visible. The time axis spans the data (open
    intervals run to the latest date in the data, or to now when that is within a month of it)."""
    now = now or utcnow()
    starts, ends = timeline["valid_from"].drop_nulls(), timeline["valid_to"].drop_nulls()
    last = max([*starts.to_list(), *ends.to_list()])
    first = starts.min() or last
    end = now if now >= last and now - last <= dt.timedelta(days=31) else last
    pad = max((end - first) * 0.03, dt.timedelta(hours=1))
    df = timeline.with_columns(
        pl.col("valid_to").fill_null(pl.lit(end)).alias("valid_to_shown"),
        pl.col("slot").fill_null("—"),
        pl.format("{} ({})", pl.col("memory").str.slice(0, 70), pl.col("id").str.slice(0, 4)).alias("fact"),
    ).with_columns(pl.max_horizontal("valid_to_shown", "valid_from").alias("valid_to_shown"))
    order = df.sort("valid_from")["fact"].to_list()
    base = alt.Chart(_pd(df.select("fact", "memory", "status", "slot", "valid_from", "valid_to", "valid_to_shown")))
    x = alt.X("valid_from:T", title="valid", scale=alt.Scale(domain=[first - pad, end + pad]),
              axis=alt.Axis(format="%b %Y", labelAngle=0))
    y = alt.Y("fact:N", sort=order, title=None, axis=alt.Axis(labelLimit=420, labelOverlap=False))
    tooltip = ["memory:N", "status:N", "slot:N", alt.Tooltip("valid_from:T", format="%d %b %Y %H:%M"),
               alt.Tooltip("valid_to:T", format="%d %b %Y %H:%M")]
    color = alt.Color("status:N", scale=STATUS_COLORS)
    bars = base.mark_bar(cornerRadius=2, height=12).encode(x=x, x2="valid_to_shown:T", y=y, color=color, tooltip=tooltip)
    dots = base.mark_point(filled=True, size=45, opacity=1).encode(x=x, y=y, color=color, tooltip=tooltip)
    layers: list = [bars, dots]
    if first <= now <= end + pad:
        layers.append(alt.Chart(_pd(pl.DataFrame({"now": [now]}))).mark_rule(strokeDash=[4, 4], color="#555")
                      .encode(x="now:T", tooltip=[alt.Tooltip("now:T", format="%d %b %Y %H:%M")]))
    return alt.layer(*layers).properties(height=70 + 24 * df.height)


def degree_chart(degrees: pl.DataFrame, top: int = 25) -> alt.Chart:
    """The `top` entities by degree, hubs in red; every bar labelled (no label is dropped for overlap)."""
    df = degrees.head(top)
    return alt.Chart(_pd(df)).mark_bar().encode(
        x=alt.X("degree:Q", title="memories linked", axis=alt.Axis(format=",d", tickMinStep=1)),
        y=alt.Y("entity:N", sort=df["entity"].to_list(), title=None,
                axis=alt.Axis(labelOverlap=False, labelLimit=260, labelFontSize=12)),
        color=alt.Color("hub:N", scale=alt.Scale(domain=[True, False], range=["#c62828", "#1565c0"])),
        tooltip=["entity:N", "label:N", "degree:Q", "current_degree:Q", "hub:N"]).properties(height=max(120, 22 * df.height))
