-- timeline: every memory with its validity interval and status, for plotting truth over time.
-- One row per memory (current, superseded or expired).
--
--   id, memory, user_id, agent_id, run_id, scope_key
--   subject, slot, slot_value   what the fact states (subject / slot / value); NULL if unknown
--   valid_from      when the fact became true (the conversation's time, else the time of add)
--   valid_to        when it stopped: superseded (invalidated_at) or expired (expiration_date),
--                   whichever comes first; NULL = still open
--   status          current | superseded | expired (now, in UTC)
--   superseded_by, superseded_by_memory   the fact that replaced it
--   invalidated_at, expiration_date, created_at, updated_at
--
-- Where Alice lived, in order:
--   SELECT valid_from, valid_to, memory, status FROM timeline
--   WHERE user_id = $user_id AND slot = 'lives_in' ORDER BY valid_from
SELECT m.id, m.memory, m.user_id, m.agent_id, m.run_id, m.scope_key,
       m.subject, m.slot, m.slot_value,
       coalesce(m.valid_from, m.created_at)                 AS valid_from,
       least(m.invalidated_at, m.expiration_date)           AS valid_to,
       CASE WHEN m.invalidated_at IS NOT NULL THEN 'superseded'
            WHEN m.expiration_date <= (now() AT TIME ZONE 'UTC') THEN 'expired'
            ELSE 'current' END                              AS status,
       m.superseded_by,
       s.memory                                             AS superseded_by_memory,
       m.invalidated_at, m.expiration_date, m.created_at, m.updated_at
FROM memories m
LEFT JOIN memories s ON s.id = m.superseded_by;
