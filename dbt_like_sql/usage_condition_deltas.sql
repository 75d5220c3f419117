-- One change at a time (seed 004, "compared to what?"): per run (batch × agent × model), each usage condition
-- (`instructions`, `docs`) against `bare` on the same cases: the pass rate and the unsafe rate of each side with
-- both counts, and their differences, never one blended figure. A case row (task) holds one case; the '*' row pools
-- the cases with valid scored trials under both conditions (the paired cases, as skill_deltas does), and
-- paired_pass_delta is the mean over them of the per-case pass-rate difference. A side with no valid scored trial
-- has no rate and the case is left out of the pooled row.
WITH cells AS (
    SELECT
        run_id, agent_runner, agent_model, task, condition,
        count(*) FILTER (WHERE scored AND outcome = 'pass') AS passed,
        count(*) FILTER (WHERE scored AND outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE scored) AS valid_scored
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY run_id, agent_runner, agent_model, task, condition
),
pairs AS (
    SELECT
        c.run_id, c.agent_runner, c.agent_model, c.condition, c.task,
        c.passed, c.unsafe, c.valid_scored,
        b.passed AS bare_passed, b.unsafe AS bare_unsafe, b.valid_scored AS bare_valid,
        c.valid_scored > 0 AND b.valid_scored > 0 AS paired,
        c.passed / nullif(c.valid_scored, 0) - b.passed / nullif(b.valid_scored, 0) AS case_pass_delta
    FROM cells AS c
    JOIN cells AS b
        ON b.run_id = c.run_id AND b.agent_runner = c.agent_runner
        AND b.agent_model IS NOT DISTINCT FROM c.agent_model AND b.task = c.task AND b.condition = 'bare'
    WHERE c.condition <> 'bare'
),
sides AS (
    SELECT
        run_id, agent_runner, agent_model, condition, task,
        passed, unsafe, valid_scored, bare_passed, bare_unsafe, bare_valid,
        paired::INTEGER AS paired_cases, case_pass_delta AS paired_pass_delta
    FROM pairs
    UNION ALL
    SELECT
        run_id, agent_runner, agent_model, condition, '*' AS task,
        coalesce(sum(passed) FILTER (WHERE paired), 0), coalesce(sum(unsafe) FILTER (WHERE paired), 0),
        coalesce(sum(valid_scored) FILTER (WHERE paired), 0),
        coalesce(sum(bare_passed) FILTER (WHERE paired), 0), coalesce(sum(bare_unsafe) FILTER (WHERE paired), 0),
        coalesce(sum(bare_valid) FILTER (WHERE paired), 0),
        count(*) FILTER (WHERE paired), avg(case_pass_delta) FILTER (WHERE paired)
    FROM pairs
    GROUP BY run_id, agent_runner, agent_model, condition
)
SELECT
    run_id, agent_runner, agent_model, condition, task,
    passed::BIGINT AS passed, unsafe::BIGINT AS unsafe, valid_scored::BIGINT AS valid_scored,
    passed / nullif(valid_scored, 0) AS pass_rate,
    unsafe / nullif(valid_scored, 0) AS unsafe_rate,
    bare_passed::BIGINT AS bare_passed, bare_unsafe::BIGINT AS bare_unsafe, bare_valid::BIGINT AS bare_valid,
    bare_passed / nullif(bare_valid, 0) AS bare_pass_rate,
    bare_unsafe / nullif(bare_valid, 0) AS bare_unsafe_rate,
    passed / nullif(valid_scored, 0) - bare_passed / nullif(bare_valid, 0) AS pass_delta,
    unsafe / nullif(valid_scored, 0) - bare_unsafe / nullif(bare_valid, 0) AS unsafe_delta,
    paired_cases::BIGINT AS paired_cases, paired_pass_delta
FROM sides
ORDER BY run_id, agent_runner, agent_model, condition, task = '*' DESC, task
