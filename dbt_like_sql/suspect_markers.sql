-- Suspect markers: a task whose failures keep stopping at one identical check is more likely a broken task or
-- grader than a struggling agent. Per task (id and promptHash: a reused id never pools two tasks) × agent_runner ×
-- agent_model, over that series' 10 most recent batches
-- in which the task has valid scored trials: the most common failing check (first failing required check), its
-- most common detail (and how many failures at that check carry it), and the check's share of all failures.
-- suspect = failed >= 5 AND top_share >= 0.8.
WITH scored AS (
    SELECT task, prompt_hash, agent_runner, agent_model, batch_id, batch_date, passed, failing_check, failing_detail
    FROM {{ ref('stg_trials') }}
    WHERE scored
),
recent_batches AS (
    SELECT task, prompt_hash, agent_runner, agent_model, batch_id
    FROM (SELECT task, prompt_hash, agent_runner, agent_model, batch_id, max(batch_date) AS batch_date
          FROM scored GROUP BY ALL)
    QUALIFY row_number() OVER (PARTITION BY task, prompt_hash, agent_runner, agent_model
                               ORDER BY batch_date DESC, batch_id DESC) <= 10
),
recent AS (
    SELECT s.*
    FROM scored AS s
    -- agent_model may be NULL; a plain equality join would drop those series
    JOIN recent_batches AS r
        ON s.task = r.task AND s.prompt_hash IS NOT DISTINCT FROM r.prompt_hash AND s.agent_runner = r.agent_runner
        AND s.agent_model IS NOT DISTINCT FROM r.agent_model AND s.batch_id IS NOT DISTINCT FROM r.batch_id
),
totals AS (
    SELECT
        task, prompt_hash, agent_runner, agent_model,
        count(DISTINCT batch_id) AS batches,
        count(*) AS valid_scored,
        count(*) FILTER (WHERE NOT passed) AS failed
    FROM recent
    GROUP BY task, prompt_hash, agent_runner, agent_model
),
top_check AS (
    SELECT task, prompt_hash, agent_runner, agent_model, failing_check, count(*) AS failures
    FROM recent
    WHERE NOT passed
    GROUP BY task, prompt_hash, agent_runner, agent_model, failing_check
    QUALIFY row_number() OVER (PARTITION BY task, prompt_hash, agent_runner, agent_model
                               ORDER BY count(*) DESC, failing_check NULLS LAST) = 1
),
top_detail AS (
    SELECT r.task, r.prompt_hash, r.agent_runner, r.agent_model, r.failing_detail, count(*) AS detail_failures
    FROM recent AS r
    JOIN top_check AS c
        ON r.task = c.task AND r.prompt_hash IS NOT DISTINCT FROM c.prompt_hash AND r.agent_runner = c.agent_runner AND r.agent_model IS NOT DISTINCT FROM c.agent_model
        AND r.failing_check IS NOT DISTINCT FROM c.failing_check
    WHERE NOT r.passed
    GROUP BY r.task, r.prompt_hash, r.agent_runner, r.agent_model, r.failing_detail
    QUALIFY row_number() OVER (PARTITION BY r.task, r.prompt_hash, r.agent_runner, r.agent_model
                               ORDER BY count(*) DESC, r.failing_detail NULLS LAST) = 1
)
SELECT
    t.task, t.prompt_hash, t.agent_runner, t.agent_model, t.batches, t.valid_scored, t.failed,
    c.failing_check AS top_failing_check,
    c.failures AS top_check_failures,
    d.failing_detail AS top_detail,
    d.detail_failures AS top_detail_failures,
    c.failures / nullif(t.failed, 0) AS top_share,
    coalesce(t.failed >= 5 AND c.failures / t.failed >= 0.8, false) AS suspect
FROM totals AS t
LEFT JOIN top_check AS c
    ON t.task = c.task AND t.prompt_hash IS NOT DISTINCT FROM c.prompt_hash AND t.agent_runner = c.agent_runner AND t.agent_model IS NOT DISTINCT FROM c.agent_model
LEFT JOIN top_detail AS d
    ON t.task = d.task AND t.prompt_hash IS NOT DISTINCT FROM d.prompt_hash AND t.agent_runner = d.agent_runner AND t.agent_model IS NOT DISTINCT FROM d.agent_model
ORDER BY t.task, t.prompt_hash, t.agent_runner, t.agent_model
