-- Per task: pass rate under skill+X minus pass rate under noskill+X (same run, same workspace part X), with both
-- trial counts. Only runs × workspace parts that have both a skill and a noskill cell appear; delta is NULL when
-- either side has no valid scored trial.
WITH cells AS (
    SELECT
        run_id, task, passed, valid_scored,
        split_part(condition, '+', 1) AS skill_part,
        split_part(condition, '+', 2) AS workspace_part
    FROM {{ ref('cell_matrix') }}
),
by_task AS (
    SELECT
        run_id, workspace_part, task,
        coalesce(sum(passed) FILTER (WHERE skill_part = 'skill'), 0) AS skill_passed,
        coalesce(sum(valid_scored) FILTER (WHERE skill_part = 'skill'), 0) AS skill_valid,
        coalesce(sum(passed) FILTER (WHERE skill_part = 'noskill'), 0) AS noskill_passed,
        coalesce(sum(valid_scored) FILTER (WHERE skill_part = 'noskill'), 0) AS noskill_valid,
        bool_or(skill_part = 'skill') AS has_skill,
        bool_or(skill_part = 'noskill') AS has_noskill
    FROM cells
    WHERE skill_part IN ('skill', 'noskill')
    GROUP BY run_id, workspace_part, task
)
SELECT
    run_id, workspace_part, task,
    skill_passed::BIGINT AS skill_passed, skill_valid::BIGINT AS skill_valid,
    noskill_passed::BIGINT AS noskill_passed, noskill_valid::BIGINT AS noskill_valid,
    CASE WHEN skill_valid > 0 AND noskill_valid > 0
        THEN skill_passed / skill_valid - noskill_passed / noskill_valid END AS delta
FROM by_task
WINDOW w AS (PARTITION BY run_id, workspace_part)
QUALIFY bool_or(has_skill) OVER w AND bool_or(has_noskill) OVER w
ORDER BY run_id, workspace_part, task
