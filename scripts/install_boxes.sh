#!/usr/bin/env bash
# What grading needs to box agent-written code, installed where this machine lets us: Debian's bubblewrap (with
# util-linux's nsenter and setpriv), as root with apt-get. `.ci/run` and `make run` both call it. Elsewhere it
# changes nothing and says what is missing; `mcp-evals eval` then stops before any work with the same cause and the
# two ways out (install it; MCP_EVALS_GRADER_BOX=docker).
set -uo pipefail

# Each tool run, not only looked up: a path that exists but does not execute is missing too.
check() {
    missing=()
    bwrap --version >/dev/null 2>&1 || missing+=(bwrap)
    nsenter --version >/dev/null 2>&1 || missing+=(nsenter)
    setpriv --version >/dev/null 2>&1 || missing+=(setpriv)
}
check
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install_boxes: missing ${missing[*]} (Debian: sudo apt-get install -y bubblewrap util-linux); not root" \
         "with apt-get here, so nothing was installed" >&2
    exit 0
fi
echo "install_boxes: installing Debian's bubblewrap and util-linux (missing: ${missing[*]})" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq bubblewrap util-linux >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1
    apt-get install -y -qq bubblewrap util-linux >/dev/null 2>&1
fi
check
[ "${#missing[@]}" -eq 0 ] || echo "install_boxes: still missing after apt-get: ${missing[*]}" >&2
exit 0
