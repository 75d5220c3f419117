# Fresh-machine entry points: each target sets up its own virtualenv first.
PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
STAMP := $(VENV)/.synced

.PHONY: setup run test bench ui clean docker-up docker-down

$(STAMP): pyproject.toml uv.lock
	test -x $(UV) || ($(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install --quiet --disable-pip-version-check "uv>=0.13,<0.14")
	# Bytecode compiled once here: the test suite starts dozens of Python processes that import dagster, and
	# with PYTHONDONTWRITEBYTECODE set (as on CI) each would compile it from source again (~3 s of CPU each).
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --frozen --quiet --compile-bytecode
	touch $@

setup: $(STAMP)

# The keyless default, in minutes: the earlier harness's 259 real runs imported when the store lacks them (the real
# trend and its suspect markers); the gate (each selected build task's golden, each usage case's oracle and played
# sessions: what the recorded sessions rest on; proofs reused while nothing they rest on changed); the replay agent
# (recorded sessions: they prove the harness, not the SDK) x the fast tier (`--tier pr`: five assignments in both
# SDKs' suites, so the SDK comparison has pairs, and the usage cases marked pr) as Dagster runs in the project-local
# instance, two at a time, then the SQL models and the scorecard; both batches land in one run (batch date x replay).
# Last, where to look. One condition, two build trials: the replay agent plays the same recordings under every
# condition (a second one shows nothing new), and the recordings are canned (t1 fails, t2 passes). Usage: 3 trials,
# each case's pass, miss and unsafe session. Every task x condition: `mcp-evals eval --agent replay --trials 2`.
run: $(STAMP)
	scripts/install_boxes.sh
	$(VENV)/bin/mcp-evals preflight
	$(VENV)/bin/mcp-evals import-runs --if-missing tests/fixtures/legacy_runs.tar.xz
	$(VENV)/bin/mcp-evals eval --agent replay --suite mcp-use --suite mcp-python --tier pr --condition noskill+blank --trials 2 --parallel 2
	$(VENV)/bin/mcp-evals eval --suite ops-platform --agent replay --tier pr --condition bare --trials 3 --parallel 2
	$(VENV)/bin/mcp-evals overview

# The docker tests need an engine: scripts/docker_engine.sh starts the project's own (as root, from Debian's
# packages) unless one answers on its socket, builds the sandbox image unless its content tag exists, runs pytest
# with DOCKER_HOST and MCP_EVALS_DOCKER_IMAGE set, and stops the engine it started. Elsewhere pytest runs as it is
# and the docker tests skip, saying why. scripts/postgres_server.sh does the same for a PostgreSQL server of the project's
# own (Dagster's storage when run workers on many hosts share an instance), with DAGSTER_PG_* set.
# Three pytest-xdist workers on 2 cores: the suite mostly waits (servers starting, agents' sessions, boxes); with two
# the cores were busy about half the time. The tests of the one test engine take turns (a lock: tests/conftest.py).
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pylint --score=n mcp_evals_pipeline
	scripts/postgres_server.sh run scripts/docker_engine.sh run $(VENV)/bin/pytest -q -n 3 --maxschedchunk 1 --durations=30

# A developer machine's engine and images, left running (DOCKER_HOST is printed): `make docker-down` stops it.
docker-up:
	scripts/docker_engine.sh up
	scripts/docker_engine.sh images

docker-down:
	scripts/docker_engine.sh down

bench: $(STAMP)
	$(VENV)/bin/python bench/grader_bench.py
	$(VENV)/bin/python bench/trial_overhead_bench.py
	$(VENV)/bin/python bench/sql_models_bench.py

ui: $(STAMP)
	cd $(CURDIR) && DAGSTER_HOME=$(CURDIR)/.dagster_home $(VENV)/bin/dg dev

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache
