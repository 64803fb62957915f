-- Every memory id of one user (any status, any agent or run): a moved scope is verified by these.
SELECT id FROM memories WHERE user_id = $user_id ORDER BY id
