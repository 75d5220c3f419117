"""The agent seam: every runner takes an AgentRequest, works in the sandbox, writes transcript.jsonl and returns
an AgentResult with its TrialPerf. Runners never grade and never touch the store."""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict

from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.records import TrialPerf
from mcp_evals_pipeline.contracts.transcript import EventType, TranscriptEvent
from mcp_evals_pipeline.models import AGENT_PINS, AgentPin
from mcp_evals_pipeline.sandbox.base import Sandbox
from mcp_evals_pipeline.trial_options import AgentOptions


class MissingCredentials(Exception):
    """A live run needs a key that is not set: raised before any sandbox is prepared, naming the variable."""


class TranscriptWriter:
    """Appends TranscriptEvents to transcript.jsonl as they happen (a crash keeps what came before it)."""

    def __init__(self, path: Path):
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._seq = 0
        self._started = time.monotonic()

    def emit(self, type: EventType, **fields: Any) -> TranscriptEvent:
        self._seq += 1
        event = TranscriptEvent(seq=self._seq, t_ms=int((time.monotonic() - self._started) * 1000), type=type,
                                **fields)
        self._file.write(json.dumps(event.model_dump(mode="json", exclude_none=True)) + "\n")
        self._file.flush()
        return event

    def close(self) -> None:
        self._file.close()


class AgentRequest(AgentOptions):
    """What a runner gets: the trial's agent options (trial_options.py; `options` carries runner-specific settings,
    e.g. the replay session to play, an endpoint, without widening the interface) and the prompt, the sandbox and
    the transcript."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task_id: str
    prompt: str
    sandbox: Sandbox
    transcript: TranscriptWriter
    max_turns: int = 60
    trial: int = 1
    condition: str = "noskill+blank"
    # A usage task's server under evaluation (its MCP endpoint): the agent's only tools. None for a build task.
    mcp_url: str | None = None


@dataclass
class AgentResult:
    perf: TrialPerf
    # Set when the harness, not the agent, failed: "infra.agent" (runner crash, no model turn at all),
    # "infra.model_api" (the model endpoint failed after bounded retries), "infra.sandbox" (the sandbox broke
    # under the agent). The trial is then invalid. The zero-token rule is the runner's to apply: a replayed
    # session has no model and reports unknown (None) tokens, which is not "no model turn".
    infra_reason: Infra | None = None
    error: str | None = None
    # The agent ran out of its own turn or time budget: a valid trial, graded as it stands.
    budget_exhausted: bool = False
    model: str | None = None  # what actually answered, when the endpoint says
    # The failure would repeat identically on another attempt (a missing key or session, a request the endpoint
    # refused as such): the trial is recorded as not retryable, and Dagster does not spend a retry on it.
    permanent: bool = False


class AgentRunner(ABC):
    name: ClassVar[str]
    # What the key is for, in the missing-key message: "... is not set: the <name> agent needs a key for <key_for>".
    key_for: ClassVar[str] = "its model endpoint"
    # Where the agent looks for project skills (a skill condition's skill is copied there); None: a neutral folder
    # the prompt names (conditions.DEFAULT_SKILL_FOLDER).
    skill_folder: ClassVar[str | None] = None

    @property
    def pin(self) -> AgentPin:
        """The runner's pin (models.AGENT_PINS: model, reasoning effort, key variables), by its registered name."""
        return AGENT_PINS[self.name]

    def find_key(self, options: dict[str, Any] | None = None) -> tuple[str, str] | None:
        """(variable, value) of the key a live run uses: `options["api_key"]` (tests) under the pin's first
        variable, else the first of the pin's key variables that is set, in the pin's order."""
        key_env = self.pin.key_env
        if options and options.get("api_key") and key_env:
            return key_env[0], str(options["api_key"])
        for name in key_env:
            value = os.environ.get(name)
            if value:
                return name, value
        return None

    def missing_key(self) -> str:
        """What is not set, naming every variable that would do."""
        return f"{' or '.join(self.pin.key_env)} is not set"

    def check_credentials(self, model: str | None) -> None:
        """Raise MissingCredentials naming the variables when a live run could not start: none of the pin's key
        variables is set. A pin without key variables (replay) has nothing to check."""
        if self.pin.key_env and self.find_key() is None:
            raise MissingCredentials(f"{self.missing_key()}: the {self.name} agent needs a key for {self.key_for}")

    @abstractmethod
    def run(self, request: AgentRequest) -> AgentResult:
        """Work in request.sandbox until done or out of budget. Must not raise for anything the agent or the
        model does; an unexpected exception is treated by the caller as infra.agent."""
