"""Timeline & contradictions: each fact's validity interval (Gantt-style) in conversation time — for
the days chosen, and as it stood on an "as of" date — and the contradictions among current facts,
each with a resolve action that writes through `Memory.resolve`."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.analysis.periods import as_of
from memstore.dashboard import charts, data
from memstore.dashboard.widgets import (
    PageContext,
    advice_on_error,
    as_of_picker,
    date_range,
    flash,
    need_scope,
    read_only_note,
    show_table,
)

TITLE = "Timeline & contradictions"


@st.cache_data(show_spinner=False, max_entries=32)
def _contradictions(_m, store: int, scope: tuple, fingerprint: int) -> pl.DataFrame:
    """m.contradictions(scope), kept while the scope's memories and links are unchanged
    (`fingerprint`): the check compares every pair of current facts, the page's costliest call."""
    return _m.contradictions(**dict(scope))


def fingerprint(timeline: pl.DataFrame, links: int) -> int:
    """Changes whenever a memory of the scope is added, removed, superseded, expires or is edited,
    or a link (e.g. "both are true") is added."""
    cols = [c for c in ("id", "status", "valid_to", "memory", "updated_at") if c in timeline.columns]
    return hash((int(timeline.select(cols).hash_rows().sum()) if not timeline.is_empty() else 0, timeline.height, links))


def render(ctx: PageContext) -> None:
    st.title("Timeline & contradictions")
    if not need_scope(ctx):
        return
    m, scope = ctx.memory, ctx.scope
    timeline = m.timeline(**scope)
    st.subheader("Validity of every fact")
    if timeline.is_empty():
        st.info(f"{ctx.label} has no memories yet.")
    else:
        lo, hi = data.day_bounds(timeline["valid_from"])
        t1, t2 = st.columns(2)
        start, end = date_range(ctx, "tl_dates", lo, hi, container=t1,
                                help="Facts that became true (were said) in these days: conversation time.")
        when = as_of_picker(ctx, "tl_as_of", lo, container=t2)
        view = as_of(timeline, when) if when is not None else timeline
        slots = sorted(s for s in view["slot"].unique().to_list() if s)
        c1, c2 = st.columns(2)
        chosen_slots = c1.multiselect("Slots (empty: all)", slots, key="tl_slots")
        statuses = c2.multiselect("Status", ["current", "superseded", "expired"],
                                  default=["current", "superseded", "expired"], key="tl_status")
        shown = data.in_days(view.filter(pl.col("status").is_in(statuses)), "valid_from", start, end)
        if chosen_slots:
            shown = shown.filter(pl.col("slot").is_in(chosen_slots))
        if when is not None:
            st.caption(f"As of the end of {when:%d %b %Y}: facts said by then, each with the status it had then "
                       "(a fact replaced later is still current here).")
        if shown.is_empty():
            st.caption("No facts match.")
        else:
            st.altair_chart(charts.validity_gantt(shown, now=data.as_of_moment(when)), width="stretch")
            show_table(shown.select("memory", "status", "slot", "slot_value", "valid_from", "valid_to",
                                    "superseded_by_memory", pl.col("created_at").alias("stored_at"), "id"),
                       f"timeline {ctx.label}", key="timeline",
                       caption=f"{shown.height} of {timeline.height} facts of {ctx.label}")
    render_contradictions(ctx, fingerprint(timeline, m.frame("links", **scope).height))


def render_contradictions(ctx: PageContext, version: int) -> None:
    m, scope = ctx.memory, ctx.scope
    st.subheader("Contradictions")
    pairs = _contradictions(m, id(m), tuple(sorted(scope.items())), version)
    if pairs.is_empty():
        st.success(f"No contradictions among the current facts of {ctx.label}.")
        return
    st.warning(f"{pairs.height} pair(s) of current facts may contradict each other. Decide which is true: "
               "the other is superseded (kept for audit), or mark both as true.")
    show_table(pairs.select("kind", "reason", "older_memory", "older_valid_from", "newer_memory", "newer_valid_from",
                            "similarity", "older_id", "newer_id"), f"contradictions {ctx.label}", key="contradictions")
    disabled = read_only_note(ctx)
    for p in pairs.iter_rows(named=True):
        with st.container(border=True):
            st.markdown(f"**{p['reason']}**")
            a, b = st.columns(2)
            a.markdown(f"older · {str(p['older_valid_from'])[:10]}\n\n> {p['older_memory']}")
            b.markdown(f"newer · {str(p['newer_valid_from'])[:10]}\n\n> {p['newer_memory']}")
            k1, k2, k3 = st.columns(3)
            pair = f"{p['older_id'][:8]}_{p['newer_id'][:8]}"
            if k1.button("Keep newer", key=f"keep_newer_{pair}", disabled=disabled, type="primary"):
                resolve(ctx, keep=p["newer_id"], supersede=[p["older_id"]], what=p["newer_memory"])
            if k2.button("Keep older", key=f"keep_older_{pair}", disabled=disabled):
                resolve(ctx, keep=p["older_id"], supersede=[p["newer_id"]], what=p["older_memory"])
            if k3.button("Both are true", key=f"dismiss_{pair}", disabled=disabled):
                resolve(ctx, keep=p["newer_id"], dismiss=[p["older_id"]], what=None)


def resolve(ctx: PageContext, *, keep: str, supersede: list[str] | None = None, dismiss: list[str] | None = None,
            what: str | None) -> None:
    with advice_on_error("Resolve"), st.spinner("Resolving…"):
        ctx.memory.resolve(keep, supersede=supersede, dismiss=dismiss, actor_id=ctx.actor_id)
        _contradictions.clear()
        flash(f"Kept “{what}”; the other fact is superseded (history: RESOLVE by {ctx.actor_id})." if what
              else f"Marked both facts as true (history: RESOLVE by {ctx.actor_id}).")
        st.rerun()
