"""Streamlit dashboard on a memstore store: `streamlit run app.py` (or `make app`, `memstore ui`).
The store is $MEMSTORE_PATH or the one named in the sidebar; with none, the demo store. The pages
live in memstore/dashboard/."""
from memstore.dashboard.main import main

main()
