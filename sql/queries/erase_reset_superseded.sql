-- Erasure: a memory outside the erased set that an erased memory had superseded becomes current
-- again (as with delete()). Uses the registered table `erase_memory_ids` (id).
UPDATE memories SET superseded_by = NULL, invalidated_at = NULL
WHERE superseded_by IN (SELECT id FROM erase_memory_ids)
  AND id NOT IN (SELECT id FROM erase_memory_ids);
