"""The Streamlit inspection dashboard (`streamlit run app.py`, `make app`, `memstore ui`).

One module per page (page_overview, page_memories, page_extractions, page_search, page_timeline,
page_expirations, page_entities, page_governance), each with `TITLE` and `render(ctx)`; `main.py`
builds the sidebar and dispatches; `data.py` turns library frames into what pages show; `charts.py`
builds the Altair charts; `store.py` opens the store (as a client of its server when one runs); `demo_store.py` builds the demo store. Pages call the library only — no SQL here.
"""
