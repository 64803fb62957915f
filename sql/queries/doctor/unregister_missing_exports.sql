-- Forget registrations of export directories that no longer exist (ids in `gone`).
DELETE FROM exports WHERE id IN (SELECT id FROM gone);
