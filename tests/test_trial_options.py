"""One field set for a trial's options (trial_options.py), shared by every layer that carries them."""

from __future__ import annotations

from mcp_evals_pipeline.agents.base import AgentRequest
from mcp_evals_pipeline.defs.trials.assets import TrialConfig
from mcp_evals_pipeline.pipeline import BatchRequest
from mcp_evals_pipeline.trial_options import AgentOptions, TrialOptions
from mcp_evals_pipeline.trials import TrialSpec


def test_every_layer_carries_the_same_fields_with_the_same_defaults() -> None:
    shared = TrialOptions.model_fields
    for layer in (TrialConfig, TrialSpec, BatchRequest):
        fields = layer.model_fields
        assert shared.keys() <= fields.keys(), layer
        for name, field in shared.items():
            assert fields[name].get_default(call_default_factory=True) == field.get_default(
                call_default_factory=True), (layer, name)
    assert AgentOptions.model_fields.keys() <= AgentRequest.model_fields.keys()
    assert all(layer().skip_judge for layer in (TrialConfig, BatchRequest))  # one default: no judge unless asked


def test_a_batch_hands_its_options_to_each_trial_unchanged() -> None:
    batch = BatchRequest(agent="openai", model="m", reasoning_effort="low", time_budget_s=30.0, skip_judge=False,
                         options={"max_retries": "1"}, batch_id="b1", sandbox="hardened")
    spec = TrialSpec(task_id="v5-01-basic-tool-server", condition="noskill+blank", trial=2, batch_date="2026-12-01",
                     **batch.trial_options())
    assert spec.trial_options() == batch.trial_options()
    config = TrialConfig(**batch.trial_options())
    assert config.trial_options() == batch.trial_options()
