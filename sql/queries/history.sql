SELECT id, memory_id, event, old_memory, new_memory, user_id, agent_id, run_id, actor_id, role, created_at, is_deleted,
       said_at
FROM history WHERE memory_id = $memory_id ORDER BY created_at, CASE event WHEN 'ADD' THEN 0 ELSE 1 END, id;
