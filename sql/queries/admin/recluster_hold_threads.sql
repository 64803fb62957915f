-- While a background re-cluster pass runs (memstore/store/recluster.py threads_held): DuckDB's worker
-- threads for the whole store (/*THREADS*/: an integer). One thread leaves the other cores to the
-- searches the pass runs beside; searches themselves lose nothing measurable at one thread under load.
SET threads = /*THREADS*/;
