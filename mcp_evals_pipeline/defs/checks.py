"""Asset checks: the store agrees with what Dagster materialized; pass rates stay above their floors."""


import json
from collections.abc import Iterable

import dagster as dg

from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.paths import pass_rate_floors_path


def _latest_per_partition(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, dict[str, object]]:
    """Metadata of the newest materialization of every partition (pages through the event log)."""
    latest: dict[str, dict[str, object]] = {}
    cursor = None
    while True:
        page = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1000, cursor=cursor)
        for record in page.records:
            mat = record.asset_materialization
            if mat is not None and mat.partition and mat.partition not in latest:
                latest[mat.partition] = {k: v.value for k, v in mat.metadata.items()}
        if not page.has_more:
            return latest
        cursor = page.cursor


@dg.asset_check(asset="trial", description="Every materialized trial partition has exactly one current row in "
                                           "DuckDB, and it is the attempt its newest materialization wrote.")
def trial_rows_are_current(context: dg.AssetCheckExecutionContext, eval_store: EvalStore) -> dg.AssetCheckResult:
    latest = _latest_per_partition(context.instance, dg.AssetKey("trial"))
    rows = eval_store.store().query("SELECT slot, attempt FROM trial_attempts WHERE is_current")
    current: dict[str, list[int]] = {}
    for row in rows:
        current.setdefault(str(row["slot"]), []).append(int(row["attempt"]))  # type: ignore[arg-type]
    problems = []
    for partition, meta in sorted(latest.items()):
        attempts = current.get(str(meta.get("slot")), [])
        if attempts != [meta.get("attempt")]:
            problems.append(f"{partition}: current attempts {attempts}, materialized attempt {meta.get('attempt')}")
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"partitions_checked": len(latest), "problems": dg.MetadataValue.md(
            "\n".join(f"- {p}" for p in problems[:50]) or "none")},
    )


def load_floors() -> dict[str, float]:
    path = pass_rate_floors_path()
    return json.loads(path.read_text()) if path.exists() else {}


def series_name(agent_runner: object, agent_model: object) -> str:
    """How floors name an agent/model series: `codex/gpt-5.6-terra`, or `replay` when no model ran."""
    return f"{agent_runner}/{agent_model}" if agent_model else str(agent_runner)


def floor_violations(rows: Iterable[dict[str, object]], floors: dict[str, float]) -> list[str]:
    out = []
    for row in rows:
        series = series_name(row["agent_runner"], row["agent_model"])
        floor = floors.get(series)
        if floor is not None and row["pass_rate"] is not None and float(row["pass_rate"]) < floor:  # type: ignore[arg-type]
            out.append(f"{series}: {float(row['pass_rate']):.1%} in {row['run_id']} is below the floor {floor:.1%}")  # type: ignore[arg-type]
    return out


LATEST_PER_SERIES = """
SELECT run_id, agent_runner, agent_model, pass_rate, wilson_low FROM pass_rate WHERE condition = '*'
QUALIFY row_number() OVER (PARTITION BY agent_runner, agent_model ORDER BY batch_date DESC, run_id DESC) = 1
"""


@dg.asset_check(asset="pass_rate", description="Per agent/model pass-rate floors from pass_rate_floors.json "
                                               "(they only ratchet up: `mcp-evals ratchet-floors`). A warning.")
def pass_rate_above_floor(eval_store: EvalStore) -> dg.AssetCheckResult:
    floors = load_floors()
    violations = floor_violations(eval_store.store().query(LATEST_PER_SERIES), floors)
    return dg.AssetCheckResult(
        passed=not violations, severity=dg.AssetCheckSeverity.WARN,
        metadata={"floors": dg.MetadataValue.json(floors), "violations": "\n".join(violations) or "none"},
    )


# Usage figures have floors and ceilings of their own, keyed so that a usage figure never meets a build one:
# `usage/<suite>/<condition>/<agent>[/<model>]` for the pass rate (ratcheted like the build floors) and
# `unsafe-ceiling/<agent>[/<model>]` for the unsafe rate (0 unless a key says otherwise: any unsafe trial warns).
LATEST_USAGE_PER_SERIES = """
SELECT suite, condition, agent_runner, agent_model, batch_id, pass_rate, pass_wilson_low, unsafe_rate, unsafe,
       valid_scored
FROM usage_trends WHERE condition <> '*' AND valid_scored > 0
QUALIFY row_number() OVER (PARTITION BY suite, condition, agent_runner, agent_model
                           ORDER BY batch_date DESC, batch_id DESC) = 1
"""


def usage_series_name(suite: object, condition: object, agent_runner: object, agent_model: object) -> str:
    return f"usage/{suite}/{condition}/{series_name(agent_runner, agent_model)}"


def unsafe_ceiling_name(agent_runner: object, agent_model: object) -> str:
    return f"unsafe-ceiling/{series_name(agent_runner, agent_model)}"


def usage_violations(rows: Iterable[dict[str, object]], limits: dict[str, float]) -> list[str]:
    """A usage series below its pass-rate floor, or above its model's unsafe ceiling (0 by default)."""
    out = []
    for row in rows:
        series = usage_series_name(row["suite"], row["condition"], row["agent_runner"], row["agent_model"])
        floor = limits.get(series)
        rate = float(row["pass_rate"]) if row["pass_rate"] is not None else None  # type: ignore[arg-type]
        if floor is not None and rate is not None and rate < floor:
            out.append(f"{series}: pass {rate:.1%} in batch {row['batch_id']} is below the floor {floor:.1%}")
        ceiling = limits.get(unsafe_ceiling_name(row["agent_runner"], row["agent_model"]), 0.0)
        unsafe = float(row["unsafe_rate"] or 0.0)  # type: ignore[arg-type]
        if unsafe > ceiling:
            out.append(f"{series}: unsafe {unsafe:.1%} ({row['unsafe']} of {row['valid_scored']}) in batch "
                       f"{row['batch_id']} is above the ceiling {ceiling:.1%}")
    return out


@dg.asset_check(asset="usage_trends", description="Usage pass-rate floors per suite x condition x agent/model and "
                                                  "unsafe ceilings per agent/model (0 unless set) from "
                                                  "pass_rate_floors.json; usage figures never meet build ones. "
                                                  "A warning.")
def usage_within_floor_and_ceiling(eval_store: EvalStore) -> dg.AssetCheckResult:
    limits = load_floors()
    violations = usage_violations(eval_store.store().query(LATEST_USAGE_PER_SERIES), limits)
    return dg.AssetCheckResult(
        passed=not violations, severity=dg.AssetCheckSeverity.WARN,
        metadata={"violations": "\n".join(violations) or "none"},
    )
