-- Of the given entities, remove those no memory names any more (after an update replaced a
-- memory's entities): an entity row keeps a name and must not outlive its last mention.
DELETE FROM entities
WHERE list_contains($ids, id)
  AND id NOT IN (SELECT entity_id FROM entity_postings WHERE list_contains($ids, entity_id));
