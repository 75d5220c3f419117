"""The options of a trial, one field set for every layer that carries them: the Dagster run config
(`TrialConfig`), one trial (`TrialSpec`), a batch (`BatchRequest`) and, for the fields a runner reads, the agent's
request (`AgentRequest`, which adds the prompt, the sandbox and the transcript).

`skip_judge` defaults to True everywhere: the judge memo costs a model call per trial and never moves a number, so
a default that calls a paid model whenever a key happens to be in the environment would be a surprise. The two
entry points that want memos say so: `mcp-evals eval` (its `--skip-judge` flag turns them off) and the baseline
schedule. Without a key the memo says it was skipped and why.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class AgentOptions(BaseModel):
    """What a runner reads of a trial's options."""

    model: str | None = Field(default=None, description="Override the agent's pinned model")
    reasoning_effort: str | None = Field(default=None, description="Override the agent's pinned reasoning effort")
    time_budget_s: float = Field(default=1200.0, description="The agent's wall-clock budget, in seconds")
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="Runner options, e.g. session=<file> (replay), max_retries=2")


class TrialOptions(AgentOptions):
    """Everything a trial is run with besides which trial it is."""

    # The names are agents/registry.py's (which imports the runners, which import this module: not read here);
    # the Dagster config (TrialConfig) and the CLI list and check them. The default is the registry's
    # DEFAULT_AGENT (tests/test_agent_registry.py holds the two together).
    agent: str = Field(default="replay", description="The agent runner, by its name in agents/registry.py")
    batch_id: str | None = Field(default=None, description="Group id of the batch (default: the batch date)")
    skip_judge: bool = Field(default=True, description="Write no judge memo (unscored; needs OPENAI_API_KEY)")
    sandbox: str | None = Field(default=None,
                                description="The agent's box: hardened | docker | local (local only by name, recorded "
                                            "as UNBOXED; default MCP_EVALS_SANDBOX, else hardened: sandbox/choice.py)")
    require_isolation: str | None = Field(default=None, description="Refuse unless the host provides: hardened")

    def trial_options(self) -> dict[str, Any]:
        """The shared fields and their values, to hand to the next layer."""
        return {name: getattr(self, name) for name in TrialOptions.model_fields}
