"""The UI a user opens after a CLI batch (`make ui` = `dg dev`): the real webserver over real HTTP, asked through its
GraphQL API what its pages show. The jobs by name (no ephemeral asset job), the lineage root materialized, the
trial check evaluated, only the trial partitions the catalog defines, and the scorecard's pictures as metadata.
`dg check defs` and `dg list defs` load the same definitions through Dagster's loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from mcp_evals_pipeline.defs.partitions import catalog_trial_keys
from mcp_evals_pipeline.launched_runs import DEFINITIONS_MODULE, LOCATION_NAME
from mcp_evals_pipeline.procs import free_port, kill_tree
from mcp_evals_pipeline.tasks.catalog import discover_tasks

from .conftest import REPO

CASE = "usage-ops-v3-01-restart-by-id"
BATCH = "2026-11-30"
BIN = Path(sys.executable).parent


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def _wait_for_ui(port: int, server: subprocess.Popen, log: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, f"dg dev exited: {log.read_text()[-3000:]}"
        try:
            # The code location is loaded once its repository answers (the server answers before that).
            data = _graphql(port, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }")
            if data["repositoriesOrError"].get("nodes"):
                return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(f"the UI did not come up in {timeout_s} s: {log.read_text()[-3000:]}")


def test_dg_checks_and_lists_the_definitions() -> None:
    checked = subprocess.run([str(BIN / "dg"), "check", "defs"], cwd=REPO, capture_output=True, text=True,
                             timeout=300)
    assert checked.returncode == 0 and "All definitions loaded successfully" in checked.stdout, checked.stderr
    listed = subprocess.run([str(BIN / "dg"), "list", "defs", "--json"], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert {j["name"] for j in found["jobs"]} == {"catalog_job", "trials_job", "trial_checks_job", "reports_job",
                                                  "synthesis_job"}
    assert {s["name"] for s in found["schedules"]} == {"baseline_schedule", "usage_schedule", "batch_reports_schedule",
                                                       "trial_checks_schedule", "synthesis_schedule"}
    assert {c["name"] for c in found["asset_checks"]} == {"trial_rows_are_current", "trial_outcome",
                                                          "pass_rate_above_floor", "usage_within_floor_and_ceiling"}
    assert {"task_catalog", "trial", "pass_rate", "batch_scorecard"} <= {a["asset_key"] for a in found["assets"]}


def test_cli_runs_use_the_code_location_name_dg_serves() -> None:
    """The CLI's runs name the code location `dg dev` loads; another name would put them under a location the UI
    does not show."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["dg"]["project"]
    assert project["code_location_name"] == LOCATION_NAME
    assert project["code_location_target_module"] == DEFINITIONS_MODULE


