# The run worker's image: what dagster-docker's DockerRunLauncher starts for each Dagster run
# (deploy/dagster.yaml, `image`). Python 3.11 (Debian bookworm's python3) and a virtualenv at /opt/venv with every
# locked dependency of the project (uv.lock, no dev group). The project's own source is not copied in: it is
# mounted read-only at its path on the host and put on PYTHONPATH by the launcher's config (tests/
# test_docker_launcher.py), so a change to the code needs no new image; a deployment that ships images bakes it in
# with `COPY . /srv/mcp-evals` and `uv sync --frozen --no-dev`.
#
# Built from the same locally imported base as the sandbox image (no registry is reachable here), with the classic
# builder and the host's network for PyPI: scripts/docker_engine.sh images.
ARG BASE_IMAGE=mcp-evals-base:bookworm
FROM ${BASE_IMAGE}

ARG UV_VERSION=0.13.9

# Extra CA certificates (a TLS-inspecting proxy between the build host and PyPI), as in docker/Dockerfile.
COPY extra-ca/ /usr/local/share/ca-certificates/extra/
RUN update-ca-certificates >/dev/null

ENV DEBIAN_FRONTEND=noninteractive \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    LANG=C.UTF-8 \
    LC_ALL=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates procps \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version'

# Bytecode compiled at build time: every run worker starts a fresh container (PYTHONDONTWRITEBYTECODE, a read-only
# source mount), and compiling dagster and its dependencies from source would cost each run several seconds.
COPY pyproject.toml uv.lock /opt/project/
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check "uv==${UV_VERSION}" \
    && cd /opt/project \
    && UV_PROJECT_ENVIRONMENT=/opt/venv uv sync --frozen --no-dev --no-install-project --no-cache --compile-bytecode \
    && python -c 'import dagster, dagster_docker, duckdb, mcp; print("dagster", dagster.__version__)'

WORKDIR /tmp
