#!/usr/bin/env bash
# A Docker engine of the project's own, on a socket of its own, for the docker sandbox and its tests.
#
#   scripts/docker_engine.sh up        start the engine unless it already answers; prints `export DOCKER_HOST=...`
#   scripts/docker_engine.sh down      stop it
#   scripts/docker_engine.sh images    build the base, sandbox and run-worker images unless their content tags
#                                      exist; prints the sandbox image
#   scripts/docker_engine.sh run CMD   up + images, CMD with DOCKER_HOST, MCP_EVALS_DOCKER_IMAGE and
#                                      MCP_EVALS_PIPELINE_IMAGE (the run worker's) set, then down
#                                      (only if this call started it); CMD's exit code. Without root, Debian's
#                                      packages or a working engine, CMD runs as it is (docker tests then skip).
#
# The engine is Debian's (docker.io), started as the machines here allow: no iptables, no default bridge
# (`--internal` networks still work), its own data root, exec root, pidfile and unix socket, so it never touches
# another engine and nothing else uses it. Storage: overlay2 where the kernel mounts an overlay on the data root's
# filesystem (a container is created in well under a second), else vfs (every container creation copies the whole
# image: about 30 s for the sandbox image here); MCP_EVALS_DOCKER_STORAGE overrides. The data root lives outside any clone
# (MCP_EVALS_DOCKER_ROOT, /var/lib/mcp-evals-docker): images survive a fresh CI clone and are rebuilt only when what
# they are made from changes (their tags are content hashes). No registry is reachable: the base image is a Debian
# root filesystem made by debootstrap and `docker import`ed (scripts/docker_trial.sh base), docker/Dockerfile builds
# on it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="${MCP_EVALS_DOCKER_ROOT:-/var/lib/mcp-evals-docker}"
EXEC_ROOT="${MCP_EVALS_DOCKER_EXEC_ROOT:-/run/mcp-evals-docker}"  # short: containerd's sockets live under it
SOCKET="$EXEC_ROOT/docker.sock"
PIDFILE="$EXEC_ROOT/dockerd.pid"
export DOCKER_HOST="unix://$SOCKET"

