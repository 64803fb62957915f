"""Streamlit dashboard on a memstore store: `streamlit run app.py` (or `make app`, `memstore ui`).
The store is $MEMSTORE_PATH or the one named in the sidebar; with none, the demo store. The pages
live in memstore/dashboard/."""
from memstore.dashboard.main import main

if __name__ == "__main__":      # Streamlit runs this file as __main__; importing it does nothing
    main()
