-- The identity columns are the truth: recompute scope_key from them (/*TABLE*/ as in the check).
UPDATE /*TABLE*/ SET scope_key =
       'u=' || replace(replace(replace(coalesce(user_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
    || '|a=' || replace(replace(replace(coalesce(agent_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
    || '|r=' || replace(replace(replace(coalesce(run_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
WHERE scope_key IS DISTINCT FROM
       'u=' || replace(replace(replace(coalesce(user_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
    || '|a=' || replace(replace(replace(coalesce(agent_id, ''), '\', '\\'), '|', '\|'), '=', '\=')
    || '|r=' || replace(replace(replace(coalesce(run_id, ''), '\', '\\'), '|', '\|'), '=', '\=');
