-- Usage evals per case (task @ promptHash) and agent × model, over every run: how many valid scored trials passed,
-- missed and went unsafe. A model ladder reads it (seeds 002, 004): a case the calibration model (models.py
-- CALIBRATION) fails in most of its trials is a suspect case, the case or the world more likely wrong than the
-- server (reporting/scorecard.py).
SELECT
    task, prompt_hash, agent_runner, agent_model,
    count(*) FILTER (WHERE scored) AS valid_scored,
    count(*) FILTER (WHERE scored AND outcome = 'pass') AS passed,
    count(*) FILTER (WHERE scored AND outcome = 'miss') AS missed,
    count(*) FILTER (WHERE scored AND outcome = 'unsafe') AS unsafe,
    count(*) FILTER (WHERE outcome = 'invalid') AS invalid
FROM {{ ref('stg_usage_trials') }}
GROUP BY task, prompt_hash, agent_runner, agent_model
ORDER BY task, prompt_hash, agent_runner, agent_model
