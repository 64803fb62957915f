-- The batched writer's supersessions of one unit in one statement (memstore/store/writer.py): each
-- still-current memory $ids[i] of scope $scope_keys[i] ends at $ats[i] (closed_at of
-- core/rules/supersession.py, applied by the writer to the valid_from the scope cache holds),
-- superseded by $new_ids[i]. Returns the ids it closed: the writer checks it closed them all.
UPDATE memories AS m
SET invalidated_at = c.at, superseded_by = c.new_id, updated_at = c.now
FROM (SELECT unnest($ids::VARCHAR[]) AS id, unnest($scope_keys::VARCHAR[]) AS scope_key,
             unnest($ats::TIMESTAMP[]) AS at, unnest($new_ids::VARCHAR[]) AS new_id,
             unnest($nows::TIMESTAMP[]) AS now) AS c
WHERE m.id = c.id AND m.scope_key = c.scope_key AND m.invalidated_at IS NULL
RETURNING m.id;
