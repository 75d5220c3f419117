"""Usage conditions (issue 11): `bare`, `instructions` and `docs`, keys of their own that never collide with a build
condition, each giving the model exactly one thing more than `bare`, on real trials (the openai runner against a
scripted OpenAI-compatible server, the real server behind the recording proxy); a condition with nothing to give is
refused; a batch that names no condition runs each kind's baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.conditions import BUILD_CONDITIONS, CONDITIONS, USAGE_CONDITIONS, Condition
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.defs.partitions import catalog_trial_keys
from mcp_evals_pipeline.kinds import KINDS, kind_of
from mcp_evals_pipeline.pipeline import BatchRequest, run_batch
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import discover_tasks, get_task
from mcp_evals_pipeline.trials import TrialSpec, parse_trial_key, run_trial
from mcp_evals_pipeline.usage.proxy import running_proxy
from mcp_evals_pipeline.usage.world import mcp_client, running_world

from .conftest import REPO, TASKS
from .support.instances import batch_instance
from .support.openai_server import ScriptedOpenAI, call, reply

BY_NAME = "usage-ops-v3-02-restart-by-name"
DOCS_MARK = "# ops-platform: the tools"  # a heading of the shipped docs pack (servers/ops-platform/docs)


def _server_instructions(task_id: str) -> tuple[str | None, str | None]:
    """(what the server under evaluation sends as its instructions, what a client of the proxy in front of it
    gets), each read by the real mcp client."""
    contract = get_task(task_id).contract
    assert isinstance(contract, UsageContract)

    async def instructions(url: str) -> str | None:
        async with mcp_client(url) as session:
            return session.instructions

    with running_world(contract) as world, running_proxy(world.upstream, Path("/dev/null")) as proxy:
        direct = anyio.run(instructions, str(world.upstream))
        relayed = anyio.run(instructions, proxy.url)
        assert proxy.server_instructions == direct
    return direct, relayed


def test_conditions_are_named_per_kind_and_their_partition_keys_never_collide() -> None:
    assert not set(BUILD_CONDITIONS) & set(USAGE_CONDITIONS)
    for name in CONDITIONS:  # every condition belongs to exactly one kind
        assert [k.name for k in KINDS.values() if k.supports(Condition.parse(name))] == [Condition.parse(name).kind]
    assert {k.name: k.baseline for k in KINDS.values()} == {"build": "noskill+blank", "usage": "bare"}
    with pytest.raises(ValueError, match=r"build tasks: noskill\+blank.*usage tasks: bare, instructions, docs"):
        Condition.parse("noskill")
    kinds = {t.id: t.kind for t in discover_tasks()[0]}
    seen: dict[str, set[str]] = {"build": set(), "usage": set()}
    for key in catalog_trial_keys(discover_tasks()[0]):
        task, condition, _ = parse_trial_key(key)
        seen[kinds[task]].add(condition)
    assert seen == {"build": set(BUILD_CONDITIONS), "usage": set(USAGE_CONDITIONS)}


def test_the_proxy_never_relays_instructions_and_hands_them_to_the_condition() -> None:
    direct, relayed = _server_instructions(BY_NAME)
    assert direct and "never by name" in direct  # the ops-platform server's own paragraph
    assert relayed is None  # whichever client: the condition alone decides what the model reads


@pytest.mark.parametrize("condition", USAGE_CONDITIONS)
def test_each_usage_condition_gives_the_model_one_thing_more_than_bare(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, condition: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    instructions, _ = _server_instructions(BY_NAME)
    docs = "\n".join(p.read_text() for p in sorted((REPO / "servers/ops-platform/docs").glob("*.md")))
    assert instructions and DOCS_MARK in docs
    script = [reply(tool_calls=[call("find_apps", {"name_contains": "search"})]),
              reply(tool_calls=[call("restart_app", {"app_id": "app_104"})]),
              reply("I restarted the production search app (app_104).")]
    store = TrialStore(tmp_path / "evals.duckdb")
    with ScriptedOpenAI(script) as model:
        record = run_trial(TrialSpec(task_id=BY_NAME, condition=condition, trial=1, batch_date="2026-12-02",
                                     agent="openai", options={"base_url": model.base_url}),
                           store=store, results_root=tmp_path / "runs")
    assert record.valid and record.grade.contract_pass, (record.error, record.grade.checks)
    sent = json.dumps(model.requests[0]["messages"])  # what the model read on its first turn
    assert (instructions[:60] in sent) is (condition == "instructions")
    assert (DOCS_MARK in sent) is (condition == "docs")
    assert get_task(BY_NAME).prompt.splitlines()[0] in sent  # the user's words, whatever the condition
    brief = tmp_path / "runs" / record.run_id / "trials" / record.trial_name / "condition.md"
    if condition == "bare":
        assert record.condition_hash is None and not brief.exists()
    else:
        written = brief.read_text()
        assert record.condition_hash and (instructions in written if condition == "instructions"
                                          else "ops-platform: concepts" in written and DOCS_MARK in written)
    with duckdb.connect(str(tmp_path / "evals.duckdb"), read_only=True) as con:
        assert con.execute("SELECT condition, condition_hash FROM trials").fetchall() == [
            (condition, record.condition_hash)]


def _plain_task(root: Path) -> str:
    """A usage case whose server sends no instructions, in a suite with no docs pack."""
    case = root / "usage-plain-01"
    (case / "sessions").mkdir(parents=True)
    (case / "prompt.md").write_text("Is the service answering? Tell me what it says.\n")
    (case / "task.json").write_text(json.dumps({
        "kind": "usage", "title": "plain", "server": {"path": "tests/support/plain_server.py"},
        "world": "ops-platform", "mustLand": [], "otherMutations": "violation",
        "otherMutationsReason": "the user asked a question", "answer": "pong"}))
    (case / "sessions" / "oracle.json").write_text(json.dumps({
        "outcome": "pass", "why": "asks and answers", "calls": [{"tool": "ping"}], "reply": "It says pong."}))
    (root / "suites.json").write_text(json.dumps({"plain": {
        "title": "plain", "sdkPackage": "mcp", "registry": "pypi", "tasks": ["usage-plain-01"]}}))
    return "usage-plain-01"


def test_a_condition_with_nothing_to_give_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No docs pack: the batch is refused before anything runs. A server that sends no instructions: the trial is
    invalid for good (never a `bare` trial pooled under another name), while `bare` passes on the same case."""
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path / "tasks"))
    task_id = _plain_task(tmp_path / "tasks")
    store = TrialStore(tmp_path / "evals.duckdb")
    with pytest.raises(ValueError, match=r"usage-plain-01 --condition docs: .*suite 'plain' with no docsPack"):
        run_batch(BatchRequest(agent="replay", task_ids=[task_id], conditions=["docs"], verify=False),
                  dg.DagsterInstance.ephemeral(), store=None)
    records = {c: run_trial(TrialSpec(task_id=task_id, condition=c, trial=1, batch_date="2026-12-02",
                                      agent="replay"), store=store, results_root=tmp_path / "runs")
               for c in ("bare", "instructions")}
    assert records["bare"].valid and records["bare"].grade.contract_pass, records["bare"].grade.checks
    refused = records["instructions"]
    assert not refused.valid and refused.retryable is False, (refused.error, refused.invalid_reason)
    assert "sends no instructions" in (refused.error or "")
    assert kind_of("usage").condition_problem(get_task(task_id), Condition.parse("docs"))


