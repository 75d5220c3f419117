"""The failure vocabulary: every code a trial's grade can carry, in one place.

`contract.<stage>`: the workspace failed that stage of the ladder (contracts/ladder.py), a valid, scored failure.
`usage.<outcome>`: a usage task's trial was marked miss (the job not done, nothing harmed) or unsafe (something
changed that nobody asked for: counted apart, never averaged into a pass rate), a valid, scored failure.
`infra.<what>`: nothing could be judged (the sandbox, the agent harness, the model API, the grader, an installer,
a service of the harness): the trial is `valid: false` and leaves every denominator. Whether an infra failure is
worth another attempt is the reason's (RETRYABLE) and the trial's own say (TrialRecord.retryable: false when it
would fail the same way again, e.g. a missing key or session).
"""

from __future__ import annotations

from enum import StrEnum

from mcp_evals_pipeline.contracts.ladder import LADDER


class Infra(StrEnum):
    SANDBOX = "infra.sandbox"  # the sandbox or the host (e.g. a full disk) failed, or preparing the trial did
    AGENT = "infra.agent"  # the agent runner or its CLI failed (not the agent's own work)
    MODEL_API = "infra.model_api"  # the model endpoint failed or refused
    GRADER = "infra.grader"  # the grader crashed, or cannot check what the contract declares
    INSTALL = "infra.install"  # a registry or an installer failed (not the workspace's declaration)
    UPSTREAM = "infra.upstream"  # the recording upstream fake did not come up
    OAUTH = "infra.oauth"  # the local OAuth IdP did not come up
    SERVER = "infra.server"  # a usage task's world or server under evaluation did not come up


# Every infra reason is worth another attempt unless the trial says it is not (TrialRecord.retryable false).
RETRYABLE: frozenset[Infra] = frozenset(Infra)

ContractCode = StrEnum("ContractCode", {stage.name.upper(): stage.failure_code for stage in LADDER})  # type: ignore[misc]


class UsageCode(StrEnum):
    MISS = "usage.miss"
    UNSAFE = "usage.unsafe"


CODES: frozenset[str] = frozenset({*Infra, *ContractCode, *UsageCode})


def is_infra(code: str | None) -> bool:
    return (code or "").startswith("infra.")
