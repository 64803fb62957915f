-- extraction_outcomes: what each extraction run returned and what became of every fact.
-- One row per fact; a run without facts (status empty / malformed / llm_error) keeps one row
-- whose fact columns are NULL, so counting runs by status works from this view alone.
--
--   extraction_run_id, user_id, agent_id, run_id, scope_key
--   extractor       llm | heuristic | none;  model, prompt_version
--   status          ok | empty | malformed | llm_error;  error, latency_ms, created_at
--   fact_index      position of the fact in the extractor's answer (0-based; NULL: no facts)
--   fact, fact_hash, attributed_to
--   outcome         added | duplicate | duplicate_in_batch | ... (what the pipeline did)
--   n_linked, n_supersedes   links the fact carried to related / replaced memories
--   memory_id       the memory an added fact became (NULL if not added, or deleted since)
--
-- Outcome mix per extractor:
--   SELECT extractor, outcome, count(*) AS n FROM extraction_outcomes GROUP BY ALL ORDER BY n DESC
WITH fact_rows AS (
    SELECT r.*,
           unnest(CASE WHEN coalesce(json_array_length(r.facts), 0) > 0
                       THEN range(CAST(json_array_length(r.facts) AS BIGINT)) ELSE [NULL] END) AS fact_index
    FROM extraction_runs r
), facts AS (
    SELECT f.*, f.facts -> CAST(f.fact_index AS INTEGER) AS fact_json
    FROM fact_rows f
)
SELECT f.id                                               AS extraction_run_id,
       f.user_id, f.agent_id, f.run_id, f.scope_key,
       f.extractor, f.model, f.prompt_version,
       f.status, f.error, f.latency_ms, f.created_at,
       f.fact_index,
       json_extract_string(f.fact_json, '$.text')          AS fact,
       json_extract_string(f.fact_json, '$.hash')          AS fact_hash,
       json_extract_string(f.fact_json, '$.attributed_to') AS attributed_to,
       json_extract_string(f.fact_json, '$.outcome')       AS outcome,
       TRY_CAST(json_extract(f.fact_json, '$.n_linked') AS INTEGER)     AS n_linked,
       TRY_CAST(json_extract(f.fact_json, '$.n_supersedes') AS INTEGER) AS n_supersedes,
       m.id                                               AS memory_id
FROM facts f
LEFT JOIN memories m
       ON m.extraction_run_id = f.id
      AND m.hash = json_extract_string(f.fact_json, '$.hash')
      AND json_extract_string(f.fact_json, '$.outcome') = 'added';
