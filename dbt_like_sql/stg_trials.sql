-- Every current trial attempt with the flags all metrics share, so each rule is written once.
-- scored = valid AND scored_for_pass_rate (source-imports tasks and infra failures never score);
-- passed = scored AND contract_pass; cell = task--condition; condition `skill+blank` splits into
-- skill_part `skill` and workspace_part `blank`. Build tasks only: a usage task's trials have figures of their own
-- (stg_usage_trials), so no build table ever pools the two kinds.
-- materialized: view
SELECT
    t.*,
    t.task || '--' || t.condition AS cell,
    t.valid AND t.scored_for_pass_rate AS scored,
    t.valid AND t.scored_for_pass_rate AND t.contract_pass AS passed,
    split_part(t.condition, '+', 1) AS skill_part,
    split_part(t.condition, '+', 2) AS workspace_part
FROM {{ source('trials') }} AS t
WHERE coalesce(t.kind, 'build') = 'build'
