-- entity_degrees: how many memories mention each entity, per scope (one row per entity and scope).
--
--   entity_id       entities.id (md5 of the normalised name)
--   entity, label   its name and spaCy label (PERSON, GPE, ...; NULL for noun chunks)
--   user_id, agent_id, run_id, scope_key   the scope of the memories counted
--   degree          memories of that scope linked to the entity, whatever their status
--   current_degree  of those, the ones current now (not superseded, not expired)
--   first_seen, last_seen   created_at of the oldest / newest of those memories
--
-- Search damps "hub" entities by their degree; this is where to find the hubs:
--   SELECT entity, degree FROM entity_degrees WHERE user_id = $user_id ORDER BY degree DESC LIMIT 10
SELECT e.id                        AS entity_id,
       e.name                      AS entity,
       e.label                     AS label,
       p.user_id, p.agent_id, p.run_id, p.scope_key,
       count(DISTINCT m.id)        AS degree,
       count(DISTINCT m.id) FILTER (WHERE m.invalidated_at IS NULL
                                      AND (m.expiration_date IS NULL
                                           OR m.expiration_date > (now() AT TIME ZONE 'UTC'))) AS current_degree,
       min(m.created_at)           AS first_seen,
       max(m.created_at)           AS last_seen
FROM entity_postings p
JOIN entities e ON e.id = p.entity_id
JOIN memories m ON m.id = p.memory_id
GROUP BY e.id, e.name, e.label, p.user_id, p.agent_id, p.run_id, p.scope_key;
