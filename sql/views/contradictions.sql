-- contradictions: candidate conflicts among the CURRENT facts (not superseded, not expired) of one
-- scope, for a person to resolve (Memory.resolve) or dismiss. One row per pair, older fact first.
--
--   user_id, agent_id, run_id, scope_key   the scope both facts belong to
--   kind            same_slot: same subject and slot with different values (two values of lives_in, say);
--                   similar: embeddings at cosine >= 0.9 but different text
--   reason          the same, in words
--   subject, slot   for same_slot pairs
--   similarity      cosine similarity of the two embeddings
--   older_id, older_memory, older_valid_from, newer_id, newer_memory, newer_valid_from
--
-- Pairs a person marked compatible (memory_links kind 'compatible') are left out.
--   SELECT reason, older_memory, newer_memory FROM contradictions WHERE user_id = $user_id
WITH cur AS (
    SELECT id, memory, hash, embedding, user_id, agent_id, run_id, scope_key, subject, slot, slot_value,
           coalesce(valid_from, created_at) AS valid_from
    FROM memories
    WHERE invalidated_at IS NULL
      AND (expiration_date IS NULL OR expiration_date > (now() AT TIME ZONE 'UTC'))
), pairs AS (
    SELECT a.scope_key, a.user_id, a.agent_id, a.run_id,
           a.id AS older_id, a.memory AS older_memory, a.valid_from AS older_valid_from,
           b.id AS newer_id, b.memory AS newer_memory, b.valid_from AS newer_valid_from,
           a.subject, a.slot, a.slot_value AS older_value, b.slot_value AS newer_value,
           -- a fact that ENDS a slot (a breakup: slot_value NULL) holds no value, so it
           -- conflicts with nothing (it is an event that stays true; see current_slot_memories.sql)
           a.subject = b.subject AND a.slot = b.slot AND a.slot_value IS NOT NULL AND b.slot_value IS NOT NULL
               AND a.slot_value IS DISTINCT FROM b.slot_value     AS same_slot,
           array_cosine_similarity(a.embedding, b.embedding)    AS similarity
    FROM cur a
    JOIN cur b ON a.scope_key = b.scope_key AND a.hash <> b.hash
              AND (a.valid_from < b.valid_from OR (a.valid_from = b.valid_from AND a.id < b.id))
)
SELECT p.user_id, p.agent_id, p.run_id, p.scope_key,
       CASE WHEN p.same_slot THEN 'same_slot' ELSE 'similar' END AS kind,
       CASE WHEN p.same_slot
            THEN 'same subject and slot ' || p.slot || ': ' || p.older_value || ' vs ' || p.newer_value
            ELSE 'similar (' || printf('%.2f', p.similarity) || ') but different content' END AS reason,
       CASE WHEN p.same_slot THEN p.subject END AS subject,
       CASE WHEN p.same_slot THEN p.slot END    AS slot,
       p.similarity,
       p.older_id, p.older_memory, p.older_valid_from,
       p.newer_id, p.newer_memory, p.newer_valid_from
FROM pairs p
WHERE (p.same_slot OR p.similarity >= 0.9)
  AND NOT EXISTS (SELECT 1 FROM memory_links l
                  WHERE l.kind = 'compatible'
                    AND ((l.src_id = p.older_id AND l.dst_id = p.newer_id)
                         OR (l.src_id = p.newer_id AND l.dst_id = p.older_id)));
