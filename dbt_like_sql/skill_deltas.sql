-- Skill delta per run and workspace part X: pass rate(skill+X) − pass rate(noskill+X) over the same tasks, i.e.
-- pooled over the paired tasks (those with valid scored trials under both), always with both counts; and
-- paired_delta = the mean over those tasks of the per-task rate difference.
SELECT
    run_id, workspace_part,
    coalesce(sum(skill_passed) FILTER (WHERE delta IS NOT NULL), 0)::BIGINT AS skill_passed,
    coalesce(sum(skill_valid) FILTER (WHERE delta IS NOT NULL), 0)::BIGINT AS skill_valid,
    sum(skill_passed) FILTER (WHERE delta IS NOT NULL)
        / nullif(sum(skill_valid) FILTER (WHERE delta IS NOT NULL), 0) AS skill_rate,
    coalesce(sum(noskill_passed) FILTER (WHERE delta IS NOT NULL), 0)::BIGINT AS noskill_passed,
    coalesce(sum(noskill_valid) FILTER (WHERE delta IS NOT NULL), 0)::BIGINT AS noskill_valid,
    sum(noskill_passed) FILTER (WHERE delta IS NOT NULL)
        / nullif(sum(noskill_valid) FILTER (WHERE delta IS NOT NULL), 0) AS noskill_rate,
    sum(skill_passed) FILTER (WHERE delta IS NOT NULL)
        / nullif(sum(skill_valid) FILTER (WHERE delta IS NOT NULL), 0)
        - sum(noskill_passed) FILTER (WHERE delta IS NOT NULL)
        / nullif(sum(noskill_valid) FILTER (WHERE delta IS NOT NULL), 0) AS delta,
    count(delta) AS paired_tasks,
    avg(delta) AS paired_delta
FROM {{ ref('skill_deltas_by_task') }}
GROUP BY run_id, workspace_part
ORDER BY run_id, workspace_part
