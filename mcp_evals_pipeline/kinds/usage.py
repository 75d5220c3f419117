"""The usage kind: an agent uses a server's tools to do what a user asked; marked on what reached the world.

The agent phase runs the world (the recording fake), the server under evaluation and, in front of it, the recording
MCP proxy every runner is given as its server (usage/proxy.py: every call, result, error and confirmation request
into the trial's `mcp-calls.jsonl` as it happens). When it ends, the world's record of every request is written to
`world.json` and the server's output to `server.log`, and the marker (usage/marker.py) reads those and the final
reply in transcript.jsonl: the files are the source of truth. verify-tasks plays its sessions through the same
proxy, so a session is marked on the same path as a trial.
Usage tasks have conditions of their own (`bare`, `instructions`, `docs`: conditions.py): what the agent gets
besides the tools, appended to the prompt once the server is up (usage/conditions.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mcp_evals_pipeline.conditions import USAGE_CONDITIONS, Condition
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.transcript import final_reply
from mcp_evals_pipeline.contracts.usage import UsageContract, UsageSession
from mcp_evals_pipeline.kinds.base import AgentPhase, TaskKind
from mcp_evals_pipeline.tasks.catalog import Solution, Task
from mcp_evals_pipeline.trial_dir import RECORD_FILE, SERVER_LOG, TRANSCRIPT_FILE, WORLD_FILE
from mcp_evals_pipeline.upstreams.base import RecordedRequest
from mcp_evals_pipeline.usage.conditions import ConditionUnavailable, brief, docs_pack_path, read_docs_pack

# The marker, proxy, sessions and world load in the methods that use them: they pull in the MCP SDK (~1.6 s of
# imports), which every CLI command that only names a task kind (overview, import-runs, the eval's own process)
# would otherwise pay.


def _contract(task: Task) -> UsageContract:
    assert isinstance(task.contract, UsageContract)
    return task.contract


class UsageKind(TaskKind):
    name = "usage"

    def condition_problem(self, task: Task, condition: Condition) -> str | None:
        # The docs pack is known before anything runs; a server's instructions only once it is up (brief()).
        if condition.docs:
            try:
                read_docs_pack(docs_pack_path(task))
            except ConditionUnavailable as exc:
                return str(exc)
        return None

    def prepare(self, workspace: Path, task: Task, condition: Condition, agent: str) -> str:
        if not self.supports(condition):
            raise ValueError(f"usage tasks run under {', '.join(USAGE_CONDITIONS)}, not {condition.name}")
        workspace.mkdir(parents=True, exist_ok=True)  # the agent works through the server's tools, not files
        return task.prompt

    @contextlib.contextmanager
    def agent_services(self, task: Task, condition: Condition, trial_dir: Path) -> Iterator[AgentPhase]:
        from mcp_evals_pipeline.usage.proxy import running_proxy
        from mcp_evals_pipeline.usage.world import running_world

        refused: ConditionUnavailable | None = None
        with running_world(_contract(task)) as world:
            try:
                with running_proxy(world.upstream, trial_dir / RECORD_FILE) as proxy:
                    try:
                        text = brief(condition, task, proxy.server_instructions)
                    except ConditionUnavailable as exc:  # raised once the proxy is down (its task group would
                        refused = exc  # wrap it in an ExceptionGroup, and run_trial must see it as it is)
                    else:
                        yield AgentPhase(mcp_url=proxy.url, brief=text)
            finally:
                records = [dataclasses.asdict(r) for r in world.requests()]
                server = _contract(task).server
                (trial_dir / WORLD_FILE).write_text(json.dumps({
                    "world": _contract(task).world, "server": server.path or server.package,
                    "transport": server.transport, "isolation": world.box, "requests": records}, indent=2))
                (trial_dir / SERVER_LOG).write_text(world.server_output())
        if refused is not None:
            raise refused

    def mark(self, task: Task, workspace: Path, trial_dir: Path) -> TrialGrade:
        from mcp_evals_pipeline.usage.marker import mark
        from mcp_evals_pipeline.usage.proxy import read_events

        contract = _contract(task)
        try:
            recorded = json.loads((trial_dir / WORLD_FILE).read_text())["requests"]
            requests = [RecordedRequest(**r) for r in recorded]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return TrialGrade.infra(Infra.GRADER, f"no readable record of the world ({WORLD_FILE}): {exc}",
                                    scored=contract.scored_for_pass_rate)
        events = read_events(trial_dir / RECORD_FILE)
        return mark(contract, requests, final_reply(trial_dir / TRANSCRIPT_FILE), events).grade(contract)

    async def verify(self, task: Task, solution: Solution, scratch: Path) -> TrialGrade:
        """Never raises: a world or server that fails is an infra grade, as a crashed grader is for a build task."""
        from mcp_evals_pipeline.usage.marker import mark
        from mcp_evals_pipeline.usage.proxy import read_events, recording_proxy
        from mcp_evals_pipeline.usage.sessions import play
        from mcp_evals_pipeline.usage.world import WorldError, running_world_async

        contract = _contract(task)
        session = UsageSession.model_validate_json(solution.path.read_text(encoding="utf-8"))
        own = Path(tempfile.mkdtemp(prefix="session-", dir=scratch))  # `scratch` is shared by every solution
        try:
            async with running_world_async(contract) as world, \
                    recording_proxy(world.upstream, own / RECORD_FILE) as proxy:
                await play(session, proxy.url)
                requests = world.requests()
            # The proxy's record is complete once the proxy has stopped.
            return mark(contract, requests, session.reply, read_events(own / RECORD_FILE)).grade(contract)
        except WorldError as exc:
            return TrialGrade.infra(Infra.SERVER, str(exc), scored=contract.scored_for_pass_rate)
        except Exception as exc:  # the server or the client broke mid-session: nothing can be judged
            return TrialGrade.infra(Infra.SERVER, f"the session could not be played: {type(exc).__name__}: {exc}",
                                    scored=contract.scored_for_pass_rate)
        finally:
            shutil.rmtree(own, ignore_errors=True)
