-- The end of a re-embedding job: every memory takes its new vector (in the job's one transaction,
-- with store_meta's embedder: memstore/governance/reembed.py).
UPDATE memories SET embedding = v.embedding
FROM (SELECT memory_id, hash, any_value(embedding) AS embedding FROM reembed_vectors WHERE job_id = $job
      GROUP BY memory_id, hash) v
WHERE v.memory_id = memories.id AND v.hash = memories.hash;