log() { printf '[docker_engine %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

answers() { timeout 10 docker info >/dev/null 2>&1; }

storage_driver() {
    if [ -n "${MCP_EVALS_DOCKER_STORAGE:-}" ]; then
        echo "$MCP_EVALS_DOCKER_STORAGE"
        return
    fi
    local probe
    probe="$(mktemp -d "$ROOT/overlay-probe-XXXXXX")"
    mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
    if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
            "$probe/merged" 2>/dev/null; then
        umount "$probe/merged"
        echo overlay2
    else
        echo vfs
    fi
    rm -rf "$probe"
}

up() {
    if answers; then
        return 0
    fi
    [ "$(id -u)" = 0 ] || { log "not root: no engine of our own can be started"; return 3; }
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
        command -v apt-get >/dev/null 2>&1 || { log "no dockerd and no apt-get"; return 3; }
        log "installing Debian's docker.io and debootstrap"
        (apt-get install -y -qq docker.io debootstrap >/dev/null 2>&1 \
            || (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq docker.io debootstrap >/dev/null 2>&1)) \
            || { log "apt-get could not install docker.io"; return 3; }
    fi
    mkdir -p "$ROOT/data" "$EXEC_ROOT"
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        log "dockerd $(cat "$PIDFILE") is running but does not answer: stopping it first"
        down
    fi
    rm -f "$SOCKET" "$PIDFILE"
    local driver
    driver="$(storage_driver)"
    log "starting dockerd on $SOCKET (data root $ROOT/data, storage $driver)"
    setsid dockerd --storage-driver "$driver" --iptables=false --ip6tables=false --bridge=none \
        --data-root "$ROOT/data" --exec-root "$EXEC_ROOT" --pidfile "$PIDFILE" -H "$DOCKER_HOST" \
        --log-level warn >>"$ROOT/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 1 120); do
        answers && { log "engine up"; return 0; }
        sleep 0.5
    done
    log "dockerd did not answer within 60 s; its log: $ROOT/dockerd.log"
    tail -20 "$ROOT/dockerd.log" >&2 || true
    return 3
}

down() {
    [ -f "$PIDFILE" ] || return 0
    local pid
    pid="$(cat "$PIDFILE")"
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    log "engine stopped"
}

# Content tags: the base image from what makes it (the recipe in docker_trial.sh), the sandbox image from the
# Dockerfile and the base's tag. A change to either builds a new image; an unchanged one is found and reused.
hash_of() { cat "$@" | sha256sum | cut -c1-12; }
base_tag() { echo "mcp-evals-base:bookworm-$(hash_of "$REPO/scripts/docker_trial.sh")"; }
image_tag() { echo "mcp-evals-sandbox:$(printf '%s\n' "$(base_tag)" | cat - "$REPO/docker/Dockerfile" | sha256sum | cut -c1-12)"; }
pipeline_tag() {
    echo "mcp-evals-pipeline:$(printf '%s\n' "$(base_tag)" | cat - "$REPO/docker/pipeline.Dockerfile" \
        "$REPO/pyproject.toml" "$REPO/uv.lock" | sha256sum | cut -c1-12)"
}

# The run worker's image (docker/pipeline.Dockerfile): the locked dependencies, from the same base.
pipeline_image() {
    local tag ctx
    tag="$(pipeline_tag)"
    if ! docker image inspect "$tag" >/dev/null 2>&1; then
        log "building $tag"
        ctx="$(mktemp -d /tmp/docker-ctx-XXXXXX)"
        cp "$REPO/docker/pipeline.Dockerfile" "$REPO/pyproject.toml" "$REPO/uv.lock" "$ctx/"
        mkdir -p "$ctx/extra-ca"  # the host's CA bundle, as docker_trial.sh gives the sandbox image
        local bundle="${EXTRA_CA_BUNDLE:-${NODE_EXTRA_CA_CERTS:-${SSL_CERT_FILE:-}}}"
        if [ -n "$bundle" ] && [ -f "$bundle" ]; then cp "$bundle" "$ctx/extra-ca/host-bundle.crt"; fi
        DOCKER_BUILDKIT=0 docker build --network host --force-rm --build-arg BASE_IMAGE="$(base_tag)" \
            -f "$ctx/pipeline.Dockerfile" -t "$tag" "$ctx" >&2 || { rm -rf "$ctx"; return 1; }
        rm -rf "$ctx"
    fi
    docker tag "$tag" mcp-evals-pipeline:dev
    echo "$tag"
}

images() {
    local base image
    base="$(base_tag)"
    image="$(image_tag)"
    if docker image inspect "$image" >/dev/null 2>&1; then
        docker tag "$image" mcp-evals-sandbox:dev
        pipeline_image >/dev/null
        echo "$image"
        return 0
    fi
    log "building $image (base $base): minutes on a cold machine"
    BASE_IMAGE="$base" IMAGE="$image" ROOTFS_DIR="$ROOT/rootfs" "$REPO/scripts/docker_trial.sh" image >&2
    docker tag "$image" mcp-evals-sandbox:dev
    pipeline_image >/dev/null
    # Superseded builds go (on vfs every layer is a full copy: gigabytes each).
    docker images --format '{{.Repository}}:{{.Tag}}' \
        | grep -E '^mcp-evals-(sandbox|base|pipeline):' \
        | grep -vxF -e "$image" -e "$base" -e "$(pipeline_tag)" -e mcp-evals-sandbox:dev -e mcp-evals-pipeline:dev \
        | xargs -r docker rmi >/dev/null 2>&1 || true
    docker image prune -f >/dev/null 2>&1 || true
    echo "$image"
}

run() {
    local started=0 image="" status=0
    if ! answers; then
        if up; then started=1; else log "running without a Docker engine: docker tests will skip"; fi
    fi
    if answers; then
        image="$(images)" || { log "the sandbox image could not be built: docker tests will skip"; image=""; }
    fi
    if [ -n "$image" ]; then
        MCP_EVALS_DOCKER_IMAGE="$image" MCP_EVALS_PIPELINE_IMAGE="$(pipeline_tag)" "$@" || status=$?
    else
        env -u DOCKER_HOST "$@" || status=$?
    fi
    if [ "$started" = 1 ]; then down; fi
    return "$status"
}

case "${1:-}" in
    up) up && echo "export DOCKER_HOST=$DOCKER_HOST" ;;
    down) down ;;
    images) images ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 up|down|images|run CMD..." >&2; exit 2 ;;
esac
