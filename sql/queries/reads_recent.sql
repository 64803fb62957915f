-- The audit of reads, newest first: what each read returned, for whom, to which token.
-- NULL parameters match everything ($since: the oldest ts shown).
SELECT ts, token_name, door, method, user_id, agent_id, run_id, query, query_hashed, result_ids, scores,
       channels, n_results, ms
FROM reads
WHERE ($user_id IS NULL OR user_id = $user_id) AND ($agent_id IS NULL OR agent_id = $agent_id)
  AND ($run_id IS NULL OR run_id = $run_id) AND ($token IS NULL OR token_name = $token)
  AND ($since IS NULL OR ts >= $since)
ORDER BY ts DESC
LIMIT $limit;
