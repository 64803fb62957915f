-- Memories of re-embedding job $job without a vector of the new model for their current text (never
-- made, or made before an update changed the text), in scope order, and the text to embed: what
-- pipeline/embed_facts.py embedded (a raw turn with its speaker: "Caroline: I went ..."; an updated
-- memory is embedded bare, as update() does).
SELECT m.id, m.hash, m.scope_key, m.user_id, m.agent_id, m.run_id,
       CASE WHEN r.extractor = 'none' AND m.attributed_to IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.event = 'UPDATE')
            THEN m.attributed_to || ': ' || m.memory ELSE m.memory END AS text
FROM memories m
LEFT JOIN extraction_runs r ON r.id = m.extraction_run_id
WHERE NOT EXISTS (SELECT 1 FROM reembed_vectors v WHERE v.job_id = $job AND v.memory_id = m.id AND v.hash = m.hash)
ORDER BY m.scope_key, m.id
LIMIT $n;
