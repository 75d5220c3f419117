#!/usr/bin/env bash
# Build the sandbox image locally and run ONE real trial in the `docker` sandbox backend.
#
#   scripts/docker_trial.sh              base image (if missing) -> sandbox image -> one replay trial
#   scripts/docker_trial.sh base         only the base image
#   scripts/docker_trial.sh image        base + sandbox image, no trial
#
# Nothing is pulled from a container registry (none is reachable on the eval hosts). The base image is a Debian
# bookworm root filesystem made with debootstrap from the Debian mirror and turned into an image with
# `docker import`; docker/Dockerfile builds on it (FROM ${BASE_IMAGE}) and fetches Node 22, npm and uv from the npm
# registry and PyPI (the agent CLIs come from the host's pinned cache, mounted at run time). On a host that CAN pull, skip the base step with
# BASE_IMAGE=debian:bookworm-slim.
#
# Needs: root (debootstrap, dockerd), a reachable Docker engine (`docker info`), `debootstrap` (apt-get install
# debootstrap docker.io). Outputs of the trial go to a scratch results dir, never to the repo's eval_results/.
#
# Environment: EXTRA_CA_BUNDLE (CA certificates to trust in the image), BASE_IMAGE (mcp-evals-base:bookworm), IMAGE (mcp-evals-sandbox:dev), DEBIAN_MIRROR,
# ROOTFS_DIR (/var/tmp/mcp-evals-rootfs), WORK_DIR (a fresh mktemp dir), TASK (v2-01-basic-tool-server).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE_IMAGE="${BASE_IMAGE:-mcp-evals-base:bookworm}"
IMAGE="${IMAGE:-mcp-evals-sandbox:dev}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ROOTFS_DIR="${ROOTFS_DIR:-/var/tmp/mcp-evals-rootfs}"
TASK="${TASK:-v2-01-basic-tool-server}"
STEP="${1:-all}"

log() { printf '[docker_trial %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

docker info >/dev/null 2>&1 || { log "no Docker engine reachable (start dockerd, or set DOCKER_HOST)"; exit 3; }

build_base() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "base image $BASE_IMAGE already present"
        return
    fi
    command -v debootstrap >/dev/null || { log "debootstrap missing: apt-get install -y debootstrap"; exit 3; }
    [ "$(id -u)" = 0 ] || { log "debootstrap needs root"; exit 3; }
    log "debootstrap bookworm (minbase) into $ROOTFS_DIR from $DEBIAN_MIRROR"
    rm -rf "$ROOTFS_DIR"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$ROOTFS_DIR" "$DEBIAN_MIRROR"
    # The image's apt uses the same mirror; nothing from the build host leaks in.
    echo "deb $DEBIAN_MIRROR bookworm main" > "$ROOTFS_DIR/etc/apt/sources.list"
    rm -rf "$ROOTFS_DIR"/var/cache/apt/archives/*.deb "$ROOTFS_DIR"/var/lib/apt/lists/*
    log "docker import -> $BASE_IMAGE"
    tar -C "$ROOTFS_DIR" --numeric-owner -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE"
    rm -rf "$ROOTFS_DIR"
}

build_image() {
    # The build context: the Dockerfile plus extra-ca/ with EXTRA_CA_BUNDLE (default: the host's bundle when
    # SSL_CERT_FILE / NODE_EXTRA_CA_CERTS point at one, as behind a TLS-inspecting proxy). Certificates are public;
    # they are copied to a temp context, never into the repo.
    local ctx bundle="${EXTRA_CA_BUNDLE:-${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-}}}"
    ctx="$(mktemp -d /tmp/docker-ctx-XXXXXX)"
    trap 'rm -rf "$ctx"' RETURN
    cp "$REPO/docker/Dockerfile" "$ctx/"
    mkdir -p "$ctx/extra-ca"
    if [ -n "$bundle" ] && [ -f "$bundle" ]; then
        log "extra CA certificates from $bundle"
        cp "$bundle" "$ctx/extra-ca/host-bundle.crt"
    fi
    log "docker build $IMAGE (FROM $BASE_IMAGE)"
    # DOCKER_BUILDKIT=0: the classic builder needs no frontend image from a registry. --network host: the build
    # steps reach the registries through the host's network (an engine started with --bridge=none, as
    # scripts/docker_engine.sh does, has no default bridge for them).
    DOCKER_BUILDKIT=0 docker build --network host --force-rm --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$IMAGE" "$ctx"
    docker run --rm --network none "$IMAGE" sh -c 'python3 --version; node --version; npm --version; uv --version'
}

run_trial() {
    WORK_DIR="${WORK_DIR:-$(mktemp -d /tmp/docker-trial-XXXXXX)}"
    log "one replay trial of $TASK in the docker sandbox; results under $WORK_DIR"
    cd "$REPO"
    env MCP_EVALS_SANDBOX=docker MCP_EVALS_DOCKER_IMAGE="$IMAGE" \
        MCP_EVALS_RESULTS_DIR="$WORK_DIR/results" DAGSTER_HOME="$WORK_DIR/dagster_home" \
        "$REPO/.venv/bin/mcp-evals" eval --agent replay --task "$TASK" --trials 1 --no-verify --skip-judge
    trial_json="$(find "$WORK_DIR/results/runs" -name trial.json | head -1)"
    [ -n "$trial_json" ] || { log "no trial.json written"; exit 1; }
    log "trial record: $trial_json"
    "$REPO/.venv/bin/python" - "$trial_json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
print(json.dumps({k: rec.get(k) for k in ("task", "trial", "sandbox", "valid", "invalidReason", "error")}, indent=1))
# Trial 1 replays the task's first session by name (fail-wrong-sum for v2-01): a valid trial that fails
# contract.calls is the expected outcome; what this checks is that it ran in Docker and was graded.
print("contractPass:", rec["grade"].get("contractPass"), "failureCode:", rec["grade"].get("failureCode"))
sys.exit(0 if rec.get("sandbox") == "docker" and rec.get("valid") else 1)
PY
    leftovers="$(docker ps -aq --filter label=mcp-evals.sandbox)"
    [ -z "$leftovers" ] || { log "containers left behind: $leftovers"; exit 1; }
    log "ok: the trial ran in Docker and nothing was left behind"
}

case "$STEP" in
    base) build_base ;;
    image) build_base; build_image ;;
    all) build_base; build_image; run_trial ;;
    trial) run_trial ;;
    *) log "unknown step $STEP (base | image | trial | all)"; exit 2 ;;
esac
