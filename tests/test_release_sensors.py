"""Every SDK release watched: the release sensors against a local registry speaking npm's and PyPI's JSON APIs over
real HTTP, evaluated with Dagster's sensor testing API on a real (temporary) instance."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest

from mcp_evals_pipeline.defs.partitions import trial_key_partitions
from mcp_evals_pipeline.defs.trials.release_sensors import POLL_ENV, poll_interval_s, release_sensor
from mcp_evals_pipeline.sdk_registry import latest_version
from mcp_evals_pipeline.tasks.suites import get_suite

from .test_suites import _Registry


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[ThreadingHTTPServer, dict[str, str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("MCP_EVALS_SDK_REGISTRY", "on")
    monkeypatch.setenv("MCP_EVALS_NPM_REGISTRY", base)
    monkeypatch.setenv("MCP_EVALS_PYPI_URL", base)
    monkeypatch.setenv("MCP_EVALS_CACHE_DIR", str(tmp_path / "cache"))
    _Registry.versions = {"mcp-use": "2.7.0", "mcp": "2.4.1"}
    try:
        yield server, _Registry.versions
    finally:
        server.shutdown()
        server.server_close()


def _tick(sensor: dg.SensorDefinition, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    """One tick as the sensor daemon runs it: partitions loaded from the instance (dagster/_daemon/sensor.py), the
    partitioned run requests resolved against the project's definitions."""
    from mcp_evals_pipeline.definitions import defs

    with dg.partition_loading_context(dynamic_partitions_store=instance):
        return sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs))


