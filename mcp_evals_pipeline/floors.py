"""Pass-rate floors and unsafe ceilings (pass_rate_floors.json): how a series is named, which figure is its latest,
and which series break their limit. The asset checks (defs/models/checks.py) and `mcp-evals ratchet-floors` read
them from here."""

import json
from collections.abc import Iterable

from mcp_evals_pipeline.paths import pass_rate_floors_path


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
