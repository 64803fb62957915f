-- End of one ingest call: its final status and report.
UPDATE ingest_runs SET status = $status, report = $report, finished_at = $finished_at WHERE id = $id;
