-- Rows whose scope_key is not the canonical key of their identity columns (identity.Scope.key:
-- u=<user>|a=<agent>|r=<run>, with \ | = escaped). Dedupe, context and erasure use scope_key.
-- /*TABLE*/ is replaced by a quoted table name (one with id, scope_key and the identity columns).
WITH k AS (
    SELECT id, scope_key,
           'u=' || replace(replace(replace(coalesce(user_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
        || '|a=' || replace(replace(replace(coalesce(agent_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
        || '|r=' || replace(replace(replace(coalesce(run_id, ''), '\', '\\'), '|', '\|'), '=', '\=') AS canonical
    FROM /*TABLE*/
)
SELECT CAST(id AS VARCHAR) AS row_id, 'scope_key ' || coalesce(scope_key, 'NULL') || ' should be ' || canonical AS detail
FROM k WHERE scope_key IS DISTINCT FROM canonical;
