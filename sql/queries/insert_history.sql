INSERT INTO history (id, memory_id, event, old_memory, new_memory, user_id, agent_id, run_id, scope_key, actor_id, role, created_at)
VALUES ($id, $memory_id, $event, $old_memory, $new_memory, $user_id, $agent_id, $run_id, $scope_key, $actor_id, $role, $created_at);
