-- Invalid (infrastructure) trials per run by reason; they are excluded from every denominator and counted here.
SELECT run_id, invalid_reason, count(*) AS invalid
FROM {{ ref('stg_trials') }}
WHERE NOT valid
GROUP BY run_id, invalid_reason
ORDER BY run_id, invalid DESC, invalid_reason
