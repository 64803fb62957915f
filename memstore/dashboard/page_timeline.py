"""Timeline & contradictions: each fact's validity interval (Gantt-style) and the contradictions
among current facts, each with a resolve action that writes through `Memory.resolve`."""
from __future__ import annotations

import polars as pl
import streamlit as st

from memstore.dashboard import charts
from memstore.dashboard.widgets import (
    PageContext,
    advice_on_error,
    flash,
    need_scope,
    read_only_note,
    show_table,
)

TITLE = "Timeline & contradictions"


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
        slots = sorted(s for s in timeline["slot"].unique().to_list() if s)
        c1, c2 = st.columns(2)
        chosen_slots = c1.multiselect("Slots (empty: all)", slots, key="tl_slots")
        statuses = c2.multiselect("Status", ["current", "superseded", "expired"],
                                  default=["current", "superseded", "expired"], key="tl_status")
        shown = timeline.filter(pl.col("status").is_in(statuses))
        if chosen_slots:
            shown = shown.filter(pl.col("slot").is_in(chosen_slots))
        if shown.is_empty():
            st.caption("No facts match.")
        else:
            st.altair_chart(charts.validity_gantt(shown), width="stretch")
            show_table(shown.select("memory", "status", "slot", "slot_value", "valid_from", "valid_to",
                                    "superseded_by_memory", "id"), f"timeline {ctx.label}", key="timeline")
    render_contradictions(ctx)


def render_contradictions(ctx: PageContext) -> None:
    m, scope = ctx.memory, ctx.scope
    st.subheader("Contradictions")
    pairs = m.contradictions(**scope)
    if pairs.is_empty():
        st.success(f"No contradictions among the current facts of {ctx.label}.")
        return
    st.warning(f"{pairs.height} pair(s) of current facts may contradict each other. Decide which is true: "
               "the other is superseded (kept for audit), or mark both as true.")
    show_table(pairs.select("kind", "reason", "older_memory", "older_valid_from", "newer_memory", "newer_valid_from",
                            "similarity", "older_id", "newer_id"), f"contradictions {ctx.label}", key="contradictions")
    disabled = read_only_note(ctx)
    for i, p in enumerate(pairs.iter_rows(named=True)):
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
        flash(f"Kept “{what}”; the other fact is superseded (history: RESOLVE by {ctx.actor_id})." if what
              else f"Marked both facts as true (history: RESOLVE by {ctx.actor_id}).")
        st.rerun()
