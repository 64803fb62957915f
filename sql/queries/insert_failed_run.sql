-- An extraction run that failed before anything could be stored (e.g. the LLM was unreachable).
INSERT INTO extraction_runs (id, scope_key, user_id, agent_id, run_id, extractor, model, prompt_version,
                             input_message_ids, status, error, latency_ms, created_at)
VALUES ($id, $scope_key, $user_id, $agent_id, $run_id, $extractor, $model, $prompt_version,
        $input_message_ids, 'llm_error', $error, $latency_ms, $created_at);
