"""The write side's shared pieces: how rows that several write paths produce are built.

`history.py` holds the ONE history policy (config `history`: full | redacted | off) and the one
builder of `history` rows, used by add, ingest, group commit, update, delete, resolve,
supersession, expiry and purge.
"""
