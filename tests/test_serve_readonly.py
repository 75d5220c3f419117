"""The read-only tools of `mcp-evals serve` (serve/readonly_tools.py), driven through a real `mcp` client session
(the SDK's in-memory transport, legacy handshake, JSON-RPC) against a server that registers them: the task
catalog over the checked-in tasks, and the results over a store built from the earlier harness's eight fixture runs
(the way tests/test_legacy_import.py builds one)."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from mcp_evals_pipeline.contracts.failures import CODES
from mcp_evals_pipeline.contracts.ladder import LADDER
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.legacy_import import import_runs
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.serve.readonly_tools import register
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import discover_tasks

from .conftest import write_task

FIXTURE_RUNS = Path(__file__).resolve().parent / "fixtures" / "legacy_runs"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A results root holding the eight fixture runs (imported: report.legacy.md each) with the models built, and
    one run's report.md rendered as the pipeline renders it; the environment points the tools at it."""
    root = tmp_path_factory.mktemp("results")
    store = TrialStore(root / "evals.duckdb")
    summary = import_runs(FIXTURE_RUNS, store, root / "runs")
    assert summary.errors == []
    rendered = summary.run_ids[0]
    with store.connect() as con:
        materialize_models(con)
        (root / "runs" / rendered / "report.md").write_text(render_report(rendered, con))
        batches = dict(con.execute("SELECT batch_id, count(DISTINCT run_id) FROM trials GROUP BY 1").fetchall())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_EVALS_RESULTS_DIR", str(root))
        patch.delenv("MCP_EVALS_DB", raising=False)
        yield {"root": root, "db": root / "evals.duckdb", "runs": summary.run_ids, "rendered": rendered,
               "batches": batches}


def _session(steps: Any) -> Any:
    """Run `steps(client)` on a fresh server registering the tools, over a real client session."""
    server = MCPServer("mcp-evals-readonly-test")
    register(server)

    async def main() -> Any:
        async with Client(server, mode="legacy") as client:
            return await steps(client)

    return anyio.run(main)


