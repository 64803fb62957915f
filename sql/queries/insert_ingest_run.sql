-- Start of one ingest call (status 'running' until finish_ingest_run).
INSERT INTO ingest_runs (id, scope_key, user_id, agent_id, run_id, files, status, report, started_at, finished_at)
VALUES ($id, $scope_key, $user_id, $agent_id, $run_id, $files, 'running', NULL, $started_at, NULL);
