"""memstore on Ray (`pip install "memstore[ray]"`): batch ingest and re-embedding past one machine.

Ray does the model work (extraction, spaCy, embedding) in actor pools; the store's owner commits.
Only this package imports Ray, and only when one of its functions runs (tests/test_layers.py):

- `memstore.on_ray.ingest.ingest_files` (`memstore ingest FILES --on-ray ADDRESS --to TARGET`) and
  `ingest_dataset` (`memstore.ingest_dataset(ds, to=...)`): memstore/on_ray/ingest.py;
- `memstore.on_ray.reembed.reembed_on_ray` (`memstore reembed --on-ray ADDRESS`).
"""