@pytest.mark.long
def test_the_ui_shows_a_cli_batch_by_its_jobs_checks_partitions_and_pictures(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results")}
    batch = subprocess.run([str(BIN / "mcp-evals"), "eval", "--agent", "replay", "--task", CASE, "--condition",
                            "bare", "--trials", "1", "--batch-date", BATCH, "--no-verify"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
    assert batch.returncode == 0, batch.stdout[-2000:] + batch.stderr[-3000:]

    port, log = free_port(), tmp_path / "dg-dev.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([str(BIN / "dg"), "dev", "--host", "127.0.0.1", "--port", str(port)], cwd=REPO,
                                  env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_ui(port, server, log)
        runs = _graphql(port, "{ runsOrError { ... on Runs { results { jobName status } } } }")
        jobs = {(r["jobName"], r["status"]) for r in runs["runsOrError"]["results"]}
        assert jobs == {("catalog_job", "SUCCESS"), ("trials_job", "SUCCESS"), ("trial_checks_job", "SUCCESS"),
                        ("reports_job", "SUCCESS")}, jobs
        # Each CLI run came from the code location the UI loads, as its own launches do: Jobs > trials_job > Runs
        # lists runs by the repository tag, and the Timeline draws runs by their repository origin (both were
        # missing when the CLI executed runs in its own processes: "No runs found", an empty Timeline).
        origins = _graphql(port, "{ runsOrError { ... on Runs { results { jobName repositoryOrigin { "
                                 "repositoryLocationName repositoryName } } } } }")
        assert {(r["jobName"], json.dumps(r["repositoryOrigin"], sort_keys=True))
                for r in origins["runsOrError"]["results"]} == {
            (job, json.dumps({"repositoryLocationName": LOCATION_NAME, "repositoryName": "__repository__"},
                             sort_keys=True)) for job, _ in jobs}
        job_runs = _graphql(port, '{ runsOrError(filter: {pipelineName: "trials_job", tags: [{key: '
                                  f'".dagster/repository", value: "__repository__@{LOCATION_NAME}"}}]}}) '
                                  "{ ... on Runs { results { status tags { key value } } } } }")
        (trial_run,) = job_runs["runsOrError"]["results"]
        assert {"key": "dagster/partition", "value": f"{BATCH}|{CASE}--bare--t1"} in trial_run["tags"]

        catalog = _graphql(port, '{ assetNodeOrError(assetKey: {path: ["task_catalog"]}) { ... on AssetNode { '
                                 "assetMaterializations(limit: 1) { runId } } } }")
        assert catalog["assetNodeOrError"]["assetMaterializations"], "task_catalog is materialized"

        # What the asset's Checks tab shows: the check's execution for the asset's latest materialization (a
        # check run in a batch-date run was "Not evaluated" there when the trial landed in the same second)
        check = _graphql(port, '{ assetNodeOrError(assetKey: {path: ["trial"]}) { ... on AssetNode { '
                               "assetChecksOrError { ... on AssetChecks { checks { name "
                               "executionForLatestMaterialization { status } } } } } } }")
        checks = check["assetNodeOrError"]["assetChecksOrError"]["checks"]
        assert {c["name"]: (c["executionForLatestMaterialization"] or {}).get("status") for c in checks} == {
            "trial_rows_are_current": "SUCCEEDED", "trial_outcome": "FAILED"}  # t1 replays an unsafe session
        # What the check's partition view (AssetCheckPartitionHealthQuery) draws: the failed trial partition
        outcome = _graphql(port, '{ assetNodeOrError(assetKey: {path: ["trial"]}) { ... on AssetNode { '
                                 'assetCheckOrError(checkName: "trial_outcome") { ... on AssetCheck { '
                                 "partitionStatuses { ... on AssetCheckMultiPartitionStatuses { ranges { "
                                 "primaryDimStartKey primaryDimEndKey secondaryDim { "
                                 "... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } "
                                 "} } } } } } } } }")
        ranges = outcome["assetNodeOrError"]["assetCheckOrError"]["partitionStatuses"]["ranges"]
        assert [(r["primaryDimStartKey"], r["primaryDimEndKey"], r["secondaryDim"]) for r in ranges] == [
            (BATCH, BATCH, {"succeededPartitions": [], "failedPartitions": [f"{CASE}--bare--t1"]})]

        trial = _graphql(port, '{ assetNodeOrError(assetKey: {path: ["trial"]}) { ... on AssetNode { '
                               "partitionKeysByDimension { name partitionKeys } } } }")
        dims = {d["name"]: d["partitionKeys"] for d in trial["assetNodeOrError"]["partitionKeysByDimension"]}
        assert sorted(dims["trial"]) == sorted(catalog_trial_keys(discover_tasks()[0]))  # no t4, t5 or strays
        assert f"{CASE}--bare--t1" in dims["trial"] and BATCH in dims["batch_date"]

        scorecard = _graphql(port, '{ assetNodeOrError(assetKey: {path: ["batch_scorecard"]}) { ... on AssetNode { '
                                   "assetMaterializations(limit: 1) { partition metadataEntries { label "
                                   "__typename ... on MarkdownMetadataEntry { mdStr } "
                                   "... on TableMetadataEntry { table { records } } "
                                   "... on IntMetadataEntry { intValue } } } } } }")
        (materialization,) = scorecard["assetNodeOrError"]["assetMaterializations"]
        entries = {e["label"]: e for e in materialization["metadataEntries"]}
        assert materialization["partition"] == BATCH
        # The usage batch's own figures, apart from the build ones (never summed)
        assert entries["usage_valid_scored"]["intValue"] == 1 and entries["valid_scored"]["intValue"] == 0
        # The rate with its interval per suite x condition, and the report's body, as the UI renders them
        assert entries["pass_rates"]["__typename"] == "TableMetadataEntry"
        (rate,) = [json.loads(r) for r in entries["pass_rates"]["table"]["records"]]
        assert (rate["kind"], rate["condition"], rate["valid_scored"]) == ("usage", "bare", 1)
        assert rate["wilson_95"].startswith("[0.000, ")  # 0 of 1 passed (the session is unsafe)
        assert any(label.startswith("report: ") and e["mdStr"].startswith("#") for label, e in entries.items())
        # A usage batch has no build trend; its task x trial grid is inline, and its file is path metadata.
        assert entries["grid"]["mdStr"].startswith("![grid](data:image/png;base64,") and "trend" not in entries
        assert any(label.endswith("grid.png") and e["__typename"] == "PathMetadataEntry"
                   for label, e in entries.items()), sorted(entries)
    finally:
        kill_tree(server)  # dg dev's webserver, daemon and code server with it
