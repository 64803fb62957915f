-- The batched writer's validity closures of one unit in one statement (memstore/store/writer.py):
-- memory $ids[i] of scope $scope_keys[i] ends at $ats[i] (closed_at of core/rules/supersession.py,
-- applied by the writer: a supersession of a current memory, a late fact's narrowing of a closed
-- one), superseded by $new_ids[i], IF its invalidated_at is still $befores[i], what the unit saw
-- (NULL: current). Returns the number of rows it changed: the writer checks it changed them all.
-- No RETURNING: it costs an UPDATE a projection of every column (the 384 floats included).
UPDATE memories AS m
SET invalidated_at = c.at, superseded_by = c.new_id, updated_at = c.now
FROM (SELECT unnest($ids::VARCHAR[]) AS id, unnest($scope_keys::VARCHAR[]) AS scope_key,
             unnest($ats::TIMESTAMP[]) AS at, unnest($new_ids::VARCHAR[]) AS new_id,
             unnest($nows::TIMESTAMP[]) AS now, unnest($befores::TIMESTAMP[]) AS before) AS c
WHERE m.id = c.id AND m.scope_key = c.scope_key AND m.invalidated_at IS NOT DISTINCT FROM c.before;
