-- Entity postings of the entities the query may name, in the search's identity scope (alias p).
SELECT p.memory_id, p.entity_id
FROM entity_postings p
WHERE /*POSTING_SCOPE*/ AND list_contains($qent_ids::VARCHAR[], p.entity_id);
