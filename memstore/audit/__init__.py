"""The audit of reads: which memories each read returned, to whom, for which query, when.

Off by default; `config={"audit": {"reads": "on"}}` turns it on for a store. `read_rows.py` turns
a read's arguments and result into one row, `read_log.py` holds rows in memory and appends them off
the read's path, `read_retention.py` removes old ones, `reads_frame.py` reads them back (the CLI's
`memstore reads`, the dashboard's Reads page). The `reads` table is sql/schema/046_reads.sql.
"""