def test_a_new_release_launches_one_batch_the_same_none_a_down_registry_a_skip(
        registry: tuple[ThreadingHTTPServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    server, versions = registry
    npm, pypi = release_sensor("mcp-use"), release_sensor("mcp-python")
    assert npm.default_status == pypi.default_status == dg.DefaultSensorStatus.STOPPED
    # A trial of an earlier batch cached the release before this one (kept for hours: one lookup per batch).
    versions["mcp-use"] = "2.6.0"
    assert latest_version("mcp-use", "npm") == "2.6.0"
    versions["mcp-use"] = "2.7.0"
    with dg.instance_for_test() as instance:
        # npm: a version never seen launches the suite's baseline batch, under a batch id naming the release.
        first = _tick(npm, instance, None)
        baseline = get_suite("mcp-use").baseline_tasks
        assert len(first.run_requests) == len(baseline) * 3 and not first.skip_message
        batches = {r.tags["mcp-evals/batch"] for r in first.run_requests}
        assert len(batches) == 1 and next(iter(batches)).endswith("-mcp-use-2.7.0")
        (batch,) = batches
        assert {r.run_config["ops"]["trial"]["config"]["batch_id"] for r in first.run_requests} == {batch}
        assert {r.tags["mcp-evals/sdk-release"] for r in first.run_requests} == {"mcp-use@2.7.0"}
        assert {r.partition_key.keys_by_dimension["trial"].split("--")[0] for r in first.run_requests} == set(baseline)
        assert {r.partition_key.keys_by_dimension["batch_date"] for r in first.run_requests} == {batch[:10]}
        assert len({r.run_key for r in first.run_requests}) == len(first.run_requests)
        registered = set(instance.get_dynamic_partitions(trial_key_partitions.name))
        assert {r.partition_key.keys_by_dimension["trial"] for r in first.run_requests} <= registered
        # The batch's trials record the release it was launched for (trials.py reads latest_version), not 2.6.0.
        assert latest_version("mcp-use", "npm") == "2.7.0"
        # The same version again: nothing launched, and the skip says why.
        again = _tick(npm, instance, first.cursor)
        assert not again.run_requests and "2.7.0: already seen" in (again.skip_message or "")
        # The next release: its own batch.
        versions["mcp-use"] = "2.8.0"
        nxt = _tick(npm, instance, first.cursor)
        assert {r.tags["mcp-evals/batch"] for r in nxt.run_requests} == {batch.replace("2.7.0", "2.8.0")}
        assert len(nxt.run_requests) == len(first.run_requests)
        # PyPI's JSON API for the Python suite.
        py = _tick(pypi, instance, None)
        assert len(py.run_requests) == len(get_suite("mcp-python").baseline_tasks) * 3
        assert {r.tags["mcp-evals/sdk-release"] for r in py.run_requests} == {"mcp@2.4.1"}
        # A package the registry does not know (404): skipped with the reason.
        versions.pop("mcp")
        missing = _tick(pypi, instance, py.cursor)
        assert not missing.run_requests and "404" in (missing.skip_message or "")
        # The registry down: a skip naming the failure, never a crash.
        server.shutdown()
        server.server_close()
        down = _tick(npm, instance, nxt.cursor)
        assert not down.run_requests and "latest version unknown" in (down.skip_message or "")
        assert "ConnectError" in (down.skip_message or "")
        # Lookups turned off: a skip that says so.
        monkeypatch.setenv("MCP_EVALS_SDK_REGISTRY", "off")
        off = _tick(npm, instance, None)
        assert not off.run_requests and "registry lookups are off" in (off.skip_message or "")


def test_the_poll_interval_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert poll_interval_s() == 3600
    monkeypatch.setenv(POLL_ENV, "120")
    assert release_sensor("mcp-use").minimum_interval_seconds == 120
    monkeypatch.setenv(POLL_ENV, "soon")
    with pytest.raises(ValueError, match=f"{POLL_ENV}='soon'"):
        poll_interval_s()


def test_a_batch_the_sensor_launches_lands_with_its_release_in_manifest_and_scorecard(
        registry: tuple[ThreadingHTTPServer, dict[str, str]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The PyPI sensor's run requests, run as the daemon runs one (trials_job on the request's partition, with its
    config and tags), then the scorecard the batch date's reports write (the models, then batch_scorecard's own
    write_scorecard: the reports job's ~20 Dagster steps would add ~20 s and nothing this test reads). One of its
    36 requests (py-v4-01-basic-tool-server t2, whose recorded session passes), with the replay agent in place of
    codex (no key, no spend): each trial costs ~15-30 s of grading."""
    from mcp_evals_pipeline.dagster_instance import open_instance
    from mcp_evals_pipeline.defs.reports.assets import write_scorecard
    from mcp_evals_pipeline.defs.resources import EvalStore
    from mcp_evals_pipeline.pipeline import QUIET, job
    from mcp_evals_pipeline.sql_models import materialize_models

    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "results" / "runs"))
    task = "py-v4-01-basic-tool-server"
    with open_instance(tmp_path / "home") as instance:
        result = _tick(release_sensor("mcp-python"), instance, None)
        assert len(result.run_requests) == len(get_suite("mcp-python").baseline_tasks) * 3
        picked = [r for r in result.run_requests
                  if r.partition_key.keys_by_dimension["trial"] == f"{task}--noskill+blank--t2"]
        assert len(picked) == 1
        batch = picked[0].tags["mcp-evals/batch"]
        batch_date = picked[0].partition_key.keys_by_dimension["batch_date"]
        assert batch == f"{batch_date}-mcp-python-2.4.1"
        assert job("catalog_job").execute_in_process(instance=instance, run_config=QUIET).success
        for request in picked:
            config = request.run_config["ops"]["trial"]["config"]
            assert (config["agent"], config["batch_id"]) == ("codex", batch)
            run = job("trials_job").execute_in_process(
                partition_key=request.partition_key, instance=instance, resources={"eval_store": store},
                run_config={"ops": {"trial": {"config": {**config, "agent": "replay", "skip_judge": True}}}, **QUIET},
                tags=request.tags)
            assert run.success
            assert run.dagster_run.tags["mcp-evals/sdk-release"] == "mcp@2.4.1"
    (run_dir,) = (tmp_path / "results" / "runs").iterdir()
    assert run_dir.name.startswith(batch)
    with store.store().connect() as con:
        materialize_models(con)
    write_scorecard(run_dir.name, Path(store.runs_root), store.store())
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["batchId"] == batch
    assert manifest["manifest"]["suites"] == {"mcp-python": {"sdkPackage": "mcp", "registryLatest": "2.4.1"}}
    assert {t["sdkRegistryLatest"] for t in manifest["trials"]} == {"2.4.1"}
    # The scorecard names the release: the version the trials installed (what was graded), the registry's latest
    # the sensor launched the batch for beside it when the two differ.
    (installed,) = {t["sdkVersion"] for t in manifest["trials"]}
    report = (run_dir / "report.md").read_text()
    assert f"batch `{batch}`" in report
    releases = report.split("## SDK releases", 1)[1].split("\n## ", 1)[0]
    named = "mcp 2.4.1 (installed in 1 of 1 trial(s))" if installed == "2.4.1" else \
        f"mcp {installed} (installed in 1 of 1 trial(s); registry latest 2.4.1)"
    assert f"- `mcp-python`: {named}" in releases
    assert "Recorded sessions: no release-boundary figure" in releases