async def _call(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(tool, args or {})
    return result


def _refused(result: Any) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def test_catalog_tools_schema_and_task_resource(results: dict[str, Any]) -> None:
    async def steps(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": {t.name: t for t in (await client.list_tools()).tools}}
        for name, args in [("describe", ("describe_task_schema", {})),
                           ("all", ("list_tasks", {})),
                           ("usage_qa", ("list_tasks", {"suite": "ops-platform-qa", "kind": "usage"})),
                           ("node", ("list_tasks", {"kind": "build", "runtime": "node"})),
                           ("suite_typo", ("list_tasks", {"suite": "mcp-pythn"})),
                           ("kind_bad", ("list_tasks", {"kind": "nope"})),
                           ("task", ("get_task", {"task_id": "v5-01-basic-tool-server"})),
                           ("typo", ("get_task", {"task_id": "v5-01-basic-tool-servr"})),
                           ("escape", ("get_task", {"task_id": "../tasks/v5-01-basic-tool-server"}))]:
            out[name] = await _call(client, *args)
        out["resource"] = (await client.read_resource("task://v5-01-basic-tool-server")).contents[0].text
        for uri in ("task://..%2F..%2Fetc", "task://.hidden", "task://v5-01-basic-tool-servr"):
            with pytest.raises(Exception) as refused:
                await client.read_resource(uri)
            out[uri] = str(refused.value)
        return out

    got = _session(steps)
    tools = got["tools"]
    assert set(tools) == {"describe_task_schema", "list_tasks", "get_task", "export_tasks", "query_results",
                          "get_scorecard", "get_trends"}
    assert tools["query_results"].annotations.read_only_hint and not tools["export_tasks"].annotations.read_only_hint
    # The schemas are the contracts' own: get_task's output holds TaskContract's and UsageContract's fields
    # (camelCase, as on disk) and list_tasks takes exactly the kinds and runtimes the contracts know.
    out_schema = json.dumps(tools["get_task"].output_schema)
    assert '"entryCandidates"' in out_schema and '"mustLand"' in out_schema
    props = tools["list_tasks"].input_schema["properties"]
    assert {"build", "usage"} <= set(json.dumps(props["kind"]).replace('"', " ").split())
    assert '"node"' in json.dumps(props["runtime"])

    schema = got["describe"].structured_content
    kinds = {k["kind"]: k for k in schema["kinds"]}
    assert set(kinds) == {"build", "usage"}
    paths = {f["path"]: f for f in kinds["build"]["fields"]}
    assert paths["entryCandidates"]["required"] and paths["entryCandidates"]["type"] == "array of string"
    assert "expectedTools[].forms[].expect[].ifPresent" in paths
    for kind in kinds.values():  # every field of a contract says what it means
        assert [f["path"] for f in kind["fields"] if "." not in f["path"] and not f["description"]] == []
    assert "Regexes some source file must match" in paths["requiredSourcePatterns"]["description"]
    assert "mustLand[].method" in {f["path"] for f in kinds["usage"]["fields"]}
    TaskContract.model_validate(kinds["build"]["example"])  # the examples are real tasks' contracts, valid
    UsageContract.model_validate(kinds["usage"]["example"])
    assert [s["stage"] for s in schema["ladder"]] == [s.name for s in LADDER]
    assert schema["ladder"][0]["failureCode"] == "contract.install"
    assert {c["code"] for c in schema["failureCodes"]} == set(CODES)
    assert all(c["meaning"] for c in schema["failureCodes"])
    rules = " ".join(schema["authoringRules"])
    assert "One property per requirement" in rules and "violated by a negative" in rules
    assert "never announces the test" in rules

    tasks, _ = discover_tasks()
    assert got["all"].structured_content["count"] == len(tasks)
    qa = got["usage_qa"].structured_content["tasks"]
    assert qa and all(t["kind"] == "usage" and t["suite"] == "ops-platform-qa" for t in qa)
    node = got["node"].structured_content["tasks"]
    assert node and all(t["runtime"] == "node" and t["kind"] == "build" for t in node)
    assert "did you mean mcp-python?" in _refused(got["suite_typo"])
    assert got["kind_bad"].is_error  # the kind is an enum of the input schema: refused before the tool runs

    task = got["task"].structured_content
    assert task["prompt"] == (Path("tasks") / "v5-01-basic-tool-server" / "prompt.md").read_text()
    assert task["contract"]["kind"] == "build" and task["contractPath"] == "tasks/v5-01-basic-tool-server/task.json"
    assert "did you mean v5-01-basic-tool-server?" in _refused(got["typo"])
    assert "not a plain name" in _refused(got["escape"])
    assert json.loads(got["resource"])["promptHash"] == task["promptHash"]
    assert "Unknown resource" in got["task://..%2F..%2Fetc"] or "not a plain name" in got["task://..%2F..%2Fetc"]
    assert "not a plain name" in got["task://.hidden"]
    assert "did you mean v5-01-basic-tool-server?" in got["task://v5-01-basic-tool-servr"]


def test_export_loads_in_inspect_ai(results: dict[str, Any]) -> None:
    from inspect_ai.dataset import FieldSpec, csv_dataset, json_dataset

    async def steps(client: Client) -> dict[str, Any]:
        return {fmt: (await _call(client, "export_tasks", {"format": fmt, "suite": "mcp-python"})).structured_content
                for fmt in ("inspect", "jsonl", "csv")} | {
            "content": (await _call(client, "export_tasks", {"format": "jsonl", "destination": "content",
                                                               "kind": "usage"})).structured_content,
            "bad_suite": await _call(client, "export_tasks", {"format": "csv", "suite": "../x"})}

    got = _session(steps)
    tasks = {t.id: t for t in discover_tasks()[0]}
    exports = results["root"] / "exports"
    assert got["inspect"]["path"] == str(exports / "tasks-mcp-python.inspect.jsonl")
    samples = json_dataset(got["inspect"]["path"])  # Inspect AI's own reader
    assert len(samples) == got["inspect"]["count"] == 12
    for sample in samples:
        task = tasks[str(sample.id)]
        assert sample.input == task.prompt
        assert sample.metadata == {"promptHash": task.prompt_hash, "kind": "build", "suite": "mcp-python",
                                   "contractPath": f"tasks/{task.id}/task.json"}
    rows = csv_dataset(got["csv"]["path"], FieldSpec(input="prompt", id="id", metadata=["promptHash"]))
    assert {str(s.id): s.metadata["promptHash"] for s in rows} == {s.id: tasks[str(s.id)].prompt_hash
                                                                    for s in samples}
    lines = [json.loads(line) for line in Path(got["jsonl"]["path"]).read_text().splitlines()]
    assert all(TaskContract.model_validate(line["contract"]) == tasks[line["id"]].contract for line in lines)
    content = got["content"]
    assert content["path"] is None and content["count"] == len(content["content"].splitlines())
    assert {json.loads(line)["kind"] for line in content["content"].splitlines()} == {"usage"}
    with io.StringIO(Path(got["csv"]["path"]).read_text()) as handle:
        assert next(csv.reader(handle))[:2] == ["id", "kind"]
    assert "no such suite '../x'" in _refused(got["bad_suite"])
    assert sorted(p.name for p in exports.iterdir()) == ["tasks-mcp-python.csv", "tasks-mcp-python.inspect.jsonl",
                                                         "tasks-mcp-python.jsonl"]


REFUSED = {
    "INSERT INTO runs SELECT * FROM runs": "this statement is INSERT",
    "CREATE TABLE x AS SELECT 1": "this statement is CREATE",
    "WITH a AS (SELECT 1) INSERT INTO runs (run_id) SELECT 'x'": "this statement is INSERT",
    "COPY trials TO '{root}/leak.csv'": "this statement is COPY",
    "ATTACH '{root}/other.duckdb' AS other": "this statement is ATTACH",
    "INSTALL httpfs": "this statement is LOAD",
    "PRAGMA database_list": "this statement is PRAGMA",
    "SELECT 1; DROP TABLE runs": "one statement only, got 2",
    "SELECT * FROM read_csv('{root}/runs/*/run.json')": "table function read_csv()",
    "SELECT * FROM read_parquet('x.parquet')": "table function read_parquet()",
    "SELECT * FROM glob('{root}/*')": "table function glob()",
    "SELECT * FROM pragma_database_list()": "table function pragma_database_list()",
    "SELECT * FROM trials WHERE task IN (SELECT file FROM glob('/etc/*'))": "table function glob()",
    "SELECT * FROM '/etc/passwd'": "names a file",
    "": "the query is empty",
}


def test_query_results_reads_only(results: dict[str, Any]) -> None:
    db: Path = results["db"]
    before = db.read_bytes()

    async def steps(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {sql: await _call(client, "query_results", {"sql": sql.format(root=results["root"])})
                               for sql in REFUSED}
        out["capped"] = await _call(client, "query_results", {"sql": "SELECT range AS n FROM range(501)"})
        out["whole"] = await _call(client, "query_results", {"sql": "SELECT range AS n FROM range(500)"})
        out["small_cap"] = await _call(client, "query_results", {
            "sql": "WITH t AS (SELECT task, count(*) AS n FROM trials GROUP BY task) SELECT * FROM t ORDER BY task",
            "max_rows": 2})
        out["slow"] = await _call(client, "query_results", {
            "sql": "SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b", "timeout_seconds": 0.5})
        out["model"] = await _call(client, "query_results", {"sql": "SELECT * FROM pass_rate"})
        return out

    got = _session(steps)
    for sql, reason in REFUSED.items():
        assert reason in _refused(got[sql]), sql
    capped = got["capped"].structured_content
    assert capped["truncated"] and capped["rowCount"] == 500 and "truncated" in capped["note"]
    assert capped["rows"][-1] == [499]
    assert not got["whole"].structured_content["truncated"]
    small = got["small_cap"].structured_content
    assert small["columns"] == ["task", "n"] and small["truncated"] and len(small["rows"]) == 2
    assert "stopped after 0.5 s" in _refused(got["slow"])
    assert not got["model"].is_error and got["model"].structured_content["rowCount"] > 0
    assert db.read_bytes() == before  # nothing wrote the store
    assert not (results["root"] / "leak.csv").exists()


def test_scorecards_and_trends(results: dict[str, Any], tmp_path: Path) -> None:
    rendered = results["rendered"]
    imported = next(r for r in results["runs"] if r != rendered)
    batch, runs_in_batch = max(results["batches"].items(), key=lambda item: item[1])

    async def steps(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rendered": await _call(client, "get_scorecard", {"run_id": rendered}),
            "imported": await _call(client, "get_scorecard", {"run_id": imported}),
            "batch": await _call(client, "get_scorecard", {"batch_id": batch}),
            "escape": await _call(client, "get_scorecard", {"run_id": "../../etc"}),
            "batch_escape": await _call(client, "get_scorecard", {"batch_id": "../x"}),
            "typo": await _call(client, "get_scorecard", {"run_id": rendered[:-1]}),
            "neither": await _call(client, "get_scorecard", {}),
            "both": await _call(client, "get_scorecard", {"run_id": rendered, "batch_id": batch}),
            "trends": await _call(client, "get_trends", {}),
            "trends_suite": await _call(client, "get_trends", {"suite": "mcp-use", "condition": "*"}),
            "usage_trends": await _call(client, "get_trends", {"kind": "usage"}),
            "report": (await client.read_resource(f"run://{rendered}/report")).contents[0].text,
        }
        with pytest.raises(Exception) as refused:
            await client.read_resource("run://..%2F..%2Fetc/report")
        out["report_escape"] = str(refused.value)
        return out

    got = _session(steps)
    card = got["rendered"].structured_content["scorecards"][0]
    assert card["markdown"] == (results["root"] / "runs" / rendered / "report.md").read_text() == got["report"]
    assert not card["imported"]
    legacy = got["imported"].structured_content["scorecards"][0]
    assert legacy["imported"] and legacy["path"].endswith("report.legacy.md")
    assert len(got["batch"].structured_content["scorecards"]) == runs_in_batch
    assert "not a plain name" in _refused(got["escape"]) and "not a plain name" in _refused(got["batch_escape"])
    assert f"did you mean {rendered}?" in _refused(got["typo"])
    assert "exactly one of" in _refused(got["neither"]) and "exactly one of" in _refused(got["both"])
    assert got["report_escape"]
    trends = got["trends"].structured_content
    assert {"pass_rate", "wilson_low", "grader_boundary"} <= set(trends["columns"]) and trends["rowCount"] > 0
    suite_rows = got["trends_suite"].structured_content
    at = suite_rows["columns"].index
    assert suite_rows["rows"] and all(r[at("suite")] == "mcp-use" and r[at("condition")] == "*"
                                      for r in suite_rows["rows"])
    assert got["usage_trends"].structured_content["rowCount"] == 0  # the fixture runs are build runs

    # No store yet: a clear error, nothing created.
    os.environ["MCP_EVALS_DB"] = str(tmp_path / "none.duckdb")
    try:
        missing = _session(lambda client: _call(client, "query_results", {"sql": "SELECT 1"}))
    finally:
        del os.environ["MCP_EVALS_DB"]
    assert "no results database at" in _refused(missing) and not (tmp_path / "none.duckdb").exists()


def test_a_task_that_does_not_load_is_named_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       minimal_contract: dict) -> None:
    write_task(tmp_path, "fine-task", minimal_contract)
    write_task(tmp_path, "broken-task", {**minimal_contract, "entryCandidates": []})
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tmp_path))

    async def steps(client: Client) -> dict[str, Any]:
        return {"list": await _call(client, "list_tasks"),
                "broken": await _call(client, "get_task", {"task_id": "broken-task"})}

    got = _session(steps)
    listing = got["list"].structured_content
    assert [t["id"] for t in listing["tasks"]] == ["fine-task"]
    assert len(listing["unloadable"]) == 1
    assert "broken-task/task.json: field 'entryCandidates'" in listing["unloadable"][0]
    assert "does not load" in _refused(got["broken"]) and "entryCandidates" in _refused(got["broken"])
