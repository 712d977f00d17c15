#!/usr/bin/env bash
# Runs every test level of the VS Code extension and fails on any failure:
#   type check (tsc --noEmit) and bundle (esbuild)
#   1. unit        node --test with a small vscode stub (providers, row nesting, rendering)
#   2. integration node --test, vscode-jsonrpc against the real daemon over stdio
#   3. e2e         a real VS Code (code-server) in Chromium, mocha inside the extension host
#   VSIX           vsce package --no-dependencies (offline)
# The daemon is $SESSIONTREE_SERVER, default <repo>/.venv/bin/sessiontree.
# SESSIONTREE_VSCODE_E2E=0 skips level 3.
set -uo pipefail
EXT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$EXT_DIR/../.." && pwd)
export SESSIONTREE_SERVER=${SESSIONTREE_SERVER:-$ROOT/.venv/bin/sessiontree}
cd "$EXT_DIR"

bash "$EXT_DIR/scripts/setup.sh" || exit 1

failed=()
summary=()
step() {
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  echo "=== vscode: $name"
  "$@"
  rc=$?
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
step "vsix" bash -c 'npm run --silent package >/dev/null && ls -1 sessiontree-*.vsix'

echo "=== vscode summary"
for line in "${summary[@]}"; do
  echo "  $line"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "vscode: ${#failed[@]} level(s) failed: ${failed[*]}"
  exit 1
fi
echo "vscode: all levels passed"
