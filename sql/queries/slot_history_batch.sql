-- The batched writer's slot-history read for a whole unit (memstore/store/writer.py): every memory
-- of scope $scope_keys[i] on subject|slot key $keys[i], current or superseded, with what placing a
-- late fact needs (its text for the SUPERSEDE event of a narrowing, its expiry: the writer leaves out
-- what expired by each add's own time). One statement for the unit's late facts instead of one each.
SELECT m.scope_key, k.key, m.id, coalesce(m.valid_from, m.created_at) AS valid_from, m.invalidated_at,
       m.memory, m.expiration_date
FROM memories AS m
JOIN (SELECT unnest($scope_keys::VARCHAR[]) AS scope_key, unnest($keys::VARCHAR[]) AS key) AS k
  ON m.scope_key = k.scope_key AND m.subject || '|' || m.slot = k.key
WHERE m.scope_key IN (SELECT unnest($scope_keys::VARCHAR[]));