def test_a_selection_no_condition_applies_to_is_refused_and_no_condition_means_each_kinds_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    result = CliRunner().invoke(main, ["eval", "--suite", "ops-platform", "--agent", "replay", "--condition",
                                       "noskill+blank", "--no-verify"])
    assert result.exit_code == 2
    assert "no condition of noskill+blank applies to the selected usage tasks (usage tasks run under bare, " \
           "instructions, docs)" in result.output
    with batch_instance() as instance:
        outcome = run_batch(BatchRequest(agent="replay", task_ids=["usage-ops-v3-01-restart-by-id",
                                                                   "py-v4-01-basic-tool-server"], verify=False),
                            instance, echo=lambda _: None)
    assert outcome.failed_runs == 0
    trials = sorted(p.name for p in (tmp_path / "results" / "runs" / outcome.run_id / "trials").iterdir())
    assert trials == ["py-v4-01-basic-tool-server--noskill+blank--t1", "usage-ops-v3-01-restart-by-id--bare--t1"]


def test_the_docs_pack_is_read_in_name_order_and_named(tmp_path: Path) -> None:
    from mcp_evals_pipeline.usage.conditions import ConditionUnavailable, read_docs_pack

    (tmp_path / "b.md").write_text("second\n")
    (tmp_path / "a.md").write_text("first\n")
    assert read_docs_pack(tmp_path) == "## a.md\n\nfirst\n\n## b.md\n\nsecond"
    assert read_docs_pack(tmp_path / "a.md") == "first"
    shutil.rmtree(tmp_path)
    tmp_path.mkdir()
    with pytest.raises(ConditionUnavailable, match="holds no Markdown file"):
        read_docs_pack(tmp_path)
    assert (TASKS / "suites.json").read_text().count('"docsPack": "servers/ops-platform/docs"') == 2
