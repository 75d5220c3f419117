# Fresh-machine entry points: each target sets up its own virtualenv first.
PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
STAMP := $(VENV)/.synced

.PHONY: setup run test lint bench clean

$(STAMP): pyproject.toml uv.lock
	test -x $(UV) || ($(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install --quiet --disable-pip-version-check "uv>=0.13,<0.14")
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --frozen --quiet
	touch $@

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/mcp-evals verify-tasks

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	$(VENV)/bin/python bench/grader_bench.py

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache
