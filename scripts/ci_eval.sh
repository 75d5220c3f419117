#!/usr/bin/env bash
# What the composite action (action.yml) runs, and what tests/test_action.py runs: one batch from CI inputs.
# Inputs come as INPUT_* variables (the action's `with:`); the project is set up already (make setup). `eval` gates
# on verify-tasks itself (proofs reused while nothing they rest on changed), then runs the batch and writes the
# JSON summary and JUnit files; `ci-outputs` turns the summary into $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY. The
# outputs are written whatever the gate says; the step exits with eval's code (1 below the floor, 3 incomplete).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cli="${MCP_EVALS_CLI:-$here/.venv/bin/mcp-evals}"
out_dir="${RUNNER_TEMP:-$(mktemp -d)}"

args=(eval --agent "${INPUT_AGENT:-codex}" --trials "${INPUT_TRIALS:-3}" --parallel "${INPUT_PARALLEL:-1}"
      --timeout-min "${INPUT_TIMEOUT_MIN:-20}"
      --json-summary "$out_dir/mcp-evals-summary.json" --junit "$out_dir/mcp-evals-junit.xml")
split() { tr ',' '\n' <<<"$1" | sed 's/^ *//; s/ *$//' | grep -v '^$' || true; }
conditions="${INPUT_CONDITIONS:-}"
if [ -n "${INPUT_VARIANTS:-}" ]; then
  echo "::warning::the 'variants' input is deprecated; use 'conditions'"
  conditions="${conditions:+$conditions,}$INPUT_VARIANTS"
fi
while read -r c; do [ -n "$c" ] && args+=(--condition "$c"); done < <(split "$conditions")
while read -r t; do [ -n "$t" ] && args+=(--task "$t"); done < <(split "${INPUT_TASKS:-}")
while read -r s; do [ -n "$s" ] && args+=(--suite "$s"); done < <(split "${INPUT_SUITE:-}")
[ -n "${INPUT_BATCH_ID:-}" ] && args+=(--batch-id "$INPUT_BATCH_ID")
[ -n "${INPUT_BATCH_DATE:-}" ] && args+=(--batch-date "$INPUT_BATCH_DATE")
[ -n "${INPUT_MODEL:-}" ] && args+=(--model "$INPUT_MODEL")
[ -n "${INPUT_SANDBOX:-}" ] && args+=(--sandbox "$INPUT_SANDBOX")
[ -n "${INPUT_TIER:-}" ] && args+=(--tier "$INPUT_TIER")
[ -n "${INPUT_MIN_PASS_RATE:-}" ] && args+=(--min-pass-rate "$INPUT_MIN_PASS_RATE")
[ -n "${INPUT_MAX_UNSAFE:-}" ] && args+=(--max-unsafe "$INPUT_MAX_UNSAFE")
[ "${INPUT_SKIP_JUDGE:-false}" = "true" ] && args+=(--skip-judge)
[ "${INPUT_VERIFY:-true}" = "false" ] && args+=(--no-verify)
[ -n "${INPUT_JUDGE_MODEL:-}" ] && export MCP_EVALS_JUDGE_MODEL="$INPUT_JUDGE_MODEL"
[ -n "${INPUT_SKILL_DIR:-}" ] && export MCP_EVALS_SKILL_DIR="$INPUT_SKILL_DIR"

"$cli" "${args[@]}"
code=$?
if [ -f "$out_dir/mcp-evals-summary.json" ]; then
  "$cli" ci-outputs "$out_dir/mcp-evals-summary.json" || { [ "$code" -eq 0 ] && code=1; }  # no outputs: not green
  [ -n "${GITHUB_OUTPUT:-}" ] && { echo "summary=$out_dir/mcp-evals-summary.json"; echo "junit=$out_dir/mcp-evals-junit.xml"; } >> "$GITHUB_OUTPUT"
fi
exit "$code"
