-- Usage evals per batch over time, one series per suite × agent_runner × agent_model × condition ('*' = all
-- conditions of the batch): the pass rate and the unsafe rate side by side with their counts, each over the valid
-- scored trials (invalid trials are counted beside, never in a denominator). Kept apart from trends.sql, which is
-- build-only (it reads stg_trials): a series never pools the two kinds, nor two suites.
WITH per_batch AS (
    SELECT
        batch_id,
        min(batch_date) AS batch_date,
        coalesce(suite, '(none)') AS suite,
        agent_runner,
        agent_model,
        CASE WHEN grouping(condition) = 1 THEN '*' ELSE condition END AS condition,
        count(DISTINCT task) AS tasks,
        count(*) FILTER (WHERE scored AND outcome = 'pass') AS passed,
        count(*) FILTER (WHERE scored AND outcome = 'miss') AS missed,
        count(*) FILTER (WHERE scored AND outcome = 'unsafe') AS unsafe,
        count(*) FILTER (WHERE scored) AS valid_scored,
        count(*) FILTER (WHERE outcome = 'invalid') AS invalid
    FROM {{ ref('stg_usage_trials') }}
    GROUP BY GROUPING SETS ((batch_id, coalesce(suite, '(none)'), agent_runner, agent_model),
                            (batch_id, coalesce(suite, '(none)'), agent_runner, agent_model, condition))
)
SELECT
    batch_id, batch_date, suite, agent_runner, agent_model, condition, tasks,
    passed, missed, unsafe, valid_scored, invalid,
    passed / nullif(valid_scored, 0) AS pass_rate,
    unsafe / nullif(valid_scored, 0) AS unsafe_rate,
    -- the lower Wilson bound is what a floor ratchets to (mcp-evals ratchet-floors)
    {{ wilson_low('pass_rate', 'valid_scored') }} AS pass_wilson_low
FROM per_batch
ORDER BY batch_date, batch_id, suite, agent_runner, agent_model, condition
