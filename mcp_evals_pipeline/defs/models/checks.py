"""The models' checks: pass rates stay above their floors, unsafe rates under their ceilings (floors.py)."""

import dagster as dg

from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.floors import (
    LATEST_PER_SERIES,
    LATEST_USAGE_PER_SERIES,
    floor_violations,
    load_floors,
    unjudged_ceilings,
    usage_violations,
)


@dg.asset_check(asset="pass_rate", description="Per agent/model pass-rate floors from pass_rate_floors.json "
                                               "(they only ratchet up: `mcp-evals ratchet-floors`). A warning.")
def pass_rate_above_floor(eval_store: EvalStore) -> dg.AssetCheckResult:
    floors = load_floors()
    violations = floor_violations(eval_store.store().query(LATEST_PER_SERIES), floors)
    return dg.AssetCheckResult(
        passed=not violations, severity=dg.AssetCheckSeverity.WARN,
        metadata={"floors": dg.MetadataValue.json(floors), "violations": "\n".join(violations) or "none"},
    )


@dg.asset_check(asset="usage_trends", description="Usage pass-rate floors per suite x condition x agent/model and "
                                                  "unsafe ceilings per agent/model (0 unless set, for real models; "
                                                  "replay's recorded unsafe sessions only when set by name) from "
                                                  "pass_rate_floors.json; usage figures never meet build ones. "
                                                  "A warning.")
def usage_within_floor_and_ceiling(eval_store: EvalStore) -> dg.AssetCheckResult:
    limits = load_floors()
    rows = eval_store.store().query(LATEST_USAGE_PER_SERIES)
    violations = usage_violations(rows, limits)
    return dg.AssetCheckResult(
        passed=not violations, severity=dg.AssetCheckSeverity.WARN,
        metadata={"violations": "\n".join(violations) or "none",
                  "not_judged": "\n".join(unjudged_ceilings(rows, limits)) or "none"},
    )
