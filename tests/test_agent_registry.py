"""The agent registry (agents/registry.py) is the one list of agents: the CLI's help, the Dagster trial config,
get_runner, the pins and the credential check all read it."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from mcp_evals_pipeline.agents import RUNNERS, MissingCredentials, UnknownRunner, get_runner
from mcp_evals_pipeline.agents.cli_runner import CliAgentRunner
from mcp_evals_pipeline.agents.cli_tools import CLI_PINS
from mcp_evals_pipeline.agents.registry import AGENTS, DEFAULT_AGENT, agent_entry, agents_help
from mcp_evals_pipeline.cli import eval_cmd
from mcp_evals_pipeline.defs.trials.assets import TrialConfig
from mcp_evals_pipeline.defs.trials.schedules import BASELINE_AGENT
from mcp_evals_pipeline.models import AGENT_PINS
from mcp_evals_pipeline.trial_options import TrialOptions

NAMES = list(AGENTS)
KEY_VARIABLES = sorted({name for pin in AGENT_PINS.values() for name in pin.key_env})


def _agent_option() -> click.Option:
    return next(p for p in eval_cmd.params if isinstance(p, click.Option) and p.name == "agent")


def test_the_cli_offers_exactly_the_registered_agents() -> None:
    option = _agent_option()
    assert option.help is not None and option.help.split(" | ") == NAMES
    assert option.default == DEFAULT_AGENT
    shown = CliRunner().invoke(eval_cmd, ["--help"], terminal_width=400)  # not `main`: it loads .env
    assert shown.exit_code == 0 and " | ".join(NAMES) in shown.output


def test_the_dagster_config_describes_and_checks_the_agent_by_the_registry() -> None:
    field = TrialConfig.model_fields["agent"]
    assert field.description is not None and field.description.endswith(agents_help())
    assert field.default == DEFAULT_AGENT == TrialOptions.model_fields["agent"].default
    for name in NAMES:
        assert TrialConfig(agent=name).agent == name
    with pytest.raises(ValidationError, match=re.escape(f"unknown agent runner 'nope' (available: "
                                                        f"{', '.join(sorted(NAMES))})")):
        TrialConfig(agent="nope")


def test_get_runner_of_every_registered_name_gives_its_class() -> None:
    assert {name: entry.runner for name, entry in AGENTS.items()} == RUNNERS
    for name, entry in AGENTS.items():
        runner = get_runner(name)
        assert type(runner) is entry.runner and runner.name == name
        assert entry.pin is AGENT_PINS[name] and runner.pin is entry.pin


def test_an_unknown_name_s_error_lists_the_registered_names() -> None:
    with pytest.raises(UnknownRunner) as caught:
        get_runner("nope")
    assert str(caught.value) == f"unknown agent runner 'nope' (available: {', '.join(sorted(NAMES))})"
    with pytest.raises(UnknownRunner):
        agent_entry("nope")


def test_pins_cli_pins_and_the_baseline_name_registered_agents() -> None:
    assert set(AGENT_PINS) == set(AGENTS)
    assert set(CLI_PINS) <= set(AGENTS)
    assert all(issubclass(AGENTS[name].runner, CliAgentRunner) for name in CLI_PINS)
    assert BASELINE_AGENT in AGENTS
    assert all(entry.description and "\n" not in entry.description for entry in AGENTS.values())


@pytest.mark.parametrize("name", NAMES)
def test_the_credential_check_names_exactly_the_pin_s_key_variables(name: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in KEY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    key_env = AGENT_PINS[name].key_env
    runner = get_runner(name)
    if not key_env:
        runner.check_credentials(None)  # a keyless agent has nothing to check
        return
    with pytest.raises(MissingCredentials) as caught:
        runner.check_credentials(None)
    named = {variable for variable in KEY_VARIABLES if re.search(rf"\b{variable}\b", str(caught.value))}
    assert named == set(key_env), str(caught.value)
    for variable in key_env:  # any one of them will do
        monkeypatch.setenv(variable, "test-key")
        runner.check_credentials(None)
        monkeypatch.delenv(variable)


def test_every_cli_runner_configures_a_usage_tasks_server() -> None:
    """The base's hook for usage tasks (CliAgentRunner.mcp_config) is empty; every CLI runner fills it (what each
    configures is proven end to end by the usage tests of test_codex_agent.py and test_claude_agent.py)."""
    for name in CLI_PINS:
        runner = get_runner(name)
        assert isinstance(runner, CliAgentRunner)
        assert type(runner).mcp_config is not CliAgentRunner.mcp_config, name
